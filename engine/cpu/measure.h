/* measure.h — the CPU backend's limit for bench: the memory read bandwidth. */
#ifndef QWENCHAT_CPU_MEASURE_H
#define QWENCHAT_CPU_MEASURE_H

#include "engine/engine.h"

/* Reads rq->read_bytes (default 1 GiB, on 2 MB pages as the weights are mapped) with
 * `threads` threads and several vector accumulators each, best of rq->reps (default
 * 5), into out->read_gb_s. 0 or -1 (err_set). */
int cpu_measure(int threads, const struct eng_measure_request *rq, struct eng_peaks *out);

#endif
