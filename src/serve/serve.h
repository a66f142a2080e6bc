/* serve.h — `qwenchat serve`: the OpenAI chat-completions and (legacy) completions
 * APIs over HTTP (GNU libmicrohttpd) on one model. Requests wait in a bounded queue
 * and are answered one at a time, in arrival order, on one session, so that a client
 * resending its conversation with a new turn reuses the KV cache. A client that goes
 * away cancels its request; one that only half-closes its side (shutdown(SHUT_WR)
 * after sending) still gets its answer. */
#ifndef QWENCHAT_SERVE_H
#define QWENCHAT_SERVE_H

#include <stdatomic.h>
#include <stddef.h>

#include "src/serve/generate.h"

/* Limits of the HTTP side (the request's own are in openai.h). */
enum {
	SERVE_MAX_BODY = 4 << 20, /* bytes of a request body (beyond: 413) */
	/* A body past SERVE_MAX_BODY up to this size is read and dropped before the 413:
	 * a reply sent while the client still sends reaches it as a reset, not a 413. */
	SERVE_MAX_DRAIN = 64 << 20,
	SERVE_MAX_CONNECTIONS = 256, /* open at once; more are closed at once */
	SERVE_DEFAULT_QUEUE = 16,    /* requests waiting behind the running one */
	SERVE_DEFAULT_TIMEOUT = 30,  /* seconds a connection may stay silent, and the most a
				      * request may take to arrive however it trickles in */
	/* Bytes of a streamed answer the client has not read yet; beyond, it is not
	 * reading, and its connection is cut (the answer would be held whole). */
	SERVE_MAX_UNREAD = 8 << 20,
	/* Memory held for requests not yet queued, whatever the number of connections:
	 * bodies being received (beyond the budget: 503), and bodies parsed at once
	 * (each parse at most ~31 MB, openai.h's OAI_MAX_VALUES; more wait their turn). */
	SERVE_BODY_BUDGET = 64 << 20,
	SERVE_MAX_PARSES = 2,
};

struct serve_options {
	const char *host;    /* address to listen on (numeric or a name); "127.0.0.1" */
	int port;            /* 0: a free port, see serve_port */
	const char *api_key; /* every request must carry "Authorization: Bearer KEY"; NULL: none */
	int queue;           /* requests that may wait (beyond: 503); 0 = none wait */
	int timeout;         /* seconds before a silent connection is closed */
	/* Web origins allowed besides this machine's pages (origin_allowed in origin.h):
	 * answers to them carry CORS headers; a request from another origin gets 403. */
	const char *const *origins;
	int n_origins;
	/* The session's cancel flag (sess_options.cancel): set to end the running request
	 * when its client goes away or the server stops. */
	atomic_int *cancel;
	/* Receives one line (no newline) per request, and notices; calls never overlap.
	 * Lines hold no request content and no key. */
	void (*log)(const char *line);
};

/* Most --allow-origin values. */
enum { SERVE_MAX_ORIGINS = 32 };

struct serve;

/* Listens and starts answering on its own threads. m (and what it points to) must
 * outlive the server. NULL with err_set (e.g. "127.0.0.1:8080: Address already in
 * use"). */
struct serve *serve_start(const struct gen_model *m, const struct serve_options *o);
/* The port it listens on. */
int serve_port(const struct serve *s);
/* Stops: the running request is cancelled, waiting ones get 503, connections close. */
void serve_stop(struct serve *s);

#endif
