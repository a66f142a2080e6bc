/* utf8.h — cutting text into well-formed UTF-8 and the ill-formed bytes between,
 * so that what the model writes is always shown (and saved) as valid text. */
#ifndef QWENCHAT_UTF8_H
#define QWENCHAT_UTF8_H

#include <stddef.h>

/* The UTF-8 of U+FFFD, the replacement character. */
#define UTF8_REPLACEMENT "\xef\xbf\xbd"

/* The next piece of s[0..n): *valid bytes of well-formed UTF-8 from s, then, when
 * *valid < n, *bad (>= 1) bytes of an ill-formed sequence that one U+FFFD replaces:
 * its maximal subpart, as Unicode recommends and Python's errors="replace" does. */
void utf8_next_piece(const char *s, size_t n, size_t *valid, size_t *bad);

/* The bytes s[0..n) becomes with each ill-formed sequence (its maximal subpart, as
 * Python's errors="replace") replaced by U+FFFD, or 0 when it is all well-formed
 * (nothing to replace: the text can be used as it is). */
size_t utf8_replaced_len(const char *s, size_t n);
/* Writes that text into out, which has room for utf8_replaced_len(s, n) bytes. */
void utf8_replace_ill_formed(const char *s, size_t n, char *out);
/* A NUL-terminated copy of s[0..n) with that replacement made, its length in *len
 * (may be NULL); NULL when out of memory. */
char *utf8_dup_replaced(const char *s, size_t n, size_t *len);

/* The well-formed UTF-8 s[0..n) without its leading and trailing whitespace, as
 * Python's str.strip() sees it (general category Zs, or bidirectional class WS, B or
 * S): s[*start, *end). */
void utf8_strip(const char *s, size_t n, size_t *start, size_t *end);

#endif
