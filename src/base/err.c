/* err.c — thread-local error message storage behind err_set/err_msg. */
#include "src/base/err.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static _Thread_local char err_buf[ERR_MAX];

int err_vset(const char *fmt, va_list ap)
{
	vsnprintf(err_buf, sizeof err_buf, fmt, ap);
	return -1;
}

int err_set(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	err_vset(fmt, ap);
	va_end(ap);
	return -1;
}

int err_prefix(const char *fmt, ...)
{
	char prefix[ERR_MAX], old[ERR_MAX];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(prefix, sizeof prefix, fmt, ap);
	va_end(ap);
	memcpy(old, err_buf, sizeof old);
	/* bounded widths: the prefix is a file name, the message the important part */
	int k = snprintf(err_buf, sizeof err_buf, "%.4200s: ", prefix);
	snprintf(err_buf + k, sizeof err_buf - (size_t)k, "%s", old[0] ? old : "unknown error");
	return -1;
}

const char *err_msg(void)
{
	return err_buf[0] ? err_buf : "unknown error";
}

void err_clear(void)
{
	err_buf[0] = '\0';
}
