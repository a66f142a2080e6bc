/* pool.c — worker threads for the CPU backend. A decode step runs ~140 parallel
 * tasks (five per layer), so waking workers through a condition variable for
 * each would cost more than the work; workers spin on a generation counter for a
 * while and only then sleep on the condition variable.
 * The caller never waits for a worker that has not started: tasks hand out their
 * work through a shared counter, and once the caller has run out of work it closes
 * the task to latecomers. Otherwise, on a machine whose cores are shared with other
 * work, a descheduled worker stalls every one of those tasks for a time slice, and
 * decode speed swings widely between runs. */
#include "engine/cpu/pool.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "src/base/err.h"
#include "src/base/clock.h"
#include "src/base/proc.h"

/* How long an idle worker spins before sleeping: long enough to bridge the gap
 * between the tasks of one forward pass and between decode steps. */
#define SPIN_NS 2000000L
#define CLOSED  0x80000000u

struct cpu_pool {
	int n;              /* threads including the caller */
	pthread_t *threads; /* n-1 workers */
	cpu_task_fn fn;
	void *arg;
	atomic_uint gen;     /* bumped for every task (and for exit) */
	atomic_uint entry;   /* workers that joined the task | CLOSED */
	atomic_uint done;    /* joined workers that finished it */
	atomic_int sleepers; /* workers blocked on `wake` */
	atomic_bool quit;
	pthread_mutex_t mu;
	pthread_cond_t wake;
};

struct worker_arg {
	struct cpu_pool *p;
	int tid;
};

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
	long start = clock_ns();
	for (int i = 0;; i++) {
		g = atomic_load(&p->gen);
		if (g != seen)
			return g;
		if ((i & 255) == 255 && clock_ns() - start > SPIN_NS)
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
		unsigned e = atomic_load(&p->entry);
		bool joined = false;
		while (!(e & CLOSED) &&
		       !(joined = atomic_compare_exchange_weak(&p->entry, &e, e + 1)))
			;
		if (!joined)
			continue; /* the caller finished the task alone */
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
	if (nthreads <= 0)
		nthreads = proc_online_cpus();
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
			rc = proc_thread_create(&p->threads[i - 1], worker, wa);
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
	atomic_store(&p->entry, 0); /* publishes fn and arg to joining workers */
	bump(p);
	fn(arg, 0, p->n);
	unsigned joined = atomic_fetch_or(&p->entry, CLOSED) & ~CLOSED;
	while (atomic_load(&p->done) < joined)
		cpu_relax();
}

int cpu_claim(atomic_int *next, int count)
{
	int i = atomic_fetch_add(next, 1);
	return i < count ? i : -1;
}

int cpu_claim_range(atomic_int *next, int count, int nthreads, int *end)
{
	int left = count - atomic_load_explicit(next, memory_order_relaxed);
	int k = left / (2 * nthreads);
	if (k < 1)
		k = 1;
	int i = atomic_fetch_add(next, k);
	if (i >= count)
		return -1;
	*end = i + k < count ? i + k : count;
	return i;
}
