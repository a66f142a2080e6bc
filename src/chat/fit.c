/* fit.c — a conversation rendered and tokenized for the model, fitted into the
 * context by dropping its oldest turns. */
#include "src/chat/fit.h"
#include "src/base/err.h"

#include <stdio.h>
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

int32_t *chat_encode_start(struct tok *t, const struct chat *c, enum tmpl_variant v,
			   int enable_thinking, bool literal, size_t *n)
{
	if (chat_last(c, CHAT_ASSISTANT) <= chat_last(c, CHAT_USER))
		return chat_encode(t, c, v, false, enable_thinking, literal, n);
	struct chat *next = chat_dup(c);
	int32_t *a = NULL, *b = NULL;
	size_t na = 0, nb = 0;
	if (!next)
		err_set("out of memory rendering the conversation");
	else if (!chat_add(next, CHAT_USER, "a", NULL) &&
		 (a = chat_encode(t, next, v, true, enable_thinking, literal, &na)) &&
		 !chat_set_turn(next, next->n - 1, "b", NULL))
		b = chat_encode(t, next, v, true, enable_thinking, literal, &nb);
	chat_free(next);
	size_t k = 0;
	while (a && b && k < na && k < nb && a[k] == b[k])
		k++;
	free(b);
	if (!b) {
		free(a);
		return NULL;
	}
	*n = k;
	return a;
}

/* The exchanges chat_render_fit may drop, d at a time: c without its first d exchanges
 * after the system prompt, each a turn and the turns up to the next user turn (the
 * last user turn stays). starts[k] is the index where exchange k + 1 begins; there
 * are *n of them. malloc'd, NULL with *n = 0 when none can go (or out of memory). */
static size_t *exchange_starts(const struct chat *c, size_t *first, int *n)
{
	*first = c->n && c->turns[0].role == CHAT_SYSTEM ? 1 : 0;
	long last = chat_last(c, CHAT_USER);
	*n = 0;
	if (last < 0 || (size_t)last <= *first)
		return NULL;
	size_t *s = malloc(((size_t)last - *first) * sizeof *s);
	for (size_t i = *first + 1; s && i <= (size_t)last; i++)
		if (c->turns[i].role == CHAT_USER)
			s[(*n)++] = i;
	return s;
}

/* c rendered and tokenized without its first d exchanges (d <= the count of starts):
 * *k ids, malloc'd; NULL with err_set. */
static int32_t *encode_without(struct tok *t, const struct chat *c, size_t first,
			       const size_t *starts, int d, enum tmpl_variant v, int think,
			       bool literal, size_t *k)
{
	if (d == 0)
		return chat_encode(t, c, v, true, think, literal, k);
	struct chat *cut = chat_dup(c);
	if (!cut) {
		err_set("out of memory fitting the conversation");
		return NULL;
	}
	chat_remove(cut, first, starts[d - 1] - first);
	int32_t *ids = chat_encode(t, cut, v, true, think, literal, k);
	chat_free(cut);
	return ids;
}

/* Tokens of a message's text alone. */
static size_t text_tokens(struct tok *t, const char *text, bool literal)
{
	size_t m = 0;
	struct tok_span all = {0, strlen(text)};
	free(tok_encode_literal(t, text, all.end, &all, literal ? 1 : 0, &m));
	return m;
}

/* "the prompt is N tokens (the message alone M), the context holds CTX": the
 * prompt's count is what must fit; the message's own says how much of it is the
 * user's text and how much the template, and a system prompt's, when it is most of
 * the rest, that it is what to shorten. */
static void too_long(struct tok *t, const struct chat *c, bool literal, size_t k, int ctx)
{
	long last = chat_last(c, CHAT_USER);
	if (last < 0) {
		err_set("the conversation is %zu tokens, the context holds %d", k, ctx);
		return;
	}
	size_t m = text_tokens(t, c->turns[last].content, literal), s = 0;
	if (c->n && c->turns[0].role == CHAT_SYSTEM && c->turns[0].content)
		s = text_tokens(t, c->turns[0].content, literal);
	char sys[64] = "";
	if (s > m && 2 * s > k)
		snprintf(sys, sizeof sys, ", the system prompt %zu", s);
	err_set("the prompt is %zu tokens (the message alone %zu%s), the context holds %d%s", k, m,
		sys, ctx, k == (size_t)ctx ? " and no room for an answer" : "");
}

/* A turn's bytes and a little for the template's markers: what the guess below
 * scales tokens with. */
static size_t turn_bytes(const struct chat_turn *t)
{
	size_t n = strlen(t->content) + (t->reasoning ? strlen(t->reasoning) : 0) + 16;
	for (size_t k = 0; k < t->n_calls; k++)
		n += strlen(t->calls[k].name) + strlen(t->calls[k].arguments) + 32;
	return n;
}

/* Where the search looks first: the fewest exchanges after the `again` dropped whose
 * dropping brings the prompt (k tokens with `again` dropped) to `target` tokens, by
 * an estimate that scales tokens with bytes. A conversation far longer than the
 * context is then rendered near its fit, about a context's worth of turns, rather
 * than near whole, again and again. */
static int guess_drop(const struct chat *c, size_t first, const size_t *starts, int count,
		      int again, size_t k, size_t target)
{
	size_t total = 0, from = again ? starts[again - 1] : first;
	for (size_t i = 0; i < c->n; i++)
		if (i < first || i >= from)
			total += turn_bytes(&c->turns[i]);
	size_t left = total;
	int d = again;
	while (d < count) {
		for (size_t i = d ? starts[d - 1] : first; i < starts[d]; i++)
			left -= turn_bytes(&c->turns[i]);
		d++;
		if ((double)k * (double)left / (double)total <= (double)target)
			break;
	}
	return d;
}

/* The fit as one turn dropped at a time would find it (the prompt shrinks as turns
 * go): the fewest exchanges dropped that fit, found by galloping from a guess (down
 * while it fits, up while it does not) and then halving, in a logarithmic number of
 * renderings: a conversation loaded with thousands of exchanges is neither rendered
 * a thousand times nor whole at each try. */
int32_t *chat_render_fit(struct tok *t, struct chat *c, enum tmpl_variant v, int enable_thinking,
			 bool literal, int ctx, int reserve, int slack, int *n, int *dropped)
{
	size_t first, k, room = (size_t)(reserve > 0 ? reserve : 0);
	int count;
	size_t *starts = exchange_starts(c, &first, &count);
	int again = *dropped > count ? count : *dropped > 0 ? *dropped : 0;
	/* the turns dropped before stay dropped; more go only if the prompt overflows */
	int32_t *ids = encode_without(t, c, first, starts, again, v, enable_thinking, literal, &k);
	int best = again;
	/* when the start moves, far enough that the next turns fit behind it */
	size_t need = room + (slack > 0 && room + (size_t)slack < (size_t)ctx ? (size_t)slack : 0);
	if (ids && k + room > (size_t)ctx && again < count) {
		int lo = again, hi = -1, step = 1; /* lo does not fit; hi, once found, does */
		int d = guess_drop(c, first, starts, count, again, k,
				   need < (size_t)ctx ? (size_t)ctx - need : 0);
		bool down = true; /* the guess fitted and nothing since failed */
		size_t hk = 0;
		int32_t *hids = NULL;
		while (ids) {
			size_t dk;
			int32_t *dids = encode_without(t, c, first, starts, d, v, enable_thinking,
						       literal, &dk);
			if (!dids) {
				free(ids);
				ids = NULL;
			} else if (dk + need <= (size_t)ctx) {
				free(hids);
				hi = d, hk = dk, hids = dids;
			} else if (hi < 0) { /* the most dropped so far: the last resort */
				free(ids);
				ids = dids, k = dk, lo = d, best = d, down = false;
			} else {
				free(dids);
				lo = d, down = false;
			}
			if (hi >= 0 ? hi - lo <= 1 : lo >= count)
				break;
			d = hi < 0                   ? (count - lo > step ? lo + step : count)
			    : down && hi - step > lo ? hi - step
						     : lo + (hi - lo) / 2;
			step *= 2;
		}
		if (ids && hi >= 0) {
			free(ids);
			ids = hids, k = hk, best = hi;
		} else {
			free(hids);
		}
	}
	if (ids && best > 0)
		chat_remove(c, first, starts[best - 1] - first);
	free(starts);
	if (!ids)
		return NULL;
	*dropped = best;
	/* nothing left to drop: go on with less room for the answer */
	if (k + (best > again ? need : room) > (size_t)ctx && k >= (size_t)ctx) {
		free(ids);
		too_long(t, c, literal, k, ctx);
		return NULL;
	}
	*n = (int)k;
	return ids;
}
