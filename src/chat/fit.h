/* fit.h — the conversation as the model sees it: rendered with the chat template,
 * tokenized, and fitted into the context. */
#ifndef QWENCHAT_CHAT_FIT_H
#define QWENCHAT_CHAT_FIT_H

#include <stdint.h>

#include "src/chat/chat.h"
#include "src/chat/template.h"
#include "tokenizer/tokenizer.h"

/* Context overflow. Renders the conversation with a generation prompt and
 * tokenizes it; while that plus `reserve` tokens (room for the answer) exceeds ctx,
 * removes the oldest whole turn (a user turn and the turns up to the next user
 * turn; the system prompt is kept) from c. The last user turn is never removed: if
 * the conversation still does not fit ctx with at least one token to spare, fails
 * with "the message is N tokens, the context holds CTX" (N: that user message's
 * tokens). Returns the malloc'd ids (*n of them) and *dropped (turns removed), or
 * NULL with err_set. */
int32_t *chat_render_fit(struct tok *t, struct chat *c, enum tmpl_variant v, int enable_thinking,
			 int ctx, int reserve, int *n, int *dropped);

#endif
