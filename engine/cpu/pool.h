/* pool.h — a fixed set of worker threads that run one parallel task at a time
 * (the CPU backend's --threads). The calling thread takes part as thread 0. */
#ifndef QWENCHAT_CPU_POOL_H
#define QWENCHAT_CPU_POOL_H

#include <stdatomic.h>

struct cpu_pool;

/* A task: fn(arg, tid, nthreads) runs on the caller (tid 0) and on each worker
 * (tid 1..nthreads-1) that wakes before the caller is done, at most once per
 * thread; so fn must take its work items from a shared counter (cpu_claim) rather
 * than by tid, and use tid only to pick per-thread scratch. */
typedef void (*cpu_task_fn)(void *arg, int tid, int nthreads);

/* nthreads >= 1 in total (including the caller); 0 = all online cores.
 * NULL on error (err_set). */
struct cpu_pool *cpu_pool_new(int nthreads);
void cpu_pool_free(struct cpu_pool *p);
int cpu_pool_size(const struct cpu_pool *p);

/* Runs the task and returns when every thread that joined it has finished. */
void cpu_pool_run(struct cpu_pool *p, cpu_task_fn fn, void *arg);

/* The next of `count` work items from the task's counter, or -1 when none is left. */
int cpu_claim(atomic_int *next, int count);

/* The next run [start, *end) of `count` work items, or -1 when none is left: a
 * share of what is left, down to one item at the end. */
int cpu_claim_range(atomic_int *next, int count, int nthreads, int *end);

#endif
