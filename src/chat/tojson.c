/* tojson.c — Python's json.dumps(x, ensure_ascii=False), byte for byte: the
 * encoder in Lib/json/encoder.py with its default separators, and float.__repr__
 * for reals. */
#include "src/chat/tojson.h"
#include "src/base/err.h"
#include "src/base/strbuf.h"

#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* py_encode_basestring: backslash, quote and the C0 controls escaped (\n \r \t \b \f
 * by name, the others as \u00XX in lower-case hex); everything else as it is. */
static void put_string(struct strbuf *b, const char *s, size_t n)
{
	static const char *const named[] = {
		['\b'] = "\\b", ['\t'] = "\\t", ['\n'] = "\\n",  ['\f'] = "\\f",
		['\r'] = "\\r", ['"'] = "\\\"", ['\\'] = "\\\\",
	};
	sb_puts(b, "\"");
	size_t start = 0; /* first byte not yet written */
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];
		if (c >= 0x20 && c != '"' && c != '\\')
			continue;
		sb_put(b, s + start, i - start);
		if (c < sizeof named / sizeof named[0] && named[c])
			sb_puts(b, named[c]);
		else
			sb_printf(b, "\\u%04x", c);
		start = i + 1;
	}
	sb_put(b, s + start, n - start);
	sb_puts(b, "\"");
}

/* float.__repr__: the shortest digits that read back as x, written plainly for
 * 1e-4 <= |x| < 1e16 (with ".0" for a whole number), else as d[.ddd]e+XX. */

static void put_value(struct strbuf *b, const json_t *v)
{
	switch (json_typeof(v)) {
	case JSON_OBJECT: {
		const char *key;
		json_t *item;
		bool first = true;
		sb_puts(b, "{");
		json_object_foreach((json_t *)v, key, item)
		{
			if (!first)
				sb_puts(b, ", ");
			first = false;
			put_string(b, key, strlen(key));
			sb_puts(b, ": ");
			put_value(b, item);
		}
		sb_puts(b, "}");
		break;
	}
	case JSON_ARRAY:
		sb_puts(b, "[");
		for (size_t i = 0; i < json_array_size(v); i++) {
			if (i)
				sb_puts(b, ", ");
			put_value(b, json_array_get(v, i));
		}
		sb_puts(b, "]");
		break;
	case JSON_STRING: put_string(b, json_string_value(v), json_string_length(v)); break;
	case JSON_INTEGER: sb_printf(b, "%" JSON_INTEGER_FORMAT, json_integer_value(v)); break;
	case JSON_REAL: sb_real(b, json_real_value(v)); break;
	case JSON_TRUE: sb_puts(b, "true"); break;
	case JSON_FALSE: sb_puts(b, "false"); break;
	case JSON_NULL: sb_puts(b, "null"); break;
	}
}

char *tojson(const json_t *v, size_t *len)
{
	struct strbuf b = {0};
	put_value(&b, v);
	if (b.oom || !b.p) {
		free(b.p);
		err_set("out of memory writing JSON");
		return NULL;
	}
	if (len)
		*len = b.n;
	return b.p;
}
