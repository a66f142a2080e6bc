/* test_jsonschema.c — the schema recognizer. JSON mode's schema ({"type": "object"}):
 * hand-picked texts, then random objects that jansson writes (every prefix must pass,
 * the whole be done) and those objects with one byte changed, where jansson's verdict
 * (a JSON object or not) must be the recognizer's. Then schemas: texts each keyword
 * lets through or stops (where), and the schemas refused with the keyword named.
 * tests/cli/jsonschema.sh checks the answers against Python's jsonschema. */
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
#include "src/base/jsonschema.h"

/* How far the recognizer reads s against sc: its length when every byte passes, else
 * the index of the first byte refused; *done when the whole is a value of sc. */
static size_t reach_schema(const struct js_schema *sc, const char *s, size_t n, bool *done)
{
	static struct js_state p;
	js_init(&p, sc);
	for (size_t i = 0; i < n; i++)
		if (!js_feed(&p, s + i, 1)) {
			*done = false;
			return i;
		}
	*done = js_done(&p);
	return n;
}

static struct js_schema *object_schema;

/* reach_schema against JSON mode's schema. */
static size_t reach(const char *s, size_t n, bool *done)
{
	if (!object_schema)
		object_schema = js_object();
	assert_non_null(object_schema);
	return reach_schema(object_schema, s, n, done);
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
		{"{\"a\":\"\\ud800\"}", 12},     /* a high surrogate alone */
		{"{\"a\":\"\\udc00", 9},         /* a low one alone: known at its "dc" */
		{"{\"a\":\"\\ud800\\u0041", 14}, /* a high one, then no low one */
	};
	for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
		bool done;
		size_t got = reach(cases[i].s, strlen(cases[i].s), &done);
		if (got != cases[i].at)
			fail_msg("%s: refused at %zu, expected %zu", cases[i].s, got, cases[i].at);
		assert_false(done);
	}
	/* whitespace: JS_MAX_SPACE bytes in a row pass, one more is refused; in a string
	 * any number */
	char ws[2 * JS_MAX_SPACE + 16];
	memset(ws, ' ', sizeof ws);
	ws[JS_MAX_SPACE] = '{';
	ws[JS_MAX_SPACE + 1] = '"';
	assert_int_equal(reach(ws, sizeof ws, &done), sizeof ws);
	ws[0] = '\n';
	ws[JS_MAX_SPACE] = ' ';
	assert_int_equal(reach(ws, sizeof ws, &done), JS_MAX_SPACE);
	/* nesting: JS_MAX_DEPTH levels pass, one more is refused */
	char deep[8 * JS_MAX_DEPTH];
	size_t n = 0;
	deep[n++] = '{';
	for (int i = 1; i < JS_MAX_DEPTH; i++)
		n += (size_t)snprintf(deep + n, sizeof deep - n, "\"a\":%s",
				      i + 1 < JS_MAX_DEPTH ? "{" : "[");
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
 * a \u0000 in a key). */
static int jansson_object(const char *s, size_t n)
{
	json_error_t err;
	json_t *v = json_loadb(s, n, JSON_DECODE_ANY | JSON_ALLOW_NUL, &err);
	int object = v && json_is_object(v);
	json_decref(v);
	bool refused = !v && (strstr(err.text, "overflow") || strstr(err.text, "too big") ||
			      strstr(err.text, "NUL byte in object key"));
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

/* ---- schemas ---------------------------------------------------------------------- */

static struct js_schema *compile_text(const char *text)
{
	json_error_t je;
	json_t *v = json_loads(text, JSON_DECODE_ANY, &je);
	if (!v)
		fail_msg("bad test schema %s: %s", text, je.text);
	struct js_schema *sc = js_compile(v, "schema");
	json_decref(v);
	return sc;
}

#define PERSON                                                                 \
	"{\"type\":\"object\",\"properties\":{\"name\":{\"type\":\"string\"}," \
	"\"age\":{\"type\":\"integer\"}},\"required\":[\"name\",\"age\"],\"title\":\"P\"}"
#define TREE                                                                                 \
	"{\"$defs\":{\"node\":{\"type\":\"object\",\"properties\":{\"v\":{\"type\":"         \
	"\"integer\"},\"kids\":{\"type\":\"array\",\"items\":{\"$ref\":\"#/$defs/node\"}}}," \
	"\"required\":[\"v\"]}},\"$ref\":\"#/$defs/node\"}"

/* pydantic's Union[Cat, Dog] (anyOf) and its tagged form (oneOf with a discriminator):
 * objects both, told apart by what their keys hold */
#define PETS(OF)                                                                          \
	"{\"" OF "\":[{\"type\":\"object\",\"properties\":{\"kind\":{\"const\":\"cat\"}," \
	"\"lives\":{\"type\":\"integer\"}},\"required\":[\"kind\",\"lives\"],"            \
	"\"additionalProperties\":false},{\"type\":\"object\",\"properties\":{\"kind\":"  \
	"{\"enum\":[\"dog\",\"wolf\"]},\"bark\":{\"type\":\"string\"}},\"required\":"     \
	"[\"kind\"]}],\"discriminator\":{\"propertyName\":\"kind\"}}"
#define UNION   PETS("anyOf")
#define TAGGED  PETS("oneOf")
#define SET     "{\"type\":\"array\",\"uniqueItems\":true,\"items\":{\"enum\":[1,10,\"red\"]}}"
#define TUPLE                                                                                 \
	"{\"type\":\"array\",\"prefixItems\":[{\"type\":\"integer\"},{\"type\":\"string\"}]," \
	"\"minItems\":2,\"items\":{\"type\":\"boolean\"}}"
#define PETLIST "{\"type\":\"array\",\"items\":" UNION "}"
#define SIZES                                                                          \
	"{\"anyOf\":[{\"type\":\"integer\",\"minimum\":0,\"maximum\":10},{\"type\":"   \
	"\"number\",\"minimum\":100},{\"type\":\"string\",\"maxLength\":2},{\"type\":" \
	"\"string\",\"format\":\"date\"}]}"

#define PHONE "{\"type\":\"string\",\"pattern\":\"^[A-Z]{2}-\\\\d{3}$\"}"

/* Texts against schemas: where each stops. */
enum { DONE = -1, OPEN = -2 }; /* or the index of the first byte refused */
static const struct {
	const char *schema, *text;
	int want;
} schema_cases[] = {
	{PERSON, "{\"name\": \"Bo\", \"age\": 3}", DONE},
	{PERSON, " { \"age\" : -3 ,\"name\":\"\" } ", DONE},
	{PERSON, "{\"name\": \"Bo\"}", 13},       /* age is required */
	{PERSON, "{\"nam\": 1}", 5},              /* not a listed key */
	{PERSON, "{\"name\":\"a\",\"name\"", 13}, /* a key twice */
	{PERSON, "{\"age\": 3.5}", 9},            /* an integer */
	{PERSON, "{\"extra\": 1}", 2},
	{PERSON, "[]", 0},
	{"{\"enum\":[\"red\",\"green\",1,10,null]}", "\"red\"", DONE},
	{"{\"enum\":[\"red\",\"green\",1,10,null]}", "\"re", OPEN},
	{"{\"enum\":[\"red\",\"green\",1,10,null]}", "\"blue\"", 1},
	{"{\"enum\":[\"red\",\"green\",1,10,null]}", "1", DONE},
	{"{\"enum\":[\"red\",\"green\",1,10,null]}", "10 ", DONE},
	{"{\"enum\":[\"red\",\"green\",1,10,null]}", "100", 2},
	{"{\"enum\":[\"red\",\"green\",1,10,null]}", "null", DONE},
	{"{\"type\":\"string\",\"enum\":[\"a\",1]}", "1", 0}, /* 1 is not a string */
	{"{\"anyOf\":[{\"type\":\"string\"},{\"type\":\"null\"}]}", "null", DONE},
	{"{\"anyOf\":[{\"type\":\"string\"},{\"type\":\"null\"}]}", "\"x\"", DONE},
	{"{\"anyOf\":[{\"type\":\"string\"},{\"type\":\"null\"}]}", "1", 0},
	{UNION, "{\"kind\":\"cat\",\"lives\":9}", DONE},
	{UNION, "{\"lives\":9,\"kind\":\"cat\"}", DONE},
	{UNION, "{\"kind\":\"wolf\",\"bark\":\"wo\"}", DONE},
	{UNION, "{\"kind\":\"dog\"}", DONE},
	{UNION, "{\"kind\":\"dog\",\"lives\"", 15}, /* a cat's key */
	{UNION, "{\"lives\":9}", 10},               /* a cat needs a kind */
	{UNION, "{\"kind\":\"cat\"}", 13},          /* ... and lives */
	{UNION, "{\"bark\":\"x\",\"lives\"", 13},
	{TAGGED, "{\"kind\":\"cat\",\"lives\":9}", DONE},
	{TAGGED, "{\"bark\":\"x\",\"kind\":\"cat\"", 20},
	{PETLIST,
	 "[{\"kind\":\"cat\",\"lives\":1},{\"kind\":\"dog\"},{\"kind\":\"cat\",\"lives\":2}"
	 ","
	 "{\"kind\":\"wolf\"},{\"lives\":3,\"kind\":\"cat\"}]",
	 DONE},
	{TUPLE, "[1, \"a\"]", DONE},
	{TUPLE, "[1]", 2},               /* minItems */
	{TUPLE, "[\"a\"", 1},            /* the first is an integer */
	{TUPLE, "[1,\"a\",true]", DONE}, /* then items' booleans */
	{TUPLE, "[1,\"a\",3", 7},
	{"{\"prefixItems\":[{\"type\":\"null\"}],\"items\":false}", "[null]", DONE},
	{"{\"prefixItems\":[{\"type\":\"null\"}],\"items\":false}", "[null,", 5},
	{"{\"type\":\"array\",\"items\":false}", "[]", DONE},
	{"{\"type\":\"array\",\"items\":false}", "[1", 1},
	{SET, "[\"red\", 10, 1]", DONE},
	{SET, "[1,10,\"red\",", 11}, /* three values, each once: no fourth */
	{SET, "[10,1,10", 6},        /* no value left that begins with 1 */
	{SET, "[\"red\",\"red", 7},  /* ... at the first byte that leaves none */
	{SET, "[1,1", OPEN},         /* 10 may follow; 1 is whole at the byte after */
	{SET, "[1,1]", 4},
	{SET, "[1,10]", DONE},
	{"{\"type\":\"integer\",\"multipleOf\":5}", "-35", DONE},
	{"{\"type\":\"integer\",\"multipleOf\":5}", "-36", OPEN}, /* -360 may follow */
	{"{\"type\":\"integer\",\"multipleOf\":5}", "36 ", 2},
	{"{\"type\":\"integer\",\"multipleOf\":5}", "0", DONE},
	{"{\"type\":\"integer\",\"multipleOf\":7,\"minimum\":10,\"maximum\":20}", "1", OPEN},
	{"{\"type\":\"integer\",\"multipleOf\":7,\"minimum\":10,\"maximum\":20}", "15", 1},
	{"{\"type\":\"integer\",\"multipleOf\":7,\"minimum\":10,\"maximum\":20}", "14", DONE},
	{"{\"type\":\"integer\",\"multipleOf\":7,\"minimum\":10,\"maximum\":20}", "2", 0},
	{SIZES, "5", DONE},
	{SIZES, "150.5", DONE},
	{SIZES, "50", OPEN}, /* not a small integer; a number of 100 or more begins */
	{SIZES, "50 ", 2},
	{SIZES, "\"ab\"", DONE},
	{SIZES, "\"2024-01-01\"", DONE},
	{SIZES, "\"abc", 3},
	{"{\"type\":\"array\",\"items\":{\"type\":\"integer\"},\"minItems\":1,"
	 "\"maxItems\":2}",
	 "[]", 1},
	{"{\"type\":\"array\",\"items\":{\"type\":\"integer\"},\"minItems\":1,"
	 "\"maxItems\":2}",
	 "[1, 2]", DONE},
	{"{\"type\":\"array\",\"items\":{\"type\":\"integer\"},\"minItems\":1,"
	 "\"maxItems\":2}",
	 "[1,2,", 4},
	{"{\"type\":\"array\",\"items\":{\"type\":\"integer\"}}", "[1,\"a\"]", 3},
	{"{\"type\":\"string\",\"minLength\":2,\"maxLength\":3}", "\"a\"", 2},
	{"{\"type\":\"string\",\"minLength\":2,\"maxLength\":3}", "\"ab\"", DONE},
	{"{\"type\":\"string\",\"minLength\":2,\"maxLength\":3}", "\"abcd\"", 4},
	{"{\"type\":\"string\",\"minLength\":2,\"maxLength\":3}", "\"\\u00e9\\n\"", DONE},
	{"{\"type\":\"string\",\"minLength\":2,\"maxLength\":3}",
	 "\"\xf0\x9f\x98\x80\\ud83d\\ude00\xc3\xa9\"", DONE}, /* three characters */
	{"{\"type\":\"string\",\"minLength\":2,\"maxLength\":3}", "\"\\ud83d\\ude00\"", 13},
	{TREE, "{\"v\":1,\"kids\":[{\"v\":2,\"kids\":[]},{\"v\":3}]}", DONE},
	{TREE, "{\"kids\":[{\"v\":2}]}", 17},
	{"{\"type\":\"object\",\"additionalProperties\":{\"type\":\"number\"}}",
	 "{\"x\":1,\"y\":2.5e3}", DONE},
	{"{\"type\":\"object\",\"additionalProperties\":{\"type\":\"number\"}}", "{\"x\":\"s\"}",
	 5},
	{"{\"type\":\"object\",\"additionalProperties\":false}", "{}", DONE},
	{"{\"type\":\"object\",\"additionalProperties\":false}", "{\"", 1},
	{"{\"const\":{\"a\":[1,2]}}", "{\"a\":[1,2]}", DONE},
	{"{\"const\":{\"a\":[1,2]}}", "{\"a\": [1,2]}", 5},
	{"{\"type\":\"integer\"}", "42", DONE},
	{"{\"type\":\"integer\"}", "4.", 1},
	{"{\"type\":\"integer\"}", "-", OPEN},
	{"{\"type\":[\"integer\",\"string\"]}", "\"a\"", DONE},
	{"{\"type\":[\"integer\",\"string\"]}", "true", 0},
	{"{\"allOf\":[{\"type\":\"boolean\"}],\"description\":\"d\"}", "false", DONE},
	{"{}", "[{\"a\":null},\"\",-1e5]", DONE},
	{"true", "\"x\"", DONE},
	{"{\"format\":\"date\",\"type\":\"string\"}", "\"2024-02-29\"", DONE},
	{"{\"format\":\"date\",\"type\":\"string\"}", "\"2023-02-29\"", 10},
	{"{\"format\":\"date\",\"type\":\"string\"}", "\"2024-04-31\"", 10},
	{"{\"format\":\"date\",\"type\":\"string\"}", "\"2024-13", 7},
	{"{\"format\":\"date\",\"type\":\"string\"}", "\"2024-1", OPEN},
	{"{\"format\":\"date\",\"type\":\"string\"}", "\"0000", 4},
	{"{\"format\":\"date\",\"type\":\"string\"}", "\"\\u0032", 1}, /* no escape */
	{"{\"format\":\"time\",\"type\":\"string\"}", "\"23:59:59.123Z\"", DONE},
	{"{\"format\":\"time\",\"type\":\"string\"}", "\"12:00:00+05:30\"", DONE},
	{"{\"format\":\"time\",\"type\":\"string\"}", "\"24", 2},
	{"{\"format\":\"time\",\"type\":\"string\"}", "\"12:00:00\"", 9},
	{"{\"format\":\"time\",\"type\":\"string\"}", "\"12:00:00.\"", 10},
	{"{\"format\":\"date-time\"}", "\"2024-01-01T00:00:00Z\"", DONE},
	{"{\"format\":\"date-time\"}", "\"2024-01-01 00", 11},
	{"{\"format\":\"date-time\"}", "7", DONE}, /* a format is of strings only */
	{"{\"format\":\"uuid\"}", "\"123e4567-e89b-12d3-a456-426614174000\"", DONE},
	{"{\"format\":\"uuid\"}", "\"123g", 4},
	{"{\"format\":\"email\"}", "\"a.b+c@mail.example.org\"", DONE},
	{"{\"format\":\"email\"}", "\".a", 1},
	{"{\"format\":\"email\"}", "\"a@b\"", 4}, /* no top-level domain */
	{"{\"format\":\"email\"}", "\"a@-", 3},
	{"{\"format\":\"email\"}", "\"a@b-.c", 5},
	{"{\"format\":\"email\"}", "\"a@b.c1\"", 7}, /* a TLD of letters */
	{"{\"format\":\"email\"}", "\"a@b.c1.de\"", DONE},
	{"{\"format\":\"email\"}", "\"abcdefghijklmnopqrstuvwxyzabcdefghij@", 36},
	/* (a 36th character would leave no room for "@a.bc" in JS_MAX_TEXT) */
	{"{\"format\":\"ipv4\"}", "\"192.168.0.255\"", DONE},
	{"{\"format\":\"ipv4\"}", "\"192.168.01", 10},
	{"{\"format\":\"ipv4\"}", "\"256", 3},
	{"{\"format\":\"ipv4\"}", "\"1.2.3\"", 6},
	{"{\"type\":\"integer\",\"minimum\":0,\"maximum\":120}", "42", DONE},
	{"{\"type\":\"integer\",\"minimum\":0,\"maximum\":120}", "-0", DONE},
	{"{\"type\":\"integer\",\"minimum\":0,\"maximum\":120}", "-1", 1},
	{"{\"type\":\"integer\",\"minimum\":0,\"maximum\":120}", "121", 2},
	{"{\"type\":\"integer\",\"minimum\":0,\"maximum\":120}", "[", 0},
	{"{\"type\":\"integer\",\"minimum\":-5.5,\"exclusiveMaximum\":-2}", "-6", 1},
	{"{\"type\":\"integer\",\"minimum\":-5.5,\"exclusiveMaximum\":-2}", "-3", DONE},
	{"{\"type\":\"integer\",\"minimum\":-5.5,\"exclusiveMaximum\":-2}", "-2", 1},
	{"{\"type\":\"number\",\"exclusiveMaximum\":10}", "9.99", DONE},
	{"{\"type\":\"number\",\"exclusiveMaximum\":10}", "10", 1},
	{"{\"type\":\"number\",\"minimum\":-1.5,\"maximum\":2.25}", "2.250", DONE},
	{"{\"type\":\"number\",\"minimum\":-1.5,\"maximum\":2.25}", "2.26", 3},
	{"{\"type\":\"number\",\"minimum\":-1.5,\"maximum\":2.25}", "-1.51", 4},
	{"{\"type\":\"number\",\"minimum\":-1.5,\"maximum\":2.25}", "1e0", 1},
	{"{\"type\":\"number\",\"minimum\":0}", "0.000000000000000000000001", 24},
	{"{\"properties\":{\"n\":{\"type\":\"number\",\"maximum\":1}}}", "{\"n\":1}", DONE},
	{"{\"properties\":{\"n\":{\"type\":\"number\",\"maximum\":1}}}", "{\"n\":1.5}",
	 7}, /* ends at '}', out of range: refused there */
	{"{\"$defs\":{\"a/b~\":{\"type\":\"null\"}},\"$ref\":\"#/$defs/a~1b~0\"}", "null",
	 DONE}, /* a JSON pointer's escapes */
	{"{\"properties\":{\"a\\\"b\":{}},\"required\":[\"a\\\"b\"]}", "{\"a\\\"b\":{}}", DONE},
	/* type inferred; a key written as jansson escapes it */ /* pattern: each character as it comes, escaped or not, refused at the first byte
	 * that no character it may begin could match; ^ and $ anchor it, or it matches
	 * anywhere; maxLength leaves room for the rest of the match */
	{PHONE, "\"AB-123\"", DONE},
	{PHONE, "\"\\u0041\\u0042\\u002d1\\u0032\\u0033\"", DONE},
	{PHONE, "\"Ab", 2},
	{PHONE, "\"AB-12\"", 6},  /* three digits */
	{PHONE, "\"AB-1234", 7},  /* $ */
	{PHONE, "\"\\u0061", 5},  /* \u006X is no A-Z: refused at the 6 */
	{PHONE, "\"\\u00e", 5},   /* no character \u00eX is A-Z */
	{PHONE, "\"\xc3\xa9", 1}, /* é: refused at its lead byte */
	{"{\"type\":\"string\",\"pattern\":\"b+\"}", "\"a c\"", 4},
	{"{\"type\":\"string\",\"pattern\":\"b+\"}", "\"a bb-\"", DONE},
	{"{\"type\":\"string\",\"pattern\":\"^x.*y$\",\"maxLength\":4}", "\"xabz", 4},
	{"{\"type\":\"string\",\"pattern\":\"^x.*y$\",\"maxLength\":4}", "\"xaby\"", DONE},
	{"{\"type\":\"string\",\"pattern\":\"^[\\ud83d\\ude00\u20ac]$\"}", "\"\\ud83d\\ude00\"",
	 DONE}, /* a pair of escapes, one character */
	{"{\"type\":\"string\",\"pattern\":\"^[\\ud83d\\ude00\u20ac]$\"}", "\"\\ud83d\\ude01", 12},
	{"{\"type\":\"string\",\"pattern\":\"^[\\ud83d\\ude00\u20ac]$\"}", "\"\\ud83c",
	 6}, /* no character of that pair's first half */
	{"{\"type\":\"string\",\"pattern\":\"^[\\ud83d\\ude00\u20ac]$\"}", "\"\xe2\x82\xac\"",
	 DONE},
	{"{\"type\":\"string\",\"pattern\":\"^[\\ud83d\\ude00\u20ac]$\"}", "\"\xe2\x82\xad", 3},
	{"{\"type\":\"string\",\"pattern\":\"^\\\\n\\\\t?$\"}", "\"\\n\\t\"", DONE},
	{"{\"type\":\"string\",\"pattern\":\"^\\\\n\\\\t?$\"}", "\"\\t", 2},
	{"{\"type\":[\"string\",\"integer\"],\"pattern\":\"^a$\"}", "12", DONE},
	/* minLength beside it: (ab)+ of 3 to 5 characters is abab only */
	{"{\"type\":\"string\",\"pattern\":\"^(?:ab)+$\",\"minLength\":3,\"maxLength\":5}",
	 "\"ab\"", 3},
	{"{\"type\":\"string\",\"pattern\":\"^(?:ab)+$\",\"minLength\":3,\"maxLength\":5}",
	 "\"ababa", 5},
	{"{\"type\":\"string\",\"pattern\":\"^(?:ab)+$\",\"minLength\":3,\"maxLength\":5}",
	 "\"abab\"", DONE},
};

static void test_schema_cases(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof schema_cases / sizeof *schema_cases; i++) {
		struct js_schema *sc = compile_text(schema_cases[i].schema);
		if (!sc)
			fail_msg("%s: %s", schema_cases[i].schema, err_msg());
		bool done;
		size_t n = strlen(schema_cases[i].text),
		       got = reach_schema(sc, schema_cases[i].text, n, &done);
		int have = got < n ? (int)got : done ? DONE : OPEN;
		if (have != schema_cases[i].want)
			fail_msg("%s against %s: %d, expected %d", schema_cases[i].text,
				 schema_cases[i].schema, have, schema_cases[i].want);
		js_free(sc);
	}
}

/* A schema at a limit is taken (says NULL), or refused with `says` in the message. */
static void at_limit(const char *schema, const char *says)
{
	struct js_schema *sc = compile_text(schema);
	if (!says && !sc)
		fail_msg("refused: %s", err_msg());
	if (says && (sc || !strstr(err_msg(), says)))
		fail_msg("expected a refusal saying \"%s\", got %s", says, sc ? "none" : err_msg());
	js_free(sc);
}

/* Schemas refused, and what the message names. */
static void test_schema_errors(void **state)
{
	(void)state;
	static const char *const cases[][2] = {
		{"{\"anyOf\":[{\"type\":\"string\"}],\"required\":[\"a\"]}",
		 "schema: keywords beside anyOf"},
		{"{\"enum\":[\"a\",\"bcd\"],\"maxLength\":2}", "schema: keywords beside enum"},
		{"{\"type\":\"number\",\"multipleOf\":2}",
		 "schema.multipleOf: supported for integers"},
		{"{\"type\":\"integer\",\"multipleOf\":2.5}", "schema.multipleOf: supported for"},
		{"{\"type\":\"integer\",\"multipleOf\":10,\"minimum\":1,\"maximum\":9}",
		 "no multiple of multipleOf"},
		{"{\"type\":\"string\",\"not\":{\"const\":\"a\"}}",
		 "schema.not: this keyword is not"},
		{"{\"type\":\"string\",\"pattern\":\"(?=a)\"}", "schema.pattern: lookarounds"},
		{"{\"type\":\"string\",\"pattern\":\"^a{4}$\",\"maxLength\":3}",
		 "schema.pattern: no string of it has a length within"},
		{"{\"type\":\"string\",\"format\":\"hostname\"}", "schema.format: not followed"},
		{"{\"type\":\"integer\",\"minimum\":1.5,\"maximum\":1.9}",
		 "no number lies between"},
		{"{\"type\":\"number\",\"exclusiveMinimum\":true}", "boolean form"},
		{"{\"type\":\"strin\"}", "schema: type: expected"},
		{"{\"oneOf\":[{\"type\":\"object\"},{\"properties\":{\"a\":{}}}]}",
		 "may match the same value"},
		{"{\"oneOf\":[{\"type\":\"string\"},{\"type\":\"integer\"},{\"enum\":[\"a\"]}]}",
		 "oneOf: alternatives 2 and one before"},
		{"{\"$ref\":\"#/nowhere\"}", "names no place"},
		{"{\"$ref\":\"http://x/s.json\"}", "only places in this schema"},
		{"{\"properties\":{\"a\":{}},\"required\":[\"b\"]}",
		 "schema.required: a required name"},
		{"{\"enum\":[]}", "enum: no value"},
		{"{\"type\":\"array\",\"minItems\":3,\"maxItems\":1}", "minItems is above"},
		{"false", "false allows no value"},
		{"{\"items\":[{}]}", "a tuple"},
		{"{\"prefixItems\":[{}],\"items\":false,\"minItems\":2}", "above the prefixItems"},
		{"{\"prefixItems\":[]}", "schema.prefixItems: expected a list"},
		{"{\"uniqueItems\":true,\"items\":{\"type\":\"string\"}}",
		 "schema.uniqueItems: supported for arrays of the values of an enum"},
		{"{\"uniqueItems\":true,\"items\":{\"enum\":[1,2]},\"minItems\":3}",
		 "schema.uniqueItems: minItems is above"},
		{"{\"uniqueItems\":true,\"items\":{\"enum\":[1,1.0]}}", "one number twice"},
		{"{\"uniqueItems\":1}", "schema.uniqueItems: expected a boolean"},
		{"{\"properties\":{\"a\":{\"format\":\"ipv6\"}}}",
		 "schema.properties.a.format: not followed"},
		{"{\"type\":\"string\",\"maxLength\":-1}", "schema.maxLength: expected a count"},
		{"{\"$defs\":{\"a\":{\"$ref\":\"#/$defs/a\"}},\"$ref\":\"#/$defs/a\"}", "nests"},
		{"{\"anyOf\":[{\"$ref\":\"#\"},{\"type\":\"null\"}]}", "its own alternative"},
		{"3", "expected a schema"},
	};
	for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
		struct js_schema *sc = compile_text(cases[i][0]);
		if (sc || !strstr(err_msg(), cases[i][1]))
			fail_msg("%s: %s, expected \"%s\"", cases[i][0],
				 sc ? "compiled" : err_msg(), cases[i][1]);
	}
	/* 65 properties, and a schema nested 70 deep */
	char big[4096] = "{\"properties\":{";
	for (int i = 0; i < 65; i++)
		snprintf(big + strlen(big), sizeof big - strlen(big), "%s\"p%d\":{}", i ? "," : "",
			 i);
	strcat(big, "}}");
	assert_null(compile_text(big));
	assert_non_null(strstr(err_msg(), "more than 64"));
	char deep[4096] = "";
	for (int i = 0; i < 70; i++)
		strcat(deep, "{\"items\":");
	strcat(deep, "{}");
	for (int i = 0; i < 70; i++)
		strcat(deep, "}");
	assert_null(compile_text(deep));
	assert_non_null(strstr(err_msg(), "nests more than 64"));
	/* 17 objects in an anyOf: more readings than are kept side by side; 16 are not */
	char alts[4096];
	for (int n = 17; n >= 16; n--) {
		strcpy(alts, "{\"anyOf\":[{\"type\":\"null\"}");
		for (int i = 0; i < n; i++)
			snprintf(alts + strlen(alts), sizeof alts - strlen(alts),
				 ",{\"properties\":{\"k%d\":{}},\"required\":[\"k%d\"]}", i, i);
		strcat(alts, "]}");
		at_limit(alts, n == 16 ? NULL : "anyOf: 17 alternatives may begin with '{'");
	}
}

/* What a sampler may pass unfed inside a string: js_string_chars pieces within
 * js_string_room, each of which feeding takes too; closed after a whole value. */
static void test_string_room(void **state)
{
	(void)state;
	struct js_schema *sc = compile_text("{\"type\":\"object\",\"properties\":{\"s\":{"
					    "\"type\":\"string\",\"maxLength\":5},\"e\":{\"enum\":"
					    "[\"ab\"]},\"k\":{\"type\":\"object\"}}}");
	assert_non_null(sc);
	static struct js_state p, t;
	js_init(&p, sc);
	assert_true(js_feed(&p, "{\"s\":\"ab", 8));
	assert_int_equal(js_string_room(&p), 3);
	static const char *const pieces[] = {
		"c", "cde", "cdef", "\xc3\xa9\xe2\x82\xac", "x\"", "\\n", "\xc3", "\x01", " the"};
	static const size_t chars[] = {1, 3, 4, 2, 0, 0, 0, 0, 4};
	for (size_t i = 0; i < sizeof pieces / sizeof *pieces; i++) {
		size_t n = js_string_chars(pieces[i], strlen(pieces[i]));
		assert_int_equal(n, chars[i]);
		js_copy(&t, &p);
		bool fed = js_feed(&t, pieces[i], strlen(pieces[i]));
		if (n && n <= js_string_room(&p) && !fed)
			fail_msg("'%s' passes unfed, yet feeding refuses it", pieces[i]);
		if (n > js_string_room(&p) && fed)
			fail_msg("'%s' is past maxLength, yet feeding takes it", pieces[i]);
	}
	assert_true(js_feed(&p, "\",\"e\":\"a", 8));
	assert_int_equal(js_string_room(&p), 0); /* a fixed text: every byte is fed */
	assert_true(js_feed(&p, "b\",\"k\":{\"", 9));
	assert_int_equal(js_string_room(&p), UINT32_MAX); /* a free key */
	assert_false(js_done(&p));
	assert_true(js_feed(&p, "x\":1}}", 6));
	assert_true(js_done(&p) && js_closed(&p));
	js_free(sc);
	/* a number at the top: whole, and it may go on */
	sc = compile_text("{\"type\":\"integer\"}");
	js_init(&p, sc);
	assert_true(js_feed(&p, "4", 1));
	assert_true(js_done(&p) && !js_closed(&p));
	assert_true(js_feed(&p, "2 ", 2));
	assert_true(js_done(&p) && js_closed(&p));
	js_free(sc);
}

/* A pattern of 127 characters to match is taken, 128 are not; 256 patterns in a
 * schema are taken, 257 are not. */
static void test_pattern_limits(void **state)
{
	(void)state;
	for (int n = 127; n <= 128; n++) {
		char text[128];
		snprintf(text, sizeof text, "{\"type\":\"string\",\"pattern\":\"^a{%d}$\"}", n);
		at_limit(text, n == 127 ? NULL : "more than 127 characters to match");
	}
	static char big[257 * 64 + 1024];
	for (int n = 256; n <= 257; n++) { /* in objects of 32 (64 properties at most) */
		strcpy(big, "{\"properties\":{");
		for (int i = 0; i < n; i++) {
			size_t at = strlen(big);
			if (i % 32 == 0)
				snprintf(big + at, sizeof big - at, "%s\"o%d\":{\"properties\":{",
					 i ? "}}," : "", i / 32);
			at = strlen(big);
			snprintf(big + at, sizeof big - at,
				 "%s\"p%d\":{\"type\":\"string\",\"pattern\":\"b\"}",
				 i % 32 ? "," : "", i);
		}
		strcat(big, "}}}}");
		at_limit(big, n == 256 ? NULL : "more patterns in one schema");
	}
}

/* js_choice: one of the texts exactly, from its first byte, nothing around it; a
 * text that begins another is whole yet goes on; the bytes are the text's own. */
static void test_choice(void **state)
{
	(void)state;
	json_t *v = json_loads("[\"yes\", \"no\", \"yes!\", \"a\\\"b\\\\c\", \"\\n\", \"no\"]", 0,
			       NULL);
	struct js_schema *sc = js_choice(v, "guided_choice");
	json_decref(v);
	assert_non_null(sc);
	static const struct {
		const char *text;
		size_t reach; /* bytes taken */
		bool done, closed;
	} cases[] = {
		{"yes", 3, true, false},      {"yes!", 4, true, true},
		{"no", 2, true, true},        {"n", 1, false, false},
		{"a\"b\\c", 5, true, true},   {"\n", 1, true, true},
		{"\"yes\"", 0, false, false}, {" yes", 0, false, false},
		{"yes ", 3, false, false},    {"no\n", 2, false, false},
		{"\n\n", 1, false, false},    {"yes!!", 4, false, false},
		{"", 0, false, false},        {"noo", 2, false, false},
	};
	for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
		static struct js_state p;
		js_init(&p, sc);
		size_t n = strlen(cases[i].text), k = 0;
		while (k < n && js_feed(&p, cases[i].text + k, 1))
			k++;
		if (k != cases[i].reach ||
		    (k == n && (js_done(&p) != cases[i].done || js_closed(&p) != cases[i].closed)))
			fail_msg("'%s': %zu bytes taken (want %zu), done %d closed %d",
				 cases[i].text, k, cases[i].reach, k == n && js_done(&p),
				 k == n && js_closed(&p));
		assert_int_equal(js_string_room(&p), 0);
	}
	js_free(sc);
	/* refused: nothing, a number, a NUL inside, more than 1024 */
	static const char *const bad[] = {"[]", "[\"a\", 1]", "[\"a\\u0000b\"]", "{}"};
	static const char *const why[] = {
		"guided_choice: expected a non-empty array", "guided_choice[1]: expected a string",
		"guided_choice[0]: a NUL character", "guided_choice: expected a non-empty array"};
	for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
		v = json_loads(bad[i], JSON_ALLOW_NUL, NULL);
		assert_null(js_choice(v, "guided_choice"));
		json_decref(v);
		if (strncmp(err_msg(), why[i], strlen(why[i])))
			fail_msg("%s: '%s'", bad[i], err_msg());
	}
	v = json_array();
	for (int i = 0; i < 1025; i++)
		json_array_append_new(v, json_sprintf("c%d", i));
	assert_null(js_choice(v, "guided_choice"));
	json_array_remove(v, 0);
	sc = js_choice(v, "guided_choice");
	assert_non_null(sc);
	js_free(sc);
	json_decref(v);
}

/* js_regex_text: the whole text matches the pattern, its bytes as they are (a quote, a
 * backslash, a line break are characters), ^ and $ at the ends taken as said. */
static void test_regex_text(void **state)
{
	(void)state;
	static const struct {
		const char *pattern, *text;
		size_t reach;
		bool done;
	} cases[] = {
		{"\\d{3}-[a-z]+", "123-ab", 6, true},
		{"^\\d{3}-[a-z]+$", "123-ab", 6, true},
		{"\\d{3}-[a-z]+", "12-ab", 2, false},
		{"\\d{3}-[a-z]+", "123-", 4, false},
		{"(yes|no)", "yes", 3, true},
		{"yes|no", "no", 2, true},
		{"yes|no", "yesno", 3, false},
		{"a\"b\\\\\n", "a\"b\\\n", 5, true},
		{"a\\$", "a$", 2, true},
		{"x*", "", 0, true},
		{"d\u00e9j\u00e0", "d\u00e9j\u00e0", 6, true},
		/* \x1c is Python's \s and not ECMA-262's: no reading of [^\s] takes it */
		{"[^\\s]", "\x1c", 0, false},
		{"[^\\d\\s]x", "\x1fx", 0, false},
		{"[^\\d]", "a", 1, true},
		{"[^a]", "\n", 1, true},
	};
	for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
		struct js_schema *sc =
			js_regex_text(cases[i].pattern, strlen(cases[i].pattern), "re");
		if (!sc)
			fail_msg("'%s': %s", cases[i].pattern, err_msg());
		bool done;
		size_t k = reach_schema(sc, cases[i].text, strlen(cases[i].text), &done);
		if (k != cases[i].reach || (k == strlen(cases[i].text) && done != cases[i].done))
			fail_msg("'%s' on '%s': %zu bytes taken (want %zu), done %d",
				 cases[i].pattern, cases[i].text, k, cases[i].reach, done);
		js_free(sc);
	}
	/* a class of surrogates alone, or one that is empty in either reading, matches no
	 * UTF-8 text */
	static const char *const bad[] = {
		"a)(b", "(a", "a^b", "x{2,1}", "\\ud800", "a[\\ud800-\\udfff]", "[^\\s\\S]"};
	for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
		if (js_regex_text(bad[i], strlen(bad[i]), "guided_regex") ||
		    strncmp(err_msg(), "guided_regex: ", 14))
			fail_msg("'%s' is not refused as it should be: %s", bad[i], err_msg());
	/* its classes' ranges are bounded: each is tried on every token at every step */
	static char big[8192]; /* 10 classes of 110 characters apart: 1,100 ranges */
	size_t at = 0;
	for (int c = 0; c < 10; c++) {
		big[at++] = '[';
		for (int k = 0; k < 110; k++)
			at += (size_t)snprintf(big + at, sizeof big - at, "\\u%04x",
					       0x4e00 + 2 * k);
		big[at++] = ']';
	}
	assert_null(js_regex_text(big, at, "guided_regex"));
	assert_non_null(strstr(err_msg(), "more than 1024 ranges"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_cases),        cmocka_unit_test(test_against_jansson),
		cmocka_unit_test(test_schema_cases), cmocka_unit_test(test_schema_errors),
		cmocka_unit_test(test_string_room),  cmocka_unit_test(test_pattern_limits),
		cmocka_unit_test(test_choice),       cmocka_unit_test(test_regex_text),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
