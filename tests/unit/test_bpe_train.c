/* test_bpe_train.c — the BPE merge loop on pre-counted words: the CS336 handout's
 * worked example, ties, overlapping pairs, and random word sets compared with a
 * naive trainer (all pair counts recomputed every merge) written here. */
#include "tokenizer/bpe_count.h"
#include "tokenizer/bpe_train.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "src/base/err.h"
#include <unistd.h>

/* Builds a bpe_words from NUL-terminated strings and counts. */
static struct bpe_words make_words(const char *const *s, const uint64_t *count, size_t n)
{
	struct bpe_words w = {.n = n};
	size_t total = 0;
	for (size_t i = 0; i < n; i++)
		total += strlen(s[i]);
	w.arena = malloc(total + 1);
	w.off = malloc((n + 1) * sizeof *w.off);
	w.count = malloc((n + 1) * sizeof *w.count);
	assert_non_null(w.arena);
	total = 0;
	for (size_t i = 0; i < n; i++) {
		w.off[i] = total;
		memcpy(w.arena + total, s[i], strlen(s[i]));
		total += strlen(s[i]);
		w.count[i] = count[i];
	}
	w.off[n] = total;
	return w;
}

static void free_words(struct bpe_words *w)
{
	free(w->arena);
	free(w->off);
	free(w->count);
}

/* "left right" of merge i as printable text (the test words are ASCII). */
static void merge_text(const struct bpe_model *m, int i, char *buf, size_t n)
{
	size_t la, lb;
	const char *a = bpe_model_token(m, m->merges[i][0], &la);
	const char *b = bpe_model_token(m, m->merges[i][1], &lb);
	snprintf(buf, n, "%.*s %.*s", (int)la, a, (int)lb, b);
}

/* The worked example of the CS336 assignment handout (BPE training example):
 * "low low low low low lower lower widest widest widest newest newest ..." split
 * on whitespace; the handout lists these merges, ties included ("s t" before
 * "e s", "o w" before "l o", "w est" before "n e"). */
static void test_handout_example(void **state)
{
	(void)state;
	const char *s[] = {"low", "lower", "widest", "newest"};
	const uint64_t c[] = {5, 2, 3, 6};
	struct bpe_words w = make_words(s, c, 4);
	struct bpe_train_opts o = {.vocab_size = 256 + 12};
	struct bpe_model *m = bpe_train(&w, &o);
	assert_non_null(m);
	const char *want[] = {"s t",     "e st", "o w",  "l ow",    "w est", "n e",
			      "ne west", "w i",  "wi d", "wid est", "low e", "lowe r"};
	assert_int_equal(m->n_merges, 12);
	for (int i = 0; i < 12; i++) {
		char buf[64];
		merge_text(m, i, buf, sizeof buf);
		assert_string_equal(buf, want[i]);
	}
	assert_int_equal(m->n_tokens, 268);
	size_t len;
	const char *tok = bpe_model_token(m, 267, &len);
	assert_int_equal(len, 5);
	assert_memory_equal(tok, "lower", 5);
	bpe_model_free(m);
	free_words(&w);
}

/* Equal counts: the greater (left, right) byte pair wins, "b" + "a" before
 * "a" + "b"; then the higher count ("x y", 2) before a tie-winning lower one. */
static void test_ties(void **state)
{
	(void)state;
	const char *s[] = {"ab", "ba", "xy", "xyz"};
	const uint64_t c[] = {3, 3, 1, 1};
	struct bpe_words w = make_words(s, c, 4);
	struct bpe_train_opts o = {.vocab_size = 256 + 4};
	struct bpe_model *m = bpe_train(&w, &o);
	assert_non_null(m);
	char buf[64];
	merge_text(m, 0, buf, sizeof buf);
	assert_string_equal(buf, "b a");
	merge_text(m, 1, buf, sizeof buf);
	assert_string_equal(buf, "a b");
	merge_text(m, 2, buf, sizeof buf);
	assert_string_equal(buf, "x y"); /* count 2 */
	merge_text(m, 3, buf, sizeof buf);
	assert_string_equal(buf, "xy z");
	bpe_model_free(m);
	free_words(&w);
}

/* Runs of one byte: pairs overlap and merge left to right; and training stops
 * early, without error, when every word is a single token. */
static void test_overlap_and_exhaustion(void **state)
{
	(void)state;
	const char *s[] = {"aaaaa", "aaa"};
	const uint64_t c[] = {1, 10};
	struct bpe_words w = make_words(s, c, 2);
	struct bpe_train_opts o = {.vocab_size = 1000, .n_specials = 1};
	struct bpe_model *m = bpe_train(&w, &o);
	assert_non_null(m);
	/* aaa: 2 pairs x10, aaaaa: 4 x1 -> "a a" (24); then aa|a (10) and aa|aa
	 * (1), aa|a (1); "aa a" (11) -> aaa; then aaaaa = aa aaa -> "aa aaa" */
	char buf[64];
	assert_int_equal(m->n_merges, 3);
	merge_text(m, 0, buf, sizeof buf);
	assert_string_equal(buf, "a a");
	merge_text(m, 1, buf, sizeof buf);
	assert_string_equal(buf, "aa a");
	merge_text(m, 2, buf, sizeof buf);
	assert_string_equal(buf, "aa aaa");
	bpe_model_free(m);
	free_words(&w);
}

static void test_vocab_too_small(void **state)
{
	(void)state;
	const char *s[] = {"ab"};
	const uint64_t c[] = {1};
	struct bpe_words w = make_words(s, c, 1);
	struct bpe_train_opts o = {.vocab_size = 256, .n_specials = 1};
	assert_null(bpe_train(&w, &o));
	o.n_specials = 0;
	struct bpe_model *m = bpe_train(&w, &o);
	assert_non_null(m);
	assert_int_equal(m->n_merges, 0);
	bpe_model_free(m);
	free_words(&w);
}

/* The naive reference: words as token-id arrays, every merge recounts every
 * pair from scratch and takes max (count, bytes(a), bytes(b)). */
struct naive {
	int nw;
	int *len, **tok;
	uint64_t *count;
	char tb[512][16]; /* token bytes (test words have at most 12) */
	int tl[512];
	int ntok;
};

static int cmp_bytes(const char *x, int nx, const char *y, int ny)
{
	int c = memcmp(x, y, (size_t)(nx < ny ? nx : ny));
	return c ? c : (nx > ny) - (nx < ny);
}

static int naive_step(struct naive *r, int *out_a, int *out_b)
{
	static uint64_t cnt[512][512]; /* zeroed again below after each use */
	for (int w = 0; w < r->nw; w++)
		for (int i = 0; i + 1 < r->len[w]; i++)
			cnt[r->tok[w][i]][r->tok[w][i + 1]] += r->count[w];
	int ba = -1, bb = -1;
	for (int w = 0; w < r->nw; w++)
		for (int i = 0; i + 1 < r->len[w]; i++) {
			int a = r->tok[w][i], b = r->tok[w][i + 1];
			int better = ba < 0 || cnt[a][b] > cnt[ba][bb];
			if (!better && cnt[a][b] == cnt[ba][bb]) {
				int c = cmp_bytes(r->tb[a], r->tl[a], r->tb[ba], r->tl[ba]);
				if (!c)
					c = cmp_bytes(r->tb[b], r->tl[b], r->tb[bb], r->tl[bb]);
				better = c > 0;
			}
			if (better)
				ba = a, bb = b;
		}
	for (int w = 0; w < r->nw; w++)
		for (int i = 0; i + 1 < r->len[w]; i++)
			cnt[r->tok[w][i]][r->tok[w][i + 1]] = 0;
	if (ba < 0)
		return 0;
	int z = r->ntok++;
	memcpy(r->tb[z], r->tb[ba], (size_t)r->tl[ba]);
	memcpy(r->tb[z] + r->tl[ba], r->tb[bb], (size_t)r->tl[bb]);
	r->tl[z] = r->tl[ba] + r->tl[bb];
	for (int w = 0; w < r->nw; w++) {
		int j = 0;
		for (int i = 0; i < r->len[w];) {
			if (i + 1 < r->len[w] && r->tok[w][i] == ba && r->tok[w][i + 1] == bb)
				r->tok[w][j++] = z, i += 2;
			else
				r->tok[w][j++] = r->tok[w][i++];
		}
		r->len[w] = j;
	}
	*out_a = ba;
	*out_b = bb;
	return 1;
}

/* Random words over a tiny alphabet (many ties, many overlaps) and skewed counts. */
static void test_random_against_naive(void **state)
{
	(void)state;
	uint64_t seed = 12345;
	for (int round = 0; round < 20; round++) {
		int nw = 5 + round * 3;
		char **s = malloc((size_t)nw * sizeof *s);
		uint64_t *c = malloc((size_t)nw * sizeof *c);
		struct naive *r = calloc(1, sizeof *r);
		assert_non_null(r);
		r->nw = nw;
		r->len = malloc((size_t)nw * sizeof *r->len);
		r->tok = malloc((size_t)nw * sizeof *r->tok);
		r->count = c;
		int alpha = 2 + round % 4;
		for (int w = 0; w < nw; w++) {
			seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
			int n = 1 + (int)((seed >> 33) % 12);
			s[w] = malloc((size_t)n + 1);
			r->tok[w] = malloc((size_t)n * sizeof(int));
			for (int i = 0; i < n; i++) {
				seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
				s[w][i] =
					(char)((i + round) % 7 == 0 ? 0xC3
								    : 'a' + (int)((seed >> 35) %
										  (uint64_t)alpha));
				r->tok[w][i] = (unsigned char)s[w][i];
			}
			s[w][n] = 0;
			r->len[w] = n;
			c[w] = 1 + (seed >> 40) % (round % 2 ? 3 : 50);
		}
		for (int i = 0; i < 256; i++)
			r->tb[i][0] = (char)i, r->tl[i] = 1;
		r->ntok = 256;
		struct bpe_words w = make_words((const char *const *)s, c, (size_t)nw);
		struct bpe_train_opts o = {.vocab_size = 256 + 200};
		struct bpe_model *m = bpe_train(&w, &o);
		assert_non_null(m);
		int k = 0, a, b;
		while (k < 200 && naive_step(r, &a, &b)) {
			assert_true(k < m->n_merges);
			assert_int_equal(m->merges[k][0], a);
			assert_int_equal(m->merges[k][1], b);
			k++;
		}
		assert_int_equal(k, m->n_merges);
		bpe_model_free(m);
		free_words(&w);
		for (int i = 0; i < nw; i++)
			free(s[i]), free(r->tok[i]);
		free(s), free(c), free(r->len), free(r->tok), free(r);
	}
}

/* Counts by pre-token text, for comparing two countings in any order. */
static int cmp_word(const void *x, const void *y, void *ctx)
{
	const struct bpe_words *w = ctx;
	size_t i = *(const size_t *)x, j = *(const size_t *)y;
	size_t li = w->off[i + 1] - w->off[i], lj = w->off[j + 1] - w->off[j];
	int c = memcmp(w->arena + w->off[i], w->arena + w->off[j], li < lj ? li : lj);
	return c ? c : (li > lj) - (li < lj);
}

static void assert_same_words(struct bpe_words *a, struct bpe_words *b)
{
	assert_int_equal(a->n, b->n);
	size_t *ia = malloc(a->n * sizeof *ia + 1), *ib = malloc(b->n * sizeof *ib + 1);
	for (size_t i = 0; i < a->n; i++)
		ia[i] = ib[i] = i;
	qsort_r(ia, a->n, sizeof *ia, cmp_word, a);
	qsort_r(ib, b->n, sizeof *ib, cmp_word, b);
	for (size_t i = 0; i < a->n; i++) {
		size_t x = ia[i], y = ib[i];
		size_t lx = a->off[x + 1] - a->off[x], ly = b->off[y + 1] - b->off[y];
		assert_int_equal(lx, ly);
		assert_memory_equal(a->arena + a->off[x], b->arena + b->off[y], lx);
		assert_int_equal(a->count[x], b->count[y]);
	}
	free(ia);
	free(ib);
}

/* Text read in small blocks by 3 threads counts exactly what one pass over the
 * whole text counts: the block and range cuts never split a pre-token nor a
 * special token. */
static void test_count_blocks_and_threads(void **state)
{
	(void)state;
	static const char *parts[] = {
		"The quick brown fox",
		" jumps",
		"\n",
		"over the lazy dog.",
		"\n\n",
		"  ",
		"<|endoftext|>",
		"<|end",
		"oftext|>",
		"can't",
		" 12345",
		"\r\n",
		"日本語",
		" naïve",
		"x",
		"\t",
		"<|im_start|>",
		"\n\nword",
		" a b c",
		"?!",
		"  \n x",
	};
	const size_t np = sizeof parts / sizeof *parts;
	size_t cap = 300000, len = 0;
	char *text = malloc(cap);
	uint64_t seed = 7;
	while (len + 32 < cap) {
		seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
		const char *p = parts[(seed >> 33) % np];
		memcpy(text + len, p, strlen(p));
		len += strlen(p);
	}
	char path[] = "/tmp/test_bpe_train.XXXXXX";
	int fd = mkstemp(path);
	assert_true(fd >= 0);
	FILE *f = fdopen(fd, "wb");
	assert_int_equal(fwrite(text, 1, len, f), len);
	fclose(f);
	const char *specials[] = {"<|endoftext|>", "<|im_start|>", "<|im_start|>\n"};
	struct bpe_count_opts one = {
		.specials = specials, .n_specials = 3, .threads = 1, .block_bytes = 1 << 20};
	struct bpe_count_opts many = {.specials = specials, .n_specials = 3, .threads = 3};
	struct bpe_counter *c1 = bpe_counter_new(&one);
	assert_non_null(c1);
	assert_int_equal(bpe_counter_add_text(c1, text, len, "text"), 0);
	struct bpe_words w1, w2;
	assert_int_equal(bpe_counter_words(c1, &w1), 0);
	struct bpe_count_stats s1, s2;
	bpe_counter_stats(c1, &s1);
	assert_int_equal(s1.bytes, len);
	assert_true(s1.specials > 0);
	/* no pre-token holds a special token */
	for (size_t i = 0; i < w1.n; i++)
		for (int k = 0; k < 2; k++)
			assert_null(memmem(w1.arena + w1.off[i], w1.off[i + 1] - w1.off[i],
					   specials[k], strlen(specials[k])));
	/* small blocks (one range each), then blocks split among 3 threads; from the
	 * file, then from memory with ranges down to 512 bytes */
	for (int k = 0; k < 4; k++) {
		many.block_bytes = k % 2 ? 40000 : 4096;
		many.min_range_bytes = k < 2 ? 0 : 512;
		struct bpe_counter *c2 = bpe_counter_new(&many);
		assert_non_null(c2);
		if (k < 2)
			assert_int_equal(bpe_counter_add_file(c2, path), 0);
		else
			assert_int_equal(bpe_counter_add_text(c2, text, len, "text"), 0);
		assert_int_equal(bpe_counter_words(c2, &w2), 0);
		bpe_counter_stats(c2, &s2);
		assert_int_equal(s2.bytes, len);
		assert_int_equal(s1.pretokens, s2.pretokens);
		assert_int_equal(s1.specials, s2.specials);
		assert_same_words(&w1, &w2);
		bpe_words_free(&w2);
		bpe_counter_free(c2);
	}
	bpe_words_free(&w1);
	bpe_counter_free(c1);
	/* a bad byte far into the file is found with its offset */
	text[len - 20] = (char)0xff;
	f = fopen(path, "wb");
	assert_int_equal(fwrite(text, 1, len, f), len);
	fclose(f);
	struct bpe_counter *c2 = bpe_counter_new(&many);
	assert_int_equal(bpe_counter_add_file(c2, path), -1);
	char want[128];
	snprintf(want, sizeof want, "%s: not valid UTF-8 at byte offset %zu", path, len - 20);
	assert_string_equal(err_msg(), want);
	bpe_counter_free(c2);
	unlink(path);
	free(text);
}

/* Documents end to end, counted by 3 threads at once, count what each counted on its
 * own counts: no pre-token or special token spans two of them (a concatenation would
 * join "x" and "y", and "<|end" and "oftext|>"). */
static void test_count_docs(void **state)
{
	(void)state;
	static const char *parts[] = {"x", "y", " z", "<|end", "oftext|>", "\n", "  ", "ab", "7"};
	enum { N = 2000 };
	size_t ends[N], len = 0;
	char *buf = malloc(N * 24);
	uint64_t seed = 11;
	for (int d = 0; d < N; d++) {
		seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
		for (int k = 0; k < (int)(seed >> 60) % 5 + 1; k++) {
			const char *p = parts[(seed >> (3 * k + 20)) % 9];
			memcpy(buf + len, p, strlen(p));
			len += strlen(p);
		}
		ends[d] = len;
	}
	const char *specials[] = {"<|endoftext|>"};
	struct bpe_count_opts one = {.specials = specials, .n_specials = 1, .threads = 1};
	struct bpe_count_opts many = {
		.specials = specials, .n_specials = 1, .threads = 3, .min_range_bytes = 64};
	struct bpe_counter *c1 = bpe_counter_new(&one), *c2 = bpe_counter_new(&many),
			   *c3 = bpe_counter_new(&one);
	for (int d = 0; d < N; d++)
		assert_int_equal(bpe_counter_add_text(c1, buf + (d ? ends[d - 1] : 0),
						      ends[d] - (d ? ends[d - 1] : 0), "doc"),
				 0);
	assert_int_equal(bpe_counter_add_docs(c2, buf, ends, N, "docs"), 0);
	assert_int_equal(bpe_counter_add_text(c3, buf, len, "all"), 0);
	struct bpe_words w1, w2;
	struct bpe_count_stats s1, s2, s3;
	assert_int_equal(bpe_counter_words(c1, &w1), 0);
	assert_int_equal(bpe_counter_words(c2, &w2), 0);
	bpe_counter_stats(c1, &s1);
	bpe_counter_stats(c2, &s2);
	bpe_counter_stats(c3, &s3);
	assert_int_equal(s2.bytes, len);
	assert_int_equal(s1.pretokens, s2.pretokens);
	assert_int_equal(s1.specials, s2.specials);
	assert_same_words(&w1, &w2);
	assert_true(s3.pretokens < s1.pretokens && s3.specials > s1.specials); /* joins matter */
	bpe_words_free(&w1);
	bpe_words_free(&w2);
	bpe_counter_free(c1);
	bpe_counter_free(c2);
	bpe_counter_free(c3);
	free(buf);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_handout_example),
		cmocka_unit_test(test_ties),
		cmocka_unit_test(test_overlap_and_exhaustion),
		cmocka_unit_test(test_vocab_too_small),
		cmocka_unit_test(test_random_against_naive),
		cmocka_unit_test(test_count_blocks_and_threads),
		cmocka_unit_test(test_count_docs),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
