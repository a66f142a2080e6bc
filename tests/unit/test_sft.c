/* test_sft.c — conversations as training data, with the real Qwen3 tokenizer: the
 * tokens are the chat's (chat_encode of the whole conversation) but where an answer
 * starts with a line break, the scored tokens decode to exactly the answers of the
 * rendering and the others to the rest, a typed control token is text and never
 * scored; files read as JSON Lines or as the chat's saved conversations, with errors
 * naming the file, the line and the message; ShareGPT and Alpaca records, with the
 * keys LLaMA-Factory adds to them. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "src/base/err.h"
#include "src/base/fileio.h"
#include "src/chat/fit.h"
#include "src/chat/sft.h"
#include "tests/unit/testutil.h"
#include "tokenizer/tokenizer.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static struct tok *tk;
static char dir[256];

static int setup(void **state)
{
	(void)state;
	char tdir[4096];
	tu_tokenizer_dir(tdir, sizeof tdir);
	tk = tok_load(tdir);
	snprintf(dir, sizeof dir, "/tmp/qwenchat-sft.XXXXXX");
	return tk && mkdtemp(dir) ? 0 : -1;
}

static int teardown(void **state)
{
	(void)state;
	tok_free(tk);
	char cmd[512];
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
	return system(cmd);
}

static struct chat *conv(const char *json)
{
	struct chat *c = chat_from_json(json, strlen(json), "test");
	if (!c)
		fail_msg("%s", err_msg());
	return c;
}

/* The text of ids[i] for the i where (scored[i] != 0) == want, one after another. */
static char *decode_where(const int32_t *ids, const unsigned char *scored, size_t n, bool want)
{
	int32_t *sel = malloc((n ? n : 1) * sizeof *sel);
	size_t k = 0;
	for (size_t i = 0; i < n; i++)
		if ((scored[i] != 0) == want)
			sel[k++] = ids[i];
	size_t len;
	char *s = tok_decode(tk, sel, k, false, &len);
	assert_non_null(s);
	free(sel);
	return s;
}

/* Encodes c and checks: the ids are chat_encode's (when `whole`), the scored tokens
 * are the answers' text and the others the rest of the rendering. */
static void check(const struct chat *c, enum tmpl_variant v, bool whole)
{
	int32_t *ids;
	unsigned char *scored;
	size_t n;
	if (sft_encode(tk, c, v, &ids, &scored, &n))
		fail_msg("%s", err_msg());
	size_t m;
	int32_t *chat_ids = chat_encode(tk, c, v, false, TMPL_THINK_ABSENT, true, &m);
	assert_non_null(chat_ids);
	if (whole) {
		assert_int_equal(n, m);
		assert_memory_equal(ids, chat_ids, n * sizeof *ids);
	}
	struct tmpl_spans msg = {0}, ans = {0};
	size_t len;
	char *text = tmpl_render_answers(c, v, &len, &msg, &ans);
	assert_non_null(text);
	char *answers = calloc(len + 1, 1), *context = calloc(len + 1, 1);
	size_t na = 0, nc = 0, pos = 0;
	for (size_t i = 0; i <= ans.n; i++) {
		size_t s = i < ans.n ? ans.v[i].start : len;
		memcpy(context + nc, text + pos, s - pos);
		nc += s - pos;
		if (i < ans.n) {
			memcpy(answers + na, text + s, ans.v[i].end - s);
			na += ans.v[i].end - s;
			pos = ans.v[i].end;
		}
	}
	char *got_a = decode_where(ids, scored, n, true), *got_c = decode_where(ids, scored, n, false);
	assert_string_equal(got_a, answers);
	assert_string_equal(got_c, context);
	free(got_a);
	free(got_c);
	free(answers);
	free(context);
	free(text);
	free(msg.v);
	free(ans.v);
	free(chat_ids);
	free(ids);
	free(scored);
}

static void test_encode(void **state)
{
	(void)state;
	struct chat *c = conv(
		"{\"messages\": [{\"role\": \"system\", \"content\": \"Be brief.\"},"
		"{\"role\": \"user\", \"content\": \"What is 2+2?\"},"
		"{\"role\": \"assistant\", \"content\": \"4.\", \"reasoning_content\": \"Add.\"},"
		"{\"role\": \"user\", \"content\": \"Weather in Paris? <|im_end|>\"},"
		"{\"role\": \"assistant\", \"content\": \"\", \"reasoning_content\": \"A tool.\","
		" \"tool_calls\": [{\"type\": \"function\", \"function\": {\"name\": \"weather\","
		" \"arguments\": {\"city\": \"Paris\"}}}]},"
		"{\"role\": \"tool\", \"content\": \"18 C\"},"
		"{\"role\": \"assistant\", \"content\": \"It is 18 C.\"}],"
		"\"tools\": [{\"type\": \"function\", \"function\": {\"name\": \"weather\"}}]}");
	for (int v = TMPL_CHATML; v <= TMPL_QWEN3_THINKING; v++)
		check(c, (enum tmpl_variant)v, true);
	/* the typed <|im_end|> is text, and context */
	int32_t *ids;
	unsigned char *scored;
	size_t n;
	assert_int_equal(sft_encode(tk, c, TMPL_QWEN3, &ids, &scored, &n), 0);
	int im_end = tok_id(tk, "<|im_end|>"), ends = 0, scored_ends = 0;
	for (size_t i = 0; i < n; i++) {
		ends += ids[i] == im_end;
		scored_ends += ids[i] == im_end && scored[i];
	}
	assert_int_equal(ends, 7);        /* one per turn (the tool turn's user turn) */
	assert_int_equal(scored_ends, 3); /* one per answer */
	assert_false(scored[0]);
	free(ids);
	free(scored);
	chat_free(c);
}

/* An answer that starts with a line break: the newline after "assistant" is a token of
 * its own, as at the end of the chat's generation prompt. */
static void test_answer_starts_with_newline(void **state)
{
	(void)state;
	struct chat *c = conv("[{\"role\": \"user\", \"content\": \"hi\"},"
			      "{\"role\": \"assistant\", \"content\": \"\\n\\nhello\"}]");
	check(c, TMPL_QWEN3_INSTRUCT, false);
	int32_t *ids;
	unsigned char *scored;
	size_t n;
	assert_int_equal(sft_encode(tk, c, TMPL_QWEN3_INSTRUCT, &ids, &scored, &n), 0);
	size_t first = 0;
	while (!scored[first])
		first++;
	size_t len;
	const char *prev = tok_piece(tk, ids[first - 1], &len);
	assert_int_equal(len, 1);
	assert_memory_equal(prev, "\n", 1);
	const char *ans = tok_piece(tk, ids[first], &len);
	assert_true(len >= 1 && ans[0] == '\n');
	free(ids);
	free(scored);
	chat_free(c);
}

/* OpenAI's "weight": 0 on an assistant turn (--sft's records): its answer is context,
 * the others are trained; the ids are the same as without it; a weight other than 0 or
 * 1 is refused. */
static void test_weight(void **state)
{
	(void)state;
	const char *fmt = "{\"messages\": [{\"role\": \"user\", \"content\": \"q1\"},"
			  "{\"role\": \"assistant\", \"content\": \"bad answer\"%s},"
			  "{\"role\": \"user\", \"content\": \"q2\"},"
			  "{\"role\": \"assistant\", \"content\": \"good\", \"weight\": 1}]}";
	char text[512];
	snprintf(text, sizeof text, fmt, ", \"weight\": 0");
	struct chat *w0 = sft_chat_from_json(text, strlen(text), "w");
	snprintf(text, sizeof text, fmt, "");
	struct chat *w1 = sft_chat_from_json(text, strlen(text), "w");
	assert_non_null(w0);
	assert_non_null(w1);
	int32_t *ids0, *ids1;
	unsigned char *sc0, *sc1;
	size_t n0, n1;
	assert_int_equal(sft_encode(tk, w0, TMPL_QWEN3, &ids0, &sc0, &n0), 0);
	assert_int_equal(sft_encode(tk, w1, TMPL_QWEN3, &ids1, &sc1, &n1), 0);
	assert_int_equal(n0, n1);
	assert_memory_equal(ids0, ids1, n0 * sizeof *ids0);
	char *a0 = decode_where(ids0, sc0, n0, true), *a1 = decode_where(ids1, sc1, n1, true);
	assert_string_equal(a1, "bad answer<|im_end|><think>\n\n</think>\n\ngood<|im_end|>");
	assert_string_equal(a0, "<think>\n\n</think>\n\ngood<|im_end|>");
	free(a0);
	free(a1);
	free(ids0);
	free(ids1);
	free(sc0);
	free(sc1);
	/* kept by a copy and written back by chat_to_json */
	struct chat *d = chat_dup(w0);
	assert_non_null(d);
	assert_true(d->turns[1].untrained && !d->turns[3].untrained);
	size_t len;
	char *json = chat_to_json(d, &len);
	assert_non_null(strstr(json, "\"weight\": 0"));
	free(json);
	chat_free(d);
	chat_free(w0);
	chat_free(w1);
	snprintf(text, sizeof text, fmt, ", \"weight\": 0.5");
	assert_null(sft_chat_from_json(text, strlen(text), "w.jsonl:3"));
	assert_string_equal(err_msg(), "w.jsonl:3: messages[1].weight: expected 0 or 1 (0: not "
				       "trained on)");
	/* a conversation file (the chat, template --messages) ignores the key, as the
	 * templates do */
	struct chat *c = conv(text);
	assert_false(c->turns[1].untrained);
	chat_free(c);
}

struct seen {
	int n;
	char where[8][256];
	size_t turns[8];
};

static int collect(void *user, const struct chat *c, const char *where)
{
	struct seen *s = user;
	if (s->n < 8) {
		snprintf(s->where[s->n], sizeof s->where[0], "%s", where);
		s->turns[s->n] = c->n;
	}
	s->n++;
	return 0;
}

static char *put(const char *name, const char *text)
{
	char *p = fio_join(dir, name);
	assert_non_null(p);
	assert_int_equal(fio_write_atomic(p, text, strlen(text), 0600, 0), 0);
	return p;
}

static void test_files(void **state)
{
	(void)state;
	char want[512];
	struct seen s = {0};
	/* JSON Lines, blank lines skipped, numbered as in the file */
	char *p = put("a.jsonl", "{\"messages\": [{\"role\": \"user\", \"content\": \"x\"}]}\n\n"
				 "  \n[{\"role\": \"user\", \"content\": \"y\"},"
				 " {\"role\": \"assistant\", \"content\": \"z\"}]\r\n");
	assert_int_equal(sft_read_file(p, collect, &s), 0);
	assert_int_equal(s.n, 2);
	snprintf(want, sizeof want, "%s:4", p);
	assert_string_equal(s.where[1], want);
	assert_int_equal(s.turns[1], 2);
	free(p);
	/* a conversation the chat saved, pretty-printed over many lines */
	struct chat *c = conv("[{\"role\": \"user\", \"content\": \"q\"},"
			      "{\"role\": \"assistant\", \"content\": \"a\", \"reasoning_content\": \"r\"}]");
	p = fio_join(dir, "saved.json");
	assert_int_equal(chat_save(c, p, false), 0);
	chat_free(c);
	memset(&s, 0, sizeof s);
	assert_int_equal(sft_read_file(p, collect, &s), 0);
	assert_int_equal(s.n, 1);
	assert_string_equal(s.where[0], p);
	free(p);
	/* JSON Lines without the name */
	p = put("lines.json", "{\"messages\": []}\n{\"messages\": []}\n");
	memset(&s, 0, sizeof s);
	assert_int_equal(sft_read_file(p, collect, &s), 0);
	assert_int_equal(s.n, 2);
	free(p);
	/* errors: the file, the line, the message */
	p = put("bad.jsonl", "{\"messages\": []}\n{\"messages\": [{\"role\": \"user\", \"content\": "
			     "\"x\"}, {\"content\": \"y\"}]}\n");
	assert_int_equal(sft_read_file(p, collect, &s), -1);
	snprintf(want, sizeof want, "%s:2: messages[1].role: missing or not a string", p);
	assert_string_equal(err_msg(), want);
	free(p);
	p = put("broken.jsonl", "{\"messages\": []}\n{\"messages\": [\n");
	assert_int_equal(sft_read_file(p, collect, &s), -1);
	snprintf(want, sizeof want, "%s:2: invalid JSON at column", p);
	assert_non_null(strstr(err_msg(), want));
	free(p);
	p = put("bad.json", "[{\"role\": \"robot\", \"content\": \"x\"}]");
	assert_int_equal(sft_read_file(p, collect, &s), -1);
	assert_non_null(strstr(err_msg(), "bad.json: messages[0].role: unknown role \"robot\""));
	free(p);
}

/* ShareGPT and Alpaca records (LLaMA-Factory's "system", "tools" as JSON text, the
 * "function_call" speaker, "history") read as the OpenAI messages they stand for. */
static void test_formats(void **state)
{
	(void)state;
	static const char *const pairs[][2] = {
		{"{\"conversations\": [{\"from\": \"system\", \"value\": \"S\"}, {\"from\": "
		 "\"human\", \"value\": \"q\"}, {\"from\": \"gpt\", \"value\": \"a\"}, {\"from\": "
		 "\"observation\", \"value\": \"t\"}, {\"from\": \"model\", \"value\": \"b\"}]}",
		 "[{\"role\": \"system\", \"content\": \"S\"}, {\"role\": \"user\", \"content\": "
		 "\"q\"}, {\"role\": \"assistant\", \"content\": \"a\"}, {\"role\": \"tool\", "
		 "\"content\": \"t\"}, {\"role\": \"assistant\", \"content\": \"b\"}]"},
		{"{\"conversations\": [{\"role\": \"user\", \"content\": \"q\"}, {\"from\": "
		 "\"gpt\", "
		 "\"value\": \"a\"}], \"tools\": [{\"type\": \"function\", \"function\": "
		 "{\"name\": "
		 "\"f\"}}]}",
		 "{\"messages\": [{\"role\": \"user\", \"content\": \"q\"}, {\"role\": "
		 "\"assistant\", \"content\": \"a\"}], \"tools\": [{\"type\": \"function\", "
		 "\"function\": {\"name\": \"f\"}}]}"},
		{"{\"instruction\": \"Add\", \"input\": \"1 2\", \"output\": \"3\", \"system\": "
		 "\"S\"}",
		 "[{\"role\": \"system\", \"content\": \"S\"}, {\"role\": \"user\", \"content\": "
		 "\"Add\\n1 2\"}, {\"role\": \"assistant\", \"content\": \"3\"}]"},
		{"{\"instruction\": \"\", \"input\": \"only\", \"output\": \"3\"}",
		 "[{\"role\": \"user\", \"content\": \"only\"}, {\"role\": \"assistant\", "
		 "\"content\": \"3\"}]"}, /* LLaMA-Factory joins what is not empty */
		{"{\"instruction\": \"Hi\", \"input\": \"\", \"output\": \"hello\", \"system\": "
		 "null}",
		 "[{\"role\": \"user\", \"content\": \"Hi\"}, {\"role\": \"assistant\", "
		 "\"content\": \"hello\"}]"}, /* LLaMA-Factory's keys */
		{"{\"system\": \"S\", \"conversations\": [{\"from\": \"human\", \"value\": \"q\"}, "
		 "{\"from\": \"function_call\", \"value\": \"{\\\"name\\\": \\\"f\\\", "
		 "\\\"arguments\\\": {\\\"x\\\": 1}}\"}, {\"from\": \"observation\", \"value\": "
		 "\"t\"}, {\"from\": \"gpt\", \"value\": \"a\"}], \"tools\": \"[{\\\"name\\\": "
		 "\\\"f\\\"}]\"}",
		 "{\"messages\": [{\"role\": \"system\", \"content\": \"S\"}, {\"role\": \"user\", "
		 "\"content\": \"q\"}, {\"role\": \"assistant\", \"tool_calls\": [{\"type\": "
		 "\"function\", \"function\": {\"name\": \"f\", \"arguments\": {\"x\": 1}}}]}, "
		 "{\"role\": \"tool\", \"content\": \"t\"}, {\"role\": \"assistant\", \"content\": "
		 "\"a\"}], \"tools\": [{\"type\": \"function\", \"function\": {\"name\": "
		 "\"f\"}}]}"}, /* a bare definition wrapped, as LLaMA-Factory wraps it */
		{"{\"instruction\": \"q2\", \"input\": \"\", \"output\": \"a2\", \"history\": "
		 "[[\"q1\", \"a1\"]], \"system\": \"S\"}",
		 "[{\"role\": \"system\", \"content\": \"S\"}, {\"role\": \"user\", \"content\": "
		 "\"q1\"}, {\"role\": \"assistant\", \"content\": \"a1\"}, {\"role\": \"user\", "
		 "\"content\": \"q2\"}, {\"role\": \"assistant\", \"content\": \"a2\"}]"},
		{"{\"messages\": [{\"role\": \"user\", \"content\": [{\"type\": \"text\", "
		 "\"text\": \"a\"}, {\"type\": \"text\", \"text\": \"b\"}]}, {\"role\": "
		 "\"assistant\", \"content\": [{\"type\": \"text\", \"text\": \"c\"}]}]}",
		 "[{\"role\": \"user\", \"content\": \"a\\nb\"}, {\"role\": \"assistant\", "
		 "\"content\": \"c\"}]"}, /* OpenAI's text parts */
		{"{\"messages\": [{\"role\": \"developer\", \"content\": [{\"type\": \"text\", "
		 "\"text\": \"S\"}]}, {\"role\": \"user\", \"content\": \"q\"}, {\"role\": "
		 "\"assistant\", \"content\": \"a\", \"weight\": 1}]}",
		 "[{\"role\": \"system\", \"content\": \"S\"}, {\"role\": \"user\", \"content\": "
		 "\"q\"}, {\"role\": \"assistant\", \"content\": \"a\"}]"}, /* "developer" */
		{"{\"conversations\": [{\"role\": \"developer\", \"content\": \"S\"}, {\"role\": "
		 "\"user\", \"content\": [{\"type\": \"text\", \"text\": \"a\"}, {\"type\": "
		 "\"text\", \"text\": \"b\"}]}, {\"from\": \"gpt\", \"value\": \"c\"}]}",
		 "[{\"role\": \"system\", \"content\": \"S\"}, {\"role\": \"user\", \"content\": "
		 "\"a\\nb\"}, {\"role\": \"assistant\", \"content\": \"c\"}]"}, /* as OpenAI's */
		{"{\"system\": \"\", \"conversations\": [{\"from\": \"system\", \"value\": \"S\"}, "
		 "{\"from\": \"human\", \"value\": \"q\"}, {\"from\": \"gpt\", \"value\": \"a\"}]}",
		 "[{\"role\": \"system\", \"content\": \"S\"}, {\"role\": \"user\", \"content\": "
		 "\"q\"}, {\"role\": \"assistant\", \"content\": \"a\"}]"},
	};
	for (size_t i = 0; i < sizeof pairs / sizeof pairs[0]; i++) {
		struct chat *a = sft_chat_from_json(pairs[i][0], strlen(pairs[i][0]), "t");
		if (!a)
			fail_msg("case %zu: %s", i, err_msg());
		struct chat *b = conv(pairs[i][1]);
		char *ja = chat_to_json(a, NULL), *jb = chat_to_json(b, NULL);
		assert_string_equal(ja, jb);
		free(ja);
		free(jb);
		chat_free(a);
		chat_free(b);
	}
	static const char *const bad[][2] = {
		{"{\"conversations\": [{\"from\": \"robot\", \"value\": \"x\"}]}",
		 "t: conversations[0].from: unknown speaker \"robot\""},
		{"{\"conversations\": [{\"value\": \"x\"}]}",
		 "t: conversations[0].from: missing or not a string"},
		{"{\"conversations\": [{\"from\": \"human\", \"value\": 3}]}",
		 "t: conversations[0].value: expected a string, got a number"},
		{"{\"conversations\": {}}", "t: conversations: expected an array, got an object"},
		{"{\"instruction\": \"x\"}", "t: output: expected a string, got nothing"},
		{"{\"instruction\": \"x\", \"output\": \"y\", \"input\": [1]}",
		 "t: input: expected a string, got an array"},
		{"{\"system\": \"S\", \"conversations\": [{\"from\": \"system\", \"value\": "
		 "\"T\"}, {\"from\": \"human\", \"value\": \"q\"}]}",
		 "t: system: the conversation starts with a system turn too"},
		{"{\"system\": 3, \"conversations\": []}",
		 "t: system: expected a string, got a number"},
		{"{\"conversations\": [{\"from\": \"function_call\", \"value\": \"f(1)\"}]}",
		 "t: conversations[0].value: a function_call is the JSON text of"},
		{"{\"conversations\": [], \"tools\": \"nope\"}",
		 "t: tools: expected an array of definitions"},
		{"{\"instruction\": \"x\", \"output\": \"y\", \"history\": [[\"q\"]]}",
		 "t: history[0]: expected a pair of strings"},
		{"{\"instruction\": \"x\", \"output\": \"y\", \"history\": \"q\"}",
		 "t: history: expected an array, got a string"},
		{"{\"input\": \"x\", \"output\": \"y\"}",
		 "t: not a conversation: expected \"messages\" (OpenAI), \"conversations\" "
		 "(ShareGPT) or \"instruction\" and \"output\" (Alpaca)"},
		{"{}", "t: not a conversation: expected \"messages\""},
		{"[{\"role\": \"user\", \"content\": [{\"type\": \"image_url\"}]}]",
		 "t: messages[0].content[0]: expected a text part"},
		{"{\"conversations\": [{\"role\": \"user\", \"content\": \"q\"}, {\"role\": "
		 "\"assistant\", \"content\": [\"a\"]}]}",
		 "t: conversations[1].content[0]: expected a text part"},
		{"{\"system\": \"S\", \"conversations\": [{\"role\": \"user\", \"content\": "
		 "\"q\"}, {\"role\": \"assistant\", \"content\": 7}]}",
		 "t: conversations[1].content: missing or not a string"}, /* not messages[2] */
		{"{\"conversations\": [{\"from\": \"human\", \"value\": \"q\"}, {\"from\": "
		 "\"function_call\", \"value\": \"{\\\"name\\\": 5, \\\"arguments\\\": {}}\"}]}",
		 "t: conversations[1].tool_calls[0].function.name: missing or not a string"},
		{"{\"conversations\": [{\"from\": \"human\", \"value\": \"q\"}, {\"from\": "
		 "\"function_call\", \"value\": "
		 "\"[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[]]]]]]]]]"
		 "]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]\"}]}",
		 "t: conversations[1].value: JSON nested deeper than"},
	};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		assert_null(sft_chat_from_json(bad[i][0], strlen(bad[i][0]), "t"));
		if (strncmp(err_msg(), bad[i][1], strlen(bad[i][1])))
			fail_msg("case %zu: %s", i, err_msg());
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_encode),  cmocka_unit_test(test_answer_starts_with_newline),
		cmocka_unit_test(test_weight),  cmocka_unit_test(test_files),
		cmocka_unit_test(test_formats),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
