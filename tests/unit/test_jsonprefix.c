/* test_jsonprefix.c — the JSON-object prefix recognizer: hand-picked texts, then
 * random objects that jansson writes (every prefix must pass, the whole be done) and
 * those objects with one byte changed, where jansson's verdict (a JSON object or
 * not) must be the recognizer's. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "src/base/jsonprefix.h"

/* How far the recognizer reads s: its length when every byte passes, else the
 * index of the first byte refused; *done when the whole is one object. */
static size_t reach(const char *s, size_t n, bool *done)
{
	struct jp p;
	jp_init(&p);
	for (size_t i = 0; i < n; i++)
		if (!jp_feed(&p, s + i, 1)) {
			*done = false;
			return i;
		}
	*done = jp_done(&p);
	return n;
}

static void test_cases(void **state)
{
	(void)state;
	const char *whole[] = {
		"{}",
		" {\"a\": 1}\n",
		"{\"a\":[1,-2.5e+3,0,0.25,1E9,true,false,null,\"x\"]}",
		"{\"k\": {\"n\": {\"m\": []}}, \"s\": \"\\u00e9\\n\\\"\\\\\\/\"}",
		"{\"\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80\": \"\xed\x9f\xbf\"}",
		"{\"a\":-0}",
	};
	for (size_t i = 0; i < sizeof whole / sizeof *whole; i++) {
		bool done;
		size_t n = strlen(whole[i]);
		assert_int_equal(reach(whole[i], n, &done), n);
		if (!done)
			fail_msg("not done: %s", whole[i]);
		for (size_t k = 0; k + 1 < n && whole[i][n - 1] != '\n'; k++) {
			reach(whole[i], k, &done);
			assert_false(done); /* no proper prefix is a whole object */
		}
	}
	bool done;
	/* the prefixes that stay open, and where the refused ones stop */
	struct {
		const char *s;
		size_t at; /* the first byte refused; strlen: none */
	} cases[] = {
		{"{\"a\": 1", 7},
		{"{\"a\": 01", 7},
		{"[1]", 0},
		{"{\"a\" 1}", 5},
		{"{'a': 1}", 1},
		{"{\"a\": tru", 9},
		{"{\"a\": trux", 9},
		{"{\"a\": 1.}", 8},
		{"{\"a\": 1e}", 8},
		{"{\"a\": -}", 7},
		{"{\"a\": +1}", 6},
		{"{\"a\":1,}", 7},
		{"{\"a\":[1,]}", 8},
		{"{\"a\":\"\x01\"}", 6},
		{"{\"a\":\"\\x\"}", 7},
		{"{\"a\":\"\\u12g4\"}", 10},
		{"{} x", 3},
		{"{\"a\":\"\xc0\xaf\"}", 6},
		{"{\"a\":\"\xe0\x80\x80\"}", 7},
		{"{\"a\":\"\xed\xa0\x80\"}", 7},
		{"{\"a\":\"\xf4\x90\x80\x80\"}", 7},
		{"{\"a\":\"\x80\"}", 6},
		{"{\"a\":[}", 6},
		{"{\"a\":{]}", 6},
		{"{1:2}", 1},
		{"{\"a\":\"\xe2\x82", 8},
	};
	for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
		bool done;
		size_t got = reach(cases[i].s, strlen(cases[i].s), &done);
		if (got != cases[i].at)
			fail_msg("%s: refused at %zu, expected %zu", cases[i].s, got, cases[i].at);
		assert_false(done);
	}
	/* whitespace: JP_MAX_SPACE bytes in a row pass, one more is refused; in a string
	 * any number */
	char ws[2 * JP_MAX_SPACE + 16];
	memset(ws, ' ', sizeof ws);
	ws[JP_MAX_SPACE] = '{';
	ws[JP_MAX_SPACE + 1] = '"';
	assert_int_equal(reach(ws, sizeof ws, &done), sizeof ws);
	ws[0] = '\n';
	ws[JP_MAX_SPACE] = ' ';
	assert_int_equal(reach(ws, sizeof ws, &done), JP_MAX_SPACE);
	/* nesting: JP_MAX_DEPTH levels pass, one more is refused */
	char deep[8 * JP_MAX_DEPTH];
	size_t n = 0;
	deep[n++] = '{';
	for (int i = 1; i < JP_MAX_DEPTH; i++)
		n += (size_t)snprintf(deep + n, sizeof deep - n, "\"a\":%s",
				      i + 1 < JP_MAX_DEPTH ? "{" : "[");
	assert_int_equal(reach(deep, n, &done), n);
	deep[n++] = '[';
	assert_int_equal(reach(deep, n, &done), n - 1);
}

/* ---- against jansson ----------------------------------------------------------------- */

static uint64_t rng = 0x9e3779b97f4a7c15u;

static uint32_t next_rand(void)
{
	rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
	return (uint32_t)(rng >> 11);
}

/* A random string of ASCII, escapes' characters and multibyte UTF-8. */
static json_t *random_string(void)
{
	static const char *const pieces[] = {
		"a",  "Z",  " ",    "\"",       "\\",           "/",
		"\n", "\t", "\x7f", "\xc3\xa9", "\xe2\x82\xac", "\xf0\x9f\x98\x80",
		"{",  "]",  ":",    ","};
	char buf[64] = "";
	int k = (int)(next_rand() % 6);
	for (int i = 0; i < k; i++)
		strcat(buf, pieces[next_rand() % (sizeof pieces / sizeof *pieces)]);
	return json_string(buf);
}

static json_t *random_value(int depth)
{
	switch (next_rand() % (depth > 4 ? 5 : 7)) {
	case 0: return json_integer((json_int_t)(next_rand() % 2000) - 1000);
	case 1: return json_real((double)(int)(next_rand() % 20000 - 10000) / 64.0);
	case 2: return next_rand() % 2 ? json_true() : json_false();
	case 3: return json_null();
	case 4: return random_string();
	case 5: {
		json_t *a = json_array();
		for (int i = (int)(next_rand() % 4); i > 0; i--)
			json_array_append_new(a, random_value(depth + 1));
		return a;
	}
	default: {
		json_t *o = json_object();
		for (int i = (int)(next_rand() % 4); i > 0; i--) {
			char key[16];
			snprintf(key, sizeof key, "k%u", next_rand() % 100);
			json_object_set_new(o, key, random_value(depth + 1));
		}
		return o;
	}
	}
}

/* jansson's verdict: 1 when the n bytes are one JSON object, 0 when not, -1 when it
 * cannot say (what JSON's grammar allows and jansson refuses: a number past a double,
 * a \u0000 in a key, an unpaired surrogate escape). */
static int jansson_object(const char *s, size_t n)
{
	json_error_t err;
	json_t *v = json_loadb(s, n, JSON_DECODE_ANY | JSON_ALLOW_NUL, &err);
	int object = v && json_is_object(v);
	json_decref(v);
	bool refused = !v && (strstr(err.text, "overflow") || strstr(err.text, "too big") ||
			      strstr(err.text, "NUL byte in object key") ||
			      strstr(err.text, "invalid Unicode"));
	return refused ? -1 : object;
}

static void test_against_jansson(void **state)
{
	(void)state;
	static const char mutations[] = "{}[]\":,\\ 0-.eE+tfnu\x01\x80\xc3\xff";
	int refused = 0;
	for (int it = 0; it < 3000; it++) {
		json_t *o = json_object();
		for (int i = (int)(next_rand() % 5); i > 0; i--) {
			char key[16];
			snprintf(key, sizeof key, "%u", next_rand() % 50);
			json_object_set_new(o, key, random_value(1));
		}
		size_t flags = it % 2 ? JSON_INDENT(2) : JSON_COMPACT;
		char *text = json_dumps(o, flags);
		json_decref(o);
		assert_non_null(text);
		size_t n = strlen(text);
		bool done;
		assert_int_equal(reach(text, n, &done), n);
		if (!done)
			fail_msg("jansson's object not done: %s", text);
		/* one byte changed (or cut): the two must agree on the whole */
		size_t at = next_rand() % n;
		char saved = text[at];
		text[at] = mutations[next_rand() % (sizeof mutations - 1)];
		size_t m = next_rand() % 8 ? n : at + 1;
		int want = jansson_object(text, m);
		size_t got = reach(text, m, &done);
		if (want >= 0 && want != (got == m && done))
			fail_msg("jansson says %s, the recognizer %s (refused at %zu): %.*s",
				 want ? "an object" : "no object", done ? "done" : "not done", got,
				 (int)m, text);
		refused += got < m;
		text[at] = saved;
		free(text);
	}
	assert_true(refused > 500); /* the changes were mostly caught early */
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_cases),
		cmocka_unit_test(test_against_jansson),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
