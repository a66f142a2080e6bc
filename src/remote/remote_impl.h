/* remote_impl.h — what remote.c and failure.c share inside the remote backend: the
 * connection, one transfer's state, and the lines a failed transfer becomes. Not a
 * public header: the backend's interface is remote.h. */
#ifndef QWENCHAT_REMOTE_IMPL_H
#define QWENCHAT_REMOTE_IMPL_H

#include <curl/curl.h>
#include <stdbool.h>

#include "src/base/strbuf.h"
#include "src/remote/remote.h"
#include "src/remote/sse.h"

/* Bytes of an error body or of GET /models kept; the rest is dropped. */
enum { ERROR_BODY_MAX = 64 << 10, MODELS_BODY_MAX = 8 << 20, POLL_MS = 50 };

struct remote {
	char *base;  /* the API base, as given minus a trailing "/" */
	char *query; /* the URL's query, sent to every endpoint; NULL when none */
	char *shown; /* the base without user:password, for messages */
	char *key;   /* or NULL */
	bool key_in_clear;
	int connect_timeout, stall_timeout;
	void (*on_retry)(void *retry_user, const char *msg);
	void *retry_user;
	long models_status; /* the HTTP status of the last GET /models */
	CURL *curl;
	CURLM *multi;
	char errbuf[CURL_ERROR_SIZE];
};

/* One transfer's state, shared with libcurl's callbacks. */
struct xfer {
	struct remote *r;
	long status;        /* of the response whose body is arriving */
	int retry_after;    /* Retry-After in seconds; -1 when absent */
	struct strbuf body; /* an error body or a whole JSON answer, bounded */
	size_t body_max;
	bool whole;     /* a 2xx body is the answer: beyond body_max refused, not cut */
	bool too_big;   /* ... and it was larger (the transfer stopped there) */
	struct sse sse; /* the event stream of a 2xx chat answer (events: true) */
	struct reply *reply;
	bool events;
	int parse_rc;        /* sse_feed's first non-zero result */
	char parse_err[512]; /* ... and its message (err_set runs on this thread) */
	size_t bytes;        /* received, headers included */
	double last_byte;    /* clock_now() of the last byte, for the stall timeout */
};

/* failure.c */
/* s[0..n) with every copy of the API key replaced, malloc'd in *out (NULL: the key
 * is not in it). A server that quotes the key back must not show it, not even the
 * part of it that a message cut to one line would keep. */
size_t without_key(const struct remote *r, const char *s, size_t n, char **out);
/* "401 Unauthorized: the message" into out. */
void status_line(const struct xfer *x, char *out, size_t sz);
/* One line (err_set) for an HTTP status that is not a success (what names the request). */
int http_error(const struct remote *r, const struct xfer *x, const char *what, int tries);
/* Whether cc is what libcurl ends a transfer with when a header line is too long (or
 * it ran out of memory). */
bool header_too_large(CURLcode cc);
/* One line for a transfer libcurl ended with an error. */
int curl_error(const struct remote *r, const struct xfer *x, CURLcode cc);
/* The key never appears in a message, even when a server quotes it back. */
void redact(const struct remote *r);

#endif
