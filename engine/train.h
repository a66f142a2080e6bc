/* train.h — training a Qwen3 on the engine: fp32 master weights, their gradients and
 * AdamW moments, a forward pass that keeps what the backward needs, the backward of
 * every operation, the cross-entropy loss fused with the output projection in chunks
 * of tokens (B*T*vocab logits never exist at once), the global gradient norm with
 * clipping, and AdamW as torch.optim.AdamW computes it.
 *
 * The loop around a step (data, the learning-rate schedule, checkpoints, logging)
 * belongs to src/train; this is the arithmetic. A step is:
 *
 *     eng_trainer_zero_grad(t);
 *     for each micro-batch: eng_trainer_micro(t, inputs, targets, &loss, &count);
 *     eng_trainer_finish_grads(t, 1.0 / count, clip, &norm);  (mean loss, clipping)
 *     eng_trainer_adamw(t, &hyper, step + 1);
 *
 * Every result is deterministic for a given thread count: no reduction depends on
 * which thread finishes first, so a resumed run repeats an uninterrupted one bit for
 * bit. */
#ifndef QWENCHAT_TRAIN_H
#define QWENCHAT_TRAIN_H

#include <math.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "engine/engine.h"

struct eng_train_options {
	enum eng_backend_kind backend; /* CPU or CUDA (AUTO: CUDA when a GPU is usable) */
	int threads;                   /* CPU threads; 0 = every core */
	int batch, ctx;                /* a micro-batch: `batch` rows of `ctx` tokens */
	/* Every product in fp32. Otherwise the products take bf16 inputs with fp32 sums
	 * where the backend has fast bf16 kernels (AVX-512 BF16, tensor cores), the
	 * prefill's fast path. */
	bool exact;
	/* Keep only each layer's input and recompute the layer's forward during the
	 * backward: activation memory of one layer instead of all. */
	bool recompute;
	const char *cuda_module; /* as eng_options.cuda_module */
	/* CUDA, bf16 path: attention in tiles (flash-style) instead of over materialised
	 * T x T scores: less memory, but slower (BENCHMARKS.md), so off by default. */
	bool cuda_tiled_attention;
	const char *cpu_isa; /* as eng_options.cpu_isa (NULL: the best this CPU runs) */
	/* Make the attention probabilities (B x H x T x T floats a layer) again in the
	 * backward instead of keeping them: at long contexts most of the activations,
	 * for one more product of q and k and a softmax per head (the CPU backend; the
	 * results are the same bits). */
	bool recompute_probs;
	/* LoRA: rank > 0 freezes every weight of the model and trains, beside each
	 * matrix of lora_targets (bit r for enum eng_lora_target r) in every layer, a
	 * pair A (rank, in) and B (out, rank) that adds (alpha / rank) x A^T B^T to the
	 * product's output, as PEFT's LoRA does. The CPU backend's. */
	int lora_rank;
	double lora_alpha;
	unsigned lora_targets;
};

/* The matrices LoRA may adapt, named as PEFT's target_modules names them. */
enum eng_lora_target {
	ENG_LORA_Q,
	ENG_LORA_K,
	ENG_LORA_V,
	ENG_LORA_O,
	ENG_LORA_GATE,
	ENG_LORA_UP,
	ENG_LORA_DOWN,
	ENG_LORA_TARGETS
};
#define ENG_LORA_ALL ((1u << ENG_LORA_TARGETS) - 1)
/* "q_proj" ... "down_proj" */
const char *eng_lora_target_name(enum eng_lora_target t);

/* What a trainer allocates, in bytes: the figures of the memory plan printed before
 * the first step. */
struct eng_train_plan {
	int64_t params;      /* trained parameters (the tied embedding once) */
	int64_t frozen;      /* parameters held but not trained (LoRA's base model) */
	size_t weights;      /* fp32 weights, the frozen ones included */
	size_t grads;        /* fp32 gradients */
	size_t moments;      /* AdamW's two fp32 moments */
	size_t activations;  /* what the backward needs, for batch x ctx tokens */
	size_t scratch;      /* bf16 weight copies, the loss chunk, workspaces */
	size_t total;
	bool recompute;      /* the activations are one layer's (recomputed) */
	bool recompute_probs; /* the attention probabilities are made again */
	bool device;         /* held in GPU memory, not in the host's */
};

/* The plan for this config and these options without allocating anything.
 * 0 or -1 (err_set: a shape the trainer cannot run). */
int eng_train_plan(const struct eng_config *c, const struct eng_train_options *o,
		   struct eng_train_plan *out);

/* One tensor, in a fixed order: the embedding, then per layer input norm, q, k, v, o,
 * q norm, k norm, post norm, gate, up, down, then the final norm and, when untied, the
 * lm_head; with LoRA then the adapters, per layer and target A then B. Names and
 * shapes are the Hugging Face checkpoint's, an adapter's PEFT's
 * ("base_model.model.model.layers.3.mlp.up_proj.lora_A.weight"). The arrays are the
 * trainer's own host copies (on the GPU backend they are filled by
 * eng_trainer_download and read by eng_trainer_upload). */
struct eng_param {
	const char *name;  /* "model.layers.3.mlp.up_proj.weight" */
	int ndim;          /* 1 (norms) or 2 (matrices) */
	int64_t shape[2];  /* (rows, cols); shape[1] = 1 for a norm */
	int64_t n;         /* elements */
	float *w, *g;      /* (n) master weights and gradients */
	float *m, *v;      /* (n) AdamW's first and second moments */
	bool decay;        /* weight decay applies: the 2-D tensors, never the norms */
	bool frozen;       /* not trained (LoRA's base): g, m and v are NULL */
	int adapts;        /* an adapter: the index of the matrix it adapts; else -1 */
	bool lora_b;       /* an adapter's B (out, rank); else its A (rank, in) */
};

struct eng_trainer;

/* A trainer for this config: weights zero until initialised. NULL on error
 * (err_set: out of memory, a plan that does not fit, no such backend). The config is
 * copied. notice (may be NULL) gets one-line remarks such as a backend fallback. */
struct eng_trainer *eng_trainer_new(const struct eng_config *c, const struct eng_train_options *o,
				    void (*notice)(const char *msg));
void eng_trainer_free(struct eng_trainer *t);
const struct eng_config *eng_trainer_config(const struct eng_trainer *t);
/* "cpu" or "cuda", and whether the products are exact (fp32) or bf16. */
const char *eng_trainer_backend(const struct eng_trainer *t);
bool eng_trainer_exact(const struct eng_trainer *t);
/* The kernel set the step runs with, where another one gives other bits: on the CPU
 * its products' ("c", "avx2", "avx512", "avx512bf16", "amx"), on a GPU its attention's
 * ("tiled" or "materialised"). */
const char *eng_trainer_kernels(const struct eng_trainer *t);
void eng_trainer_get_plan(const struct eng_trainer *t, struct eng_train_plan *out);

int eng_trainer_nparams(const struct eng_trainer *t);
struct eng_param *eng_trainer_param(struct eng_trainer *t, int i);

/* Weights as transformers initialises a Qwen3: every matrix N(0, std) (std 0.02),
 * norm weights 1, from a seeded generator (the same seed, the same weights on every
 * backend); LoRA's adapters as eng_trainer_init_lora draws them. Moments zero. */
void eng_trainer_init_normal(struct eng_trainer *t, uint64_t seed, double std);
/* LoRA's adapters as PEFT initialises them: A uniform in +-1/sqrt(in) (its
 * kaiming_uniform with a = sqrt(5)) from a seeded generator, B zero, so that the
 * adapted model starts as the model. Moments zero. */
void eng_trainer_init_lora(struct eng_trainer *t, uint64_t seed);
/* LoRA's adapters from a PEFT adapter_model.safetensors (path): every adapter of the
 * trainer, named as PEFT names it (train.h's eng_param), of its shape and F32, F16 or
 * BF16; a lora_A or lora_B tensor the trainer has no adapter for is refused, so that
 * none is dropped. Moments zero. 0 or -1 (err_set naming the file and tensor). */
int eng_trainer_load_adapters(struct eng_trainer *t, const char *path);

/* The adapted matrix i with its adapter merged: w + (alpha / rank) B A, rows [r0, r1)
 * into out ((r1 - r0) x cols); without an adapter the matrix as it is. */
void eng_trainer_merged_rows(const struct eng_trainer *t, int i, int64_t r0, int64_t r1,
			     float *out);

/* A digest of the frozen weights' bits (LoRA's base model): a resumed run reads them
 * again and checks that they are the ones it trained on. 0 without frozen weights. */
uint64_t eng_trainer_frozen_digest(const struct eng_trainer *t);

/* Weights from a model of the same config: BF16, F16 or F32 tensors converted to fp32
 * exactly; a quantized tensor is refused ("NAME is Q4_K: train from the bf16 model")
 * unless it is frozen (LoRA's base), which is dequantized as ggml does. Moments zero.
 * With LoRA these are the frozen weights; the adapters are left as they are. 0 or -1
 * (err_set). */
int eng_trainer_load(struct eng_trainer *t, const struct eng_model *m);
/* GPU backend: the device's weights, gradients and moments into the host arrays of
 * eng_param (download), or the host arrays to the device (upload, after the caller
 * filled them from a checkpoint). No-ops on the CPU. 0 or -1 (err_set). */
int eng_trainer_download(struct eng_trainer *t);
int eng_trainer_upload(struct eng_trainer *t);

/* Gradients to zero: the start of a step. */
int eng_trainer_zero_grad(struct eng_trainer *t);

/* One micro-batch: inputs and targets are (batch, ctx) token ids, row b predicting
 * targets[b][i] from inputs[b][0..i]; a target of -1 is not scored. Adds the
 * gradients of the summed cross-entropy of the scored targets to the accumulated
 * ones, *loss_sum the summed loss (nats) and *count the targets scored. Ids are
 * checked (< vocab). 0 or -1 (err_set).
 *
 * pos (batch, ctx), or NULL for 0, 1, ... ctx-1 in every row, packs several
 * documents in a row as Hugging Face's position_ids do: a position of 0 starts a
 * document, which then counts up by one a token (pos[b][0] = 0, and pos[b][i] is 0
 * or pos[b][i-1] + 1). RoPE takes these positions and a token attends only to the
 * tokens of its own document, so a row of packed documents computes exactly what
 * one row per document would. */
int eng_trainer_micro(struct eng_trainer *t, const int32_t *inputs, const int32_t *targets,
		      const int32_t *pos, double *loss_sum, int64_t *count);
/* The same loss without gradients (evaluation): the forward alone. */
int eng_trainer_eval(struct eng_trainer *t, const int32_t *inputs, const int32_t *targets,
		     const int32_t *pos, double *loss_sum, int64_t *count);

/* After a step's micro-batches: every gradient times `scale` (1 / targets scored:
 * the mean loss), then *norm = the global L2 norm of all gradients, and when clip > 0
 * and the norm exceeds it, every gradient times clip / (norm + 1e-6)
 * (torch.nn.utils.clip_grad_norm_). The norm is the one before clipping. A
 * non-finite norm is returned as it is and clips nothing. 0 or -1 (err_set). */
int eng_trainer_finish_grads(struct eng_trainer *t, double scale, double clip, double *norm);

/* AdamW as torch.optim.AdamW (not amsgrad, not maximize): for each parameter,
 * w -= lr * weight_decay * w when it decays (the pre-update weight), then
 * m = beta1 m + (1 - beta1) g, v = beta2 v + (1 - beta2) g^2,
 * w -= lr / (1 - beta1^step) * m / (sqrt(v) / sqrt(1 - beta2^step) + eps).
 * step counts from 1. The fp32 kernels take 1 - beta rounded once from the double (as
 * PyTorch's fp32 AdamW does), not 1 - (float)beta: with beta2 = 0.99999 the latter is
 * 2e-3 off, and a beta2 that rounds to 1 in fp32 would leave v at 0. 0 or -1 (err_set). */
struct eng_adamw {
	double lr, beta1, beta2, eps, weight_decay;
};
int eng_trainer_adamw(struct eng_trainer *t, const struct eng_adamw *h, int64_t step);

/* 0 when path is a safetensors file of the layout every loader requires (its header
 * parses, its tensors cover the data with no hole, no overlap and nothing after);
 * -1 with err_set naming path and what is wrong. */
int eng_safetensors_check(const char *path);

/* The bias correction 1 - beta^step, to the last bits where beta is near 1. */
static inline double eng_adamw_bias(double beta, int64_t step)
{
	return -expm1((double)step * log(beta));
}

/* The measured rate of the backend's matrix products at this model's shapes, in
 * GFLOP/s (the "share of the peak" the progress line shows), and the model FLOPs of
 * one micro-batch's forward and backward (6 x parameters touched per token plus
 * attention's over the keys each query sees: pos as for eng_trainer_micro, NULL for
 * one document a row). */
double eng_trainer_peak_gflops(struct eng_trainer *t);
/* The share of that peak a step running at gflops takes; the peak is raised to gflops
 * first where a step outran it (the machine was busier when it was measured). 0 when no
 * peak could be measured. */
double eng_trainer_peak_share(struct eng_trainer *t, double gflops);
double eng_trainer_step_flops(const struct eng_trainer *t, const int32_t *pos);

#endif
