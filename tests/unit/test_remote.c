/* test_remote.c — the remote backend's parsers and request: server-sent events split at
 * every byte, chat-completion chunks shaped as vLLM and SGLang send them (reasoning
 * deltas, <think> in the content, tool calls, usage, errors), bad events refused with
 * a message naming the event and the field, and the request body holding only what
 * the user chose. The HTTP side is tested against a fake server (tests/cli/remote.sh). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "src/base/err.h"
#include "src/base/strbuf.h"
#include "src/remote/remote.h"
#include "src/remote/reply.h"
#include "src/remote/sse.h"

/* ---- server-sent events ---------------------------------------------------- */

/* Events as "name|data;" for comparison. */
static int collect(void *u, const char *name, const char *data, size_t len)
{
	struct strbuf *b = u;
	assert_int_equal(strlen(data), len);
	sb_printf(b, "%s|%s;", name, data);
	return 0;
}

static const char sse_text[] = "\xef\xbb\xbf"
			       ": a comment\r\n"
			       "data: one\r\n"
			       "\r\n"
			       "event: error\n"
			       "data:two\n"
			       "data:  lines\n"
			       "id: 7\n"
			       "retry: 100\n"
			       "\n"
			       "data\r"
			       "\r"
			       "event: empty\n"
			       "\n"
			       "data: {\"x\": 1}\r\n"
			       "\r\n"
			       "data: last";
static const char sse_want[] = "message|one;error|two\n lines;message|;message|{\"x\": 1};";

static void test_sse_split_anywhere(void **state)
{
	(void)state;
	size_t n = sizeof sse_text - 1;
	for (size_t cut = 0; cut <= n; cut++) { /* two reads, split at every byte */
		struct strbuf got = {0};
		struct sse s;
		sse_init(&s, collect, &got);
		assert_int_equal(sse_feed(&s, sse_text, cut), 0);
		assert_int_equal(sse_feed(&s, sse_text + cut, n - cut), 0);
		assert_string_equal(got.p, sse_want);
		assert_true(sse_pending(&s)); /* "data: last" was never ended */
		sse_free(&s);
		free(got.p);
	}
	struct strbuf got = {0}; /* one byte at a time */
	struct sse s;
	sse_init(&s, collect, &got);
	for (size_t i = 0; i < n; i++)
		assert_int_equal(sse_feed(&s, sse_text + i, 1), 0);
	assert_string_equal(got.p, sse_want);
	sse_free(&s);
	free(got.p);
}

static int stop_at_second(void *u, const char *name, const char *data, size_t len)
{
	(void)name, (void)data, (void)len;
	return ++*(int *)u == 2 ? 42 : 0;
}

static void test_sse_limits(void **state)
{
	(void)state;
	struct sse s;
	int calls = 0;
	sse_init(&s, stop_at_second, &calls);
	assert_int_equal(sse_feed(&s, "data: a\n\ndata: b\n\ndata: c\n\n", 27), 42);
	sse_free(&s);

	/* A line without an end, growing past the bound, is refused without growing. */
	char *big = malloc(SSE_MAX_LINE + 16);
	memset(big, 'x', SSE_MAX_LINE + 16);
	memcpy(big, "data: ", 6);
	sse_init(&s, collect, NULL);
	assert_int_equal(sse_feed(&s, big, SSE_MAX_LINE / 2), 0);
	assert_int_equal(sse_feed(&s, big, SSE_MAX_LINE), -1);
	assert_non_null(strstr(err_msg(), "a line longer than"));
	sse_free(&s);

	/* Many short data lines in one event are bounded too. */
	struct strbuf got = {0};
	sse_init(&s, collect, &got);
	int rc = 0;
	char lines[8 << 10]; /* data lines of 1 KiB */
	for (size_t i = 0; i < sizeof lines; i += 1024) {
		memset(lines + i, 'y', 1024);
		memcpy(lines + i, "data: ", 6);
		lines[i + 1023] = '\n';
	}
	for (int i = 0; !rc && i < SSE_MAX_DATA / (int)sizeof lines + 16; i++)
		rc = sse_feed(&s, lines, sizeof lines);
	assert_int_equal(rc, -1);
	assert_non_null(strstr(err_msg(), "more than"));
	assert_null(got.p);
	sse_free(&s);
	free(big);
}

/* ---- chat-completion chunks -------------------------------------------------- */

/* The text a reply emitted, as "[R]reasoning" and "[A]answer" runs. */
struct pieces {
	struct strbuf reasoning, answer, all;
	int last;
};

static int take(void *u, enum sess_part part, const char *s, size_t n)
{
	struct pieces *p = u;
	assert_true(n > 0);
	sb_put(part == SESS_REASONING ? &p->reasoning : &p->answer, s, n);
	if ((int)part != p->last)
		sb_puts(&p->all, part == SESS_REASONING ? "[R]" : "[A]");
	sb_put(&p->all, s, n);
	p->last = (int)part;
	return 0;
}

static void pieces_free(struct pieces *p)
{
	free(p->reasoning.p);
	free(p->answer.p);
	free(p->all.p);
}

/* Feeds a stream of "data: ..." events (one per line of `events`) to a reply. Returns
 * the last reply_event result. */
static int feed(struct reply *r, const char *events)
{
	int rc = 0;
	for (const char *p = events; *p && rc == 0;) {
		const char *nl = strchr(p, '\n');
		size_t n = nl ? (size_t)(nl - p) : strlen(p);
		char *data = strndup(p, n);
		rc = reply_event(r, "message", data, n);
		free(data);
		p += n + (nl ? 1 : 0);
	}
	return rc;
}

/* vLLM 0.9 with --reasoning-parser qwen3: the role chunk, reasoning_content deltas
 * ("<think>" itself sends nothing), the content after </think>, the finish chunk
 * with an empty delta, the usage chunk with no choices, [DONE]. */
static const char vllm_stream[] =
	"{\"id\":\"chatcmpl-1\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"q\","
	"\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"\"},"
	"\"logprobs\":null,\"finish_reason\":null}]}\n"
	"{\"id\":\"chatcmpl-1\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"q\","
	"\"choices\":[{\"index\":0,\"delta\":{\"reasoning_content\":\"\\n\"},\"logprobs\":null,"
	"\"finish_reason\":null}]}\n"
	"{\"choices\":[{\"index\":0,\"delta\":{\"reasoning_content\":\"Two \"}}]}\n"
	"{\"choices\":[{\"index\":0,\"delta\":{\"reasoning_content\":\"plus two.\\n\"}}]}\n"
	"{\"choices\":[{\"index\":0,\"delta\":{\"reasoning_content\":\"\\n\"}}]}\n"
	"{\"choices\":[{\"index\":0,\"delta\":{\"reasoning_content\":\"Four.\\n\"}}]}\n"
	"{\"choices\":[{\"index\":0,\"delta\":{\"content\":\"\\n\\n\"}}]}\n"
	"{\"choices\":[{\"index\":0,\"delta\":{\"content\":\"It is 4.\"}}]}\n"
	"{\"choices\":[{\"index\":0,\"delta\":{},\"logprobs\":null,\"finish_reason\":\"stop\","
	"\"stop_reason\":null}]}\n"
	"{\"id\":\"chatcmpl-1\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"q\","
	"\"choices\":[],\"usage\":{\"prompt_tokens\":12,\"total_tokens\":30,"
	"\"completion_tokens\":18,\"prompt_tokens_details\":{\"cached_tokens\":8}}}\n"
	"[DONE]";

static void test_vllm_reasoning(void **state)
{
	(void)state;
	struct pieces p = {.last = -1};
	struct reply r;
	reply_init(&r, take, &p);
	assert_int_equal(feed(&r, vllm_stream), REPLY_DONE);
	assert_int_equal(reply_end(&r), 0);
	/* Leading newlines of each part and the reasoning's trailing ones are dropped, as
	 * the template drops them; the ones inside stay. */
	assert_string_equal(p.all.p, "[R]Two plus two.\n\nFour.[A]It is 4.");
	assert_int_equal(r.finish, REPLY_STOP);
	assert_true(r.done);
	assert_int_equal(r.prompt_tokens, 12);
	assert_int_equal(r.completion_tokens, 18);
	assert_int_equal(r.cached_tokens, 8);
	assert_int_equal(r.deltas, 7);
	reply_free(&r);
	pieces_free(&p);
}

/* SGLang with --reasoning-parser qwen3: every field written, null when unused;
 * finish_reason with matched_stop; newer vLLM and ollama name the field "reasoning". */
static void test_sglang_nulls_and_reasoning_name(void **state)
{
	(void)state;
	static const char sglang[] =
		"{\"id\":\"a\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"q\","
		"\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"\","
		"\"reasoning_content\":null,\"tool_calls\":null},\"logprobs\":null,"
		"\"finish_reason\":null,\"matched_stop\":null}],\"usage\":null}\n"
		"{\"id\":\"a\",\"choices\":[{\"index\":0,\"delta\":{\"role\":null,\"content\":null,"
		"\"reasoning_content\":\"Hmm.\",\"tool_calls\":null},\"logprobs\":null,"
		"\"finish_reason\":null,\"matched_stop\":null}],\"usage\":null}\n"
		"{\"id\":\"a\",\"choices\":[{\"index\":0,\"delta\":{\"role\":null,\"content\":"
		"\"Hi\","
		"\"reasoning_content\":null,\"tool_calls\":null},\"logprobs\":null,"
		"\"finish_reason\":null,\"matched_stop\":null}],\"usage\":null}\n"
		"{\"id\":\"a\",\"choices\":[{\"index\":0,\"delta\":{\"role\":null,\"content\":null,"
		"\"reasoning_content\":null,\"tool_calls\":null},\"logprobs\":null,"
		"\"finish_reason\":\"length\",\"matched_stop\":151645}],\"usage\":null}\n"
		"[DONE]";
	struct pieces p = {.last = -1};
	struct reply r;
	reply_init(&r, take, &p);
	assert_int_equal(feed(&r, sglang), REPLY_DONE);
	assert_int_equal(reply_end(&r), 0);
	assert_string_equal(p.all.p, "[R]Hmm.[A]Hi");
	assert_int_equal(r.finish, REPLY_LENGTH);
	assert_int_equal(r.prompt_tokens, -1);
	reply_free(&r);
	pieces_free(&p);

	memset(&p, 0, sizeof p);
	p.last = -1;
	reply_init(&r, take, &p);
	assert_int_equal(feed(&r, "{\"choices\":[{\"delta\":{\"reasoning\":\"x\"}}]}\n"
				  "{\"choices\":[{\"delta\":{\"content\":\"y\"}}]}\n"),
			 0);
	assert_string_equal(p.all.p, "[R]x[A]y");
	reply_free(&r);
	pieces_free(&p);
}

/* A server without a reasoning parser: <think>...</think> arrives in the content,
 * split across deltas at any byte; the result is the same for every split. */
static void test_think_tags_in_content(void **state)
{
	(void)state;
	static const char text[] = "<think>\nLet me see: a<b, 2 </th is no tag.\n\n</think>\n\n"
				   "Answer with <thin and </think";
	size_t n = sizeof text - 1;
	for (size_t cut = 0; cut <= n; cut++) {
		for (size_t cut2 = cut; cut2 <= n; cut2 += 3) {
			struct pieces p = {.last = -1};
			struct reply r;
			reply_init(&r, take, &p);
			size_t at[4] = {0, cut, cut2, n};
			for (int k = 0; k < 3; k++) {
				json_t *o = json_pack("{s:[{s:{s:s%}}]}", "choices", "delta",
						      "content", text + at[k], at[k + 1] - at[k]);
				char *d = json_dumps(o, JSON_COMPACT);
				assert_int_equal(reply_event(&r, "message", d, strlen(d)), 0);
				free(d);
				json_decref(o);
			}
			assert_int_equal(reply_end(&r), 0);
			assert_string_equal(p.all.p, "[R]Let me see: a<b, 2 </th is no tag."
						     "[A]Answer with <thin and </think");
			reply_free(&r);
			pieces_free(&p);
		}
	}
}

/* content -> what the parts get: only a <think> block before the answer is reasoning */
static void check_tags(const char *reasoning_delta, const char *content, const char *want)
{
	struct pieces p = {.last = -1};
	struct reply r;
	reply_init(&r, take, &p);
	json_t *o;
	char *d;
	if (reasoning_delta) {
		o = json_pack("{s:[{s:{s:s}}]}", "choices", "delta", "reasoning_content",
			      reasoning_delta);
		d = json_dumps(o, JSON_COMPACT);
		assert_int_equal(reply_event(&r, "message", d, strlen(d)), 0);
		free(d);
		json_decref(o);
	}
	o = json_pack("{s:[{s:{s:s}}]}", "choices", "delta", "content", content);
	d = json_dumps(o, JSON_COMPACT);
	assert_int_equal(reply_event(&r, "message", d, strlen(d)), 0);
	free(d);
	json_decref(o);
	assert_int_equal(reply_end(&r), 0);
	assert_string_equal(p.all.p, want);
	reply_free(&r);
	pieces_free(&p);
}

/* Tags elsewhere are the answer's text, never dropped: a </think> with no block open,
 * a block after answer text or after a closed one, tags after reasoning deltas. */
static void test_think_tags_as_text(void **state)
{
	(void)state;
	check_tags(NULL, "Use the </think> tag to close.", "[A]Use the </think> tag to close.");
	check_tags(NULL, "Write <think> then </think> in Qwen.",
		   "[A]Write <think> then </think> in Qwen.");
	check_tags(NULL, "<think>r</think>ans <think>x</think>.", "[R]r[A]ans <think>x</think>.");
	check_tags(NULL, "<think>a <think> b</think>c", "[R]a <think> b[A]c");
	check_tags("R1", "<think>C</think>A", "[R]R1[A]<think>C</think>A");
	check_tags(NULL, "\n<think>r</think>a", "[R]r[A]a");
}

/* vLLM with --enable-auto-tool-choice --tool-call-parser hermes: the call's id, type
 * and name in its first delta, the arguments in pieces after it; a second call by its
 * index; finish_reason "tool_calls". */
static void test_tool_calls(void **state)
{
	(void)state;
	static const char calls[] =
		"{\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"\"}}]}"
		"\n"
		"{\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Checking.\"}}]}\n"
		"{\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"id\":\"chatcmpl-tool-1\","
		"\"type\":\"function\",\"index\":0,\"function\":{\"name\":\"get_weather\"}}]}}]}\n"
		"{\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"function\":"
		"{\"arguments\":\"{\\\"city\\\": \"}}]}}]}\n"
		"{\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"function\":"
		"{\"arguments\":\"\\\"Paris\\\"}\"}}]}}]}\n"
		"{\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"id\":\"chatcmpl-tool-2\","
		"\"type\":\"function\",\"index\":1,\"function\":{\"name\":\"get_time\","
		"\"arguments\":\"{}\"}}]}}]}\n"
		"{\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"tool_calls\"}]}\n"
		"[DONE]";
	struct pieces p = {.last = -1};
	struct reply r;
	reply_init(&r, take, &p);
	assert_int_equal(feed(&r, calls), REPLY_DONE);
	assert_int_equal(reply_end(&r), 0);
	assert_string_equal(p.answer.p, "Checking.");
	assert_int_equal(r.n_calls, 2);
	assert_string_equal(r.calls[0].id.p, "chatcmpl-tool-1");
	assert_string_equal(r.calls[0].name.p, "get_weather");
	assert_string_equal(r.calls[0].arguments.p, "{\"city\": \"Paris\"}");
	assert_string_equal(r.calls[1].name.p, "get_time");
	assert_string_equal(r.calls[1].arguments.p, "{}");
	assert_int_equal(r.finish, REPLY_TOOL_CALLS);
	reply_free(&r);
	pieces_free(&p);

	reply_init(&r, NULL, NULL); /* arguments for a call nobody named */
	assert_int_equal(feed(&r, "{\"choices\":[{\"delta\":{\"tool_calls\":[{\"index\":0,"
				  "\"function\":{\"arguments\":\"{}\"}}]}}]}"),
			 0);
	assert_int_equal(reply_end(&r), -1);
	assert_non_null(strstr(err_msg(), "tool call 0 came without a function name"));
	reply_free(&r);

	reply_init(&r, NULL, NULL); /* a server that ignores max_tokens: cut there */
	r.max_deltas = 2;
	assert_int_equal(feed(&r, "{\"choices\":[{\"delta\":{\"content\":\"a\"}}]}\n"
				  "{\"choices\":[{\"delta\":{\"reasoning_content\":\"b\"}}]}\n"
				  "{\"choices\":[{\"delta\":{\"content\":\"c\"}}]}"),
			 REPLY_DONE);
	assert_int_equal(reply_end(&r), 0);
	assert_int_equal(r.finish, REPLY_LENGTH);
	assert_int_equal(r.deltas, 2);
	reply_free(&r);

	reply_init(&r, NULL, NULL); /* index 3 alone: the indexes it skipped are no calls */
	assert_int_equal(feed(&r, "{\"choices\":[{\"delta\":{\"tool_calls\":[{\"index\":3,"
				  "\"function\":{\"name\":\"f3\",\"arguments\":\"{}\"}}]}}]}"),
			 0);
	assert_int_equal(reply_end(&r), 0);
	assert_int_equal(r.n_calls, 1);
	assert_string_equal(r.calls[0].name.p, "f3");
	reply_free(&r);
}

/* Errors the servers send mid-stream, and events that are not what they claim. */
static void test_bad_events(void **state)
{
	(void)state;
	static const struct {
		const char *name, *data, *msg;
	} bad[] = {
		/* vLLM's and SGLang's create_streaming_error_response */
		{"message",
		 "{\"error\":{\"object\":\"error\",\"message\":\"CUDA out of memory\",\"type\":"
		 "\"InternalServerError\",\"param\":null,\"code\":500}}",
		 "the server reported an error in event 1: CUDA out of memory"},
		{"error", "{\"message\":\"overloaded\\nretry\"}",
		 "the server reported an error in event 1: overloaded retry"},
		{"error", "plain words", "the server reported an error in event 1: plain words"},
		{"message", "{\"choices\":[{\"delta\":{\"content\":", "event 1 is not valid JSON"},
		{"message", "\"text\"", "event 1 is a string, not a JSON object"},
		{"message", "{\"choices\":{}}", "event 1: choices is an object, not an array"},
		{"message", "{\"choices\":[{\"delta\":{\"content\":5}}]}",
		 "event 1: choices[0].delta.content is a number, not a string"},
		{"message", "{\"choices\":[{\"delta\":[]}]}",
		 "event 1: choices[0].delta is an array, not an object"},
		{"message", "{\"choices\":[{\"delta\":{\"tool_calls\":[{\"index\":999}]}}]}",
		 "at most 128 tool calls"},
		{"message", "{\"usage\":{\"prompt_tokens\":-3}}",
		 "usage.prompt_tokens = -3 is out"},
		{"message", "{\"usage\":{\"completion_tokens\":1.5}}",
		 "usage.completion_tokens is a number, not a whole number"},
		{"message", "\xff\xfe{}", "event 1 is not valid JSON"},
	};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		struct reply r;
		reply_init(&r, NULL, NULL);
		assert_int_equal(reply_event(&r, bad[i].name, bad[i].data, strlen(bad[i].data)),
				 -1);
		if (!strstr(err_msg(), bad[i].msg))
			fail_msg("case %zu: '%s' lacks '%s'", i, err_msg(), bad[i].msg);
		reply_free(&r);
	}
	/* A NUL in the text (JSON \u0000) becomes U+FFFD: conversations hold C strings. */
	struct pieces p = {.last = -1};
	struct reply r;
	reply_init(&r, take, &p);
	assert_int_equal(feed(&r, "{\"choices\":[{\"delta\":{\"content\":\"a\\u0000b\"}}]}"), 0);
	assert_string_equal(p.answer.p, "a\xef\xbf\xbd"
					"b");
	reply_free(&r);
	pieces_free(&p);
}

/* A server that never stops: the answer is bounded, not the memory. */
static void test_answer_bound(void **state)
{
	(void)state;
	size_t n = 1 << 20;
	char *ev = malloc(n + 64);
	int k = snprintf(ev, 64, "{\"choices\":[{\"delta\":{\"content\":\"");
	memset(ev + k, 'a', n);
	strcpy(ev + k + n, "\"}}]}");
	struct reply r;
	reply_init(&r, NULL, NULL);
	int rc = 0, i;
	for (i = 0; i < 100 && !rc; i++)
		rc = reply_event(&r, "message", ev, strlen(ev));
	assert_int_equal(rc, -1);
	assert_int_equal(i, REPLY_MAX_TEXT / n + 1);
	assert_non_null(strstr(err_msg(), "the answer passed 64 MiB"));
	reply_free(&r);
	free(ev);
}

static void test_oneline(void **state)
{
	(void)state;
	char out[64];
	static const char messy[] = "  two\nlines\t\x01 \xff end  ";
	reply_oneline(out, sizeof out, messy, sizeof messy - 1);
	assert_string_equal(out, "two lines   ? end");
	char longer[400];
	memset(longer, 'a', sizeof longer);
	memcpy(longer + 290, "\xc3\xa9\xc3\xa9\xc3\xa9", 6);
	char big[REPLY_MAX_MESSAGE + 64];
	reply_oneline(big, sizeof big, longer, sizeof longer);
	assert_true(strlen(big) <= REPLY_MAX_MESSAGE);
	assert_string_equal(big + strlen(big) - 3, "...");
	reply_oneline(out, 8, "abcdefghij", 10);
	assert_string_equal(out, "abcd...");
}

/* ---- the request ---------------------------------------------------------------- */

static json_t *request(const struct remote_request *q)
{
	size_t len;
	char *text = remote_request_json(q, &len);
	assert_non_null(text);
	assert_int_equal(strlen(text), len);
	json_t *o = json_loads(text, 0, NULL);
	assert_non_null(o);
	free(text);
	return o;
}

static void test_request_body(void **state)
{
	(void)state;
	struct chat *c = chat_new();
	assert_int_equal(chat_set_system(c, "Be brief."), 0);
	assert_int_equal(chat_add(c, CHAT_USER, "Weather?", NULL), 0);
	assert_int_equal(chat_add(c, CHAT_ASSISTANT, "", "old reasoning"), 0);
	assert_int_equal(chat_add_tool_call(c, 2, "get_weather", "{\"city\": \"Paris\"}", true), 0);
	assert_int_equal(chat_add(c, CHAT_TOOL, "sunny", NULL), 0);
	assert_int_equal(chat_add(c, CHAT_ASSISTANT, "Sunny.", "after the tool"), 0);
	assert_int_equal(chat_add(c, CHAT_USER, "Thanks", NULL), 0);
	assert_int_equal(chat_add_tool(c, "{\"type\": \"function\", \"function\": {\"name\": "
					  "\"get_weather\"}}"),
			 0);

	struct remote_request q = {.model = "Qwen/Qwen3-32B", .chat = c, .think = -1};
	json_t *o = request(&q);
	/* Nothing the user did not choose: the server's defaults apply. */
	const char *keys[] = {"temperature",
			      "top_p",
			      "top_k",
			      "min_p",
			      "seed",
			      "max_tokens",
			      "chat_template_kwargs",
			      "presence_penalty",
			      "repetition_penalty"};
	for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++)
		if (json_object_get(o, keys[i]))
			fail_msg("%s sent without being set", keys[i]);
	assert_string_equal(json_string_value(json_object_get(o, "model")), "Qwen/Qwen3-32B");
	assert_true(json_is_true(json_object_get(o, "stream")));
	assert_true(json_is_true(
		json_object_get(json_object_get(o, "stream_options"), "include_usage")));
	json_t *m = json_object_get(o, "messages");
	assert_int_equal(json_array_size(m), 6);
	assert_string_equal(json_string_value(json_object_get(json_array_get(m, 0), "role")),
			    "system");
	json_t *a = json_array_get(m, 2);
	assert_true(json_is_null(json_object_get(a, "content"))); /* only a call */
	assert_null(json_object_get(a, "reasoning_content"));     /* before the last question */
	json_t *call = json_array_get(json_object_get(a, "tool_calls"), 0);
	assert_string_equal(json_string_value(json_object_get(call, "id")), "call_2_0");
	assert_string_equal(
		json_string_value(json_object_get(json_object_get(call, "function"), "arguments")),
		"{\"city\": \"Paris\"}");
	assert_string_equal(
		json_string_value(json_object_get(json_array_get(m, 3), "tool_call_id")),
		"call_2_0");
	json_t *tool = json_array_get(json_object_get(o, "tools"), 0);
	assert_string_equal(
		json_string_value(json_object_get(json_object_get(tool, "function"), "name")),
		"get_weather");
	json_decref(o);

	/* The settings the user chose, by the servers' names; greedy as temperature 0. */
	q.think = 0;
	q.max_tokens = 64;
	q.sampling.temperature = 0.7;
	q.sampling.top_k = 0;
	q.sampling.min_p = 0.05;
	q.sampling.seed = 42;
	q.sampling_set = SAMP_SET_TEMP | SAMP_SET_TOP_K | SAMP_SET_MIN_P | SAMP_SET_SEED;
	o = request(&q);
	assert_true(json_is_false(
		json_object_get(json_object_get(o, "chat_template_kwargs"), "enable_thinking")));
	assert_int_equal(json_integer_value(json_object_get(o, "max_tokens")), 64);
	assert_null(json_object_get(o, "response_format"));
	assert_float_equal(json_real_value(json_object_get(o, "temperature")), 0.7, 1e-12);
	assert_int_equal(json_integer_value(json_object_get(o, "top_k")), -1);
	assert_float_equal(json_real_value(json_object_get(o, "min_p")), 0.05, 1e-12);
	assert_int_equal(json_integer_value(json_object_get(o, "seed")), 42);
	assert_null(json_object_get(o, "top_p"));
	json_decref(o);
	q.sampling.greedy = true;
	q.sampling_set = SAMP_SET_GREEDY;
	q.json = true; /* run --format json: OpenAI's JSON mode */
	o = request(&q);
	assert_float_equal(json_real_value(json_object_get(o, "temperature")), 0.0, 0);
	assert_string_equal(
		json_string_value(json_object_get(json_object_get(o, "response_format"), "type")),
		"json_object");
	json_decref(o);
	q.json = false;

	q.sampling.seed = UINT64_MAX; /* beyond what a server's int64 seed holds */
	q.sampling_set = SAMP_SET_SEED;
	assert_null(remote_request_json(&q, NULL));
	assert_non_null(strstr(err_msg(), "2^63 - 1"));
	chat_free(c);
}

static void test_remote_new(void **state)
{
	(void)state;
	struct remote_options o = {.url = "ftp://host/v1"};
	assert_null(remote_new(&o));
	assert_non_null(strstr(err_msg(), "not http or https"));
	o.url = "not a url at all";
	assert_null(remote_new(&o));
	assert_non_null(strstr(err_msg(), "--url"));
	o.url = "http://user:secret@10.1.2.3:8000/v1/chat/completions/";
	o.api_key = "sk-test";
	struct remote *r = remote_new(&o);
	assert_non_null(r);
	assert_string_equal(remote_url(r), "http://10.1.2.3:8000/v1");
	assert_true(remote_key_in_clear(r));
	remote_free(r);
	o.url = "http://127.0.0.1:8000/v1";
	r = remote_new(&o);
	assert_false(remote_key_in_clear(r));
	remote_free(r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_sse_split_anywhere),
		cmocka_unit_test(test_sse_limits),
		cmocka_unit_test(test_vllm_reasoning),
		cmocka_unit_test(test_sglang_nulls_and_reasoning_name),
		cmocka_unit_test(test_think_tags_in_content),
		cmocka_unit_test(test_think_tags_as_text),
		cmocka_unit_test(test_tool_calls),
		cmocka_unit_test(test_bad_events),
		cmocka_unit_test(test_answer_bound),
		cmocka_unit_test(test_oneline),
		cmocka_unit_test(test_request_body),
		cmocka_unit_test(test_remote_new),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
