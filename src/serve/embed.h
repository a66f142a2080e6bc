/* embed.h — OpenAI's POST /v1/embeddings, as vLLM serves an embedding model such as
 * Qwen3-Embedding: each input encoded with the tokenizer's special tokens
 * (<|endoftext|> appended), the last position's hidden state after the final norm,
 * cut to `dimensions` values (Matryoshka) and scaled to unit length. The request
 * runs on the worker, as the completions do: it uses the engine. */
#ifndef QWENCHAT_EMBED_H
#define QWENCHAT_EMBED_H

#include <stddef.h>

#include "src/serve/completion.h"
#include "src/serve/generate.h"
#include "src/serve/openai.h"

/* A body: input (a string, strings, token ids or arrays of them, as a text
 * completion's prompt), encoding_format ("float" or "base64"), dimensions (at least
 * 1; at most hidden_size, checked when it runs), user; vLLM's add_special_tokens
 * (default true: a text gets the post-processor's tokens; ids are taken as they are),
 * normalize (default true) and truncate_prompt_tokens. NULL with err_set and *e on a
 * bad body, as oai_parse. */
struct oai_request *embed_parse(const char *body, size_t len, struct oai_error *e);

/* Answers r (kind OAI_EMBED) through out: {"object": "list", "data": [{"object":
 * "embedding", "index", "embedding"}], "model", "usage": {"prompt_tokens",
 * "total_tokens"}}; 400 for an input past the context, an id past the vocabulary,
 * dimensions above hidden_size, or a backend without hidden states. Fills usage->prompt.
 * Returns the HTTP status, or 0 when cancelled (the client went away). The session's
 * cache is emptied: the next completion prefills its prompt whole. */
int embed_run(const struct gen_model *m, const struct oai_request *r, const struct gen_output *out,
	      struct completion_usage *usage);

#endif
