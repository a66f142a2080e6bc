/* term.c — control characters and invalid UTF-8 made visible before printing; the
 * terminal's width. */
#include "src/base/term.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>
#include <utf8proc.h>

static const char replacement[] = "\xef\xbf\xbd"; /* U+FFFD */

static void safe(struct strbuf *b, const char *s, size_t n, bool one_line)
{
	size_t i = 0, run = 0; /* s[run..i) is printable and not yet copied */
	while (i < n) {
		unsigned char c = (unsigned char)s[i];
		if (c >= 0x20 && c < 0x7f) {
			i++;
			continue;
		}
		utf8proc_int32_t cp = -1;
		utf8proc_ssize_t len = 1;
		if (c >= 0x80) {
			len = utf8proc_iterate((const utf8proc_uint8_t *)s + i,
					       (utf8proc_ssize_t)(n - i), &cp);
			if (len > 0 && cp > 0x9f) { /* a printable character beyond ASCII */
				i += (size_t)len;
				continue;
			}
			if (len < 1)
				len = 1;
		} else if ((c == '\n' && !one_line) || c == '\t') {
			i++;
			continue;
		}
		sb_put(b, s + run, i - run);
		if (c < 0x20)
			sb_printf(b, "^%c", c + 0x40);
		else if (c == 0x7f)
			sb_puts(b, "^?");
		else
			sb_puts(b, replacement);
		i += (size_t)len;
		run = i;
	}
	sb_put(b, s + run, n - run);
}

void term_safe(struct strbuf *b, const char *s, size_t n)
{
	safe(b, s, n, false);
}

void term_safe_line(struct strbuf *b, const char *s, size_t n)
{
	safe(b, s, n, true);
}

char *term_osc52(const char *s, size_t n)
{
	static const char b64[] =
		"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
	const char *head = "\033]52;c;";
	size_t hn = strlen(head), out_n = hn + (n + 2) / 3 * 4 + 2;
	char *out = malloc(out_n), *p = out;
	if (!out)
		return NULL;
	memcpy(p, head, hn);
	p += hn;
	const unsigned char *u = (const unsigned char *)s;
	for (size_t i = 0; i < n; i += 3) { /* RFC 4648 base64, padded */
		unsigned v = (unsigned)u[i] << 16 | (i + 1 < n ? (unsigned)u[i + 1] << 8 : 0) |
			     (i + 2 < n ? u[i + 2] : 0);
		*p++ = b64[v >> 18 & 63];
		*p++ = b64[v >> 12 & 63];
		*p++ = i + 1 < n ? b64[v >> 6 & 63] : '=';
		*p++ = i + 2 < n ? b64[v & 63] : '=';
	}
	*p++ = '\a';
	*p = 0;
	return out;
}

int term_write_safe(FILE *f, const char *s, size_t n)
{
	struct strbuf b = {0};
	term_safe(&b, s, n);
	int rc = b.oom ? EOF : 0;
	if (rc == 0 && b.n && fwrite(b.p, 1, b.n, f) != b.n)
		rc = EOF;
	free(b.p);
	return rc;
}

int term_columns(int fd)
{
	struct winsize ws;
	return isatty(fd) && ioctl(fd, TIOCGWINSZ, &ws) == 0 ? ws.ws_col : 0;
}
