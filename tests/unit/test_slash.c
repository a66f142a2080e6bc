/* test_slash.c — slash command parsing: names, prefixes, values, ranges, errors, completion. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "src/app/slash.h"

static char err[256];

static void test_is_command(void **st)
{
	(void)st;
	assert_true(slash_is_command("/help"));
	assert_false(slash_is_command("// not a command"));
	assert_false(slash_is_command("/ x"));
	assert_false(slash_is_command("hello /help"));
	/* ollama's "/?" is help; a lone "/" or "/1" is an error, not a message */
	assert_true(slash_is_command("/?"));
	assert_true(slash_is_command("/"));
	assert_true(slash_is_command("/1"));
	struct slash_call c;
	assert_int_equal(slash_parse("/?", &c, err, sizeof err), 0);
	assert_int_equal(c.cmd->id, SLASH_HELP);
	assert_int_equal(slash_parse("/", &c, err, sizeof err), -1);
	assert_non_null(strstr(err, "try /help"));
	assert_int_equal(slash_parse("/1", &c, err, sizeof err), -1);
	assert_non_null(strstr(err, "unknown command /1"));
	assert_string_equal(slash_unescape("//tmp is a dir"), "/tmp is a dir");
	assert_string_equal(slash_unescape("plain"), "plain");
}

static void test_names(void **st)
{
	(void)st;
	struct slash_call c;
	assert_int_equal(slash_parse("/help", &c, err, sizeof err), 0);
	assert_int_equal(c.cmd->id, SLASH_HELP);
	assert_false(c.has_arg);
	assert_int_equal(slash_parse("/sam", &c, err, sizeof err), 0);
	assert_int_equal(c.cmd->id, SLASH_SAMPLING);
	/* "/s" matches seed, sampling, system, save, stats: ambiguous, and says which. */
	assert_int_equal(slash_parse("/s", &c, err, sizeof err), -1);
	assert_string_equal(err, "/s is ambiguous: /special, /seed, /sampling, /system, /save, /stats");
	assert_int_equal(slash_parse("/t", &c, err, sizeof err), -1);
	assert_string_equal(err, "/t is ambiguous: /think, /temp, /top-k, /top-p");
	assert_int_equal(slash_parse("/frobnicate 3", &c, err, sizeof err), -1);
	assert_string_equal(err, "unknown command /frobnicate (try /help)");
	/* An exact name wins over being a prefix of another. */
	assert_non_null(slash_find("temp"));
	assert_null(slash_find("tem"));
	assert_int_equal(slash_parse("/help me", &c, err, sizeof err), -1);
	assert_string_equal(err, "/help takes no argument");
}

static void test_values(void **st)
{
	(void)st;
	struct slash_call c;
	assert_int_equal(slash_parse("/temp 0.25  ", &c, err, sizeof err), 0);
	assert_true(c.has_arg);
	assert_true(c.num == 0.25);
	assert_int_equal(slash_parse("/temp", &c, err, sizeof err), 0);
	assert_false(c.has_arg);
	assert_int_equal(slash_parse("/temp abc", &c, err, sizeof err), -1);
	assert_string_equal(err, "/temp: 'abc' is not a number");
	assert_int_equal(slash_parse("/temp nan", &c, err, sizeof err), -1);
	assert_int_equal(slash_parse("/top-p 2", &c, err, sizeof err), -1);
	assert_string_equal(err, "/top-p: 2 is out of range [0, 1]");
	assert_int_equal(slash_parse("/top-k 2.5", &c, err, sizeof err), -1);
	assert_string_equal(err, "/top-k: '2.5' is not a whole number");
	assert_int_equal(slash_parse("/top-k 40", &c, err, sizeof err), 0);
	assert_true(c.num == 40);
	assert_int_equal(slash_parse("/min-p -0.1", &c, err, sizeof err), -1);
	assert_int_equal(slash_parse("/repeat 0", &c, err, sizeof err), -1);
	assert_int_equal(slash_parse("/seed 42", &c, err, sizeof err), 0);
	assert_true(c.num == 42);
	/* whole-number ranges are written in full, not as 9.0072e+15 */
	assert_int_equal(slash_parse("/seed -5", &c, err, sizeof err), -1);
	assert_string_equal(err, "/seed: -5 is out of range [0, 9007199254740992]");
	/* 2^53 + 1 is a double's 2^53: the digits are compared, not the rounded value */
	assert_int_equal(slash_parse("/seed 9007199254740993", &c, err, sizeof err), -1);
	assert_string_equal(err, "/seed: 9007199254740993 is out of range [0, 9007199254740992]");
	assert_int_equal(slash_parse("/seed 009007199254740992", &c, err, sizeof err), 0);
	assert_true(c.num == 9007199254740992.0);
	assert_int_equal(slash_parse("/seed +9007199254740993", &c, err, sizeof err), -1);
	assert_string_equal(err, "/seed: +9007199254740993 is out of range [0, 9007199254740992]");
	assert_int_equal(slash_parse("/seed 9007199254740993.0", &c, err, sizeof err), -1);
	assert_string_equal(err, "/seed: '9007199254740993.0' is not a whole number");
	assert_int_equal(slash_parse("/seed 9007199254740993e0", &c, err, sizeof err), -1);
	assert_int_equal(slash_parse("/top-k 2000000000", &c, err, sizeof err), -1);
	assert_string_equal(err, "/top-k: 2000000000 is out of range [0, 16777216]");
	/* past a double's 53 bits the number is quoted as typed, not as rounded */
	assert_int_equal(slash_parse("/top-k 99999999999999999999", &c, err, sizeof err), -1);
	assert_string_equal(err, "/top-k: 99999999999999999999 is out of range [0, 16777216]");
	/* decimal numbers only, as typed */
	assert_int_equal(slash_parse("/temp 0x10", &c, err, sizeof err), -1);
	assert_non_null(strstr(err, "is not a number"));
	/* a file name in quotes, the quotes dropped */
	assert_int_equal(slash_parse("/save \"my chat.json\"", &c, err, sizeof err), 0);
	assert_string_equal(c.text, "my chat.json");
	slash_call_free(&c);
	assert_int_equal(slash_parse("/save 'a.json'", &c, err, sizeof err), 0);
	assert_string_equal(c.text, "a.json");
	slash_call_free(&c);
	assert_int_equal(slash_parse("/think off", &c, err, sizeof err), 0);
	assert_int_equal(c.cmd->id, SLASH_THINK);
	assert_string_equal(c.cmd->choices[c.choice], "off");
	assert_int_equal(slash_parse("/think maybe", &c, err, sizeof err), -1);
	assert_non_null(strstr(err, "on|off|hide|show"));
	assert_int_equal(slash_parse("/debug memory", &c, err, sizeof err), 0);
	assert_string_equal(c.cmd->choices[c.choice], "memory");
}

static void test_text(void **st)
{
	(void)st;
	struct slash_call c;
	assert_int_equal(slash_parse("/system You are  terse. ", &c, err, sizeof err), 0);
	assert_string_equal(c.text, "You are  terse. ");
	slash_call_free(&c);
	assert_int_equal(slash_parse("/save", &c, err, sizeof err), -1);
	assert_string_equal(err, "/save FILE: argument missing");
	assert_int_equal(slash_parse("/load ~/conv.json", &c, err, sizeof err), 0);
	assert_string_equal(c.text, "~/conv.json");
	char *home = slash_expand_home(c.text, "/home/someone");
	assert_string_equal(home, "/home/someone/conv.json");
	free(home);
	home = slash_expand_home(c.text, NULL);
	assert_string_equal(home, "~/conv.json");
	free(home);
	slash_call_free(&c);
	assert_int_equal(slash_parse("/save my file.json", &c, err, sizeof err), 0);
	assert_string_equal(c.text, "my file.json");
	slash_call_free(&c);
}

static void test_complete(void **st)
{
	(void)st;
	char *a = slash_complete_name("/t", 0), *b = slash_complete_name("/t", 1);
	char *c = slash_complete_name("/t", 2), *d = slash_complete_name("/t", 3);
	assert_string_equal(a, "/think");
	assert_string_equal(b, "/temp");
	assert_string_equal(c, "/top-k");
	assert_non_null(d);
	free(a), free(b), free(c), free(d);
	char *h = slash_complete_arg("/think ", "h", 0);
	assert_string_equal(h, "hide");
	free(h);
	assert_null(slash_complete_arg("/think ", "h", 1));
	assert_null(slash_complete_arg("/temp ", "", 0));
	assert_true(slash_wants_file("/load "));
	assert_false(slash_wants_file("/temp "));
	char *help = slash_help("keys: none\n");
	for (size_t i = 0; i < slash_table_len; i++)
		assert_non_null(strstr(help, slash_table[i].usage));
	assert_non_null(strstr(help, "keys: none"));
	free(help);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_is_command), cmocka_unit_test(test_names),
		cmocka_unit_test(test_values),     cmocka_unit_test(test_text),
		cmocka_unit_test(test_complete),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
