/* cuda.cu — the CUDA backend: weights uploaded once (bf16, or ggml's quantized blocks
 * for quant.cu's kernels), a bf16 KV cache on the device, decode steps of small kernels
 * replayed from one CUDA graph, prefill through cuBLAS GEMMs (bf16 in, fp32
 * accumulate; quantized matrices dequantized to bf16 by tiles first) and flash
 * attention. One host function, forward_chunk, orchestrates the kernels of kernels.cu,
 * quant.cu and attention.cu. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/cuda/state.cuh"

extern "C" {
#include "engine/rope.h"
}

/* Tokens per prefill chunk: bounds the activations' memory (the 8B shape: about
 * 0.4 GB) while a 2048-token prompt still runs as one set of wide GEMMs, which is
 * where cuBLAS reaches its peak. */
#define CHUNK         2048
/* Rows of the logits buffer: the chunk when every position's logits are asked for. */
#define LOGIT_ROWS    512
/* Device memory left free after the KV cache, for cuBLAS's workspace, the graphs
 * and the attention capture: the cache is shrunk rather than eat into it. */
#define RESERVE_BYTES ((size_t)512 << 20)
/* A shrunk context is a multiple of this many tokens. */
#define CTX_QUANTUM   256
/* Weights of a quantized matrix dequantized at a time for the prefill's GEMM (128 MB
 * of bf16): the 8B shape's gate/up (200 MB) in two tiles, the lm_head in ten, each
 * still a GEMM wide enough for cuBLAS's peak. */
#define DEQ_MAX_ELEMS ((size_t)64 << 20)

/* ---- the forward pass --------------------------------------------------------------- */

/* out (n, M) fp32 (+)= in (n, K) bf16 . W (M, K)^T through cuBLAS: column-major, that
 * is out^T (M, n) = W^T' (M, K) . in^T (K, n). */
int cu_gemm(cublasHandle_t blas, float *out, const bf16 *in, const bf16 *W, int n, int M, int K,
	    bool acc)
{
	return cu_gemm_ld(blas, out, M, in, W, n, M, K, acc);
}

int cu_gemm_ld(cublasHandle_t blas, float *out, int ldo, const bf16 *in, const bf16 *W, int n,
	       int M, int K, bool acc)
{
	const float one = 1.0f, zero = 0.0f;
	CUBLAS_CHECK(cublasGemmEx(blas, CUBLAS_OP_T, CUBLAS_OP_N, M, n, K, &one, W, CUDA_R_16BF, K,
				  in, CUDA_R_16BF, K, acc ? &one : &zero, out, CUDA_R_32F, ldo,
				  CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
	return 0;
}

/* out (n, ldo) columns [0, W->rows) (+)= in (n, K) . W^T: cuBLAS on the bf16 weights,
 * or, for a quantized W, on tiles of its rows dequantized into s->deq one after the
 * other (stream order keeps a tile's GEMM before the next tile overwrites it). */
static int mat_gemm(struct cu_state *s, float *out, int ldo, const bf16 *in, const struct cu_mat *W,
		    int n, int K, bool acc)
{
	if (W->t == ENG_BF16)
		return cu_gemm_ld(s->blas, out, ldo, in, (const bf16 *)W->w, n, W->rows, K, acc);
	int tile = (int)(s->deq_elems / K);
	for (int m0 = 0; m0 < W->rows; m0 += tile) {
		int m1 = W->rows - m0 < tile ? W->rows : m0 + tile;
		if (cu_dequant_rows(s->deq, W->w, W->t, W->stride, m0, m1, K, s->stream) ||
		    cu_gemm_ld(s->blas, out + m0, ldo, in, s->deq, n, m1 - m0, K, acc))
			return -1;
	}
	return 0;
}

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
		if (mat_gemm(s, s->qkv + col, s->qkv_dim, s->xn, &L->qkv[i], n, D, false))
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
	if (mat_gemm(s, s->x, D, s->att, &L->wo, n, s->q_dim, true))
		return -1;
	/* x += Wdown . (silu(Wgate . xn) * (Wup . xn)), xn = rmsnorm(x) */
	if (cu_rmsnorm(s->xn, s->x, L->post_norm, n, D, eps, st) ||
	    mat_gemm(s, s->gate_up, 2 * F, s->xn, &L->gate_up, n, D, false) ||
	    cu_swiglu(s->xn, s->gate_up, n, F, st) ||
	    mat_gemm(s, s->x, D, s->xn, &L->down, n, F, true))
		return -1;
	return 0;
}

/* Enqueues one chunk of n tokens whose ids and position are already in s->in. Logits
 * of the last token (or all n, n <= LOGIT_ROWS) land in s->logits. */
static int forward_chunk(struct cu_state *s, int n, bool all)
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
	return mat_gemm(s, s->logits, V, s->xn, &s->lm_head, rows, D, false);
}

/* Enqueues one decode step whose id and position are in s->in (and, to sample, whose
 * settings are in s->sp_dev), ending with the copy of its result to pinned memory. */
static int enqueue_step(struct cu_state *s, enum step_kind kind)
{
	int V = s->c->vocab_size;
	if (forward_chunk(s, 1, false))
		return -1;
	if (kind == STEP_LOGITS) {
		CUDA_CHECK(cudaMemcpyAsync(s->logits_host, s->logits, (size_t)V * sizeof(float),
					   cudaMemcpyDeviceToHost, s->stream));
		return 0;
	}
	struct cu_sample_args sa = {s->logits, s->sp_dev, V, s->cand, s->pick + 3, s->pick};
	if (cu_sample(&sa, s->stream))
		return -1;
	CUDA_CHECK(cudaMemcpyAsync(s->pick_host, s->pick, 3 * sizeof(int), cudaMemcpyDeviceToHost,
				   s->stream));
	return 0;
}

static void drop_graph(struct step_graph *g)
{
	if (g->exec)
		cudaGraphExecDestroy(g->exec);
	g->exec = NULL;
	g->bytes = 0;
}

/* Records the decode step of this kind into its graph. The graph's device memory is
 * measured as the drop in free memory across the instantiation. */
static int build_graph(struct cu_state *s, enum step_kind kind)
{
	struct step_graph *sg = &s->graph[kind];
	cudaGraph_t g;
	drop_graph(sg);
	CUDA_CHECK(cudaStreamBeginCapture(s->stream, cudaStreamCaptureModeThreadLocal));
	int rc = enqueue_step(s, kind);
	cudaError_t e = cudaStreamEndCapture(s->stream, &g);
	if (rc)
		return rc;
	if (e != cudaSuccess)
		return err_set("cuda: graph capture failed: %s", cudaGetErrorString(e));
	size_t free0 = 0, free1 = 0, total = 0;
	cudaMemGetInfo(&free0, &total);
	e = cudaGraphInstantiate(&sg->exec, g, 0);
	cudaGraphDestroy(g);
	if (e != cudaSuccess) {
		sg->exec = NULL;
		return err_set("cuda: graph instantiation failed: %s", cudaGetErrorString(e));
	}
	cudaMemGetInfo(&free1, &total);
	sg->bytes = free0 > free1 ? free0 - free1 : 0;
	sg->capture = s->capture;
	return 0;
}

static int copy_capture(struct cu_state *s, int nk)
{
	const struct eng_config *c = s->c;
	size_t rows = (size_t)c->num_layers * c->num_heads;
	CUDA_CHECK(cudaMemcpy2DAsync(s->cap_host, (size_t)s->ctx * sizeof(float), s->cap,
				     (size_t)s->ctx * sizeof(float), (size_t)nk * sizeof(float),
				     rows, cudaMemcpyDeviceToHost, s->stream));
	CUDA_CHECK(cudaStreamSynchronize(s->stream));
	s->cap_len = nk;
	return 0;
}

/* One token at pos through the graph of this kind (or plain launches when graphs are
 * off); its result is in logits_host or pick_host afterwards. */
static int decode_step(struct cu_state *s, int32_t id, int pos, enum step_kind kind)
{
	s->in_host[0] = pos;
	s->in_host[1] = id;
	CUDA_CHECK(cudaMemcpyAsync(s->in, s->in_host, 2 * sizeof(int), cudaMemcpyHostToDevice,
				   s->stream));
	if (kind == STEP_SAMPLE)
		CUDA_CHECK(cudaMemcpyAsync(s->sp_dev, s->sp_host, sizeof *s->sp_host,
					   cudaMemcpyHostToDevice, s->stream));
	if (s->use_graph) {
		struct step_graph *g = &s->graph[kind];
		if ((!g->exec || g->capture != s->capture) && build_graph(s, kind))
			return -1;
		CUDA_CHECK(cudaGraphLaunch(g->exec, s->stream));
	} else if (enqueue_step(s, kind)) {
		return -1;
	}
	CUDA_CHECK(cudaStreamSynchronize(s->stream));
	if (s->capture && copy_capture(s, pos + 1))
		return -1;
	return 0;
}

static int cuda_forward(void *vs, const int32_t *ids, int n, int pos, float *logits, bool all)
{
	struct cu_state *s = (struct cu_state *)vs;
	int V = s->c->vocab_size;
	s->cap_len = 0;
	if (n == 1) {
		if (decode_step(s, ids[0], pos, STEP_LOGITS))
			return -1;
		memcpy(logits, s->logits_host, (size_t)V * sizeof(float));
		return 0;
	}
	int chunk = all ? LOGIT_ROWS : CHUNK;
	for (int done = 0; done < n;) {
		int m = n - done < chunk ? n - done : chunk;
		bool last = done + m == n;
		s->in_host[0] = pos + done;
		memcpy(s->in_host + 1, ids + done, (size_t)m * sizeof(int));
		CUDA_CHECK(cudaMemcpyAsync(s->in, s->in_host, (size_t)(m + 1) * sizeof(int),
					   cudaMemcpyHostToDevice, s->stream));
		bool keep_capture = s->capture;
		s->capture = keep_capture && last; /* only the final chunk's last query */
		int rc = forward_chunk(s, m, all);
		s->capture = keep_capture;
		if (rc)
			return -1;
		if (all || last) {
			float *dst = all ? logits + (size_t)done * V : logits;
			size_t rows = all ? (size_t)m : 1;
			CUDA_CHECK(cudaMemcpyAsync(dst, s->logits, rows * V * sizeof(float),
						   cudaMemcpyDeviceToHost, s->stream));
		}
		CUDA_CHECK(cudaStreamSynchronize(s->stream));
		done += m;
	}
	if (s->capture && copy_capture(s, pos + n))
		return -1;
	return 0;
}

/* ---- sampling on the device ----------------------------------------------------------- */

static bool cuda_sample_ok(void *vs, const struct eng_sampling *sp)
{
	struct cu_state *s = (struct cu_state *)vs;
	if (s->no_sampling)
		return false;
	if (sp->greedy)
		return true;
	return sp->top_k >= 1 && sp->top_k <= CU_SAMPLE_MAX_K && sp->top_k < sp->vocab_limit &&
	       sp->top_k < s->c->vocab_size && sp->temperature > 0;
}

static int cuda_forward_sample(void *vs, int32_t id, int pos, const struct eng_sampling *sp,
			       int32_t *next, bool *used_uniform)
{
	struct cu_state *s = (struct cu_state *)vs;
	struct cu_sample_params *p = s->sp_host;
	int V = s->c->vocab_size;
	p->k = sp->greedy ? 1 : sp->top_k;
	p->n_recent = sp->n_recent;
	p->vocab = V;
	p->vocab_limit = sp->vocab_limit;
	p->temperature = sp->temperature;
	p->top_p = sp->top_p;
	p->min_p = sp->min_p;
	p->presence_penalty = sp->presence_penalty;
	p->repetition_penalty = sp->repetition_penalty;
	p->uniform = sp->uniform;
	if (sp->n_recent)
		memcpy(p->recent, sp->recent, (size_t)sp->n_recent * sizeof(int32_t));
	s->cap_len = 0;
	if (decode_step(s, id, pos, STEP_SAMPLE))
		return -1;
	if (s->pick_host[2] >= 0 && s->pick_host[2] < V)
		return err_set("forward: logit %d at position %d is not finite "
			       "(NaN or Inf in the weights or activations)",
			       s->pick_host[2], pos);
	if (s->pick_host[0] < 0 || s->pick_host[0] >= sp->vocab_limit)
		return err_set("cuda: the device sampler picked id %d (limit %d)", s->pick_host[0],
			       sp->vocab_limit);
	*next = s->pick_host[0];
	*used_uniform = s->pick_host[1] != 0;
	return 0;
}

/* ---- setup -------------------------------------------------------------------------- */

static void cuda_free(void *vs)
{
	struct cu_state *s = (struct cu_state *)vs;
	if (!s)
		return;
	drop_graph(&s->graph[STEP_LOGITS]);
	drop_graph(&s->graph[STEP_SAMPLE]);
	void *dev[] = {s->weights, s->k_cache,     s->v_cache, s->rope_cos, s->rope_sin,
		       s->in,      s->x,           s->xn,      s->qkv,      s->q,
		       s->att,     s->att_discard, s->gate_up, s->part,     s->logits,
		       s->cap,     s->sp_dev,      s->cand,    s->pick,     s->deq};
	for (size_t i = 0; i < sizeof dev / sizeof dev[0]; i++)
		if (dev[i])
			cudaFree(dev[i]);
	void *pinned[] = {s->in_host, s->logits_host, s->sp_host, s->pick_host};
	for (size_t i = 0; i < sizeof pinned / sizeof pinned[0]; i++)
		if (pinned[i])
			cudaFreeHost(pinned[i]);
	if (s->blas)
		cublasDestroy(s->blas);
	if (s->stream)
		cudaStreamDestroy(s->stream);
	free(s->cap_host);
	free(s->layers);
	free(s);
}

/* cudaMalloc of n elements of `size` bytes, counted as scratch. */
static int scratch(struct cu_state *s, void **p, size_t n, size_t size)
{
	CUDA_CHECK(cudaMalloc(p, n * size));
	s->scratch_bytes += n * size;
	return 0;
}

/* The activations of one chunk and the sampler's buffers: sizes that do not depend
 * on the context. */
static int alloc_scratch(struct cu_state *s)
{
	const struct eng_config *c = s->c;
	size_t D = c->hidden_size, F = c->intermediate_size, V = c->vocab_size, widest = s->widest;
	if (scratch(s, (void **)&s->in, CHUNK + 1, sizeof(int)) ||
	    scratch(s, (void **)&s->x, CHUNK * D, sizeof(float)) ||
	    scratch(s, (void **)&s->xn, CHUNK * widest, sizeof(bf16)) ||
	    scratch(s, (void **)&s->qkv, CHUNK * (size_t)s->qkv_dim, sizeof(float)) ||
	    scratch(s, (void **)&s->q, CHUNK * (size_t)s->q_dim, sizeof(float)) ||
	    scratch(s, (void **)&s->att, CHUNK * (size_t)s->q_dim, sizeof(bf16)) ||
	    scratch(s, (void **)&s->att_discard, (size_t)s->q_dim, sizeof(bf16)) ||
	    scratch(s, (void **)&s->gate_up, CHUNK * 2 * F, sizeof(float)) ||
	    scratch(s, (void **)&s->logits, LOGIT_ROWS * V, sizeof(float)) ||
	    scratch(s, (void **)&s->sp_dev, 1, sizeof *s->sp_dev) ||
	    scratch(s, (void **)&s->cand, (size_t)cu_sample_blocks((int)V) * CU_SAMPLE_MAX_K,
		    sizeof(int2)) ||
	    scratch(s, (void **)&s->pick, 4, sizeof(int)))
		return -1;
	CUDA_CHECK(cudaMallocHost((void **)&s->in_host, (CHUNK + 1) * sizeof(int)));
	CUDA_CHECK(cudaMallocHost((void **)&s->logits_host, V * sizeof(float)));
	CUDA_CHECK(cudaMallocHost((void **)&s->sp_host, sizeof *s->sp_host));
	CUDA_CHECK(cudaMallocHost((void **)&s->pick_host, 3 * sizeof(int)));
	return 0;
}

/* For a model with quantized matrices: the quantized decode's shared-memory opt-in,
 * and the prefill's dequantization buffer, the largest quantized matrix or
 * DEQ_MAX_ELEMS weights, whichever is less (bigger ones go by tiles of rows). */
static int alloc_dequant(struct cu_state *s)
{
	const struct eng_config *c = s->c;
	if (!s->quantized)
		return 0;
	if (cu_qmatvec_setup(s->widest))
		return -1;
	size_t most = 0, K = c->hidden_size;
	if (s->lm_head.t != ENG_BF16) /* the embedding only ever has rows looked up */
		most = (size_t)s->lm_head.rows * K;
	for (int l = 0; l < c->num_layers; l++) {
		const struct cu_layer *L = &s->layers[l];
		const struct cu_mat *m[6] = {&L->qkv[0], &L->qkv[1],  &L->qkv[2],
					     &L->wo,     &L->gate_up, &L->down};
		size_t k[6] = {K, K, K, (size_t)s->q_dim, K, (size_t)c->intermediate_size};
		for (int i = 0; i < 6; i++)
			if (m[i]->w && m[i]->t != ENG_BF16 && (size_t)m[i]->rows * k[i] > most)
				most = (size_t)m[i]->rows * k[i];
	}
	s->deq_elems = most < DEQ_MAX_ELEMS ? most : DEQ_MAX_ELEMS;
	if ((size_t)s->widest > s->deq_elems)
		s->deq_elems = s->widest; /* a tile holds at least one row */
	return scratch(s, (void **)&s->deq, s->deq_elems, sizeof(bf16));
}

/* The context the free device memory holds: the requested one when it fits next to
 * RESERVE_BYTES, else the most that does (a multiple of CTX_QUANTUM), with a notice.
 * Per token: K and V of every layer and the RoPE tables. */
static int fit_context(struct cu_state *s, struct eng_backend_opts *o)
{
	const struct eng_config *c = s->c;
	size_t per_tok = 2 * (size_t)c->num_layers * s->kv_dim * sizeof(bf16) +
			 (size_t)c->head_dim * sizeof(float);
	size_t free_b = 0, total_b = 0;
	CUDA_CHECK(cudaMemGetInfo(&free_b, &total_b));
	size_t room = free_b > RESERVE_BYTES ? free_b - RESERVE_BYTES : 0;
	if ((size_t)o->ctx * per_tok <= room)
		return 0;
	size_t fit = room / per_tok / CTX_QUANTUM * CTX_QUANTUM;
	if (fit < CTX_QUANTUM)
		return err_set("cuda: no room for a KV cache: %.2f GB of device memory are free "
			       "after the weights, %d tokens need %.2f GB (use --backend cpu)",
			       free_b / 1e9, CTX_QUANTUM, (double)CTX_QUANTUM * per_tok / 1e9);
	if (o->notice) {
		char msg[256];
		snprintf(msg, sizeof msg,
			 "cuda: a %d-token KV cache needs %.2f GB but %.2f GB of "
			 "device memory are free; the context is %zu tokens",
			 o->ctx, (double)o->ctx * per_tok / 1e9, free_b / 1e9, fit);
		o->notice(msg);
	}
	o->ctx = (int)fit;
	return 0;
}

/* The KV cache, the RoPE tables and the decode partials: sizes set by the context. */
static int alloc_context(struct cu_state *s)
{
	const struct eng_config *c = s->c;
	size_t ctx = s->ctx, hd = c->head_dim, H = c->num_heads;
	s->kv_bytes = 2 * (size_t)c->num_layers * ctx * s->kv_dim * sizeof(bf16);
	CUDA_CHECK(cudaMalloc((void **)&s->k_cache, s->kv_bytes / 2));
	CUDA_CHECK(cudaMalloc((void **)&s->v_cache, s->kv_bytes / 2));
	if (scratch(s, (void **)&s->rope_cos, ctx * hd / 2, sizeof(float)) ||
	    scratch(s, (void **)&s->rope_sin, ctx * hd / 2, sizeof(float)) ||
	    scratch(s, (void **)&s->part, H * s->max_splits * (hd + 2), sizeof(float)))
		return -1;
	/* RoPE tables computed on the host exactly as the CPU backend does */
	float *cs = (float *)malloc(ctx * hd / 2 * sizeof(float));
	float *sn = (float *)malloc(ctx * hd / 2 * sizeof(float));
	if (!cs || !sn) {
		free(cs);
		free(sn);
		return err_set("cuda: out of host memory for the RoPE tables");
	}
	rope_table(c, s->ctx, cs, sn);
	cudaError_t e1 =
		cudaMemcpy(s->rope_cos, cs, ctx * hd / 2 * sizeof(float), cudaMemcpyHostToDevice);
	cudaError_t e2 =
		cudaMemcpy(s->rope_sin, sn, ctx * hd / 2 * sizeof(float), cudaMemcpyHostToDevice);
	free(cs);
	free(sn);
	CUDA_CHECK(e1);
	CUDA_CHECK(e2);
	return 0;
}

/* The device facts the launchers need (struct cu_device), read once: the device the
 * stream and every allocation go to. */
static int query_device(struct cu_device *d)
{
	int dev = 0, major = 0;
	if (cudaGetDevice(&dev) != cudaSuccess ||
	    cudaDeviceGetAttribute(&d->sms, cudaDevAttrMultiProcessorCount, dev) != cudaSuccess ||
	    cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev) != cudaSuccess)
		return err_set("cuda backend: cannot query the device: %s",
			       cudaGetErrorString(cudaGetLastError()));
	d->pdl = major >= 9;
	return 0;
}

static void *cuda_init(struct eng_model *m, struct eng_backend_opts *o)
{
	const struct eng_config *c = eng_model_config(m);
	const struct eng_weights *w = eng_model_weights(m);
	if (o->kv_f32) {
		err_set("cuda backend: the fp32 KV cache is CPU-only");
		return NULL;
	}
	if (c->head_dim > CU_MAX_HEAD_DIM || c->head_dim % 8 ||
	    c->num_heads / c->num_kv_heads > 8) {
		err_set("cuda backend: head_dim %d with %d query heads per kv head is not "
			"supported (head_dim a multiple of 8 up to %d, at most 8 heads per kv "
			"head)",
			c->head_dim, c->num_heads / c->num_kv_heads, CU_MAX_HEAD_DIM);
		return NULL;
	}
	struct cu_state *s = (struct cu_state *)calloc(1, sizeof *s);
	if (!s || !(s->layers = (struct cu_layer *)calloc(c->num_layers, sizeof *s->layers))) {
		free(s);
		err_set("cuda backend: out of memory");
		return NULL;
	}
	s->c = c;
	s->q_dim = c->num_heads * c->head_dim;
	s->kv_dim = c->num_kv_heads * c->head_dim;
	s->qkv_dim = s->q_dim + 2 * s->kv_dim;
	s->use_graph = !o->cuda_no_graph;
	s->no_sampling = o->cuda_no_sampling;
	s->widest = c->hidden_size > s->q_dim ? c->hidden_size : s->q_dim;
	if (c->intermediate_size > s->widest)
		s->widest = c->intermediate_size;
	if (query_device(&s->dev) || cu_matvec_setup(s->widest) ||
	    cu_attention_setup(c->head_dim, c->num_heads / c->num_kv_heads)) {
		cuda_free(s);
		return NULL;
	}
	if (cudaStreamCreateWithFlags(&s->stream, cudaStreamNonBlocking) != cudaSuccess ||
	    cublasCreate(&s->blas) != CUBLAS_STATUS_SUCCESS ||
	    cublasSetStream(s->blas, s->stream) != CUBLAS_STATUS_SUCCESS) {
		err_set("cuda backend: cannot create the stream or the cuBLAS handle");
		cuda_free(s);
		return NULL;
	}
	/* weights first, then what a chunk needs, then the KV cache in what is left */
	if (cu_upload_weights(s, w, o->progress) || alloc_dequant(s) || alloc_scratch(s) ||
	    fit_context(s, o)) {
		cuda_free(s);
		return NULL;
	}
	s->ctx = o->ctx;
	/* decode attention splits: four blocks per SM over the kv heads (a split holds at
	 * least 16 keys) */
	s->max_splits = CEIL_DIV(4 * s->dev.sms, c->num_kv_heads);
	if (s->max_splits > CEIL_DIV(s->ctx, 16))
		s->max_splits = CEIL_DIV(s->ctx, 16);
	if (s->max_splits > CU_MAX_SPLITS)
		s->max_splits = CU_MAX_SPLITS;
	if (alloc_context(s)) {
		cuda_free(s);
		return NULL;
	}
	return s;
}

/* Capture buffers are allocated the first time capture is turned on (for a long
 * context they are large: layers x heads x ctx floats). Without the memory, capture
 * stays off and eng_attention finds nothing. */
static void cuda_set_capture(void *vs, bool on)
{
	struct cu_state *s = (struct cu_state *)vs;
	const struct eng_config *c = s->c;
	size_t n = (size_t)c->num_layers * c->num_heads * s->ctx;
	if (on && !s->cap) {
		if (cudaMalloc((void **)&s->cap, n * sizeof(float)) != cudaSuccess) {
			cudaGetLastError();
			s->cap = NULL;
		} else if (!(s->cap_host = (float *)malloc(n * sizeof(float)))) {
			cudaFree(s->cap);
			s->cap = NULL;
		} else {
			s->scratch_bytes += n * sizeof(float);
		}
	}
	s->capture = on && s->cap;
	if (!on)
		s->cap_len = 0;
}

static const float *cuda_attention(void *vs, int layer, int head, int *len)
{
	struct cu_state *s = (struct cu_state *)vs;
	*len = 0;
	if (!s->cap_len || layer < 0 || layer >= s->c->num_layers || head < 0 ||
	    head >= s->c->num_heads)
		return NULL;
	*len = s->cap_len;
	return s->cap_host + ((size_t)layer * s->c->num_heads + head) * s->ctx;
}

static void cuda_stats(void *vs, struct eng_backend_stats *out)
{
	struct cu_state *s = (struct cu_state *)vs;
	memset(out, 0, sizeof *out);
	out->weight_bytes = s->weight_bytes;
	out->kv_bytes_allocated = s->kv_bytes;
	out->kv_bytes_per_token = s->kv_bytes / s->ctx;
	out->scratch_bytes = s->scratch_bytes;
	out->graph_bytes = s->graph[STEP_LOGITS].bytes + s->graph[STEP_SAMPLE].bytes;
	cudaMemGetInfo(&out->device_free, &out->device_total);
}

static int cuda_measure(void *vs, const struct eng_measure_request *rq, struct eng_peaks *out)
{
	struct cu_state *s = (struct cu_state *)vs;
	if (rq->gemm_m < 1 || rq->gemm_n < 1 || rq->gemm_k < 1)
		return err_set("cuda backend: GEMM shape %dx%dx%d", rq->gemm_m, rq->gemm_n,
			       rq->gemm_k);
	return cu_measure_peaks(s->blas, s->stream, rq->gemm_m, rq->gemm_n, rq->gemm_k, out);
}

static const struct eng_backend_ops cuda_ops = {
	"cuda",         cuda_init,  cuda_free,      cuda_forward,        cuda_set_capture,
	cuda_attention, cuda_stats, cuda_sample_ok, cuda_forward_sample, cuda_measure,
	NULL, /* prefill_min: no bit-for-bit promise between prefill and decode here */
};

const struct eng_backend_ops *cuda_backend_ops(void)
{
	int count = 0;
	cudaError_t e = cudaGetDeviceCount(&count);
	if (e != cudaSuccess || count == 0) {
		err_set("no usable CUDA device (%s)",
			e != cudaSuccess ? cudaGetErrorString(e) : "none found");
		cudaGetLastError(); /* clear the sticky "no device" error */
		return NULL;
	}
	return &cuda_ops;
}
