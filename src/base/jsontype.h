/* jsontype.h — a JSON value's type in words, for the messages that say what a request
 * or a reply held where it should have held something else ("expected an array, got a
 * string"). */
#ifndef QWENCHAT_JSONTYPE_H
#define QWENCHAT_JSONTYPE_H

#include <jansson.h>

/* "an object", "an array", "a string", "a number", "a boolean" or "null"; "nothing"
 * for NULL (a member that is absent). */
const char *jsontype_name(const json_t *v);

/* Checks members of object o that must be of a type when given (not null): keys[i] is
 * "name:s" (a string), "name:o" (an object) or "name:b" (a boolean), as OpenAI's and
 * vLLM's schemas type them. The index of the first member of another type (*want:
 * what it should be, "a string", ...), or -1 when all are as typed. */
int jsontype_check(json_t *o, const char *const *keys, int n, const char **want);

/* What jansson found wrong, in words for a user: its own text, but for a \u0000 in a
 * string (jansson's text names a flag of its API) and a number out of range. */
const char *jsontype_error(const json_error_t *je);

#endif
