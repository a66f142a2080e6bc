/* gemm_avx2.c — the training products' AVX2 micro-kernel and packers (gemm.c).
 *
 * A tile is 6 rows x 16 columns, half a panel: 12 accumulators, the 2 vectors of B and
 * the broadcast value of A fill 15 of the 16 registers. A wider tile does not fit:
 * 4 rows x 32 columns needs 17, and the two accumulators the compiler then keeps on
 * the stack put a store and a load on every step's chain of additions, which halves
 * the rate. Each value of C sums its products in the order of k, whichever path. */
#include "engine/cpu/gemm_tiles.h"

#if defined(__x86_64__)
#include "engine/cpu/avx2.h"

/* The tile's accumulators t into c (rows x cols, ldc), added to it with acc. */
INL T256 void store_tile(float *c, int ldc, __m256 (*t)[2], const int R, int cols, bool acc)
{
#pragma GCC unroll 6
	for (int r = 0; r < R; r++) {
		float *cr = c + (size_t)r * ldc;
		if (cols == 16) {
			__m256 c0 = acc ? _mm256_add_ps(_mm256_loadu_ps(cr), t[r][0]) : t[r][0];
			__m256 c1 = acc ? _mm256_add_ps(_mm256_loadu_ps(cr + 8), t[r][1]) : t[r][1];
			_mm256_storeu_ps(cr, c0);
			_mm256_storeu_ps(cr + 8, c1);
			continue;
		}
		float tmp[16];
		_mm256_storeu_ps(tmp, t[r][0]);
		_mm256_storeu_ps(tmp + 8, t[r][1]);
		for (int j = 0; j < cols; j++)
			cr[j] = acc ? cr[j] + tmp[j] : tmp[j];
	}
}

/* One step of k: the panel's row bp[p] times a column of A, a(r) at a[r * sar]. */
#define TILE_STEP(bp, a, sar)                                                    \
	do {                                                                     \
		__m256 b0 = _mm256_loadu_ps(bp), b1 = _mm256_loadu_ps((bp) + 8); \
		_Pragma("GCC unroll 6") for (int r = 0; r < R; r++)              \
		{                                                                \
			__m256 av = _mm256_broadcast_ss((a) + r * (sar));        \
			t[r][0] = _mm256_fmadd_ps(av, b0, t[r][0]);              \
			t[r][1] = _mm256_fmadd_ps(av, b1, t[r][1]);              \
		}                                                                \
	} while (0)

/* A read where it lies, a(r, p) at a[r*sar + p*sap]. */
INL T256 void tile(float *c, int ldc, const float *a, size_t sar, size_t sap, const float *bp,
		   int kc, const int R, int cols, bool acc)
{
	__m256 t[6][2];
#pragma GCC unroll 6
	for (int r = 0; r < R; r++)
		t[r][0] = t[r][1] = _mm256_setzero_ps();
	for (int p = 0; p < kc; p++)
		TILE_STEP(bp + (size_t)p * GEMM_NR, a + (size_t)p * sap, sar);
	store_tile(c, ldc, t, R, cols, acc);
}

/* A packed, a(r, p) at a[p * GEMM_MR + r]: constant offsets, four steps of k a turn of
 * the loop, so that its own instructions stay few beside the 48 multiply-adds; faster
 * than reading A at a stride by more than packing a row-major A costs (BENCHMARKS.md). */
INL T256 void tile_packed(float *c, int ldc, const float *a, const float *bp, int kc, const int R,
			  int cols, bool acc)
{
	__m256 t[6][2];
#pragma GCC unroll 6
	for (int r = 0; r < R; r++)
		t[r][0] = t[r][1] = _mm256_setzero_ps();
	int p = 0;
	for (; p + 4 <= kc; p += 4, a += 4 * GEMM_MR, bp += 4 * GEMM_NR) {
		TILE_STEP(bp, a, 1);
		TILE_STEP(bp + GEMM_NR, a + GEMM_MR, 1);
		TILE_STEP(bp + 2 * GEMM_NR, a + 2 * GEMM_MR, 1);
		TILE_STEP(bp + 3 * GEMM_NR, a + 3 * GEMM_MR, 1);
	}
	for (; p < kc; p++, a += GEMM_MR, bp += GEMM_NR)
		TILE_STEP(bp, a, 1);
	store_tile(c, ldc, t, R, cols, acc);
}

/* Rows r0.. of the tile (at most 6), a constant row count each. */
static T256 void six_rows(float *c, int ldc, const float *a, size_t sar, size_t sap,
			  const float *bp, int kc, int rows, int cols, bool acc)
{
	bool packed = sar == 1 && sap == GEMM_MR;
#define ROWS(R)                                                          \
	case R:                                                          \
		if (packed)                                              \
			tile_packed(c, ldc, a, bp, kc, R, cols, acc);    \
		else                                                     \
			tile(c, ldc, a, sar, sap, bp, kc, R, cols, acc); \
		break;
	switch (rows) {
		ROWS(6) ROWS(5) ROWS(4) ROWS(3) ROWS(2) default : ROWS(1)
	}
#undef ROWS
}

/* The panel's halves of 16 columns in turn, 6 rows at a time. */
T256 void gemm_mk_f32_avx2(float *c, int ldc, const float *a, size_t sar, size_t sap,
			   const float *bp, int kc, int rows, int cols, bool acc)
{
	for (int h = 0; h < cols; h += 16)
		for (int r0 = 0; r0 < rows; r0 += 6)
			six_rows(c + (size_t)r0 * ldc + h, ldc, a + r0 * sar, sar, sap, bp + h, kc,
				 rows - r0 < 6 ? rows - r0 : 6, cols - h < 16 ? cols - h : 16, acc);
}

/* dst[p * ldd + j] = src[j * lds + p] for p, j < 8: one 8 x 8 transpose. */
static T256 void transpose8(float *dst, size_t ldd, const float *src, size_t lds)
{
	__m256 r[8], t[8];
	for (int i = 0; i < 8; i++)
		r[i] = _mm256_loadu_ps(src + i * lds);
	for (int i = 0; i < 8; i += 2) {
		t[i] = _mm256_unpacklo_ps(r[i], r[i + 1]);
		t[i + 1] = _mm256_unpackhi_ps(r[i], r[i + 1]);
	}
	for (int i = 0; i < 8; i += 4) {
		r[i] = _mm256_shuffle_ps(t[i], t[i + 2], 0x44);
		r[i + 1] = _mm256_shuffle_ps(t[i], t[i + 2], 0xee);
		r[i + 2] = _mm256_shuffle_ps(t[i + 1], t[i + 3], 0x44);
		r[i + 3] = _mm256_shuffle_ps(t[i + 1], t[i + 3], 0xee);
	}
	for (int i = 0; i < 4; i++) {
		_mm256_storeu_ps(dst + i * ldd, _mm256_permute2f128_ps(r[i], r[i + 4], 0x20));
		_mm256_storeu_ps(dst + (i + 4) * ldd, _mm256_permute2f128_ps(r[i], r[i + 4], 0x31));
	}
}

/* dst[p * ldd + r] = src[r * lds + p] for r < 4, p < 8: four rows of A into a tile's
 * steps of k. */
static T256 void transpose4x8(float *dst, size_t ldd, const float *src, size_t lds)
{
	__m256 r0 = _mm256_loadu_ps(src), r1 = _mm256_loadu_ps(src + lds);
	__m256 r2 = _mm256_loadu_ps(src + 2 * lds), r3 = _mm256_loadu_ps(src + 3 * lds);
	__m256 t0 = _mm256_unpacklo_ps(r0, r1), t1 = _mm256_unpackhi_ps(r0, r1);
	__m256 t2 = _mm256_unpacklo_ps(r2, r3), t3 = _mm256_unpackhi_ps(r2, r3);
	__m256 u[4] = {_mm256_shuffle_ps(t0, t2, 0x44), _mm256_shuffle_ps(t0, t2, 0xee),
		       _mm256_shuffle_ps(t1, t3, 0x44), _mm256_shuffle_ps(t1, t3, 0xee)};
	for (int i = 0; i < 4; i++) {
		_mm_storeu_ps(dst + i * ldd, _mm256_castps256_ps128(u[i]));
		_mm_storeu_ps(dst + (i + 4) * ldd, _mm256_extractf128_ps(u[i], 1));
	}
}

/* One value at a time, each store lands a panel's row (128 bytes) from the last. */
T256 void gemm_pack_bt_avx2(float *bp, const float *b, size_t ldb, int kc, int cols)
{
	for (int j = 0; j + 8 <= cols; j += 8)
		for (int p = 0; p + 8 <= kc; p += 8)
			transpose8(bp + (size_t)p * GEMM_NR + j, GEMM_NR, b + (size_t)j * ldb + p,
				   ldb);
}

T256 void gemm_pack_a_rows_avx2(float *ab, const float *a, size_t lda, int rows, int kc, int *rw,
				int *pw)
{
	*rw = rows / 4 * 4, *pw = kc / 8 * 8;
	for (int r = 0; r < *rw; r += 4) { /* GEMM_MR is a multiple of 4: a group is in one tile */
		float *dst = ab + (size_t)(r / GEMM_MR) * GEMM_MR * kc + r % GEMM_MR;
		for (int p = 0; p < *pw; p += 8)
			transpose4x8(dst + (size_t)p * GEMM_MR, GEMM_MR, a + (size_t)r * lda + p,
				     lda);
	}
}
#endif
