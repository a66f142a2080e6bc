/* loop.h — a training run from start (or a checkpoint) to its last step: the data
 * streams, the memory plan, the trainer, the steps (micro-batches, mean loss,
 * clipping, the schedule, AdamW), evaluations, the log and the checkpoints. The
 * command line prepares the model (loop_model) and prints what the loop reports. */
#ifndef QWENCHAT_LOOP_H
#define QWENCHAT_LOOP_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "engine/train.h"
#include "src/train/dataset.h"
#include "src/train/save.h"
#include "src/train/trainstate.h"
#include "tokenizer/tokenizer.h"

/* What the run trains. */
/* tokenizer.json, tokenizer_config.json, chat_template.jinja, vocab.json, merges.txt,
 * generation_config.json */
enum { LOOP_MAX_FILES = 6 };

struct loop_model {
	struct eng_config cfg;  /* the model's shape (dtype: ignored, set by the save dtype) */
	struct eng_model *init; /* weights to start from (a new run); NULL: N(0, 0.02) */
	struct tok *tk;         /* encodes the text files; NULL: *.u32 files only */
	const char *tok_hash;   /* the tokenizer's identity for the data cache */
	struct save_file files[LOOP_MAX_FILES]; /* tokenizer and generation files for every
						  * checkpoint */
	int n_files;
	const char *cuda_module;   /* eng_train_options.cuda_module */
	const char *cpu_isa;       /* eng_train_options.cpu_isa */
	bool cuda_tiled_attention; /* eng_train_options.cuda_tiled_attention */
	/* --sft: reads a file of conversations (rendered and tokenized as the chat does,
	 * which the command line can and this layer cannot); NULL: none can be read */
	dset_conv_reader read_convs;
	void *read_convs_user;
};

/* The memory plan, reported before the first step. */
struct loop_plan {
	struct eng_train_plan plan;
	size_t data_bytes;    /* the token streams, in host memory */
	size_t available;     /* host memory to be had (proc_mem_available); 0: unknown */
	bool recompute_added; /* the plan fits only with --recompute: turned on */
	int64_t train_tokens, val_tokens;
	bool train_cached, val_cached; /* streams read from the cache, not encoded */
	bool sft;                      /* conversations: what is known of them */
	struct dset_sft train_sft, val_sft;
	double train_padding; /* --sft: the share of a row's positions that pad */
	int64_t train_rows;   /* --pack: the rows the conversations were packed in */
};

/* After each step (and each evaluation). */
struct loop_status {
	int64_t step, steps; /* steps done, the run's total */
	double loss, grad_norm, lr;
	double val_loss;          /* the last evaluation's; NAN before the first */
	int64_t val_step;         /* the step it evaluated */
	double step_seconds;      /* this step's wall time */
	double tokens_per_second; /* positions computed (--sft: not counting padding) */
	double peak_share;        /* model FLOPs per second / the measured matrix-product peak;
				  * 0 when unknown */
	double eta_seconds;       /* the steps left, and the evaluations and saves due */
	int64_t tokens;           /* targets trained on so far */
	int64_t step_tokens;      /* this step's targets (--sft: fewer than its positions) */
	int64_t step_positions;   /* the positions it computed (--sft: not counting padding) */
};

struct loop_report {
	void *user;
	void (*notice)(void *user, const char *msg);
	void (*engine_notice)(const char *msg); /* the trainer's remarks (a fallback) */
	void (*plan)(void *user, const struct loop_plan *p);
	/* The trainer exists: backend, exact products, parameters. */
	void (*ready)(void *user, struct eng_trainer *t);
	/* The first step begins (after the data, the plan and the weights). */
	void (*begin)(void *user);
	void (*step)(void *user, const struct loop_status *s);
	void (*eval)(void *user, const struct loop_status *s);
	/* An evaluation of step begins (running true) or has ended, done or abandoned. */
	void (*evaluating)(void *user, int64_t step, bool running);
	void (*saved)(void *user, int64_t step, double seconds);
};

/* loop_run's result when *stop was set: the step under way was finished and saved. */
enum { LOOP_STOPPED = 1 };

/* Runs st->o (resolved: min_lr and cosine_steps set) into dir: a new run (st->step 0,
 * the model's init weights or N(0, 0.02) from the seed) or, with resume, the
 * checkpoint in dir (its weights, moments, generator, log) continued to st->o.steps.
 * *stop (set by a signal handler) ends the run after the step under way, saved.
 * 0, LOOP_STOPPED, or -1 (err_set; dir keeps its last checkpoint). */
int loop_run(const char *dir, struct tstate *st, bool resume, struct loop_model *m,
	     const struct loop_report *r, const volatile sig_atomic_t *stop);

#endif
