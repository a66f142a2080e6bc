/* serve_impl.h — what serve.c (the HTTP side) and jobs.c (the queue, the worker and
 * a job's output) share inside src/serve/; not an interface for anything else. */
#ifndef QWENCHAT_SERVE_IMPL_H
#define QWENCHAT_SERVE_IMPL_H

#include <microhttpd.h>
#include <nettle/sha2.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "src/serve/serve.h"

struct deadline;

/* How often a waiting connection thread looks at its client's socket. */
enum { POLL_MS = 200 };

/* One chat-completions request from its connection to the worker and back. The
 * fields after refs are guarded by the server's lock. */
struct job {
	struct serve *srv;
	struct oai_request *req;
	int fd;   /* the client's socket, looked at for a hang-up */
	int refs; /* the connection, the queue then the worker, a streaming response */
	enum { JOB_QUEUED, JOB_RUNNING, JOB_DONE } state;
	int status;        /* the HTTP status once known, else 0 (and 0 when cancelled) */
	bool gone;         /* the client went away */
	bool half_closed;  /* the client shut its sending side: it may still read */
	bool early;        /* an answer sent as a stream once its status was known */
	bool uncounted;    /* gone while queued: in neither of the server's counts */
	bool half_queued;  /* half-closed while queued: in `half_queued`, not `queued` */
	bool timeout_back; /* a finished stream's connection has the silence timeout again */
	struct MHD_Connection *conn; /* its connection (read only in that connection's thread) */
	/* Its connection's deadline (under the lock; NULL once the request has ended): a
	 * stream whose answer is made but not read by --timeout later is cut by it, as
	 * libmicrohttpd, waiting to send, would never call the reader again to hand the
	 * connection its silence timeout back. */
	struct deadline_conn *dl;
	struct strbuf out; /* response bytes not yet handed to the connection */
	size_t taken;      /* of out, bytes a stream has handed over */
	struct completion_usage usage;
	pthread_cond_t cond; /* status, output or the end arrived */
	struct job *next;    /* in the queue */
};

struct serve {
	const struct gen_model *m;
	struct serve_options o;
	bool auth;                            /* requests must carry the API key */
	uint8_t key_hash[SHA256_DIGEST_SIZE]; /* of the API key: compared in constant time */
	long long started;                    /* Unix time, the models' "created" */
	struct MHD_Daemon *d;
	int fd, port;  /* the listening socket */
	bool loopback; /* ... on a loopback address: requests must name this machine */
	pthread_t worker;
	bool worker_started;
	pthread_mutex_t lock;    /* the queue, running, stopping and every job */
	pthread_cond_t work;     /* a job was queued, or the server stops */
	struct job *head, *tail; /* waiting, oldest first */
	int queued;
	/* Waiting jobs whose clients half-closed, mostly clients that gave up (a timeout
	 * closes the socket as a half-close does until something is written): up to
	 * --queue of them more may wait without taking a place from the others. */
	int half_queued;
	struct job *running;
	bool stopping;
	size_t body_bytes;     /* of request bodies held (SERVE_BODY_BUDGET) */
	int active;            /* requests begun and not yet completed (serve_stop waits) */
	int parsing;           /* bodies being parsed (SERVE_MAX_PARSES) */
	pthread_cond_t parsed; /* a parse ended */
	struct deadline *deadline;
	pthread_mutex_t log_lock;
};

/* A job for req from the client on socket fd, referenced by the connection and the
 * queue. NULL when out of memory. */
struct job *serve_job_new(struct serve *srv, struct oai_request *req, int fd);
/* Drops one reference (lock held); the last frees the job. */
void serve_job_release(struct job *j);
/* The client went away (lock held): a running job is cancelled, a queued one skipped. */
void serve_job_gone(struct job *j);
/* Waits a moment on the job (lock held), looking at the client's socket: a reset marks
 * the job gone, an end-of-file half_closed. False when it is gone or the server stops. */
bool serve_job_wait(struct job *j);
/* Queues the job (lock held) unless the queue is full or the server stops. */
bool serve_enqueue(struct serve *srv, struct job *j);
/* The worker thread: one job at a time, oldest first, until the server stops. */
void *serve_worker(void *arg);
/* libmicrohttpd's content reader over a job's output, and its end (a reference of
 * the response's). */
ssize_t serve_stream_read(void *cls, uint64_t pos, char *buf, size_t max);
void serve_stream_free(void *cls);

#endif
