/* strbuf.c — the growing string of strbuf.h: capacity doubles from 256 bytes. */
#include "src/base/strbuf.h"

#include <math.h>
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

void sb_real(struct strbuf *b, double x)
{
	char s[40];
	if (x == floor(x) && fabs(x) < 1e16) { /* Python writes these without an exponent */
		snprintf(s, sizeof s, "%.1f", x);
		sb_puts(b, s);
		return;
	}
	for (int prec = 1; prec <= 17; prec++) {
		snprintf(s, sizeof s, "%.*g", prec, x);
		if (strtod(s, NULL) == x)
			break;
	}
	sb_puts(b, s);
	if (!strpbrk(s, ".eEni"))
		sb_puts(b, ".0");
}
