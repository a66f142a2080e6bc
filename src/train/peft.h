/* peft.h — a PEFT LoRA adapter directory (adapter_config.json and
 * adapter_model.safetensors, as PeftModel.save_pretrained writes them) as the
 * starting point of `qwenchat train --lora-init DIR`: its rank, alpha and target
 * matrices become the run's LoRA options, its tensors the adapters' first values. */
#ifndef QWENCHAT_PEFT_H
#define QWENCHAT_PEFT_H

#include "src/train/trainstate.h"

/* Reads DIR/adapter_config.json into o->lora, o->lora_alpha and o->lora_targets (alpha
 * as the plain LoRA scale alpha / r takes it: rsLoRA's alpha / sqrt(r) is written as
 * alpha sqrt(r)). Refuses what a plain LoRA of Qwen3's linear layers cannot hold: not
 * LORA, DoRA, fan_in_fan_out, biases, modules_to_save, per-layer ranks or alphas, a
 * subset of layers, target_modules as a regular expression or naming other modules.
 * 0 or -1 (err_set naming the file and the field). */
int peft_read_config(const char *dir, struct tstate_opts *o);
/* The same from the file's text (len bytes; path names it in messages). */
int peft_parse_config(const char *text, size_t len, const char *path, struct tstate_opts *o);

/* DIR/adapter_model.safetensors (malloc'd), or NULL when out of memory. */
char *peft_weights_path(const char *dir);

#endif
