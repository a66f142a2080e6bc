/* test_sampler.c — the sampler's math: top-k/top-p/min-p sets against a brute-force
 * sort, penalties on the right ids, seeded chi-square tests of the draws against the
 * softmax, determinism, presets, generation_config.json and bad settings. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "src/base/err.h"
#include "src/session/sampler.h"

enum { BIG = 151936 };

static struct samp_params plain(void)
{
	struct samp_params p;
	samp_params_default(&p);
	p.temperature = 1, p.top_k = 0, p.top_p = 1, p.min_p = 0;
	return p;
}

/* Deterministic pseudo-random logits in [-8, 8) (an LCG; the test's own). */
static void fill_logits(float *l, int n, uint64_t seed)
{
	for (int i = 0; i < n; i++) {
		seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
		l[i] = (float)((double)(seed >> 11) * 0x1.0p-53 * 16 - 8);
	}
}

static const float *g_l;
static int by_logit_desc(const void *a, const void *b)
{
	int x = *(const int *)a, y = *(const int *)b;
	if (g_l[x] != g_l[y])
		return g_l[x] > g_l[y] ? -1 : 1;
	return x - y;
}

/* Reference: ids sorted by logit, probabilities softmax(l/T) over all of them. */
static int *ref_order(const float *l, int n, double T, double *p)
{
	int *o = malloc((size_t)n * sizeof *o);
	for (int i = 0; i < n; i++)
		o[i] = i;
	g_l = l;
	qsort(o, (size_t)n, sizeof *o, by_logit_desc);
	double z = 0;
	for (int i = 0; i < n; i++)
		z += p[i] = exp((l[o[i]] - l[o[0]]) / T);
	for (int i = 0; i < n; i++)
		p[i] /= z;
	return o;
}

static void check_set(struct samp *s, const float *l, int n, const int *o, const double *p,
		      int want)
{
	int32_t *ids = malloc((size_t)n * sizeof *ids);
	float *pr = malloc((size_t)n * sizeof *pr);
	int got = samp_candidates(s, l, n, NULL, ids, pr, n);
	assert_int_equal(got, want);
	double z = 0;
	for (int i = 0; i < want; i++)
		z += p[i];
	for (int i = 0; i < want; i++) {
		assert_int_equal(ids[i], o[i]);
		assert_true(fabs(pr[i] - p[i] / z) < 1e-5 * (p[i] / z) + 1e-9);
	}
	free(ids);
	free(pr);
}

static void test_top_p_small(void **state)
{
	(void)state;
	/* probabilities 0.5 0.2 0.15 0.1 0.05, shuffled over the ids */
	float l[5] = {logf(0.1f), logf(0.5f), logf(0.05f), logf(0.2f), logf(0.15f)};
	int o[5] = {1, 3, 4, 0, 2};
	double p[5] = {0.5, 0.2, 0.15, 0.1, 0.05};
	struct samp_params q = plain();
	struct samp *s;
	double cases[][2] = {{0.45, 1}, {0.69, 2}, {0.71, 3}, {0.84, 3},
			     {0.86, 4}, {0.96, 5}, {0.0, 1}};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		q.top_p = cases[i][0];
		assert_non_null(s = samp_new(&q, 5));
		check_set(s, l, 5, o, p, (int)cases[i][1]);
		samp_free(s);
	}
	/* min-p: relative to the top probability 0.5 */
	q.top_p = 1, q.min_p = 0.35; /* keeps p >= 0.175: 0.5 and 0.2 */
	assert_non_null(s = samp_new(&q, 5));
	check_set(s, l, 5, o, p, 2);
	samp_free(s);
	q.min_p = 0.19; /* keeps p >= 0.095: four */
	q.top_p = 0.71; /* but top-p keeps three: the smaller set wins */
	assert_non_null(s = samp_new(&q, 5));
	check_set(s, l, 5, o, p, 3);
	samp_free(s);
}

/* Smallest prefix of the sorted p reaching top_p, cut again by min_p. */
static int ref_count(const double *p, int n, double top_p, double min_p)
{
	double cum = 0;
	int k = n;
	for (int i = 0; i < n; i++) {
		cum += p[i];
		if (cum >= top_p) {
			k = i + 1;
			break;
		}
	}
	int j = 1;
	while (j < k && p[j] >= min_p * p[0])
		j++;
	return j;
}

static void test_cuts_full_vocab(void **state)
{
	(void)state;
	float *l = malloc(BIG * sizeof *l);
	double *p = malloc(BIG * sizeof *p);
	fill_logits(l, BIG, 7);
	struct samp_params q = plain();
	double T[] = {1.0, 0.6, 2.0};
	double tp[][2] = {{0.9, 0}, {0.5, 0}, {0.999, 0}, {1, 0.05}, {0.95, 0.01}};
	for (int a = 0; a < 3; a++) {
		int *o = ref_order(l, BIG, T[a], p);
		for (int b = 0; b < 5; b++) {
			q.temperature = T[a], q.top_p = tp[b][0], q.min_p = tp[b][1];
			struct samp *s = samp_new(&q, BIG);
			assert_non_null(s);
			check_set(s, l, BIG, o, p, ref_count(p, BIG, q.top_p, q.min_p));
			samp_free(s);
		}
		free(o);
	}
	free(l);
	free(p);
}

/* The softmax at temperature T over the first k ids of the order o only (malloc'd). */
static double *softmax_first(const float *l, const int *o, int k, double T)
{
	double *pk = malloc((size_t)k * sizeof *pk), z = 0;
	for (int i = 0; i < k; i++)
		z += pk[i] = exp((l[o[i]] - l[o[0]]) / T);
	for (int i = 0; i < k; i++)
		pk[i] /= z;
	return pk;
}

static void test_top_k(void **state)
{
	(void)state;
	float *l = malloc(BIG * sizeof *l);
	double *p = malloc(BIG * sizeof *p);
	fill_logits(l, BIG, 11);
	int *o = ref_order(l, BIG, 1, p);
	struct samp_params q = plain();
	int ks[] = {1, 20, 40, 1000};
	for (int a = 0; a < 4; a++) {
		q.top_k = ks[a], q.temperature = 0.7;
		struct samp *s = samp_new(&q, BIG);
		double *pk = softmax_first(l, o, ks[a], 0.7);
		check_set(s, l, BIG, o, pk, ks[a]);
		/* top-p then applies inside the k */
		q.top_p = 0.5;
		samp_set_params(s, &q);
		check_set(s, l, BIG, o, pk, ref_count(pk, ks[a], 0.5, 0));
		q.top_p = 1;
		free(pk);
		samp_free(s);
	}
	free(o);
	/* Ties at the k-th value: the smaller ids are kept (the CUDA sampler's rule). */
	for (int i = 0; i < BIG; i++)
		l[i] = floorf(l[i] * 2) / 2;
	o = ref_order(l, BIG, 1, p);
	int tk[] = {2, 3, 20, 5000};
	for (int a = 0; a < 4; a++) {
		q.top_k = tk[a], q.temperature = 1;
		struct samp *s = samp_new(&q, BIG);
		double *pk = softmax_first(l, o, tk[a], 1);
		check_set(s, l, BIG, o, pk, tk[a]);
		free(pk);
		samp_free(s);
	}
	free(o);
	free(l);
	free(p);
}

static void test_penalties(void **state)
{
	(void)state;
	float l[6] = {3.0f, -1.0f, 0.5f, 2.0f, -2.0f, 1.0f};
	struct samp_params q = plain();
	q.repetition_penalty = 1.5, q.presence_penalty = 0.25, q.frequency_penalty = 0.125;
	struct samp *s = samp_new(&q, 6);
	/* ids 0 and 1 repeated (repetition and presence once, frequency per time), 99 and
	 * -3 out of range: ignored */
	int32_t recent[] = {0, 1, 0, 99, -3, 1};
	struct samp_history both = {recent, 6, recent, 6};
	double w[6];
	for (int i = 0; i < 6; i++)
		w[i] = l[i];
	w[0] = 3.0 / 1.5 - 0.25 - 2 * 0.125;
	w[1] = -1.0 * 1.5 - 0.25 - 2 * 0.125;
	double z = 0;
	for (int i = 0; i < 6; i++)
		z += exp(w[i]);
	int32_t ids[6];
	float pr[6];
	assert_int_equal(samp_candidates(s, l, 6, &both, ids, pr, 6), 6);
	for (int i = 0; i < 6; i++) {
		assert_int_equal(ids[i], i); /* no cut: id order */
		assert_true(fabs(pr[i] - exp(w[i]) / z) < 1e-6);
	}
	/* presence and frequency look at the answer alone, repetition at the recent
	 * tokens alone: a prompt's token (2) is only divided, an answer's (3) only
	 * lowered */
	int32_t prompt[] = {2}, answer[] = {3, 3, 3};
	struct samp_history apart = {prompt, 1, answer, 3};
	for (int i = 0; i < 6; i++)
		w[i] = l[i];
	w[2] = 0.5 / 1.5;
	w[3] = 2.0 - 0.25 - 3 * 0.125;
	z = 0;
	for (int i = 0; i < 6; i++)
		z += exp(w[i]);
	assert_int_equal(samp_candidates(s, l, 6, &apart, ids, pr, 6), 6);
	for (int i = 0; i < 6; i++)
		assert_true(fabs(pr[i] - exp(w[i]) / z) < 1e-6);
	/* the logits themselves are untouched, and greedy sees the penalties: id 3 wins */
	assert_true(l[0] == 3.0f);
	q.greedy = true;
	samp_set_params(s, &q);
	assert_int_equal(samp_next(s, l, 6, &both), 3);
	assert_int_equal(samp_next(s, l, 6, NULL), 0);
	samp_free(s);
}

/* samp_logprobs against a log-softmax in double of the penalised logits at the
 * temperature, and its top ids against a full sort; greedy reads temperature 1. */
static void test_logprobs(void **state)
{
	(void)state;
	enum { V = 5000, TOP = 20 };
	float *l = malloc(V * sizeof *l);
	double *w = malloc(V * sizeof *w), *ref = malloc(V * sizeof *ref);
	double *unused = malloc(V * sizeof *unused);
	float *pen = malloc(V * sizeof *pen);
	fill_logits(l, V, 77);
	l[4321] = l[18]; /* a tie: the lower id comes first */
	struct samp_params q = plain();
	q.temperature = 0.7, q.top_k = 40, q.repetition_penalty = 1.3, q.presence_penalty = 0.5;
	int32_t recent[] = {5, 17, 5, 999};
	struct samp *s = samp_new(&q, V);
	float lp;
	struct samp_logprob top[TOP];
	assert_int_equal(samp_logprobs(s, 0, &lp, top, TOP), -1); /* nothing drawn yet */
	for (int greedy = 0; greedy < 2; greedy++) {
		q.greedy = greedy;
		assert_int_equal(samp_set_params(s, &q), 0);
		struct samp_history h = {recent, 4, recent, 4};
		int32_t id = samp_next(s, l, V, &h);
		assert_true(id >= 0);
		double T = greedy ? 1 : q.temperature, m = -INFINITY, z = 0;
		for (int i = 0; i < V; i++)
			w[i] = l[i];
		for (int i = 0; i < 4; i++) { /* each distinct id once */
			int32_t r = recent[i];
			if (i == 2)
				continue;
			w[r] = w[r] > 0 ? w[r] / 1.3 : w[r] * 1.3;
			w[r] -= 0.5;
		}
		for (int i = 0; i < V; i++)
			m = fmax(m, w[i] / T);
		for (int i = 0; i < V; i++)
			z += exp(w[i] / T - m);
		for (int i = 0; i < V; i++)
			ref[i] = w[i] / T - m - log(z);
		for (int i = 0; i < V; i++)
			pen[i] = (float)w[i];
		int *order = ref_order(pen, V, 1, unused);
		assert_int_equal(samp_logprobs(s, id, &lp, top, TOP), 0);
		assert_true(fabs(lp - ref[id]) < 1e-5);
		for (int i = 0; i < TOP; i++) {
			assert_int_equal(top[i].id, order[i]);
			assert_true(fabs(top[i].logprob - ref[order[i]]) < 1e-5);
		}
		if (greedy)
			assert_int_equal(id, order[0]);
		free(order);
	}
	assert_int_equal(samp_logprobs(s, V, &lp, top, 1), -1);
	assert_int_equal(samp_logprobs(s, 0, &lp, top, V + 1), -1);
	assert_int_equal(samp_logprobs(s, 0, &lp, NULL, 0), 0);
	samp_free(s);
	free(l);
	free(w);
	free(ref);
	free(unused);
	free(pen);
}

/* Draws n tokens and returns the chi-square statistic against expected probs. */
static double chi_square(struct samp *s, const float *l, int v, const double *expect, int n)
{
	int *count = calloc((size_t)v, sizeof *count);
	for (int i = 0; i < n; i++) {
		int32_t id = samp_next(s, l, v, NULL);
		assert_true(id >= 0 && id < v);
		count[id]++;
	}
	double chi = 0;
	for (int i = 0; i < v; i++) {
		if (expect[i] == 0) {
			assert_int_equal(count[i], 0); /* a cut token is never drawn */
			continue;
		}
		double e = expect[i] * n;
		chi += (count[i] - e) * (count[i] - e) / e;
	}
	free(count);
	return chi;
}

static void test_chi_square(void **state)
{
	(void)state;
	enum { V = 10 };
	float l[V] = {1.2f, 0.3f, -0.5f, 2.0f, 0.0f, -1.0f, 1.5f, 0.8f, -0.2f, 0.4f};
	const char *sanitized = getenv("QWENCHAT_SANITIZED");
	int n = sanitized && *sanitized == '1' ? 20000 : 100000;
	struct samp_params q = plain();
	q.temperature = 0.8, q.seed = 42;
	struct samp *s = samp_new(&q, V);
	double e[V], z = 0;
	for (int i = 0; i < V; i++)
		z += e[i] = exp(l[i] / 0.8);
	for (int i = 0; i < V; i++)
		e[i] /= z;
	/* 9 degrees of freedom: 27.88 is the 0.001 critical value */
	double chi = chi_square(s, l, V, e, n);
	assert_true(chi < 27.88);
	/* top-k 4 at T 0.8: expected = the softmax renormalised over ids 3 6 0 7 */
	q.top_k = 4;
	samp_set_params(s, &q);
	int keep[] = {3, 6, 0, 7};
	double ek[V] = {0}, zk = 0;
	for (int i = 0; i < 4; i++)
		zk += ek[keep[i]] = e[keep[i]];
	for (int i = 0; i < V; i++)
		ek[i] /= zk;
	chi = chi_square(s, l, V, ek, n);
	assert_true(chi < 16.27); /* 3 degrees of freedom, 0.001 */
	samp_free(s);
}

static void test_seed(void **state)
{
	(void)state;
	float *l = malloc(BIG * sizeof *l);
	fill_logits(l, BIG, 3);
	struct samp_params q;
	samp_params_default(&q);
	q.top_k = 0, q.top_p = 0.9, q.temperature = 1.5, q.seed = 1234;
	struct samp *a = samp_new(&q, BIG), *b = samp_new(&q, BIG);
	int32_t sa[50], sb[50];
	int differ = 0;
	for (int i = 0; i < 50; i++) {
		sa[i] = samp_next(a, l, BIG, NULL);
		sb[i] = samp_next(b, l, BIG, NULL);
		assert_int_equal(sa[i], sb[i]);
	}
	samp_reseed(a, 1234);
	for (int i = 0; i < 50; i++)
		assert_int_equal(samp_next(a, l, BIG, NULL), sa[i]);
	q.seed = 4321;
	samp_set_params(b, &q);
	struct samp *c = samp_new(&q, BIG); /* a new seed restarts: b draws as a fresh 4321 */
	for (int i = 0; i < 50; i++) {
		int32_t t = samp_next(b, l, BIG, NULL);
		assert_int_equal(t, samp_next(c, l, BIG, NULL));
		differ += t != sa[i];
	}
	assert_true(differ > 25);
	samp_free(c);
	samp_free(a);
	samp_free(b);
	free(l);
}

/* samp_peek_uniform is the draw samp_next makes: the id it picks is the candidate
 * where the running sum of the probabilities first exceeds the peeked number. */
static void test_peek_uniform(void **state)
{
	(void)state;
	float *l = malloc(BIG * sizeof *l);
	fill_logits(l, BIG, 5);
	struct samp_params q;
	samp_params_default(&q);
	q.top_k = 40, q.top_p = 0.9, q.temperature = 1.3, q.seed = 99;
	struct samp *a = samp_new(&q, BIG), *b = samp_new(&q, BIG);
	int32_t ids[40];
	float probs[40];
	for (int i = 0; i < 30; i++) {
		double u = samp_peek_uniform(a);
		assert_true(u >= 0 && u < 1);
		assert_true(samp_peek_uniform(a) == u); /* peeking draws nothing */
		int n = samp_candidates(a, l, BIG, NULL, ids, probs, 40);
		assert_true(n > 1 && n <= 40);
		double cum = 0;
		int want = ids[n - 1];
		for (int j = 0; j < n; j++) {
			cum += probs[j];
			if (u < cum) {
				want = ids[j];
				break;
			}
		}
		assert_int_equal(samp_next(a, l, BIG, NULL), want);
		/* taking the draw by hand keeps b's sequence in step with a's */
		samp_take_uniform(b);
	}
	for (int i = 0; i < 20; i++)
		assert_int_equal(samp_next(a, l, BIG, NULL), samp_next(b, l, BIG, NULL));
	samp_free(a);
	samp_free(b);
	free(l);
}

static void test_params(void **state)
{
	(void)state;
	struct samp_params p;
	samp_params_default(&p);
	assert_int_equal(samp_params_check(&p), 0);
	assert_true(p.temperature == 0.6 && p.top_p == 0.95 && p.top_k == 20 && p.min_p == 0);
	samp_params_preset(&p, false, 0);
	assert_true(p.temperature == 0.7 && p.top_p == 0.8 && p.top_k == 20 && p.min_p == 0);
	/* the user's choices survive a mode change */
	p.temperature = 0.1, p.top_p = 0.5;
	samp_params_preset(&p, true, SAMP_SET_TEMP | SAMP_SET_TOP_P);
	assert_true(p.temperature == 0.1 && p.top_p == 0.5);
	struct samp_params user = {.top_k = 7, .seed = 9, .temperature = 5};
	samp_params_override(&p, &user, SAMP_SET_TOP_K | SAMP_SET_SEED);
	assert_true(p.top_k == 7 && p.seed == 9 && p.temperature == 0.1);

	struct samp_params bad = p;
	bad.temperature = NAN;
	assert_int_equal(samp_params_check(&bad), -1);
	assert_non_null(strstr(err_msg(), "temperature"));
	assert_null(samp_new(&bad, 10));
	bad = p, bad.temperature = -1;
	assert_int_equal(samp_params_check(&bad), -1);
	bad = p, bad.top_p = 1.5;
	assert_int_equal(samp_params_check(&bad), -1);
	bad = p, bad.min_p = -0.1;
	assert_int_equal(samp_params_check(&bad), -1);
	bad = p, bad.top_k = -1;
	assert_int_equal(samp_params_check(&bad), -1);
	bad = p, bad.repetition_penalty = 0;
	assert_int_equal(samp_params_check(&bad), -1);
	bad = p, bad.presence_penalty = INFINITY;
	assert_int_equal(samp_params_check(&bad), -1);
	/* found by fuzz_genconfig: a denormal penalty overflowed the penalised logit */
	bad = p, bad.repetition_penalty = 2e-44;
	assert_int_equal(samp_params_check(&bad), -1);
	bad = p, bad.presence_penalty = -1e30;
	assert_int_equal(samp_params_check(&bad), -1);

	/* a tiny temperature is greedy in effect, never NaN */
	struct samp_params tiny = p;
	tiny.temperature = 1e-300, tiny.top_k = 0, tiny.top_p = 0.9;
	struct samp *ts = samp_new(&tiny, 4);
	float tl[4] = {0.5f, 2.0f, 1.0f, 1.9f};
	assert_int_equal(samp_next(ts, tl, 4, NULL), 1);
	samp_free(ts);

	/* greedy, and temperature 0, break a tie for the largest logit as torch.argmax (so
	 * transformers' greedy search) does: the first index */
	struct samp_params g = p;
	g.greedy = true;
	float tie[5] = {1.0f, 3.0f, -2.0f, 3.0f, 3.0f};
	struct samp *gs = samp_new(&g, 5);
	assert_int_equal(samp_next(gs, tie, 5, NULL), 1);
	g.greedy = false, g.temperature = 0;
	assert_int_equal(samp_set_params(gs, &g), 0);
	assert_int_equal(samp_next(gs, tie, 5, NULL), 1);
	samp_free(gs);

	/* wrong row length and NaN logits are errors, not crashes */
	struct samp *s = samp_new(&p, 4);
	float l[4] = {0, 1, NAN, 2};
	assert_int_equal(samp_next(s, l, 3, NULL), -1);
	assert_int_equal(samp_next(s, l, 4, NULL), -1);
	assert_non_null(strstr(err_msg(), "logit 2"));
	samp_free(s);
}

static char *write_gc(const char *text)
{
	char *dir = strdup("/tmp/test_sampler.XXXXXX");
	assert_non_null(mkdtemp(dir));
	char path[256];
	snprintf(path, sizeof path, "%s/generation_config.json", dir);
	FILE *f = fopen(path, "w");
	fputs(text, f);
	fclose(f);
	return dir;
}

static void rm_gc(char *dir)
{
	char path[256];
	snprintf(path, sizeof path, "%s/generation_config.json", dir);
	unlink(path);
	rmdir(dir);
	free(dir);
}

static void test_generation_config(void **state)
{
	(void)state;
	struct samp_params p;
	int32_t eos[SAMP_MAX_EOS];
	int n_eos = 0;
	samp_params_default(&p);
	char *d = write_gc("{\"bos_token_id\": 151643, \"do_sample\": true, \"eos_token_id\": "
			   "[151645, 151643], \"temperature\": 0.9, \"top_k\": 30, \"top_p\": "
			   "0.7, \"min_p\": 0.02, \"repetition_penalty\": 1.1}");
	assert_int_equal(samp_load_generation_config(d, &p, eos, &n_eos), 0);
	assert_true(p.temperature == 0.9 && p.top_k == 30 && p.top_p == 0.7 && p.min_p == 0.02 &&
		    p.repetition_penalty == 1.1 && !p.greedy);
	assert_int_equal(n_eos, 2);
	assert_int_equal(eos[0], 151645);
	assert_int_equal(eos[1], 151643);
	rm_gc(d);

	d = write_gc("{\"do_sample\": false, \"eos_token_id\": 7}");
	assert_int_equal(samp_load_generation_config(d, &p, eos, &n_eos), 0);
	assert_true(p.greedy && n_eos == 1 && eos[0] == 7);
	rm_gc(d);
	/* a temperature asked for outranks do_sample false; --greedy with it stays greedy;
	   a plain override (recorded choices under today's) leaves greedy alone */
	struct samp_params user = p, q = p;
	user.temperature = 1.0;
	samp_params_apply(&q, &user, SAMP_SET_TEMP);
	assert_true(!q.greedy && q.temperature == 1.0);
	q = p;
	samp_params_override(&q, &user, SAMP_SET_TEMP);
	assert_true(q.greedy && q.temperature == 1.0);
	q = p;
	user.greedy = true;
	samp_params_apply(&q, &user, SAMP_SET_TEMP | SAMP_SET_GREEDY);
	assert_true(q.greedy);
	q = p;
	user.temperature = 0;
	samp_params_apply(&q, &user, SAMP_SET_TEMP);
	assert_true(q.greedy);
	/* a top_k beyond any vocabulary keeps every token (transformers clamps it) */
	d = write_gc("{\"top_k\": 2147483648, \"eos_token_id\": 7}");
	assert_int_equal(samp_load_generation_config(d, &p, eos, &n_eos), 0);
	assert_true(p.top_k >= 1 << 24);
	rm_gc(d);

	const char *bad[] = {"{\"temperature\": -1}",
			     "{\"top_k\": 1.5}",
			     "{\"top_p\": \"x\"}",
			     "{\"eos_token_id\": [1, -2]}",
			     "[1, 2]",
			     "{\"top_p\": 0.9,",
			     "{\"repetition_penalty\": 0}",
			     "{\"top_k\": 2, \"repetition_penalty\": 2e-44}"};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		struct samp_params before = p;
		d = write_gc(bad[i]);
		assert_int_equal(samp_load_generation_config(d, &p, eos, &n_eos), -1);
		assert_non_null(strstr(err_msg(), "generation_config.json"));
		assert_memory_equal(&before, &p, sizeof p); /* left alone on error */
		assert_int_equal(n_eos, 1);
		assert_int_equal(eos[0], 7);
		rm_gc(d);
	}
	/* absent file: nothing changes */
	struct samp_params before = p;
	assert_int_equal(samp_load_generation_config("/nonexistent-dir", &p, eos, &n_eos), 0);
	assert_memory_equal(&before, &p, sizeof p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_top_p_small), cmocka_unit_test(test_cuts_full_vocab),
		cmocka_unit_test(test_top_k),       cmocka_unit_test(test_penalties),
		cmocka_unit_test(test_logprobs),    cmocka_unit_test(test_chi_square),
		cmocka_unit_test(test_seed),        cmocka_unit_test(test_peek_uniform),
		cmocka_unit_test(test_params),      cmocka_unit_test(test_generation_config),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
