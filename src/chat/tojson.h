/* tojson.h — JSON text written exactly as Python's json.dumps(x, ensure_ascii=False)
 * writes it: what the chat templates' `tojson` filter puts into a prompt (tool
 * definitions, tool-call arguments), so the model sees the bytes it was trained on. */
#ifndef QWENCHAT_TOJSON_H
#define QWENCHAT_TOJSON_H

#include <jansson.h>
#include <stddef.h>

/* The text of v, malloc'd and NUL-terminated (*len bytes when len is not NULL):
 * ", " and ": " separators, keys in their order, non-ASCII characters as they are,
 * control characters escaped, reals as Python's repr (shortest round trip: 0.1,
 * 1e-05, 1e+16, 3.0). NULL with err_set when out of memory. */
char *tojson(const json_t *v, size_t *len);

#endif
