/* fuzz_openai.c — request bodies and model answers are untrusted. First byte even: the
 * rest is a chat-completions request; when it parses, it is rendered, and the text of
 * its messages is fed as a streamed answer (in pieces cut at each '\n') to a completion
 * with the request's stop strings and tool parsing, whose events and final object must
 * be valid JSON. First byte odd: the rest is an answer for the <tool_call> parser. */
#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "src/chat/template.h"
#include "src/chat/toolcall.h"
#include "src/serve/completion.h"
#include "src/serve/openai.h"

/* Every "data: " event holds JSON or [DONE]; a whole answer is one JSON object. */
static void check_json(const struct strbuf *b, bool stream)
{
	if (b->oom)
		return;
	const char *p = b->p ? b->p : "";
	if (!stream) {
		json_t *v = json_loads(p, 0, NULL);
		if (!v)
			abort();
		json_decref(v);
		return;
	}
	while (*p) {
		const char *end = strstr(p, "\n\n");
		if (strncmp(p, "data: ", 6) || !end)
			abort();
		if (strncmp(p + 6, "[DONE]", 6)) {
			json_t *v = json_loadb(p + 6, (size_t)(end - p - 6), 0, NULL);
			if (!v)
				abort();
			json_decref(v);
		}
		p = end + 2;
	}
}

static void answer(const struct oai_request *r)
{
	struct completion_options o = {"chatcmpl-fuzz", "m",       0,
				       r->stop,         r->n_stop, r->parse_tools,
				       r->logprobs,     r->stream, r->include_usage};
	struct completion *c = completion_new(&o);
	struct strbuf b = {0};
	if (!c)
		return;
	for (size_t i = 0; i < r->chat->n; i++) {
		const char *s = r->chat->turns[i].content;
		enum sess_part part = i % 2 ? SESS_ANSWER : SESS_REASONING;
		while (*s) {
			size_t k = strcspn(s, "\n") + (s[strcspn(s, "\n")] == '\n');
			struct completion_token t = {s, k, -1.0};
			completion_add_token(c, &t, &t, 1);
			int stop = completion_add_text(c, part, s, k);
			if (r->stream)
				completion_stream(c, &b);
			s += k;
			if (stop)
				break;
		}
	}
	struct completion_usage u = {1, 0, 1};
	completion_finish(c, COMPLETION_STOP, &u, &b);
	check_json(&b, r->stream);
	free(b.p);
	completion_free(c);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	const char *text = (const char *)data + 1;
	size--;
	if (data[0] & 1) {
		struct toolcall_set set;
		int r = toolcall_parse(text, size, &set);
		if (r < 0)
			return 0;
		if (set.content_len > size || (r == 0 && (set.n || set.content_len != size)))
			abort();
		toolcall_set_free(&set);
		return 0;
	}
	struct oai_error e;
	struct oai_request *r = oai_parse(text, size, &e);
	if (!r)
		return 0;
	char *s = tmpl_render(r->chat, TMPL_QWEN3, true, r->enable_thinking, NULL);
	if (!s)
		abort(); /* a request holds at least one message */
	free(s);
	answer(r);
	oai_request_free(r);
	return 0;
}
