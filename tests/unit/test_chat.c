/* test_chat.c — the conversation: editing, JSON save/load round trip, refusal of bad
 * files with a message naming the file and the field, and never overwriting a corrupt
 * file. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "src/chat/chat.h"
#include "src/base/err.h"
#include "src/base/fileio.h"

static char tmpdir[] = "/tmp/qwenchat-test-chat.XXXXXX";

static char *tmp_path(const char *name)
{
	char *p = fio_join(tmpdir, name);
	assert_non_null(p);
	return p;
}

static void write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "wb");
	assert_non_null(f);
	assert_int_equal(fwrite(text, 1, strlen(text), f), strlen(text));
	assert_int_equal(fclose(f), 0);
}

static char *read_file(const char *path)
{
	char *s = fio_read_all(path, 1 << 20, NULL);
	assert_non_null(s);
	return s;
}

static void assert_same_chat(const struct chat *a, const struct chat *b)
{
	assert_int_equal(a->n, b->n);
	for (size_t i = 0; i < a->n; i++) {
		assert_int_equal(a->turns[i].role, b->turns[i].role);
		assert_string_equal(a->turns[i].content, b->turns[i].content);
		if (a->turns[i].reasoning)
			assert_string_equal(a->turns[i].reasoning, b->turns[i].reasoning);
		else
			assert_null(b->turns[i].reasoning);
	}
}

static struct chat *sample_chat(void)
{
	struct chat *c = chat_new();
	assert_non_null(c);
	assert_int_equal(
		chat_add(c, CHAT_USER, "Bonjour, 世界 🙂\n\ttab \"quote\" \\ back", NULL), 0);
	assert_int_equal(chat_add(c, CHAT_ASSISTANT, "Salut !", "The user greets me.\n"), 0);
	assert_int_equal(chat_add(c, CHAT_USER, "", NULL), 0);
	assert_int_equal(chat_add(c, CHAT_ASSISTANT, "<think>\ninline\n</think>\n\nok", NULL), 0);
	assert_int_equal(chat_add(c, CHAT_TOOL, "{\"temp\": 21}", "ignored for tools"), 0);
	assert_int_equal(chat_add(c, CHAT_ASSISTANT, "", ""), 0);
	assert_int_equal(chat_set_system(c, "You are terse."), 0);
	return c;
}

static void test_editing(void **state)
{
	(void)state;
	struct chat *c = sample_chat();
	assert_int_equal(c->n, 7);
	assert_string_equal(chat_system(c), "You are terse.");
	assert_int_equal(c->turns[0].role, CHAT_SYSTEM);
	assert_int_equal(chat_count(c), 6);
	assert_null(c->turns[5].reasoning); /* tool turns keep no reasoning */
	assert_string_equal(c->turns[6].reasoning, "");
	assert_int_equal(chat_set_system(c, "Be kind."), 0);
	assert_int_equal(c->n, 7);
	assert_string_equal(c->turns[0].content, "Be kind.");
	assert_int_equal(chat_last(c, CHAT_USER), 3);
	assert_int_equal(chat_last(c, CHAT_SYSTEM), 0);
	/* /undo: drop the last question and everything after it */
	chat_truncate(c, (size_t)chat_last(c, CHAT_USER));
	assert_int_equal(c->n, 3);
	assert_int_equal(chat_set_turn(c, 2, "Coucou", "new"), 0);
	assert_string_equal(c->turns[2].content, "Coucou");
	assert_string_equal(c->turns[2].reasoning, "new");
	assert_int_equal(chat_set_turn(c, 9, "x", NULL), -1);
	assert_int_equal(chat_add(c, CHAT_USER, "again", NULL), 0);
	chat_remove(c, 1, 2); /* oldest exchange, system prompt kept */
	assert_int_equal(c->n, 2);
	assert_string_equal(c->turns[1].content, "again");
	chat_remove(c, 5, 1); /* out of range: no change */
	assert_int_equal(c->n, 2);
	chat_clear(c);
	assert_int_equal(c->n, 1);
	assert_string_equal(chat_system(c), "Be kind.");
	assert_int_equal(chat_set_system(c, NULL), 0);
	assert_int_equal(c->n, 0);
	assert_null(chat_system(c));
	assert_int_equal(chat_last(c, CHAT_USER), -1);
	chat_free(c);
	chat_free(NULL);
}

static void test_invalid_utf8_replaced(void **state)
{
	(void)state;
	struct chat *c = chat_new();
	/* a lone continuation byte, a truncated 3-byte sequence, an overlong '/', a surrogate:
	 * one U+FFFD for each maximal subpart, as Python's errors="replace" gives */
	assert_int_equal(chat_add(c, CHAT_USER,
				  "a\x80"
				  "b\xe4\xb8"
				  "c\xc0\xaf"
				  "d\xed\xa0\x80"
				  "é",
				  NULL),
			 0);
	assert_string_equal(c->turns[0].content, "a\xef\xbf\xbd"
						 "b\xef\xbf\xbd"
						 "c\xef\xbf\xbd\xef\xbf\xbd"
						 "d\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd"
						 "é");
	char *path = tmp_path("utf8.json");
	assert_int_equal(chat_save(c, path, false), 0);
	struct chat *d = chat_load(path);
	assert_non_null(d);
	assert_same_chat(c, d);
	chat_free(c);
	chat_free(d);
	unlink(path);
	free(path);
}

/* The "qwenchat" object (the model and settings a conversation was held with) is
 * kept through load, save and dup; a file without it loads with none and is written
 * back as it was; one that is not an object is refused. */
static void test_meta(void **state)
{
	(void)state;
	struct chat *c = sample_chat();
	assert_null(c->meta);
	assert_int_equal(chat_set_meta(c, "[1]"), -1);
	assert_int_equal(chat_set_meta(c, "{\"model\": \"/m\", \"think\": false}"), 0);
	char *path = tmp_path("meta.json");
	assert_int_equal(chat_save(c, path, false), 0);
	struct chat *d = chat_load(path);
	assert_non_null(d);
	assert_same_chat(c, d);
	assert_string_equal(d->meta, "{\"model\":\"/m\",\"think\":false}"); /* compact */
	struct chat *e = chat_dup(d);
	assert_non_null(e);
	assert_string_equal(e->meta, d->meta);
	assert_int_equal(chat_set_meta(e, NULL), 0);
	char *text = chat_to_json(e, NULL);
	assert_non_null(text);
	assert_int_equal(text[0], '['); /* no meta, no tools: the plain array */
	free(text);
	const char *bad = "{\"messages\": [], \"qwenchat\": 3}";
	struct chat *f = chat_from_json(bad, strlen(bad), "x.json");
	assert_null(f);
	assert_string_equal(err_msg(), "x.json: qwenchat: not an object");
	chat_free(c);
	chat_free(d);
	chat_free(e);
	unlink(path);
	free(path);
}

static void test_round_trip(void **state)
{
	(void)state;
	struct chat *c = sample_chat();
	char *path = tmp_path("conv.json");
	assert_int_equal(chat_save(c, path, false), 0);
	struct chat *d = chat_load(path);
	if (!d)
		fail_msg("%s", err_msg());
	assert_same_chat(c, d);
	/* saving over a valid conversation is allowed, and saving again is stable */
	assert_int_equal(chat_save(d, path, false), 0);
	char *first = read_file(path);
	struct chat *e = chat_load(path);
	assert_non_null(e);
	assert_same_chat(c, e);
	size_t len;
	char *again = chat_to_json(e, &len);
	assert_non_null(again);
	assert_int_equal(len, strlen(first));
	assert_string_equal(again, first);
	struct chat *dup = chat_dup(c);
	assert_same_chat(c, dup);
	chat_free(dup);
	free(again);
	free(first);
	chat_free(c);
	chat_free(d);
	chat_free(e);
	unlink(path);
	free(path);
}

static void test_corrupt_file_not_overwritten(void **state)
{
	(void)state;
	struct chat *c = sample_chat();
	char *path = tmp_path("corrupt.json");
	const char *corrupt = "[{\"role\": \"user\", \"content\": \"half a file";
	write_file(path, corrupt);
	assert_null(chat_load(path));
	assert_non_null(strstr(err_msg(), path));
	assert_non_null(strstr(err_msg(), "invalid JSON"));
	assert_int_equal(chat_save(c, path, false), -1);
	assert_non_null(strstr(err_msg(), "not overwritten"));
	char *now = read_file(path);
	assert_string_equal(now, corrupt);
	free(now);
	/* a valid JSON file that is not a conversation is protected too */
	write_file(path, "{\"model\": \"x\"}");
	assert_int_equal(chat_save(c, path, false), -1);
	now = read_file(path);
	assert_string_equal(now, "{\"model\": \"x\"}");
	free(now);
	/* asked explicitly, it is replaced */
	assert_int_equal(chat_save(c, path, true), 0);
	struct chat *d = chat_load(path);
	assert_non_null(d);
	assert_same_chat(c, d);
	/* no temporary file is left behind */
	char *tmp = NULL;
	assert_true(asprintf(&tmp, "%s.tmp.%ld", path, (long)getpid()) > 0);
	assert_false(fio_is_file(tmp));
	free(tmp);
	chat_free(c);
	chat_free(d);
	unlink(path);
	free(path);
}

/* Parses text and expects an error containing every given fragment. */
static void expect_refused(const char *text, const char *frag1, const char *frag2)
{
	struct chat *c = chat_from_json(text, strlen(text), "conv.json");
	if (c)
		fail_msg("accepted: %s", text);
	const char *m = err_msg();
	if (!strstr(m, "conv.json") || !strstr(m, frag1) || (frag2 && !strstr(m, frag2)))
		fail_msg("message \"%s\" for %s", m, text);
	assert_null(strchr(m, '\n'));
}

static void test_bad_input(void **state)
{
	(void)state;
	expect_refused("", "invalid JSON", NULL);
	expect_refused("[{\"role\": \"user\", \"content\": \"x\"},]", "invalid JSON", "line 1");
	expect_refused("\"just a string\"", "expected a JSON array", NULL);
	expect_refused("{\"msgs\": []}", "expected a JSON array", NULL);
	expect_refused("[1]", "messages[0]", "not an object");
	expect_refused("[{\"role\": \"user\", \"content\": \"a\"}, {\"role\": \"robot\", "
		       "\"content\": \"b\"}]",
		       "messages[1].role", "unknown role \"robot\"");
	expect_refused("[{\"content\": \"b\"}]", "messages[0].role", "missing");
	expect_refused("[{\"role\": \"user\"}]", "messages[0].content", "missing");
	expect_refused(
		"[{\"role\": \"user\", \"content\": [{\"type\": \"text\", \"text\": \"x\"}]}]",
		"messages[0].content", "not a string");
	expect_refused(
		"[{\"role\": \"assistant\", \"content\": \"\", \"tool_calls\": [{\"function\": "
		"{\"name\": 5, \"arguments\": {}}}]}]",
		"messages[0].tool_calls[0].function.name", "not a string");
	expect_refused(
		"[{\"role\": \"assistant\", \"content\": \"\", \"tool_calls\": [{\"function\": "
		"\"f\"}]}]",
		"messages[0].tool_calls[0].function", "not an object");
	expect_refused("[{\"role\": \"assistant\", \"content\": \"\", \"tool_calls\": {}}]",
		       "messages[0].tool_calls", "not an array");
	expect_refused("[{\"role\": \"assistant\", \"content\": \"\", \"tool_calls\": [7]}]",
		       "messages[0].tool_calls[0]", "not an object");
	expect_refused("[{\"role\": \"assistant\", \"content\": null}]", "messages[0].content",
		       "not a string");
	expect_refused("{\"messages\": [{\"role\": \"user\", \"content\": \"x\"}], \"tools\": {}}",
		       "tools", "not an array");
	expect_refused("{\"messages\": [{\"role\": \"user\", \"content\": \"x\"}], \"tools\": [1]}",
		       "tools[0]", "not an object");
	expect_refused("[{\"role\": \"assistant\", \"content\": \"x\", \"reasoning_content\": 3}]",
		       "messages[0].reasoning_content", "not a string");
	expect_refused("[{\"role\": \"user\", \"content\": \"a\\u0000b\"}]", "invalid JSON", NULL);
	expect_refused("[{\"role\": \"user\", \"content\": \"\xff\"}]", "invalid JSON", NULL);
	char *path = tmp_path("missing.json");
	assert_null(chat_load(path));
	assert_non_null(strstr(err_msg(), path));
	free(path);
}

static void test_accepted_forms(void **state)
{
	(void)state;
	const char *text =
		"{\"model\": \"m\", \"tools\": [], \"messages\": ["
		"{\"role\": \"user\", \"content\": \"hi\", \"name\": \"bob\","
		" \"reasoning_content\": 7},"
		"{\"role\": \"assistant\", \"content\": \"yo\", \"reasoning_content\": null,"
		" \"tool_calls\": []}]}";
	struct chat *c = chat_from_json(text, strlen(text), "x.json");
	if (!c)
		fail_msg("%s", err_msg());
	assert_int_equal(c->n, 2);
	assert_null(c->turns[1].reasoning);
	chat_free(c);
	c = chat_from_json("[]", 2, "empty.json");
	assert_non_null(c);
	assert_int_equal(c->n, 0);
	chat_free(c);
	assert_int_equal(chat_role_parse("tool"), CHAT_TOOL);
	assert_int_equal(chat_role_parse("Tool"), -1);
	assert_string_equal(chat_role_name(CHAT_ASSISTANT), "assistant");
}

/* Tool definitions and calls: kept as the templates print them, saved and read back,
 * copied by chat_dup, kept by chat_set_turn. */
static void test_tool_calls(void **state)
{
	(void)state;
	const char *text = "{\"tools\": [{\"type\": \"function\", \"function\": {\"name\": \"w\","
			   " \"p\": {\"x\": 0.1, \"n\": 2, \"s\": \"é\\n\"}}}], \"messages\": ["
			   "{\"role\": \"user\", \"content\": \"hi\"},"
			   "{\"role\": \"assistant\", \"content\": null, \"tool_calls\": ["
			   "{\"id\": \"1\", \"type\": \"function\", \"function\": {\"name\": \"w\","
			   " \"arguments\": {\"city\": \"Paris\", \"days\": 1e-05}}},"
			   "{\"name\": \"v\", \"arguments\": \"{\\\"raw\\\": 1}\"}]}]}";
	struct chat *c = chat_from_json(text, strlen(text), "t.json");
	if (!c)
		fail_msg("%s", err_msg());
	assert_int_equal(c->n_tools, 1);
	assert_string_equal(c->tools[0], "{\"type\": \"function\", \"function\": {\"name\": \"w\", "
					 "\"p\": {\"x\": 0.1, \"n\": 2, \"s\": \"é\\n\"}}}");
	const struct chat_turn *a = &c->turns[1];
	assert_string_equal(a->content, ""); /* null content with calls */
	assert_int_equal(a->n_calls, 2);
	assert_string_equal(a->calls[0].name, "w");
	assert_string_equal(a->calls[0].arguments, "{\"city\": \"Paris\", \"days\": 1e-05}");
	assert_false(a->calls[0].arguments_is_text);
	assert_string_equal(a->calls[1].name, "v");
	assert_string_equal(a->calls[1].arguments, "{\"raw\": 1}");
	assert_true(a->calls[1].arguments_is_text);
	/* no content at all beside the calls: the same as null (OpenAI omits it) */
	const char *bare =
		"[{\"role\": \"user\", \"content\": \"hi\"}, {\"role\": "
		"\"assistant\", \"tool_calls\": [{\"name\": \"w\", \"arguments\": {}}]}]";
	struct chat *b = chat_from_json(bare, strlen(bare), "bare.json");
	if (!b)
		fail_msg("%s", err_msg());
	assert_string_equal(b->turns[1].content, "");
	assert_int_equal(b->turns[1].n_calls, 1);
	chat_free(b);

	/* saved as {"messages", "tools"} and read back the same */
	size_t len;
	char *saved = chat_to_json(c, &len);
	assert_non_null(saved);
	assert_non_null(strstr(saved, "\"tools\""));
	struct chat *back = chat_from_json(saved, len, "saved.json");
	if (!back)
		fail_msg("%s", err_msg());
	assert_int_equal(back->n_tools, 1);
	assert_string_equal(back->tools[0], c->tools[0]);
	assert_int_equal(back->turns[1].n_calls, 2);
	for (size_t k = 0; k < 2; k++) {
		assert_string_equal(back->turns[1].calls[k].name, a->calls[k].name);
		assert_string_equal(back->turns[1].calls[k].arguments, a->calls[k].arguments);
		assert_int_equal(back->turns[1].calls[k].arguments_is_text,
				 a->calls[k].arguments_is_text);
	}
	free(saved);
	chat_free(back);

	struct chat *d = chat_dup(c);
	assert_non_null(d);
	assert_int_equal(d->n_tools, 1);
	assert_int_equal(d->turns[1].n_calls, 2);
	assert_string_equal(d->turns[1].calls[1].arguments, "{\"raw\": 1}");
	assert_int_equal(chat_set_turn(d, 1, "new text", NULL), 0);
	assert_int_equal(d->turns[1].n_calls, 2);
	assert_string_equal(d->turns[1].content, "new text");
	chat_free(d);
	assert_int_equal(chat_add_tool_call(c, 0, "f", "{}", false), -1); /* a user turn */
	chat_free(c);

	/* without tools a conversation is still saved as a bare array */
	const char *plain = "[{\"role\": \"user\", \"content\": \"x\"}]";
	c = chat_from_json(plain, strlen(plain), "a.json");
	assert_non_null(c);
	saved = chat_to_json(c, NULL);
	assert_true(saved && saved[0] == '[');
	free(saved);
	chat_free(c);
}

static int setup(void **state)
{
	(void)state;
	return mkdtemp(tmpdir) ? 0 : -1;
}

static int teardown(void **state)
{
	(void)state;
	return rmdir(tmpdir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_editing),
		cmocka_unit_test(test_invalid_utf8_replaced),
		cmocka_unit_test(test_round_trip),
		cmocka_unit_test(test_meta),
		cmocka_unit_test(test_corrupt_file_not_overwritten),
		cmocka_unit_test(test_bad_input),
		cmocka_unit_test(test_accepted_forms),
		cmocka_unit_test(test_tool_calls),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
