/* gemm.h — the training path's matrix products on the CPU: C (n, m) (+)= A (n, k) .
 * B (k, m) over fp32 arrays, with either operand read transposed, so that the
 * forward (x . W^T), the input gradients (dy . W) and the weight gradients
 * (dy^T . x) are all one function. Each product is cut into blocks of rows of C;
 * within a block the same k-panels and 32-column panels of A and B are packed and
 * multiplied in the same order whatever thread takes it, so the result does not
 * depend on the thread count's scheduling: bit-identical runs.
 *
 * Precision: GEMM_F32 multiplies in fp32 (the exact path); GEMM_BF16 rounds A and
 * B to bf16 (nearest even) as they are packed and sums the products in fp32
 * (vdpbf16ps, or AMX tiles for blocks of 32 rows: amx.h), where the CPU has AVX-512
 * BF16; elsewhere it is GEMM_F32. */
#ifndef QWENCHAT_CPU_GEMM_H
#define QWENCHAT_CPU_GEMM_H

#include <stdbool.h>
#include <stddef.h>

#include "engine/cpu/kernels.h"
#include "engine/cpu/pool.h"

enum gemm_prec { GEMM_F32, GEMM_BF16 };

/* What is known to be zero or not needed, so that whole tiles are skipped, and in fp32
 * the steps of k where a tile's rows of A are all zero: C is only
 * needed on and below its diagonal (tiles wholly above it are left as they were; the
 * tiles across it are written whole, above the diagonal too), or A is zero above its
 * diagonal (a(i, p) = 0 for p > i), or below it (p < i; then n <= k: rows past k
 * would be left as they were, not zeroed). Causal attention, n = k. */
enum gemm_tri { GEMM_FULL, GEMM_TRI_C, GEMM_TRI_A_LOWER, GEMM_TRI_A_UPPER };

struct gemm {
	int n, m, k;
	float *c; /* (n, m), rows ldc apart */
	int ldc;
	bool acc; /* add to c */
	/* a(i, p) = at ? a[p*lda + i] : a[i*lda + p];  b(p, j) = bt ? b[j*ldb + p] : b[p*ldb + j] */
	const float *a;
	int lda;
	bool at;
	const float *b;
	int ldb;
	bool bt;
	enum gemm_tri tri;
};

/* The kernels this CPU runs (the best of AMX, AVX-512 BF16, AVX-512, AVX2 and
 * portable C, or the one named: cpu_isa), and whether GEMM_BF16 is really bf16 here. */
struct gemm_ctx;
struct gemm_ctx *gemm_new(enum cpu_isa isa, struct cpu_pool *pool);
void gemm_free(struct gemm_ctx *g);
/* Bytes of scratch gemm_new takes for each thread of the pool, and those its
 * products may take once more, shared (operands packed whole). */
size_t gemm_thread_scratch(void);
size_t gemm_shared_scratch(void);
bool gemm_has_bf16(const struct gemm_ctx *g);

/* One product on every thread of the pool. */
void gemm_run(struct gemm_ctx *g, const struct gemm *p, enum gemm_prec prec);
/* One product on the calling thread alone, with that thread's scratch (tid of the
 * pool's task): for the many small products of attention, run per head in
 * parallel. In bf16 only up to the size reserved by gemm_reserve_serial (fp32
 * beyond). */
void gemm_serial(struct gemm_ctx *g, const struct gemm *p, enum gemm_prec prec, int tid);
/* Per-thread room for gemm_serial's bf16 A of n rows of k. 0 or -1 (err_set). */
int gemm_reserve_serial(struct gemm_ctx *g, int n, int k);

#endif
