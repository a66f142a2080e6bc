/* deadline.c — the watcher of deadline.h: the open connections in a list under one
 * lock, looked over every quarter of a second. */
#include "src/serve/deadline.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <time.h>

#include "src/base/clock.h"
#include "src/base/err.h"
#include "src/base/proc.h"

/* How often the watcher looks: a connection is cut at most this late. */
enum { TICK_MS = 250 };

struct deadline_conn {
	struct deadline *d;
	int fd;
	char who[64];
	double since; /* when its headers started to be due; < 0: not due (met) */
	struct deadline_conn *prev, *next;
};

struct deadline {
	int seconds;
	void (*expired)(void *user, const char *who);
	void *user;
	pthread_mutex_t lock; /* the list, every conn's since, stop */
	pthread_cond_t wake;
	struct deadline_conn *head;
	bool stop;
	pthread_t thread;
};

/* Shuts down the sockets past their deadline (lock held); who they were goes to cut. */
static int sweep(struct deadline *d, char (*cut)[64], int cap)
{
	double now = clock_now();
	int n = 0;
	for (struct deadline_conn *c = d->head; c && n < cap; c = c->next) {
		if (c->since < 0 || now - c->since < d->seconds)
			continue;
		/* the connection's thread reads end-of-file and closes it; the fd stays
		 * valid until deadline_close, which waits for this lock */
		shutdown(c->fd, SHUT_RDWR);
		c->since = -1;
		snprintf(cut[n++], sizeof cut[0], "%s", c->who);
	}
	return n;
}

static void *watch(void *arg)
{
	struct deadline *d = arg;
	char cut[16][64];
	pthread_mutex_lock(&d->lock);
	while (!d->stop) {
		int n = sweep(d, cut, (int)(sizeof cut / sizeof cut[0]));
		if (n && d->expired) {
			pthread_mutex_unlock(&d->lock);
			for (int i = 0; i < n; i++)
				d->expired(d->user, cut[i]);
			pthread_mutex_lock(&d->lock);
		}
		struct timespec ts;
		clock_gettime(CLOCK_MONOTONIC, &ts);
		ts.tv_nsec += TICK_MS * 1000000L;
		if (ts.tv_nsec >= 1000000000L)
			ts.tv_sec++, ts.tv_nsec -= 1000000000L;
		if (!d->stop)
			pthread_cond_timedwait(&d->wake, &d->lock, &ts);
	}
	pthread_mutex_unlock(&d->lock);
	return NULL;
}

struct deadline *deadline_start(int seconds, void (*expired)(void *user, const char *who),
				void *user)
{
	struct deadline *d = calloc(1, sizeof *d);
	if (!d) {
		err_set("out of memory");
		return NULL;
	}
	d->seconds = seconds;
	d->expired = expired;
	d->user = user;
	pthread_condattr_t ca;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&d->wake, &ca);
	pthread_condattr_destroy(&ca);
	pthread_mutex_init(&d->lock, NULL);
	if (proc_thread_create(&d->thread, watch, d)) {
		pthread_cond_destroy(&d->wake);
		pthread_mutex_destroy(&d->lock);
		free(d);
		err_set("cannot start the connection watcher thread");
		return NULL;
	}
	return d;
}

void deadline_stop(struct deadline *d)
{
	if (!d)
		return;
	pthread_mutex_lock(&d->lock);
	d->stop = true;
	pthread_cond_signal(&d->wake);
	pthread_mutex_unlock(&d->lock);
	pthread_join(d->thread, NULL);
	pthread_cond_destroy(&d->wake);
	pthread_mutex_destroy(&d->lock);
	free(d);
}

struct deadline_conn *deadline_open(struct deadline *d, int fd, const char *who)
{
	struct deadline_conn *c = calloc(1, sizeof *c);
	if (!c)
		return NULL;
	c->d = d;
	c->fd = fd;
	snprintf(c->who, sizeof c->who, "%s", who);
	pthread_mutex_lock(&d->lock);
	c->since = clock_now();
	c->next = d->head;
	if (d->head)
		d->head->prev = c;
	d->head = c;
	pthread_mutex_unlock(&d->lock);
	return c;
}

static void set_since(struct deadline_conn *c, double since)
{
	if (!c)
		return;
	pthread_mutex_lock(&c->d->lock);
	c->since = since;
	pthread_mutex_unlock(&c->d->lock);
}

void deadline_met(struct deadline_conn *c)
{
	set_since(c, -1);
}

void deadline_restart(struct deadline_conn *c)
{
	set_since(c, clock_now());
}

void deadline_close(struct deadline_conn *c)
{
	if (!c)
		return;
	struct deadline *d = c->d;
	pthread_mutex_lock(&d->lock);
	if (c->prev)
		c->prev->next = c->next;
	else
		d->head = c->next;
	if (c->next)
		c->next->prev = c->prev;
	pthread_mutex_unlock(&d->lock);
	free(c);
}
