/* jsontype.c — a JSON value's type in words (see jsontype.h). */
#include "src/base/jsontype.h"

#include <stdio.h>
#include <string.h>

const char *jsontype_name(const json_t *v)
{
	if (!v)
		return "nothing";
	switch (json_typeof(v)) {
	case JSON_OBJECT: return "an object";
	case JSON_ARRAY: return "an array";
	case JSON_STRING: return "a string";
	case JSON_INTEGER:
	case JSON_REAL: return "a number";
	case JSON_TRUE:
	case JSON_FALSE: return "a boolean";
	default: return "null";
	}
}

const char *jsontype_error(const json_error_t *je)
{
	/* refused: the strings here are C strings, which would end at the NUL */
	if (json_error_code(je) == json_error_null_character)
		return "a \\u0000 character in a string is not supported";
	if (json_error_code(je) == json_error_numeric_overflow)
		return "a number too large (integers up to 2^63 - 1, reals up to about 1.8e308)";
	return je->text;
}

int jsontype_check(json_t *o, const char *const *keys, int n, const char **want)
{
	for (int i = 0; i < n; i++) {
		char name[64];
		size_t len = strlen(keys[i]) - 2;
		char t = keys[i][len + 1];
		snprintf(name, sizeof name, "%.*s", (int)len, keys[i]);
		json_t *v = json_object_get(o, name);
		*want = t == 's' ? "a string" : t == 'o' ? "an object" : "a boolean";
		if (v && !json_is_null(v) &&
		    !(t == 's'   ? json_is_string(v)
		      : t == 'o' ? json_is_object(v)
				 : json_is_boolean(v)))
			return i;
	}
	return -1;
}
