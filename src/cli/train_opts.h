/* train_opts.h — the options of `qwenchat train` and its help (train_opts.c): the
 * table cmd_train.c parses with. */
#ifndef QWENCHAT_TRAIN_OPTS_H
#define QWENCHAT_TRAIN_OPTS_H

#include "src/cli/cli.h"

/* The keys of train_opts. Every option but --out and --resume sets the field of the
 * saved options (tstate) that has its name (--no-tie: tie), so that a resumed run can
 * compare each flag with the saved one. */
enum train_key {
	OPT_OUT = CLI_OWN,
	OPT_RESUME,
	OPT_INIT,
	OPT_TOKENIZER,
	OPT_LAYERS,
	OPT_HIDDEN_SIZE,
	OPT_HEADS,
	OPT_KV_HEADS,
	OPT_HEAD_DIM,
	OPT_INTERMEDIATE_SIZE,
	OPT_TIE,
	OPT_NO_TIE,
	OPT_ROPE_THETA,
	OPT_VOCAB_SIZE,
	OPT_DATA,
	OPT_VAL,
	OPT_CTX,
	OPT_BATCH,
	OPT_ACCUM,
	OPT_STEPS,
	OPT_LR,
	OPT_MIN_LR,
	OPT_WARMUP,
	OPT_COSINE_STEPS,
	OPT_WEIGHT_DECAY,
	OPT_BETA1,
	OPT_BETA2,
	OPT_EPS,
	OPT_CLIP,
	OPT_SEED,
	OPT_SEQUENTIAL,
	OPT_EXACT,
	OPT_RECOMPUTE,
	OPT_EVAL_EVERY,
	OPT_EVAL_TOKENS,
	OPT_SAVE_EVERY,
	OPT_SAVE_DTYPE,
	OPT_BACKEND,
	OPT_THREADS,
	OPT_SFT,
	OPT_PACK,
	OPT_LORA,
	OPT_LORA_ALPHA,
	OPT_LORA_TARGETS,
	OPT_LORA_INIT,
	OPT_NO_PANEL,
};

extern const struct cli_opt train_opts[];
extern const struct cli_command train_cmd;

#endif
