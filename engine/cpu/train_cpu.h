/* train_cpu.h — the CPU training backend's state, shared by its files: train_cpu.c
 * (the step: embedding, layers, loss, optimizer), train_layer.c (one layer forward
 * and backward, attention included) and train_ops.c (the element-wise operations
 * and their backward). Internal to engine/cpu/. */
#ifndef QWENCHAT_CPU_TRAIN_CPU_H
#define QWENCHAT_CPU_TRAIN_CPU_H

#include "engine/cpu/gemm.h"
#include "engine/cpu/kernels.h"
#include "engine/cpu/pool.h"
#include "engine/train_backend.h"

/* Tokens of a block of the element-wise passes: each block writes its own share of a
 * norm weight's gradient, summed over the blocks in order afterwards (the same sum
 * whichever thread took a block). */
#define TR_BLOCK 32

/* Queries of attention at a time: a block's probabilities and their gradient
 * (TR_QBLOCK x T floats each) stay in the cache between the products that make and
 * read them, where a whole head's (T x T) went to memory and back (BENCHMARKS.md).
 * A multiple of gemm.c's k-block (train_layer.c checks), so that a product split at
 * a block's seam sums in the order of one product over all the keys: the same bits. */
#define TR_QBLOCK 256

/* Rows of a thread's block of attention probabilities at T tokens. */
static inline size_t tr_qblock_rows(int T)
{
	return T < TR_QBLOCK ? (size_t)T : TR_QBLOCK;
}

/* What the backward of one layer reads, for N = batch x ctx tokens (row-major). */
struct tr_act {
	float *rstd1;         /* (N) 1/rms of the layer's input */
	float *xn1;           /* (N, D) rmsnorm(x) * input_norm */
	float *q_raw, *k_raw; /* (N, q_dim), (N, kv_dim) projections before the q/k norms */
	float *rstd_q;        /* (N, H) */
	float *rstd_k;        /* (N, Hkv) */
	float *q, *k, *v;     /* (N, q_dim), (N, kv_dim) x 2: normed and rotated; v as made */
	float *p;             /* (B, H, T, T) softmax of the scores, zero above the diagonal;
				 NULL: made again in the backward (keep_probs false) */
	float *att;           /* (N, q_dim) attention output */
	float *xmid;          /* (N, D) x after the attention residual */
	float *rstd2;         /* (N) */
	float *xn2;           /* (N, D) */
	float *gate, *up, *h; /* (N, F) x 3: h = silu(gate) * up */
	/* LoRA: (N, rank) the input's product with A, times alpha / rank, of each adapted
	 * matrix (by its role; NULL where none) */
	float *lora_u[TR_PER_LAYER];
};

struct train_cpu {
	struct eng_trainer *t;
	const struct eng_config *c;
	int B, T, N, D, F, H, Hkv, hd, q_dim, kv_dim, V;
	float eps;
	struct cpu_pool *pool;
	int threads;
	const struct cpu_kernels *k;
	struct gemm_ctx *gm;
	enum gemm_prec prec;
	bool recompute;
	float *cos, *sin; /* (T, hd/2) RoPE for positions 0..T-1 */
	const int32_t *ids;  /* the micro-batch's inputs (N) */
	const int32_t *pos;  /* (N) their positions: where documents start (train.h) */
	float *x;            /* (L+1, N, D) the residual stream at each layer boundary */
	struct tr_act *act;  /* num_layers of them, or one when recomputing */
	float *rstd_f, *xf;  /* (N), (N, D) the final norm */
	/* gradients of activations */
	float *dx, *dxn;       /* (N, D) x 2 */
	float *dh, *dup;       /* (N, F) x 2: dh becomes d gate in place */
	float *datt, *dq;      /* (N, q_dim) x 2 */
	float *dk, *dv;        /* (N, kv_dim) x 2 */
	float *lora_du;        /* (N, rank) LoRA: the gradient of an adapter's lora_u */
	bool keep_probs;       /* the layers keep their attention probabilities (tr_act.p) */
	float *probs;          /* (threads, TR_QBLOCK, T) a query block's, when not kept */
	float *dp;             /* (threads, TR_QBLOCK, T) their gradient */
	float *dwpart;         /* (blocks, max(D, hd)) norm gradients per token block */
	float *logits;         /* (chunk, V) the loss's slice of logits */
	int chunk;
	double *loss_part;     /* (chunk) per row */
	void *mem;             /* the one allocation the arrays are cut from */
	size_t mem_bytes;      /* its size */
};

/* train_layer.c */
void tr_layer_forward(struct train_cpu *s, int l, struct tr_act *a);
/* dx holds d loss / d (the layer's output) and becomes d loss / d (its input); the
 * layer's weight gradients are added to. */
void tr_layer_backward(struct train_cpu *s, int l, struct tr_act *a);

/* train_ops.c: the element-wise steps over n rows, each run over the pool in blocks
 * of TR_BLOCK rows. */
void tr_rmsnorm_fwd(struct train_cpu *s, float *y, float *rstd, const float *x, const float *w,
		    int n, int D);
/* dx (+)= the backward of y = rmsnorm(x) * w for dy (add: dx is added to); dw += its
 * gradient (dw NULL: a frozen weight's, not wanted). */
void tr_rmsnorm_bwd(struct train_cpu *s, float *dx, float *dw, const float *dy, const float *x,
		    const float *rstd, const float *w, int n, int D, bool add);
/* sum_i a[i] * b[i] (w NULL) or sum_i (a[i] * w[i]) * b[i] (the product in fp32 first),
 * in double. */
double tr_dot(const float *a, const float *w, const float *b, int n);
/* q/k norms and RoPE of every head of every token (at its position s->pos). */
void tr_qk_fwd(struct train_cpu *s, struct tr_act *a, const float *qw, const float *kw);
/* dq, dk (after RoPE) into the gradients of q_raw, k_raw in place; dqw, dkw += the norm
 * weights' gradients (NULL both: frozen). */
void tr_qk_bwd(struct train_cpu *s, struct tr_act *a, const float *qw, const float *kw,
	       float *dqw, float *dkw);
void tr_swiglu_fwd(struct train_cpu *s, float *h, const float *g, const float *u, int n);
/* dh into d gate in place, d up into du. */
void tr_swiglu_bwd(struct train_cpu *s, float *dh, float *du, const float *g, const float *u,
		   int n);
/* dst = src (n floats), over the pool. */
void tr_copy(struct train_cpu *s, float *dst, const float *src, size_t n);

/* The parameter of layer l's tensor r. */
static inline struct eng_param *tr_param(struct train_cpu *s, int l, enum train_role r)
{
	return &s->t->params[train_index(l, r)];
}

#endif
