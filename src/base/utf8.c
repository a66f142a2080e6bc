/* utf8.c — well-formed UTF-8 (Unicode 15, table 3-7) and maximal subparts. */
#include "src/base/utf8.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <utf8proc.h>

/* Bytes of the well-formed sequence at p[0..n), or 0 with *bad the length of the
 * ill-formed sequence's maximal subpart. */
static size_t sequence(const unsigned char *p, size_t n, size_t *bad)
{
	unsigned char b = p[0], lo = 0x80, hi = 0xBF;
	size_t need;
	if (b < 0x80)
		return 1;
	if (b >= 0xC2 && b <= 0xDF) {
		need = 2;
	} else if (b >= 0xE0 && b <= 0xEF) {
		need = 3;
		lo = b == 0xE0 ? 0xA0 : 0x80; /* no overlong forms */
		hi = b == 0xED ? 0x9F : 0xBF; /* no surrogates */
	} else if (b >= 0xF0 && b <= 0xF4) {
		need = 4;
		lo = b == 0xF0 ? 0x90 : 0x80;
		hi = b == 0xF4 ? 0x8F : 0xBF; /* nothing past U+10FFFF */
	} else {
		*bad = 1;
		return 0;
	}
	size_t i = 1;
	for (; i < need && i < n; i++)
		if (p[i] < (i == 1 ? lo : 0x80) || p[i] > (i == 1 ? hi : 0xBF))
			break;
	if (i == need)
		return need;
	*bad = i;
	return 0;
}

void utf8_next_piece(const char *s, size_t n, size_t *valid, size_t *bad)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t i = 0;
	*bad = 0;
	while (i < n) {
		size_t k = sequence(p + i, n - i, bad);
		if (!k)
			break;
		i += k;
	}
	*valid = i;
}

size_t utf8_replaced_len(const char *text, size_t len)
{
	size_t out = 0, pieces = 0;
	for (size_t i = 0; i < len;) {
		size_t valid, bad;
		utf8_next_piece(text + i, len - i, &valid, &bad);
		out += valid + (bad ? 3 : 0); /* bad >= 1: out <= 3 * len */
		pieces += bad ? 1 : 0;
		i += valid + bad;
	}
	return pieces ? out : 0;
}

void utf8_replace_ill_formed(const char *text, size_t len, char *out)
{
	for (size_t i = 0; i < len;) {
		size_t valid, bad;
		utf8_next_piece(text + i, len - i, &valid, &bad);
		memcpy(out, text + i, valid);
		out += valid;
		if (bad) {
			memcpy(out, UTF8_REPLACEMENT, 3);
			out += 3;
		}
		i += valid + bad;
	}
}

char *utf8_dup_replaced(const char *s, size_t n, size_t *len)
{
	size_t fixed = utf8_replaced_len(s, n), out_len = fixed ? fixed : n;
	char *out = malloc(out_len + 1);
	if (!out)
		return NULL;
	if (fixed)
		utf8_replace_ill_formed(s, n, out);
	else if (n)
		memcpy(out, s, n);
	out[out_len] = '\0';
	if (len)
		*len = out_len;
	return out;
}

static bool python_space(utf8proc_int32_t cp)
{
	const utf8proc_property_t *p = utf8proc_get_property(cp);
	return p->category == UTF8PROC_CATEGORY_ZS || p->bidi_class == UTF8PROC_BIDI_CLASS_WS ||
	       p->bidi_class == UTF8PROC_BIDI_CLASS_B || p->bidi_class == UTF8PROC_BIDI_CLASS_S;
}

void utf8_strip(const char *s, size_t n, size_t *start, size_t *end)
{
	const utf8proc_uint8_t *u = (const utf8proc_uint8_t *)s;
	size_t a = 0, b = 0; /* the first character kept, and the end of the last one */
	bool seen = false;
	for (size_t i = 0; i < n;) {
		utf8proc_int32_t cp = -1;
		utf8proc_ssize_t len = utf8proc_iterate(u + i, (utf8proc_ssize_t)(n - i), &cp);
		if (len < 1) /* not well-formed: a byte that is not whitespace */
			len = 1, cp = -1;
		if (cp < 0 || !python_space(cp)) {
			if (!seen)
				a = i;
			seen = true;
			b = i + (size_t)len;
		}
		i += (size_t)len;
	}
	*start = seen ? a : 0;
	*end = seen ? b : 0;
}
