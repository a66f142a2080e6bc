/* measure.c — the CPU backend's limit for the benchmark, measured in the same run:
 * the memory read bandwidth that decoding, which reads every weight once per token,
 * cannot beat. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include "engine/cpu/measure.h"
#include "src/base/err.h"
#include "src/base/proc.h"
#include "src/base/clock.h"
#include "src/base/units.h"

/* Sums a buffer with several independent vector accumulators: one accumulator
 * chains every add on the add latency and reads well below what the memory gives. */
#if defined(__x86_64__)
__attribute__((target("avx512f"))) static float read_avx512(const float *p, size_t n)
{
	__m512 a0 = _mm512_setzero_ps(), a1 = a0, a2 = a0, a3 = a0, a4 = a0, a5 = a0, a6 = a0,
	       a7 = a0;
	for (size_t i = 0; i + 128 <= n; i += 128) {
		a0 = _mm512_add_ps(a0, _mm512_load_ps(p + i));
		a1 = _mm512_add_ps(a1, _mm512_load_ps(p + i + 16));
		a2 = _mm512_add_ps(a2, _mm512_load_ps(p + i + 32));
		a3 = _mm512_add_ps(a3, _mm512_load_ps(p + i + 48));
		a4 = _mm512_add_ps(a4, _mm512_load_ps(p + i + 64));
		a5 = _mm512_add_ps(a5, _mm512_load_ps(p + i + 80));
		a6 = _mm512_add_ps(a6, _mm512_load_ps(p + i + 96));
		a7 = _mm512_add_ps(a7, _mm512_load_ps(p + i + 112));
	}
	a0 = _mm512_add_ps(_mm512_add_ps(_mm512_add_ps(a0, a1), _mm512_add_ps(a2, a3)),
			   _mm512_add_ps(_mm512_add_ps(a4, a5), _mm512_add_ps(a6, a7)));
	return _mm512_reduce_add_ps(a0);
}

__attribute__((target("avx2"))) static float read_avx2(const float *p, size_t n)
{
	__m256 a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, a3 = a0, a4 = a0, a5 = a0, a6 = a0,
	       a7 = a0;
	for (size_t i = 0; i + 64 <= n; i += 64) {
		a0 = _mm256_add_ps(a0, _mm256_load_ps(p + i));
		a1 = _mm256_add_ps(a1, _mm256_load_ps(p + i + 8));
		a2 = _mm256_add_ps(a2, _mm256_load_ps(p + i + 16));
		a3 = _mm256_add_ps(a3, _mm256_load_ps(p + i + 24));
		a4 = _mm256_add_ps(a4, _mm256_load_ps(p + i + 32));
		a5 = _mm256_add_ps(a5, _mm256_load_ps(p + i + 40));
		a6 = _mm256_add_ps(a6, _mm256_load_ps(p + i + 48));
		a7 = _mm256_add_ps(a7, _mm256_load_ps(p + i + 56));
	}
	a0 = _mm256_add_ps(_mm256_add_ps(_mm256_add_ps(a0, a1), _mm256_add_ps(a2, a3)),
			   _mm256_add_ps(_mm256_add_ps(a4, a5), _mm256_add_ps(a6, a7)));
	float t[8];
	_mm256_storeu_ps(t, a0);
	return t[0] + t[1] + t[2] + t[3] + t[4] + t[5] + t[6] + t[7];
}
#endif

static float read_c(const float *p, size_t n)
{
	float a[8] = {0};
	for (size_t i = 0; i + 8 <= n; i += 8)
		for (int j = 0; j < 8; j++)
			a[j] += p[i + j];
	return a[0] + a[1] + a[2] + a[3] + a[4] + a[5] + a[6] + a[7];
}

struct bw_job {
	const float *p;
	size_t n;
	float (*fn)(const float *, size_t);
	atomic_int *go;
	float sink;
};

static void *bw_thread(void *arg)
{
	struct bw_job *j = arg;
	while (!atomic_load(j->go))
		;
	j->sink = j->fn(j->p, j->n);
	return NULL;
}

/* GB/s reading `bytes` with `threads` threads (one slice each), best of `reps`.
 * The buffer is 2 MB-aligned and asks for 2 MB pages, as the weights are mapped
 * (engine/safetensors.c), so the loop pays no TLB misses the decode does not.
 * 0 when it cannot be measured. */
static double read_bandwidth(int threads, size_t bytes, int reps)
{
	const size_t huge = (size_t)2 << 20;
	size_t len = (bytes + 2 * huge - 1) / huge * huge;
	void *map = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (map == MAP_FAILED)
		return 0;
	float *buf = (float *)(((uintptr_t)map + huge - 1) & ~(uintptr_t)(huge - 1));
#ifdef MADV_HUGEPAGE
	madvise(buf, bytes, MADV_HUGEPAGE); /* a hint; 4 KB pages where refused */
#endif
	size_t n = bytes / sizeof(float);
	for (size_t i = 0; i < n; i++) /* touch every page so the timing reads RAM */
		buf[i] = (float)(i & 7);
	float (*fn)(const float *, size_t) = read_c;
#if defined(__x86_64__)
	__builtin_cpu_init();
	if (__builtin_cpu_supports("avx512f"))
		fn = read_avx512;
	else if (__builtin_cpu_supports("avx2"))
		fn = read_avx2;
#endif
	struct bw_job *jobs = calloc((size_t)threads, sizeof *jobs);
	pthread_t *tids = calloc((size_t)threads, sizeof *tids);
	double best = 0;
	size_t slice = n / (size_t)threads / 128 * 128;
	for (int r = 0; jobs && tids && r < reps; r++) {
		atomic_int go = 0;
		int started = 0;
		for (int t = 0; t < threads; t++) {
			jobs[t] = (struct bw_job){buf + (size_t)t * slice, slice, fn, &go, 0};
			if (proc_thread_create(&tids[t], bw_thread, &jobs[t]))
				break;
			started++;
		}
		usleep(1000); /* let every thread reach its start line */
		double t0 = clock_now();
		atomic_store(&go, 1);
		for (int t = 0; t < started; t++)
			pthread_join(tids[t], NULL);
		double dt = clock_now() - t0;
		if (started < threads) {
			best = 0;
			break;
		}
		double gbs = (double)slice * threads * sizeof(float) / dt / 1e9;
		best = gbs > best ? gbs : best;
	}
	free(jobs);
	free(tids);
	munmap(map, len);
	return best;
}

int cpu_measure(int threads, const struct eng_measure_request *rq, struct eng_peaks *out)
{
	size_t bytes = rq->read_bytes ? rq->read_bytes : (size_t)1 << 30;
	double gbs = read_bandwidth(threads, bytes, rq->reps > 0 ? rq->reps : 5);
	char size[16];
	if (gbs <= 0)
		return err_set("cpu backend: cannot measure the read bandwidth (a %s buffer)",
			       units_ibytes((double)bytes, size, sizeof size));
	out->read_gb_s = gbs;
	return 0;
}
