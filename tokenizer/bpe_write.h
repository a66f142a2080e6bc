/* bpe_write.h — writing a trained BPE as tokenizer.json, vocab.json and merges.txt. */
#ifndef QWENCHAT_BPE_WRITE_H
#define QWENCHAT_BPE_WRITE_H

#include "tokenizer/bpe_train.h"

#include <stdbool.h>

/* Writes DIR/tokenizer.json (Hugging Face format: the Qwen2 pre-tokenizer and
 * byte-level decoder, no normalizer, model BPE; the added tokens specials[0..n) as
 * added_tokens with ids following the last merge, in the order given, each
 * "special": special[k] (special NULL: all of them), as Qwen3 marks <|im_end|>
 * special and <think> not), DIR/vocab.json (the model vocabulary, without the added
 * tokens) and DIR/merges.txt (GPT-2 format). Token strings use GPT-2's
 * byte-to-unicode map. Refuses an added token equal to a vocabulary string. 0 or -1
 * (err_set). */
int bpe_write(const struct bpe_model *m, const char *const *specials, const bool *special,
	      int n_specials, const char *dir);

#endif
