/* fuzz_jsonschema.c — the schema recognizer. With the first byte even, JSON mode's
 * schema against jansson: a text the recognizer reads whole and calls done must be a
 * JSON object to jansson, and an object jansson reads must pass whole (unless it nests
 * deeper or holds longer runs of whitespace than the recognizer's limits). With it odd,
 * the input is a schema, a NUL and a text: the schema is compiled (or refused) and the
 * text read against it; an array is guided_choice's strings, and the text must be done
 * exactly when it is one of them; a string is guided_regex's pattern. Either way a text fed in two pieces must be read as the same
 * text fed at once. Where jansson refuses what JSON allows, it has no say. */
#include <jansson.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "src/base/jsonschema.h"

/* The deepest nesting and the longest whitespace run outside strings of a text jansson
 * has read (so its strings are closed and its escapes whole). */
static void shape(const char *s, size_t n, int *depth, int *space)
{
	int d = 0, run = 0;
	bool in = false;
	*depth = 0, *space = 0;
	for (size_t i = 0; i < n; i++) {
		char c = s[i];
		if (in) {
			if (c == '\\')
				i++;
			else if (c == '"')
				in = false;
			continue;
		}
		bool ws = c == ' ' || c == '\t' || c == '\n' || c == '\r';
		run = ws ? run + 1 : 0;
		*space = run > *space ? run : *space;
		in = c == '"';
		d += c == '{' || c == '[';
		d -= c == '}' || c == ']';
		*depth = d > *depth ? d : *depth;
	}
}

/* Reads s against sc at once and in two pieces (the second through a copy); they must
 * agree. Whether it all passed, and *done. */
static bool read_both(const struct js_schema *sc, const char *s, size_t n, size_t cut, bool *done)
{
	static struct js_state whole, split, copy;
	cut = cut < n ? cut : n;
	js_init(&whole, sc);
	js_init(&split, sc);
	bool ok = js_feed(&whole, s, n);
	bool ok2 = js_feed(&split, s, cut);
	js_copy(&copy, &split);
	ok2 = ok2 && js_feed(&copy, s + cut, n - cut);
	if (ok != ok2 || (ok && (js_done(&whole) != js_done(&copy))))
		abort();
	*done = ok && js_done(&whole);
	return ok;
}

/* The input as a schema, NUL, a text. */
static int schema_and_text(const char *s, size_t n, size_t cut)
{
	const char *nul = memchr(s, 0, n);
	if (!nul)
		return 0;
	json_t *v = json_loadb(s, (size_t)(nul - s), JSON_DECODE_ANY, NULL);
	bool choice = json_is_array(v); /* an array: guided_choice's strings */
	struct js_schema *sc = NULL;
	if (choice)
		sc = js_choice(v, "choice");
	else if (json_is_string(v)) /* a string: guided_regex's pattern */
		sc = js_regex_text(json_string_value(v), json_string_length(v), "regex");
	else if (v)
		sc = js_compile(v, "schema");
	if (sc) {
		bool done;
		const char *text = nul + 1;
		size_t len = n - (size_t)(nul + 1 - s);
		read_both(sc, text, len, cut, &done);
		/* a choice is done exactly when the text is one of the strings */
		bool one = false;
		for (size_t i = 0; choice && i < json_array_size(v); i++) {
			json_t *c = json_array_get(v, i);
			one |= json_string_length(c) == len &&
			       !memcmp(json_string_value(c), text, len);
		}
		if (choice && one != done)
			abort();
		js_free(sc);
	}
	json_decref(v);
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct js_schema *object;
	if (size < 1)
		return 0;
	if (!object && !(object = js_object()))
		abort();
	size_t cut = data[0] / 2 % size;
	const char *s = (const char *)data + 1;
	size_t n = size - 1;
	if (data[0] & 1)
		return schema_and_text(s, n, cut);
	bool done, ok = read_both(object, s, n, cut, &done);
	(void)ok;
	if (memchr(s, 0, n))
		return 0; /* jansson reads a NUL byte as an end the grammar does not know */
	json_error_t err;
	json_t *v = json_loadb(s, n, JSON_DECODE_ANY | JSON_ALLOW_NUL, &err);
	bool is_object = v && json_is_object(v);
	json_decref(v);
	/* JSON that jansson refuses: a number past a double or an integer, a \u0000 in a
	 * key (JSON's grammar has them; JavaScript and Python read them) */
	if (!v && (strstr(err.text, "overflow") || strstr(err.text, "too big") ||
		   strstr(err.text, "NUL byte in object key")))
		return 0;
	if (done && !is_object)
		abort();
	if (is_object) {
		int depth, space;
		shape(s, n, &depth, &space);
		if (depth <= JS_MAX_DEPTH && space <= JS_MAX_SPACE && !done)
			abort();
	}
	return 0;
}
