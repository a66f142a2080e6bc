/* fuzz_sse.c — a chat-completions stream is untrusted input: any bytes go through the
 * server-sent events reader into the chunk parser, once in reads of a size the first
 * byte picks and once whole. Both must give the same result and the same text (an
 * event never depends on where reads split it), the text must be valid UTF-8 without
 * NUL, and the tool calls must stay within their bounds. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <utf8proc.h>

#include "src/base/strbuf.h"
#include "src/remote/reply.h"
#include "src/remote/sse.h"

static int take(void *u, enum sess_part part, const char *s, size_t n)
{
	struct strbuf *b = u;
	if (n == 0 || memchr(s, '\0', n))
		abort();
	for (size_t i = 0; i < n;) {
		utf8proc_int32_t cp;
		utf8proc_ssize_t k = utf8proc_iterate((const utf8proc_uint8_t *)s + i,
						      (utf8proc_ssize_t)(n - i), &cp);
		if (k <= 0)
			abort();
		i += (size_t)k;
	}
	sb_puts(b, part == SESS_REASONING ? "\x01" : "\x02");
	sb_put(b, s, n);
	return 0;
}

static int on_event(void *u, const char *name, const char *data, size_t len)
{
	return reply_event(u, name, data, len);
}

/* Feeds data in reads of `step` bytes; the text emitted goes to out. Returns the
 * reader's error, or its result times 10 plus reply_end's at the end of the stream. */
static int run(const uint8_t *data, size_t size, size_t step, struct strbuf *out)
{
	struct reply r;
	struct sse s;
	reply_init(&r, take, out);
	sse_init(&s, on_event, &r);
	int rc = 0;
	for (size_t i = 0; i < size && !rc; i += step)
		rc = sse_feed(&s, (const char *)data + i, size - i < step ? size - i : step);
	if (rc >= 0) /* 0 or REPLY_DONE: the end of the stream */
		rc = rc * 10 + reply_end(&r);
	if (r.n_calls > REPLY_MAX_CALLS)
		abort();
	for (size_t i = 0; i < r.n_calls; i++)
		if (r.calls[i].name.n > REPLY_MAX_CALL_NAME ||
		    r.calls[i].arguments.n > REPLY_MAX_CALL_ARGS)
			abort();
	sse_free(&s);
	reply_free(&r);
	return rc;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	size_t step = 1 + data[0] % 64;
	struct strbuf a = {0}, b = {0};
	int ra = run(data + 1, size - 1, step, &a);
	int rb = run(data + 1, size - 1, size, &b);
	if (ra != rb || a.n != b.n || (a.n && memcmp(a.p, b.p, a.n)))
		abort();
	free(a.p);
	free(b.p);
	return 0;
}
