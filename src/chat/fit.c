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

/* Removes the oldest whole turn of c (from the first after the system prompt up to
 * the next user turn); false when only the last user turn is left to remove. */
static bool drop_oldest(struct chat *c)
{
	size_t first = c->n && c->turns[0].role == CHAT_SYSTEM ? 1 : 0;
	long last = chat_last(c, CHAT_USER);
	if (last < 0 || (size_t)last <= first)
		return false;
	size_t end = first + 1;
	while (end < (size_t)last && c->turns[end].role != CHAT_USER)
		end++;
	chat_remove(c, first, end - first);
	return true;
}

/* "the prompt is N tokens (the message alone M), the context holds CTX": the
 * prompt's count is what must fit; the message's own says how much of it is the
 * user's text and how much the template. */
static void too_long(struct tok *t, const struct chat *c, bool literal, size_t k, int ctx)
{
	long last = chat_last(c, CHAT_USER);
	if (last < 0) {
		err_set("the conversation is %zu tokens, the context holds %d", k, ctx);
		return;
	}
	const char *msg = c->turns[last].content;
	size_t m = 0;
	struct tok_span all = {0, strlen(msg)};
	free(tok_encode_literal(t, msg, all.end, &all, literal ? 1 : 0, &m));
	err_set("the prompt is %zu tokens (the message alone %zu), the context holds %d%s", k, m,
		ctx, k == (size_t)ctx ? " and no room for an answer" : "");
}

int32_t *chat_render_fit(struct tok *t, struct chat *c, enum tmpl_variant v, int enable_thinking,
			 bool literal, int ctx, int reserve, int slack, int *n, int *dropped)
{
	int again = *dropped > 0 ? *dropped : 0;
	*dropped = 0;
	while (*dropped < again && drop_oldest(c))
		(*dropped)++;
	size_t room = (size_t)(reserve > 0 ? reserve : 0), extra = 0;
	for (;;) {
		size_t k;
		int32_t *ids = chat_encode(t, c, v, true, enable_thinking, literal, &k);
		if (!ids)
			return NULL;
		if (k + room + extra <= (size_t)ctx) {
			*n = (int)k;
			return ids;
		}
		if (drop_oldest(c)) {
			free(ids);
			(*dropped)++;
			/* the start moves: far enough that the next turns fit behind it */
			if (slack > 0 && room + (size_t)slack < (size_t)ctx)
				extra = (size_t)slack;
			continue;
		}
		/* Nothing left to drop: go on with less room for the answer. */
		if (k < (size_t)ctx) {
			*n = (int)k;
			return ids;
		}
		free(ids);
		too_long(t, c, literal, k, ctx);
		return NULL;
	}
}
