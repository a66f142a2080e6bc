/* fuzz_tokenizer.c — libFuzzer target for the tokenizer. The first byte picks:
 * even: the rest is a tokenizer.json for the loader (seeds: small valid files in
 * tests/fuzz/corpus/tokenizer/); a file that loads then encodes the input and decodes.
 * odd: the rest is text for the real Qwen3 tokenizer from $QWENCHAT_FUZZ_TOKENIZER (a
 * directory, e.g. tests/cache/qwen3-tokenizer; without it these inputs do nothing):
 * encode, decode, streaming decode, and encode with literal spans (special tokens as
 * text); aborts when a round trip or the stream disagrees, or a literal text yields a
 * special token. */
#include "tokenizer/tokenizer.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static struct tok *real;
static int real_tried;

/* Encodes, decodes and stream-decodes text; checks the invariants. exact: the
 * tokenizer has no lstrip/rstrip tokens (they drop spaces), so ASCII comes back. */
static void exercise(struct tok *t, const char *text, size_t n, bool exact)
{
	size_t k, dl;
	int32_t *ids = tok_encode(t, text, n, &k);
	if (!ids)
		return;
	char *dec = tok_decode(t, ids, k, false, &dl);
	if (!dec)
		abort(); /* ids from encode are always in range */
	bool ascii = exact;
	for (size_t i = 0; i < n; i++)
		ascii &= (unsigned char)text[i] < 0x80;
	/* ASCII is never changed by NFC: the round trip is exact */
	if (ascii && (dl != n || memcmp(dec, text, n) != 0))
		abort();
	struct tok_stream *s = tok_stream_new(t, false);
	size_t o = 0, len;
	for (size_t i = 0; s && i < k; i++) {
		const char *p = tok_stream_push(s, ids[i], &len);
		if (!p || o + len > dl || memcmp(dec + o, p, len) != 0)
			abort();
		o += len;
	}
	if (s) {
		const char *p = tok_stream_flush(s, &len);
		if (!p || o + len != dl || memcmp(dec + o, p, len) != 0)
			abort();
	}
	tok_stream_free(s);
	free(dec);
	/* with the post-processor's tokens: those, the same ids, those */
	const struct tok_ends *e = tok_get_ends(t);
	size_t m;
	int32_t *framed = tok_encode_ends(t, text, n, &m);
	if (framed && (m != k + (size_t)e->n[0] + (size_t)e->n[1] ||
		       memcmp(framed, e->ids[0], (size_t)e->n[0] * sizeof *framed) ||
		       memcmp(framed + e->n[0], ids, k * sizeof *ids) ||
		       memcmp(framed + e->n[0] + k, e->ids[1], (size_t)e->n[1] * sizeof *framed)))
		abort();
	free(framed);
	free(ids);
	/* all of it literal: no special token comes out, and the text comes back; the
	 * middle third literal: encodes, and decodes to the text */
	struct tok_span spans[2] = {{0, n}, {n / 3, 2 * n / 3}};
	for (int v = 0; v < 2; v++) {
		ids = tok_encode_literal(t, text, n, &spans[v], 1, &k);
		if (!ids)
			return;
		for (size_t i = 0; v == 0 && i < k; i++)
			if (tok_is_special(t, ids[i]))
				abort();
		dec = tok_decode(t, ids, k, false, &dl);
		if (!dec || (ascii && (dl != n || memcmp(dec, text, n) != 0)))
			abort();
		free(dec);
		free(ids);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	const char *body = (const char *)data + 1;
	size_t n = size - 1;
	if (data[0] & 1) {
		if (!real_tried) {
			real_tried = 1;
			const char *dir = getenv("QWENCHAT_FUZZ_TOKENIZER");
			if (dir && !(real = tok_load(dir)))
				fprintf(stderr, "fuzz_tokenizer: cannot load %s\n", dir);
		}
		if (real)
			exercise(real, body, n, true);
		return 0;
	}
	int fd = memfd_create("tokenizer.json", 0);
	if (fd < 0)
		return 0;
	if (write(fd, body, n) == (ssize_t)n) {
		char path[64];
		snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
		struct tok *t = tok_load_files(path, NULL);
		if (t) {
			exercise(t, "Hello, world! it's 42 <|e|>\xe4\xb8\xad\xff", 29, false);
			exercise(t, body, n, false);
			tok_free(t);
		}
	}
	close(fd);
	return 0;
}
