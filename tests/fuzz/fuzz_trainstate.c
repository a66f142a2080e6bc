/* fuzz_trainstate.c — what a resumed training run reads back from its directory is
 * untrusted: train-state/state.json (tstate_parse), the saved log (tlog_parse) and the
 * safetensors of the weights and moments (checkpoint.c's reader). The first byte
 * picks, modulo 3, which one gets the rest. A state that parses is written back and
 * must parse to the same options; a log that parses must give its text back; a
 * safetensors header that opens is asked for a tensor of a few shapes, each read
 * staying inside the file. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "src/train/checkpoint.h"
#include "src/train/trainlog.h"
#include "src/train/trainstate.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void state(const char *p, size_t n)
{
	struct tstate s, back;
	if (tstate_parse(&s, p, n, "state.json"))
		return;
	char *text = tstate_json(&s);
	if (!text || tstate_parse(&back, text, strlen(text), "again"))
		abort();
	for (int i = 0; i < tstate_field_count(); i++)
		if (!tstate_equal(&s.o, &back.o, i))
			abort();
	if (back.step != s.step || back.tokens != s.tokens || memcmp(&back.rng, &s.rng, sizeof s.rng))
		abort();
	free(text);
	tstate_opts_free(&s.o);
	tstate_opts_free(&back.o);
}

static void log_text(const char *p, size_t n)
{
	struct tlog l;
	tlog_init(&l);
	if (tlog_parse(&l, p, n, "log.jsonl") == 0) {
		struct tlog again;
		tlog_init(&again);
		if (tlog_parse(&again, l.text.p ? l.text.p : "", l.text.n, "again") ||
		    again.text.n != l.text.n || (l.text.n && memcmp(again.text.p, l.text.p, l.text.n)))
			abort();
		char *svg = tlog_svg(&l);
		if (!svg)
			abort();
		free(svg);
		tlog_free(&again);
	}
	tlog_free(&l);
}

static void safetensors(const uint8_t *p, size_t n)
{
	int fd = memfd_create("fuzz", 0);
	if (fd < 0 || (n && write(fd, p, n) != (ssize_t)n))
		abort();
	char path[64];
	snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
	struct ckpt_st *f = ckpt_st_open(path);
	if (f) {
		static float buf[4096];
		const int64_t shapes[][2] = {{1, 1}, {4, 0}, {16, 16}, {64, 64}, {4096, 1}};
		const char *names[] = {"a", "w", "model.norm.weight", "x.exp_avg"};
		for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
			for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
				ckpt_st_read(f, names[i], shapes[s][1] ? 2 : 1, shapes[s], buf);
		ckpt_st_meta(f, "step");
		ckpt_st_close(f);
	}
	close(fd);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	switch (data[0] % 3) {
	case 0: state((const char *)data + 1, size - 1); break;
	case 1: log_text((const char *)data + 1, size - 1); break;
	default: safetensors(data + 1, size - 1); break;
	}
	return 0;
}
