/* jscan.c — strict pull scanner for JSON (see jscan.h). */
#include "tokenizer/jscan.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "src/base/err.h"

enum { JSCAN_MAX_DEPTH = 64 };

void jscan_init(struct jscan *j, const char *s, size_t len, const char *file)
{
	memset(j, 0, sizeof *j);
	j->s = s;
	j->len = len;
	j->file = file;
	j->field = "(top level)";
}

void jscan_done(struct jscan *j)
{
	free(j->buf);
	j->buf = NULL;
}

int jscan_error(struct jscan *j, const char *what)
{
	return err_set("%s: %s: %s at byte %zu", j->file, j->field, what, j->pos);
}

int jscan_peek(struct jscan *j)
{
	while (j->pos < j->len) {
		char c = j->s[j->pos];
		if (c != ' ' && c != '\n' && c != '\r' && c != '\t')
			return (unsigned char)c;
		j->pos++;
	}
	return 0;
}

int jscan_expect(struct jscan *j, int c)
{
	if (jscan_peek(j) != c) {
		char what[32];
		snprintf(what, sizeof what, "expected '%c'", c);
		return jscan_error(j, what);
	}
	j->pos++;
	return 0;
}

int jscan_more(struct jscan *j, int close, bool first)
{
	int c = jscan_peek(j);
	if (c == close) {
		j->pos++;
		return 0;
	}
	if (!first) {
		if (c != ',')
			return jscan_error(j, close == '}' ? "expected ',' or '}'"
							   : "expected ',' or ']'");
		j->pos++;
	}
	return 1;
}

static int buf_put(struct jscan *j, const char *p, size_t n)
{
	if (j->buf_len + n + 1 > j->buf_cap) {
		size_t cap = j->buf_cap ? j->buf_cap : 64;
		while (cap < j->buf_len + n + 1)
			cap *= 2;
		char *b = realloc(j->buf, cap);
		if (!b)
			return err_set("%s: out of memory", j->file);
		j->buf = b;
		j->buf_cap = cap;
	}
	memcpy(j->buf + j->buf_len, p, n);
	j->buf_len += n;
	return 0;
}

static int hex4(const char *p, unsigned *out)
{
	unsigned v = 0;
	for (int i = 0; i < 4; i++) {
		char c = p[i];
		v <<= 4;
		if (c >= '0' && c <= '9')
			v |= (unsigned)(c - '0');
		else if (c >= 'a' && c <= 'f')
			v |= (unsigned)(c - 'a' + 10);
		else if (c >= 'A' && c <= 'F')
			v |= (unsigned)(c - 'A' + 10);
		else
			return -1;
	}
	*out = v;
	return 0;
}

/* Length of the valid UTF-8 sequence at p (n bytes left), 0 if invalid. */
static size_t utf8_len(const unsigned char *p, size_t n)
{
	unsigned b = p[0];
	if (b < 0x80)
		return 1;
	if (b >= 0xC2 && b <= 0xDF)
		return n >= 2 && (p[1] & 0xC0) == 0x80 ? 2 : 0;
	if (b >= 0xE0 && b <= 0xEF) {
		if (n < 3 || (p[1] & 0xC0) != 0x80 || (p[2] & 0xC0) != 0x80)
			return 0;
		if ((b == 0xE0 && p[1] < 0xA0) || (b == 0xED && p[1] >= 0xA0))
			return 0;
		return 3;
	}
	if (b >= 0xF0 && b <= 0xF4) {
		if (n < 4 || (p[1] & 0xC0) != 0x80 || (p[2] & 0xC0) != 0x80 ||
		    (p[3] & 0xC0) != 0x80)
			return 0;
		if ((b == 0xF0 && p[1] < 0x90) || (b == 0xF4 && p[1] >= 0x90))
			return 0;
		return 4;
	}
	return 0;
}

static int put_cp(struct jscan *j, unsigned c)
{
	char u[4];
	size_t n;
	if (c < 0x80) {
		u[0] = (char)c;
		n = 1;
	} else if (c < 0x800) {
		u[0] = (char)(0xC0 | c >> 6);
		u[1] = (char)(0x80 | (c & 0x3F));
		n = 2;
	} else if (c < 0x10000) {
		u[0] = (char)(0xE0 | c >> 12);
		u[1] = (char)(0x80 | (c >> 6 & 0x3F));
		u[2] = (char)(0x80 | (c & 0x3F));
		n = 3;
	} else {
		u[0] = (char)(0xF0 | c >> 18);
		u[1] = (char)(0x80 | (c >> 12 & 0x3F));
		u[2] = (char)(0x80 | (c >> 6 & 0x3F));
		u[3] = (char)(0x80 | (c & 0x3F));
		n = 4;
	}
	return buf_put(j, u, n);
}

static int escape(struct jscan *j)
{
	/* j->pos is at the byte after the backslash */
	if (j->pos >= j->len)
		return jscan_error(j, "unterminated string");
	char c = j->s[j->pos++], o;
	switch (c) {
	case '"': o = '"'; break;
	case '\\': o = '\\'; break;
	case '/': o = '/'; break;
	case 'b': o = '\b'; break;
	case 'f': o = '\f'; break;
	case 'n': o = '\n'; break;
	case 'r': o = '\r'; break;
	case 't': o = '\t'; break;
	case 'u': {
		unsigned u, lo;
		if (j->len - j->pos < 4 || hex4(j->s + j->pos, &u))
			return jscan_error(j, "bad \\u escape");
		j->pos += 4;
		if (u >= 0xDC00 && u <= 0xDFFF)
			return jscan_error(j, "lone low surrogate in \\u escape");
		if (u >= 0xD800 && u <= 0xDBFF) {
			if (j->len - j->pos < 6 || j->s[j->pos] != '\\' ||
			    j->s[j->pos + 1] != 'u' || hex4(j->s + j->pos + 2, &lo) ||
			    lo < 0xDC00 || lo > 0xDFFF)
				return jscan_error(j, "lone high surrogate in \\u escape");
			j->pos += 6;
			u = 0x10000 + ((u - 0xD800) << 10) + (lo - 0xDC00);
		}
		return put_cp(j, u);
	}
	default: return jscan_error(j, "bad escape in string");
	}
	return buf_put(j, &o, 1);
}

int jscan_string(struct jscan *j)
{
	if (jscan_expect(j, '"'))
		return -1;
	j->buf_len = 0;
	for (;;) {
		/* a run of plain characters (valid UTF-8 included) is copied in one go */
		size_t start = j->pos, n;
		const unsigned char *s = (const unsigned char *)j->s;
		while (j->pos < j->len && s[j->pos] != '"' && s[j->pos] != '\\' &&
		       s[j->pos] >= 0x20 && (n = utf8_len(s + j->pos, j->len - j->pos)) != 0)
			j->pos += n;
		if (buf_put(j, j->s + start, j->pos - start))
			return -1;
		if (j->pos >= j->len)
			return jscan_error(j, "unterminated string");
		unsigned char c = s[j->pos];
		if (c == '"') {
			j->pos++;
			break;
		}
		if (c == '\\') {
			j->pos++;
			if (escape(j))
				return -1;
		} else if (c < 0x20) {
			return jscan_error(j, "control character in string");
		} else {
			return jscan_error(j, "invalid UTF-8 in string");
		}
	}
	if (buf_put(j, "", 1))
		return -1;
	j->buf_len--;
	return 0;
}

int jscan_int(struct jscan *j, int64_t lo, int64_t hi, int64_t *out)
{
	int c = jscan_peek(j);
	bool neg = false;
	if (c == '-') {
		neg = true;
		j->pos++;
	}
	size_t start = j->pos;
	int64_t v = 0;
	while (j->pos < j->len && j->s[j->pos] >= '0' && j->s[j->pos] <= '9') {
		if (v > (INT64_MAX - 9) / 10)
			return jscan_error(j, "integer too large");
		v = v * 10 + (j->s[j->pos++] - '0');
	}
	if (j->pos == start || (j->s[start] == '0' && j->pos - start > 1))
		return jscan_error(j, "expected an integer");
	if (j->pos < j->len && (j->s[j->pos] == '.' || j->s[j->pos] == 'e' || j->s[j->pos] == 'E'))
		return jscan_error(j, "expected an integer, found a fraction");
	if (neg)
		v = -v;
	if (v < lo || v > hi)
		return jscan_error(j, "integer out of range");
	*out = v;
	return 0;
}

static int skip_literal(struct jscan *j, const char *lit)
{
	size_t n = strlen(lit);
	if (j->len - j->pos < n || memcmp(j->s + j->pos, lit, n) != 0)
		return jscan_error(j, "invalid value");
	j->pos += n;
	return 0;
}

static int skip_number(struct jscan *j)
{
	size_t start = j->pos;
	if (j->s[j->pos] == '-')
		j->pos++;
	size_t d = j->pos;
	while (j->pos < j->len && j->s[j->pos] >= '0' && j->s[j->pos] <= '9')
		j->pos++;
	if (j->pos == d)
		return jscan_error(j, "invalid number");
	if (j->pos < j->len && j->s[j->pos] == '.') {
		d = ++j->pos;
		while (j->pos < j->len && j->s[j->pos] >= '0' && j->s[j->pos] <= '9')
			j->pos++;
		if (j->pos == d)
			return jscan_error(j, "invalid number");
	}
	if (j->pos < j->len && (j->s[j->pos] == 'e' || j->s[j->pos] == 'E')) {
		j->pos++;
		if (j->pos < j->len && (j->s[j->pos] == '+' || j->s[j->pos] == '-'))
			j->pos++;
		d = j->pos;
		while (j->pos < j->len && j->s[j->pos] >= '0' && j->s[j->pos] <= '9')
			j->pos++;
		if (j->pos == d)
			return jscan_error(j, "invalid number");
	}
	(void)start;
	return 0;
}

static int skip_value(struct jscan *j, int depth)
{
	if (depth > JSCAN_MAX_DEPTH)
		return jscan_error(j, "nesting too deep");
	int c = jscan_peek(j);
	switch (c) {
	case '"': return jscan_string(j);
	case '{':
		j->pos++;
		for (int r, first = 1; (r = jscan_more(j, '}', first)) != 0; first = 0) {
			if (r < 0 || jscan_string(j) || jscan_expect(j, ':') ||
			    skip_value(j, depth + 1))
				return -1;
		}
		return 0;
	case '[':
		j->pos++;
		for (int r, first = 1; (r = jscan_more(j, ']', first)) != 0; first = 0) {
			if (r < 0 || skip_value(j, depth + 1))
				return -1;
		}
		return 0;
	case 't': return skip_literal(j, "true");
	case 'f': return skip_literal(j, "false");
	case 'n': return skip_literal(j, "null");
	case 0: return jscan_error(j, "unexpected end of file");
	default:
		if (c == '-' || (c >= '0' && c <= '9'))
			return skip_number(j);
		return jscan_error(j, "invalid value");
	}
}

int jscan_skip(struct jscan *j, size_t *start, size_t *end)
{
	jscan_peek(j);
	*start = j->pos;
	if (skip_value(j, 0))
		return -1;
	*end = j->pos;
	return 0;
}
