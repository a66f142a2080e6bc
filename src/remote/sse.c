/* sse.c — the server-sent events reader: bytes in, events out (see sse.h). */
#include "src/remote/sse.h"

#include <stdlib.h>
#include <string.h>

#include "src/base/err.h"

void sse_init(struct sse *s, sse_event_fn on_event, void *user)
{
	memset(s, 0, sizeof *s);
	s->on_event = on_event;
	s->user = user;
}

void sse_free(struct sse *s)
{
	free(s->line.p);
	free(s->data.p);
	memset(&s->line, 0, sizeof s->line);
	memset(&s->data, 0, sizeof s->data);
}

bool sse_pending(const struct sse *s)
{
	return s->line.n > 0 || s->data.n > 0;
}

/* A blank line: the event read so far goes out (none when it has no data). */
static int dispatch(struct sse *s)
{
	int rc = 0;
	if (s->data.n) {
		s->data.n--; /* the newline after the last data line */
		s->data.p[s->data.n] = '\0';
		s->events++;
		rc = s->on_event(s->user, s->name[0] ? s->name : "message", s->data.p, s->data.n);
	}
	s->data.n = 0;
	s->name[0] = '\0';
	return rc;
}

/* One complete line (without its end): a field, a comment or the blank line. */
static int line(struct sse *s, const char *p, size_t n)
{
	if (!s->started) {
		s->started = true;
		if (n >= 3 && !memcmp(p, "\xef\xbb\xbf", 3))
			p += 3, n -= 3;
	}
	if (n == 0)
		return dispatch(s);
	if (p[0] == ':')
		return 0;
	const char *colon = memchr(p, ':', n);
	size_t flen = colon ? (size_t)(colon - p) : n;
	const char *v = colon ? colon + 1 : p + n;
	size_t vlen = n - flen - (colon ? 1 : 0);
	if (vlen && *v == ' ')
		v++, vlen--;
	if (flen == 4 && !memcmp(p, "data", 4)) {
		if (s->data.n + vlen + 1 > SSE_MAX_DATA)
			return err_set("event %zu holds more than %d bytes of data", s->events + 1,
				       SSE_MAX_DATA);
		sb_put(&s->data, v, vlen);
		sb_put(&s->data, "\n", 1);
		return s->data.oom ? err_set("out of memory") : 0;
	}
	if (flen == 5 && !memcmp(p, "event", 5)) {
		size_t k = vlen < SSE_MAX_NAME ? vlen : SSE_MAX_NAME;
		memcpy(s->name, v, k);
		s->name[k] = '\0';
	}
	return 0; /* id, retry and unknown fields mean nothing to a chat stream */
}

/* The line buffered so far plus p[0..n), which ends it. */
static int end_line(struct sse *s, const char *p, size_t n)
{
	if (!s->line.n) /* the whole line is in this read: no copy */
		return line(s, p, n);
	sb_put(&s->line, p, n);
	if (s->line.oom)
		return err_set("out of memory");
	int rc = line(s, s->line.p, s->line.n);
	s->line.n = 0;
	return rc;
}

int sse_feed(struct sse *s, const char *buf, size_t n)
{
	size_t i = 0;
	while (i < n) {
		if (s->after_cr && buf[i] == '\n') { /* the LF of a CRLF split by the read */
			s->after_cr = false;
			i++;
			continue;
		}
		s->after_cr = false;
		size_t j = i;
		while (j < n && buf[j] != '\n' && buf[j] != '\r')
			j++;
		if (s->line.n + (j - i) > SSE_MAX_LINE)
			return err_set("event %zu: a line longer than %d bytes", s->events + 1,
				       SSE_MAX_LINE);
		if (j == n) { /* no line end yet: keep the start of the line */
			sb_put(&s->line, buf + i, j - i);
			return s->line.oom ? err_set("out of memory") : 0;
		}
		int rc = end_line(s, buf + i, j - i);
		if (rc)
			return rc;
		if (buf[j] == '\r') {
			if (j + 1 < n && buf[j + 1] == '\n')
				j++;
			else if (j + 1 == n)
				s->after_cr = true;
		}
		i = j + 1;
	}
	return 0;
}
