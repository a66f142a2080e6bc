/* train_backend.h — what train.c shares with the training backends (engine/cpu/
 * train_cpu.c, the CUDA module's train.cu): the trainer object, the order of its
 * parameters, and the table of functions a backend implements. Internal to engine/. */
#ifndef QWENCHAT_TRAIN_BACKEND_H
#define QWENCHAT_TRAIN_BACKEND_H

#include "engine/train.h"

/* The tensors of one layer, in the order of eng_param (train.h). */
enum train_role {
	TR_IN_NORM,
	TR_WQ,
	TR_WK,
	TR_WV,
	TR_WO,
	TR_Q_NORM,
	TR_K_NORM,
	TR_POST_NORM,
	TR_GATE,
	TR_UP,
	TR_DOWN,
	TR_PER_LAYER
};

struct train_ops {
	const char *name;
	/* The plan for these options (train.c adds the parameters' own arrays). */
	int (*plan)(const struct eng_config *c, const struct eng_train_options *o,
		    struct eng_train_plan *p);
	/* Allocates the backend's state; t's parameters exist (their host arrays on the
	 * CPU). NULL on error (err_set). */
	void *(*init)(struct eng_trainer *t);
	void (*free)(void *st);
	/* eng_trainer_micro (backward) or eng_trainer_eval (not); pos is never NULL here
	 * and has been checked (train.c). */
	int (*micro)(void *st, const int32_t *inputs, const int32_t *targets, const int32_t *pos,
		     bool backward, double *loss_sum, int64_t *count);
	int (*zero_grad)(void *st);
	int (*finish_grads)(void *st, double scale, double clip, double *norm);
	int (*adamw)(void *st, const struct eng_adamw *h, int64_t step);
	/* The host arrays from the device and back (NULL on the CPU). */
	int (*download)(void *st);
	int (*upload)(void *st);
	double (*peak_gflops)(void *st);
	bool (*exact)(void *st); /* whether the products are fp32 */
	/* The kernel set whose bits the step has (eng_trainer_kernels); NULL: none. */
	const char *(*kernels)(void *st);
};

struct eng_trainer {
	struct eng_config c;
	struct eng_train_options o;
	struct eng_train_plan plan;
	int nparams;
	int nbase; /* the model's own tensors: params[0, nbase); LoRA's adapters follow */
	struct eng_param *params;
	char *names;  /* the parameters' names, one allocation */
	float *host;  /* w of every parameter, then g, m, v of the trained: one allocation */
	size_t host_floats; /* its size */
	size_t total; /* elements of all parameters */
	size_t trained; /* elements of the trained ones */
	/* LoRA: lora_a[l * TR_PER_LAYER + r] is the index of the A adapting layer l's
	 * matrix r (its B the next one), or -1; NULL without LoRA */
	int *lora_a;
	float lora_scale; /* alpha / rank */
	const struct train_ops *ops;
	void *st;
	int32_t *pos; /* (batch, ctx) 0 .. ctx-1 in every row: the positions of unpacked rows */
	double peak;  /* GFLOP/s: measured once (-1: it failed), raised to a faster step's */
};

/* The role of the matrix LoRA's target t adapts. */
static inline enum train_role train_lora_role(enum eng_lora_target t)
{
	static const enum train_role roles[ENG_LORA_TARGETS] = {TR_WQ,   TR_WK, TR_WV,  TR_WO,
								TR_GATE, TR_UP, TR_DOWN};
	return roles[t];
}

/* Index into t->params of layer l's tensor r; the embedding is 0, the final norm
 * train_final(t), the lm_head train_final(t) + 1 when untied. */
static inline int train_index(int layer, enum train_role r)
{
	return 1 + layer * TR_PER_LAYER + (int)r;
}
static inline int train_final(const struct eng_trainer *t)
{
	return 1 + t->c.num_layers * TR_PER_LAYER;
}
/* The lm_head's parameter: the embedding's when tied. */
static inline const struct eng_param *train_lm_head(const struct eng_trainer *t)
{
	return t->c.tie_word_embeddings ? &t->params[0] : &t->params[train_final(t) + 1];
}

/* Work items over every trained parameter (the frozen ones skipped), `chunk` elements
 * of one tensor each (a tensor's last piece may be shorter): how many there are, and
 * the tensor and range [*k0, *k1) of item `it`. The optimizer and the initial draw
 * share them. */
int train_pieces(const struct eng_trainer *t, int64_t chunk);
struct eng_param *train_piece(struct eng_trainer *t, int64_t chunk, int it, int64_t *k0,
			      int64_t *k1);

const struct train_ops *train_cpu_ops(void);

#endif
