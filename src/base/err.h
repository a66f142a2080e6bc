/* err.h — one error message per thread: library code records it, callers report it. */
#ifndef QWENCHAT_ERR_H
#define QWENCHAT_ERR_H

#include <stdarg.h>

/* The longest message err_msg returns, its NUL counted: room for two paths of
 * PATH_MAX and what went wrong. A copy of err_msg() this size keeps its reason. */
enum { ERR_MAX = 10240 };

/* Records a message (printf format) saying what went wrong and where; replaces any
 * previous one. Always returns -1 so callers can write `return err_set(...)`. */
int err_set(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* err_set with a va_list (for code that forwards its caller's arguments). */
int err_vset(const char *fmt, va_list ap);

/* Prefixes the current message with "PREFIX: " (e.g. a file name added by a caller
 * that knows it). Returns -1. */
int err_prefix(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* The last message recorded on this thread, or "unknown error" when there is none. */
const char *err_msg(void);

/* Forgets the current message. */
void err_clear(void);

#endif
