/* test_openai.c — the OpenAI side of `qwenchat serve` after the request (test_openai_request
 * reads those) without HTTP or a model: <tool_call> parsing as vLLM's hermes parser
 * splits calls, the origins browser pages may call from, and the response builders:
 * stop strings and tool calls held back while streaming, chunks that add up to the
 * whole answer, logprobs, usage, [DONE]. */
#include <jansson.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "src/base/err.h"
#include "src/chat/template.h"
#include "src/chat/toolcall.h"
#include "src/serve/completion.h"
#include "src/serve/openai.h"
#include "src/serve/origin.h"


static void test_toolcall(void **state)
{
	(void)state;
	struct toolcall_set set;
	const char *none = "just text <tool_cal";
	assert_int_equal(toolcall_parse(none, strlen(none), &set), 0);
	assert_int_equal(set.content_len, strlen(none));
	/* Qwen3's own form; arguments come back as Python's json.dumps writes them */
	const char *one = "<tool_call>\n{\"name\": \"get\", \"arguments\": {\"b\":[1,2.0,\"é\"]}}\n"
			  "</tool_call>";
	assert_int_equal(toolcall_parse(one, strlen(one), &set), 1);
	assert_int_equal(set.n, 1);
	assert_int_equal(set.content_len, 0);
	assert_string_equal(set.calls[0].name, "get");
	assert_string_equal(set.calls[0].arguments, "{\"b\": [1, 2.0, \"é\"]}");
	toolcall_set_free(&set);
	/* text before the first call is the content; an unclosed last block runs to the end */
	const char *two = "Sure. <tool_call>{\"name\": \"a\", \"arguments\": {}}</tool_call> and "
			  "<tool_call>{\"name\": \"b\", \"arguments\": \"s\"}";
	assert_int_equal(toolcall_parse(two, strlen(two), &set), 1);
	assert_int_equal(set.n, 2);
	assert_int_equal(set.content_len, 6);
	assert_string_equal(set.calls[1].name, "b");
	assert_string_equal(set.calls[1].arguments, "\"s\"");
	toolcall_set_free(&set);
	/* one block that is not a call: no calls at all, the whole text is content */
	static const char *const bad[] = {
		"<tool_call>{\"name\": \"a\", \"arguments\": "
		"{}}</tool_call><tool_call>{oops</tool_call>",
		"<tool_call>{\"name\": \"a\"}</tool_call>",
		"<tool_call>{\"name\": 5, \"arguments\": {}}</tool_call>",
		"<tool_call>[1]</tool_call>",
		"<tool_call></tool_call>",
	};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		assert_int_equal(toolcall_parse(bad[i], strlen(bad[i]), &set), 0);
		assert_int_equal(set.n, 0);
		assert_int_equal(set.content_len, strlen(bad[i]));
	}
}

/* The events of a stream, parsed; [DONE] must be the last. */
struct events {
	json_t *chunks[64];
	int n;
	bool done;
};

static void read_events(const struct strbuf *b, struct events *ev)
{
	const char *p = b->p;
	ev->n = 0;
	ev->done = false;
	while (p && *p) {
		assert_memory_equal(p, "data: ", 6);
		const char *end = strstr(p, "\n\n");
		assert_non_null(end);
		assert_false(ev->done);
		if (end - p == 12 && !memcmp(p + 6, "[DONE]", 6)) {
			ev->done = true;
		} else {
			json_error_t je;
			json_t *v = json_loadb(p + 6, (size_t)(end - p - 6), 0, &je);
			if (!v)
				fail_msg("bad event: %s", je.text);
			assert_true(ev->n < 64);
			ev->chunks[ev->n++] = v;
		}
		p = end + 2;
	}
}

static void free_events(struct events *ev)
{
	for (int i = 0; i < ev->n; i++)
		json_decref(ev->chunks[i]);
	ev->n = 0;
}

/* The concatenated delta field of every chunk, and the last finish_reason. */
static void join(const struct events *ev, const char *field, char *out, size_t size,
		 const char **finish)
{
	out[0] = 0;
	for (int i = 0; i < ev->n; i++) {
		json_t *ch = json_array_get(json_object_get(ev->chunks[i], "choices"), 0);
		json_t *f = json_object_get(json_object_get(ch, "delta"), field);
		if (json_is_string(f))
			strncat(out, json_string_value(f), size - strlen(out) - 1);
		json_t *fr = json_object_get(ch, "finish_reason");
		if (json_is_string(fr) && finish)
			*finish = json_string_value(fr);
	}
}

static const struct completion_options base = {.id = "chatcmpl-abc", .model = "m", .created = 7};

/* The end of an answer as the server writes it: streamed, its finish and the stream's
 * end; else a response object around its choice. */
static void end_answer(struct completion *c, enum completion_end why,
		       const struct completion_usage *u, struct strbuf *b,
		       const struct completion_options *o)
{
	if (o->stream) {
		completion_finish(c, why, b);
		completion_stream_end(o, u, b);
		return;
	}
	json_t *root = json_pack("{s:s, s:[o]}", "object", "chat.completion", "choices",
				 completion_choice(c, why));
	char *text = json_dumps(root, JSON_COMPACT);
	sb_puts(b, text);
	free(text);
	json_decref(root);
}

static void test_stream_stop(void **state)
{
	(void)state;
	char *stop[] = {"END", "zz"};
	struct completion_options o = base;
	o.stop = stop, o.n_stop = 2, o.stream = true, o.include_usage = true;
	struct completion *c = completion_new(&o);
	struct strbuf b = {0};
	completion_stream(c, &b); /* the role chunk */
	assert_int_equal(completion_add_text(c, SESS_REASONING, "thin", 4, true), 0);
	assert_int_equal(completion_add_text(c, SESS_REASONING, "king", 4, true), 0);
	completion_stream(c, &b);
	assert_int_equal(completion_add_text(c, SESS_ANSWER, "Hel", 3, true), 0);
	assert_int_equal(completion_add_text(c, SESS_ANSWER, "lo E", 4, true), 0);
	size_t before = b.n;
	completion_stream(c, &b);
	/* "E" may begin "END": held back */
	assert_null(strstr(b.p + before, "lo E"));
	assert_non_null(strstr(b.p + before, "\"Hello \""));
	assert_int_equal(completion_add_text(c, SESS_ANSWER, "N", 1, true), 0);
	assert_int_equal(completion_add_text(c, SESS_ANSWER, "D more", 6, true), 1);
	assert_int_equal(completion_add_text(c, SESS_ANSWER, "ignored", 7, true), 1);
	completion_stream(c, &b);
	struct completion_usage u = {10, 4, 6};
	end_answer(c, COMPLETION_STOP, &u, &b, &o);
	struct events ev;
	read_events(&b, &ev);
	assert_true(ev.done);
	char text[256];
	const char *finish = NULL;
	join(&ev, "content", text, sizeof text, &finish);
	assert_string_equal(text, "Hello ");
	assert_string_equal(finish, "stop");
	join(&ev, "reasoning_content", text, sizeof text, NULL);
	assert_string_equal(text, "thinking");
	json_t *first = ev.chunks[0], *last = ev.chunks[ev.n - 1];
	assert_string_equal(
		json_string_value(json_object_get(
			json_object_get(json_array_get(json_object_get(first, "choices"), 0),
					"delta"),
			"role")),
		"assistant");
	assert_string_equal(json_string_value(json_object_get(first, "object")),
			    "chat.completion.chunk");
	assert_int_equal(json_array_size(json_object_get(last, "choices")), 0);
	json_t *usage = json_object_get(last, "usage");
	assert_int_equal(json_integer_value(json_object_get(usage, "total_tokens")), 16);
	assert_int_equal(json_integer_value(json_object_get(
				 json_object_get(usage, "prompt_tokens_details"), "cached_tokens")),
			 4);
	assert_true(json_is_null(json_object_get(ev.chunks[1], "usage")));
	/* vLLM's stop_reason: the stop string, in the chunk with the finish_reason only */
	json_t *end = json_array_get(json_object_get(ev.chunks[ev.n - 2], "choices"), 0);
	assert_string_equal(json_string_value(json_object_get(end, "stop_reason")), "END");
	for (int i = 0; i < ev.n - 2; i++)
		assert_null(
			json_object_get(json_array_get(json_object_get(ev.chunks[i], "choices"), 0),
					"stop_reason"));
	free_events(&ev);
	free(b.p);
	completion_free(c);

	/* stops off (min_tokens not reached): "END" is not looked for, and later text
	 * looks only at what it adds and the bytes a stop could begin with before it */
	o.stream = false;
	c = completion_new(&o);
	assert_int_equal(completion_add_text(c, SESS_ANSWER, "a END b E", 9, false), 0);
	assert_int_equal(completion_add_text(c, SESS_ANSWER, "ND c", 4, true), 1);
	struct strbuf whole = {0};
	end_answer(c, COMPLETION_STOP, &u, &whole, &o);
	assert_non_null(strstr(whole.p, "\"content\":\"a END b \""));
	assert_non_null(strstr(whole.p, "\"stop_reason\":\"END\""));
	free(whole.p);
	completion_free(c);

	/* the stop that matches first in the text names it; a stop id; none */
	c = completion_new(&o);
	assert_int_equal(completion_add_text(c, SESS_ANSWER, "a zz END", 8, true), 1);
	whole = (struct strbuf){0};
	end_answer(c, COMPLETION_STOP, &u, &whole, &o);
	assert_non_null(strstr(whole.p, "\"content\":\"a \""));
	assert_non_null(strstr(whole.p, "\"stop_reason\":\"zz\""));
	free(whole.p);
	completion_free(c);
	c = completion_new(&o);
	completion_set_stop_id(c, 151643);
	whole = (struct strbuf){0};
	end_answer(c, COMPLETION_STOP, &u, &whole, &o);
	assert_non_null(strstr(whole.p, "\"stop_reason\":151643"));
	free(whole.p);
	completion_free(c);
	c = completion_new(&o);
	whole = (struct strbuf){0};
	end_answer(c, COMPLETION_LENGTH, &u, &whole, &o);
	assert_non_null(strstr(whole.p, "\"finish_reason\":\"length\",\"stop_reason\":null"));
	free(whole.p);
	completion_free(c);
}

/* The same answer streamed and whole: the same content, tool calls and finish. */
static void tool_answer(const char *const *pieces, int n, bool stream, struct strbuf *b)
{
	struct completion_options o = base;
	o.parse_tools = true, o.stream = stream;
	struct completion *c = completion_new(&o);
	for (int i = 0; i < n; i++) {
		completion_add_text(c, SESS_ANSWER, pieces[i], strlen(pieces[i]), true);
		if (stream) {
			size_t before = b->n;
			completion_stream(c, b);
			assert_null(strstr(b->p ? b->p + before : "", "tool_call"));
		}
	}
	struct completion_usage u = {1, 0, 2};
	end_answer(c, COMPLETION_LENGTH, &u, b, &o);
	completion_free(c);
}

static void test_tool_calls(void **state)
{
	(void)state;
	static const char *const good[] = {"Sure", "<tool", "_call>\n{\"name\"", ": \"f\", \"arg",
					   "uments\": {\"x\":1}}\n</tool_call>"};
	struct strbuf s = {0}, w = {0};
	tool_answer(good, 5, true, &s);
	tool_answer(good, 5, false, &w);
	struct events ev;
	read_events(&s, &ev);
	char text[256];
	const char *finish = NULL;
	join(&ev, "content", text, sizeof text, &finish);
	assert_string_equal(text, "Sure");
	assert_string_equal(finish, "tool_calls");
	json_t *calls = NULL;
	for (int i = 0; i < ev.n; i++) {
		json_t *d = json_object_get(
			json_array_get(json_object_get(ev.chunks[i], "choices"), 0), "delta");
		if (json_object_get(d, "tool_calls"))
			calls = json_object_get(d, "tool_calls");
	}
	json_t *call = json_array_get(calls, 0);
	assert_int_equal(json_integer_value(json_object_get(call, "index")), 0);
	assert_string_equal(json_string_value(json_object_get(call, "id")), "call_abc_0");
	assert_string_equal(json_string_value(json_object_get(call, "type")), "function");
	json_t *f = json_object_get(call, "function");
	assert_string_equal(json_string_value(json_object_get(f, "name")), "f");
	assert_string_equal(json_string_value(json_object_get(f, "arguments")), "{\"x\": 1}");
	free_events(&ev);
	json_t *whole = json_loads(w.p, 0, NULL);
	assert_non_null(whole);
	assert_string_equal(json_string_value(json_object_get(whole, "object")), "chat.completion");
	json_t *ch = json_array_get(json_object_get(whole, "choices"), 0);
	json_t *msg = json_object_get(ch, "message");
	assert_string_equal(json_string_value(json_object_get(msg, "content")), "Sure");
	assert_string_equal(json_string_value(json_object_get(ch, "finish_reason")), "tool_calls");
	json_t *wcall = json_array_get(json_object_get(msg, "tool_calls"), 0);
	assert_null(json_object_get(wcall, "index"));
	assert_string_equal(
		json_string_value(json_object_get(json_object_get(wcall, "function"), "arguments")),
		"{\"x\": 1}");
	assert_true(json_is_null(json_object_get(ch, "logprobs")));
	assert_null(json_object_get(msg, "reasoning_content")); /* none: left out */
	json_decref(whole);
	free(s.p);
	free(w.p);

	/* a block that is no call: held back while streaming, then content after all */
	static const char *const broken[] = {"<tool_call>{oops", "}"};
	s = (struct strbuf){0};
	w = (struct strbuf){0};
	tool_answer(broken, 2, true, &s);
	tool_answer(broken, 2, false, &w);
	read_events(&s, &ev);
	join(&ev, "content", text, sizeof text, &finish);
	assert_string_equal(text, "<tool_call>{oops}");
	assert_string_equal(finish, "length");
	free_events(&ev);
	whole = json_loads(w.p, 0, NULL);
	msg = json_object_get(json_array_get(json_object_get(whole, "choices"), 0), "message");
	assert_string_equal(json_string_value(json_object_get(msg, "content")),
			    "<tool_call>{oops}");
	assert_null(json_object_get(msg, "tool_calls"));
	json_decref(whole);
	free(s.p);
	free(w.p);
}

static void test_logprobs(void **state)
{
	(void)state;
	struct completion_options o = base;
	o.logprobs = true;
	struct completion *c = completion_new(&o);
	struct completion_token t = {"\xe4\xbd", 2, -0.25},
				top[2] = {{"\xe4\xbd", 2, -0.25}, {" x", 2, -INFINITY}};
	assert_int_equal(completion_add_token(c, &t, top, 2), 0);
	completion_add_text(c, SESS_ANSWER, "\xe4\xbd\xa0", 3, true);
	struct strbuf b = {0};
	struct completion_usage u = {3, 0, 1};
	end_answer(c, COMPLETION_STOP, &u, &b, &o);
	json_t *v = json_loads(b.p, 0, NULL);
	assert_non_null(v);
	json_t *ch = json_array_get(json_object_get(v, "choices"), 0);
	json_t *e = json_array_get(json_object_get(json_object_get(ch, "logprobs"), "content"), 0);
	assert_string_equal(json_string_value(json_object_get(e, "token")), "\\xe4\\xbd");
	assert_true(json_real_value(json_object_get(e, "logprob")) == -0.25);
	json_t *bytes = json_object_get(e, "bytes");
	assert_int_equal(json_array_size(bytes), 2);
	assert_int_equal(json_integer_value(json_array_get(bytes, 0)), 0xe4);
	json_t *tops = json_object_get(e, "top_logprobs");
	assert_int_equal(json_array_size(tops), 2);
	assert_true(json_real_value(json_object_get(json_array_get(tops, 1), "logprob")) ==
		    -9999.0);
	assert_string_equal(
		json_string_value(json_object_get(json_object_get(ch, "message"), "content")),
		"\xe4\xbd\xa0");
	json_decref(v);
	free(b.p);
	completion_free(c);
}

/* Which browser pages may use the server, and which --allow-origin values are taken. */
static void test_origins(void **state)
{
	(void)state;
	static const char *const none[1] = {NULL};
	static const char *const some[] = {"https://app.example:3000/", "null"};
	static const char *const any[] = {"*"};
	static const struct {
		const char *origin;
		bool by_default, with_some, with_any;
	} cases[] = {
		{"http://localhost", true, true, true},
		{"HTTPS://LOCALHOST:8443", true, true, true},
		{"http://127.0.0.1:5173", true, true, true},
		{"http://127.9.9.9", true, true, true},
		{"http://[::1]:8080", true, true, true},
		{"http://app.localhost", true, true, true},
		{"http://localhost.evil.example", false, false, true},
		{"http://127.0.0.1.evil.example", false, false, true},
		{"http://localhost/path", false, false, true},
		{"http://evil@localhost", false, false, true},
		{"ftp://localhost", false, false, true},
		{"null", false, true, true},
		{"https://app.example:3000", false, true, true},
		{"https://APP.example:3000", false, true, true},
		{"https://app.example", false, false, true},
		{"http://app.example:3000", false, false, true},
		{"http://localhost\x01.localhost", false, false, false},
		{"http://[localhost]", false, false, true},
		{"http://[ .localhost]:80", false, false, false},
		{"http://[::2]", false, false, true},
		{"", false, false, true},
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		const char *o = cases[i].origin;
		if (origin_allowed(o, none, 0) != cases[i].by_default ||
		    origin_allowed(o, some, 2) != cases[i].with_some ||
		    origin_allowed(o, any, 1) != cases[i].with_any)
			fail_msg("origin '%s'", o);
	}
	static const char *const good[] = {"*", "null", "https://a.example", "http://a:1/",
					   "http://[::1]:3000"};
	static const char *const bad[] = {"a.example",   "https://",         "https://a/x",
					  "https://u@a", "https://a b",      "https://a?q",
					  "://a",        "https://a\xc3\xa9"};
	for (size_t i = 0; i < sizeof good / sizeof good[0]; i++)
		if (origin_check(good[i]))
			fail_msg("'%s' refused: %s", good[i], err_msg());
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
		if (origin_check(bad[i]) == 0)
			fail_msg("'%s' taken", bad[i]);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_toolcall),   cmocka_unit_test(test_stream_stop),
		cmocka_unit_test(test_tool_calls), cmocka_unit_test(test_logprobs),
		cmocka_unit_test(test_origins),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
