/* test_train.c — the training engine (engine/train.h) on small random models against
 * an independent float64 forward pass written here: the loss equals it, and every
 * tensor's gradient equals the float64 loss's central finite differences (sampled
 * elements of every tensor, tied and untied embeddings, grouped-query attention, a
 * row of 600 positions);
 * the bf16 path stays close; recomputing activations or only the attention
 * probabilities, and the thread count, change no bit; gradient scaling and clipping, and AdamW, follow the formulas of train.h;
 * documents packed in a row train as they would in rows of their own; a loss taken in
 * several chunks of rows gives what one chunk gives; LoRA's adapters get the gradients
 * of the float64 loss of the merged weights W + alpha / rank B A, the frozen weights
 * none, and AdamW leaves the frozen ones as they were. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "engine/train.h"

/* ---- a float64 Qwen3 over the trainer's parameters ------------------------------------ */

struct ref {
	const struct eng_config *c;
	double **w; /* per parameter, in eng_param order */
	int B, T;
};

static void rmsnorm(double *y, const double *x, const double *w, int n, double eps)
{
	double ss = 0;
	for (int i = 0; i < n; i++)
		ss += x[i] * x[i];
	double r = 1.0 / sqrt(ss / n + eps);
	for (int i = 0; i < n; i++)
		y[i] = x[i] * r * w[i];
}

/* y (M) = W (M, K) x. */
static void matvec(double *y, const double *W, const double *x, int M, int K)
{
	for (int m = 0; m < M; m++) {
		double s = 0;
		for (int k = 0; k < K; k++)
			s += W[(size_t)m * K + k] * x[k];
		y[m] = s;
	}
}

static void rope(double *x, int pos, int hd, double theta)
{
	int h = hd / 2;
	for (int i = 0; i < h; i++) {
		double f = pos * pow(theta, -2.0 * i / hd), c = cos(f), s = sin(f);
		double a = x[i], b = x[i + h];
		x[i] = a * c - b * s;
		x[i + h] = b * c + a * s;
	}
}

/* The summed cross-entropy of one row of T tokens. */
static double ref_row(const struct ref *r, const int32_t *in, const int32_t *tgt)
{
	const struct eng_config *c = r->c;
	int T = r->T, D = c->hidden_size, F = c->intermediate_size, H = c->num_heads;
	int Hkv = c->num_kv_heads, hd = c->head_dim, q_dim = H * hd, kv = Hkv * hd, V = c->vocab_size;
	double eps = c->rms_norm_eps;
	double *x = calloc((size_t)T * D, sizeof *x), *xn = calloc(D, sizeof *xn);
	double *q = calloc((size_t)T * q_dim, sizeof *q), *k = calloc((size_t)T * kv, sizeof *k);
	double *v = calloc((size_t)T * kv, sizeof *v), *o = calloc(q_dim, sizeof *o);
	int wide = D > F ? D : F;
	wide = wide > V ? wide : V;
	double *tmp = calloc(wide, sizeof *tmp);
	double *g = calloc(F, sizeof *g), *u = calloc(F, sizeof *u), *p = calloc(T, sizeof *p);
	for (int t = 0; t < T; t++)
		memcpy(x + (size_t)t * D, r->w[0] + (size_t)in[t] * D, D * sizeof *x);
	for (int l = 0; l < c->num_layers; l++) {
		double **L = r->w + 1 + l * 11;
		for (int t = 0; t < T; t++) {
			rmsnorm(xn, x + (size_t)t * D, L[0], D, eps);
			matvec(q + (size_t)t * q_dim, L[1], xn, q_dim, D);
			matvec(k + (size_t)t * kv, L[2], xn, kv, D);
			matvec(v + (size_t)t * kv, L[3], xn, kv, D);
			for (int h = 0; h < H; h++) {
				double *qh = q + (size_t)t * q_dim + h * hd;
				rmsnorm(qh, qh, L[5], hd, eps);
				rope(qh, t, hd, c->rope_theta);
			}
			for (int h = 0; h < Hkv; h++) {
				double *kh = k + (size_t)t * kv + h * hd;
				rmsnorm(kh, kh, L[6], hd, eps);
				rope(kh, t, hd, c->rope_theta);
			}
		}
		for (int t = 0; t < T; t++) {
			for (int h = 0; h < H; h++) {
				int gk = h / (H / Hkv);
				double mx = -INFINITY, sum = 0;
				for (int j = 0; j <= t; j++) {
					double s = 0;
					for (int d = 0; d < hd; d++)
						s += q[(size_t)t * q_dim + h * hd + d] * k[(size_t)j * kv + gk * hd + d];
					p[j] = s / sqrt((double)hd);
					mx = p[j] > mx ? p[j] : mx;
				}
				for (int j = 0; j <= t; j++)
					sum += p[j] = exp(p[j] - mx);
				for (int d = 0; d < hd; d++) {
					double s = 0;
					for (int j = 0; j <= t; j++)
						s += p[j] / sum * v[(size_t)j * kv + gk * hd + d];
					o[h * hd + d] = s;
				}
			}
			matvec(tmp, L[4], o, D, q_dim);
			for (int i = 0; i < D; i++)
				x[(size_t)t * D + i] += tmp[i];
		}
		for (int t = 0; t < T; t++) {
			rmsnorm(xn, x + (size_t)t * D, L[7], D, eps);
			matvec(g, L[8], xn, F, D);
			matvec(u, L[9], xn, F, D);
			for (int i = 0; i < F; i++)
				g[i] = g[i] / (1 + exp(-g[i])) * u[i];
			matvec(tmp, L[10], g, D, F);
			for (int i = 0; i < D; i++)
				x[(size_t)t * D + i] += tmp[i];
		}
	}
	double loss = 0, *norm = r->w[1 + c->num_layers * 11];
	double *head = c->tie_word_embeddings ? r->w[0] : r->w[2 + c->num_layers * 11];
	for (int t = 0; t < T; t++) {
		if (tgt[t] < 0)
			continue;
		rmsnorm(xn, x + (size_t)t * D, norm, D, eps);
		matvec(tmp, head, xn, V, D);
		double mx = -INFINITY, sum = 0;
		for (int i = 0; i < V; i++)
			mx = tmp[i] > mx ? tmp[i] : mx;
		for (int i = 0; i < V; i++)
			sum += exp(tmp[i] - mx);
		loss += mx + log(sum) - tmp[tgt[t]];
	}
	free(x), free(xn), free(q), free(k), free(v), free(o), free(tmp), free(g), free(u), free(p);
	return loss;
}

static double ref_loss(const struct ref *r, const int32_t *in, const int32_t *tgt)
{
	double s = 0;
	for (int b = 0; b < r->B; b++)
		s += ref_row(r, in + (size_t)b * r->T, tgt + (size_t)b * r->T);
	return s;
}

/* ---- the checks ------------------------------------------------------------------------------ */

static struct eng_config tiny(bool tie)
{
	struct eng_config c = {0};
	c.vocab_size = 67, c.hidden_size = 32, c.intermediate_size = 40, c.num_layers = 2;
	c.num_heads = 4, c.num_kv_heads = 2, c.head_dim = 12, c.rms_norm_eps = 1e-6;
	c.rope_theta = 10000, c.max_position_embeddings = 64, c.tie_word_embeddings = tie;
	c.rope_factor = 1, c.dtype = ENG_F32, c.bos_token_id = -1, c.eos_token_id = -1;
	strcpy(c.rope_type, "default");
	return c;
}

/* What a trainer makes again in the backward instead of keeping (or-ed). */
enum { RC_NONE = 0, RC_PROBS = 1, RC_LAYERS = 2, RC_ALL = 3 };

static struct eng_trainer *make(const struct eng_config *c, int B, int T, bool exact, int recompute,
				int threads)
{
	struct eng_train_options o = {.backend = ENG_BACKEND_CPU,
				      .threads = threads,
				      .batch = B,
				      .ctx = T,
				      .exact = exact,
				      .recompute = (recompute & RC_LAYERS) != 0,
				      .recompute_probs = (recompute & RC_PROBS) != 0};
	struct eng_trainer *t = eng_trainer_new(c, &o, NULL);
	assert_non_null(t);
	eng_trainer_init_normal(t, 42, 0.2); /* large enough weights for a lively loss */
	return t;
}

static void batch(int32_t *in, int32_t *tgt, int n, int V)
{
	uint64_t s = 7;
	for (int i = 0; i < n; i++) {
		s = s * 6364136223846793005ull + 1442695040888963407ull;
		in[i] = (int32_t)((s >> 33) % V);
		tgt[i] = i % 5 == 3 ? -1 : (int32_t)((s >> 13) % V);
	}
}

static void gradients_match(bool tie, int B, int T, double tol)
{
	struct eng_config c = tiny(tie);
	int N = B * T;
	c.max_position_embeddings = T;
	struct eng_trainer *t = make(&c, B, T, true, RC_NONE, 2);
	int32_t *in = malloc(N * sizeof *in), *tgt = malloc(N * sizeof *tgt);
	assert_non_null(in), assert_non_null(tgt);
	batch(in, tgt, N, c.vocab_size);
	double loss = 0;
	int64_t count = 0;
	assert_int_equal(eng_trainer_zero_grad(t), 0);
	assert_int_equal(eng_trainer_micro(t, in, tgt, NULL, &loss, &count), 0);
	int np = eng_trainer_nparams(t);
	struct ref r = {&c, calloc(np, sizeof(double *)), B, T};
	for (int i = 0; i < np; i++) {
		struct eng_param *p = eng_trainer_param(t, i);
		r.w[i] = malloc(p->n * sizeof(double));
		for (int64_t k = 0; k < p->n; k++)
			r.w[i][k] = p->w[k];
	}
	double want = ref_loss(&r, in, tgt);
	if (fabs(loss - want) > 1e-5 * fabs(want))
		fail_msg("loss %.9g, float64 %.9g", loss, want);
	for (int i = 0; i < np; i++) {
		struct eng_param *p = eng_trainer_param(t, i);
		for (int s = 0; s < 5; s++) {
			int64_t k = (int64_t)((s * 2654435761u + i * 40503u) % (uint64_t)p->n);
			double w0 = r.w[i][k], h = 1e-5 * (fabs(w0) > 1 ? fabs(w0) : 1);
			r.w[i][k] = w0 + h;
			double up = ref_loss(&r, in, tgt);
			r.w[i][k] = w0 - h;
			double down = ref_loss(&r, in, tgt);
			r.w[i][k] = w0;
			double fd = (up - down) / (2 * h), g = p->g[k];
			if (fabs(g - fd) > tol * (fabs(fd) + 1e-2))
				fail_msg("%s[%lld]: gradient %.8g, float64 finite difference %.8g",
					 p->name, (long long)k, g, fd);
		}
	}
	for (int i = 0; i < np; i++)
		free(r.w[i]);
	free(r.w);
	free(in), free(tgt);
	eng_trainer_free(t);
}

static void test_gradients_tied(void **state)
{
	(void)state;
	gradients_match(true, 2, 7, 2e-4);
}

static void test_gradients_untied(void **state)
{
	(void)state;
	gradients_match(false, 2, 7, 2e-4);
}

/* A row long enough that attention takes its queries in several blocks, the last one
 * short. fp32 sums over 600 positions: the first layer's gradients stray up to 3e-4
 * from float64 (a block's seam gone wrong would be off by far more). */
static void test_gradients_long(void **state)
{
	(void)state;
	gradients_match(false, 1, 600, 1e-3);
}

/* The gradients of one micro-batch with positions pos (NULL: one document a row), all
 * parameters, as one array of *total floats. */
static float *grads_at(struct eng_trainer *t, const int32_t *in, const int32_t *tgt,
		       const int32_t *pos, double *loss, int64_t *count, size_t *total)
{
	*loss = 0, *count = 0, *total = 0;
	eng_trainer_zero_grad(t);
	assert_int_equal(eng_trainer_micro(t, in, tgt, pos, loss, count), 0);
	for (int i = 0; i < eng_trainer_nparams(t); i++)
		*total += eng_trainer_param(t, i)->n;
	float *g = malloc(*total * sizeof *g), *o = g;
	for (int i = 0; i < eng_trainer_nparams(t); i++) {
		struct eng_param *p = eng_trainer_param(t, i);
		memcpy(o, p->g, p->n * sizeof *o);
		o += p->n;
	}
	return g;
}

static float *all_grads(struct eng_trainer *t, const int32_t *in, const int32_t *tgt, double *loss)
{
	int64_t count;
	size_t total;
	return grads_at(t, in, tgt, NULL, loss, &count, &total);
}

static void same_bits(int B, int T)
{
	struct eng_config c = tiny(true);
	c.hidden_size = 64, c.intermediate_size = 96, c.vocab_size = 300;
	c.max_position_embeddings = T;
	int32_t *in = malloc(B * T * sizeof *in), *tgt = malloc(B * T * sizeof *tgt);
	assert_non_null(in), assert_non_null(tgt);
	batch(in, tgt, B * T, c.vocab_size);
	for (int exact = 0; exact < 2; exact++) {
		struct eng_trainer *a = make(&c, B, T, exact, RC_NONE, 2);
		double la;
		float *ga = all_grads(a, in, tgt, &la);
		size_t total = 0;
		for (int i = 0; i < eng_trainer_nparams(a); i++)
			total += eng_trainer_param(a, i)->n;
		/* the same bits with fewer threads and whatever is made again */
		const int rc[3] = {RC_PROBS, RC_LAYERS, RC_ALL}, threads[3] = {2, 1, 3};
		for (int i = 0; i < 3; i++) {
			struct eng_trainer *b = make(&c, B, T, exact, rc[i], threads[i]);
			double lb;
			float *gb = all_grads(b, in, tgt, &lb);
			assert_true(la == lb);
			assert_memory_equal(ga, gb, total * sizeof *ga);
			free(gb);
			eng_trainer_free(b);
		}
		if (!exact) { /* bf16 products: close to the exact loss */
			struct eng_trainer *e = make(&c, B, T, true, RC_NONE, 2);
			double le;
			float *ge = all_grads(e, in, tgt, &le);
			if (fabs(la - le) > 2e-2 * fabs(le))
				fail_msg("bf16 loss %.6g, exact %.6g", la, le);
			free(ge);
			eng_trainer_free(e);
		}
		free(ga);
		eng_trainer_free(a);
	}
	free(in), free(tgt);
}

static void test_same_bits(void **state)
{
	(void)state;
	same_bits(3, 20);
	same_bits(1, 520); /* several blocks of queries (test_gradients_long) */
}

static void test_clip_and_adamw(void **state)
{
	(void)state;
	struct eng_config c = tiny(false);
	struct eng_trainer *t = make(&c, 1, 6, true, RC_NONE, 2);
	int32_t in[6], tgt[6];
	batch(in, tgt, 6, c.vocab_size);
	double loss = 0, norm;
	int64_t count = 0;
	eng_trainer_zero_grad(t);
	eng_trainer_micro(t, in, tgt, NULL, &loss, &count);
	/* the reference: gradients scaled, their norm, clipped to a tenth of it */
	int np = eng_trainer_nparams(t);
	double sq = 0;
	float **g0 = calloc(np, sizeof *g0), **w0 = calloc(np, sizeof *w0);
	for (int i = 0; i < np; i++) {
		struct eng_param *p = eng_trainer_param(t, i);
		g0[i] = malloc(p->n * sizeof(float)), w0[i] = malloc(p->n * sizeof(float));
		for (int64_t k = 0; k < p->n; k++) {
			g0[i][k] = p->g[k] * (float)(1.0 / count);
			sq += (double)g0[i][k] * g0[i][k];
		}
		memcpy(w0[i], p->w, p->n * sizeof(float));
	}
	double want = sqrt(sq), clip = want / 10;
	assert_int_equal(eng_trainer_finish_grads(t, 1.0 / count, clip, &norm), 0);
	assert_true(fabs(norm - want) <= 1e-6 * want);
	struct eng_adamw h = {1e-2, 0.9, 0.95, 1e-8, 0.1};
	/* two steps: the second sees moments from the first */
	for (int step = 1; step <= 2; step++) {
		double coef = clip / (want + 1e-6);
		assert_int_equal(eng_trainer_adamw(t, &h, step), 0);
		for (int i = 0; i < np; i++) {
			struct eng_param *p = eng_trainer_param(t, i);
			for (int64_t k = 0; k < p->n; k += 7) {
				/* the moments of `step` steps of the same gradient g */
				double g = g0[i][k] * coef, m = 0, v = 0, w = w0[i][k];
				for (int s = 1; s <= step; s++) {
					if (p->decay)
						w -= h.lr * h.weight_decay * w;
					m = h.beta1 * m + (1 - h.beta1) * g;
					v = h.beta2 * v + (1 - h.beta2) * g * g;
					double mh = m / (1 - pow(h.beta1, s)), vh = v / (1 - pow(h.beta2, s));
					w -= h.lr * mh / (sqrt(vh) + h.eps);
				}
				if (fabs(p->w[k] - w) > 1e-6 + 1e-5 * fabs(w))
					fail_msg("%s[%lld] after %d steps: %.9g, reference %.9g",
						 p->name, (long long)k, step, p->w[k], w);
			}
		}
	}
	for (int i = 0; i < np; i++)
		free(g0[i]), free(w0[i]);
	free(g0), free(w0);
	eng_trainer_free(t);
}

/* Clipping as train.h says, on gradients scaled to a norm of 1e-4 (where the 1e-6 of
 * clip / (norm + 1e-6) is 1%): a norm under the limit leaves every gradient as the
 * scaling made it; one over it scales every gradient by clip / (norm + 1e-6), and the
 * norm returned is the one before clipping. */
static void test_clip_rule(void **state)
{
	(void)state;
	struct eng_config c = tiny(false);
	struct eng_trainer *t = make(&c, 1, 6, true, RC_NONE, 2);
	int32_t in[6], tgt[6];
	batch(in, tgt, 6, c.vocab_size);
	double loss, raw = 0;
	int64_t count;
	size_t total;
	float *g = grads_at(t, in, tgt, NULL, &loss, &count, &total);
	for (size_t k = 0; k < total; k++)
		raw += (double)g[k] * g[k];
	double scale = 1e-4 / sqrt(raw), want = 0, got[2];
	for (size_t k = 0; k < total; k++) {
		g[k] *= (float)scale;
		want += (double)g[k] * g[k];
	}
	want = sqrt(want);
	for (int over = 0; over < 2; over++) {
		double clip = over ? want / 2 : want * 2, norm = 0;
		double coef = over ? clip / (want + 1e-6) : 1;
		double l;
		int64_t n;
		free(grads_at(t, in, tgt, NULL, &l, &n, &total));
		assert_int_equal(eng_trainer_finish_grads(t, scale, clip, &norm), 0);
		got[over] = norm;
		if (fabs(norm - want) > 1e-6 * want)
			fail_msg("clip %.3g: norm %.9g, before clipping %.9g", clip, norm, want);
		for (size_t k = 0, i = 0; i < (size_t)eng_trainer_nparams(t); i++) {
			struct eng_param *p = eng_trainer_param(t, (int)i);
			for (int64_t j = 0; j < p->n; j++, k++)
				if (fabs(p->g[j] - g[k] * coef) > 1e-6 * fabs(g[k] * coef) + 1e-30)
					fail_msg("clip %.3g (norm %.3g): %s[%lld] %.9g, want %.9g",
						 clip, want, p->name, (long long)j, p->g[j],
						 g[k] * coef);
		}
	}
	assert_true(got[0] == got[1]);
	free(g);
	eng_trainer_free(t);
}

/* Documents packed in one row (positions restarting at each) give the loss and the
 * gradients of the same documents in rows of their own, padded; the trainer checks
 * the positions it is given. */
static void test_packed_rows(void **state)
{
	(void)state;
	struct eng_config c = tiny(false);
	enum { T = 24, NDOC = 3 };
	static const int len[NDOC] = {7, 10, 4}; /* and 3 positions of padding */
	int32_t in[T], tgt[T], pos[T], rin[NDOC * T], rtgt[NDOC * T];
	batch(in, tgt, T, c.vocab_size);
	for (int i = 0; i < NDOC * T; i++)
		rin[i] = 0, rtgt[i] = -1;
	int off = 0;
	for (int d = 0; d < NDOC; d++) {
		for (int i = 0; i < len[d]; i++) {
			pos[off + i] = i;
			rin[d * T + i] = in[off + i], rtgt[d * T + i] = tgt[off + i];
		}
		off += len[d];
	}
	for (int i = off; i < T; i++) /* the padding, its own document, never scored */
		pos[i] = i - off, tgt[i] = -1;
	for (int exact = 1; exact >= 0; exact--) {
		struct eng_trainer *packed = make(&c, 1, T, exact, RC_NONE, 2);
		struct eng_trainer *rows = make(&c, NDOC, T, exact, RC_NONE, 2);
		struct eng_trainer *again = make(&c, 1, T, exact, RC_ALL, 1);
		double lp, lr, la;
		int64_t np_, nr, na;
		size_t total;
		float *gp = grads_at(packed, in, tgt, pos, &lp, &np_, &total);
		float *gr = grads_at(rows, rin, rtgt, NULL, &lr, &nr, &total);
		float *ga = grads_at(again, in, tgt, pos, &la, &na, &total);
		assert_int_equal(np_, nr);
		if (fabs(lp - lr) > (exact ? 1e-6 : 2e-3) * fabs(lr))
			fail_msg("packed loss %.9g, one row a document %.9g", lp, lr);
		double mx = 0;
		for (size_t k = 0; k < total; k++)
			mx = fabs(gr[k]) > mx ? fabs(gr[k]) : mx;
		for (size_t k = 0; k < total; k++)
			if (fabs(gp[k] - gr[k]) > (exact ? 1e-5 : 2e-2) * mx)
				fail_msg("gradient %zu: packed %.8g, one row a document %.8g (max %.3g)", k,
					 gp[k], gr[k], mx);
		/* recomputing and one thread change no bit, packed too */
		assert_true(la == lp);
		assert_memory_equal(ga, gp, total * sizeof *ga);
		free(gp), free(gr), free(ga);
		eng_trainer_free(packed), eng_trainer_free(rows), eng_trainer_free(again);
	}
	struct eng_trainer *t = make(&c, 1, T, true, RC_NONE, 2);
	/* the model FLOPs count the keys each query sees: fewer in a packed row */
	double keys = 0, q = (double)c.num_heads * c.head_dim;
	for (int i = 0; i < T; i++)
		keys += pos[i] + 0.5;
	double fewer = 3.0 * c.num_layers * 4.0 * q * ((double)T * T / 2 - keys);
	double f1 = eng_trainer_step_flops(t, NULL), fp = eng_trainer_step_flops(t, pos);
	assert_true(fewer > 0 && fabs((f1 - fp) - fewer) <= 1e-9 * f1);
	double loss = 0;
	int64_t count = 0;
	pos[0] = 1; /* a row must start a document */
	assert_int_equal(eng_trainer_micro(t, in, tgt, pos, &loss, &count), -1);
	pos[0] = 0, pos[5] = pos[4] + 2; /* and count up by one */
	assert_int_equal(eng_trainer_micro(t, in, tgt, pos, &loss, &count), -1);
	assert_int_equal(eng_trainer_eval(t, in, tgt, pos, &loss, &count), -1);
	eng_trainer_free(t);
}

/* A vocabulary so large that the loss takes the logits in chunks of rows (64M floats
 * at a time: 128 rows of 2^19 here), a micro-batch of 2 rows of 65 splitting its
 * second row between two chunks: its loss and gradients equal those of its rows one
 * at a time (65 rows, one chunk), accumulated. */
static void test_loss_chunks(void **state)
{
	(void)state;
	struct eng_config c = tiny(true);
	c.vocab_size = 1 << 19, c.hidden_size = 4, c.num_layers = 1;
	enum { T = 65 };
	int32_t in[2 * T], tgt[2 * T];
	batch(in, tgt, 2 * T, c.vocab_size);
	struct eng_trainer *two = make(&c, 2, T, true, RC_NONE, 2);
	double l2;
	int64_t n2;
	size_t total;
	float *g2 = grads_at(two, in, tgt, NULL, &l2, &n2, &total);
	eng_trainer_free(two);
	struct eng_trainer *one = make(&c, 1, T, true, RC_NONE, 2);
	double l1 = 0;
	int64_t n1 = 0;
	eng_trainer_zero_grad(one);
	for (int b = 0; b < 2; b++)
		assert_int_equal(eng_trainer_micro(one, in + b * T, tgt + b * T, NULL, &l1, &n1), 0);
	assert_int_equal(n1, n2);
	if (fabs(l1 - l2) > 1e-6 * fabs(l1))
		fail_msg("loss in two chunks %.9g, a row at a time %.9g", l2, l1);
	double mx = 0;
	for (size_t k = 0, i = 0; i < (size_t)eng_trainer_nparams(one); i++) {
		struct eng_param *p = eng_trainer_param(one, (int)i);
		for (int64_t j = 0; j < p->n; j++, k++)
			mx = fabs(p->g[j]) > mx ? fabs(p->g[j]) : mx;
	}
	for (size_t k = 0, i = 0; i < (size_t)eng_trainer_nparams(one); i++) {
		struct eng_param *p = eng_trainer_param(one, (int)i);
		for (int64_t j = 0; j < p->n; j++, k++)
			if (fabs(g2[k] - p->g[j]) > 1e-5 * mx)
				fail_msg("%s[%lld]: in two chunks %.8g, a row at a time %.8g (max %.3g)",
					 p->name, (long long)j, g2[k], p->g[j], mx);
	}
	free(g2);
	eng_trainer_free(one);
}

/* The initial weights: each tensor the values of its own SplitMix64 stream, drawn in
 * order (Box-Muller, std 0.2 here), however many threads draw them in pieces; an
 * embedding of 2M values spans several pieces. */
static uint64_t splitmix(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static void test_init(void **state)
{
	(void)state;
	struct eng_config c = tiny(true);
	c.vocab_size = 8192, c.hidden_size = 256, c.num_layers = 1;
	struct eng_trainer *a = make(&c, 1, 8, true, RC_NONE, 1),
			   *b = make(&c, 1, 8, true, RC_NONE, 3);
	struct eng_param *e = eng_trainer_param(a, 0);
	uint64_t s = 42 ^ 0x5851f42d4c957f2dull; /* tensor 0's stream */
	for (int64_t k = 0; k < e->n; k++) {
		double u1 = ((splitmix(&s) >> 11) + 0.5) / 9007199254740992.0;
		double u2 = (splitmix(&s) >> 11) / 9007199254740992.0;
		float want = (float)(0.2 * (sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2)));
		if (e->w[k] != want)
			fail_msg("embedding value %lld: %.9g, its stream gives %.9g", (long long)k,
				 e->w[k], want);
	}
	for (int i = 0; i < eng_trainer_nparams(a); i++) {
		struct eng_param *p = eng_trainer_param(a, i), *q = eng_trainer_param(b, i);
		assert_memory_equal(p->w, q->w, (size_t)p->n * sizeof *p->w);
	}
	eng_trainer_free(a);
	eng_trainer_free(b);
}

/* ---- LoRA --------------------------------------------------------------------------- */

/* r->w[i] of every matrix an adapter changes: W + scale B A, in double. */
static void merge(struct ref *r, struct eng_trainer *t, double scale)
{
	for (int i = 0; i < eng_trainer_nparams(t); i++) {
		struct eng_param *A = eng_trainer_param(t, i), *B = A + 1;
		if (A->adapts < 0 || A->lora_b)
			continue;
		struct eng_param *W = eng_trainer_param(t, A->adapts);
		int64_t out = W->shape[0], in = W->shape[1], R = A->shape[0];
		for (int64_t o = 0; o < out; o++)
			for (int64_t k = 0; k < in; k++) {
				double d = 0;
				for (int64_t j = 0; j < R; j++)
					d += (double)B->w[o * R + j] * A->w[j * in + k];
				r->w[A->adapts][o * in + k] = W->w[o * in + k] + scale * d;
			}
	}
}

static void test_lora(void **state)
{
	(void)state;
	struct eng_config c = tiny(false);
	int B = 2, T = 7, N = B * T, R = 3;
	double alpha = 5;
	c.max_position_embeddings = T;
	struct eng_train_options o = {.backend = ENG_BACKEND_CPU,
				      .threads = 2,
				      .batch = B,
				      .ctx = T,
				      .exact = true,
				      .lora_rank = R,
				      .lora_alpha = alpha,
				      .lora_targets = 1u << ENG_LORA_Q | 1u << ENG_LORA_O |
						      1u << ENG_LORA_GATE | 1u << ENG_LORA_DOWN};
	struct eng_trainer *full = make(&c, B, T, true, RC_NONE, 2);
	struct eng_trainer *t = eng_trainer_new(&c, &o, NULL);
	assert_non_null(t);
	int nbase = eng_trainer_nparams(full), np = eng_trainer_nparams(t);
	assert_int_equal(np, nbase + 2 * 4 * c.num_layers);
	for (int i = 0; i < nbase; i++) { /* the model's weights, then the adapters drawn */
		struct eng_param *p = eng_trainer_param(t, i);
		memcpy(p->w, eng_trainer_param(full, i)->w, p->n * sizeof *p->w);
		assert_true(p->frozen && !p->g && !p->m && !p->v);
	}
	eng_trainer_init_lora(t, 9);
	uint64_t s = 11;
	for (int i = nbase; i < np; i++) {
		struct eng_param *p = eng_trainer_param(t, i);
		double bound = 1 / sqrt((double)p->shape[1]);
		for (int64_t k = 0; k < p->n; k++) {
			if (!p->lora_b) { /* PEFT's kaiming_uniform(a = sqrt(5)) bound */
				assert_true(fabs(p->w[k]) <= bound);
				continue;
			}
			assert_true(p->w[k] ==
				    0); /* B starts at zero: a gradient for A needs one */
			s = s * 6364136223846793005ull + 1442695040888963407ull;
			p->w[k] = (float)(((s >> 40) / 16777216.0 - 0.5) * 0.6);
		}
	}
	int32_t in[14], tgt[14];
	batch(in, tgt, N, c.vocab_size);
	double loss = 0;
	int64_t count = 0;
	assert_int_equal(eng_trainer_zero_grad(t), 0);
	assert_int_equal(eng_trainer_micro(t, in, tgt, NULL, &loss, &count), 0);
	struct ref r = {&c, calloc(nbase, sizeof(double *)), B, T};
	for (int i = 0; i < nbase; i++) {
		struct eng_param *p = eng_trainer_param(t, i);
		r.w[i] = malloc(p->n * sizeof(double));
		for (int64_t k = 0; k < p->n; k++)
			r.w[i][k] = p->w[k];
	}
	merge(&r, t, alpha / R);
	double want = ref_loss(&r, in, tgt);
	if (fabs(loss - want) > 1e-5 * fabs(want))
		fail_msg("loss %.9g, float64 of the merged weights %.9g", loss, want);
	for (int i = nbase; i < np; i++) {
		struct eng_param *p = eng_trainer_param(t, i);
		for (int e = 0; e < 5; e++) {
			int64_t k = (int64_t)((e * 2654435761u + i * 40503u) % (uint64_t)p->n);
			float w0 = p->w[k];
			double h = 1e-3, ls[2];
			for (int d = 0; d < 2; d++) {
				p->w[k] = (float)(w0 + (d ? -h : h));
				merge(&r, t, alpha / R);
				ls[d] = ref_loss(&r, in, tgt);
			}
			p->w[k] = w0;
			double fd = (ls[0] - ls[1]) / ((double)(float)(w0 + h) - (float)(w0 - h));
			if (fabs(p->g[k] - fd) > 2e-3 * (fabs(fd) + 1e-2))
				fail_msg("%s[%lld]: gradient %.8g, float64 finite difference %.8g",
					 p->name, (long long)k, p->g[k], fd);
		}
	}
	/* a step moves the adapters alone; the merged rows are W + scale B A */
	struct eng_param *W = eng_trainer_param(t, 1 + 1); /* layer 0's q_proj */
	float *before = malloc(W->n * sizeof *before), *rows = malloc(W->n * sizeof *rows);
	memcpy(before, W->w, W->n * sizeof *before);
	double norm;
	struct eng_adamw h = {1e-2, 0.9, 0.95, 1e-8, 0.1};
	assert_int_equal(eng_trainer_finish_grads(t, 1.0 / count, 1.0, &norm), 0);
	assert_int_equal(eng_trainer_adamw(t, &h, 1), 0);
	assert_memory_equal(before, W->w, W->n * sizeof *before);
	merge(&r, t, alpha / R);
	eng_trainer_merged_rows(t, 2, 1, W->shape[0], rows);
	for (int64_t k = W->shape[1]; k < W->n; k++)
		assert_true(fabs(rows[k - W->shape[1]] - r.w[2][k]) <=
			    1e-6 * (fabs(r.w[2][k]) + 1));
	for (int i = 0; i < nbase; i++)
		free(r.w[i]);
	free(r.w), free(before), free(rows);
	eng_trainer_free(t);
	eng_trainer_free(full);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_gradients_tied), cmocka_unit_test(test_gradients_untied),
		cmocka_unit_test(test_gradients_long), cmocka_unit_test(test_same_bits),
		cmocka_unit_test(test_clip_and_adamw), cmocka_unit_test(test_clip_rule),
		cmocka_unit_test(test_packed_rows),    cmocka_unit_test(test_loss_chunks),
		cmocka_unit_test(test_init),           cmocka_unit_test(test_lora),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
