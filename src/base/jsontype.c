/* jsontype.c — a JSON value's type in words (see jsontype.h). */
#include "src/base/jsontype.h"

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
