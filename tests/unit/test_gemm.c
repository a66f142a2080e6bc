/* test_gemm.c — the training path's matrix products (engine/cpu/gemm.c) against a
 * float64 reference: every combination of transposed operands and accumulation, on
 * shapes that leave partial tiles, panels, k-blocks and blocks of rows, on every kernel
 * set this CPU runs; fp32 within 1e-5 of the largest product sum, bf16 within what rounding the
 * inputs to bf16 allows (checked against the reference over bf16-rounded inputs), and
 * the same bits whatever the number of threads. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "engine/cpu/gemm.h"
#include "engine/cpu/kernels.h"

static uint64_t rng = 0x9e3779b97f4a7c15ull;
static float frand(void)
{
	rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
	return (float)((rng >> 40) / 16777216.0 * 2.0 - 1.0);
}

static float round_bf16(float x)
{
	return cpu_bf16_to_f32(cpu_f32_to_bf16(x));
}

/* Runs one shape on `isa` with `threads` threads; returns C. */
static float *run(enum cpu_isa isa, int threads, int n, int m, int k, bool at, bool bt, bool acc,
		  enum gemm_prec prec, const float *a, const float *b, const float *c0)
{
	struct cpu_pool *pool = cpu_pool_new(threads);
	assert_non_null(pool);
	struct gemm_ctx *g = gemm_new(isa, pool);
	assert_non_null(g);
	float *c = malloc((size_t)n * (m + 3) * sizeof *c);
	memcpy(c, c0, (size_t)n * (m + 3) * sizeof *c);
	struct gemm p = {n, m, k, c, m + 3, acc, a, at ? n + 1 : k + 2, at, b, bt ? k + 1 : m + 5, bt,
			 GEMM_FULL};
	gemm_run(g, &p, prec);
	gemm_free(g);
	cpu_pool_free(pool);
	return c;
}

static void check_shape(enum cpu_isa isa, int n, int m, int k)
{
	for (int v = 0; v < 8; v++) {
		bool at = v & 1, bt = v & 2, acc = v & 4;
		int lda = at ? n + 1 : k + 2, ldb = bt ? k + 1 : m + 5;
		size_t asz = (size_t)(at ? k : n) * lda, bsz = (size_t)(bt ? m : k) * ldb;
		float *a = malloc(asz * sizeof *a), *b = malloc(bsz * sizeof *b);
		float *c0 = malloc((size_t)n * (m + 3) * sizeof *c0);
		for (size_t i = 0; i < asz; i++)
			a[i] = frand();
		for (size_t i = 0; i < bsz; i++)
			b[i] = frand();
		for (int i = 0; i < n * (m + 3); i++)
			c0[i] = frand();
		for (int prec = GEMM_F32; prec <= GEMM_BF16; prec++) {
			float *c1 = run(isa, 1, n, m, k, at, bt, acc, prec, a, b, c0);
			float *c2 = run(isa, 2, n, m, k, at, bt, acc, prec, a, b, c0);
			assert_memory_equal(c1, c2, (size_t)n * (m + 3) * sizeof *c1);
			bool bf = prec == GEMM_BF16 && isa >= CPU_ISA_AVX512BF16;
			for (int i = 0; i < n; i++)
				for (int j = 0; j < m + 3; j++) {
					double ref = acc || j >= m ? c0[(size_t)i * (m + 3) + j] : 0, mag = 1;
					for (int p = 0; j < m && p < k; p++) {
						float x = at ? a[(size_t)p * lda + i] : a[(size_t)i * lda + p];
						float y = bt ? b[(size_t)j * ldb + p] : b[(size_t)p * ldb + j];
						if (bf)
							x = round_bf16(x), y = round_bf16(y);
						ref += (double)x * y;
						mag += fabs((double)x * y);
					}
					double got = c1[(size_t)i * (m + 3) + j];
					if (fabs(got - ref) > 1e-5 * mag)
						fail_msg("isa %d n %d m %d k %d at %d bt %d acc %d prec %d: "
							 "c[%d][%d] = %.8g, reference %.8g",
							 isa, n, m, k, at, bt, acc, prec, i, j, got, ref);
				}
			free(c1);
			free(c2);
		}
		free(a);
		free(b);
		free(c0);
	}
}

static void test_shapes(void **state)
{
	(void)state;
	static const int shapes[][3] = {{1, 1, 1},      {3, 5, 7},      {8, 32, 256},
					{9, 33, 257},   {17, 70, 513},  {64, 96, 40},
					{5, 200, 3},    {40, 31, 600},  {100, 65, 1030},
					{533, 97, 300}, {300, 40, 259}, {7, 9, 0}};
	for (int isa = CPU_ISA_C; isa <= CPU_ISA_AMX; isa++) {
		if (!cpu_isa_supported((enum cpu_isa)isa))
			continue;
		for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
			check_shape((enum cpu_isa)isa, shapes[s][0], shapes[s][1], shapes[s][2]);
	}
}

/* One causal shape on gemm_serial against the same product with tri GEMM_FULL: A (n x
 * n, the stored a_t when read transposed) zero above its diagonal (A_LOWER) or below it
 * (A_UPPER), random elsewhere; for GEMM_TRI_C the values on and below the diagonal. */
static void check_triangle(struct gemm_ctx *g, int isa, int T, int hd, enum gemm_tri tri, bool at,
			   enum gemm_prec prec, float *a, float *a_t, float *b, float *c, float *f)
{
	int m = tri == GEMM_TRI_C ? T : hd, k = tri == GEMM_TRI_C ? hd : T;
	for (int i = 0; i < T * T; i++) {
		int r = i / T, col = i % T;
		bool zero = (tri == GEMM_TRI_A_LOWER && col > r) ||
			    (tri == GEMM_TRI_A_UPPER && col < r);
		a[i] = zero ? 0.0f : frand();
		b[i] = frand();
	}
	for (int i = 0; i < T * T; i++) /* a(r, col) = a_t[col][r] */
		a_t[i] = a[i % T * T + i / T];
	/* a dense product first: its pairs fill the bf16 scratch, so that one the tiles
	   read but the triangle's packing skipped (as never read) would show */
	struct gemm dense = {T, m, k, c, T, false, b, T, at, b, T, false, GEMM_FULL};
	gemm_serial(g, &dense, prec, 0);
	struct gemm p = {T, m, k, c, T, false, at ? a_t : a, T, at, b, T, false, tri};
	for (int i = 0; i < T * T; i++)
		c[i] = f[i] = 7.0f;
	gemm_serial(g, &p, prec, 0);
	p.c = f, p.tri = GEMM_FULL;
	gemm_serial(g, &p, prec, 0);
	for (int i = 0; i < T; i++)
		for (int j = 0; j < m; j++) {
			float got = c[(size_t)i * T + j], want = f[(size_t)i * T + j];
			if ((tri != GEMM_TRI_C || j <= i) && got != want)
				fail_msg("isa %d tri %d at %d prec %d: c[%d][%d] %.8g, full %.8g",
					 isa, tri, at, prec, i, j, got, want);
		}
}

/* The causal shapes of attention on gemm_serial: C needed on and below the diagonal
 * only, A zero above or below it; the values that matter equal the full product's.
 * With 289 rows the last panel of C holds one column, whose one needed value is the
 * last row's diagonal (a document of 32 k + 1 tokens). A zero below its diagonal is
 * also read transposed, as the key and value gradients read p^T (packed then, only
 * the part the tiles read), and so is one zero above it. 560 rows (bf16 only, where
 * the pairs of A are packed only where the tiles read them): three blocks of k. */
static void test_triangles(void **state)
{
	(void)state;
	int hd = 40;
	static const int rows[] = {300, 289, 560};
	for (size_t t = 0; t < sizeof rows / sizeof rows[0]; t++) {
		int T = rows[t];
		for (int isa = CPU_ISA_C; isa <= CPU_ISA_AMX; isa++) {
			if (!cpu_isa_supported((enum cpu_isa)isa) ||
			    (T > 300 && isa < CPU_ISA_AVX512BF16))
				continue;
			struct cpu_pool *pool = cpu_pool_new(1);
			struct gemm_ctx *g = gemm_new((enum cpu_isa)isa, pool);
			assert_int_equal(gemm_reserve_serial(g, T, T), 0);
			size_t bytes = sizeof(float) * T * T;
			float *a = malloc(bytes), *a_t = malloc(bytes), *b = malloc(bytes);
			float *c = malloc(bytes), *f = malloc(bytes);
			for (int prec = GEMM_F32; prec <= GEMM_BF16; prec++)
				for (int tri = GEMM_TRI_C; tri <= GEMM_TRI_A_UPPER; tri++)
					for (int at = 0; at <= (tri != GEMM_TRI_C); at++)
						check_triangle(g, isa, T, hd, (enum gemm_tri)tri,
							       at, (enum gemm_prec)prec, a, a_t, b,
							       c, f);
			free(a), free(a_t), free(b), free(c), free(f);
			gemm_free(g);
			cpu_pool_free(pool);
		}
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {cmocka_unit_test(test_shapes),
					   cmocka_unit_test(test_triangles)};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
