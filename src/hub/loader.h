/* loader.h — the files of a model, whatever their format: the tokenizer, chat
 * template and generation defaults of a model directory (tokenizer.json,
 * tokenizer_config.json, generation_config.json) or of a GGUF file (its tokenizer.*
 * and general.sampling.* keys, read through the engine's metadata API). */
#ifndef QWENCHAT_LOADER_H
#define QWENCHAT_LOADER_H

#include <stdint.h>

#include "engine/engine.h"
#include "src/session/sampler.h"
#include "tokenizer/tokenizer.h"

/* Where the loader's warnings go (what a GGUF lacks that gets llama.cpp's kind of
 * default, one line each, naming the file): fn; the previous one is returned. NULL,
 * the start: nowhere, as for a caller that says nothing of such a file. */
typedef void (*loader_warn_fn)(const char *msg);
loader_warn_fn loader_warn_to(loader_warn_fn fn);

/* The tokenizer of `path`: a directory's tokenizer.json, or a GGUF file's metadata.
 * NULL on error (err_set names the file and the field or key). */
struct tok *loader_tokenizer(const char *path);

/* The tokenizer and the model belong together: every id the tokenizer can produce
 * has an embedding row (Qwen3 pads its 151,669 ids to vocab_size 151,936). Else -1
 * with err_set naming both sizes and `path`: such a pair would fail at the first
 * message, on the chat template's <|im_start|>. */
int loader_check_vocab(const struct tok *t, int vocab_size, const char *path);

/* The tokenizer of an open GGUF: tokenizer.ggml.model "gpt2" with pre "qwen2", the
 * tokens, token types, merges, eos/padding ids and tokenizer.chat_template; and,
 * when json is not NULL, the tokenizer.json those keys were converted from (*json
 * malloc'd, *len bytes), which makes a directory of a model that came as GGUF.
 * NULL on error (err_set). */
struct tok *loader_tokenizer_gguf(const struct eng_gguf *g, char **json, size_t *len);
/* The same from a GGUF file's path. */
struct tok *loader_tokenizer_json(const char *path, char **json, size_t *len);

/* Sampling defaults and end-of-sequence ids: DIR/generation_config.json when present,
 * or a GGUF's general.sampling.* keys and its eos (and eot) token ids. The
 * samp_load_generation_config contract: p, eos and n_eos change only on success. */
int loader_generation(const char *path, struct samp_params *p, int32_t *eos, int *n_eos);

/* The tokenizer of model directory `dir` (tokenizer.json, tokenizer_config.json,
 * config.json) as the GGUF key/values llama.cpp's convert_hf_to_gguf.py writes for
 * Qwen3: tokenizer.ggml.model/pre/tokens/token_type/merges, the eos, padding and bos
 * ids, add_bos_token and tokenizer.chat_template; vocab_size tokens (ids without a
 * token are unused padding). 0 or -1 (err_set naming the file). */
int loader_gguf_keys(const char *dir, int vocab_size, struct eng_gguf_out *o);

/* How an embedding model pools its hidden states: llama.cpp's pooling types (their
 * values are those of a GGUF's {arch}.pooling_type), and OTHER for the
 * sentence-transformers modes GGUF has none for (max, weighted mean). */
enum loader_pooling {
	LOADER_POOL_NONE, /* not said: no sentence-transformers module, no key */
	LOADER_POOL_MEAN,
	LOADER_POOL_CLS,
	LOADER_POOL_LAST, /* Qwen3-Embedding's: the last token's hidden state */
	LOADER_POOL_RANK, /* a reranker's classifier head */
	LOADER_POOL_OTHER,
};
const char *loader_pooling_name(enum loader_pooling p);

/* The pooling `path` says: a directory's modules.json and its Pooling module's
 * config.json (pooling_mode_lasttoken, ...), a GGUF's qwen3.pooling_type. 0, or -1
 * with err_set naming the file and field. */
int loader_pooling(const char *path, enum loader_pooling *out);

/* 0 when path's pooling is the last token's or not said (what `embed` computes); else
 * -1 with err_set naming the model and its pooling. */
int loader_check_last_pooling(const char *path);

/* Writes directory dir's pooling as qwen3.pooling_type (nothing when it says none);
 * -1 (err_set) for a mode GGUF cannot say. */
int loader_pooling_key(const char *dir, struct eng_gguf_out *o);

#endif
