/* fit.c — a conversation rendered and tokenized for the model, fitted into the
 * context by dropping its oldest turns. */
#include "src/chat/fit.h"
#include "src/base/err.h"

#include <stdlib.h>
#include <string.h>

/* Tokenizes the rendered conversation. NULL with err_set. */
static int32_t *render_ids(struct tok *t, const struct chat *c, enum tmpl_variant v, int think,
			   size_t *n)
{
	size_t len;
	char *text = tmpl_render(c, v, true, think, &len);
	if (!text)
		return NULL;
	int32_t *ids = tok_encode(t, text, len, n);
	free(text);
	return ids;
}

int32_t *chat_render_fit(struct tok *t, struct chat *c, enum tmpl_variant v, int enable_thinking,
			 int ctx, int reserve, int *n, int *dropped)
{
	*dropped = 0;
	for (;;) {
		size_t k;
		int32_t *ids = render_ids(t, c, v, enable_thinking, &k);
		if (!ids)
			return NULL;
		if (k + (size_t)(reserve > 0 ? reserve : 0) <= (size_t)ctx) {
			*n = (int)k;
			return ids;
		}
		size_t first = c->n && c->turns[0].role == CHAT_SYSTEM ? 1 : 0;
		long last = chat_last(c, CHAT_USER);
		if (last < 0 || (size_t)last <= first) {
			/* Nothing left to drop: go on with less room for the answer. */
			if (k < (size_t)ctx) {
				*n = (int)k;
				return ids;
			}
			free(ids);
			if (last < 0) {
				err_set("the conversation is %zu tokens, the context holds %d", k,
					ctx);
				return NULL;
			}
			const char *msg = c->turns[last].content;
			size_t m = 0;
			int32_t *mids = tok_encode(t, msg, strlen(msg), &m);
			free(mids);
			err_set("the message is %zu tokens, the context holds %d", m, ctx);
			return NULL;
		}
		free(ids);
		/* One whole turn: from the first turn up to the next user turn. */
		size_t end = first + 1;
		while (end < (size_t)last && c->turns[end].role != CHAT_USER)
			end++;
		chat_remove(c, first, end - first);
		(*dropped)++;
	}
}
