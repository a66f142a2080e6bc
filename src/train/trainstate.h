/* trainstate.h — a run's options and progress: the flags of `qwenchat train` as one
 * table (names, ranges, which may change when a run is resumed), and
 * DIR/train-state/state.json, which holds them with the step, the tokens seen and the
 * random generator's state: with the weights and moments, all a resumed run needs. */
#ifndef QWENCHAT_TRAINSTATE_H
#define QWENCHAT_TRAINSTATE_H

#include <stdbool.h>
#include <stdint.h>

#include "src/train/batch.h"

struct tstate_opts {
	/* the model: --init MODEL, or a shape and --tokenizer DIR */
	char *init, *tokenizer;
	int layers, hidden, heads, kv_heads, head_dim, intermediate; /* 0: unset */
	int vocab;         /* from scratch without a tokenizer (*.u32 data); 0: unset */
	int tie;           /* 1, 0, or -1: unset (tied) */
	double rope_theta; /* 0: unset (1e6) */
	/* data */
	char **data, **val;
	int n_data, n_val;
	int ctx, batch, accum;
	/* optimisation */
	int64_t steps, warmup, cosine_steps; /* cosine_steps -1: tstate_cosine_default */
	bool cosine_follows; /* cosine_steps was that default: a resume may move it */
	double lr, min_lr;                   /* min_lr -1: lr / 10 */
	double weight_decay, beta1, beta2, eps, clip;
	int64_t seed;
	bool sft;  /* the data are conversations: the loss on the assistant's tokens only */
	bool pack; /* --sft: several conversations a row (batch.h's batch_pack) */
	bool sequential, exact, recompute;
	/* the run */
	int64_t eval_every, save_every;
	int64_t eval_tokens; /* the first tokens of --val an evaluation reads; 0: all */
	char *save_dtype; /* "f32" or "bf16" */
	char *backend;    /* "auto", "cpu" or "cuda" */
	int threads;      /* 0: every core */
	/* LoRA: the rank (0: every weight trains), alpha (0: unset, the rank) and the
	 * matrices adapted ("q,v", "all"; NULL: all) */
	int lora;
	double lora_alpha;
	char *lora_targets;
	char *lora_init; /* a PEFT adapter directory the adapters start from; NULL: drawn */
};

/* The defaults (nanoGPT's where it has one): ctx 256, batch 8, accum 1, steps 1000,
 * lr 6e-4, min_lr lr/10, warmup 0, cosine_steps = steps, weight decay 0.1, beta1 0.9,
 * beta2 0.95, eps 1e-8, clip 1.0, seed 1337, eval and save every 100 and 500 steps,
 * f32 checkpoints, backend auto. Strings are malloc'd (tstate_opts_free). 0 or -1
 * (out of memory). */
int tstate_opts_default(struct tstate_opts *o);
void tstate_opts_free(struct tstate_opts *o);

/* The matrices o->lora_targets names, as bits of enum eng_lora_target; 0 with err_set
 * "--lora-targets: ..." when it names none or another. */
unsigned tstate_lora_targets(const struct tstate_opts *o);
/* o->lora_targets as PEFT's names of its matrices in a fixed order ("q_proj,v_proj"; NULL
 * gives all of them), so that one set has one spelling. 0 or -1 (err_set). */
int tstate_lora_canonical(struct tstate_opts *o);

/* The end of the cosine when --cosine-steps is not given: the run's last step; a run
 * shorter than its warm-up (a trial of a long recipe, or --steps 0 to write the
 * initial weights) stays in the warm-up. */
int64_t tstate_cosine_default(const struct tstate_opts *o);

/* The options by name (the flag without its dashes, also the key in state.json). */
int tstate_field_count(void);
const char *tstate_field_name(int i);
/* Field index of a name, or -1. */
int tstate_field(const char *name);
/* Sets field i from a command-line value (a list field appends): 0, or -1 with err_set
 * "--NAME: ..." (not a number, out of range, not one of the choices). */
int tstate_set(struct tstate_opts *o, int i, const char *value);
/* The rows (windows of ctx, or conversations with --sft) an evaluation reads at most:
 * ceil(eval_tokens / ctx), or 0 when --eval-tokens sets no cap. */
int64_t tstate_eval_rows(const struct tstate_opts *o);
/* Whether field i may differ from the saved run when it is resumed (--steps,
 * --eval-every, --eval-tokens, --save-every, --save-dtype, --threads, --backend,
 * --recompute). */
bool tstate_may_change(int i);
/* Whether the options make `step` due an evaluation: with --val, every eval_every
 * steps and at the run's end (step 0 too: the initial weights of a --steps 0 run, or
 * its checkpoint resumed). */
bool tstate_eval_due(const struct tstate_opts *o, int64_t step);
/* Whether field i is a shape flag left unset in o (0, or --tie's neither): a run from
 * scratch derived it, or it came with --init's model, so its value is the model's. */
bool tstate_unset(const struct tstate_opts *o, int i);
/* Whether field i has the same value in a and b (a real: to the 15 significant digits
 * tstate_format gives, as a value copied from the run's messages has them). */
bool tstate_equal(const struct tstate_opts *a, const struct tstate_opts *b, int i);
/* Field i's value as text, for messages ("64", "6e-4", "a.txt b.txt"). */
void tstate_format(const struct tstate_opts *o, int i, char *out, size_t n);
/* Copies field i from src into dst. 0 or -1 (out of memory). */
int tstate_copy(struct tstate_opts *dst, const struct tstate_opts *src, int i);

/* The progress of a run. */
struct tstate {
	struct tstate_opts o;
	int64_t step;          /* steps done */
	int64_t tokens;        /* targets trained on so far */
	double seconds;        /* time in steps so far */
	struct batch_rng rng;  /* the random windows' generator, after `step` steps */
	int64_t data_tokens;   /* the training stream's length, to check the cache */
	char data_sha256[72];  /* and its checksum (dset's sha256; "" in older states) */
	char config_sha256[72]; /* config.json's, as the checkpoint wrote it ("" in older
				 * states): an edit since is refused on resume */
	bool master_in_state;  /* fp32 weights in train-state/master.safetensors (bf16 model) */
	char ran_on[8];        /* "cpu" or "cuda": where the steps ran ("" in older states) */
	char kernels[16];      /* the kernel set they ran with: the CPU's products' or the
				* GPU's attention's ("": older states) */
	char base_digest[24];  /* LoRA: the frozen weights' digest (16 hex digits; "" else):
				* a resume reads them from --init again and checks it */
	bool eval_was_due;     /* not saved: a resume's saved options made `step` due an
				* evaluation (a stop may have kept it from running) */
};

/* state.json text (malloc'd; NULL when out of memory). Besides the fields of struct
 * tstate it says windows_read, the rows drawn so far (step x accum x batch): the data
 * position, which the step and the generator's state determine. */
char *tstate_json(const struct tstate *s);
/* Parses state.json (`name` in messages) into s (options initialised here). 0 or -1
 * (err_set naming the field). */
int tstate_parse(struct tstate *s, const char *text, size_t len, const char *name);

#endif
