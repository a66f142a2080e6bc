/* fuzz_jsonprefix.c — the JSON-object prefix recognizer against jansson: a text the
 * recognizer reads whole and calls done must be a JSON object to jansson, and an
 * object jansson reads must pass whole (unless it nests deeper or holds longer runs
 * of whitespace than the recognizer's limits); a text fed in two pieces must be read
 * as the same text fed at once. Where jansson refuses what JSON allows, it has no say. */
#include <jansson.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "src/base/jsonprefix.h"

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

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	size_t cut = data[0] % (size);
	const char *s = (const char *)data + 1;
	size_t n = size - 1;
	struct jp whole, split;
	jp_init(&whole);
	jp_init(&split);
	bool ok = jp_feed(&whole, s, n);
	bool ok2 = jp_feed(&split, s, cut < n ? cut : n) &&
		   jp_feed(&split, s + (cut < n ? cut : n), n - (cut < n ? cut : n));
	if (ok != ok2 || (ok && (jp_done(&whole) != jp_done(&split))))
		abort();
	if (memchr(s, 0, n))
		return 0; /* jansson reads a NUL byte as an end the grammar does not know */
	json_error_t err;
	json_t *v = json_loadb(s, n, JSON_DECODE_ANY | JSON_ALLOW_NUL, &err);
	bool object = v && json_is_object(v);
	json_decref(v);
	/* JSON that jansson refuses: a number past a double or an integer, a \u0000 in a key,
	 * an unpaired surrogate escape (JSON's grammar has them; JavaScript and Python
	 * read them) */
	if (!v &&
	    (strstr(err.text, "overflow") || strstr(err.text, "too big") ||
	     strstr(err.text, "NUL byte in object key") || strstr(err.text, "invalid Unicode")))
		return 0;
	if (ok && jp_done(&whole) && !object)
		abort();
	if (object) {
		int depth, space;
		shape(s, n, &depth, &space);
		if (depth <= JP_MAX_DEPTH && space <= JP_MAX_SPACE && !(ok && jp_done(&whole)))
			abort();
	}
	return 0;
}
