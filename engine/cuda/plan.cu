/* plan.cu — the backend set up and torn down: the device's facts queried once, the
 * weights uploaded (upload.cu), then the buffers of one chunk, then the KV cache in the
 * device memory that is left, the context shrunk when it does not fit; the capture
 * buffers on first use. */
#include <stdio.h>
#include <stdlib.h>

#include "engine/cuda/state.cuh"

extern "C" {
#include "engine/rope.h"
}

/* Device memory left free after the KV cache, for cuBLAS's workspace, the graphs
 * and the attention capture: the cache is shrunk rather than eat into it. */
#define RESERVE_BYTES ((size_t)512 << 20)
/* A shrunk context is a multiple of this many tokens. */
#define CTX_QUANTUM   256
/* Weights of a quantized matrix dequantized at a time for the prefill's GEMM (128 MB
 * of bf16): the 8B shape's gate/up (200 MB) in two tiles, the lm_head in ten, each
 * still a GEMM wide enough for cuBLAS's peak. */
#define DEQ_MAX_ELEMS ((size_t)64 << 20)

void cuda_free(void *vs)
{
	struct cu_state *s = (struct cu_state *)vs;
	if (!s)
		return;
	cu_drop_graph(&s->graph[STEP_LOGITS]);
	cu_drop_graph(&s->graph[STEP_SAMPLE]);
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

void *cuda_init(struct eng_model *m, struct eng_backend_opts *o)
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
void cuda_set_capture(void *vs, bool on)
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
