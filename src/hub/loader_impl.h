/* loader_impl.h — what loader.c and loader_keys.c share. Internal to src/hub/. */
#ifndef QWENCHAT_HUB_LOADER_IMPL_H
#define QWENCHAT_HUB_LOADER_IMPL_H

#include <jansson.h>
#include <stdbool.h>

#define TOKENS     "tokenizer.ggml.tokens"
#define TYPES      "tokenizer.ggml.token_type"
#define MERGES     "tokenizer.ggml.merges"
/* GGUF has no key for tokenizer.json's normalizer: Qwen's files have NFC, train-bpe's
 * none. This one, written by quantize, says which; absent, NFC (Qwen's, as in the
 * files llama.cpp's converter makes of Qwen3). */
#define NORMALIZER "qwenchat.tokenizer.normalizer"
/* Whether the model directory dir has a tokenizer.json; else (a model trained on
 * token ids alone has none) false with err_set "DIR/tokenizer.json: missing: why". */
bool loader_has_tokenizer(const char *dir, const char *why);

/* DIR/NAME parsed; {} for an optional file that is absent. NULL with err_set naming
 * the file (a JSON file of the model's: 256 MB and 4M values at most). */
json_t *loader_load_json(const char *dir, const char *name, bool optional);

#endif
