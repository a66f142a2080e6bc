/* pool.h — a fixed set of worker threads that run one parallel task at a time
 * (the CPU backend's --threads). The calling thread takes part as thread 0. */
#ifndef QWENCHAT_CPU_POOL_H
#define QWENCHAT_CPU_POOL_H

struct cpu_pool;

/* fn(arg, tid, nthreads) is called once for each tid in [0, nthreads). */
typedef void (*cpu_task_fn)(void *arg, int tid, int nthreads);

/* nthreads >= 1 in total (including the caller); 0 = all online cores.
 * NULL on error (err_set). */
struct cpu_pool *cpu_pool_new(int nthreads);
void cpu_pool_free(struct cpu_pool *p);
int cpu_pool_size(const struct cpu_pool *p);

/* Runs fn on every thread and returns when all have finished. */
void cpu_pool_run(struct cpu_pool *p, cpu_task_fn fn, void *arg);

/* Splits [0, n) into nthreads nearly equal parts whose boundaries are multiples of
 * `align` (except n itself); sets [*lo, *hi) for thread tid. */
void cpu_split(int n, int align, int tid, int nthreads, int *lo, int *hi);

#endif
