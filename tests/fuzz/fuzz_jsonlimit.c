/* fuzz_jsonlimit.c — the pre-parse bound against jansson: for every text jansson
 * parses, jlim_check must count exactly the values (keys included) and the nesting
 * of the tree jansson built, so that the bound it enforces is the parse's real cost.
 * Texts jansson refuses need only not crash the scan; so do texts with a key twice in
 * an object, whose tree keeps the last value only: the scan counts both, which every
 * parse costs before jansson drops the first. */
#include <jansson.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "src/base/jsonlimit.h"

static void measure(json_t *v, int level, size_t *values, int *depth)
{
	const char *key;
	json_t *e;
	size_t i;
	++*values;
	if (json_is_object(v) || json_is_array(v))
		*depth = level + 1 > *depth ? level + 1 : *depth;
	if (json_is_object(v))
		json_object_foreach(v, key, e)
		{
			++*values;
			measure(e, level + 1, values, depth);
		}
	if (json_is_array(v))
		json_array_foreach(v, i, e) measure(e, level + 1, values, depth);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *s = (const char *)data;
	struct jlim l = {.max_depth = 1 << 20, .max_values = SIZE_MAX};
	if (jlim_check(s, size, &l, "fuzz"))
		abort(); /* no limit to exceed */
	json_t *root =
		json_loadb(s, size, JSON_DECODE_ANY | JSON_ALLOW_NUL | JSON_REJECT_DUPLICATES, NULL);
	if (!root)
		return 0;
	size_t values = 0;
	int depth = 0;
	measure(root, 0, &values, &depth);
	json_decref(root);
	l = (struct jlim){.max_depth = depth, .max_values = values};
	if (jlim_check(s, size, &l, "fuzz"))
		abort(); /* counted more than there is */
	l.max_values = values - 1;
	if (!jlim_check(s, size, &l, "fuzz"))
		abort(); /* counted fewer values */
	l = (struct jlim){.max_depth = depth - 1, .max_values = values};
	if (depth > 0 && !jlim_check(s, size, &l, "fuzz"))
		abort(); /* counted less nesting */
	return 0;
}
