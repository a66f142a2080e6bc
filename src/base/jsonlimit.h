/* jsonlimit.h — what parsing a JSON text will cost, measured before a parser builds
 * anything from it. jansson allocates every value, so a text of empty arrays or
 * objects takes many times its own size in memory, and long to parse. A size cap on
 * the text and a cap on its values bound both. */
#ifndef QWENCHAT_JSONLIMIT_H
#define QWENCHAT_JSONLIMIT_H

#include <stddef.h>

/* Each value costs the parser at most this many bytes (an empty object; a key with
 * its value costs less), so max_values * JLIM_VALUE_BYTES bounds a parse's memory. */
enum { JLIM_VALUE_BYTES = 240 };

struct jlim {
	int max_depth;     /* arrays and objects nested in each other */
	size_t max_values; /* values, object keys counted as values too */
	/* When set: called for each member of the top-level object once its value is
	 * scanned, with the key as written (escapes not decoded) and the value's size in
	 * bytes. A non-zero return stops the scan and is returned (after its err_set). */
	int (*member)(void *user, const char *key, size_t key_len, size_t value_bytes);
	void *user;
};

/* 0 when s[0..n) stays within l, else -1 with err_set("NAME: JSON nested deeper than
 * D levels" or "NAME: more than V JSON values"). Only counts: checking the syntax is
 * the parser's job, and a malformed text that passes is refused by it. */
int jlim_check(const char *s, size_t n, const struct jlim *l, const char *name);

/* The length of the JSON value s[0..n) starts with (white space before it included),
 * found from its brackets and strings alone, so that a list's elements can each be
 * checked and parsed apart: 0 when s ends before the value does. Syntax is the
 * parser's to check. */
size_t jlim_value_len(const char *s, size_t n);

/* A JSON file's text (NUL-terminated, malloc'd, *len bytes) for a parser: a regular
 * file of at most max_bytes (fio_read_file) within l. NULL with err_set naming path. */
char *jlim_read_file(const char *path, size_t max_bytes, const struct jlim *l, size_t *len);

#endif
