/* cmd_train_bpe.c — `qwenchat train-bpe`: count pre-tokens of text files in
 * parallel, learn byte-level BPE merges, write tokenizer.json, vocab.json and
 * merges.txt. */
#include "src/cli/cli.h"
#include "src/cli/commands.h"
#include "src/base/err.h"
#include "src/base/fileio.h"
#include "tokenizer/bpe_count.h"
#include "tokenizer/bpe_train.h"
#include "tokenizer/bpe_write.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define MAX_VOCAB   (1L << 24)
#define MAX_THREADS 256

static const char help[] =
	"usage: qwenchat train-bpe --vocab-size N --out DIR [--special TOKEN]...\n"
	"                          [--threads N] FILE...\n"
	"Trains a byte-level BPE tokenizer on UTF-8 text files: the Qwen2 pre-tokenizer\n"
	"splits the text (never across a special token or a file end), then the most\n"
	"frequent adjacent pair is merged until the vocabulary is full (ties: the\n"
	"greater pair of byte strings). Writes DIR/tokenizer.json (Hugging Face format,\n"
	"loadable with -m DIR), DIR/vocab.json and DIR/merges.txt.\n"
	"Ids: 0-255 the bytes, then the merges in order, then the special tokens in the\n"
	"order given. The text is counted as it is (no NFC), so tokenizer.json has no\n"
	"normalizer.\n"
	"  --vocab-size N    256 + merges + special tokens (at least 256 + specials)\n"
	"  --special TOKEN   a special token (repeatable), e.g. '<|endoftext|>'\n"
	"  --threads N       counting threads (default or 0: all cores)\n"
	"  --out DIR         output directory (created when missing)\n"
	"  -q, --quiet       no progress and no summary line on stderr\n"
	"  -h, --help        this help\n";

struct progress {
	bool tty;
	double t0, last;
};

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void on_progress(void *ctx, int done, int total)
{
	struct progress *p = ctx;
	double t = now();
	if (!p->tty || (t - p->last < 0.2 && done < total))
		return;
	p->last = t;
	fprintf(stderr, "\rtrain-bpe: %d/%d merges (%.0f/s)  ", done, total,
		t > p->t0 ? done / (t - p->t0) : 0.0);
}

static void on_count(void *ctx, uint64_t bytes)
{
	struct progress *p = ctx;
	double t = now();
	if (!p->tty || t - p->last < 0.2)
		return;
	p->last = t;
	fprintf(stderr, "\rtrain-bpe: counted %.1f MB (%.1f MB/s)  ", bytes / 1e6,
		t > p->t0 ? bytes / 1e6 / (t - p->t0) : 0.0);
}

/* True when s is valid UTF-8 (checked through the counter, which enforces it). */
static bool utf8_ok(const char *s)
{
	struct bpe_count_opts o = {.threads = 1};
	struct bpe_counter *c = bpe_counter_new(&o);
	bool ok = c && bpe_counter_add_text(c, s, strlen(s), "--special") == 0;
	bpe_counter_free(c);
	return ok;
}

struct args {
	long vocab, threads;
	const char *out;
	const char **specials;
	int n_specials;
	bool quiet;
};

/* Parses and checks the command line; -1 after a usage error was printed. */
static int parse_args(int argc, char **argv, struct args *a)
{
	static const struct option opts[] = {{"vocab-size", required_argument, 0, 'V'},
					     {"special", required_argument, 0, 'S'},
					     {"threads", required_argument, 0, 'T'},
					     {"out", required_argument, 0, 'o'},
					     {"quiet", no_argument, 0, 'q'},
					     {"help", no_argument, 0, 'h'},
					     {0, 0, 0, 0}};
	a->specials = calloc((size_t)argc + 1, sizeof *a->specials);
	if (!a->specials)
		return cli_error("out of memory"), -1;
	int ch;
	opterr = 0;
	while ((ch = getopt_long(argc, argv, "qh", opts, NULL)) != -1) {
		switch (ch) {
		case 'V':
			if (cli_parse_long("--vocab-size", optarg, 1, MAX_VOCAB, &a->vocab) < 0)
				return -1;
			break;
		case 'S': a->specials[a->n_specials++] = optarg; break;
		case 'T':
			if (cli_parse_long("--threads", optarg, 0, MAX_THREADS, &a->threads) < 0)
				return -1;
			break;
		case 'o': a->out = optarg; break;
		case 'q': a->quiet = true; break;
		case 'h': fputs(help, stdout); exit(EXIT_OK);
		default: cli_usage("train-bpe", "unknown option '%s'", argv[optind - 1]); return -1;
		}
	}
	if (!a->vocab)
		return cli_usage("train-bpe", "--vocab-size N is required"), -1;
	if (!a->out)
		return cli_usage("train-bpe", "--out DIR is required"), -1;
	if (optind >= argc)
		return cli_usage("train-bpe", "no input FILE given"), -1;
	for (int k = 0; k < a->n_specials; k++) {
		if (!a->specials[k][0])
			return cli_usage("train-bpe", "--special: empty token"), -1;
		if (!utf8_ok(a->specials[k]))
			return cli_usage("train-bpe", "%s", err_msg()), -1;
		for (int j = 0; j < k; j++)
			if (!strcmp(a->specials[j], a->specials[k]))
				return cli_usage("train-bpe", "--special '%s' given twice",
						 a->specials[k]),
				       -1;
	}
	if (a->vocab < 256 + a->n_specials)
		return cli_usage("train-bpe",
				 "--vocab-size %ld is below 256 byte tokens + %d special "
				 "tokens",
				 a->vocab, a->n_specials),
		       -1;
	if (!a->threads) {
		long n = sysconf(_SC_NPROCESSORS_ONLN);
		a->threads = n < 1 ? 1 : n > MAX_THREADS ? MAX_THREADS : n;
	}
	return 0;
}

static int make_dir(const char *dir)
{
	if (fio_is_dir(dir))
		return 0;
	if (mkdir(dir, 0777) < 0)
		return err_set("%s: %s", dir, strerror(errno));
	return 0;
}

int cmd_train_bpe(int argc, char **argv)
{
	struct args a = {0};
	if (parse_args(argc, argv, &a) < 0) {
		free(a.specials);
		return EXIT_USAGE;
	}
	int rc = EXIT_RUNTIME;
	struct bpe_words words = {0};
	struct bpe_model *m = NULL;
	struct bpe_count_stats st;
	double t0 = now();
	struct progress pc = {.tty = !a.quiet && isatty(STDERR_FILENO), .t0 = t0, .last = t0};
	struct bpe_count_opts co = {.specials = a.specials,
				    .n_specials = a.n_specials,
				    .threads = (int)a.threads,
				    .progress = on_count,
				    .progress_ctx = &pc};
	struct bpe_counter *c = bpe_counter_new(&co);
	if (!c || make_dir(a.out) < 0)
		goto out;
	for (int i = optind; i < argc; i++)
		if (bpe_counter_add_file(c, argv[i]) < 0)
			goto out;
	if (bpe_counter_words(c, &words) < 0)
		goto out;
	if (pc.last > t0)
		fputc('\n', stderr);
	bpe_counter_stats(c, &st);
	bpe_counter_free(c);
	c = NULL;
	double t1 = now();
	struct progress pr = {.tty = !a.quiet && isatty(STDERR_FILENO), .t0 = t1};
	struct bpe_train_opts to = {.vocab_size = (int)a.vocab,
				    .n_specials = a.n_specials,
				    .progress = on_progress,
				    .progress_ctx = &pr};
	m = bpe_train(&words, &to);
	if (pr.tty && pr.last > 0)
		fputc('\n', stderr);
	if (!m)
		goto out;
	double t2 = now();
	if (bpe_write(m, a.specials, a.n_specials, a.out) < 0)
		goto out;
	rc = EXIT_OK;
	if (!a.quiet) {
		struct rusage ru;
		getrusage(RUSAGE_SELF, &ru);
		fprintf(stderr,
			"train-bpe: %.1f MB, %llu pre-tokens (%zu distinct), %llu special tokens "
			"counted in %.2f s on %ld threads; %d merges in %.2f s (%.0f/s); "
			"vocabulary %d; peak memory %.1f MiB; wrote %s\n",
			st.bytes / 1e6, (unsigned long long)st.pretokens, st.distinct,
			(unsigned long long)st.specials, t1 - t0, a.threads, m->n_merges, t2 - t1,
			t2 > t1 ? m->n_merges / (t2 - t1) : 0.0, m->n_tokens + a.n_specials,
			ru.ru_maxrss / 1024.0, a.out);
		if (m->n_merges < a.vocab - 256 - a.n_specials)
			fprintf(stderr,
				"train-bpe: no pair left to merge after %d merges: the "
				"vocabulary is smaller than --vocab-size %ld\n",
				m->n_merges, a.vocab);
	}
out:
	if (rc != EXIT_OK)
		cli_error("train-bpe: %s", err_msg());
	bpe_model_free(m);
	bpe_words_free(&words);
	bpe_counter_free(c);
	free(a.specials);
	return rc;
}
