/* cmd_train_bpe.c — `qwenchat train-bpe`: count pre-tokens of text files in
 * parallel, learn byte-level BPE merges, write tokenizer.json, vocab.json and
 * merges.txt (and with --chat Qwen3's chat tokens and a tokenizer_config.json). */
#include "src/cli/cli.h"
#include "src/cli/commands.h"
#include "src/base/clock.h"
#include "src/base/proc.h"
#include "src/base/err.h"
#include "src/base/fileio.h"
#include "src/base/strbuf.h"
#include "src/base/units.h"
#include "src/base/utf8.h"
#include "src/train/modeldir.h"
#include "src/train/tokens.h"
#include "tokenizer/bpe_count.h"
#include "tokenizer/bpe_train.h"
#include "tokenizer/bpe_write.h"
#include "tokenizer/tokenizer.h"

#include <errno.h>
#include <stdbool.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define MAX_VOCAB   (1L << 24)
#define MAX_THREADS 256

enum train_bpe_key { OPT_VOCAB_SIZE = CLI_OWN, OPT_SPECIAL, OPT_CHAT, OPT_THREADS, OPT_OUT };

static const struct cli_opt train_opts[] = {
	{"vocab-size", OPT_VOCAB_SIZE, "N",
	 "256 + merges + special tokens (at least 256 + specials)"},
	{"special", OPT_SPECIAL, "TOKEN", "a special token (repeatable), e.g. '<|endoftext|>'"},
	{"chat", OPT_CHAT, NULL,
	 "add Qwen3's chat tokens (below) and write a\ntokenizer_config.json with Qwen3's chat "
	 "template"},
	{"threads", OPT_THREADS, "N",
	 "counting threads (default or 0: the CPUs online, and at most\nthose)"},
	{"out", OPT_OUT, "DIR",
	 "output directory (created when missing; one\nholding anything but a tokenizer is "
	 "refused)"},
	{"quiet", 'q', NULL, "no progress and no summary line on stderr"},
	{0},
};

static const struct cli_command train_cmd = {
	.name = "train-bpe",
	.synopsis = "--vocab-size N --out DIR [--chat] [--special TOKEN]... [--threads N] [-q] "
		    "FILE...",
	.about =
		"Trains a byte-level BPE tokenizer on UTF-8 text files (JSON Lines named\n"
		"*.jsonl or *.ndjson in any case, or *.json whose first non-blank line is a\n"
		"{\"text\": ...} object: each record's \"text\" a document, as train reads them):\n"
		"the Qwen2 pre-tokenizer splits the text (never across a special token or a\n"
		"document's end), then the most frequent adjacent pair is merged until the\n"
		"vocabulary is full (ties: the greater pair of byte strings). Writes\n"
		"DIR/tokenizer.json (Hugging Face format, loadable with -m DIR),\n"
		"DIR/vocab.json and DIR/merges.txt. Ids: 0-255 the bytes, then the merges in\n"
		"order, then the special tokens in the order given. The text is counted as it\n"
		"is (no NFC), so tokenizer.json has no normalizer.\n",
	.opts = train_opts,
	.notes = "--chat adds, before any --special, the tokens of Qwen3's chat with their roles\n"
		 "in Qwen3's tokenizer: <|endoftext|> (the end of a document and the pad token),\n"
		 "<|im_start|>, <|im_end|> (the end of a turn: eos_token) as special tokens, and\n"
		 "<tool_call>, </tool_call>, <tool_response>, </tool_response>, <think>, </think>\n"
		 "as added tokens that are not special (they stay in decoded text). It writes\n"
		 "DIR/tokenizer_config.json as Qwen3's (added_tokens_decoder, eos_token, "
		 "pad_token,\n"
		 "the hybrid chat template), so that a model trained from scratch on the\n"
		 "tokenizer chats, thinks and stops as Qwen3 does. A --special already among\n"
		 "them is not added twice.\n",
	.min_args = 1,
	.max_args = 1 << 20,
	.args = "FILE...",
};

struct progress {
	bool tty;
	double t0, last;
};

static void on_progress(void *ctx, int done, int total)
{
	struct progress *p = ctx;
	double t = clock_now();
	if (!p->tty || (t - p->last < 0.2 && done < total))
		return;
	p->last = t;
	fprintf(stderr, "\rtrain-bpe: %d/%d merges (%.0f/s)  ", done, total,
		t > p->t0 ? done / (t - p->t0) : 0.0);
}

static void on_count(void *ctx, uint64_t bytes)
{
	struct progress *p = ctx;
	double t = clock_now();
	if (!p->tty || t - p->last < 0.2)
		return;
	p->last = t;
	char done[16], rate[16];
	fprintf(stderr, "\rtrain-bpe: counted %s (%s/s)  ",
		units_bytes((double)bytes, done, sizeof done),
		units_bytes(t > p->t0 ? bytes / (t - p->t0) : 0.0, rate, sizeof rate));
}

/* Qwen3's chat tokens, in the order of their ids in Qwen3's tokenizer, and whether
 * each is special there (tests/cache/qwen3-tokenizer/tokenizer_config.json). */
static const struct {
	const char *text;
	bool special;
} chat_tokens[] = {
	{"<|endoftext|>", true},     {"<|im_start|>", true},  {"<|im_end|>", true},
	{"<tool_call>", false},      {"</tool_call>", false}, {"<tool_response>", false},
	{"</tool_response>", false}, {"<think>", false},      {"</think>", false},
};
enum { N_CHAT = sizeof chat_tokens / sizeof chat_tokens[0] };

struct args {
	long vocab, threads;
	const char *out;
	const char **specials;
	bool *special; /* (n_specials) each marked special in tokenizer.json */
	int n_specials;
	bool quiet, chat;
};

static int train_opt(void *user, int key, const char *arg)
{
	struct args *a = user;
	switch (key) {
	case OPT_VOCAB_SIZE: return cli_parse_long("vocab-size", arg, 1, MAX_VOCAB, &a->vocab);
	case OPT_SPECIAL: a->specials[a->n_specials++] = arg; return 0;
	case OPT_THREADS: return cli_parse_long("threads", arg, 0, 1024, &a->threads);
	case OPT_OUT: a->out = arg; return 0;
	case OPT_CHAT: a->chat = true; return 0;
	case 'q': a->quiet = true; return 0;
	}
	return cli_unhandled(&train_cmd, key);
}

/* --chat: Qwen3's chat tokens first, then the --special ones that are not among them. */
static void add_chat_tokens(struct args *a)
{
	int n = 0;
	for (int k = 0; k < a->n_specials; k++) {
		bool dup = false;
		for (int c = 0; c < N_CHAT; c++)
			dup |= !strcmp(a->specials[k], chat_tokens[c].text);
		if (!dup)
			a->specials[n++] = a->specials[k];
	}
	memmove(a->specials + N_CHAT, a->specials, (size_t)n * sizeof *a->specials);
	for (int c = 0; c < N_CHAT; c++) {
		a->specials[c] = chat_tokens[c].text;
		a->special[c] = chat_tokens[c].special;
	}
	for (int k = N_CHAT; k < N_CHAT + n; k++)
		a->special[k] = true;
	a->n_specials = N_CHAT + n;
}

/* Parses and checks the command line; 0, CLI_DONE, or EXIT_USAGE after a usage error
 * was printed. */
static int parse_args(int argc, char **argv, struct args *a, int *first)
{
	a->specials = calloc((size_t)argc + 1 + N_CHAT, sizeof *a->specials);
	a->special = calloc((size_t)argc + 1 + N_CHAT, sizeof *a->special);
	if (!a->specials || !a->special)
		return cli_error("out of memory"), EXIT_USAGE;
	struct cli_common com;
	int r = cli_parse(&train_cmd, argc, argv, &com, train_opt, a, first);
	if (r)
		return r;
	for (int k = 0; k < a->n_specials; k++)
		a->special[k] = true;
	if (a->chat)
		add_chat_tokens(a);
	if (!a->vocab)
		return cli_usage("train-bpe", "--vocab-size N is required");
	if (!a->out)
		return cli_usage("train-bpe", "--out DIR is required");
	for (int k = 0; k < a->n_specials; k++) {
		if (!a->specials[k][0])
			return cli_usage("train-bpe", "--special: empty token");
		size_t n = strlen(a->specials[k]), valid, bad;
		utf8_next_piece(a->specials[k], n, &valid, &bad);
		if (valid < n)
			return cli_usage("train-bpe",
					 "--special: not valid UTF-8 at byte offset %zu", valid);
		for (int j = 0; j < k; j++)
			if (!strcmp(a->specials[j], a->specials[k]))
				return cli_usage("train-bpe", "--special '%s' given twice",
						 a->specials[k]);
	}
	if (a->vocab < 256 + a->n_specials)
		return cli_usage("train-bpe",
				 "--vocab-size %ld is below 256 byte tokens + %d special "
				 "tokens",
				 a->vocab, a->n_specials);
	/* as every command's --threads: no more than the CPUs online */
	a->threads = a->threads ? cli_threads_cap((int)a->threads, NULL) : proc_online_cpus();
	if (a->threads > MAX_THREADS)
		a->threads = MAX_THREADS;
	return 0;
}

/* The files of a tokenizer, in the order they are put in place: tokenizer.json, the
 * one every loader reads, last. */
static const char *const out_files[] = {"vocab.json", "merges.txt", "tokenizer_config.json",
					"tokenizer.json"};
#define STAGE ".train-bpe.new"
/* held (flock) while a run works on DIR: a second run into it stops at once, never
 * clears the first one's STAGE (fio_try_lock adds ".lock") */
#define LOCK  ".train-bpe"
/* in STAGE while its files are put in place: the names written, a line each */
#define MARK  "PLACING"
_Static_assert(sizeof STAGE "/" MARK == sizeof TOK_PLACING, "the loader looks for the mark");

/* An existing DIR holds nothing but a tokenizer of ours: a model's directory or a
 * training run (config.json, weights, train-state/) would get a tokenizer that does
 * not match its weights, and every later load would take it. */
static int check_own_dir(const char *dir)
{
	_Static_assert(sizeof out_files / sizeof out_files[0] == 4, "known names every file");
	const char *known[] = {out_files[0], out_files[1], out_files[2],
			       out_files[3], STAGE,        LOCK ".lock"};
	char other[256];
	if (fio_foreign_entry(dir, known, sizeof known / sizeof known[0], other, sizeof other))
		return -1;
	return other[0] ? err_set("%s: holds %s, not only a tokenizer (refused: train-bpe writes "
				  "into a directory of its own, never over a model's tokenizer)",
				  dir, other)
			: 0;
}

/* --out, the outermost directory made for it and the lock file, for a signal that ends
 * the run: the lock file goes, and the directories go again as when it fails (rmdir
 * leaves them once anything is in them), then the signal does what it would have done. */
static const char *volatile stop_out, *volatile stop_top, *volatile stop_lock;
/* While the files are written into STAGE: it and the paths of its files, which go too
 * (a stopped run left them behind, and kept DIR made for nothing). */
static char *volatile stop_stage;
static char *volatile stop_staged[sizeof out_files / sizeof out_files[0]];

static void on_stop(int sig)
{
	const char *top = stop_top, *lock = stop_lock, *stage = stop_stage;
	if (stage) {
		for (size_t i = 0; i < sizeof stop_staged / sizeof stop_staged[0]; i++)
			if (stop_staged[i])
				unlink(stop_staged[i]);
		rmdir(stage);
	}
	if (lock)
		unlink(lock);
	if (top)
		fio_rmdirs_upto(stop_out, top);
	signal(sig, SIG_DFL);
	raise(sig);
}

/* Catches SIGINT, SIGTERM and SIGHUP for on_stop, but not one ignored (nohup). */
static void catch_stop(const char *out, const char *top)
{
	stop_out = out;
	stop_top = top;
	static const int sigs[] = {SIGINT, SIGTERM, SIGHUP};
	struct sigaction sa = {.sa_handler = on_stop};
	sigemptyset(&sa.sa_mask);
	for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++)
		sigaddset(&sa.sa_mask, sigs[i]);
	for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++)
		proc_catch(sigs[i], &sa, NULL);
}

/* Holds SIGINT, SIGTERM and SIGHUP (on_stop's) until sigprocmask restores *was. */
static void block_stops(sigset_t *was)
{
	sigset_t stops;
	sigemptyset(&stops);
	sigaddset(&stops, SIGINT);
	sigaddset(&stops, SIGTERM);
	sigaddset(&stops, SIGHUP);
	sigprocmask(SIG_BLOCK, &stops, was);
}

/* DIR and its missing parents, private (0700) as the files in it are; *top is the
 * outermost directory made (malloc'd; NULL: DIR was there). A link at DIR is refused, as
 * train's --out: the files would go wherever it points. */
static int make_dir(const char *dir, char **top)
{
	struct stat st;
	*top = NULL;
	/* "link/" would be the directory it points to: the link itself is looked at */
	char *bare = strndup(dir, fio_trimmed_len(dir));
	if (!bare)
		return err_set("out of memory");
	bool link = lstat(bare, &st) == 0 && S_ISLNK(st.st_mode);
	free(bare);
	if (link)
		return err_set("%s: is a symbolic link (refused: name the directory itself)", dir);
	if (fio_is_dir(dir))
		return check_own_dir(dir);
	if (fio_exists(dir))
		return err_set("%s: not a directory (--out names the tokenizer's directory)", dir);
	*top = fio_missing_top(dir);
	if (*top) /* before the first mkdir: a signal from then on finds what to remove */
		catch_stop(dir, *top);
	if (fio_mkdirs(dir, 0700) == 0)
		return 0;
	if (*top) /* what was made before mkdir failed */
		fio_rmdirs_upto(dir, *top);
	stop_top = NULL; /* before the string it names goes */
	free(*top);
	*top = NULL;
	return -1;
}

/* DIR's lock, or -1 (err_set: another train-bpe holds it); *path: its file, to remove,
 * by a signal too (top: the outermost directory made for DIR, or NULL). */
static int lock_dir(const char *dir, const char *top, char **path)
{
	char *base = fio_join(dir, LOCK);
	*path = fio_join(dir, LOCK ".lock");
	/* the signals wait while the file is made and named for on_stop: one in between
	   would leave the file behind, and one that named it first could remove another
	   run's */
	sigset_t old;
	block_stops(&old);
	int fd = base && *path ? fio_try_lock(base) : err_set("out of memory");
	if (fd >= 0) {
		stop_lock = *path;
		catch_stop(dir, top);
	}
	sigprocmask(SIG_SETMASK, &old, NULL);
	if (fd == FIO_LOCKED)
		err_set("%s: another 'qwenchat train-bpe' is writing there (it holds %s)", dir,
			*path);
	free(base);
	return fd >= 0 ? fd : -1;
}

/* The lock let go, its file removed first (a run that opened it meanwhile finds it gone
 * and takes a new one). */
static void unlock_dir(int fd, char *path)
{
	stop_lock = NULL;
	if (fd >= 0) {
		unlink(path);
		close(fd);
	}
	free(path);
}

/* DIR/tokenizer_config.json for the tokenizer just written: Qwen3's fields and chat
 * template, from the tokenizer as the chat will load it. */
static int write_chat_config(const char *dir)
{
	struct tok *t = tok_load(dir);
	if (!t)
		return -1;
	char *path = fio_join(dir, "tokenizer_config.json");
	bool markers;
	char *text = path ? mdir_tokenizer_config(NULL, path, t, NULL, &markers) : NULL;
	int rc = text   ? fio_write_atomic(path, text, strlen(text), 0600, 0)
		 : path ? -1
			: err_set("out of memory");
	free(text);
	free(path);
	tok_free(t);
	return rc;
}

/* Whether the mark's text names file: a line of it. */
static bool marked(const char *text, const char *file)
{
	size_t n = strlen(file);
	for (const char *l = text; *l; l += strcspn(l, "\n") + (l[strcspn(l, "\n")] != 0))
		if (strcspn(l, "\n") == n && !strncmp(l, file, n))
			return true;
	return false;
}

/* What a run stopped while it put its files in place (its mark in STAGE) left: the
 * rest of its files go in place, those it did not write go, and DIR holds its
 * tokenizer whole again. */
static int finish_placing(const char *dir, const char *stage, const char *mark)
{
	size_t len;
	char *names = fio_read_file(mark, 4096, &len); /* a regular file: never waits on a FIFO */
	int rc = names ? 0 : -1;
	for (size_t i = 0; rc == 0 && i < sizeof out_files / sizeof out_files[0]; i++) {
		char *from = fio_join(stage, out_files[i]), *to = fio_join(dir, out_files[i]);
		if (!from || !to)
			rc = err_set("out of memory");
		else if (marked(names, out_files[i]) ? rename(from, to) != 0 && errno != ENOENT
						     : unlink(to) != 0 && errno != ENOENT)
			rc = err_set("%s: cannot put in place: %s", to, strerror(errno));
		free(from);
		free(to);
	}
	free(names);
	if (rc == 0 && fio_sync_dir(dir))
		rc = -1;
	if (rc == 0 && unlink(mark) != 0)
		rc = err_set("%s: cannot remove: %s", mark, strerror(errno));
	return rc;
}

/* Removes DIR/STAGE and the files of ours in it (what a run cut short left), after
 * finishing what a run stopped while it put its files in place began; a link or
 * anything but a directory there is refused. */
static int clear_stage(const char *dir, const char *stage)
{
	struct stat st;
	if (lstat(stage, &st) != 0)
		return errno == ENOENT ? 0 : err_set("%s: %s", stage, strerror(errno));
	if (!S_ISDIR(st.st_mode))
		return err_set("%s: not a directory (refused: train-bpe writes its files there)",
			       stage);
	/* the temporary files a killed run's writers left go with it */
	const char *known[] = {out_files[0], out_files[1], out_files[2], out_files[3], MARK};
	char other[256];
	if (fio_foreign_entry(stage, known, sizeof known / sizeof known[0], other, sizeof other))
		return -1;
	if (other[0])
		return err_set("%s: holds %s, not train-bpe's: remove it or choose another --out",
			       stage, other);
	char *mark = fio_join(stage, MARK);
	int done = !mark              ? err_set("out of memory")
		   : fio_exists(mark) ? finish_placing(dir, stage, mark)
				      : 0;
	free(mark);
	if (done)
		return -1;
	for (size_t i = 0; i < sizeof out_files / sizeof out_files[0]; i++) {
		char *p = fio_join(stage, out_files[i]);
		if (p)
			unlink(p);
		free(p);
	}
	return rmdir(stage) == 0 ? 0 : err_set("%s: cannot remove: %s", stage, strerror(errno));
}

/* The mark that the files in stage are whole and going in place: their names. */
static int write_mark(const char *stage, const char *mark)
{
	struct strbuf names = {0};
	for (size_t i = 0; i < sizeof out_files / sizeof out_files[0]; i++) {
		char *p = fio_join(stage, out_files[i]);
		if (p && fio_exists(p))
			sb_printf(&names, "%s\n", out_files[i]);
		free(p);
	}
	int rc = names.oom ? err_set("out of memory")
			   : fio_write_atomic(mark, names.p ? names.p : "", names.n, 0600, 0);
	free(names.p);
	return rc;
}

/* Writes the tokenizer's files into DIR/STAGE, then renames them into DIR together:
 * an error or a full disk while writing leaves DIR's previous tokenizer whole, never
 * a new tokenizer.json beside an old vocab.json and merges.txt. While the renames run
 * (and after a run stopped among them, until the next finishes them) STAGE/MARK makes
 * every load of DIR's tokenizer refuse it. */
static int write_tokenizer(const struct args *a, const struct bpe_model *m)
{
	for (size_t i = 0; i < sizeof out_files / sizeof out_files[0]; i++) {
		char *to = fio_join(a->out, out_files[i]);
		struct stat st;
		bool other =
			to && lstat(to, &st) == 0 && !S_ISREG(st.st_mode) && !S_ISLNK(st.st_mode);
		if (other)
			err_set("%s: not a regular file (refused: only a file is replaced)", to);
		free(to);
		if (other)
			return -1;
	}
	char *stage = fio_join(a->out, STAGE);
	if (!stage)
		return err_set("out of memory");
	int rc = clear_stage(a->out, stage);
	for (size_t i = 0; rc == 0 && i < sizeof out_files / sizeof out_files[0]; i++)
		if (!(stop_staged[i] = fio_join(stage, out_files[i])))
			rc = err_set("out of memory");
	stop_stage = rc == 0 ? stage : NULL; /* a signal from here on removes what is in it */
	if (rc == 0 && mkdir(stage, 0700) != 0)
		rc = err_set("%s: cannot create: %s", stage, strerror(errno));
	if (rc == 0 && (bpe_write(m, a->specials, a->special, a->n_specials, stage) < 0 ||
			(a->chat && write_chat_config(stage) < 0)))
		rc = -1;
	/* the set is whole: from the mark on, a reader is refused and a run stopped midway
	   is finished by the next one (clear_stage); a signal waits until the files are in
	   place and the stage gone (only SIGKILL stops the run among them) */
	sigset_t was;
	block_stops(&was);
	stop_stage = NULL;
	char *mark = rc == 0 ? fio_join(stage, MARK) : NULL;
	if (rc == 0 && (!mark || write_mark(stage, mark)))
		rc = mark ? -1 : err_set("out of memory");
	for (size_t i = 0; rc == 0 && i < sizeof out_files / sizeof out_files[0]; i++) {
		char *from = fio_join(stage, out_files[i]), *to = fio_join(a->out, out_files[i]);
		struct stat st;
		if (!from || !to)
			rc = err_set("out of memory");
		else if (lstat(from, &st) == 0 ? rename(from, to) != 0
					       : unlink(to) != 0 && errno != ENOENT)
			/* a file this run does not write (tokenizer_config.json of an earlier
			 * --chat) goes: its ids would be another tokenizer's */
			rc = err_set("%s: cannot put in place: %s", to, strerror(errno));
		free(from);
		free(to);
	}
	if (rc == 0 && fio_sync_dir(a->out) == 0 && unlink(mark) != 0)
		rc = err_set("%s: cannot remove: %s", mark, strerror(errno));
	free(mark);
	int cleared = clear_stage(a->out, stage);
	sigprocmask(SIG_SETMASK, &was, NULL);
	for (size_t i = 0; i < sizeof stop_staged / sizeof stop_staged[0]; i++) {
		free(stop_staged[i]);
		stop_staged[i] = NULL;
	}
	free(stage);
	return rc ? rc : cleared;
}

/* Records of a JSON Lines file gathered end to end, counted a batch at a time. */
struct docs {
	struct bpe_counter *c;
	const char *path;
	char *buf;
	size_t len, cap;
	size_t *ends, n, ncap;
};

static int docs_flush(struct docs *d)
{
	int rc = d->n ? bpe_counter_add_docs(d->c, d->buf, d->ends, d->n, d->path) : 0;
	d->len = d->n = 0;
	return rc;
}

/* A record's text joins the batch; a batch of 16 MiB is counted (in parallel). */
static int docs_add(void *user, const char *text, size_t len)
{
	struct docs *d = user;
	if (d->len + len > d->cap) {
		size_t nc = d->cap * 2 > d->len + len ? d->cap * 2 : d->len + len;
		char *g = realloc(d->buf, nc);
		if (!g)
			return err_set("out of memory for %zu bytes of text", nc);
		d->buf = g;
		d->cap = nc;
	}
	if (d->n == d->ncap) {
		size_t nc = d->ncap ? 2 * d->ncap : 1024;
		size_t *g = realloc(d->ends, nc * sizeof *g);
		if (!g)
			return err_set("out of memory");
		d->ends = g;
		d->ncap = nc;
	}
	memcpy(d->buf + d->len, text, len);
	d->len += len;
	d->ends[d->n++] = d->len;
	return d->len >= (16u << 20) ? docs_flush(d) : 0;
}

/* A file's text: each record of JSON Lines (*.jsonl, *.ndjson) a document of its own
 * (its "text", as train reads it), any other file one document. */
static int count_file(struct bpe_counter *c, const char *path)
{
	if (fio_check_ends(path)) /* /dev/zero: counted forever */
		return -1;
	if (!tokens_is_jsonl(path))
		return bpe_counter_add_file(c, path);
	struct docs d = {.c = c, .path = path};
	int rc = tokens_jsonl_each(path, docs_add, &d);
	if (!rc)
		rc = docs_flush(&d);
	free(d.buf);
	free(d.ends);
	return rc;
}

int cmd_train_bpe(int argc, char **argv)
{
	struct args a = {0};
	int first, r = parse_args(argc, argv, &a, &first);
	if (r) {
		free(a.specials);
		free(a.special);
		return r == CLI_DONE ? EXIT_OK : r;
	}
	int rc = EXIT_RUNTIME;
	char *made = NULL; /* the outermost directory made for --out */
	struct bpe_words words = {0};
	struct bpe_model *m = NULL;
	struct bpe_count_stats st;
	double t0 = clock_now();
	struct progress pc = {.tty = !a.quiet && isatty(STDERR_FILENO), .t0 = t0, .last = t0};
	struct bpe_count_opts co = {.specials = a.specials,
				    .n_specials = a.n_specials,
				    .threads = (int)a.threads,
				    .progress = on_count,
				    .progress_ctx = &pc};
	struct bpe_counter *c = bpe_counter_new(&co);
	char *lock_path = NULL;
	int lock = -1;
	if (!c || make_dir(a.out, &made) < 0 || (lock = lock_dir(a.out, made, &lock_path)) < 0)
		goto out;
	for (int i = first; i < argc; i++)
		if (count_file(c, argv[i]) < 0)
			goto out;
	if (bpe_counter_words(c, &words) < 0)
		goto out;
	if (pc.last > t0)
		fputc('\n', stderr);
	bpe_counter_stats(c, &st);
	bpe_counter_free(c);
	c = NULL;
	if (!st.pretokens) { /* the tokenizer in --out, if any, stays as it is */
		if (argc - first == 1)
			err_set("%s: no text to learn merges from (the file is %s)", argv[first],
				st.bytes ? "special tokens only" : "empty");
		else
			err_set("%s ... (%d files): no text to learn merges from", argv[first],
				argc - first);
		goto out;
	}
	double t1 = clock_now();
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
	double t2 = clock_now();
	if (write_tokenizer(&a, m) < 0)
		goto out;
	rc = EXIT_OK;
	if (!a.quiet) {
		struct rusage ru;
		getrusage(RUSAGE_SELF, &ru);
		char text[16], peak[16];
		units_bytes((double)st.bytes, text, sizeof text);
		units_ibytes(ru.ru_maxrss * 1024.0, peak, sizeof peak); /* ru_maxrss is in KiB */
		fprintf(stderr,
			"train-bpe: %s, %llu pre-tokens (%zu distinct) and %llu special "
			"tokens in the text, counted in %.2f s on %ld thread%s; %d merges in "
			"%.2f s (%.0f/s); "
			"vocabulary %d; peak memory %s; wrote %s\n",
			text, (unsigned long long)st.pretokens, st.distinct,
			(unsigned long long)st.specials, t1 - t0, a.threads,
			a.threads == 1 ? "" : "s", m->n_merges, t2 - t1,
			t2 > t1 ? m->n_merges / (t2 - t1) : 0.0, m->n_tokens + a.n_specials, peak,
			a.out);
		if (m->n_merges < a.vocab - 256 - a.n_specials)
			fprintf(stderr,
				"qwenchat: train-bpe: no pair left to merge after %d merges: the "
				"vocabulary is smaller than --vocab-size %ld\n",
				m->n_merges, a.vocab);
	}
out:
	if (rc != EXIT_OK)
		cli_error("train-bpe: %s", err_msg());
	unlock_dir(lock, lock_path);
	if (rc != EXIT_OK && made) /* directories made for nothing go again (if empty) */
		fio_rmdirs_upto(a.out, made);
	stop_top = NULL; /* before the string it names goes */
	free(made);
	bpe_model_free(m);
	bpe_words_free(&words);
	bpe_counter_free(c);
	free(a.specials);
	free(a.special);
	return rc;
}
