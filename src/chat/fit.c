/* fit.c — a conversation rendered and tokenized for the model, fitted into the
 * context by dropping its oldest turns. */
#include "src/chat/fit.h"
#include "src/base/err.h"

#include <stdlib.h>
#include <string.h>

int32_t *chat_encode(struct tok *t, const struct chat *c, enum tmpl_variant v,
		     bool add_generation_prompt, int enable_thinking, bool literal, size_t *n)
{
	size_t len;
	struct tmpl_spans msg = {0};
	char *text = tmpl_render_spans(c, v, add_generation_prompt, enable_thinking, &len,
				       literal ? &msg : NULL);
	int32_t *ids = NULL;
	if (text) {
		/* the same layout: tmpl_span and tok_span are both {start, end} */
		struct tok_span *lit = malloc((msg.n ? msg.n : 1) * sizeof *lit);
		for (size_t i = 0; lit && i < msg.n; i++)
			lit[i] = (struct tok_span){msg.v[i].start, msg.v[i].end};
		ids = lit ? tok_encode_literal(t, text, len, lit, msg.n, n) : NULL;
		if (!lit)
			err_set("out of memory tokenizing the conversation");
		free(lit);
	}
	free(text);
	free(msg.v);
	return ids;
}

int32_t *chat_render_fit(struct tok *t, struct chat *c, enum tmpl_variant v, int enable_thinking,
			 bool literal, int ctx, int reserve, int *n, int *dropped)
{
	*dropped = 0;
	for (;;) {
		size_t k;
		int32_t *ids = chat_encode(t, c, v, true, enable_thinking, literal, &k);
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
			/* The prompt's count is what must fit; the message's own says how
			 * much of it is the user's text and how much the template. */
			const char *msg = c->turns[last].content;
			size_t m = 0;
			struct tok_span all = {0, strlen(msg)};
			int32_t *mids =
				tok_encode_literal(t, msg, all.end, &all, literal ? 1 : 0, &m);
			free(mids);
			err_set("the prompt is %zu tokens (the message alone %zu), the context "
				"holds %d%s",
				k, m, ctx, k == (size_t)ctx ? " and no room for an answer" : "");
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
