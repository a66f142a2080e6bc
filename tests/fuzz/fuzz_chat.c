/* fuzz_chat.c — conversation files are untrusted: parse any bytes as one, and when that
 * succeeds, render it with every template (the answers' spans too) and check that
 * save/load gives it back, tool definitions and calls included; and read the bytes as
 * JSON Lines of conversations and as a text file's paragraphs, as `train --sft` does. */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "src/chat/chat.h"
#include "src/base/jsonlimit.h"
#include "src/chat/sft.h"
#include "src/chat/template.h"

/* The answers of each variant: ordered ranges of the same text as tmpl_render's. */
static int answers(void *user, const struct chat *c, const char *where)
{
	(void)user, (void)where;
	for (int v = TMPL_CHATML; c->n && v <= TMPL_QWEN3_THINKING; v++) {
		size_t len, len2;
		struct tmpl_spans m = {0}, a = {0};
		char *s = tmpl_render(c, (enum tmpl_variant)v, false, TMPL_THINK_ABSENT, &len);
		char *t = tmpl_render_answers(c, (enum tmpl_variant)v, &len2, &m, &a);
		if (!s || !t || len2 != len || memcmp(s, t, len))
			abort();
		for (size_t i = 0, end = 0; i < a.n; end = a.v[i++].end)
			if (a.v[i].start < end || a.v[i].end <= a.v[i].start || a.v[i].end > len)
				abort();
		free(m.v);
		free(a.v);
		free(s);
		free(t);
	}
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	sft_read_text("fuzz.jsonl", (const char *)data, size, answers, NULL);
	sft_read_text("fuzz.txt", (const char *)data, size, answers, NULL);
	/* a name that says neither: JSON Lines, an array of records or one conversation */
	sft_read_text("fuzz.json", (const char *)data, size, answers, NULL);
	if (jlim_value_len((const char *)data, size) > size)
		abort();
	struct chat *c = chat_from_json((const char *)data, size, "fuzz.json");
	if (!c)
		return 0;
	for (int v = TMPL_CHATML; v <= TMPL_QWEN3_THINKING; v++) {
		for (int think = TMPL_THINK_ABSENT; think <= TMPL_THINK_ON; think++) {
			size_t len;
			char *s = tmpl_render(c, (enum tmpl_variant)v, think != TMPL_THINK_OFF,
					      think, &len);
			if (c->n > 0 && (!s || strlen(s) != len))
				abort();
			/* the message spans: the same text, ordered ranges inside it */
			struct tmpl_spans m = {0};
			size_t len2;
			char *t = tmpl_render_spans(c, (enum tmpl_variant)v,
						    think != TMPL_THINK_OFF, think, &len2, &m);
			if (s && (!t || len2 != len || memcmp(s, t, len)))
				abort();
			for (size_t i = 0, end = 0; t && i < m.n; end = m.v[i++].end)
				if (m.v[i].start < end || m.v[i].end <= m.v[i].start ||
				    m.v[i].end > len2)
					abort();
			free(m.v);
			free(t);
			free(s);
		}
	}
	size_t len;
	char *json = chat_to_json(c, &len);
	if (!json)
		abort();
	struct chat *d = chat_from_json(json, len, "again.json");
	if (!d || d->n != c->n)
		abort();
	for (size_t i = 0; i < c->n; i++) {
		const struct chat_turn *a = &c->turns[i], *b = &d->turns[i];
		if (a->role != b->role || strcmp(a->content, b->content) ||
		    !a->reasoning != !b->reasoning ||
		    (a->reasoning && strcmp(a->reasoning, b->reasoning)) ||
		    a->n_calls != b->n_calls)
			abort();
		for (size_t k = 0; k < a->n_calls; k++)
			if (strcmp(a->calls[k].name, b->calls[k].name) ||
			    strcmp(a->calls[k].arguments, b->calls[k].arguments) ||
			    a->calls[k].arguments_is_text != b->calls[k].arguments_is_text)
				abort();
	}
	if (c->n_tools != d->n_tools)
		abort();
	for (size_t i = 0; i < c->n_tools; i++)
		if (strcmp(c->tools[i], d->tools[i]))
			abort();
	free(json);
	chat_free(d);
	chat_free(c);
	return 0;
}
