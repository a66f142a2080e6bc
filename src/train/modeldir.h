/* modeldir.h — the small files that make a checkpoint a model directory every
 * qwenchat command loads: config.json (laid out as the published Qwen3 configs),
 * generation_config.json, and a tokenizer_config.json with a chat template for a
 * tokenizer that has none. The weights are checkpoint.h's. */
#ifndef QWENCHAT_MODELDIR_H
#define QWENCHAT_MODELDIR_H

#include <stdbool.h>

#include "engine/engine.h"
#include "tokenizer/tokenizer.h"

/* The chat_template of the Qwen3 hybrid models (qwen3_template.c). */
extern const char mdir_qwen3_template[];

/* config.json for c (torch_dtype from c->dtype; bos/eos null when -1), malloc'd and
 * NUL-terminated; NULL when out of memory (err_set). */
char *mdir_config_json(const struct eng_config *c);

/* The sampling defaults generation_config.json carries; Qwen3's (temperature 0.6,
 * top_k 20, top_p 0.95) in mdir_qwen3_sampling. */
struct mdir_sampling {
	double temperature, top_p, min_p, repetition_penalty;
	int top_k;
};
extern const struct mdir_sampling mdir_qwen3_sampling;

/* generation_config.json: bos_token_id (-1: null), eos_token_id [eos...] (left out
 * when n_eos is 0: a tokenizer without an end of text), pad_token_id pad (-1: none),
 * the sampling defaults s (min_p where above 0, repetition_penalty where not 1).
 * Malloc'd; NULL (err_set). */
char *mdir_generation_json(int bos, const int *eos, int n_eos, int pad,
			   const struct mdir_sampling *s);

/* tokenizer_config.json for a tokenizer whose template is not in such a file:
 * `existing` (the file's text, or NULL when there is none) with chat_template set
 * (NULL: Qwen3's) and, where missing, eos_token (the tokenizer's, else <|im_end|>
 * when it has it, else the end of text) and pad_token (the tokenizer's, else the end
 * of text); a new file also gets Qwen3's other fields
 * (added_tokens_decoder, additional_special_tokens, bos_token null, ...). `name` is the file in messages. Malloc'd;
 * NULL on error (err_set: not a JSON object). *markers is set false when the
 * tokenizer lacks <|im_start|> or <|im_end|> (the template's turns would then be
 * plain text). */
char *mdir_tokenizer_config(const char *existing, const char *name, const struct tok *t,
			    const char *chat_template, bool *markers);

#endif
