/* cmd_tokenize.c — `qwenchat tokenize` (stdin bytes -> ids), `qwenchat detokenize`
 * (ids -> bytes) and `qwenchat tokenize --bench FILE` (encode throughput). */
#include "src/cli/cli.h"
#include "src/cli/commands.h"
#include "src/cli/env.h"
#include "src/base/clock.h"
#include "src/base/err.h"
#include "src/base/fileio.h"
#include "src/hub/hub.h"
#include "src/hub/loader.h"
#include "tokenizer/tokenizer.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

enum tokenize_key { OPT_BENCH = CLI_OWN };

static const struct cli_opt tok_opts[] = {
	{"bench", OPT_BENCH, "FILE",
	 "instead, time tokenizer.json loading and single-thread encoding\n"
	 "of FILE: MB/s and tokens/s, first pass and best of REPS"},
	{"reps", 'r', "N", "passes for --bench (default 5)"},
	{0},
};

static const struct cli_command tok_cmd = {
	.name = "tokenize",
	.synopsis = "[-m MODEL] [--bench FILE [-r REPS]]",
	.about =
		"Reads bytes from stdin and writes their token ids, space separated, on one line.\n"
		"Added tokens such as <|im_end|> or <think> in the text become their single ids,\n"
		"as Hugging Face tokenizers does (add_special_tokens=False). Bytes that are not\n"
		"valid UTF-8 become the tokens of those single bytes. MODEL may be a directory\n"
		"holding only tokenizer.json (and tokenizer_config.json).\n",
	.groups = CLI_MODEL,
	.opts = tok_opts,
};

enum detokenize_key { OPT_SKIP_SPECIAL = CLI_OWN };

static const struct cli_opt detok_opts[] = {
	{"skip-special", OPT_SKIP_SPECIAL, NULL,
	 "leave out special tokens (<|im_end|>, ...; not <think>)"},
	{0},
};

static const struct cli_command detok_cmd = {
	.name = "detokenize",
	.synopsis = "[-m MODEL] [--skip-special]",
	.about = "Reads token ids (decimal, separated by white space or commas) from stdin and\n"
		 "writes the bytes they stand for to stdout. An id outside the vocabulary is an\n"
		 "error (exit 1).\n",
	.groups = CLI_MODEL,
	.opts = detok_opts,
};

/* CPU time of the process or this thread (CLOCK_PROCESS_CPUTIME_ID or
 * CLOCK_THREAD_CPUTIME_ID): the figure that holds when other jobs share the cores. */
static double cpu_seconds_of(clockid_t id)
{
	struct timespec ts;
	clock_gettime(id, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static struct tok *load(const char *model, double *secs)
{
	struct hub_env hub;
	cli_env_hub(&hub);
	char *dir = hub_resolve_tokenizer(&hub, model);
	if (!dir)
		return NULL;
	double t0 = clock_now();
	struct tok *t = loader_tokenizer(dir);
	if (secs)
		*secs = clock_now() - t0;
	free(dir);
	return t;
}

static int write_all(const char *p, size_t n)
{
	if (fwrite(p, 1, n, stdout) != n || fflush(stdout) != 0) {
		cli_error("standard output: write failed: %s", strerror(errno ? errno : EIO));
		return EXIT_RUNTIME;
	}
	return EXIT_OK;
}

static int bench(const char *model, const char *file, long reps)
{
	double load_s, lc0 = cpu_seconds_of(CLOCK_PROCESS_CPUTIME_ID);
	struct tok *t = load(model, &load_s);
	double load_cpu = cpu_seconds_of(CLOCK_PROCESS_CPUTIME_ID) - lc0;
	if (!t) {
		cli_error("%s", err_msg());
		return EXIT_RUNTIME;
	}
	size_t len, n = 0;
	char *text = fio_read_all(file, (size_t)1 << 30, &len);
	if (!text) {
		cli_error("%s", err_msg());
		tok_free(t);
		return EXIT_RUNTIME;
	}
	/* wall time, and this thread's CPU time: on a shared machine the CPU time is the
	 * steadier figure */
	double first = 0, best = 0, cfirst = 0, cbest = 0;
	for (long r = 0; r < reps; r++) {
		double t0 = clock_now(), c0 = cpu_seconds_of(CLOCK_THREAD_CPUTIME_ID);
		int32_t *ids = tok_encode(t, text, len, &n);
		double dt = clock_now() - t0, ct = cpu_seconds_of(CLOCK_THREAD_CPUTIME_ID) - c0;
		if (r == 0)
			cfirst = ct;
		if (r == 0 || ct < cbest)
			cbest = ct;
		free(ids);
		if (!ids) {
			cli_error("%s: %s", file, err_msg());
			free(text);
			tok_free(t);
			return EXIT_RUNTIME;
		}
		if (r == 0)
			first = dt;
		if (r == 0 || dt < best)
			best = dt;
	}
	printf("file        %s (%zu bytes, %zu tokens)\n", file, len, n);
	printf("load        %.1f ms wall, %.1f ms CPU (tokenizer.json + tokenizer_config.json)\n",
	       load_s * 1e3, load_cpu * 1e3);
	printf("encode 1st  %.1f MB/s  %.0f tokens/s  (%.1f ms wall, empty piece cache; CPU time: "
	       "%.1f MB/s)\n",
	       (double)len / first / 1e6, (double)n / first, first * 1e3,
	       (double)len / cfirst / 1e6);
	printf("encode best %.1f MB/s  %.0f tokens/s  (%.1f ms wall, best of %ld; CPU time: %.1f "
	       "MB/s)\n",
	       (double)len / best / 1e6, (double)n / best, best * 1e3, reps,
	       (double)len / cbest / 1e6);
	free(text);
	tok_free(t);
	return EXIT_OK;
}

static int tokenize(const char *model)
{
	size_t len, n;
	char *text = fio_read_all("-", (size_t)1 << 32, &len);
	if (!text) {
		cli_error("stdin: %s", err_msg());
		return EXIT_RUNTIME;
	}
	struct tok *t = load(model, NULL);
	int32_t *ids = t ? tok_encode(t, text, len, &n) : NULL;
	free(text);
	if (!ids) {
		cli_error("%s", err_msg());
		tok_free(t);
		return EXIT_RUNTIME;
	}
	/* at most 11 bytes per id ("2147483647 ") */
	char *out = malloc(n * 12 + 2);
	int rc = EXIT_RUNTIME;
	if (out) {
		size_t o = 0;
		for (size_t i = 0; i < n; i++)
			o += (size_t)sprintf(out + o, i ? " %d" : "%d", ids[i]);
		out[o++] = '\n';
		rc = write_all(out, o);
	} else {
		cli_error("out of memory");
	}
	free(out);
	free(ids);
	tok_free(t);
	return rc;
}

struct tok_args {
	const char *bench_file;
	long reps;
	bool reps_given;
};

static int tok_opt(void *user, int key, const char *arg)
{
	struct tok_args *a = user;
	switch (key) {
	case 'r': a->reps_given = true; return cli_parse_long("reps", arg, 1, 1000, &a->reps);
	case OPT_BENCH: a->bench_file = arg; return 0;
	}
	return cli_unhandled(&tok_cmd, key);
}

int cmd_tokenize(int argc, char **argv)
{
	struct cli_common com;
	struct tok_args a = {NULL, 5, false};
	int r = cli_parse(&tok_cmd, argc, argv, &com, tok_opt, &a, NULL);
	if (r)
		return r == CLI_DONE ? EXIT_OK : r;
	if (a.reps_given && !a.bench_file)
		return cli_usage("tokenize", "-r gives the passes of --bench: give --bench FILE");
	return a.bench_file ? bench(com.model, a.bench_file, a.reps) : tokenize(com.model);
}

static int detok_opt(void *user, int key, const char *arg)
{
	(void)arg;
	if (key != OPT_SKIP_SPECIAL)
		return cli_unhandled(&detok_cmd, key);
	*(bool *)user = true;
	return 0;
}

int cmd_detokenize(int argc, char **argv)
{
	struct cli_common com;
	bool skip = false;
	int r = cli_parse(&detok_cmd, argc, argv, &com, detok_opt, &skip, NULL);
	if (r)
		return r == CLI_DONE ? EXIT_OK : r;
	size_t len, n = 0;
	int32_t *ids = NULL;
	if (cli_read_ids(stdin, "stdin", &ids, &n)) {
		cli_error("%s", err_msg());
		return EXIT_RUNTIME;
	}
	struct tok *t = load(com.model, NULL);
	char *out = t ? tok_decode(t, ids, n, skip, &len) : NULL;
	bool loaded = t != NULL;
	free(ids);
	tok_free(t);
	if (!out) { /* a model that does not load says its name; an id, where it came from */
		cli_error("%s%s", loaded ? "stdin: " : "", err_msg());
		return EXIT_RUNTIME;
	}
	int rc = write_all(out, len);
	free(out);
	return rc;
}
