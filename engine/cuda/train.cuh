/* train.cuh — the CUDA training backend (train.cu: a layer's step; train_step.cu: the
 * micro-batch and the optimizer; train_kernels.cu: the element-wise kernels and their
 * backward; train_attn.cu: attention in tiles). The same arithmetic
 * as the CPU's (engine/cpu/train_*.c), on the device: cuBLAS for every product (fp32 on
 * the exact path; bf16 inputs with fp32 sums for the weights' products and TF32, or
 * bf16 with TRC_BF16_ATTENTION, for attention's otherwise), kernels for the rest.
 * Norm-weight gradients and the gradient norm are summed per block into arrays and the
 * arrays in order, never with atomics, so that a run repeats bit for bit. */
#ifndef QWENCHAT_CUDA_TRAIN_CUH
#define QWENCHAT_CUDA_TRAIN_CUH

#include "engine/cuda/common.cuh"

extern "C" {
#include "engine/train_backend.h"
}

/* Attention's products with bf16 operands on the fast path, the softmax p and its
 * gradient kept in bf16 (the operands of the products that read them), rather than
 * TF32 over fp32 arrays: the T x T arrays' traffic bounds the materialised attention,
 * and bf16 halves it. Off until a GPU has checked it (test_train_cuda) and measured
 * it against TF32 (benchmarks/gpu-train.sh): a module for that is built with
 * -DTRC_BF16_ATTENTION=1 (docs/cuda.md). Only for head_dim a multiple of 8: the
 * batched products' bf16 operands then start 16-byte aligned, as cuBLAS's kernels
 * for them expect. */
#ifndef TRC_BF16_ATTENTION
#define TRC_BF16_ATTENTION 0
#endif

/* Tokens of a block whose norm-weight gradient is summed apart: few, so that N / TRC_BLOCK
 * blocks fill the device. */
#define TRC_BLOCK 8

/* x (N, D) = rows ids of E. */
int trc_embed(float *x, const float *E, const int32_t *ids, int N, int D, cudaStream_t s);
/* gE[id] += the rows of dx at that id's positions, in position order: `uniq` ids,
 * their positions pos[start[u] .. start[u + 1]). */
int trc_embed_back(float *gE, const float *dx, const int32_t *uniq, const int32_t *start,
		   const int32_t *pos, int nuniq, int D, cudaStream_t s);
/* y (n, D) = x r w, r = 1 / sqrt(mean(x^2) + eps) into rstd (n). */
int trc_rmsnorm(float *y, float *rstd, const float *x, const float *w, int n, int D, float eps,
		cudaStream_t s);
/* dx (+)= the backward for dy; dw += the weight's gradient (part: (n/TRC_BLOCK, D)). */
int trc_rmsnorm_back(float *dx, float *dw, float *part, const float *dy, const float *x,
		     const float *rstd, const float *w, int n, int D, bool add, cudaStream_t s);
/* q, k = rope(rmsnorm_head(raw) w) for every head of N tokens (token t at position
 * pos[t], train.h's positions). */
struct trc_qk {
	float *q, *k, *rstd_q, *rstd_k;
	const float *q_raw, *k_raw, *qw, *kw, *cos, *sin;
	const int32_t *pos;
	int N, T, H, Hkv, hd;
	float eps;
};
int trc_qk(const struct trc_qk *a, cudaStream_t s);
/* dq, dk (of q, k) into those of q_raw, k_raw in place; dqw, dkw += the norms'. */
int trc_qk_back(const struct trc_qk *a, float *dq, float *dk, float *dqw, float *dkw, float *part,
		cudaStream_t s);
int trc_swiglu(float *h, const float *g, const float *u, size_t n, cudaStream_t s);
/* dh into d gate in place, d up into du. */
int trc_swiglu_back(float *dh, float *du, const float *g, const float *u, size_t n, cudaStream_t s);
/* Rows of p (B, H, T, T), row i of a head's block of T: softmax(scale p) over the keys
 * of its document up to i (pos: (B, T) positions), zero elsewhere. */
int trc_softmax_causal(float *p, const int32_t *pos, int rows, int T, int H, float scale,
		       cudaStream_t s);
/* d (the gradient of p) into that of the scores: p (d - rowsum(d p)) scale. */
int trc_softmax_back(float *d, const float *p, const int32_t *pos, int rows, int T, int H,
		     float scale, cudaStream_t s);
/* With bf16 attention operands: softmax of the fp32 scores into p in bf16; and the
 * gradient of the scores from d (fp32) and p, written in bf16 over p. */
int trc_softmax_causal_bf16(bf16 *p, const float *scores, const int32_t *pos, int rows, int T,
			    int H, float scale, cudaStream_t s);
int trc_softmax_back_bf16(bf16 *p, const float *d, const int32_t *pos, int rows, int T, int H,
			  float scale, cudaStream_t s);
/* Rows of logits (rows, V) with targets: loss[r] (double) = logsumexp - z[target] (0 for a
 * target < 0); with backward each row becomes softmax - onehot (zero when not scored),
 * in z, or in bf16 into zh (rows, V) when zh is not NULL. */
int trc_cross_entropy(float *z, bf16 *zh, const int32_t *targets, double *loss, int rows, int V,
		      bool backward, cudaStream_t s);
/* x (n) uniform in [-1, 1), a hash of the index and seed (trc_peak's operands). */
int trc_fill_random(float *x, size_t n, uint32_t seed, cudaStream_t s);
/* x bf16 = x fp32 (round to nearest even). */
int trc_to_bf16(bf16 *dst, const float *src, size_t n, cudaStream_t s);
/* g *= scale and part[block] = the block's sum of squares (double), TRC_SQ_BLOCKS
 * blocks; g *= scale alone when part is NULL. */
#define TRC_SQ_BLOCKS 528 /* four blocks of 512 threads on each of 132 SMs */
int trc_scale(float *g, size_t n, float scale, double *part, cudaStream_t s);
/* AdamW on n elements (train.h's formula); decay: 1 - lr wd or 1; wh (unless NULL)
 * gets the new weights in bf16. */
struct trc_adamw {
	float decay, beta1, beta2, c1, c2, eps, step, rbc2; /* c = 1 - beta, rounded from the
							     double; step = lr / (1 - beta1^t);
							     rbc2 = 1/sqrt(bc2) */
};
int trc_adamw(float *w, const float *g, float *m, float *v, bf16 *wh, size_t n, struct trc_adamw h,
	      cudaStream_t s);

/* Causal attention in tiles (train_attn.cu, the fast path): att = softmax(scale q k^T) v
 * keeping only each row's log-sum-exp (lse, (B, H, T)); the backward recomputes the
 * softmax from it and writes dq, dk, dv (delta: (B, H, T) scratch). */
struct trc_flash {
	float *att, *lse, *delta, *dq, *dk, *dv;
	const float *q, *k, *v, *datt;
	int B, T, H, Hkv, hd;
	float scale;
};
/* Whether the tiled kernels exist for this head_dim (32, 64, 128) and the device has
 * the shared memory they take (set up on the first call). */
bool trc_flash_usable(int hd);
int trc_flash_forward(const struct trc_flash *a, cudaStream_t s);
int trc_flash_backward(const struct trc_flash *a, cudaStream_t s);

/* What a layer's backward reads (as engine/cpu/train_cpu.h's struct tr_act). */
struct trc_act {
	float *rstd1, *xn1, *q_raw, *k_raw, *rstd_q, *rstd_k, *q, *k, *v, *p, *att, *xmid, *rstd2,
		*xn2, *gate, *up, *h;
	/* attention's batched products: pointer arrays on the device (see trc_make_ptrs) */
	const void **ptr;
};

/* The backend's state (train_step.cu makes it). */
struct trc {
	struct eng_trainer *t;
	const struct eng_config *c;
	int B, T, N, D, F, H, Hkv, G, hd, q_dim, kv_dim, V, layers;
	float eps;
	bool exact;
	bool attn_bf16; /* the materialised attention's operands in bf16 (TRC_BF16_ATTENTION) */
	bool tiles; /* the tiled attention was asked for and this device runs it */
	bool tiled; /* this micro-step's attention is in tiles (train_attn.cu); act->p then
		     * holds only the lse */
	cudaStream_t stream;
	cublasHandle_t blas;
	float *dev;  /* w | g | m | v of every parameter */
	bf16 *wh;    /* bf16 copies of the weights (fast path) */
	float **w, **g, **m, **v; /* per parameter, into dev */
	bf16 **whp;
	char *mem;   /* activations and scratch, one allocation */
	float *x, *rstd_f, *xf, *dx, *dxn, *dh, *dup, *datt, *dq, *dk, *dv, *dp, *part, *logits;
	float *cos, *sin;
	bf16 *ha, *hb; /* bf16 operands of the fast path */
	size_t hsize;
	double *loss_d, *sq_d; /* per row (N); per block of the norm */
	int32_t *ids_d, *tgt_d, *emb_d;   /* inputs, targets, the embedding's backward lists */
	int32_t *pos_d;                    /* the inputs' positions (train.h) */
	int32_t *ids_h, *emb_h;            /* pinned */
	double *loss_h, *sq_h;             /* pinned */
	struct trc_act *act;
	int chunk;
	size_t bytes;
};

/* train.cu */
size_t trc_act_floats(const struct eng_config *c, int B, int T);
int trc_loss_chunk(const struct eng_config *c, int N);
/* Floats of everything but the parameters; *half: elements of each bf16 operand buffer. */
size_t trc_scratch_floats(const struct eng_config *c, const struct eng_train_options *o,
			  size_t *half);
int trc_plan(const struct eng_config *c, const struct eng_train_options *o,
	     struct eng_train_plan *p);
int trc_make_ptrs(struct trc *s, struct trc_act *a);
/* c (n, m) (+)= a . b (gemm.h's convention); ah, bh: bf16 copies (fast path) or NULL. */
int trc_mm(struct trc *s, float *c, int ldc, bool acc, const float *a, const bf16 *ah, int lda,
	   bool at, const float *b, const bf16 *bh, int ldb, bool bt, int n, int m, int k);
/* x's bf16 copy in buf (fast path), NULL on the exact one. */
const bf16 *trc_half(struct trc *s, bf16 *buf, const float *x, size_t n);
int trc_layer_forward(struct trc *s, int l, struct trc_act *a);
int trc_layer_backward(struct trc *s, int l, struct trc_act *a);

/* The trainer's table (train_step.cu). */
const struct train_ops *cuda_train_ops(void);

#endif
