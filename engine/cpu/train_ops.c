/* train_ops.c — the element-wise steps of a training step and their backward, each
 * cut into blocks of TR_BLOCK tokens over the thread pool: RMSNorm, the per-head q/k
 * RMSNorm with RoPE, SwiGLU. A norm weight's gradient is summed per block into its own
 * row of s->dwpart and the rows are added in block order at the end, so the result is
 * the same whichever thread took which block. */
#include <math.h>
#include <stdatomic.h>
#include <string.h>

#include "engine/cpu/train_cpu.h"

/* ---- running a pass over blocks ---------------------------------------------------- */

struct pass {
	struct train_cpu *s;
	void (*fn)(struct pass *p, int block, int tid);
	int blocks;
	atomic_int next;
	/* the pass's operands */
	float *y, *dx, *du;
	float *rstd;       /* the forward writes it */
	const float *rstd_in; /* the backward reads it */
	const float *x, *w, *dy, *g, *u, *qw, *kw;
	struct tr_act *a;
	int n, D;
	bool add;
	size_t len;
};

static void pass_task(void *arg, int tid, int nthreads)
{
	(void)nthreads;
	struct pass *p = arg;
	int b;
	while ((b = cpu_claim(&p->next, p->blocks)) >= 0)
		p->fn(p, b, tid);
}

static void run(struct pass *p, int blocks)
{
	p->blocks = blocks;
	atomic_init(&p->next, 0);
	cpu_pool_run(p->s->pool, pass_task, p);
}

/* dw[i] += the blocks' partial sums, in block order. */
static void sum_parts(const float *part, int blocks, int width, float *dw)
{
	for (int i = 0; i < width; i++) {
		double acc = 0;
		for (int b = 0; b < blocks; b++)
			acc += part[(size_t)b * width + i];
		dw[i] += (float)acc;
	}
}

static int nblocks(int n)
{
	return (n + TR_BLOCK - 1) / TR_BLOCK;
}

/* ---- sums ------------------------------------------------------------------------------ */

/* As DOT_LANES interleaved partial sums, added pairwise at the end: one running sum
 * would make every addition wait for the one before it, and the norms' sums were then
 * slower than the rest of their passes. The order is fixed: the same bits every run. */
#define DOT_LANES 8

double tr_dot(const float *a, const float *w, const float *b, int n)
{
	double acc[DOT_LANES] = {0};
	int i = 0;
	for (; i + DOT_LANES <= n; i += DOT_LANES)
#pragma GCC unroll 8
		for (int j = 0; j < DOT_LANES; j++)
			acc[j] += (double)(w ? a[i + j] * w[i + j] : a[i + j]) * b[i + j];
	for (int j = 0; i < n; i++, j++)
		acc[j] += (double)(w ? a[i] * w[i] : a[i]) * b[i];
	for (int width = DOT_LANES / 2; width > 0; width /= 2)
		for (int j = 0; j < width; j++)
			acc[j] += acc[j + width];
	return acc[0];
}

/* ---- RMSNorm ------------------------------------------------------------------------ */

/* r = 1 / sqrt(mean(x^2) + eps): the sum of squares in double. */
static float inv_rms(const float *x, int D, float eps)
{
	return 1.0f / sqrtf((float)(tr_dot(x, NULL, x, D) / D) + eps);
}

static void rms_fwd_block(struct pass *p, int b, int tid)
{
	(void)tid;
	int D = p->D, t1 = (b + 1) * TR_BLOCK < p->n ? (b + 1) * TR_BLOCK : p->n;
	for (int t = b * TR_BLOCK; t < t1; t++) {
		const float *x = p->x + (size_t)t * D;
		float *y = p->y + (size_t)t * D, r = inv_rms(x, D, p->s->eps);
		p->rstd[t] = r;
		for (int i = 0; i < D; i++)
			y[i] = (x[i] * r) * p->w[i];
	}
}

void tr_rmsnorm_fwd(struct train_cpu *s, float *y, float *rstd, const float *x, const float *w,
		    int n, int D)
{
	struct pass p = {.s = s, .fn = rms_fwd_block, .y = y, .rstd = rstd, .x = x, .w = w, .n = n, .D = D};
	run(&p, nblocks(n));
}

/* y = x r w with r = (mean(x^2) + eps)^-1/2: dx = r g - r^3 / D x sum(g x), g = dy w;
 * dw = sum over tokens of dy x r. */
static void rms_bwd_block(struct pass *p, int b, int tid)
{
	(void)tid;
	int D = p->D, t1 = (b + 1) * TR_BLOCK < p->n ? (b + 1) * TR_BLOCK : p->n;
	float *part = p->s->dwpart + (size_t)b * D;
	memset(part, 0, (size_t)D * sizeof *part);
	for (int t = b * TR_BLOCK; t < t1; t++) {
		const float *x = p->x + (size_t)t * D, *dy = p->dy + (size_t)t * D;
		float *dx = p->dx + (size_t)t * D, r = p->rstd_in[t];
		float c = (float)(tr_dot(dy, p->w, x, D) * r * r * r / D);
		for (int i = 0; i < D; i++) {
			float d = r * (dy[i] * p->w[i]) - c * x[i];
			dx[i] = p->add ? dx[i] + d : d;
			part[i] += dy[i] * x[i] * r;
		}
	}
}

void tr_rmsnorm_bwd(struct train_cpu *s, float *dx, float *dw, const float *dy, const float *x,
		    const float *rstd, const float *w, int n, int D, bool add)
{
	struct pass p = {.s = s, .fn = rms_bwd_block, .dx = dx, .dy = dy, .x = x, .rstd_in = rstd,
			 .w = w, .n = n, .D = D, .add = add};
	run(&p, nblocks(n));
	if (dw)
		sum_parts(s->dwpart, nblocks(n), D, dw);
}

/* ---- q/k RMSNorm per head, then RoPE ---------------------------------------------------- */

/* out = rope(in r w) of one head at one position, r returned. */
static float head_fwd(float *out, const float *in, const float *w, const float *cs,
		      const float *sn, int hd, float eps)
{
	float r = inv_rms(in, hd, eps);
	int h = hd / 2;
	for (int i = 0; i < h; i++) {
		float a = (in[i] * r) * w[i], b = (in[i + h] * r) * w[i + h];
		out[i] = a * cs[i] - b * sn[i];
		out[i + h] = b * cs[i] + a * sn[i];
	}
	return r;
}

/* d (the gradient of out) into the gradient of in, in place; part += w's. */
static void head_bwd(float *d, const float *in, float r, const float *w, const float *cs,
		     const float *sn, int hd, float *part)
{
	int h = hd / 2;
	for (int i = 0; i < h; i++) { /* the rotation's transpose: d of the normed head */
		float a = d[i], b = d[i + h];
		d[i] = a * cs[i] + b * sn[i];
		d[i + h] = b * cs[i] - a * sn[i];
	}
	float c = (float)(tr_dot(d, w, in, hd) * r * r * r / hd);
	for (int i = 0; i < hd; i++) {
		part[i] += d[i] * in[i] * r;
		d[i] = r * (d[i] * w[i]) - c * in[i];
	}
}

static void qk_fwd_block(struct pass *p, int b, int tid)
{
	(void)tid;
	struct train_cpu *s = p->s;
	struct tr_act *a = p->a;
	int hd = s->hd, t1 = (b + 1) * TR_BLOCK < s->N ? (b + 1) * TR_BLOCK : s->N;
	for (int t = b * TR_BLOCK; t < t1; t++) {
		const float *cs = s->cos + (size_t)s->pos[t] * (hd / 2);
		const float *sn = s->sin + (size_t)s->pos[t] * (hd / 2);
		for (int h = 0; h < s->H; h++) {
			size_t o = (size_t)t * s->q_dim + (size_t)h * hd;
			a->rstd_q[(size_t)t * s->H + h] =
				head_fwd(a->q + o, a->q_raw + o, p->qw, cs, sn, hd, s->eps);
		}
		for (int h = 0; h < s->Hkv; h++) {
			size_t o = (size_t)t * s->kv_dim + (size_t)h * hd;
			a->rstd_k[(size_t)t * s->Hkv + h] =
				head_fwd(a->k + o, a->k_raw + o, p->kw, cs, sn, hd, s->eps);
		}
	}
}

void tr_qk_fwd(struct train_cpu *s, struct tr_act *a, const float *qw, const float *kw)
{
	struct pass p = {.s = s, .fn = qk_fwd_block, .a = a, .qw = qw, .kw = kw};
	run(&p, nblocks(s->N));
}

static void qk_bwd_block(struct pass *p, int b, int tid)
{
	(void)tid;
	struct train_cpu *s = p->s;
	struct tr_act *a = p->a;
	int hd = s->hd, t1 = (b + 1) * TR_BLOCK < s->N ? (b + 1) * TR_BLOCK : s->N;
	float *qpart = s->dwpart + (size_t)b * 2 * hd, *kpart = qpart + hd;
	memset(qpart, 0, 2 * (size_t)hd * sizeof *qpart);
	for (int t = b * TR_BLOCK; t < t1; t++) {
		const float *cs = s->cos + (size_t)s->pos[t] * (hd / 2);
		const float *sn = s->sin + (size_t)s->pos[t] * (hd / 2);
		for (int h = 0; h < s->H; h++) {
			size_t o = (size_t)t * s->q_dim + (size_t)h * hd;
			head_bwd(s->dq + o, a->q_raw + o, a->rstd_q[(size_t)t * s->H + h], p->qw, cs,
				 sn, hd, qpart);
		}
		for (int h = 0; h < s->Hkv; h++) {
			size_t o = (size_t)t * s->kv_dim + (size_t)h * hd;
			head_bwd(s->dk + o, a->k_raw + o, a->rstd_k[(size_t)t * s->Hkv + h], p->kw,
				 cs, sn, hd, kpart);
		}
	}
}

void tr_qk_bwd(struct train_cpu *s, struct tr_act *a, const float *qw, const float *kw,
	       float *dqw, float *dkw)
{
	struct pass p = {.s = s, .fn = qk_bwd_block, .a = a, .qw = qw, .kw = kw};
	int blocks = nblocks(s->N), hd = s->hd;
	run(&p, blocks);
	for (int i = 0; dqw && i < hd; i++) {
		double q = 0, k = 0;
		for (int b = 0; b < blocks; b++) {
			q += s->dwpart[(size_t)b * 2 * hd + i];
			k += s->dwpart[(size_t)b * 2 * hd + hd + i];
		}
		dqw[i] += (float)q;
		dkw[i] += (float)k;
	}
}

/* ---- SwiGLU --------------------------------------------------------------------------- */

#define EW_BLOCK 4096 /* elements of a block of the element-wise passes */

static void swiglu_fwd_block(struct pass *p, int b, int tid)
{
	(void)tid;
	size_t i0 = (size_t)b * EW_BLOCK, i1 = i0 + EW_BLOCK < p->len ? i0 + EW_BLOCK : p->len;
	memcpy(p->y + i0, p->g + i0, (i1 - i0) * sizeof(float));
	p->s->k->swiglu(p->y + i0, p->u + i0, (int)(i1 - i0));
}

void tr_swiglu_fwd(struct train_cpu *s, float *h, const float *g, const float *u, int n)
{
	struct pass p = {.s = s, .fn = swiglu_fwd_block, .y = h, .g = g, .u = u, .len = (size_t)n};
	run(&p, (int)(((size_t)n + EW_BLOCK - 1) / EW_BLOCK));
}

/* h = g sigma(g) u: dg = dh u sigma (1 + g (1 - sigma)), du = dh g sigma. */
static void swiglu_bwd_block(struct pass *p, int b, int tid)
{
	(void)tid;
	size_t i0 = (size_t)b * EW_BLOCK, i1 = i0 + EW_BLOCK < p->len ? i0 + EW_BLOCK : p->len;
	p->s->k->swiglu_back(p->dx + i0, p->du + i0, p->g + i0, p->u + i0, (int)(i1 - i0));
}

void tr_swiglu_bwd(struct train_cpu *s, float *dh, float *du, const float *g, const float *u,
		   int n)
{
	struct pass p = {.s = s, .fn = swiglu_bwd_block, .dx = dh, .du = du, .g = g, .u = u,
			 .len = (size_t)n};
	run(&p, (int)(((size_t)n + EW_BLOCK - 1) / EW_BLOCK));
}

static void copy_block(struct pass *p, int b, int tid)
{
	(void)tid;
	size_t i0 = (size_t)b * EW_BLOCK * 16, n = p->len - i0 < (size_t)EW_BLOCK * 16 ? p->len - i0
											: (size_t)EW_BLOCK * 16;
	memcpy(p->y + i0, p->x + i0, n * sizeof(float));
}

void tr_copy(struct train_cpu *s, float *dst, const float *src, size_t n)
{
	struct pass p = {.s = s, .fn = copy_block, .y = dst, .x = src, .len = n};
	run(&p, (int)((n + (size_t)EW_BLOCK * 16 - 1) / ((size_t)EW_BLOCK * 16)));
}
