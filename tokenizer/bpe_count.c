/* bpe_count.c — pre-token counting for BPE training: files read in blocks cut at
 * places where the Qwen2 pre-tokenizer always splits, each block's ranges counted
 * by threads into their own hash tables, the tables merged at the end. */
#include "tokenizer/bpe_count.h"

#include "src/base/err.h"
#include "src/base/proc.h"
#include "tokenizer/pretok.h"

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define DEFAULT_BLOCK (16u << 20)
#define MAX_THREADS   256
#define MIN_RANGE     8192 /* bytes: below that a thread costs more than it saves */

/* One distinct pre-token: its bytes are the table's arena[off .. off + len). */
struct entry {
	uint64_t hash;
	uint64_t count; /* 0 = empty slot */
	size_t off;
	size_t len;
};

struct table {
	struct entry *e;
	size_t cap, n; /* cap is a power of two */
	char *arena;
	size_t alen, acap;
	uint64_t pretokens, specials;
	bool oom;
};

struct bpe_counter {
	const char *const *specials;
	size_t *spec_len;
	int n_specials;
	int threads;
	size_t block, min_range;
	void (*progress)(void *ctx, uint64_t bytes);
	void *progress_ctx;
	struct table *tabs; /* (threads) */
	uint64_t bytes;
};

/* A thread's share of a block: buf[lo .. hi); or, with ends, of documents lying end
 * to end: document d is buf[ends[d - 1] .. ends[d]) for d in [d0, d1). */
struct job {
	struct bpe_counter *c;
	struct table *tab;
	const char *buf;
	size_t lo, hi;
	size_t *next; /* (n_specials) scratch */
	const size_t *ends;
	size_t d0, d1;
};

static uint64_t hash_bytes(const char *s, size_t n)
{
	uint64_t h = 0x9e3779b97f4a7c15ULL ^ n;
	while (n >= 8) {
		uint64_t v;
		memcpy(&v, s, 8);
		h = (h ^ v) * 0xbf58476d1ce4e5b9ULL;
		h ^= h >> 31;
		s += 8;
		n -= 8;
	}
	uint64_t v = 0;
	memcpy(&v, s, n);
	h = (h ^ v) * 0x94d049bb133111ebULL;
	h ^= h >> 29;
	h *= 0xbf58476d1ce4e5b9ULL;
	return h ^ (h >> 32);
}

static bool table_grow(struct table *t)
{
	size_t cap = t->cap ? t->cap * 2 : 4096;
	struct entry *e = calloc(cap, sizeof *e);
	if (!e)
		return false;
	for (size_t i = 0; i < t->cap; i++) {
		if (!t->e[i].count)
			continue;
		size_t h = t->e[i].hash & (cap - 1);
		while (e[h].count)
			h = (h + 1) & (cap - 1);
		e[h] = t->e[i];
	}
	free(t->e);
	t->e = e;
	t->cap = cap;
	return true;
}

/* Adds count to the pre-token s[0..n); sets t->oom instead of failing loudly
 * (threads report after joining). */
static void table_add(struct table *t, const char *s, size_t n, uint64_t h, uint64_t count)
{
	if ((t->n + 1) * 2 > t->cap && !table_grow(t)) {
		t->oom = true;
		return;
	}
	size_t i = h & (t->cap - 1);
	for (; t->e[i].count; i = (i + 1) & (t->cap - 1)) {
		struct entry *e = &t->e[i];
		if (e->hash == h && e->len == n && !memcmp(t->arena + e->off, s, n)) {
			e->count += count;
			return;
		}
	}
	if (t->alen + n > t->acap) {
		size_t cap = t->acap ? t->acap : 65536;
		while (cap < t->alen + n)
			cap *= 2;
		char *a = realloc(t->arena, cap);
		if (!a) {
			t->oom = true;
			return;
		}
		t->arena = a;
		t->acap = cap;
	}
	memcpy(t->arena + t->alen, s, n);
	t->e[i] = (struct entry){.hash = h, .count = count, .off = t->alen, .len = n};
	t->alen += n;
	t->n++;
}

/* Offset of the first byte of s[0..n) that does not start a valid UTF-8
 * sequence (overlong forms, surrogates and code points above U+10FFFF are
 * invalid), or n when all of it is valid. */
static size_t utf8_check(const unsigned char *s, size_t n)
{
	size_t i = 0;
	while (i < n) {
		if (i + 8 <= n) {
			uint64_t v;
			memcpy(&v, s + i, 8);
			if (!(v & 0x8080808080808080ULL)) {
				i += 8;
				continue;
			}
		}
		unsigned c = s[i];
		if (c < 0x80) {
			i++;
			continue;
		}
		size_t k;
		unsigned lo = 0x80, hi = 0xBF;
		if (c >= 0xC2 && c <= 0xDF)
			k = 1;
		else if (c >= 0xE0 && c <= 0xEF) {
			k = 2;
			if (c == 0xE0)
				lo = 0xA0;
			else if (c == 0xED)
				hi = 0x9F;
		} else if (c >= 0xF0 && c <= 0xF4) {
			k = 3;
			if (c == 0xF0)
				lo = 0x90;
			else if (c == 0xF4)
				hi = 0x8F;
		} else
			return i;
		if (i + k >= n)
			return i; /* cut short by the end of the text */
		if (s[i + 1] < lo || s[i + 1] > hi)
			return i;
		for (size_t j = 2; j <= k; j++)
			if ((s[i + j] & 0xC0) != 0x80)
				return i;
		i += k + 1;
	}
	return n;
}

static bool ascii_letter(unsigned char c)
{
	return (c | 0x20) >= 'a' && (c | 0x20) <= 'z';
}

/* True when the pre-tokenizer splits text at p whatever came before, so the text
 * on each side can be scanned on its own: after a newline followed by a visible
 * ASCII character (the newline ends a `\s*[\r\n]+` or punctuation token), or at
 * the space of "letter space letter" (the letter ends a letters or contraction
 * token, the space starts ` ?\p{L}+`). Never inside a special token. */
static bool is_cut(const struct bpe_counter *c, const unsigned char *s, size_t n, size_t p)
{
	if (p == 0 || p >= n)
		return false;
	bool ok = (s[p - 1] == '\n' && s[p] > 0x20 && s[p] < 0x7f) ||
		  (s[p] == ' ' && p + 1 < n && ascii_letter(s[p - 1]) && ascii_letter(s[p + 1]));
	if (!ok)
		return false;
	for (int k = 0; k < c->n_specials; k++) {
		size_t L = c->spec_len[k];
		for (size_t st = p >= L ? p - L + 1 : 0; st < p; st++)
			if (st + L <= n && !memcmp(s + st, c->specials[k], L))
				return false;
	}
	return true;
}

/* A cut in (lo, hi), the nearest at or before target, else the nearest after it;
 * 0 when there is none. */
static size_t find_cut(const struct bpe_counter *c, const char *buf, size_t n, size_t lo, size_t hi,
		       size_t target)
{
	const unsigned char *s = (const unsigned char *)buf;
	for (size_t p = target; p > lo; p--)
		if (is_cut(c, s, n, p))
			return p;
	for (size_t p = target + 1; p < hi; p++)
		if (is_cut(c, s, n, p))
			return p;
	return 0;
}

/* Pre-tokenizes one document piece (no special token inside) into the table. */
static void count_segment(struct table *t, const char *s, size_t n)
{
	size_t p = 0;
	while (p < n && !t->oom) {
		size_t e = pretok_next(s, n, p);
		table_add(t, s + p, e - p, hash_bytes(s + p, e - p), 1);
		t->pretokens++;
		p = e;
	}
}

/* Counts the pre-tokens of a range between special tokens (leftmost match, the
 * longest special when several start there). */
static void *count_range(void *arg)
{
	struct job *j = arg;
	const struct bpe_counter *c = j->c;
	const char *s = j->buf + j->lo;
	size_t n = j->hi - j->lo;
	size_t *next = j->next; /* where each special next occurs, n = nowhere */
	bool first = true;
	size_t pos = 0;
	while (pos <= n && !j->tab->oom) {
		size_t best = n, blen = 0;
		for (int k = 0; k < c->n_specials; k++) {
			if (first || (next[k] != n && next[k] < pos)) {
				const char *f =
					memmem(s + pos, n - pos, c->specials[k], c->spec_len[k]);
				next[k] = f ? (size_t)(f - s) : n;
			}
			if (next[k] < best ||
			    (next[k] == best && next[k] < n && c->spec_len[k] > blen))
				best = next[k], blen = c->spec_len[k];
		}
		first = false;
		count_segment(j->tab, s + pos, best - pos);
		if (best == n)
			break;
		j->tab->specials++;
		pos = best + blen;
	}
	return NULL;
}

/* A job of whole documents: each counted as a range of its own. */
static void *count_docs(void *arg)
{
	struct job *j = arg;
	for (size_t d = j->d0; d < j->d1 && !j->tab->oom; d++) {
		j->lo = d ? j->ends[d - 1] : 0;
		j->hi = j->ends[d];
		count_range(j);
	}
	return NULL;
}

/* The threads a block of n bytes is worth: a few pages are not worth one. */
static int threads_for(const struct bpe_counter *c, size_t n)
{
	return (size_t)c->threads > n / c->min_range + 1 ? (int)(n / c->min_range + 1) : c->threads;
}

/* Job k of a block (its table is thread k's), with its scratch. */
static struct job job_new(struct bpe_counter *c, int k, const char *buf)
{
	struct job j = {.c = c, .tab = &c->tabs[k], .buf = buf};
	j.next = calloc((size_t)c->n_specials + 1, sizeof(size_t));
	if (!j.next)
		c->tabs[k].oom = true;
	return j;
}

/* Runs jobs[0..nj) (the first on this thread), then adds the block's bytes. */
static int run_jobs(struct bpe_counter *c, struct job *jobs, int nj, size_t bytes)
{
	pthread_t tid[MAX_THREADS];
	bool started[MAX_THREADS] = {false};
	void *(*fn)(void *) = nj > 0 && jobs[0].ends ? count_docs : count_range;
	for (int k = 1; k < nj; k++)
		started[k] = jobs[k].next && proc_thread_create(&tid[k], fn, &jobs[k]) == 0;
	if (nj > 0 && jobs[0].next)
		fn(&jobs[0]);
	for (int k = 1; k < nj; k++) {
		if (started[k])
			pthread_join(tid[k], NULL);
		else if (jobs[k].next)
			fn(&jobs[k]);
	}
	bool oom = false;
	for (int k = 0; k < nj; k++) {
		free(jobs[k].next);
		oom |= c->tabs[k].oom;
	}
	c->bytes += bytes;
	if (oom)
		return err_set("out of memory counting pre-tokens (%zu distinct so far)",
			       c->tabs[0].n);
	if (c->progress)
		c->progress(c->progress_ctx, c->bytes);
	return 0;
}

/* Counts buf[0..cut) split into up to `threads` ranges at cuts. */
static int count_block(struct bpe_counter *c, const char *buf, size_t n, size_t cut)
{
	int T = threads_for(c, cut), nj = 0;
	struct job jobs[MAX_THREADS];
	size_t lo = 0;
	for (int k = 1; k <= T; k++) {
		size_t hi = cut;
		if (k < T) {
			size_t target = (size_t)((double)cut * k / T);
			hi = find_cut(c, buf, n, lo, cut, target > lo ? target : lo);
			if (!hi)
				hi = cut;
		}
		jobs[nj] = job_new(c, nj, buf);
		jobs[nj].lo = lo;
		jobs[nj++].hi = hi;
		lo = hi;
		if (hi == cut)
			break;
	}
	return run_jobs(c, jobs, nj, cut);
}

/* -1 with a message when buf[0..n) is not UTF-8, unless the bad sequence is only
 * cut short by the end of the buffer and more input follows. */
static int check_utf8(const char *buf, size_t n, bool more, const char *name, uint64_t base)
{
	size_t bad = utf8_check((const unsigned char *)buf, n);
	if (bad == n || (more && n - bad < 4))
		return 0;
	return err_set("%s: not valid UTF-8 at byte offset %llu", name,
		       (unsigned long long)(base + bad));
}

int bpe_counter_add_text(struct bpe_counter *c, const char *text, size_t len, const char *name)
{
	if (check_utf8(text, len, false, name, 0) < 0)
		return -1;
	/* in blocks like a file, so both take the same path through the cuts */
	size_t pos = 0;
	while (len - pos > c->block) {
		size_t cut = find_cut(c, text + pos, len - pos, 0, len - pos, c->block);
		if (!cut)
			break;
		if (count_block(c, text + pos, len - pos, cut) < 0)
			return -1;
		pos += cut;
	}
	return count_block(c, text + pos, len - pos, len - pos);
}

int bpe_counter_add_docs(struct bpe_counter *c, const char *buf, const size_t *ends, size_t n,
			 const char *name)
{
	for (size_t d = 0; d < n; d++) { /* each document, as each file, on its own */
		size_t lo = d ? ends[d - 1] : 0;
		if (check_utf8(buf + lo, ends[d] - lo, false, name, lo) < 0)
			return -1;
	}
	size_t total = n ? ends[n - 1] : 0, d = 0;
	int T = threads_for(c, total), nj = 0;
	struct job jobs[MAX_THREADS];
	for (int k = 1; k <= T && d < n; k++) { /* runs of whole documents, even in bytes */
		size_t e = d + 1, target = (size_t)((double)total * k / T);
		while (e < n && (k == T || ends[e - 1] < target))
			e++;
		jobs[nj] = job_new(c, nj, buf);
		jobs[nj].ends = ends;
		jobs[nj].d0 = d;
		jobs[nj++].d1 = e;
		d = e;
	}
	return run_jobs(c, jobs, nj, total);
}

int bpe_counter_add_file(struct bpe_counter *c, const char *path)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return err_set("%s: %s", path, strerror(errno));
	size_t want = c->block, have = 0, cap = 0;
	uint64_t base = 0;
	char *buf = NULL;
	int rc = -1;
	/* a file cut or written while it is read would be counted in part, silently */
	struct stat before, after;
	bool regular = fstat(fileno(f), &before) == 0 && S_ISREG(before.st_mode);
	for (;;) {
		if (cap < want) {
			char *b = realloc(buf, want);
			if (!b) {
				err_set("%s: out of memory for a %zu-byte block", path, want);
				break;
			}
			buf = b;
			cap = want;
		}
		have += fread(buf + have, 1, want - have, f);
		if (ferror(f)) {
			err_set("%s: %s", path, strerror(errno));
			break;
		}
		bool more = have == want;
		if (check_utf8(buf, have, more, path, base) < 0)
			break;
		if (!more && regular &&
		    (fstat(fileno(f), &after) != 0 || after.st_size != before.st_size ||
		     base + have != (uint64_t)before.st_size ||
		     after.st_mtim.tv_sec != before.st_mtim.tv_sec ||
		     after.st_mtim.tv_nsec != before.st_mtim.tv_nsec)) {
			err_set("%s: changed while it was read: run again once nothing writes it",
				path);
			break;
		}
		if (!more) {
			rc = count_block(c, buf, have, have);
			break;
		}
		size_t cut = find_cut(c, buf, have, 0, have, have - 1);
		if (!cut) {
			want *= 2; /* no place to cut: read on (a very long line of one token) */
			continue;
		}
		if (count_block(c, buf, have, cut) < 0)
			break;
		memmove(buf, buf + cut, have - cut);
		have -= cut;
		base += cut;
		want = have + c->block;
	}
	free(buf);
	fclose(f);
	return rc;
}

struct bpe_counter *bpe_counter_new(const struct bpe_count_opts *opts)
{
	struct bpe_counter *c = calloc(1, sizeof *c);
	if (!c) {
		err_set("out of memory");
		return NULL;
	}
	c->specials = opts->specials;
	c->n_specials = opts->n_specials > 0 ? opts->n_specials : 0;
	c->threads = opts->threads < 1             ? 1
		     : opts->threads > MAX_THREADS ? MAX_THREADS
						   : opts->threads;
	c->block = opts->block_bytes ? opts->block_bytes : DEFAULT_BLOCK;
	c->min_range = opts->min_range_bytes ? opts->min_range_bytes : MIN_RANGE;
	c->progress = opts->progress;
	c->progress_ctx = opts->progress_ctx;
	c->spec_len = calloc((size_t)c->n_specials + 1, sizeof *c->spec_len);
	c->tabs = calloc((size_t)c->threads, sizeof *c->tabs);
	if (!c->spec_len || !c->tabs) {
		err_set("out of memory");
		bpe_counter_free(c);
		return NULL;
	}
	for (int k = 0; k < c->n_specials; k++) {
		c->spec_len[k] = strlen(c->specials[k]);
		if (!c->spec_len[k]) {
			err_set("special token %d is empty", k + 1);
			bpe_counter_free(c);
			return NULL;
		}
	}
	return c;
}

void bpe_counter_free(struct bpe_counter *c)
{
	if (!c)
		return;
	for (int k = 0; c->tabs && k < c->threads; k++) {
		free(c->tabs[k].e);
		free(c->tabs[k].arena);
	}
	free(c->tabs);
	free(c->spec_len);
	free(c);
}

/* Folds every thread's table into the first. */
static int merge_tables(struct bpe_counter *c)
{
	struct table *t0 = &c->tabs[0];
	for (int k = 1; k < c->threads; k++) {
		struct table *t = &c->tabs[k];
		for (size_t i = 0; i < t->cap && !t0->oom; i++)
			if (t->e[i].count)
				table_add(t0, t->arena + t->e[i].off, t->e[i].len, t->e[i].hash,
					  t->e[i].count);
		t0->pretokens += t->pretokens;
		t0->specials += t->specials;
		free(t->e);
		free(t->arena);
		*t = (struct table){0};
	}
	if (t0->oom)
		return err_set("out of memory merging pre-token counts");
	return 0;
}

int bpe_counter_words(struct bpe_counter *c, struct bpe_words *out)
{
	*out = (struct bpe_words){0};
	if (merge_tables(c) < 0)
		return -1;
	const struct table *t = &c->tabs[0];
	out->arena = malloc(t->alen + 1);
	out->off = malloc((t->n + 1) * sizeof *out->off);
	out->count = malloc((t->n + 1) * sizeof *out->count);
	if (!out->arena || !out->off || !out->count) {
		bpe_words_free(out);
		return err_set("out of memory for %zu pre-tokens", t->n);
	}
	size_t w = 0, o = 0;
	for (size_t i = 0; i < t->cap; i++) {
		if (!t->e[i].count)
			continue;
		out->off[w] = o;
		out->count[w] = t->e[i].count;
		memcpy(out->arena + o, t->arena + t->e[i].off, t->e[i].len);
		o += t->e[i].len;
		w++;
	}
	out->off[w] = o;
	out->n = w;
	return 0;
}

void bpe_counter_stats(const struct bpe_counter *c, struct bpe_count_stats *st)
{
	*st = (struct bpe_count_stats){.bytes = c->bytes};
	for (int k = 0; k < c->threads; k++) {
		st->pretokens += c->tabs[k].pretokens;
		st->specials += c->tabs[k].specials;
	}
	st->distinct = c->tabs[0].n; /* exact once bpe_counter_words merged the tables */
}

void bpe_words_free(struct bpe_words *w)
{
	free(w->arena);
	free(w->off);
	free(w->count);
	*w = (struct bpe_words){0};
}
