/* train_model.h — what `qwenchat train` trains, resolved by the command line (which
 * may use the Hub and the model loader): the model to start from or the config the
 * shape flags give, the tokenizer, and the files every checkpoint carries. */
#ifndef QWENCHAT_TRAIN_MODEL_H
#define QWENCHAT_TRAIN_MODEL_H

#include <stdbool.h>

#include "src/chat/template.h"
#include "src/train/loop.h"
#include "src/train/modeldir.h"
#include "src/train/trainstate.h"

struct train_model {
	struct loop_model m;
	char *texts[LOOP_MAX_FILES]; /* owned data of m.files */
	char tok_hash[72];
	char *init_path;
	/* remarks about the model, shown once the run starts (an error before that is one
	 * line alone) */
	const char *remarks[4];
	int n_remarks;
	char template_remark[160];
	bool usage; /* the flags do not make a model: exit 2 */
	/* the chat template the checkpoints carry, as the chat will render with it: the
	 * conversations of --sft are rendered with it */
	enum tmpl_variant variant;
	bool template_added; /* the tokenizer had none: the checkpoints get Qwen3's */
	/* generation_config.json's sampling defaults where the model has no such file:
	 * a GGUF's general.sampling.* keys, else Qwen3's */
	struct mdir_sampling sampling;
};

/* A new run's model: --init MODEL (its config, weights, tokenizer and generation
 * files; a repo id resolved through the Hub), or a config from the shape flags with
 * --tokenizer DIR (or --vocab-size). Where there is a tokenizer, m->m.read_convs
 * reads conversation files for --sft (with m as its user: m must stay where it is
 * while the run reads its data). 0 or -1 (err_set; m->usage when the flags do not
 * make a model). */
int train_model_new(const struct tstate_opts *o, struct train_model *m);
/* A resumed run's model: the checkpoint's own config and files. 0 or -1 (err_set). */
int train_model_resume(const char *dir, struct train_model *m);
void train_model_free(struct train_model *m);

#endif
