/* save.h — a run's checkpoint as files: DIR/model.safetensors (F32 master weights, or
 * a BF16 copy with the F32 ones in DIR/train-state/master.safetensors), config.json,
 * the tokenizer and generation files, DIR/train-state/optimizer.safetensors (AdamW's
 * moments), state.json, log.jsonl (the records up to this step) and DIR/loss.svg, all
 * replaced together (checkpoint.h's transaction); and the weights and moments read
 * back for a resumed run. A LoRA run's model.safetensors has the adapters merged into
 * the weights, and train-state/ is also a PEFT adapter directory:
 * adapter_model.safetensors (F32, the adapters' master weights) and
 * adapter_config.json. */
#ifndef QWENCHAT_SAVE_H
#define QWENCHAT_SAVE_H

#include <stddef.h>

#include "engine/train.h"
#include "src/train/trainlog.h"
#include "src/train/trainstate.h"

/* A file written as it is into every checkpoint (tokenizer.json, ...). */
struct save_file {
	const char *name;
	const char *data;
	size_t len;
};

/* Writes the checkpoint of st->step into dir. cfg is the model's (its dtype is set
 * from the save dtype). On any error (a full disk ...) dir keeps the previous
 * checkpoint whole. 0 or -1 (err_set). */
/* Whether every place a checkpoint of dir puts a file (those of save_checkpoint, the
 * files given among them) can take one: none is a directory, which a rename does not
 * replace. Checked before the first step, so that a run does not train up to its
 * first checkpoint to find out. 0 or -1 (err_set naming the path). */
int save_check_targets(const char *dir, const struct save_file *files, int n_files);

int save_checkpoint(const char *dir, struct eng_trainer *t, const struct tstate *st,
		    const struct tlog *log, const struct save_file *files, int n_files);

/* The master weights and the moments of the checkpoint in dir into t (uploaded to the
 * device on a GPU backend); every file must be of st->step. With LoRA the adapters'
 * (the frozen weights are the caller's to load). 0 or -1 (err_set). */
int save_restore(const char *dir, struct eng_trainer *t, const struct tstate *st);

/* LoRA, once the frozen weights are loaded: a new run draws its adapters (--seed), or
 * reads them from --lora-init's adapter_model.safetensors, and keeps the frozen
 * weights' digest in st; a resumed one checks it. 0 or -1 (err_set: --init's weights
 * changed since the run began, an adapter that does not read). */
int save_lora_base(struct eng_trainer *t, struct tstate *st, bool resume);

#endif
