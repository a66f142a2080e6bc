/* fuzz_openai.c — request bodies and model answers are untrusted. First byte with bits
 * 0 and 1 clear: the rest is a chat-completions request; when it parses, it is
 * rendered, and the text of its messages is fed as a streamed answer (in pieces cut at
 * each '\n') to a completion with the request's stop strings and tool parsing, whose
 * events and final object must be valid JSON. Bit 1 set: a text-completions request,
 * each text prompt echoed and fed back as its answer, each choice valid JSON. Bit 0 set:
 * the rest is an answer for the <tool_call> parser. First byte 4: a /tokenize body, 12: a
 * /detokenize one; when it parses, it holds a conversation that renders or one prompt,
 * text or ids. */
#include <jansson.h>
#include <math.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "src/chat/template.h"
#include "src/chat/toolcall.h"
#include "src/serve/completion.h"
#include "src/serve/openai.h"
#include "src/serve/tokenize.h"

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
	struct completion_options o = {.id = "chatcmpl-fuzz",
				       .model = "m",
				       .stop = r->stop,
				       .n_stop = r->n_stop,
				       .parse_tools = r->parse_tools,
				       .logprobs = r->logprobs,
				       .stream = r->stream,
				       .include_usage = r->include_usage};
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
			/* stop strings looked for from the second piece on, as after min_tokens */
			bool stops = i > 0 || s != r->chat->turns[i].content;
			int stop = completion_add_text(c, part, s, k, stops);
			if (r->stream)
				completion_stream(c, &b);
			s += k;
			if (stop)
				break;
		}
	}
	struct completion_usage u = {1, 0, 1};
	if (r->stream) {
		completion_finish(c, COMPLETION_STOP, &b);
		completion_stream_end(&o, &u, &b);
	} else {
		json_t *choice = completion_choice(c, COMPLETION_STOP);
		char *text = choice ? json_dumps(choice, JSON_COMPACT) : NULL;
		if (text)
			sb_puts(&b, text);
		free(text);
		json_decref(choice);
	}
	check_json(&b, r->stream);
	free(b.p);
	completion_free(c);
}

/* The conversation rendered to continue its last message: a prefix of the whole
 * rendering without a generation prompt, ending with that message's content. */
static void render_continued(const struct oai_request *r)
{
	size_t n = 0, whole_n = 0;
	char *cut = tmpl_render_continue(r->chat, TMPL_QWEN3, r->enable_thinking, &n);
	char *whole = tmpl_render(r->chat, TMPL_QWEN3, false, r->enable_thinking, &whole_n);
	if (cut && (!whole || n > whole_n || memcmp(cut, whole, n)))
		abort();
	free(cut);
	free(whole);
}

/* Feeds s to c as tokens cut at each '\n' and as text; returns what the text said
 * (1: a stop string ended it). */
static int feed(struct completion *c, const char *s, size_t n, bool stream, struct strbuf *b)
{
	for (size_t i = 0; i < n;) {
		const char *nl = memchr(s + i, '\n', n - i);
		size_t k = nl ? (size_t)(nl - (s + i)) + 1 : n - i;
		struct completion_token t = {s + i, k, i ? -1.0 : NAN};
		completion_add_token(c, &t, &t, 1);
		int stop = completion_add_text(c, SESS_ANSWER, s + i, k, true);
		if (stream)
			completion_stream(c, b);
		i += k;
		if (stop)
			return 1;
	}
	return 0;
}

/* A text completion: each prompt echoed (when asked) and its text as the answer. */
static void answer_text(const struct oai_request *r)
{
	struct completion_options o = {.text = true,
				       .id = "cmpl-fuzz",
				       .model = "m",
				       .stop = r->stop,
				       .n_stop = r->n_stop,
				       .logprobs = r->logprobs,
				       .stream = r->stream,
				       .include_usage = r->include_usage};
	struct strbuf b = {0};
	json_t *choices = json_array();
	for (size_t i = 0; i < r->n_prompts; i++) {
		const struct oai_prompt *q = &r->prompts[i];
		o.index = (int)i;
		o.echo = r->echo && q->text ? q->text : NULL;
		o.echo_len = o.echo ? q->len : 0;
		struct completion *c = completion_new(&o);
		if (!c)
			break;
		feed(c, q->text ? q->text : "", q->text ? q->len : 0, r->stream, &b);
		if (r->stream)
			completion_finish(c, COMPLETION_LENGTH, &b);
		else
			json_array_append_new(choices, completion_choice(c, COMPLETION_STOP));
		completion_free(c);
	}
	if (r->stream) {
		struct completion_usage u = {1, 0, 1};
		completion_stream_end(&o, &u, &b);
		check_json(&b, true);
	} else {
		char *s = json_dumps(choices, JSON_COMPACT);
		if (!s || json_array_size(choices) != r->n_prompts)
			abort();
		free(s);
	}
	json_decref(choices);
	free(b.p);
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
	if (data[0] == 4 || data[0] == 12) {
		struct oai_request *r = tokenize_parse(text, size, data[0] == 12, &e);
		if (r && r->chat) {
			/* a conversation renders, unless its last message is continued and the
			 * template rewrote its content */
			char *s = r->continue_final ? tmpl_render_continue(r->chat, TMPL_QWEN3,
									   r->enable_thinking, NULL)
						    : tmpl_render(r->chat, TMPL_QWEN3,
								  r->add_generation_prompt,
								  r->enable_thinking, NULL);
			if (!s && !r->continue_final)
				abort();
			free(s);
		} else if (r && (r->n_prompts != 1 || (!r->prompts[0].text && data[0] == 4))) {
			abort(); /* one prompt: a /tokenize text, or /detokenize ids */
		}
		oai_request_free(r);
		return 0;
	}
	if (data[0] & 2) {
		struct oai_request *r = oai_parse_text(text, size, &e);
		if (r && (r->n_prompts < 1 || r->n_prompts > OAI_MAX_PROMPTS))
			abort();
		if (r)
			answer_text(r);
		oai_request_free(r);
		return 0;
	}
	struct oai_request *r = oai_parse(text, size, &e);
	if (!r)
		return 0;
	char *s = tmpl_render(r->chat, TMPL_QWEN3, true, r->enable_thinking, NULL);
	if (!s)
		abort(); /* a request holds at least one message */
	free(s);
	render_continued(r);
	answer(r);
	oai_request_free(r);
	return 0;
}
