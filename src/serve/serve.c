/* serve.c — the HTTP side of `qwenchat serve` (serve.h): libmicrohttpd with a thread
 * per connection, routing and authentication, the queue of requests and the one
 * worker thread that runs them on the model (generate.c). A connection thread waits
 * for its request's output and looks at its socket now and then: a client that
 * hung up cancels its request, queued or running. */
#include "src/serve/serve.h"

#include <arpa/inet.h>
#include <errno.h>
#include <jansson.h>
#include <microhttpd.h>
#include <nettle/memops.h>
#include <nettle/sha2.h>
#include <netdb.h>
#include <poll.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "src/base/clock.h"
#include "src/base/err.h"

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
	int status;        /* the HTTP status once known, else 0 */
	bool gone;         /* the client went away */
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
	int fd, port; /* the listening socket */
	pthread_t worker;
	bool worker_started;
	pthread_mutex_t lock;    /* the queue, running, stopping and every job */
	pthread_cond_t work;     /* a job was queued, or the server stops */
	struct job *head, *tail; /* waiting, oldest first */
	int queued;
	struct job *running;
	bool stopping;
	pthread_mutex_t log_lock;
};

/* One HTTP request on a connection (MHD's per-request context). */
struct request {
	struct serve *srv;
	double t0;
	char what[200]; /* "CLIENT METHOD PATH" for the log, made printable */
	int status;     /* sent, or 0 */
	bool too_big;
	struct strbuf body;
	struct job *job;
};

static void logf_(struct serve *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void logf_(struct serve *s, const char *fmt, ...)
{
	char line[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(line, sizeof line, fmt, ap);
	va_end(ap);
	if (!s->o.log)
		return;
	pthread_mutex_lock(&s->log_lock);
	s->o.log(line);
	pthread_mutex_unlock(&s->log_lock);
}

static void mhd_log(void *cls, const char *fmt, va_list ap)
{
	char msg[400];
	vsnprintf(msg, sizeof msg, fmt, ap);
	msg[strcspn(msg, "\r\n")] = '\0';
	logf_(cls, "libmicrohttpd: %s", msg);
}

/* ---- jobs -------------------------------------------------------------------- */

static struct job *job_new(struct serve *srv, struct oai_request *req, int fd)
{
	struct job *j = calloc(1, sizeof *j);
	pthread_condattr_t ca;
	if (!j)
		return NULL;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&j->cond, &ca);
	pthread_condattr_destroy(&ca);
	j->srv = srv;
	j->req = req;
	j->fd = fd;
	j->refs = 2; /* the connection and the queue */
	return j;
}

/* Drops one reference (lock held). */
static void job_release(struct job *j)
{
	if (--j->refs > 0)
		return;
	oai_request_free(j->req);
	free(j->out.p);
	pthread_cond_destroy(&j->cond);
	free(j);
}

/* The client went away (lock held): a running job is cancelled, a queued one skipped. */
static void job_gone(struct job *j)
{
	j->gone = true;
	if (j->srv->running == j)
		atomic_store(j->srv->o.cancel, 1);
}

/* False when the peer has closed its side or the socket failed. A request already
 * pipelined behind this one reads as data, not as a hang-up. */
static bool client_alive(int fd)
{
	struct pollfd p = {.fd = fd, .events = POLLIN | POLLRDHUP};
	if (poll(&p, 1, 0) <= 0)
		return true;
	if (p.revents & (POLLERR | POLLHUP | POLLRDHUP | POLLNVAL))
		return false;
	char c;
	ssize_t r = recv(fd, &c, 1, MSG_PEEK | MSG_DONTWAIT);
	return r > 0 || (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR));
}

/* Waits a moment on the job (lock held). False when the client hung up (the job is
 * then marked gone) or the server stops. */
static bool job_wait(struct job *j)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	ts.tv_nsec += POLL_MS * 1000000L;
	if (ts.tv_nsec >= 1000000000L)
		ts.tv_sec++, ts.tv_nsec -= 1000000000L;
	if (pthread_cond_timedwait(&j->cond, &j->srv->lock, &ts) == ETIMEDOUT &&
	    !client_alive(j->fd))
		job_gone(j);
	return !j->gone && !j->srv->stopping;
}

static void out_start(void *user, int status)
{
	struct job *j = user;
	pthread_mutex_lock(&j->srv->lock);
	j->status = status;
	pthread_cond_broadcast(&j->cond);
	pthread_mutex_unlock(&j->srv->lock);
}

static void out_write(void *user, const char *text, size_t len)
{
	struct job *j = user;
	pthread_mutex_lock(&j->srv->lock);
	if (!j->gone)
		sb_put(&j->out, text, len);
	pthread_cond_broadcast(&j->cond);
	pthread_mutex_unlock(&j->srv->lock);
}

/* The worker: one job at a time, oldest first. */
static void *work(void *arg)
{
	struct serve *srv = arg;
	pthread_mutex_lock(&srv->lock);
	for (;;) {
		while (!srv->head && !srv->stopping)
			pthread_cond_wait(&srv->work, &srv->lock);
		if (srv->stopping)
			break;
		struct job *j = srv->head;
		srv->head = j->next;
		if (!srv->head)
			srv->tail = NULL;
		srv->queued--;
		if (!j->gone) {
			j->state = JOB_RUNNING;
			srv->running = j;
			atomic_store(srv->o.cancel, 0);
			pthread_mutex_unlock(&srv->lock);
			struct gen_output out = {j, out_start, out_write};
			struct completion_usage u;
			gen_run(srv->m, j->req, &out, &u);
			pthread_mutex_lock(&srv->lock);
			j->usage = u;
			srv->running = NULL;
		}
		j->state = JOB_DONE;
		pthread_cond_broadcast(&j->cond);
		job_release(j);
	}
	pthread_mutex_unlock(&srv->lock);
	return NULL;
}

/* ---- responses --------------------------------------------------------------- */

/* Queues a response with a JSON body (malloc'd, taken; NULL: an empty object). */
static enum MHD_Result reply(struct MHD_Connection *conn, struct request *rq, int status,
			     char *body, const char *header, const char *value)
{
	size_t len = body ? strlen(body) : 2;
	struct MHD_Response *r =
		body ? MHD_create_response_from_buffer(len, body, MHD_RESPMEM_MUST_FREE)
		     : MHD_create_response_from_buffer(len, (void *)"{}", MHD_RESPMEM_PERSISTENT);
	if (!r) {
		free(body);
		return MHD_NO;
	}
	MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, "application/json");
	if (header)
		MHD_add_response_header(r, header, value);
	enum MHD_Result ok = MHD_queue_response(conn, (unsigned)status, r);
	MHD_destroy_response(r);
	rq->status = status;
	return ok;
}

static enum MHD_Result reply_error(struct MHD_Connection *conn, struct request *rq, int status,
				   const char *message, const char *param, const char *code)
{
	const char *type = status >= 500 ? "server_error" : "invalid_request_error";
	char *body = oai_error_json(message, type, param, code);
	if (status == 401)
		return reply(conn, rq, status, body, MHD_HTTP_HEADER_WWW_AUTHENTICATE, "Bearer");
	if (status == 503)
		return reply(conn, rq, status, body, MHD_HTTP_HEADER_RETRY_AFTER, "1");
	return reply(conn, rq, status, body, NULL, NULL);
}

static enum MHD_Result not_allowed(struct MHD_Connection *conn, struct request *rq,
				   const char *method, const char *url, const char *allow)
{
	char msg[200];
	snprintf(msg, sizeof msg, "%s is not allowed on %s (use %s)", method, url, allow);
	char *body = oai_error_json(msg, "invalid_request_error", NULL, "method_not_allowed");
	return reply(conn, rq, 405, body, MHD_HTTP_HEADER_ALLOW, allow);
}

static char *models_json(const struct serve *srv)
{
	json_t *root =
		json_pack("{s:s, s:[{s:s, s:s, s:I, s:s, s:i}]}", "object", "list", "data", "id",
			  srv->m->name, "object", "model", "created", (json_int_t)srv->started,
			  "owned_by", "qwenchat", "max_model_len", eng_ctx(srv->m->eng));
	char *text = root ? json_dumps(root, JSON_COMPACT) : NULL;
	json_decref(root);
	return text;
}

/* A streaming response: its events as the worker writes them. */
static ssize_t stream_read(void *cls, uint64_t pos, char *buf, size_t max)
{
	(void)pos;
	struct job *j = cls;
	ssize_t r;
	pthread_mutex_lock(&j->srv->lock);
	for (;;) {
		if (j->out.n > j->taken) {
			size_t k = j->out.n - j->taken < max ? j->out.n - j->taken : max;
			memcpy(buf, j->out.p + j->taken, k);
			j->taken += k;
			if (j->taken == j->out.n) /* all handed over: start the buffer again */
				j->out.n = j->taken = 0;
			r = (ssize_t)k;
			break;
		}
		if (j->state == JOB_DONE) {
			r = MHD_CONTENT_READER_END_OF_STREAM;
			break;
		}
		if (!job_wait(j) && j->state != JOB_DONE) {
			r = MHD_CONTENT_READER_END_WITH_ERROR;
			break;
		}
	}
	pthread_mutex_unlock(&j->srv->lock);
	return r;
}

static void stream_free(void *cls)
{
	struct job *j = cls;
	struct serve *srv = j->srv;
	pthread_mutex_lock(&srv->lock);
	if (j->state != JOB_DONE)
		job_gone(j);
	job_release(j);
	pthread_mutex_unlock(&srv->lock);
}

/* ---- requests ---------------------------------------------------------------- */

static bool authorized(const struct serve *srv, struct MHD_Connection *conn)
{
	const char *h =
		MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_AUTHORIZATION);
	if (!h || strncasecmp(h, "Bearer ", 7) != 0)
		return false;
	/* Hashes of equal length, compared without an early exit: the time taken says
	 * nothing about how much of the key was right. */
	uint8_t got[SHA256_DIGEST_SIZE];
	struct sha256_ctx ctx;
	sha256_init(&ctx);
	sha256_update(&ctx, strlen(h + 7), (const uint8_t *)h + 7);
	sha256_digest(&ctx, sizeof got, got);
	return memeql_sec(got, srv->key_hash, sizeof got);
}

/* A POST /v1/chat/completions about to send its body. */
static enum MHD_Result accept_body(struct MHD_Connection *conn, struct request *rq)
{
	const char *type =
		MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_TYPE);
	const char *len =
		MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
	/* a missing type is taken as JSON; another one is refused */
	if (type && (strncasecmp(type, "application/json", 16) != 0 ||
		     (type[16] && type[16] != ';' && type[16] != ' ')))
		return reply_error(conn, rq, 415, "the body must be application/json", NULL,
				   "unsupported_media_type");
	if (len && strtoull(len, NULL, 10) > SERVE_MAX_BODY) {
		char msg[128];
		snprintf(msg, sizeof msg, "the body is larger than %d bytes", SERVE_MAX_BODY);
		return reply_error(conn, rq, 413, msg, NULL, "request_too_large");
	}
	return MHD_YES;
}

/* The first call for a request: headers only. */
static enum MHD_Result route(struct serve *srv, struct MHD_Connection *conn, struct request *rq,
			     const char *url, const char *method)
{
	if (srv->auth && !authorized(srv, conn))
		return reply_error(conn, rq, 401,
				   "missing or wrong API key (send Authorization: Bearer KEY)",
				   NULL, "invalid_api_key");
	bool get = strcmp(method, "GET") == 0, post = strcmp(method, "POST") == 0;
	if (strcmp(url, "/health") == 0)
		return get ? reply(conn, rq, 200, strdup("{\"status\":\"ok\"}"), NULL, NULL)
			   : not_allowed(conn, rq, method, url, "GET");
	if (strcmp(url, "/v1/models") == 0)
		return get ? reply(conn, rq, 200, models_json(srv), NULL, NULL)
			   : not_allowed(conn, rq, method, url, "GET");
	if (strcmp(url, "/v1/chat/completions") == 0)
		return post ? accept_body(conn, rq) : not_allowed(conn, rq, method, url, "POST");
	char msg[200];
	snprintf(msg, sizeof msg, "Invalid URL (%.16s %.120s)", method, url);
	return reply_error(conn, rq, 404, msg, NULL, "unknown_url");
}

/* Queues the job unless the queue is full or the server stops. */
static bool enqueue(struct serve *srv, struct job *j)
{
	int in_system = srv->queued + (srv->running ? 1 : 0);
	if (srv->stopping || in_system > srv->o.queue)
		return false;
	if (srv->tail)
		srv->tail->next = j;
	else
		srv->head = j;
	srv->tail = j;
	srv->queued++;
	pthread_cond_signal(&srv->work);
	return true;
}

/* The whole body is in: parse, queue, wait for the answer (or its first events). */
static enum MHD_Result run_request(struct serve *srv, struct MHD_Connection *conn,
				   struct request *rq)
{
	if (rq->too_big) {
		char msg[128];
		snprintf(msg, sizeof msg, "the body is larger than %d bytes", SERVE_MAX_BODY);
		return reply_error(conn, rq, 413, msg, NULL, "request_too_large");
	}
	struct oai_error e;
	struct oai_request *req =
		rq->body.oom ? NULL : oai_parse(rq->body.p ? rq->body.p : "", rq->body.n, &e);
	if (!req)
		return reply_error(conn, rq, rq->body.oom ? 500 : 400,
				   rq->body.oom ? "out of memory" : err_msg(),
				   rq->body.oom || !e.param[0] ? NULL : e.param,
				   rq->body.oom ? NULL : e.code);
	const union MHD_ConnectionInfo *ci =
		MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CONNECTION_FD);
	struct job *j = job_new(srv, req, ci ? ci->connect_fd : -1);
	if (!j) {
		oai_request_free(req);
		return reply_error(conn, rq, 500, "out of memory", NULL, NULL);
	}
	bool stream = req->stream;
	pthread_mutex_lock(&srv->lock);
	rq->job = j;
	if (!enqueue(srv, j)) {
		rq->job = NULL;
		j->refs = 1; /* never queued */
		job_release(j);
		pthread_mutex_unlock(&srv->lock);
		char msg[160];
		snprintf(msg, sizeof msg,
			 srv->stopping ? "the server is shutting down"
				       : "the server is busy: %d requests are waiting; retry later",
			 srv->o.queue);
		return reply_error(conn, rq, 503, msg, NULL, "server_busy");
	}
	/* a stream starts with its status; anything else is sent whole */
	while (!(j->state == JOB_DONE || (stream && j->status == 200)) && job_wait(j))
		;
	bool streaming = stream && j->status == 200, stopping = srv->stopping;
	int status = j->status;
	char *body = NULL;
	if (streaming) {
		j->refs++; /* the response's */
	} else if (j->state == JOB_DONE && status) {
		body = j->out.p ? j->out.p : strdup("");
		j->out = (struct strbuf){0};
	} else if (!j->gone) {
		job_gone(j); /* the server stops: the worker ends or skips it */
	}
	pthread_mutex_unlock(&srv->lock);
	if (!streaming && status && body)
		return reply(conn, rq, status, body, NULL, NULL);
	if (!streaming) /* cancelled: the client is gone, or the server stops */
		return stopping ? reply_error(conn, rq, 503, "the server is shutting down", NULL,
					      "server_busy")
				: MHD_NO;
	struct MHD_Response *r = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 16384,
								   stream_read, j, stream_free);
	if (!r) {
		stream_free(j);
		return MHD_NO;
	}
	MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, "text/event-stream");
	MHD_add_response_header(r, MHD_HTTP_HEADER_CACHE_CONTROL, "no-cache");
	enum MHD_Result ok = MHD_queue_response(conn, MHD_HTTP_OK, r);
	MHD_destroy_response(r);
	rq->status = 200;
	return ok;
}

/* "CLIENT METHOD PATH" with anything unprintable or quoting replaced: the log
 * shows what was asked without letting a request forge log lines. */
static void describe(struct MHD_Connection *conn, const char *method, const char *url, char *out,
		     size_t size)
{
	char client[INET6_ADDRSTRLEN] = "?";
	const union MHD_ConnectionInfo *ci =
		MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
	const struct sockaddr *sa = ci ? ci->client_addr : NULL;
	if (sa && sa->sa_family == AF_INET)
		inet_ntop(AF_INET, &((const struct sockaddr_in *)sa)->sin_addr, client,
			  sizeof client);
	else if (sa && sa->sa_family == AF_INET6)
		inet_ntop(AF_INET6, &((const struct sockaddr_in6 *)sa)->sin6_addr, client,
			  sizeof client);
	snprintf(out, size, "%s %.16s %.120s", client, method, url);
	for (char *p = out; *p; p++)
		if ((unsigned char)*p < 0x20 || (unsigned char)*p >= 0x7f || *p == '"')
			*p = '?';
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn, const char *url,
				  const char *method, const char *version, const char *upload,
				  size_t *upload_size, void **ctx)
{
	(void)version;
	struct serve *srv = cls;
	struct request *rq = *ctx;
	if (!rq) {
		if (!(rq = calloc(1, sizeof *rq)))
			return MHD_NO;
		rq->srv = srv;
		rq->t0 = clock_now();
		describe(conn, method, url, rq->what, sizeof rq->what);
		*ctx = rq;
		return route(srv, conn, rq, url, method);
	}
	if (*upload_size) { /* a piece of the body */
		if (rq->body.n + *upload_size > SERVE_MAX_BODY)
			rq->too_big = true;
		if (!rq->too_big)
			sb_put(&rq->body, upload, *upload_size);
		*upload_size = 0;
		return MHD_YES;
	}
	enum MHD_Result r = run_request(srv, conn, rq);
	free(rq->body.p);
	rq->body = (struct strbuf){0};
	return r;
}

/* The request is over (answered, or the connection failed): the log line. */
static void on_completed(void *cls, struct MHD_Connection *conn, void **ctx,
			 enum MHD_RequestTerminationCode why)
{
	(void)conn;
	struct serve *srv = cls;
	struct request *rq = *ctx;
	if (!rq)
		return;
	*ctx = NULL;
	char status[8] = "-", tokens[96] = "";
	if (rq->status)
		snprintf(status, sizeof status, "%d", rq->status);
	if (rq->job) {
		pthread_mutex_lock(&srv->lock);
		if (why != MHD_REQUEST_TERMINATED_COMPLETED_OK && rq->job->state != JOB_DONE)
			job_gone(rq->job);
		struct completion_usage u = rq->job->usage;
		bool gone = rq->job->gone;
		job_release(rq->job);
		pthread_mutex_unlock(&srv->lock);
		snprintf(tokens, sizeof tokens, " prompt=%d cached=%d completion=%d%s", u.prompt,
			 u.cached, u.completion, gone ? " client-gone" : "");
	}
	logf_(srv, "%s %s%s %.3fs", rq->what, status, tokens, clock_now() - rq->t0);
	free(rq->body.p);
	free(rq);
}

/* ---- start and stop ---------------------------------------------------------- */

/* A listening socket on host:port. -1 with err_set. */
static int listen_on(const char *host, int port, int *bound, bool *v6)
{
	struct addrinfo hints = {.ai_family = AF_UNSPEC,
				 .ai_socktype = SOCK_STREAM,
				 .ai_flags = AI_PASSIVE | AI_NUMERICSERV};
	struct addrinfo *res;
	char ps[16];
	snprintf(ps, sizeof ps, "%d", port);
	int rc = getaddrinfo(host, ps, &hints, &res);
	if (rc)
		return err_set("--host %s: %s", host, gai_strerror(rc));
	int fd = -1, e = 0;
	for (struct addrinfo *ai = res; ai && fd < 0; ai = ai->ai_next) {
		int one = 1;
		fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, ai->ai_protocol);
		if (fd < 0) {
			e = errno;
			continue;
		}
		setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
		if (bind(fd, ai->ai_addr, ai->ai_addrlen) || listen(fd, 64)) {
			e = errno;
			close(fd);
			fd = -1;
			continue;
		}
		*v6 = ai->ai_family == AF_INET6;
	}
	freeaddrinfo(res);
	if (fd < 0)
		return err_set("%s:%d: %s", host, port, strerror(e));
	struct sockaddr_storage ss;
	socklen_t sl = sizeof ss;
	getsockname(fd, (struct sockaddr *)&ss, &sl);
	*bound = ntohs(ss.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&ss)->sin6_port
						: ((struct sockaddr_in *)&ss)->sin_port);
	return fd;
}

struct serve *serve_start(const struct gen_model *m, const struct serve_options *o)
{
	struct serve *s = calloc(1, sizeof *s);
	if (!s) {
		err_set("out of memory");
		return NULL;
	}
	s->m = m;
	s->o = *o;
	s->o.api_key = NULL; /* only its hash is kept */
	pthread_mutex_init(&s->lock, NULL);
	pthread_mutex_init(&s->log_lock, NULL);
	pthread_cond_init(&s->work, NULL);
	if (o->api_key) {
		struct sha256_ctx ctx;
		sha256_init(&ctx);
		sha256_update(&ctx, strlen(o->api_key), (const uint8_t *)o->api_key);
		sha256_digest(&ctx, sizeof s->key_hash, s->key_hash);
		s->auth = true;
	}
	s->started = (long long)time(NULL);
	bool v6 = false;
	if ((s->fd = listen_on(o->host, o->port, &s->port, &v6)) < 0)
		goto fail;
	if (pthread_create(&s->worker, NULL, work, s)) {
		err_set("cannot start the worker thread");
		goto fail;
	}
	s->worker_started = true;
	unsigned flags = MHD_USE_AUTO | MHD_USE_INTERNAL_POLLING_THREAD |
			 MHD_USE_THREAD_PER_CONNECTION | MHD_USE_ERROR_LOG |
			 (v6 ? MHD_USE_IPv6 : 0);
	s->d = MHD_start_daemon(flags, 0, NULL, NULL, on_request, s, MHD_OPTION_EXTERNAL_LOGGER,
				mhd_log, s, MHD_OPTION_LISTEN_SOCKET, s->fd,
				MHD_OPTION_CONNECTION_LIMIT, (unsigned)SERVE_MAX_CONNECTIONS,
				MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)o->timeout,
				MHD_OPTION_NOTIFY_COMPLETED, on_completed, s, MHD_OPTION_END);
	if (!s->d) {
		err_set("%s:%d: libmicrohttpd could not start", o->host, s->port);
		goto fail;
	}
	return s;
fail:
	serve_stop(s);
	return NULL;
}

int serve_port(const struct serve *s)
{
	return s->port;
}

void serve_stop(struct serve *s)
{
	if (!s)
		return;
	pthread_mutex_lock(&s->lock);
	s->stopping = true;
	atomic_store(s->o.cancel, 1);
	pthread_cond_broadcast(&s->work);
	pthread_mutex_unlock(&s->lock);
	if (s->worker_started)
		pthread_join(s->worker, NULL);
	if (s->d)
		MHD_stop_daemon(s->d); /* closes the listening socket too */
	else if (s->fd >= 0)
		close(s->fd);
	pthread_mutex_lock(&s->lock);
	while (s->head) { /* the queue's references to jobs the worker never took */
		struct job *j = s->head;
		s->head = j->next;
		job_release(j);
	}
	pthread_mutex_unlock(&s->lock);
	pthread_mutex_destroy(&s->lock);
	pthread_mutex_destroy(&s->log_lock);
	pthread_cond_destroy(&s->work);
	free(s);
}
