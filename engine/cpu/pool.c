/* pool.c — worker threads for the CPU backend. A decode step runs ~200 parallel
 * tasks (several per layer), so waking workers through a condition variable for
 * each (tens of microseconds) would cost more than the work; workers spin on a
 * generation counter for a while and only then sleep on the condition variable. */
#include "engine/cpu/pool.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "src/err.h"

/* How long an idle worker spins before sleeping: long enough to bridge the gap
 * between the tasks of one forward pass and between decode steps. */
#define SPIN_NS 2000000L

struct cpu_pool {
	int n;                          /* threads including the caller */
	pthread_t *threads;             /* n-1 workers */
	cpu_task_fn fn;
	void *arg;
	atomic_uint gen;                /* bumped for every task (and for exit) */
	atomic_int done;                /* workers finished with the current task */
	atomic_int sleepers;            /* workers blocked on `wake` */
	atomic_bool quit;
	pthread_mutex_t mu;
	pthread_cond_t wake;
};

struct worker_arg {
	struct cpu_pool *p;
	int tid;
};

static long now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000L + ts.tv_nsec;
}

static inline void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#endif
}

/* Waits until gen differs from `seen`; returns the new value. */
static unsigned wait_gen(struct cpu_pool *p, unsigned seen)
{
	unsigned g;
	long start = now_ns();
	for (int i = 0;; i++) {
		g = atomic_load(&p->gen);
		if (g != seen)
			return g;
		if ((i & 255) == 255 && now_ns() - start > SPIN_NS)
			break;
		cpu_relax();
	}
	pthread_mutex_lock(&p->mu);
	atomic_fetch_add(&p->sleepers, 1);
	while ((g = atomic_load(&p->gen)) == seen)
		pthread_cond_wait(&p->wake, &p->mu);
	atomic_fetch_sub(&p->sleepers, 1);
	pthread_mutex_unlock(&p->mu);
	return g;
}

static void *worker(void *va)
{
	struct worker_arg wa = *(struct worker_arg *)va;
	struct cpu_pool *p = wa.p;
	free(va);
	unsigned seen = 0;
	for (;;) {
		seen = wait_gen(p, seen);
		if (atomic_load(&p->quit))
			return NULL;
		p->fn(p->arg, wa.tid, p->n);
		atomic_fetch_add(&p->done, 1);
	}
}

static void bump(struct cpu_pool *p)
{
	atomic_fetch_add(&p->gen, 1);
	if (atomic_load(&p->sleepers) > 0) {
		pthread_mutex_lock(&p->mu);
		pthread_cond_broadcast(&p->wake);
		pthread_mutex_unlock(&p->mu);
	}
}

struct cpu_pool *cpu_pool_new(int nthreads)
{
	if (nthreads <= 0) {
		long c = sysconf(_SC_NPROCESSORS_ONLN);
		nthreads = c > 0 ? (int)c : 1;
	}
	if (nthreads > 1024)
		nthreads = 1024;
	struct cpu_pool *p = calloc(1, sizeof *p);
	if (!p || !(p->threads = calloc((size_t)nthreads, sizeof *p->threads))) {
		free(p);
		err_set("thread pool: out of memory");
		return NULL;
	}
	p->n = 1;
	pthread_mutex_init(&p->mu, NULL);
	pthread_cond_init(&p->wake, NULL);
	for (int i = 1; i < nthreads; i++) {
		struct worker_arg *wa = malloc(sizeof *wa);
		int rc = wa ? 0 : ENOMEM;
		if (wa) {
			wa->p = p;
			wa->tid = i;
			rc = pthread_create(&p->threads[i - 1], NULL, worker, wa);
			if (rc)
				free(wa);
		}
		if (rc) {
			cpu_pool_free(p);
			err_set("thread pool: cannot start thread %d: %s", i, strerror(rc));
			return NULL;
		}
		p->n++;
	}
	return p;
}

void cpu_pool_free(struct cpu_pool *p)
{
	if (!p)
		return;
	atomic_store(&p->quit, true);
	bump(p);
	for (int i = 0; i < p->n - 1; i++)
		pthread_join(p->threads[i], NULL);
	pthread_mutex_destroy(&p->mu);
	pthread_cond_destroy(&p->wake);
	free(p->threads);
	free(p);
}

int cpu_pool_size(const struct cpu_pool *p)
{
	return p->n;
}

void cpu_pool_run(struct cpu_pool *p, cpu_task_fn fn, void *arg)
{
	if (p->n == 1) {
		fn(arg, 0, 1);
		return;
	}
	p->fn = fn;
	p->arg = arg;
	atomic_store(&p->done, 0);
	bump(p);
	fn(arg, 0, p->n);
	while (atomic_load(&p->done) < p->n - 1)
		cpu_relax();
}

void cpu_split(int n, int align, int tid, int nthreads, int *lo, int *hi)
{
	int units = (n + align - 1) / align;
	int a = (int)((long)units * tid / nthreads);
	int b = (int)((long)units * (tid + 1) / nthreads);
	*lo = a * align < n ? a * align : n;
	*hi = b * align < n ? b * align : n;
}
