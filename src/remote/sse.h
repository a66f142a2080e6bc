/* sse.h — a server-sent events reader (the WHATWG "text/event-stream" format) fed
 * the bytes of a response as they arrive, split anywhere: lines ended by CRLF, LF or
 * CR, "data:" lines joined with newlines, "event:" names, comments and other fields
 * skipped, an event dispatched at each blank line. Bounded: a line or an event's
 * data beyond SSE_MAX_LINE / SSE_MAX_DATA bytes is an error, never a bigger buffer. */
#ifndef QWENCHAT_SSE_H
#define QWENCHAT_SSE_H

#include <stdbool.h>
#include <stddef.h>

#include "src/base/strbuf.h"

/* One chat-completion chunk is a few hundred bytes; these leave room for a long tool
 * call argument or error message sent in one event. */
enum { SSE_MAX_LINE = 1 << 20, SSE_MAX_DATA = 4 << 20, SSE_MAX_NAME = 64 };

/* Receives one event: its name ("message" when the stream gave none) and its data
 * (len bytes, NUL-terminated, without the final newline). Return 0 to go on; any
 * other value stops sse_feed, which returns it. */
typedef int (*sse_event_fn)(void *user, const char *name, const char *data, size_t len);

struct sse {
	sse_event_fn on_event;
	void *user;
	struct strbuf line; /* the line being read */
	struct strbuf data; /* the event being read: its data lines, each + "\n" */
	char name[SSE_MAX_NAME + 1];
	bool after_cr; /* the last byte was a CR: a LF right after it ends no line */
	bool started;  /* past the optional byte order mark */
	size_t events; /* dispatched so far, for messages ("event 12") */
};

void sse_init(struct sse *s, sse_event_fn on_event, void *user);
void sse_free(struct sse *s);

/* Reads n more bytes of the stream. 0; the callback's non-zero value; or -1 with
 * err_set when a line or an event is too long (or out of memory). */
int sse_feed(struct sse *s, const char *buf, size_t n);

/* True when the stream stopped inside an event (a line or data not yet dispatched):
 * the format drops such an event, and a chat stream that ends so was cut short. */
bool sse_pending(const struct sse *s);

#endif
