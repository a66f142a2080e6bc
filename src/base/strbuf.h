/* strbuf.h — a growing NUL-terminated byte string for code that writes text piece
 * by piece (chat templates, tojson, tokenizer files). A failed allocation is
 * remembered (oom) and later writes are dropped, so a writer checks once at the end. */
#ifndef QWENCHAT_STRBUF_H
#define QWENCHAT_STRBUF_H

#include <stdbool.h>
#include <stddef.h>

struct strbuf {
	char *p; /* the text, NUL-terminated once anything was written; malloc'd */
	size_t n, cap;
	bool oom;
};

/* Appends n bytes. */
void sb_put(struct strbuf *b, const char *s, size_t n);
/* Appends a NUL-terminated string. */
void sb_puts(struct strbuf *b, const char *s);
/* Appends printf-formatted text. */
void sb_printf(struct strbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Appends a double as Python's json.dumps writes it (repr: the fewest digits that
 * read back as x, 1e-06, 1000000.0, 0.1, 1e+16; NaN, Infinity, -Infinity), so that
 * files others read stay exact and short and chat templates' tojson matches. */
void sb_real(struct strbuf *b, double x);

#endif
