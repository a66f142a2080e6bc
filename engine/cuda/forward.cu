/* forward.cu — the forward pass on the device: a chunk of tokens through every layer
 * and the lm_head. One token (decode) goes through the fused matrix-vector kernels of
 * matvec.cu and quant.cu and the split-K attention; more (prefill) through the GEMMs
 * of gemm.cu and flash attention (attention.cu). It only enqueues work on the stream:
 * step.cu decides how it runs (recorded in a CUDA graph or launched plainly) and
 * copies the results back. */
#include <math.h>

#include "engine/cuda/state.cuh"

/* The attention arguments of layer l for n queries at the position in s->in. */
static struct cu_attn_args attn_args(const struct cu_state *s, int l, int n)
{
	const struct eng_config *c = s->c;
	size_t kv_layer = (size_t)c->num_kv_heads * s->ctx * c->head_dim;
	struct cu_attn_args aa = {};
	aa.q = s->q;
	aa.out = s->att;
	aa.k_cache = s->k_cache + l * kv_layer;
	aa.v_cache = s->v_cache + l * kv_layer;
	aa.pos = s->in;
	aa.n = n, aa.H = c->num_heads, aa.Hkv = c->num_kv_heads, aa.hd = c->head_dim;
	aa.ctx = s->ctx;
	aa.scale = 1.0f / sqrtf((float)c->head_dim);
	aa.part = s->part;
	aa.max_splits = s->max_splits;
	return aa;
}

/* The q/k norms, RoPE and cache store of layer l, for the qkv rows in s->qkv. */
static struct cu_rope_args rope_args(const struct cu_state *s, const struct cu_attn_args *aa, int l)
{
	const struct cu_layer *L = &s->layers[l];
	size_t kv_layer = (size_t)aa->Hkv * s->ctx * aa->hd;
	struct cu_rope_args ra = {s->q,
				  s->k_cache + l * kv_layer,
				  s->v_cache + l * kv_layer,
				  s->qkv,
				  L->q_norm,
				  L->k_norm,
				  s->rope_cos,
				  s->rope_sin,
				  s->in,
				  aa->n,
				  aa->H,
				  aa->Hkv,
				  aa->hd,
				  s->ctx,
				  (float)s->c->rms_norm_eps};
	return ra;
}

static int rope_store(struct cu_state *s, const struct cu_attn_args *aa, int l)
{
	struct cu_rope_args ra = rope_args(s, aa, l);
	return cu_qk_norm_rope_store(&ra, s->stream);
}

/* y (M) (+)= W . x, where x is made from `in` as `input` says (cu_matvec_input), or
 * with CU_MV_OUT_SWIGLU h = silu(gate) * up of W's row pairs: the bf16 kernel or the
 * quantized one for W's type. */
static int matvec(struct cu_state *s, float *y, const struct cu_mat *W, int K, const void *in,
		  int input, const bf16 *norm, bool acc, int output = CU_MV_OUT_F32, bf16 *h = NULL)
{
	float eps = (float)s->c->rms_norm_eps;
	if (W->t == ENG_BF16) {
		struct cu_matvec_args ma = {
			y, h, (const bf16 *)W->w, in, norm, eps, W->rows, K, input, output, acc};
		return cu_matvec(&ma, &s->dev, s->stream);
	}
	struct cu_qmatvec_args qa = {y,   h,       W->w, W->t,  W->stride, in, norm,
				     eps, W->rows, K,    input, output,    acc};
	return cu_qmatvec(&qa, &s->dev, s->stream);
}

/* The fused q/k/v projection of x = rmsnorm(s->x) into s->qkv (n, qkv_dim): one product
 * when the three are stacked, else one per part into its columns. */
static int qkv_decode(struct cu_state *s, const struct cu_layer *L)
{
	int D = s->c->hidden_size, col = 0;
	for (int i = 0; i < L->n_qkv; i++) {
		if (matvec(s, s->qkv + col, &L->qkv[i], D, s->x, CU_MV_RMSNORM, L->input_norm,
			   false))
			return -1;
		col += L->qkv[i].rows;
	}
	return 0;
}

static int qkv_prefill(struct cu_state *s, const struct cu_layer *L, int n)
{
	int D = s->c->hidden_size, col = 0;
	for (int i = 0; i < L->n_qkv; i++) {
		if (cu_mat_gemm(s, s->qkv + col, s->qkv_dim, s->xn, &L->qkv[i], n, D, false))
			return -1;
		col += L->qkv[i].rows;
	}
	return 0;
}

/* One token through layer l (decode): six kernels, the RMSNorms fused into the
 * matrix-vector products that read them, SwiGLU into the one that makes it, the q/k
 * norms, RoPE and the cache store into the attention. */
static int layer_decode(struct cu_state *s, int l)
{
	const struct eng_config *c = s->c;
	const struct cu_layer *L = &s->layers[l];
	int D = c->hidden_size, F = c->intermediate_size;
	struct cu_attn_args aa = attn_args(s, l, 1);
	aa.cap = s->capture ? s->cap + (size_t)l * c->num_heads * s->ctx : NULL;
	aa.rope = rope_args(s, &aa, l);
	/* x += Wo . attn(rope(norm(Wqkv . rmsnorm(x)))) */
	if (qkv_decode(s, L) || cu_attention_decode(&aa, s->stream) ||
	    matvec(s, s->x, &L->wo, s->q_dim, s->att, CU_MV_BF16, NULL, true))
		return -1;
	/* x += Wdown . h, h = silu(Wgate . xn) * (Wup . xn), xn = rmsnorm(x) */
	if (matvec(s, NULL, &L->gate_up, D, s->x, CU_MV_RMSNORM, L->post_norm, false,
		   CU_MV_OUT_SWIGLU, s->xn) ||
	    matvec(s, s->x, &L->down, F, s->xn, CU_MV_BF16, NULL, true))
		return -1;
	return 0;
}

/* n tokens through layer l (prefill): cuBLAS GEMMs and flash attention. */
static int layer_prefill(struct cu_state *s, int l, int n)
{
	const struct eng_config *c = s->c;
	const struct cu_layer *L = &s->layers[l];
	cudaStream_t st = s->stream;
	int D = c->hidden_size, F = c->intermediate_size;
	float eps = (float)c->rms_norm_eps;
	struct cu_attn_args aa = attn_args(s, l, n);
	/* x (n, D) += Wo . attn(rope(norm(Wqkv . rmsnorm(x)))) */
	if (cu_rmsnorm(s->xn, s->x, L->input_norm, n, D, eps, st) || qkv_prefill(s, L, n) ||
	    rope_store(s, &aa, l) || cu_attention_prefill(&aa, st))
		return -1;
	if (s->capture) { /* the last query's softmax row, through the decode kernels */
		struct cu_attn_args last = aa;
		last.n = 1;
		last.out = s->att_discard; /* the prefill kernel's row stays */
		last.q_offset = n - 1;
		last.cap = s->cap + (size_t)l * c->num_heads * s->ctx;
		if (cu_attention_decode(&last, st))
			return -1;
	}
	if (cu_mat_gemm(s, s->x, D, s->att, &L->wo, n, s->q_dim, true))
		return -1;
	/* x += Wdown . (silu(Wgate . xn) * (Wup . xn)), xn = rmsnorm(x) */
	if (cu_rmsnorm(s->xn, s->x, L->post_norm, n, D, eps, st) ||
	    cu_mat_gemm(s, s->gate_up, 2 * F, s->xn, &L->gate_up, n, D, false) ||
	    cu_swiglu(s->xn, s->gate_up, n, F, st) ||
	    cu_mat_gemm(s, s->x, D, s->xn, &L->down, n, F, true))
		return -1;
	return 0;
}

/* Enqueues one chunk of n tokens whose ids and position are already in s->in. Logits
 * of the last token (or all n, n <= LOGIT_ROWS) land in s->logits. */
int cu_forward_chunk(struct cu_state *s, int n, bool all)
{
	const struct eng_config *c = s->c;
	int D = c->hidden_size, V = c->vocab_size;
	const struct cu_mat *E = &s->embed;
	if (E->t == ENG_BF16 ? cu_embed(s->x, (const bf16 *)E->w, s->in + 1, n, D, s->stream)
			     : cu_qembed(s->x, E->w, E->t, E->stride, s->in + 1, n, D, s->stream))
		return -1; /* x (n, D) */
	for (int l = 0; l < c->num_layers; l++)
		if (n == 1 ? layer_decode(s, l) : layer_prefill(s, l, n))
			return -1;
	/* logits (rows, V) = rmsnorm(x) . lm_head^T for the last or every token */
	int first = all ? 0 : n - 1, rows = n - first;
	const float *x = s->x + (size_t)first * D;
	if (rows == 1)
		return matvec(s, s->logits, &s->lm_head, D, x, CU_MV_RMSNORM, s->final_norm, false);
	if (cu_rmsnorm(s->xn, x, s->final_norm, rows, D, (float)c->rms_norm_eps, s->stream))
		return -1;
	return cu_mat_gemm(s, s->logits, V, s->xn, &s->lm_head, rows, D, false);
}
