/* fuzz_chat.c — conversation files are untrusted: parse any bytes as one, and when that
 * succeeds, render it with every template and check that save/load gives it back,
 * tool definitions and calls included. */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "src/chat/chat.h"
#include "src/chat/template.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
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
