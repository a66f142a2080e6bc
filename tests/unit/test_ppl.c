/* test_ppl.c — the perplexity loop (src/train/ppl.c): its window arithmetic against a
 * plain transcription of the transformers guide's loop with -100 labels, one row's
 * NLL, KL and top-1 against long double and hand-computed values, and ppl_run on a
 * tests/mkmodel model against whole-window forwards scored row by row, for several
 * windows, strides and slice sizes, with a base model and with bad arguments. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "engine/engine.h"
#include "src/base/err.h"
#include "src/train/ppl.h"
#include "src/train/dataset.h"
#include "tests/unit/testutil.h"

/* |a - b| <= tol (this cmocka has no assert_double_equal) */
#define assert_close(a, b, tol) close_to((a), (b), (tol), __LINE__)
static void close_to(double a, double b, double tol, int line)
{
	if (!(fabs(a - b) <= tol))
		fail_msg("line %d: %.17g and %.17g differ by more than %g", line, a, b, tol);
}

static char tmpdir[] = "/tmp/qwenchat-ppl.XXXXXX";
static struct eng_model *model;
static int V;

static int setup(void **state)
{
	(void)state;
	char dir[200];
	if (!mkdtemp(tmpdir))
		return -1;
	snprintf(dir, sizeof dir, "%s/m", tmpdir);
	if (tu_make_model(dir,
			  "--vocab-size 300 --hidden-size 64 --intermediate-size 96 --layers 2 "
			  "--heads 4 --kv-heads 2 --head-dim 16 --std 0.3 --no-tie --seed 4",
			  false))
		return -1;
	if (!(model = eng_model_open(dir))) {
		fprintf(stderr, "%s\n", err_msg());
		return -1;
	}
	V = eng_model_config(model)->vocab_size;
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	eng_model_free(model);
	char cmd[256];
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
	return system(cmd) == 0 ? 0 : -1;
}

/* The guide's loop, labels as a mask: window positions before end - trg_len are
 * -100, and the shifted loss never sees the label at position 0. */
static size_t guide_count(size_t n, size_t ctx, size_t stride, size_t *windows)
{
	size_t total = 0, prev_end = 0;
	*windows = 0;
	for (size_t begin = 0; begin < n; begin += stride) {
		size_t end = begin + ctx < n ? begin + ctx : n, trg_len = end - prev_end;
		size_t scored = 0;
		for (size_t j = 1; j < end - begin; j++) /* shift: label j, logits j - 1 */
			scored += j >= end - begin - trg_len;
		total += scored;
		*windows += scored > 0;
		prev_end = end;
		if (end == n)
			break;
	}
	return total;
}

static void test_count(void **state)
{
	(void)state;
	size_t w;
	for (size_t n = 0; n < 40; n++)
		for (int ctx = 1; ctx < 13; ctx++)
			for (int s = 1; s <= ctx; s++)
				assert_int_equal(ppl_count(n, ctx, s, false),
						 guide_count(n, (size_t)ctx, (size_t)s, &w));
	assert_int_equal(ppl_count(100, 10, 11, false), 0); /* stride beyond the window: refused */
	assert_int_equal(ppl_count(100, 16, 4, false),
			 99); /* overlapping: every token but the first */
	assert_int_equal(ppl_count(100, 10, 10, false),
			 90); /* disjoint: each window's first is lost */
	/* llama-perplexity's chunks: whole ones only, each scoring N - 1 - N/2 labels */
	assert_int_equal(ppl_count(100, 10, 10, true), 10 * 4);
	assert_int_equal(ppl_count(99, 10, 10, true), 9 * 4);
	assert_int_equal(ppl_count(100, 11, 11, true), 9 * 5);
	assert_int_equal(ppl_count(100, 10, 5, true), 0); /* chunks do not overlap */
}

static void test_score_row(void **state)
{
	(void)state;
	double e[8];
	struct ppl_row r;
	const float half[2] = {0, 0}, quarter[2] = {0, (float)log(3.0)};
	ppl_score_row(half, NULL, 2, 1, e, &r);
	assert_close(r.nll, log(2.0), 1e-15);
	assert_true(r.kl == 0 && !r.same_top1);
	ppl_score_row(half, quarter, 2, 0, e, &r);
	/* P = (1/2, 1/2), Q = (1/4, 3/4) */
	assert_close(r.kl, 0.5 * log(2.0) + 0.5 * log(2.0 / 3.0), 1e-7);
	assert_close(r.base_nll, log(4.0), 1e-7);
	assert_close(r.dp, 0.5 - 0.25, 1e-7);
	assert_false(r.same_top1); /* P's first largest is 0, Q's is 1 */
	/* far apart logits: no overflow, no NaN */
	const float wide[3] = {1000, 0, -1000};
	ppl_score_row(wide, NULL, 3, 0, e, &r);
	assert_true(r.nll >= 0 && r.nll < 1e-300);
	ppl_score_row(wide, NULL, 3, 2, e, &r);
	assert_close(r.nll, 2000, 1e-9);
	/* ties go to the first index */
	const float t1[3] = {1, 3, 3}, t2[3] = {3, 1, 3}, t3[3] = {0, 3, 3};
	ppl_score_row(t1, t2, 3, 0, e, &r);
	assert_false(r.same_top1);
	ppl_score_row(t1, t3, 3, 0, e, &r);
	assert_true(r.same_top1);
}

/* Quantiles as llama-perplexity's percentile: linear between the neighbours of
 * f * (n - 1). */
static void test_quantile(void **state)
{
	(void)state;
	const double one[1] = {7}, four[4] = {1, 2, 4, 8};
	assert_true(ppl_quantile(one, 1, 0.5) == 7 && ppl_quantile(one, 1, 1) == 7);
	assert_close(ppl_quantile(four, 4, 0.5), 3, 1e-15); /* the middle two's mean */
	assert_close(ppl_quantile(four, 4, 0.9), 4 + 0.7 * 4, 1e-6);
	assert_true(ppl_quantile(four, 4, 0) == 1 && ppl_quantile(four, 4, 1) == 8);
	assert_close(ppl_quantile(four, 4, 0.999), 8 - 0.003 * 4, 1e-6);
}

/* Random rows against long double: the NLL and KL of a 1000-token vocabulary. */
static void test_score_row_random(void **state)
{
	(void)state;
	enum { N = 1000 };
	static float p[N], q[N];
	static double e[N];
	srand(3);
	for (int v = 0; v < N; v++) {
		p[v] = (float)(rand() % 2000) / 100 - 10;
		q[v] = p[v] + (float)(rand() % 100) / 50 - 1;
	}
	long double mp = -INFINITY, mq = -INFINITY, sp = 0, sq = 0, kl = 0;
	for (int v = 0; v < N; v++)
		mp = fmaxl(mp, p[v]), mq = fmaxl(mq, q[v]);
	for (int v = 0; v < N; v++)
		sp += expl(p[v] - mp), sq += expl(q[v] - mq);
	long double lp = mp + logl(sp), lq = mq + logl(sq);
	for (int v = 0; v < N; v++)
		kl += expl(p[v] - lp) * ((p[v] - lp) - (q[v] - lq));
	struct ppl_row r;
	ppl_score_row(p, q, N, 17, e, &r);
	assert_close(r.nll, (double)(lp - p[17]), 1e-12 * (double)(lp - p[17]));
	assert_close(r.kl, (double)kl, 1e-10 * (double)kl);
	ppl_score_row(p, p, N, 17, e, &r);
	assert_true(r.kl == 0.0); /* exactly */
	assert_true(r.same_top1);
}

static struct eng *engine(int ctx)
{
	struct eng_options o = {.backend = ENG_BACKEND_CPU, .ctx = ctx, .kv_f32 = true};
	struct eng *e = eng_new(model, &o, NULL);
	if (!e)
		fail_msg("eng_new: %s", err_msg());
	return e;
}

/* The loop done plainly: each window's whole forward, every label row scored. */
static void brute(struct eng *e, const int32_t *ids, size_t n, int ctx, int stride,
		  struct ppl_result *r)
{
	float *lg = malloc((size_t)ctx * (size_t)V * sizeof *lg);
	double *sc = malloc((size_t)V * sizeof *sc);
	size_t prev_end = 0;
	*r = (struct ppl_result){0};
	for (size_t begin = 0; begin < n; begin += (size_t)stride) {
		size_t end = begin + (size_t)ctx < n ? begin + (size_t)ctx : n;
		size_t len = end - begin, first = len - (end - prev_end);
		if (first < 1)
			first = 1;
		if (first < len) {
			assert_int_equal(eng_forward(e, ids + begin, (int)len, 0, lg, true), 0);
			for (size_t j = first; j < len; j++) {
				struct ppl_row row;
				ppl_score_row(lg + (j - 1) * (size_t)V, NULL, V, ids[begin + j], sc,
					      &row);
				r->nll += row.nll;
				r->tokens++;
			}
			r->windows++;
		}
		prev_end = end;
		if (end == n)
			break;
	}
	free(lg);
	free(sc);
}

struct calls {
	size_t last, total, n;
};

static void on_progress(void *user, size_t scored, size_t total)
{
	struct calls *c = user;
	assert_true(scored > c->last || c->n == 0);
	c->last = scored;
	c->total = total;
	c->n++;
}

static void test_run(void **state)
{
	(void)state;
	enum { N = 61 };
	int32_t ids[N];
	for (int i = 0; i < N; i++)
		ids[i] = (int32_t)((i * 7919 + 13) % V);
	static const int pairs[][2] = {{16, 16}, {16, 5}, {20, 1}, {2, 1}, {61, 61}, {64, 64},
				       {33, 32}, {10, 3}};
	struct eng *e = engine(64), *f = engine(64);
	for (size_t k = 0; k < sizeof pairs / sizeof pairs[0]; k++) {
		int ctx = pairs[k][0], stride = pairs[k][1];
		struct ppl_result want, got;
		brute(f, ids, N, ctx, stride, &want);
		assert_int_equal(want.tokens, ppl_count(N, ctx, stride, false));
		for (int slice = 0; slice < 5; slice += 2) { /* the default, 2 and 4 rows */
			struct calls c = {0};
			struct ppl_options o = {.vocab = V,
						.ctx = ctx,
						.stride = stride,
						.slice = slice,
						.threads = 1 + slice,
						.progress = on_progress,
						.user = &c};
			assert_int_equal(ppl_run(e, NULL, ids, N, &o, &got), 0);
			assert_int_equal(got.tokens, want.tokens);
			assert_int_equal(got.windows, want.windows);
			/* slices of other lengths: fp32 sums in another order at most */
			assert_close(got.nll, want.nll, 1e-7 * want.nll);
			assert_true(got.kl == 0 && got.top1 == 0);
			assert_int_equal(c.last, want.tokens);
			assert_int_equal(c.total, want.tokens);
		}
		/* against itself: KL 0 and full agreement, exactly */
		struct ppl_options o = {.vocab = V, .ctx = ctx, .stride = stride, .threads = 2};
		assert_int_equal(ppl_run(e, f, ids, N, &o, &got), 0);
		assert_true(got.kl == 0.0 && got.dp == 0.0 && got.dnll2 == 0.0);
		assert_int_equal(got.top1, got.tokens);
		assert_close(got.nll, want.nll, 1e-7 * want.nll);
		assert_true(got.base_nll == got.nll);
		for (size_t i = 0; i < got.tokens; i++)
			assert_true(got.kl_each[i] == 0.0);
		ppl_result_free(&got);
		assert_null(got.kl_each);
	}
	eng_free(e);
	eng_free(f);
}

/* Documents (perplexity --sft): each run alone from position 0, only its marked tokens
 * scored, against each document's whole forward; slices of 2 rows and the default. */
static void test_docs(void **state)
{
	(void)state;
	enum { N = 50 };
	int32_t ids[N];
	uint8_t scored[N] = {0};
	for (int i = 0; i < N; i++) {
		ids[i] = (int32_t)((i * 7919 + 5) % V);
		scored[i] = (i % 7) > 2 ? DSET_SCORED : 0; /* some of every document */
	}
	scored[30] = DSET_SCORED | DSET_START; /* the first token of a document: never scored */
	scored[5] = DSET_START;                /* another flag alone scores nothing */
	const size_t d3[4] = {0, 12, 30, 50}; /* three documents: 12, 18 and 20 tokens */
	float *lg = malloc((size_t)20 * V * sizeof *lg);
	double sc[V], nll = 0;
	size_t tokens = 0;
	struct eng *e = engine(32), *f = engine(32);
	for (int d = 0; d < 3; d++) {
		size_t b = d3[d], len = d3[d + 1] - b;
		assert_int_equal(eng_forward(f, ids + b, (int)len, 0, lg, true), 0);
		for (size_t j = 1; j < len; j++)
			if (scored[b + j] & DSET_SCORED) {
				struct ppl_row row;
				ppl_score_row(lg + (j - 1) * (size_t)V, NULL, V, ids[b + j], sc,
					      &row);
				nll += row.nll;
				tokens++;
			}
	}
	for (int slice = 0; slice < 3; slice += 2) {
		struct ppl_result got;
		struct ppl_options o = {.vocab = V,
					.ctx = 20,
					.stride = 20,
					.slice = slice,
					.threads = 2,
					.docs = d3,
					.ndocs = 3,
					.flags = scored};
		assert_int_equal(ppl_run(e, NULL, ids, N, &o, &got), 0);
		assert_int_equal(got.tokens, tokens);
		assert_int_equal(got.windows, 3);
		assert_close(got.nll, nll, 1e-7 * nll);
		/* against itself: every scored position's KL kept, all 0 */
		assert_int_equal(ppl_run(e, f, ids, N, &o, &got), 0);
		assert_int_equal(got.top1, tokens);
		for (size_t i = 0; i < got.tokens; i++)
			assert_true(got.kl_each[i] == 0.0);
		ppl_result_free(&got);
	}
	/* documents that are not 2 to ctx tokens of the ids, in order */
	struct ppl_result r;
	const size_t longer[3] = {0, 25, 50}, one[3] = {0, 1, 50}, past[2] = {0, 51};
	struct ppl_options o = {
		.vocab = V, .ctx = 20, .stride = 20, .docs = longer, .ndocs = 2, .flags = scored};
	assert_int_equal(ppl_run(e, NULL, ids, N, &o, &r), -1);
	assert_non_null(strstr(err_msg(), "not 2 to 20 tokens"));
	o.docs = one;
	assert_int_equal(ppl_run(e, NULL, ids, N, &o, &r), -1);
	o.docs = past, o.ndocs = 1, o.ctx = 60;
	assert_int_equal(ppl_run(e, NULL, ids, N, &o, &r), -1);
	free(lg);
	eng_free(e);
	eng_free(f);
}

static void test_run_errors(void **state)
{
	(void)state;
	struct eng *e = engine(16);
	int32_t ids[40] = {1, 2, 3, 4};
	struct ppl_result r;
	struct ppl_options o = {.vocab = V, .ctx = 16, .stride = 17};
	assert_int_equal(ppl_run(e, NULL, ids, 40, &o, &r), -1);
	assert_non_null(strstr(err_msg(), "stride 17"));
	o.stride = 0;
	assert_int_equal(ppl_run(e, NULL, ids, 40, &o, &r), -1);
	o = (struct ppl_options){.vocab = V, .ctx = 1, .stride = 1};
	assert_int_equal(ppl_run(e, NULL, ids, 40, &o, &r), -1);
	o = (struct ppl_options){.vocab = V, .ctx = 16, .stride = 4};
	ids[9] = V;
	assert_int_equal(ppl_run(e, NULL, ids, 40, &o, &r), -1);
	assert_non_null(strstr(err_msg(), "token 9"));
	ids[9] = 0;
	/* a window longer than the engine's context: the forward's error */
	o.ctx = 40;
	assert_int_equal(ppl_run(e, NULL, ids, 40, &o, &r), -1);
	assert_non_null(strstr(err_msg(), "exceed the context of"));
	/* ... with a base too: what the run held is freed */
	assert_int_equal(ppl_run(e, e, ids, 40, &o, &r), -1);
	assert_null(r.kl_each);
	/* fewer than 2 tokens: nothing to score, not an error */
	o.ctx = 16;
	assert_int_equal(ppl_run(e, NULL, ids, 1, &o, &r), 0);
	assert_int_equal(r.tokens, 0);
	eng_free(e);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_count),
		cmocka_unit_test(test_score_row),
		cmocka_unit_test(test_score_row_random),
		cmocka_unit_test(test_quantile),
		cmocka_unit_test(test_run),
		cmocka_unit_test(test_docs),
		cmocka_unit_test(test_run_errors),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
