/* state.cuh — the CUDA backend's state, shared by the files of the inference backend:
 * setup and teardown (plan.cu), the weights on the device (upload.cu), the forward
 * pass (forward.cu, its GEMMs in gemm.cu), the steps that run it (step.cu) and the
 * backend's table (cuda.cu). */
#ifndef QWENCHAT_CUDA_STATE_CUH
#define QWENCHAT_CUDA_STATE_CUH

#include "engine/cuda/kernels.cuh"
#include "engine/cuda/quant.cuh"

/* Tokens per prefill chunk: bounds the activations' memory (the 8B shape: about
 * 0.4 GB) while a 2048-token prompt still runs as one set of wide GEMMs, which is
 * where cuBLAS reaches its peak. */
#define CHUNK      2048
/* Rows of the logits buffer: the chunk when every position's logits are asked for. */
#define LOGIT_ROWS 512

/* What a decode step hands back: the logits row, or the id sampled on the device. */
enum step_kind { STEP_LOGITS, STEP_SAMPLE };

/* One decode step recorded as a graph; rebuilt when the capture setting changes. */
struct step_graph {
	cudaGraphExec_t exec;
	bool capture; /* capture setting it was recorded with */
	size_t bytes; /* device memory its instantiation took */
};

/* A weight matrix on the device: bf16 (F16 and F32 files are converted at upload), or
 * ggml's blocks as the file stores them, each row padded to a multiple of 16 bytes
 * (quant.cuh). Each product dispatches on t, on the host: the bf16 path launches
 * exactly what it did before there were quantized types. */
struct cu_mat {
	const void *w;
	int t;         /* ENG_BF16 or a block-quantized enum eng_dtype */
	int rows;      /* M */
	size_t stride; /* bytes from one row to the next */
};

struct cu_layer {
	const bf16 *input_norm, *post_norm, *q_norm, *k_norm; /* (D), (D), (hd), (hd) */
	/* (q_dim + 2 kv_dim, D): q, k, v rows stacked in qkv[0] when the three have one
	 * device type; otherwise q, k and v apart (llama.cpp's _M mixes give attn_v
	 * more bits on some layers) */
	struct cu_mat qkv[3];
	int n_qkv;
	struct cu_mat wo;      /* (D, q_dim) */
	struct cu_mat gate_up; /* (2F, D): gate and up rows interleaved */
	struct cu_mat down;    /* (D, F) */
};

struct cu_state {
	const struct eng_config *c;
	int ctx, q_dim, kv_dim, qkv_dim, max_splits;
	struct cu_device dev; /* filled once by cuda_init */
	int widest; /* the longest vector a product takes or a chunk row holds: max(D, q_dim, F) */
	cudaStream_t stream;
	cublasHandle_t blas;
	char *weights; /* one device allocation for every tensor */
	size_t weight_bytes;
	struct cu_mat embed, lm_head; /* lm_head is embed when tied */
	const bf16 *final_norm;
	bool quantized; /* some matrix is block-quantized */
	bf16 *deq;      /* prefill: tiles of a quantized matrix dequantized for cuBLAS */
	size_t deq_elems;
	struct cu_layer *layers;
	bf16 *k_cache, *v_cache; /* (layer, Hkv, ctx, hd) */
	size_t kv_bytes;
	float *rope_cos, *rope_sin; /* (ctx, hd/2) */
	int *in;                    /* [pos, ids[0..CHUNK)] on the device */
	int *in_host;               /* pinned mirror of `in` */
	float *x;                   /* (CHUNK, D) residual stream */
	bf16 *xn;                   /* (CHUNK, max(D, q_dim, F)) GEMM inputs */
	float *qkv;                 /* (CHUNK, qkv_dim) */
	float *q;                   /* (CHUNK, q_dim) after norm + RoPE */
	bf16 *att;                  /* (CHUNK, q_dim) */
	bf16 *att_discard;          /* (q_dim) output of the capture-only decode pass */
	float *gate_up;             /* (CHUNK, 2F) */
	float *part;                /* (H, max_splits, hd + 2) decode partials */
	float *logits;              /* (LOGIT_ROWS, V) */
	float *logits_host;         /* (V) pinned, the decode graph's output */
	float *cap;                 /* (layer, H, ctx) captured softmax rows; allocated
	                                 * when capture is first turned on */
	float *cap_host;            /* the same on the host, copied after a forward */
	int cap_len;
	bool capture;                              /* asked for, and the buffers exist */
	struct cu_sample_params *sp_host, *sp_dev; /* sampling settings, pinned / device */
	int2 *cand;     /* (sample blocks * CU_SAMPLE_MAX_K) candidates */
	int *pick;      /* [id, draw used, first bad id, scratch] */
	int *pick_host; /* pinned mirror of pick[0..3) */
	size_t scratch_bytes;
	struct step_graph graph[2]; /* by enum step_kind */
	bool use_graph;             /* one CUDA graph per decode step (eng_options.cuda_no_graph) */
	bool no_sampling;           /* sample on the host (eng_options.cuda_no_sampling) */
};

/* Allocates the device buffer for every weight and uploads them (the gate and up rows
 * interleaved, q/k/v stacked when they share a type, norms as bf16); sets s->quantized.
 * progress may be NULL. */
int cu_upload_weights(struct cu_state *s, const struct eng_weights *w,
		      void (*progress)(size_t done_bytes, size_t total_bytes));

/* gemm.cu: out (n, ldo) columns [0, W->rows) (+)= in (n, K) . W^T, on the bf16 weights
 * or on tiles of a quantized W's rows dequantized into s->deq. */
int cu_mat_gemm(struct cu_state *s, float *out, int ldo, const bf16 *in, const struct cu_mat *W,
		int n, int K, bool acc);

/* forward.cu: enqueues one chunk of n tokens whose position and ids are in s->in; the
 * logits of the last token (all n: every token's, n <= LOGIT_ROWS) land in s->logits. */
int cu_forward_chunk(struct cu_state *s, int n, bool all);

/* step.cu: the forward entries of the backend's table, and the graphs' teardown. */
int cuda_forward(void *vs, const int32_t *ids, int n, int pos, float *logits, bool all);
bool cuda_sample_ok(void *vs, const struct eng_sampling *sp);
int cuda_forward_sample(void *vs, int32_t id, int pos, const struct eng_sampling *sp, int32_t *next,
			bool *used_uniform);
void cu_drop_graph(struct step_graph *g);

/* plan.cu: the entries that set the backend up, tear it down and turn capture on. */
void *cuda_init(struct eng_model *m, struct eng_backend_opts *o);
void cuda_free(void *vs);
void cuda_set_capture(void *vs, bool on);

#endif
