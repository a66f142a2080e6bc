/* test_jsonlimit.c — the pre-parse bound on JSON texts: nesting and value counts
 * against texts whose counts are known (strings holding brackets and escapes do not
 * count), the top-level members with their value sizes, and files. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "src/base/err.h"
#include "src/base/jsonlimit.h"

/* The fewest values and levels the text passes with. */
static void counts(const char *s, size_t *values, int *depth)
{
	struct jlim l = {.max_depth = 1000, .max_values = 0};
	while (jlim_check(s, strlen(s), &l, "t") != 0)
		l.max_values++;
	*values = l.max_values;
	l.max_depth = 0;
	while (jlim_check(s, strlen(s), &l, "t") != 0)
		l.max_depth++;
	*depth = l.max_depth;
}

static void test_counts(void **state)
{
	(void)state;
	static const struct {
		const char *text;
		size_t values;
		int depth;
	} cases[] = {
		{"", 0, 0},
		{"1", 1, 0},
		{"  -12.5e3 ", 1, 0},
		{"[]", 1, 1},
		{"[[],[],{}]", 4, 2},
		{"[1, 22, true, false, null]", 6, 1},
		{"{\"a\": 1, \"bb\": [2, 3]}", 7, 2},
		{"\"[[[{{{\"", 1, 0},
		{"[\"a\\\"]]]\", \"\\\\\", [\"}\"]]", 5, 2},
		{"{\"k\":{\"k\":{\"k\":{}}}}", 7, 4},
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		size_t v;
		int d;
		counts(cases[i].text, &v, &d);
		if (v != cases[i].values || d != cases[i].depth)
			fail_msg("%s: %zu values, depth %d; want %zu, %d", cases[i].text, v, d,
				 cases[i].values, cases[i].depth);
	}
}

static void test_messages(void **state)
{
	(void)state;
	struct jlim l = {.max_depth = 2, .max_values = 3};
	assert_int_equal(jlim_check("[[[]]]", 6, &l, "conv.json"), -1);
	assert_string_equal(err_msg(), "conv.json: JSON nested deeper than 2 levels");
	assert_int_equal(jlim_check("[1,2,3]", 7, &l, "conv.json"), -1);
	assert_string_equal(err_msg(), "conv.json: more than 3 JSON values");
	assert_int_equal(jlim_check("[1,2]", 5, &l, NULL), 0);
	assert_int_equal(jlim_check("[1,2,3]", 7, &l, NULL), -1);
	assert_string_equal(err_msg(), "more than 3 JSON values");
}

struct seen {
	char keys[8][16];
	size_t bytes[8];
	int n;
	int stop_at; /* refuse the member with this index */
};

static int on_member(void *user, const char *key, size_t key_len, size_t value_bytes)
{
	struct seen *s = user;
	snprintf(s->keys[s->n], sizeof s->keys[0], "%.*s", (int)key_len, key);
	s->bytes[s->n] = value_bytes;
	if (s->n++ == s->stop_at)
		return err_set("member %.*s refused", (int)key_len, key);
	return 0;
}

static void test_members(void **state)
{
	(void)state;
	const char *t = "{\"model\": \"m\", \"x\": [1, {\"y\": 2}], \"e\\\"sc\":{},\"last\":7}";
	struct seen s = {.stop_at = -1};
	struct jlim l = {.max_depth = 8, .max_values = 100, .member = on_member, .user = &s};
	assert_int_equal(jlim_check(t, strlen(t), &l, NULL), 0);
	assert_int_equal(s.n, 4);
	assert_string_equal(s.keys[0], "model");
	assert_int_equal(s.bytes[0], strlen(" \"m\""));
	assert_string_equal(s.keys[1], "x");
	assert_int_equal(s.bytes[1], strlen(" [1, {\"y\": 2}]"));
	assert_string_equal(s.keys[2], "e\\\"sc");
	assert_int_equal(s.bytes[2], 2);
	assert_string_equal(s.keys[3], "last");
	assert_int_equal(s.bytes[3], 1);
	/* a refusal ends the scan with its message */
	s = (struct seen){.stop_at = 1};
	assert_int_equal(jlim_check(t, strlen(t), &l, NULL), -1);
	assert_string_equal(err_msg(), "member x refused");
	assert_int_equal(s.n, 2);
	/* not an object: no members */
	s = (struct seen){.stop_at = -1};
	assert_int_equal(jlim_check("[{\"a\":1}]", 9, &l, NULL), 0);
	assert_int_equal(s.n, 0);
}

static void test_file(void **state)
{
	(void)state;
	char dir[] = "/tmp/qwenchat-jsonlimit.XXXXXX", path[256];
	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof path, "%s/conv.json", dir);
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	fputs("[", f);
	for (int i = 0; i < 1000; i++)
		fputs(i ? ",[]" : "[]", f);
	fputs("]", f);
	fclose(f);
	struct jlim l = {.max_depth = 4, .max_values = 1000};
	size_t len;
	assert_null(jlim_read_file(path, 1 << 20, &l, &len));
	assert_non_null(strstr(err_msg(), "conv.json: more than 1000 JSON values"));
	l.max_values = 1001;
	char *text = jlim_read_file(path, 1 << 20, &l, &len);
	assert_non_null(text);
	assert_int_equal(len, 2 + 1000 * 3 - 1);
	free(text);
	assert_null(jlim_read_file(path, 100, &l, &len));
	assert_non_null(strstr(err_msg(), "larger than 100 bytes"));
	unlink(path);
	rmdir(dir);
}

/* The length of the first value: strings with brackets and escaped quotes in them,
 * nested containers, scalars ended by a delimiter, and texts that end too soon. */
static void test_value_len(void **state)
{
	(void)state;
	static const struct {
		const char *s;
		size_t len;
	} cases[] = {
		{"{\"a\": \"]}\\\"\"} , {}", 13},
		{"  [1, [2, {\"b\": []}]]x", 21},
		{"{}", 2},
		{"\"s\\\\\" rest", 5},
		{"123, 4", 3},
		{"true]", 4},
		{"{\"a\": [1, 2}", 0},
		{"\"open", 0},
		{"", 0},
		{"   ", 0},
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		size_t got = jlim_value_len(cases[i].s, strlen(cases[i].s));
		if (got != cases[i].len)
			fail_msg("jlim_value_len(%s) = %zu, not %zu", cases[i].s, got,
				 cases[i].len);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_counts),    cmocka_unit_test(test_messages),
		cmocka_unit_test(test_members),   cmocka_unit_test(test_file),
		cmocka_unit_test(test_value_len),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
