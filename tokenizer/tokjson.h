/* tokjson.h — a byte-level BPE written as Hugging Face tokenizer.json, laid out as
 * `tokenizers` saves Qwen's (pretty): the Qwen2 pre-tokenizer, the byte-level
 * decoder, model BPE. Shared by train-bpe's writer and the conversion of a GGUF
 * file's tokenizer back into the file it came from. */
#ifndef QWENCHAT_TOKJSON_H
#define QWENCHAT_TOKJSON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "src/base/strbuf.h"

/* A token's text (in the byte-level alphabet for the vocabulary, as it is for an
 * added token) and its id; `special` only matters for added tokens. */
struct tokjson_token {
	const char *s;
	size_t n;
	int32_t id;
	bool special;
};

/* One merge: the texts of its two tokens. */
struct tokjson_merge {
	const char *a, *b;
	size_t na, nb;
};

struct tokjson {
	const struct tokjson_token *vocab; /* model.vocab, in this order */
	size_t n_vocab;
	const struct tokjson_merge *merges; /* model.merges, by rank */
	size_t n_merges;
	const struct tokjson_token *added; /* added_tokens */
	size_t n_added;
	bool nfc; /* the NFC normalizer (Qwen3's own files) or none (train-bpe's) */
};

/* Appends the tokenizer.json of j to b (b->oom on a failed allocation). */
void tokjson_write(struct strbuf *b, const struct tokjson *j);

/* Appends a JSON object of the vocabulary ("text": id, one a line, each line
 * starting with indent), without its closing brace: vocab.json and model.vocab. */
void tokjson_vocab(struct strbuf *b, const struct tokjson_token *vocab, size_t n,
		   const char *indent);

#endif
