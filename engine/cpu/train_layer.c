/* train_layer.c — one Qwen3 layer forward and backward for training, side by side.
 *
 *   xn1 = rmsnorm(x) w_in                      q, k, v = xn1 Wq^T, xn1 Wk^T, xn1 Wv^T
 *   q, k = rope(rmsnorm_head(q) w_q), ...      att = softmax(q k^T / sqrt(hd), causal) v
 *   xmid = x + att Wo^T                        xn2 = rmsnorm(xmid) w_post
 *   h = silu(xn2 Wg^T) * (xn2 Wu^T)            out = xmid + h Wd^T
 *
 * The matrix products run on gemm.c (the weights read transposed where the forward
 * needs W^T); attention runs per (row, head) in the forward and per (row, kv head) in
 * the backward, so that the key and value gradients of a group of query heads are
 * summed by one thread in one order, and its products skip the tiles the causal mask
 * leaves zero. It takes the queries TR_QBLOCK at a time, so that a block's
 * probabilities and their gradient stay in the cache from the product that makes them
 * to the ones that read them. The probabilities are B x H x T x T floats a layer, most
 * of the activations at long contexts: where the memory plan has no room for them
 * (recompute_probs) the backward makes a block's again from q and k, in a thread's
 * scratch, the same way the forward did. A row may hold several documents (packed
 * rows): attention then runs on each document's block alone, as if it were a row of
 * its own.
 */
#include <math.h>
#include <stdatomic.h>
#include <string.h>

#include "engine/cpu/gemm_tiles.h"
#include "engine/cpu/train_cpu.h"

_Static_assert(TR_QBLOCK % GEMM_KC == 0, "a block of queries ends between k-blocks");

/* c (n, m) (+)= a (n, k) . b (k, m) on every thread; see struct gemm for at/bt. */
static void mm(struct train_cpu *s, float *c, int ldc, bool acc, const float *a, int lda, bool at,
	       const float *b, int ldb, bool bt, int n, int m, int k)
{
	struct gemm g = {n, m, k, c, ldc, acc, a, lda, at, b, ldb, bt, GEMM_FULL};
	gemm_run(s->gm, &g, s->prec);
}

/* LoRA's adapter of layer l's matrix r: its A (B is the parameter after it), or NULL. */
static struct eng_param *adapter(struct train_cpu *s, int l, enum train_role r)
{
	const int *at = s->t->lora_a;
	return at && at[l * TR_PER_LAYER + r] >= 0 ? &s->t->params[at[l * TR_PER_LAYER + r]] : NULL;
}

/* x (n) times the adapters' scale alpha / rank, in place. */
static void scale_lora(struct train_cpu *s, float *x, size_t n)
{
	float k = s->t->lora_scale;
	for (size_t i = 0; i < n; i++)
		x[i] *= k;
}

/* y (N, M) (+)= x (N, K) . W^T, W (M, K): the forward of layer l's linear layer r, and
 * with an adapter u = (x A^T) alpha / rank (kept for the backward), y += u B^T. */
static void linear(struct train_cpu *s, struct tr_act *a, int l, enum train_role r, float *y,
		   const float *x, bool acc)
{
	const struct eng_param *W = tr_param(s, l, r), *A = adapter(s, l, r);
	int M = (int)W->shape[0], K = (int)W->shape[1], R = s->t->o.lora_rank;
	mm(s, y, M, acc, x, K, false, W->w, K, true, s->N, M, K);
	if (!A)
		return;
	float *u = a->lora_u[r];
	mm(s, u, R, false, x, K, false, A->w, K, true, s->N, R, K);
	scale_lora(s, u, (size_t)s->N * R);
	mm(s, y, M, true, u, R, false, A[1].w, R, true, s->N, M, R);
}

/* The backward of linear(): dW += dy^T x unless W is frozen, dx (+)= dy W; with an
 * adapter dB += dy^T u, du = (dy B) alpha / rank, dA += du^T x, dx += du A. */
static void linear_back(struct train_cpu *s, struct tr_act *a, int l, enum train_role r, float *dx,
			bool acc, const float *dy, const float *x)
{
	struct eng_param *W = tr_param(s, l, r), *A = adapter(s, l, r);
	int M = (int)W->shape[0], K = (int)W->shape[1], R = s->t->o.lora_rank, N = s->N;
	if (!W->frozen)
		mm(s, W->g, K, true, dy, M, true, x, K, false, M, K, N);
	mm(s, dx, K, acc, dy, M, false, W->w, K, false, N, K, M);
	if (!A)
		return;
	struct eng_param *B = A + 1;
	mm(s, B->g, R, true, dy, M, true, a->lora_u[r], R, false, M, R, N);
	mm(s, s->lora_du, R, false, dy, M, false, B->w, R, false, N, R, M);
	scale_lora(s, s->lora_du, (size_t)N * R);
	mm(s, A->g, K, true, s->lora_du, R, true, x, K, false, R, K, N);
	mm(s, dx, K, true, s->lora_du, R, false, A->w, K, false, N, K, R);
}


/* ---- attention -------------------------------------------------------------------------- */

struct attn_task {
	struct train_cpu *s;
	struct tr_act *a;
	atomic_int next;
};

/* The end of the document of row b that starts at column c0: the next column whose
 * position is 0 (train.h), or T. */
static int doc_end(const struct train_cpu *s, int b, int c0)
{
	const int32_t *pos = s->pos + (size_t)b * s->T;
	int c = c0 + 1;
	while (c < s->T && pos[c] != 0)
		c++;
	return c;
}

/* c (n, m) (+)= a (n, k) . b (k, m) on the calling thread; see struct gemm. */
static void mm1(struct train_cpu *s, int tid, enum gemm_tri tri, int n, int m, int k, float *c,
		int ldc, bool acc, const float *a, int lda, bool at, const float *b, int ldb,
		bool bt)
{
	struct gemm g = {n, m, k, c, ldc, acc, a, lda, at, b, ldb, bt, tri};
	gemm_serial(s->gm, &g, s->prec, tid);
}

/* A block of queries: rows [i0, i1) of a document of row b that starts at column c0,
 * against its keys [0, i1). Each product over the keys is two: the keys before the
 * block (all seen) and the block's own square, causal. */
struct qblock {
	int b, c0, i0, i1, n; /* n = i1 - i0 */
	float *p;             /* its probabilities: row r (query i0 + r) at p + r T, keys 0.. */
};

/* The query block from i0 of the document [c0, c1) of row b: TR_QBLOCK queries, or
 * those left. */
static struct qblock qblock_at(int b, int c0, int c1, int i0)
{
	int i1 = i0 + TR_QBLOCK < c1 - c0 ? i0 + TR_QBLOCK : c1 - c0;
	struct qblock qb = {b, c0, i0, i1, i1 - i0, NULL};
	return qb;
}

/* Where the probabilities of query block qb of head h lie: in the layer's activations
 * (rows T apart, the document's block at (c0, c0)), or in the thread's scratch. */
static float *block_probs(struct train_cpu *s, struct tr_act *a, const struct qblock *qb, int h,
			  int tid)
{
	size_t T = (size_t)s->T;
	if (a->p)
		return a->p + ((size_t)qb->b * s->H + h) * T * T + (size_t)(qb->c0 + qb->i0) * T +
		       (size_t)qb->c0;
	return s->probs + (size_t)tid * tr_qblock_rows(s->T) * T;
}

/* p = softmax(q k^T scale) of the block's queries, head h, zero above the diagonal. The
 * forward and the backward both make it here, the same way, so the backward's copy is
 * the forward's to the bit. */
static void attn_probs(struct train_cpu *s, struct tr_act *a, const struct qblock *qb, int h,
		       int tid)
{
	int T = s->T, hd = s->hd, g = h / (s->H / s->Hkv), i0 = qb->i0, n = qb->n;
	float scale = 1.0f / sqrtf((float)hd), *p = qb->p;
	const float *q = a->q + ((size_t)qb->b * T + qb->c0 + i0) * s->q_dim + (size_t)h * hd;
	const float *k = a->k + ((size_t)qb->b * T + qb->c0) * s->kv_dim + (size_t)g * hd;
	mm1(s, tid, GEMM_FULL, n, i0, hd, p, T, false, q, s->q_dim, false, k, s->kv_dim, true);
	mm1(s, tid, GEMM_TRI_C, n, n, hd, p + i0, T, false, q, s->q_dim, false,
	    k + (size_t)i0 * s->kv_dim, s->kv_dim, true);
	for (int r = 0; r < n; r++) {
		float *row = p + (size_t)r * T;
		int i = i0 + r;
		s->k->softmax(row, i + 1, scale, NULL);
		memset(row + i + 1, 0, (size_t)(qb->i1 - i - 1) * sizeof *row);
	}
}

/* Row b, query head h: att = p v, one document of the row at a time (its L x L block of
 * p is all a query of it sees), a block of queries at a time. */
static void attn_fwd_item(struct train_cpu *s, struct tr_act *a, int b, int h, int tid)
{
	int T = s->T, hd = s->hd, g = h / (s->H / s->Hkv), ld = s->kv_dim;
	for (int c0 = 0, c1; c0 < T; c0 = c1) {
		c1 = doc_end(s, b, c0);
		const float *v = a->v + ((size_t)b * T + c0) * ld + (size_t)g * hd;
		for (int i0 = 0; i0 < c1 - c0; i0 += TR_QBLOCK) {
			struct qblock qb = qblock_at(b, c0, c1, i0);
			int n = qb.n;
			qb.p = block_probs(s, a, &qb, h, tid);
			attn_probs(s, a, &qb, h, tid);
			float *out = a->att + ((size_t)b * T + c0 + i0) * s->q_dim + (size_t)h * hd;
			mm1(s, tid, GEMM_FULL, n, hd, i0, out, s->q_dim, false, qb.p, T, false, v,
			    ld, false);
			mm1(s, tid, GEMM_TRI_A_LOWER, n, hd, n, out, s->q_dim, i0 > 0, qb.p + i0, T,
			    false, v + (size_t)i0 * ld, ld, false);
		}
	}
}

static void attn_fwd_task(void *arg, int tid, int nthreads)
{
	(void)nthreads;
	struct attn_task *at = arg;
	struct train_cpu *s = at->s;
	int it;
	while ((it = cpu_claim(&at->next, s->B * s->H)) >= 0)
		attn_fwd_item(s, at->a, it / s->H, it % s->H, tid);
}

/* ds = p (dp - rowsum(dp p)) scale in place of dp, for the block's rows; zero above
 * the diagonal. */
static void attn_ds(const struct train_cpu *s, const struct qblock *qb, float *dp)
{
	float scale = 1.0f / sqrtf((float)s->hd);
	for (int r = 0; r < qb->n; r++) {
		const float *pr = qb->p + (size_t)r * s->T;
		float *d = dp + (size_t)r * s->T;
		int i = qb->i0 + r;
		double dot = tr_dot(d, NULL, pr, i + 1);
		for (int c = 0; c <= i; c++)
			d[c] = pr[c] * (d[c] - (float)dot) * scale;
		memset(d + i + 1, 0, (size_t)(qb->i1 - i - 1) * sizeof *d);
	}
}

/* The backward of query block qb of head h, the j-th of its kv head g: with p (made
 * again where not kept), dp = datt v^T, dv += p^T datt, ds (attn_ds), dq = ds k,
 * dk += ds^T q. The key and value gradients of the keys before the block were begun
 * by the blocks before it, and those of its own square by this head's (j > 0: added). */
static void attn_bwd_block(struct train_cpu *s, struct tr_act *a, const struct qblock *qb, int g,
			   int j, int tid)
{
	int T = s->T, hd = s->hd, h = g * (s->H / s->Hkv) + j, i0 = qb->i0, n = qb->n;
	int ld = s->kv_dim, lq = s->q_dim;
	size_t kvo = ((size_t)qb->b * T + qb->c0) * ld + (size_t)g * hd, ko = (size_t)i0 * ld;
	size_t qo = ((size_t)qb->b * T + qb->c0 + i0) * lq + (size_t)h * hd;
	const float *datt = s->datt + qo, *q = a->q + qo, *k = a->k + kvo, *v = a->v + kvo;
	float *dp = s->dp + (size_t)tid * tr_qblock_rows(T) * T, *p = qb->p;
	float *dk = s->dk + kvo, *dv = s->dv + kvo;
	if (!a->p)
		attn_probs(s, a, qb, h, tid);
	mm1(s, tid, GEMM_FULL, n, i0, hd, dp, T, false, datt, lq, false, v, ld, true);
	mm1(s, tid, GEMM_TRI_C, n, n, hd, dp + i0, T, false, datt, lq, false, v + ko, ld, true);
	mm1(s, tid, GEMM_FULL, i0, hd, n, dv, ld, true, p, T, true, datt, lq, false);
	mm1(s, tid, GEMM_TRI_A_UPPER, n, hd, n, dv + ko, ld, j > 0, p + i0, T, true, datt, lq,
	    false);
	attn_ds(s, qb, dp);
	mm1(s, tid, GEMM_FULL, n, hd, i0, s->dq + qo, lq, false, dp, T, false, k, ld, false);
	mm1(s, tid, GEMM_TRI_A_LOWER, n, hd, n, s->dq + qo, lq, i0 > 0, dp + i0, T, false, k + ko,
	    ld, false);
	mm1(s, tid, GEMM_FULL, i0, hd, n, dk, ld, true, dp, T, true, q, lq, false);
	mm1(s, tid, GEMM_TRI_A_UPPER, n, hd, n, dk + ko, ld, j > 0, dp + i0, T, true, q, lq, false);
}

/* Row b, kv head g and its query heads, one document of the row at a time, its query
 * blocks in order (each adds to the key and value gradients the ones before began). */
static void attn_bwd_item(struct train_cpu *s, struct tr_act *a, int b, int g, int tid)
{
	int G = s->H / s->Hkv;
	for (int c0 = 0, c1; c0 < s->T; c0 = c1) {
		c1 = doc_end(s, b, c0);
		for (int j = 0; j < G; j++)
			for (int i0 = 0; i0 < c1 - c0; i0 += TR_QBLOCK) {
				struct qblock qb = qblock_at(b, c0, c1, i0);
				qb.p = block_probs(s, a, &qb, g * G + j, tid);
				attn_bwd_block(s, a, &qb, g, j, tid);
			}
	}
}

static void attn_bwd_task(void *arg, int tid, int nthreads)
{
	(void)nthreads;
	struct attn_task *at = arg;
	struct train_cpu *s = at->s;
	int it;
	while ((it = cpu_claim(&at->next, s->B * s->Hkv)) >= 0)
		attn_bwd_item(s, at->a, it / s->Hkv, it % s->Hkv, tid);
}

/* ---- the layer ---------------------------------------------------------------------------- */

void tr_layer_forward(struct train_cpu *s, int l, struct tr_act *a)
{
	int N = s->N, D = s->D;
	const float *x = s->x + (size_t)l * N * D;
	float *out = s->x + (size_t)(l + 1) * N * D;
	/* attention block: xmid = x + att Wo^T */
	tr_rmsnorm_fwd(s, a->xn1, a->rstd1, x, tr_param(s, l, TR_IN_NORM)->w, N, D);
	/* three products: one over the stacked weights was no faster (BENCHMARKS.md) */
	linear(s, a, l, TR_WQ, a->q_raw, a->xn1, false);
	linear(s, a, l, TR_WK, a->k_raw, a->xn1, false);
	linear(s, a, l, TR_WV, a->v, a->xn1, false);
	tr_qk_fwd(s, a, tr_param(s, l, TR_Q_NORM)->w, tr_param(s, l, TR_K_NORM)->w);
	struct attn_task at = {s, a, 0};
	cpu_pool_run(s->pool, attn_fwd_task, &at);
	tr_copy(s, a->xmid, x, (size_t)N * D);
	linear(s, a, l, TR_WO, a->xmid, a->att, true);
	/* MLP block: out = xmid + (silu(xn2 Wg^T) * (xn2 Wu^T)) Wd^T */
	tr_rmsnorm_fwd(s, a->xn2, a->rstd2, a->xmid, tr_param(s, l, TR_POST_NORM)->w, N, D);
	linear(s, a, l, TR_GATE, a->gate, a->xn2, false);
	linear(s, a, l, TR_UP, a->up, a->xn2, false);
	tr_swiglu_fwd(s, a->h, a->gate, a->up, N * s->F);
	tr_copy(s, out, a->xmid, (size_t)N * D);
	linear(s, a, l, TR_DOWN, out, a->h, true);
}

void tr_layer_backward(struct train_cpu *s, int l, struct tr_act *a)
{
	int N = s->N, D = s->D;
	const float *x = s->x + (size_t)l * N * D;
	/* MLP block; s->dx is d out, and d xmid through the residual */
	linear_back(s, a, l, TR_DOWN, s->dh, false, s->dx, a->h);
	tr_swiglu_bwd(s, s->dh, s->dup, a->gate, a->up, N * s->F);
	linear_back(s, a, l, TR_GATE, s->dxn, false, s->dh, a->xn2);
	linear_back(s, a, l, TR_UP, s->dxn, true, s->dup, a->xn2);
	struct eng_param *pn = tr_param(s, l, TR_POST_NORM);
	tr_rmsnorm_bwd(s, s->dx, pn->g, s->dxn, a->xmid, a->rstd2, pn->w, N, D, true);
	/* attention block; s->dx is d xmid, and d x through the residual */
	linear_back(s, a, l, TR_WO, s->datt, false, s->dx, a->att);
	struct attn_task at = {s, a, 0};
	cpu_pool_run(s->pool, attn_bwd_task, &at);
	struct eng_param *qn = tr_param(s, l, TR_Q_NORM), *kn = tr_param(s, l, TR_K_NORM);
	tr_qk_bwd(s, a, qn->w, kn->w, qn->g, kn->g); /* NULL: frozen */
	linear_back(s, a, l, TR_WQ, s->dxn, false, s->dq, a->xn1);
	linear_back(s, a, l, TR_WK, s->dxn, true, s->dk, a->xn1);
	linear_back(s, a, l, TR_WV, s->dxn, true, s->dv, a->xn1);
	struct eng_param *in = tr_param(s, l, TR_IN_NORM);
	tr_rmsnorm_bwd(s, s->dx, in->g, s->dxn, x, a->rstd1, in->w, N, D, true);
}
