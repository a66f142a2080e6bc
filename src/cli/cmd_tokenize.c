/* cmd_tokenize.c — `qwenchat tokenize` (stdin bytes -> ids), `qwenchat detokenize`
 * (ids -> bytes) and `qwenchat tokenize --bench FILE` (encode throughput). */
#include "src/cli/cli.h"
#include "src/cli/commands.h"
#include "src/base/err.h"
#include "src/base/fileio.h"
#include "src/hub/hub.h"
#include "src/hub/loader.h"
#include "tokenizer/tokenizer.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static const char tok_help[] =
	"usage: qwenchat tokenize [-m MODEL] [--bench FILE [-r REPS]]\n"
	"\n"
	"Reads bytes from stdin and writes their token ids, space separated, on one line.\n"
	"Added tokens such as <|im_end|> or <think> in the text become their single ids,\n"
	"as Hugging Face tokenizers does (add_special_tokens=False). Bytes that are not\n"
	"valid UTF-8 become the tokens of those single bytes. MODEL may be a directory\n"
	"holding only tokenizer.json (and tokenizer_config.json).\n"
	"\n"
	"  --bench FILE   instead, time tokenizer.json loading and single-thread encoding\n"
	"                 of FILE: MB/s and tokens/s, first pass and best of REPS\n"
	"  -r, --reps N   passes for --bench (default 5)\n"
	"  -h, --help     show this help\n";

static const char detok_help[] =
	"usage: qwenchat detokenize [-m MODEL] [--skip-special]\n"
	"\n"
	"Reads token ids (decimal, separated by white space) from stdin and writes the\n"
	"bytes they stand for to stdout. An id outside the vocabulary is an error (exit 1).\n"
	"\n"
	"  --skip-special  leave out special tokens (<|im_end|>, ...; not <think>)\n"
	"  -h, --help      show this help\n";

enum { OPT_BENCH = CLI_OPT_NEXT, OPT_SKIP };

static const struct option tok_opts[] = {
	CLI_COMMON_LONGOPTS,
	{"bench", required_argument, 0, OPT_BENCH},
	{"reps", required_argument, 0, 'r'},
	{"help", no_argument, 0, 'h'},
	{0, 0, 0, 0},
};

static const struct option detok_opts[] = {
	CLI_COMMON_LONGOPTS,
	{"skip-special", no_argument, 0, OPT_SKIP},
	{"help", no_argument, 0, 'h'},
	{0, 0, 0, 0},
};

static double clock_s(clockid_t id)
{
	struct timespec ts;
	clock_gettime(id, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static double now_s(void)
{
	return clock_s(CLOCK_MONOTONIC);
}

static struct tok *load(const char *model, double *secs)
{
	char *dir = hub_resolve_tokenizer(model);
	if (!dir)
		return NULL;
	double t0 = now_s();
	struct tok *t = loader_tokenizer(dir);
	if (secs)
		*secs = now_s() - t0;
	free(dir);
	return t;
}

static int write_all(const char *p, size_t n)
{
	if (fwrite(p, 1, n, stdout) != n || fflush(stdout) != 0) {
		cli_error("writing to stdout failed: %s", strerror(errno));
		return EXIT_RUNTIME;
	}
	return EXIT_OK;
}

static int bench(const char *model, const char *file, long reps)
{
	double load_s, lc0 = clock_s(CLOCK_PROCESS_CPUTIME_ID);
	struct tok *t = load(model, &load_s);
	double load_cpu = clock_s(CLOCK_PROCESS_CPUTIME_ID) - lc0;
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
		double t0 = now_s(), c0 = clock_s(CLOCK_THREAD_CPUTIME_ID);
		int32_t *ids = tok_encode(t, text, len, &n);
		double dt = now_s() - t0, ct = clock_s(CLOCK_THREAD_CPUTIME_ID) - c0;
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

int cmd_tokenize(int argc, char **argv)
{
	struct cli_common common;
	cli_common_init(&common);
	const char *bench_file = NULL;
	long reps = 5;
	int opt;
	optind = 1;
	while ((opt = getopt_long(argc, argv, "m:n:r:h", tok_opts, NULL)) != -1) {
		switch (opt) {
		case 'h':
			fputs(tok_help, stdout);
			fputs("\ncommon options (accepted, unused here):\n", stdout);
			fputs(cli_common_help, stdout);
			return EXIT_OK;
		case OPT_BENCH: bench_file = optarg; break;
		case 'r':
			if (cli_parse_long("--reps", optarg, 1, 1000, &reps))
				return EXIT_USAGE;
			break;
		case '?': return cli_usage(argv[0], "bad option");
		default:
			if (cli_common_opt(&common, opt, optarg) < 0)
				return EXIT_USAGE;
		}
	}
	if (optind < argc)
		return cli_usage(argv[0], "unexpected argument '%s'", argv[optind]);
	return bench_file ? bench(common.model, bench_file, reps) : tokenize(common.model);
}

/* Parses whitespace-separated decimal ids; -1 with a message on anything else. */
static int parse_ids(const char *s, int32_t **out, size_t *n)
{
	size_t cap = 1024, k = 0;
	int32_t *v = malloc(cap * sizeof *v);
	if (!v)
		return err_set("out of memory");
	for (const char *p = s;;) {
		while (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r')
			p++;
		if (!*p)
			break;
		const char *start = p;
		long long x = 0;
		while (*p >= '0' && *p <= '9' && x <= INT32_MAX)
			x = x * 10 + (*p++ - '0');
		if (p == start || (*p && *p != ' ' && *p != '\t' && *p != '\n' && *p != '\r') ||
		    x > INT32_MAX) {
			int w = 0;
			while (start[w] && start[w] != ' ' && start[w] != '\n' && w < 20)
				w++;
			free(v);
			return err_set("stdin: '%.*s' (id %zu) is not a token id", w, start, k);
		}
		if (k == cap) {
			int32_t *q = realloc(v, (cap *= 2) * sizeof *v);
			if (!q) {
				free(v);
				return err_set("out of memory");
			}
			v = q;
		}
		v[k++] = (int32_t)x;
	}
	*out = v;
	*n = k;
	return 0;
}

int cmd_detokenize(int argc, char **argv)
{
	struct cli_common common;
	cli_common_init(&common);
	bool skip = false;
	int opt;
	optind = 1;
	while ((opt = getopt_long(argc, argv, "m:n:h", detok_opts, NULL)) != -1) {
		switch (opt) {
		case 'h':
			fputs(detok_help, stdout);
			fputs("\ncommon options (accepted, unused here):\n", stdout);
			fputs(cli_common_help, stdout);
			return EXIT_OK;
		case OPT_SKIP: skip = true; break;
		case '?': return cli_usage(argv[0], "bad option");
		default:
			if (cli_common_opt(&common, opt, optarg) < 0)
				return EXIT_USAGE;
		}
	}
	if (optind < argc)
		return cli_usage(argv[0], "unexpected argument '%s'", argv[optind]);
	size_t len, n = 0;
	int32_t *ids = NULL;
	char *text = fio_read_all("-", (size_t)1 << 32, &len);
	int bad = !text;
	if (text && memchr(text, 0, len))
		bad = err_set("stdin: a NUL byte among the ids");
	else if (text)
		bad = parse_ids(text, &ids, &n);
	if (bad) {
		cli_error("%s", err_msg());
		free(text);
		return EXIT_RUNTIME;
	}
	free(text);
	struct tok *t = load(common.model, NULL);
	char *out = t ? tok_decode(t, ids, n, skip, &len) : NULL;
	free(ids);
	tok_free(t);
	if (!out) {
		cli_error("%s", err_msg());
		return EXIT_RUNTIME;
	}
	int rc = write_all(out, len);
	free(out);
	return rc;
}
