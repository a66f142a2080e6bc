/* strbuf.c — the growing string of strbuf.h: capacity doubles from 256 bytes. */
#include "src/base/strbuf.h"

#include <math.h>
#include <stdbool.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void sb_put(struct strbuf *b, const char *s, size_t n)
{
	if (b->oom)
		return;
	if (b->n + n + 1 > b->cap) {
		size_t cap = b->cap ? b->cap : 256;
		while (cap < b->n + n + 1)
			cap *= 2;
		char *p = realloc(b->p, cap);
		if (!p) {
			b->oom = true;
			return;
		}
		b->p = p;
		b->cap = cap;
	}
	memcpy(b->p + b->n, s, n);
	b->n += n;
	b->p[b->n] = '\0';
}

void sb_puts(struct strbuf *b, const char *s)
{
	sb_put(b, s, strlen(s));
}

void sb_printf(struct strbuf *b, const char *fmt, ...)
{
	char small[256];
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(small, sizeof small, fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	if ((size_t)n < sizeof small) {
		sb_put(b, small, (size_t)n);
		return;
	}
	char *big = malloc((size_t)n + 1);
	if (!big) {
		b->oom = true;
		return;
	}
	va_start(ap, fmt);
	vsnprintf(big, (size_t)n + 1, fmt, ap);
	va_end(ap);
	sb_put(b, big, (size_t)n);
	free(big);
}

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

void sb_real(struct strbuf *b, double x)
{
	char out[64];
	if (!isfinite(x)) { /* what json.dumps writes for them */
		sb_puts(b, isnan(x) ? "NaN" : x > 0 ? "Infinity" : "-Infinity");
		return;
	}
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
