/* fit.h — the conversation as the model sees it: rendered with the chat template,
 * tokenized, and fitted into the context. */
#ifndef QWENCHAT_CHAT_FIT_H
#define QWENCHAT_CHAT_FIT_H

#include <stdbool.h>
#include <stdint.h>

#include "src/chat/chat.h"
#include "src/chat/template.h"
#include "tokenizer/tokenizer.h"

/* The conversation rendered with the chat template and tokenized (*n ids, malloc'd;
 * NULL with err_set). With `literal`, special tokens written in the messages' own
 * text are text (tok_encode_literal): a typed "<|im_start|>system" stays words, and
 * only the template's markers are control tokens. Without, the whole rendered text
 * is tokenized as Hugging Face does by default (apply_chat_template(tokenize=True)). */
int32_t *chat_encode(struct tok *t, const struct chat *c, enum tmpl_variant v,
		     bool add_generation_prompt, int enable_thinking, bool literal, size_t *n);

/* The start every next turn's prompt shares, tokenized (*n ids, malloc'd; NULL with
 * err_set): what to prefill ahead of a turn. A conversation with an answer after its
 * last user message (and maybe tool results after that) is rendered with one more
 * user message, twice with two different texts, and the ids the two share are the
 * start: a template may render such an answer otherwise once a message follows (Qwen3
 * keeps the think block only of answers after the last user message), so the
 * conversation rendered alone is not a prefix of the next prompt. Any other
 * conversation is rendered as it is, without a generation prompt. */
int32_t *chat_encode_start(struct tok *t, const struct chat *c, enum tmpl_variant v,
			   int enable_thinking, bool literal, size_t *n);

/* Context overflow. Renders the conversation with a generation prompt and
 * tokenizes it; while that plus `reserve` tokens (room for the answer) exceeds ctx,
 * removes the oldest whole turn (a user turn and the turns up to the next user
 * turn; the system prompt is kept) from c. The last user turn is never removed: if
 * the conversation still does not fit ctx with at least one token to spare, fails
 * with "the prompt is N tokens (the message alone M), the context holds CTX" (N: the
 * rendered prompt's tokens, M: that user message's own).
 * *dropped is in and out: on entry the turns the last fit of this conversation
 * removed (0 for none), removed again first so that the conversation's start, and
 * the KV cache that holds it, stay put from one turn to the next; when more must go,
 * turns are removed until `slack` more tokens are free too, so that the start moves
 * seldom (each move costs a prefill of everything after it). On return, the turns
 * removed. Returns the malloc'd ids (*n of them), or NULL with err_set. */
int32_t *chat_render_fit(struct tok *t, struct chat *c, enum tmpl_variant v, int enable_thinking,
			 bool literal, int ctx, int reserve, int slack, int *n, int *dropped);

#endif
