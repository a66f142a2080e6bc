/* train.cu — one layer of a training step on the device, forward and backward (the
 * CPU's engine/cpu/train_layer.c), with its products: on the exact path cuBLAS in fp32
 * (no TF32); otherwise the weights' products take bf16 copies of both operands (the
 * weights' copies made once per update) with fp32 sums, and attention's TF32 (or bf16
 * with TRC_BF16_ATTENTION). Attention keeps the softmax of every (row, head) as the CPU
 * does, and runs as batched products over pointer arrays made once per activation
 * slot; or, on the fast path when asked for (s->tiled), in tiles without the T x T
 * scores (train_attn.cu). */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "engine/cuda/train.cuh"

/* Whether attention's operands are the fp32 arrays themselves (s->attn_bf16: see
 * TRC_BF16_ATTENTION in train.cuh). */
static bool attn_fp32(const struct trc *s)
{
	return !s->attn_bf16;
}

/* ---- sizes (the same layout as the CPU's) --------------------------------------------------- */

size_t trc_act_floats(const struct eng_config *c, int B, int T)
{
	size_t N = (size_t)B * T, D = c->hidden_size, F = c->intermediate_size;
	size_t q = (size_t)c->num_heads * c->head_dim, kv = (size_t)c->num_kv_heads * c->head_dim;
	return N * (2 + 3 * D + 3 * q + 3 * kv + c->num_heads + c->num_kv_heads + 3 * F) +
	       (size_t)B * c->num_heads * T * T;
}

int trc_loss_chunk(const struct eng_config *c, int N)
{
	long ch = (256L << 20) / c->vocab_size; /* 1 GB of logits at most */
	if (ch < 16)
		ch = 16;
	return ch < N ? (int)ch : N;
}

/* Floats of everything but the parameters, and the bf16 scratch's elements. */
size_t trc_scratch_floats(const struct eng_config *c, const struct eng_train_options *o,
			     size_t *half)
{
	size_t N = (size_t)o->batch * o->ctx, D = c->hidden_size, F = c->intermediate_size, T = o->ctx;
	size_t q = (size_t)c->num_heads * c->head_dim, kv = (size_t)c->num_kv_heads * c->head_dim;
	size_t layers = o->recompute ? 1 : (size_t)c->num_layers, ch = trc_loss_chunk(c, (int)N);
	size_t wide = D > 2 * (size_t)c->head_dim ? D : 2 * (size_t)c->head_dim;
	size_t big = N * (F > q ? (F > D ? F : D) : (q > D ? q : D));
	if (ch * c->vocab_size > big)
		big = ch * c->vocab_size;
	*half = big;
	return (size_t)(c->num_layers + 1) * N * D + layers * trc_act_floats(c, o->batch, o->ctx) +
	       N * (D + 1) + N * (2 * D + 2 * F + 2 * q + 2 * kv) +
	       (size_t)o->batch * c->num_heads * T * T + CEIL_DIV(N, (size_t)TRC_BLOCK) * wide +
	       ch * c->vocab_size + T * (size_t)c->head_dim + 64 * 64;
}

int trc_plan(const struct eng_config *c, const struct eng_train_options *o,
		    struct eng_train_plan *p)
{
	size_t half, f = trc_scratch_floats(c, o, &half);
	p->activations = f * sizeof(float);
	p->scratch = 2 * half * sizeof(bf16) + (size_t)p->params * sizeof(bf16);
	p->recompute = o->recompute;
	p->device = true;
	return 0;
}

/* ---- products ------------------------------------------------------------------------------------ */

/* c (n, m) (+)= a . b, row-major, with a(i, p) = at ? a[p lda + i] : a[i lda + p] and
 * b(p, j) = bt ? b[j ldb + p] : b[p ldb + j] (gemm.h's convention): cuBLAS sees the
 * column-major c^T = b^T a^T. ah/bh: bf16 copies with the same layout, or NULL. */
int trc_mm(struct trc *s, float *c, int ldc, bool acc, const float *a, const bf16 *ah, int lda,
	      bool at, const float *b, const bf16 *bh, int ldb, bool bt, int n, int m, int k)
{
	const float one = 1.0f, zero = 0.0f;
	bool half = ah && bh && !s->exact;
	cublasComputeType_t ct = s->exact ? CUBLAS_COMPUTE_32F_PEDANTIC
			       : half     ? CUBLAS_COMPUTE_32F
					  : CUBLAS_COMPUTE_32F_FAST_TF32;
	cudaDataType_t dt = half ? CUDA_R_16BF : CUDA_R_32F;
	CUBLAS_CHECK(cublasGemmEx(s->blas, bt ? CUBLAS_OP_T : CUBLAS_OP_N, at ? CUBLAS_OP_T : CUBLAS_OP_N,
				  m, n, k, &one, half ? (const void *)bh : b, dt, ldb,
				  half ? (const void *)ah : a, dt, lda, acc ? &one : &zero, c,
				  CUDA_R_32F, ldc, ct, CUBLAS_GEMM_DEFAULT));
	return 0;
}

/* The same over `count` (row, head) pairs whose operands are in pointer arrays: a and
 * b in fp32 (TF32 on the fast path) or bf16 (unless attn_fp32), c in fp32. */
static int mm_batch(struct trc *s, void *const *c, int ldc, bool acc, const void *const *a, int lda,
		    bool at, const void *const *b, int ldb, bool bt, int n, int m, int k, int count)
{
	const float one = 1.0f, zero = 0.0f;
	cublasComputeType_t ct = s->exact       ? CUBLAS_COMPUTE_32F_PEDANTIC
				 : attn_fp32(s) ? CUBLAS_COMPUTE_32F_FAST_TF32
						: CUBLAS_COMPUTE_32F;
	cudaDataType_t dt = attn_fp32(s) ? CUDA_R_32F : CUDA_R_16BF;
	CUBLAS_CHECK(cublasGemmBatchedEx(s->blas, bt ? CUBLAS_OP_T : CUBLAS_OP_N,
					 at ? CUBLAS_OP_T : CUBLAS_OP_N, m, n, k, &one, b, dt, ldb,
					 a, dt, lda, acc ? &one : &zero, c, CUDA_R_32F, ldc, count,
					 ct, CUBLAS_GEMM_DEFAULT));
	return 0;
}

/* The bf16 copy of an activation into one of the two scratch buffers (fast path). */
const bf16 *trc_half(struct trc *s, bf16 *buf, const float *x, size_t n)
{
	if (s->exact)
		return NULL;
	return trc_to_bf16(buf, x, n, s->stream) ? NULL : buf;
}

/* y (N, M) (+)= x (N, K) . W^T; xh: x's bf16 copy (trc_half), made once for all the
 * products that read x. */
static int linear(struct trc *s, float *y, const float *x, const bf16 *xh, int pi, bool acc)
{
	const struct eng_param *W = &s->t->params[pi];
	int M = (int)W->shape[0], K = (int)W->shape[1];
	return trc_mm(s, y, M, acc, x, xh, K, false, s->w[pi], s->whp[pi], K, true, s->N, M, K);
}

/* dW += dy^T x; dx (+)= dy W. dy's bf16 copy is made here, into s->ha; xh as above. */
static int linear_back(struct trc *s, float *dx, bool acc, const float *dy, const float *x,
		       const bf16 *xh, int pi)
{
	const struct eng_param *W = &s->t->params[pi];
	int M = (int)W->shape[0], K = (int)W->shape[1];
	const bf16 *dyh = trc_half(s, s->ha, dy, (size_t)s->N * M);
	if (trc_mm(s, s->g[pi], K, true, dy, dyh, M, true, x, xh, K, false, M, K, s->N))
		return -1;
	return trc_mm(s, dx, K, acc, dy, dyh, M, false, s->w[pi], s->whp[pi], K, false, s->N, K, M);
}

/* ---- attention ------------------------------------------------------------------------------------ */

/* The pointer arrays of act slot a: for each (row b, head h) the operands of the forward
 * and backward products (PH_ROWS lists of B H), then per group head j the (b, kv head)
 * lists of dv and dk (PG_ROWS lists of B Hkv). With fp32 operands they point at the
 * activations, the scores becoming p in place and dp becoming ds in place. With bf16
 * ones (not attn_fp32) the operands are copies made just before each product, q's and
 * datt's in s->ha, k's and v's in s->hb; the scores (fp32) are in s->dp, free in the
 * forward, and p and then ds (bf16) in act->p. */
enum { PH_Q, PH_K, PH_S, PH_V, PH_ATT, PH_DATT, PH_DP, PH_DQ, PH_DK, PH_P, PH_DS, PH_ROWS };
enum { PG_P, PG_DATT, PG_DV, PG_DS, PG_Q, PG_DK, PG_ROWS };

int trc_make_ptrs(struct trc *s, struct trc_act *a)
{
	int BH = s->B * s->H, BK = s->B * s->Hkv, G = s->G, T = s->T, hd = s->hd;
	size_t n = (size_t)BH * PH_ROWS + (size_t)G * BK * PG_ROWS;
	const void **h = (const void **)calloc(n, sizeof *h);
	if (!h || cudaMalloc((void **)&a->ptr, n * sizeof *h) != cudaSuccess) {
		free(h);
		return err_set("cuda training: cannot allocate attention's pointer arrays");
	}
	bool x = attn_fp32(s);
	const bf16 *pb = (const bf16 *)a->p;
	for (int b = 0; b < s->B; b++)
		for (int hh = 0; hh < s->H; hh++) {
			int i = b * s->H + hh, g = hh / G;
			size_t qo = (size_t)b * T * s->q_dim + (size_t)hh * hd;
			size_t ko = (size_t)b * T * s->kv_dim + (size_t)g * hd;
			size_t po = (size_t)i * T * T;
			const void *row[PH_ROWS] = {
				x ? (void *)(a->q + qo) : s->ha + qo, /* s = q k^T */
				x ? (void *)(a->k + ko) : s->hb + ko,
				x ? a->p + po : s->dp + po,
				x ? (void *)(a->v + ko) : s->hb + ko, /* att = p v */
				a->att + qo,
				x ? (void *)(s->datt + qo) : s->ha + qo, /* dp = datt v^T */
				s->dp + po,
				s->dq + qo, /* dq = ds k */
				s->dk + ko,
				x ? (const void *)(a->p + po) : pb + po,
				x ? (const void *)(s->dp + po) : pb + po};
			for (int r = 0; r < PH_ROWS; r++)
				h[(size_t)r * BH + i] = row[r];
		}
	size_t base = (size_t)BH * PH_ROWS;
	for (int j = 0; j < G; j++)
		for (int b = 0; b < s->B; b++)
			for (int g = 0; g < s->Hkv; g++) {
				int hh = g * G + j, i = b * s->Hkv + g;
				size_t qo = (size_t)b * T * s->q_dim + (size_t)hh * hd;
				size_t ko = (size_t)b * T * s->kv_dim + (size_t)g * hd;
				size_t po = (size_t)(b * s->H + hh) * T * T;
				const void *row[PG_ROWS] = {
					x ? (const void *)(a->p + po) : pb + po, /* dv += p^T datt */
					x ? (void *)(s->datt + qo) : s->ha + qo,  s->dv + ko,
					x ? (const void *)(s->dp + po) : pb + po, /* dk += ds^T q */
					x ? (void *)(a->q + qo) : s->ha + qo,     s->dk + ko};
				for (int r = 0; r < PG_ROWS; r++)
					h[base + ((size_t)j * PG_ROWS + r) * BK + i] = row[r];
			}
	cudaError_t e = cudaMemcpy(a->ptr, h, n * sizeof *h, cudaMemcpyHostToDevice);
	free(h);
	CUDA_CHECK(e);
	return 0;
}

/* Per-head list r of act slot a; group list r of group head j. */
static void *const *PH(const struct trc *s, const struct trc_act *a, int r)
{
	return (void *const *)(a->ptr + (size_t)r * s->B * s->H);
}
static void *const *PG(const struct trc *s, const struct trc_act *a, int j, int r)
{
	size_t BK = (size_t)s->B * s->Hkv;
	return (void *const *)(a->ptr + (size_t)s->B * s->H * PH_ROWS +
			       ((size_t)j * PG_ROWS + r) * BK);
}
#define IN(p) ((const void *const *)(p))

/* x's bf16 copy into buf for attention's next product; nothing with fp32 operands. */
static int half_of(struct trc *s, bf16 *buf, const float *x, size_t n)
{
	return attn_fp32(s) ? 0 : trc_to_bf16(buf, x, n, s->stream);
}

/* The tiled kernels' arguments for act slot a: the log-sum-exp in the space of p, the
 * backward's row sums in that of dp. */
static struct trc_flash flash_args(struct trc *s, struct trc_act *a)
{
	struct trc_flash f;
	f.att = a->att, f.lse = a->p, f.delta = s->dp;
	f.dq = s->dq, f.dk = s->dk, f.dv = s->dv;
	f.q = a->q, f.k = a->k, f.v = a->v, f.datt = s->datt;
	f.B = s->B, f.T = s->T, f.H = s->H, f.Hkv = s->Hkv, f.hd = s->hd;
	f.scale = 1.0f / sqrtf((float)s->hd);
	return f;
}

static int attn_forward(struct trc *s, struct trc_act *a)
{
	int BH = s->B * s->H, T = s->T, hd = s->hd;
	size_t N = s->N;
	float scale = 1.0f / sqrtf((float)hd);
	if (s->tiled) {
		struct trc_flash f = flash_args(s, a);
		return trc_flash_forward(&f, s->stream);
	}
	/* scores = q k^T (T x T per head), p = their softmax, att = p v */
	if (half_of(s, s->ha, a->q, N * s->q_dim) || half_of(s, s->hb, a->k, N * s->kv_dim) ||
	    mm_batch(s, PH(s, a, PH_S), T, false, IN(PH(s, a, PH_Q)), s->q_dim, false,
		     IN(PH(s, a, PH_K)), s->kv_dim, true, T, T, hd, BH))
		return -1;
	if (attn_fp32(s) ? trc_softmax_causal(a->p, s->pos_d, BH * T, T, s->H, scale, s->stream)
			 : trc_softmax_causal_bf16((bf16 *)a->p, s->dp, s->pos_d, BH * T, T, s->H,
						   scale, s->stream))
		return -1;
	if (half_of(s, s->hb, a->v, N * s->kv_dim))
		return -1;
	return mm_batch(s, PH(s, a, PH_ATT), s->q_dim, false, IN(PH(s, a, PH_P)), T, false,
			IN(PH(s, a, PH_V)), s->kv_dim, false, T, hd, T, BH);
}

static int attn_backward(struct trc *s, struct trc_act *a)
{
	int BH = s->B * s->H, BK = s->B * s->Hkv, T = s->T, hd = s->hd;
	size_t N = s->N;
	float scale = 1.0f / sqrtf((float)hd);
	if (s->tiled) {
		struct trc_flash f = flash_args(s, a);
		return trc_flash_backward(&f, s->stream);
	}
	/* dp = datt v^T */
	if (half_of(s, s->ha, s->datt, N * s->q_dim) || half_of(s, s->hb, a->v, N * s->kv_dim) ||
	    mm_batch(s, PH(s, a, PH_DP), T, false, IN(PH(s, a, PH_DATT)), s->q_dim, false,
		     IN(PH(s, a, PH_V)), s->kv_dim, true, T, T, hd, BH))
		return -1;
	for (int j = 0; j < s->G; j++) /* dv += p^T datt, a head of each group at a time */
		if (mm_batch(s, PG(s, a, j, PG_DV), s->kv_dim, j > 0, IN(PG(s, a, j, PG_P)), T,
			     true, IN(PG(s, a, j, PG_DATT)), s->q_dim, false, T, hd, T, BK))
			return -1;
	/* ds from dp and p; then dq = ds k, dk += ds^T q */
	if (attn_fp32(s)
		    ? trc_softmax_back(s->dp, a->p, s->pos_d, BH * T, T, s->H, scale, s->stream)
		    : trc_softmax_back_bf16((bf16 *)a->p, s->dp, s->pos_d, BH * T, T, s->H, scale,
					    s->stream))
		return -1;
	if (half_of(s, s->hb, a->k, N * s->kv_dim) ||
	    mm_batch(s, PH(s, a, PH_DQ), s->q_dim, false, IN(PH(s, a, PH_DS)), T, false,
		     IN(PH(s, a, PH_K)), s->kv_dim, false, T, hd, T, BH) ||
	    half_of(s, s->ha, a->q, N * s->q_dim))
		return -1;
	for (int j = 0; j < s->G; j++)
		if (mm_batch(s, PG(s, a, j, PG_DK), s->kv_dim, j > 0, IN(PG(s, a, j, PG_DS)), T,
			     true, IN(PG(s, a, j, PG_Q)), s->q_dim, false, T, hd, T, BK))
			return -1;
	return 0;
}

/* ---- a layer, forward and backward (train_layer.c's story) ---------------------------------------- */

static int pidx(int l, enum train_role r)
{
	return train_index(l, r);
}

static struct trc_qk qk_args(struct trc *s, struct trc_act *a, int l)
{
	struct trc_qk q = {a->q,    a->k,    a->rstd_q, a->rstd_k, a->q_raw, a->k_raw,
			   s->w[pidx(l, TR_Q_NORM)], s->w[pidx(l, TR_K_NORM)], s->cos, s->sin,
			   s->pos_d, s->N, s->T, s->H, s->Hkv, s->hd, s->eps};
	return q;
}

int trc_layer_forward(struct trc *s, int l, struct trc_act *a)
{
	int N = s->N, D = s->D;
	const float *x = s->x + (size_t)l * N * D;
	float *out = s->x + (size_t)(l + 1) * N * D;
	struct trc_qk qk = qk_args(s, a, l);
	if (trc_rmsnorm(a->xn1, a->rstd1, x, s->w[pidx(l, TR_IN_NORM)], N, D, s->eps, s->stream))
		return -1;
	const bf16 *xh = trc_half(s, s->hb, a->xn1, (size_t)N * D);
	if (linear(s, a->q_raw, a->xn1, xh, pidx(l, TR_WQ), false) ||
	    linear(s, a->k_raw, a->xn1, xh, pidx(l, TR_WK), false) ||
	    linear(s, a->v, a->xn1, xh, pidx(l, TR_WV), false) || trc_qk(&qk, s->stream) ||
	    attn_forward(s, a))
		return -1;
	CUDA_CHECK(cudaMemcpyAsync(a->xmid, x, (size_t)N * D * sizeof(float), cudaMemcpyDeviceToDevice,
				   s->stream));
	xh = trc_half(s, s->ha, a->att, (size_t)N * s->q_dim);
	if (linear(s, a->xmid, a->att, xh, pidx(l, TR_WO), true) ||
	    trc_rmsnorm(a->xn2, a->rstd2, a->xmid, s->w[pidx(l, TR_POST_NORM)], N, D, s->eps,
			s->stream))
		return -1;
	xh = trc_half(s, s->hb, a->xn2, (size_t)N * D);
	if (linear(s, a->gate, a->xn2, xh, pidx(l, TR_GATE), false) ||
	    linear(s, a->up, a->xn2, xh, pidx(l, TR_UP), false) ||
	    trc_swiglu(a->h, a->gate, a->up, (size_t)N * s->F, s->stream))
		return -1;
	CUDA_CHECK(cudaMemcpyAsync(out, a->xmid, (size_t)N * D * sizeof(float),
				   cudaMemcpyDeviceToDevice, s->stream));
	xh = trc_half(s, s->ha, a->h, (size_t)N * s->F);
	return linear(s, out, a->h, xh, pidx(l, TR_DOWN), true);
}

/* The products' inputs x go to s->hb in bf16, once for all the products that read
 * them; linear_back puts each dy in s->ha. */
int trc_layer_backward(struct trc *s, int l, struct trc_act *a)
{
	int N = s->N, D = s->D;
	const float *x = s->x + (size_t)l * N * D;
	struct trc_qk qk = qk_args(s, a, l);
	int pn = pidx(l, TR_POST_NORM), in = pidx(l, TR_IN_NORM);
	const bf16 *xh = trc_half(s, s->hb, a->h, (size_t)N * s->F);
	if (linear_back(s, s->dh, false, s->dx, a->h, xh, pidx(l, TR_DOWN)) ||
	    trc_swiglu_back(s->dh, s->dup, a->gate, a->up, (size_t)N * s->F, s->stream))
		return -1;
	xh = trc_half(s, s->hb, a->xn2, (size_t)N * D);
	if (linear_back(s, s->dxn, false, s->dh, a->xn2, xh, pidx(l, TR_GATE)) ||
	    linear_back(s, s->dxn, true, s->dup, a->xn2, xh, pidx(l, TR_UP)) ||
	    trc_rmsnorm_back(s->dx, s->g[pn], s->part, s->dxn, a->xmid, a->rstd2, s->w[pn], N, D,
			     true, s->stream))
		return -1;
	xh = trc_half(s, s->hb, a->att, (size_t)N * s->q_dim);
	if (linear_back(s, s->datt, false, s->dx, a->att, xh, pidx(l, TR_WO)) ||
	    attn_backward(s, a) ||
	    trc_qk_back(&qk, s->dq, s->dk, s->g[pidx(l, TR_Q_NORM)], s->g[pidx(l, TR_K_NORM)],
			s->part, s->stream))
		return -1;
	xh = trc_half(s, s->hb, a->xn1, (size_t)N * D);
	if (linear_back(s, s->dxn, false, s->dq, a->xn1, xh, pidx(l, TR_WQ)) ||
	    linear_back(s, s->dxn, true, s->dk, a->xn1, xh, pidx(l, TR_WK)) ||
	    linear_back(s, s->dxn, true, s->dv, a->xn1, xh, pidx(l, TR_WV)))
		return -1;
	return trc_rmsnorm_back(s->dx, s->g[in], s->part, s->dxn, x, a->rstd1, s->w[in], N, D, true,
				s->stream);
}
