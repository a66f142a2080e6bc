/* tokenize.h — vLLM's POST /tokenize and /detokenize: a prompt, or a conversation
 * rendered as a chat completion renders it, to the token ids the model would run;
 * and token ids back to text. Both are answered on the request's own connection
 * thread, not queued behind the completions: the tokenizer lets threads share it, and
 * nothing here touches the engine. */
#ifndef QWENCHAT_TOKENIZE_H
#define QWENCHAT_TOKENIZE_H

#include <stdbool.h>
#include <stddef.h>

#include "src/serve/generate.h"
#include "src/serve/openai.h"

/* A /tokenize body: {"prompt": STRING} (special tokens recognised, as in a text
 * completion) or {"messages": [...]} with a chat completion's tools and
 * chat_template_kwargs, and add_generation_prompt (default true); return_token_strs;
 * add_special_tokens (default true for a prompt, false for a conversation, as vLLM):
 * the tokenizer's post-processor tokens around it (Qwen3-Embedding's <|endoftext|>;
 * Qwen3's chat models add none).
 * A /detokenize body (detokenize true): {"tokens": [ids]}. NULL with err_set and *e
 * on a bad body, as oai_parse. */
struct oai_request *tokenize_parse(const char *body, size_t len, bool detokenize,
				   struct oai_error *e);

/* Answers r (kind OAI_TOKENIZE or OAI_DETOKENIZE) through out: {"count",
 * "max_model_len", "tokens", "token_strs"} (null, or with return_token_strs each token
 * as tokenizer.json spells it) or {"prompt"} (ids that end inside a character give
 * U+FFFD there); 400 for an id not below the vocabulary size. Returns the HTTP
 * status. */
int tokenize_run(const struct gen_model *m, const struct oai_request *r,
		 const struct gen_output *out);

/* tokenize_run's answer whole: the body (malloc'd, NUL-terminated; an error object
 * when *status is not 200), or NULL when out of memory. */
char *tokenize_answer(const struct gen_model *m, const struct oai_request *r, int *status);

#endif
