/* jobs.c — the jobs of `qwenchat serve` (serve_impl.h): their queue, the worker thread
 * that runs them on the model one at a time (generate.c), the client's socket looked
 * at while a connection waits for its job, and a job's output read as a stream. */
#include "src/serve/serve_impl.h"
#include "src/serve/deadline.h"
#include "src/serve/embed.h"

#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

struct job *serve_job_new(struct serve *srv, struct oai_request *req, int fd)
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
void serve_job_release(struct job *j)
{
	if (--j->refs > 0)
		return;
	oai_request_free(j->req);
	free(j->out.p);
	pthread_cond_destroy(&j->cond);
	free(j);
}

/* A queued job leaves the server's counts (lock held; once). */
static void serve_job_unqueue(struct job *j)
{
	if (j->uncounted)
		return;
	j->uncounted = true;
	if (j->half_queued)
		j->srv->half_queued--;
	else
		j->srv->queued--;
}

/* The client went away (lock held): a running job is cancelled, a queued one skipped. */
void serve_job_gone(struct job *j)
{
	j->gone = true;
	if (j->srv->running == j)
		atomic_store(j->srv->o.cancel, 1);
	if (j->state == JOB_QUEUED) /* its place is free at once */
		serve_job_unqueue(j);
}

/* The client's side of the socket. A request pipelined behind this one reads as data.
 * An end-of-file is a half-close (shutdown(SHUT_WR) after the request): a client
 * that closed for good reads the same until something is written to it, when its
 * reset makes the socket fail; so an answer goes out as soon as its status is known
 * to a client that sent one (run_request). */
enum peer { PEER_OPEN, PEER_HALF_CLOSED, PEER_GONE };

static enum peer peer_state(int fd)
{
	struct pollfd p = {.fd = fd, .events = POLLIN | POLLRDHUP};
	if (poll(&p, 1, 0) <= 0)
		return PEER_OPEN;
	if (p.revents & (POLLERR | POLLHUP | POLLNVAL))
		return PEER_GONE;
	if (p.revents & POLLRDHUP)
		return PEER_HALF_CLOSED;
	char c;
	ssize_t r = recv(fd, &c, 1, MSG_PEEK | MSG_DONTWAIT);
	if (r == 0)
		return PEER_HALF_CLOSED;
	return r > 0 || errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR ? PEER_OPEN
										  : PEER_GONE;
}

/* Waits a moment on the job (lock held). False when the client hung up (the job is
 * then marked gone) or the server stops. */
bool serve_job_wait(struct job *j)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	ts.tv_nsec += POLL_MS * 1000000L;
	if (ts.tv_nsec >= 1000000000L)
		ts.tv_sec++, ts.tv_nsec -= 1000000000L;
	if (pthread_cond_timedwait(&j->cond, &j->srv->lock, &ts) == ETIMEDOUT) {
		enum peer p = peer_state(j->fd);
		if (p == PEER_GONE) {
			serve_job_gone(j);
		} else if (p == PEER_HALF_CLOSED) {
			j->half_closed = true;
			/* mostly a client that gave up waiting (a timeout closes the socket, and
			 * only a write shows it gone): it is still answered in its turn, but
			 * counts apart (serve_enqueue) */
			if (j->state == JOB_QUEUED && !j->uncounted && !j->half_queued) {
				j->half_queued = true;
				j->srv->queued--;
				j->srv->half_queued++;
			}
		}
	}
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
	if (!j->gone && j->req->stream && j->out.n - j->taken > SERVE_MAX_UNREAD) {
		/* a client that does not read: cancelled, its connection cut (libmicrohttpd
		 * then closes it as a hang-up) rather than its answer held whole */
		serve_job_gone(j);
		shutdown(j->fd, SHUT_RDWR);
	}
	if (!j->gone)
		sb_put(&j->out, text, len);
	pthread_cond_broadcast(&j->cond);
	pthread_mutex_unlock(&j->srv->lock);
}

/* The worker: one job at a time, oldest first. */
void *serve_worker(void *arg)
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
		serve_job_unqueue(j);
		if (!j->gone) {
			j->state = JOB_RUNNING;
			srv->running = j;
			atomic_store(srv->o.cancel, 0);
			pthread_mutex_unlock(&srv->lock);
			struct gen_output out = {j, out_start, out_write};
			struct completion_usage u;
			int status = j->req->kind == OAI_EMBED ? embed_run(srv->m, j->req, &out, &u)
							       : gen_run(srv->m, j->req, &out, &u);
			pthread_mutex_lock(&srv->lock);
			j->usage = u;
			j->status = status; /* 0: cancelled, whatever was announced */
			srv->running = NULL;
		}
		j->state = JOB_DONE;
		if (j->dl && (j->req->stream || j->early))
			deadline_restart(j->dl); /* what is left is sending it */
		pthread_cond_broadcast(&j->cond);
		serve_job_release(j);
	}
	pthread_mutex_unlock(&srv->lock);
	return NULL;
}

/* Queues the job unless the queue is full or the server stops. */
bool serve_enqueue(struct serve *srv, struct job *j)
{
	int over = srv->half_queued > srv->o.queue ? srv->half_queued - srv->o.queue : 0;
	int in_system = srv->queued + over + (srv->running ? 1 : 0);
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

/* A streaming response: its events as the worker writes them (or an answer sent
 * early, its body once it is whole). */
ssize_t serve_stream_read(void *cls, uint64_t pos, char *buf, size_t max)
{
	(void)pos;
	struct job *j = cls;
	ssize_t r;
	pthread_mutex_lock(&j->srv->lock);
	if (j->state == JOB_DONE && !j->timeout_back && j->conn) {
		/* the answer is made: what is left is sending it, and a client that does not
		 * read it is a silent connection again (run_request lifted the timeout) */
		j->timeout_back = true;
		MHD_set_connection_option(j->conn, MHD_CONNECTION_OPTION_TIMEOUT,
					  (unsigned)j->srv->o.timeout);
	}
	for (;;) {
		if (j->early && j->state == JOB_DONE && j->status != 200) {
			/* 200 was sent before it failed: a cut response tells the client */
			r = MHD_CONTENT_READER_END_WITH_ERROR;
			break;
		}
		if (j->out.n > j->taken && (!j->early || j->state == JOB_DONE)) {
			size_t k = j->out.n - j->taken < max ? j->out.n - j->taken : max;
			memcpy(buf, j->out.p + j->taken, k);
			j->taken += k;
			if (j->taken == j->out.n) /* all handed over: start the buffer again */
				j->out.n = j->taken = 0;
			r = (ssize_t)k;
			break;
		}
		if (j->state == JOB_DONE) {
			/* cancelled (the server stops): a cut stream, not a finished one */
			r = j->status == 200 ? MHD_CONTENT_READER_END_OF_STREAM
					     : MHD_CONTENT_READER_END_WITH_ERROR;
			break;
		}
		if (!serve_job_wait(j) && j->state != JOB_DONE) {
			r = MHD_CONTENT_READER_END_WITH_ERROR;
			break;
		}
	}
	pthread_mutex_unlock(&j->srv->lock);
	return r;
}

void serve_stream_free(void *cls)
{
	struct job *j = cls;
	struct serve *srv = j->srv;
	pthread_mutex_lock(&srv->lock);
	if (j->state != JOB_DONE)
		serve_job_gone(j);
	serve_job_release(j);
	pthread_mutex_unlock(&srv->lock);
}
