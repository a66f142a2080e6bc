/* serve.c — the HTTP side of `qwenchat serve` (serve.h): libmicrohttpd with a thread
 * per connection, routing and authentication, request bodies held and parsed within
 * their bounds, and each request handed to the queue and worker of jobs.c. A
 * connection thread waits for its request's output and looks at its socket now and
 * then: a client that hung up cancels its request, queued or running. */
#include "src/serve/serve_impl.h"

#include <arpa/inet.h>
#include <jansson.h>
#include <microhttpd.h>
#include <nettle/memops.h>
#include <nettle/sha2.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "src/base/clock.h"
#include "src/base/err.h"
#include "src/base/proc.h"
#include "src/serve/deadline.h"
#include "src/serve/embed.h"
#include "src/serve/origin.h"
#include "src/serve/tokenize.h"

/* One HTTP request on a connection (MHD's per-request context). */
struct request {
	struct serve *srv;
	double t0;
	char what[200]; /* "CLIENT METHOD PATH" for the log, made printable */
	int status;     /* sent, or 0 */
	bool routed;    /* route() ran: at the headers, or for a request without a body
			 * after it (a reply queued before the end closes the connection) */
	bool too_big, over_budget;
	enum oai_kind kind; /* which POST: the URL it went to */
	size_t reserved; /* bytes of SERVE_BODY_BUDGET taken by body */
	size_t received; /* bytes of the body read so far, kept or dropped */
	struct strbuf body;
	struct job *job;
	char origin[256]; /* the allowed Origin the answer's CORS headers name, or "" */
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

/* ---- responses --------------------------------------------------------------- */

/* The CORS headers that let the page of an allowed Origin read the answer. */
static void allow_origin(struct MHD_Response *r, const struct request *rq)
{
	if (rq->origin[0]) {
		MHD_add_response_header(r, MHD_HTTP_HEADER_ACCESS_CONTROL_ALLOW_ORIGIN, rq->origin);
		MHD_add_response_header(r, MHD_HTTP_HEADER_VARY, "Origin");
	}
}

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
	allow_origin(r, rq);
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

/* ---- requests ---------------------------------------------------------------- */

static bool authorized(const struct serve *srv, struct MHD_Connection *conn)
{
	const char *h =
		MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_AUTHORIZATION);
	if (!h || strncasecmp(h, "Bearer ", 7) != 0)
		return false;
	/* the token without the white space around it, which is no part of a header's
	 * value (RFC 9110, 5.5) */
	const char *k = h + 7;
	size_t n = strlen(k);
	while (*k == ' ' || *k == '\t')
		k++, n--;
	while (n && (k[n - 1] == ' ' || k[n - 1] == '\t'))
		n--;
	/* Hashes of equal length, compared without an early exit: the time taken says
	 * nothing about how much of the key was right. */
	uint8_t got[SHA256_DIGEST_SIZE];
	struct sha256_ctx ctx;
	sha256_init(&ctx);
	sha256_update(&ctx, n, (const uint8_t *)k);
	sha256_digest(&ctx, sizeof got, got);
	return memeql_sec(got, srv->key_hash, sizeof got);
}

/* Takes n more bytes of SERVE_BODY_BUDGET for rq's body; false when they are not
 * there (the server is answering 503 until bodies are parsed or refused). */
static bool body_reserve(struct serve *srv, struct request *rq, size_t n)
{
	pthread_mutex_lock(&srv->lock);
	bool ok = srv->body_bytes + n <= SERVE_BODY_BUDGET;
	if (ok) {
		srv->body_bytes += n;
		rq->reserved += n;
	}
	pthread_mutex_unlock(&srv->lock);
	return ok;
}

static void body_release(struct serve *srv, struct request *rq)
{
	pthread_mutex_lock(&srv->lock);
	srv->body_bytes -= rq->reserved;
	pthread_mutex_unlock(&srv->lock);
	rq->reserved = 0;
	free(rq->body.p);
	rq->body = (struct strbuf){0};
}

static enum MHD_Result busy_bodies(struct MHD_Connection *conn, struct request *rq)
{
	char msg[160];
	snprintf(msg, sizeof msg,
		 "the server is busy: %d MiB of request bodies are being received; retry later",
		 SERVE_BODY_BUDGET >> 20);
	return reply_error(conn, rq, 503, msg, NULL, "server_busy");
}

/* The 413 of a body over SERVE_MAX_BODY. */
static enum MHD_Result too_large(struct MHD_Connection *conn, struct request *rq)
{
	char msg[128];
	snprintf(msg, sizeof msg, "the body is larger than %d bytes", SERVE_MAX_BODY);
	return reply_error(conn, rq, 413, msg, NULL, "request_too_large");
}

/* A POST of a chat or text completion about to send its body: a declared size over
 * the cap is refused before the body. The budget is taken as the bytes arrive
 * (on_request), not for the size declared: declared sizes held it whole while their
 * bodies trickled in. The type is not looked at: a body is JSON when it parses as
 * JSON (run_request), as llama-server takes it, since `curl -d` sends JSON as
 * application/x-www-form-urlencoded. */
static enum MHD_Result accept_body(struct MHD_Connection *conn, struct request *rq)
{
	const char *len =
		MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
	const char *expect =
		MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_EXPECT);
	unsigned long long n = len ? strtoull(len, NULL, 10) : 0;
	/* The client sends the body now (no Expect: 100-continue): it is read and dropped,
	 * the 413 going out once it is in (run_request), where the client reads it. */
	if (n > SERVE_MAX_BODY && n <= SERVE_MAX_DRAIN && !expect) {
		rq->too_big = true;
		return MHD_YES;
	}
	return n > SERVE_MAX_BODY ? too_large(conn, rq) : MHD_YES;
}

/* A body framed two ways (two Content-Lengths, or a Transfer-Encoding beside one) or
 * in a coding other than chunked: a proxy in front may take another request out of
 * it than this server does (RFC 9112, 6.3), so it is refused, before the body. */
struct framing {
	int lengths, codings, hosts, origins, auths; /* hosts, origins, auths: for route */
	bool other; /* a Transfer-Encoding other than "chunked" */
};

static enum MHD_Result count_framing(void *cls, enum MHD_ValueKind kind, const char *key,
				     const char *value)
{
	(void)kind;
	struct framing *f = cls;
	if (!strcasecmp(key, MHD_HTTP_HEADER_CONTENT_LENGTH)) {
		f->lengths++;
	} else if (!strcasecmp(key, MHD_HTTP_HEADER_TRANSFER_ENCODING)) {
		f->codings++;
		f->other |= !value || strcasecmp(value, "chunked") != 0;
	}
	f->hosts += !strcasecmp(key, MHD_HTTP_HEADER_HOST);
	f->origins += !strcasecmp(key, MHD_HTTP_HEADER_ORIGIN);
	f->auths += !strcasecmp(key, MHD_HTTP_HEADER_AUTHORIZATION);
	return MHD_YES;
}

static bool ambiguous_framing(struct MHD_Connection *conn)
{
	struct framing f = {0};
	MHD_get_connection_values(conn, MHD_HEADER_KIND, count_framing, &f);
	return f.lengths > 1 || f.codings > 1 || (f.codings && (f.lengths || f.other));
}

/* Whether the request has a body (Content-Length above 0, or chunked). */
static bool has_body(struct MHD_Connection *conn)
{
	const char *len =
		MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
	return (len && strtoull(len, NULL, 10) > 0) ||
	       MHD_lookup_connection_value(conn, MHD_HEADER_KIND,
					   MHD_HTTP_HEADER_TRANSFER_ENCODING);
}

/* A message quoting the client's bytes made printable ASCII ('?' for the rest). */
static void printable(char *msg)
{
	for (char *p = msg; *p; p++)
		if ((unsigned char)*p < 0x20 || (unsigned char)*p >= 0x7f)
			*p = '?';
}

/* A page of an origin that may not use the server (serve_options.origins): refused
 * whole, so that its requests run nothing, though it could not read the answers. */
static enum MHD_Result origin_refused(struct MHD_Connection *conn, struct request *rq,
				      const char *origin)
{
	char msg[400];
	snprintf(msg, sizeof msg,
		 "Origin %.150s may not use this server (start it with --allow-origin %.150s "
		 "to allow its pages)",
		 origin, origin);
	printable(msg);
	return reply_error(conn, rq, 403, msg, NULL, "origin_not_allowed");
}

/* OPTIONS: what the path allows, and for a browser's CORS preflight the methods and
 * the headers (those it asks for: the openai client sends its own x-stainless-*)
 * that the page may use, for ten minutes. */
static enum MHD_Result preflight(struct MHD_Connection *conn, struct request *rq)
{
	struct MHD_Response *r =
		MHD_create_response_from_buffer(0, (void *)"", MHD_RESPMEM_PERSISTENT);
	if (!r)
		return MHD_NO;
	static const char methods[] = "GET, HEAD, POST, OPTIONS";
	MHD_add_response_header(r, MHD_HTTP_HEADER_ALLOW, methods);
	allow_origin(r, rq);
	const char *h = MHD_lookup_connection_value(conn, MHD_HEADER_KIND,
						    MHD_HTTP_HEADER_ACCESS_CONTROL_REQUEST_HEADERS);
	if (rq->origin[0]) {
		MHD_add_response_header(r, MHD_HTTP_HEADER_ACCESS_CONTROL_ALLOW_METHODS, methods);
		MHD_add_response_header(r, MHD_HTTP_HEADER_ACCESS_CONTROL_ALLOW_HEADERS,
					h && origin_header_list(h) ? h
								   : "Authorization, Content-Type");
		MHD_add_response_header(r, MHD_HTTP_HEADER_ACCESS_CONTROL_MAX_AGE, "600");
	}
	enum MHD_Result ok = MHD_queue_response(conn, MHD_HTTP_NO_CONTENT, r);
	MHD_destroy_response(r);
	rq->status = MHD_HTTP_NO_CONTENT;
	return ok;
}

/* The answer for the method and path, or MHD_YES with nothing queued when a chat
 * completion's body is to be read. */
static enum MHD_Result route(struct serve *srv, struct MHD_Connection *conn, struct request *rq,
			     const char *url, const char *method)
{
	rq->routed = true;
	/* the checks below read the first Host and Origin; a proxy may read another
	 * (RFC 9112, 3.2: a second Host is a 400) */
	struct framing f = {0};
	MHD_get_connection_values(conn, MHD_HEADER_KIND, count_framing, &f);
	if (f.hosts > 1 || f.origins > 1 || f.auths > 1)
		return reply_error(conn, rq, 400,
				   f.hosts > 1     ? "the request has more than one Host header"
				   : f.origins > 1 ? "the request has more than one Origin header"
						   : "the request has more than one Authorization "
						     "header",
				   NULL, "bad_header");
	const char *host = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_HOST);
	char *target_host;
	url = origin_target_path(url, &target_host);
	bool target_local = !target_host || origin_host_is_local(target_host),
	     local = target_local && origin_host_is_local(host);
	if (!target_local)
		host = target_host;
	if (srv->loopback && !local) {
		char msg[400];
		snprintf(msg, sizeof msg,
			 "Host %.200s is not this machine: a server on a loopback address answers "
			 "requests to localhost only (start it with --host to serve other names)",
			 host);
		printable(msg);
		free(target_host);
		return reply_error(conn, rq, 403, msg, NULL, "host_not_allowed");
	}
	free(target_host);
	const char *origin =
		MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_ORIGIN);
	if (origin && !(strlen(origin) < sizeof rq->origin &&
			origin_allowed(origin, srv->o.origins, srv->o.n_origins)))
		return origin_refused(conn, rq, origin);
	if (origin)
		snprintf(rq->origin, sizeof rq->origin, "%s", origin);
	static const char *const posts[] = {[OAI_CHAT] = "/v1/chat/completions",
					    [OAI_TEXT] = "/v1/completions",
					    [OAI_TOKENIZE] = "/tokenize",
					    [OAI_DETOKENIZE] = "/detokenize",
					    [OAI_EMBED] = "/v1/embeddings"};
	int post_url = -1;
	for (int k = 0; k < (int)(sizeof posts / sizeof posts[0]); k++)
		if (!strcmp(url, posts[k]))
			post_url = k;
	bool known = !strcmp(url, "/health") || !strcmp(url, "/v1/models") || post_url >= 0;
	if (known && !strcmp(method, "OPTIONS")) /* before the key: browsers send none */
		return preflight(conn, rq);
	if (srv->auth && !authorized(srv, conn))
		return reply_error(conn, rq, 401,
				   "missing or wrong API key (send Authorization: Bearer KEY)",
				   NULL, "invalid_api_key");
	/* HEAD: GET's headers, which libmicrohttpd sends without the body */
	bool get = !strcmp(method, "GET") || !strcmp(method, "HEAD"),
	     post = !strcmp(method, "POST");
	if (strcmp(url, "/health") == 0)
		return get ? reply(conn, rq, 200, strdup("{\"status\":\"ok\"}"), NULL, NULL)
			   : not_allowed(conn, rq, method, url, "GET");
	if (strcmp(url, "/v1/models") == 0)
		return get ? reply(conn, rq, 200, models_json(srv), NULL, NULL)
			   : not_allowed(conn, rq, method, url, "GET");
	if (post_url >= 0) {
		rq->kind = (enum oai_kind)post_url;
		return post ? accept_body(conn, rq) : not_allowed(conn, rq, method, url, "POST");
	}
	char msg[200];
	snprintf(msg, sizeof msg, "Invalid URL (%.16s %.120s)", method, url);
	return reply_error(conn, rq, 404, msg, NULL, "unknown_url");
}

/* The body parsed, at most SERVE_MAX_PARSES at once, its bytes given back to the
 * budget. NULL after answering (rq->status set), or when the server stops. */
static struct oai_request *parse_body(struct serve *srv, struct MHD_Connection *conn,
				      struct request *rq)
{
	pthread_mutex_lock(&srv->lock);
	while (srv->parsing >= SERVE_MAX_PARSES && !srv->stopping)
		pthread_cond_wait(&srv->parsed, &srv->lock);
	bool stopping = srv->stopping;
	srv->parsing += !stopping;
	pthread_mutex_unlock(&srv->lock);
	if (stopping) {
		reply_error(conn, rq, 503, "the server is shutting down", NULL, "server_busy");
		return NULL;
	}
	struct oai_error e;
	bool oom = rq->body.oom;
	const char *body = rq->body.p ? rq->body.p : "";
	struct oai_request *req =
		oom                    ? NULL
		: rq->kind == OAI_TEXT ? oai_parse_text(body, rq->body.n, &e)
		: rq->kind == OAI_CHAT ? oai_parse(body, rq->body.n, &e)
		: rq->kind == OAI_EMBED
			? embed_parse(body, rq->body.n, &e)
			: tokenize_parse(body, rq->body.n, rq->kind == OAI_DETOKENIZE, &e);
	pthread_mutex_lock(&srv->lock);
	srv->parsing--;
	pthread_cond_signal(&srv->parsed);
	pthread_mutex_unlock(&srv->lock);
	body_release(srv, rq);
	if (req)
		return req;
	const char *type =
		MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_TYPE);
	bool json_type = !type || !strncasecmp(type, "application/json", 16);
	if (oom)
		reply_error(conn, rq, 500, "out of memory", NULL, NULL);
	else if (!e.param[0] && !json_type && !strncmp(err_msg(), "the body is not valid", 21))
		/* a form or text that is not JSON: its type says why */
		reply_error(conn, rq, 415,
			    "the body is not JSON (a JSON body is taken whatever "
			    "its Content-Type)",
			    NULL, "unsupported_media_type");
	else
		reply_error(conn, rq, 400, err_msg(), e.param[0] ? e.param : NULL, e.code);
	return NULL;
}

/* The whole body is in: parse, queue, wait for the answer (or its first events). */
static enum MHD_Result run_request(struct serve *srv, struct MHD_Connection *conn,
				   struct request *rq)
{
	if (rq->too_big || rq->over_budget) {
		body_release(srv, rq);
		return rq->too_big ? too_large(conn, rq) : busy_bodies(conn, rq);
	}
	struct oai_request *req = parse_body(srv, conn, rq);
	if (!req)
		return rq->status ? MHD_YES : MHD_NO;
	if (req->kind == OAI_TOKENIZE || req->kind == OAI_DETOKENIZE) {
		/* answered now, as vLLM does, not after the completions ahead in the queue */
		int status;
		char *body = tokenize_answer(srv->m, req, &status);
		oai_request_free(req);
		return body ? reply(conn, rq, status, body, NULL, NULL)
			    : reply_error(conn, rq, 500, "out of memory", NULL, NULL);
	}
	const union MHD_ConnectionInfo *ci =
		MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CONNECTION_FD);
	struct job *j = serve_job_new(srv, req, ci ? ci->connect_fd : -1);
	if (!j) {
		oai_request_free(req);
		return reply_error(conn, rq, 500, "out of memory", NULL, NULL);
	}
	bool stream = req->stream;
	const union MHD_ConnectionInfo *sc =
		MHD_get_connection_info(conn, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
	pthread_mutex_lock(&srv->lock);
	rq->job = j;
	j->conn = conn;
	j->dl = sc ? sc->socket_context : NULL;
	if (!serve_enqueue(srv, j)) {
		rq->job = NULL;
		j->refs = 1; /* never queued */
		serve_job_release(j);
		pthread_mutex_unlock(&srv->lock);
		char msg[160];
		if (srv->stopping)
			snprintf(msg, sizeof msg, "the server is shutting down");
		else
			snprintf(msg, sizeof msg,
				 "the server is busy: %d request%s waiting; retry later",
				 srv->o.queue, srv->o.queue == 1 ? " is" : "s are");
		return reply_error(conn, rq, 503, msg, NULL, "server_busy");
	}
	/* The connection is not silent while its answer is made: the timeout, lifted
	 * until the request ends (on_completed), would cut an answer that takes longer.
	 * A stream starts with its status; anything else is sent whole, unless the client
	 * half-closed: then it goes out as soon as its status is known, so that a client
	 * gone for good shows (its reset) while the answer is made. */
	MHD_set_connection_option(conn, MHD_CONNECTION_OPTION_TIMEOUT, 0u);
	while (!(j->state == JOB_DONE || (j->status == 200 && (stream || j->half_closed))) &&
	       serve_job_wait(j))
		;
	bool stopping = srv->stopping;
	j->early = !stream && j->half_closed && j->status == 200 && j->state != JOB_DONE &&
		   !j->gone && !stopping;
	bool streaming = (stream && j->status == 200) || j->early;
	int status = j->status;
	char *body = NULL;
	if (streaming) {
		j->refs++; /* the response's */
	} else if (j->state == JOB_DONE && status) {
		body = j->out.p ? j->out.p : strdup("");
		j->out = (struct strbuf){0};
	} else if (!j->gone) {
		serve_job_gone(j); /* the server stops: the worker ends or skips it */
	}
	pthread_mutex_unlock(&srv->lock);
	if (!streaming && status && body) {
		/* made: what is left is sending it, and a client that does not read it is a
		 * silent connection again */
		MHD_set_connection_option(conn, MHD_CONNECTION_OPTION_TIMEOUT,
					  (unsigned)srv->o.timeout);
		return reply(conn, rq, status, body, NULL, NULL);
	}
	if (!streaming) /* cancelled: the client is gone, or the server stops */
		return stopping ? reply_error(conn, rq, 503, "the server is shutting down", NULL,
					      "server_busy")
				: MHD_NO;
	struct MHD_Response *r = MHD_create_response_from_callback(
		MHD_SIZE_UNKNOWN, 16384, serve_stream_read, j, serve_stream_free);
	if (!r) {
		serve_stream_free(j);
		return MHD_NO;
	}
	MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE,
				stream ? "text/event-stream" : "application/json");
	if (stream)
		MHD_add_response_header(r, MHD_HTTP_HEADER_CACHE_CONTROL, "no-cache");
	allow_origin(r, rq);
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
	struct serve *srv = cls;
	struct request *rq = *ctx;
	if (!rq) {
		if (!(rq = calloc(1, sizeof *rq)))
			return MHD_NO;
		rq->srv = srv;
		rq->t0 = clock_now();
		pthread_mutex_lock(&srv->lock);
		srv->active++;
		pthread_mutex_unlock(&srv->lock);
		describe(conn, method, url, rq->what, sizeof rq->what);
		*ctx = rq;
		if (ambiguous_framing(conn))
			return reply_error(conn, rq, 400,
					   "the body is framed ambiguously (two Content-Length "
					   "headers, Transfer-Encoding beside one, or a coding "
					   "other than chunked)",
					   NULL, "bad_framing");
		if (!strcmp(version, MHD_HTTP_VERSION_1_1) &&
		    !MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_HOST))
			return reply_error(conn, rq, 400,
					   "an HTTP/1.1 request must have a Host header", NULL,
					   "bad_header");
		/* a reply queued now, before the end of the request, closes the connection:
		 * right for a refused body, wrong for a GET that a client's pool reuses */
		return has_body(conn) ? route(srv, conn, rq, url, method) : MHD_YES;
	}
	if (*upload_size) { /* a piece of the body */
		size_t n = *upload_size, want = rq->body.n + n;
		if (rq->too_big || want > SERVE_MAX_BODY)
			rq->too_big = true; /* the rest is read and dropped */
		else if (want > rq->reserved && !body_reserve(srv, rq, want - rq->reserved))
			rq->over_budget = true;
		if (!rq->too_big && !rq->over_budget)
			sb_put(&rq->body, upload, n);
		*upload_size = 0;
		/* a chunked body declares no size: past what is drained it is refused now
		 * (the reply closes the connection), not read to its end */
		rq->received += n;
		return rq->too_big && rq->received > SERVE_MAX_DRAIN ? too_large(conn, rq)
								     : MHD_YES;
	}
	/* the whole request is in, body included: the deadline is met (a body that
	 * trickles in holds a connection, and its bytes, no longer than headers may) */
	const union MHD_ConnectionInfo *ci =
		MHD_get_connection_info(conn, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
	deadline_met(ci ? ci->socket_context : NULL);
	if (!rq->routed) {
		enum MHD_Result r = route(srv, conn, rq, url, method);
		if (r != MHD_YES || rq->status)
			return r;
	}
	enum MHD_Result r = run_request(srv, conn, rq);
	body_release(srv, rq);
	return r;
}

/* The request is over (answered, or the connection failed): the log line. */
static void on_completed(void *cls, struct MHD_Connection *conn, void **ctx,
			 enum MHD_RequestTerminationCode why)
{
	struct serve *srv = cls;
	struct request *rq = *ctx;
	if (!rq)
		return;
	*ctx = NULL;
	char status[8] = "-", tokens[96] = "";
	bool had_job = rq->job != NULL;
	if (rq->status)
		snprintf(status, sizeof status, "%d", rq->status);
	if (rq->job) {
		pthread_mutex_lock(&srv->lock);
		rq->job->dl = NULL; /* the connection may close from now on */
		if (why != MHD_REQUEST_TERMINATED_COMPLETED_OK && rq->job->state != JOB_DONE)
			serve_job_gone(rq->job);
		/* a cancelled job's figures are the worker's once it stops, at its next
		 * token: read before, a cancelled stream logged completion=0 */
		while (rq->job->state == JOB_RUNNING)
			pthread_cond_wait(&rq->job->cond, &srv->lock);
		struct completion_usage u = rq->job->usage;
		/* a job the server's stop ended is marked gone too, and a stream it cut
		 * ends unfinished: both said apart */
		bool gone = rq->job->gone, cut = why != MHD_REQUEST_TERMINATED_COMPLETED_OK;
		const char *end = srv->stopping && (gone || cut) ? " server-stopping"
				  : gone                         ? " client-gone"
								 : "";
		serve_job_release(rq->job);
		pthread_mutex_unlock(&srv->lock);
		snprintf(tokens, sizeof tokens, " prompt=%d cached=%d completion=%d%s", u.prompt,
			 u.cached, u.completion, end);
	}
	logf_(srv, "%s %s%s %.3fs", rq->what, status, tokens, clock_now() - rq->t0);
	if (had_job) /* silent from now on: the timeout again */
		MHD_set_connection_option(conn, MHD_CONNECTION_OPTION_TIMEOUT,
					  (unsigned)srv->o.timeout);
	body_release(srv, rq);
	free(rq);
	pthread_mutex_lock(&srv->lock);
	srv->active--;
	pthread_mutex_unlock(&srv->lock);
	const union MHD_ConnectionInfo *ci =
		MHD_get_connection_info(conn, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
	deadline_restart(ci ? ci->socket_context : NULL); /* the next request's headers */
}

/* Each connection's headers are timed from its start (deadline.h). */
static void on_connection(void *cls, struct MHD_Connection *conn, void **socket_ctx,
			  enum MHD_ConnectionNotificationCode code)
{
	struct serve *srv = cls;
	if (code == MHD_CONNECTION_NOTIFY_CLOSED) {
		deadline_close(*socket_ctx);
		*socket_ctx = NULL;
		return;
	}
	const union MHD_ConnectionInfo *fd =
		MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CONNECTION_FD);
	char who[64];
	describe(conn, "", "", who, sizeof who);
	who[strcspn(who, " ")] = '\0'; /* the client alone */
	*socket_ctx = fd ? deadline_open(srv->deadline, fd->connect_fd, who) : NULL;
}

static void on_deadline(void *user, const char *who)
{
	struct serve *srv = user;
	logf_(srv,
	      "%s: request not complete, or its answer not read, after %d s: connection closed",
	      who, srv->o.timeout);
}

/* ---- start and stop ---------------------------------------------------------- */


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
	pthread_cond_init(&s->parsed, NULL);
	if (o->api_key) {
		struct sha256_ctx ctx;
		sha256_init(&ctx);
		sha256_update(&ctx, strlen(o->api_key), (const uint8_t *)o->api_key);
		sha256_digest(&ctx, sizeof s->key_hash, s->key_hash);
		s->auth = true;
	}
	s->started = (long long)time(NULL);
	bool v6 = false;
	if ((s->fd = origin_listen(o->host, o->port, &s->port, &v6, &s->loopback)) < 0)
		goto fail;
	if (proc_thread_create(&s->worker, serve_worker, s)) {
		err_set("cannot start the worker thread");
		goto fail;
	}
	s->worker_started = true;
	if (!(s->deadline = deadline_start(o->timeout, on_deadline, s)))
		goto fail;
	unsigned flags = MHD_USE_AUTO | MHD_USE_INTERNAL_POLLING_THREAD |
			 MHD_USE_THREAD_PER_CONNECTION | MHD_USE_ERROR_LOG |
			 (v6 ? MHD_USE_IPv6 : 0);
	s->d = MHD_start_daemon(flags, 0, NULL, NULL, on_request, s, MHD_OPTION_EXTERNAL_LOGGER,
				mhd_log, s, MHD_OPTION_LISTEN_SOCKET, s->fd,
				MHD_OPTION_CONNECTION_LIMIT, (unsigned)SERVE_MAX_CONNECTIONS,
				MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)o->timeout,
				MHD_OPTION_NOTIFY_COMPLETED, on_completed, s,
				MHD_OPTION_NOTIFY_CONNECTION, on_connection, s, MHD_OPTION_END);
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
	pthread_cond_broadcast(&s->parsed);
	pthread_mutex_unlock(&s->lock);
	if (s->worker_started)
		pthread_join(s->worker, NULL);
	/* the requests under way answer (503 for the waiting ones, a cut stream for the
	 * running one) before their connections are closed: up to two seconds */
	for (int i = 0; s->d && i < 100; i++) {
		pthread_mutex_lock(&s->lock);
		int active = s->active;
		pthread_mutex_unlock(&s->lock);
		if (!active)
			break;
		struct timespec ts = {0, 20 * 1000000L};
		nanosleep(&ts, NULL);
	}
	if (s->d)
		MHD_stop_daemon(s->d); /* closes the listening socket too */
	else if (s->fd >= 0)
		close(s->fd);
	deadline_stop(s->deadline); /* after the last connection closed */
	pthread_mutex_lock(&s->lock);
	while (s->head) { /* the queue's references to jobs the worker never took */
		struct job *j = s->head;
		s->head = j->next;
		serve_job_release(j);
	}
	pthread_mutex_unlock(&s->lock);
	pthread_mutex_destroy(&s->lock);
	pthread_mutex_destroy(&s->log_lock);
	pthread_cond_destroy(&s->work);
	pthread_cond_destroy(&s->parsed);
	free(s);
}
