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
/* k digits d.ddd of the integer D (< 10^k) with exponent ex, as %.{k-1}e writes them. */
static void format_e(char *e, size_t size, bool neg, long long D, int k, int ex)
{
	char d[24];
	snprintf(d, sizeof d, "%0*lld", k, D);
	snprintf(e, size, "%s%c%s%.*se%+03d", neg ? "-" : "", d[0], k > 1 ? "." : "", k - 1, d + 1,
		 ex);
}

/* The fewest digits that read back as x (CPython's repr), as %.{k-1}e writes them:
 * for each k the correctly rounded k digits, or else the k-digit decimal on either
 * side of them, which at a power of two (whose lower neighbour is twice as close as
 * its upper one) can read back where the rounded one does not. 17 digits always do. */
static void shortest_digits(double x, char *e, size_t size)
{
	for (int k = 1; k <= 17; k++) {
		snprintf(e, size, "%.*e", k - 1, x);
		if (strtod(e, NULL) == x)
			return;
		/* e is [-]d[.ddd]e(+|-)XX: its digits as an integer D and its exponent */
		const char *p = e;
		bool neg = *p == '-';
		long long D = 0, top = 1;
		for (p += neg; *p != 'e'; p++)
			if (*p != '.')
				D = 10 * D + (*p - '0');
		int ex = atoi(p + 1);
		for (int i = 1; i < k; i++)
			top *= 10; /* 10^(k-1) */
		char c[40];
		if (D + 1 == 10 * top)
			format_e(c, sizeof c, neg, top, k, ex + 1);
		else
			format_e(c, sizeof c, neg, D + 1, k, ex);
		if (strtod(c, NULL) == x) {
			snprintf(e, size, "%s", c);
			return;
		}
		if (D == top)
			format_e(c, sizeof c, neg, 10 * top - 1, k, ex - 1);
		else
			format_e(c, sizeof c, neg, D - 1, k, ex);
		if (strtod(c, NULL) == x) {
			snprintf(e, size, "%s", c);
			return;
		}
	}
}

static void put_real(struct strbuf *b, double x)
{
	char out[64];
	if (x == 0) {
		sb_puts(b, signbit(x) ? "-0.0" : "0.0");
		return;
	}
	char e[40];
	shortest_digits(x, e, sizeof e);
	/* e is [-]d[.ddd]e(+|-)XX: its digits, and the decimal point's place after them */
	const char *p = e;
	bool neg = *p == '-';
	if (neg)
		p++;
	char digits[24];
	int nd = 0;
	for (; *p != 'e'; p++)
		if (*p != '.')
			digits[nd++] = *p;
	digits[nd] = '\0';
	int decpt = atoi(p + 1) + 1;
	char *o = out;
	if (neg)
		*o++ = '-';
	if (decpt <= -4 || decpt > 16) { /* x = 0.ddd x 10^decpt, as CPython's dtoa says */
		*o++ = digits[0];
		if (nd > 1) {
			*o++ = '.';
			memcpy(o, digits + 1, (size_t)nd - 1);
			o += nd - 1;
		}
		snprintf(o, sizeof out - (size_t)(o - out), "e%+03d", decpt - 1);
	} else if (decpt <= 0) { /* 0.000ddd */
		*o++ = '0';
		*o++ = '.';
		for (int i = 0; i < -decpt; i++)
			*o++ = '0';
		memcpy(o, digits, (size_t)nd);
		o[nd] = '\0';
	} else if (decpt >= nd) { /* ddd000.0 */
		memcpy(o, digits, (size_t)nd);
		o += nd;
		for (int i = nd; i < decpt; i++)
			*o++ = '0';
		strcpy(o, ".0");
	} else { /* ddd.ddd */
		memcpy(o, digits, (size_t)decpt);
		o += decpt;
		*o++ = '.';
		memcpy(o, digits + decpt, (size_t)(nd - decpt));
		o[nd - decpt] = '\0';
	}
	sb_puts(b, out);
}

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
	case JSON_REAL: put_real(b, json_real_value(v)); break;
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
