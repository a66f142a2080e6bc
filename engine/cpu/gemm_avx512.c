/* gemm_avx512.c — the training products' AVX-512 micro-kernels (gemm.c): fp32 tiles of
 * 12 rows x 32 columns, and bf16 pairs summed into fp32 by vdpbf16ps. The 24
 * accumulators, the panel's 2 vectors and the broadcast value of A fit the 32
 * registers. Each value of C sums its products in the order of k. */
#include "engine/cpu/gemm_tiles.h"

#if defined(__x86_64__)
#include "engine/cpu/avx512.h"

/* KERNEL(R) for the tile's row count R (1 to GEMM_MR) as a constant: a constant row
 * count keeps the tile in registers. */
#define BY_ROWS(rows, KERNEL)               \
	do {                                \
		switch (rows) {             \
		case 12: KERNEL(12); break; \
		case 11: KERNEL(11); break; \
		case 10: KERNEL(10); break; \
		case 9: KERNEL(9); break;   \
		case 8: KERNEL(8); break;   \
		case 7: KERNEL(7); break;   \
		case 6: KERNEL(6); break;   \
		case 5: KERNEL(5); break;   \
		case 4: KERNEL(4); break;   \
		case 3: KERNEL(3); break;   \
		case 2: KERNEL(2); break;   \
		default: KERNEL(1); break;  \
		}                           \
	} while (0)

/* The tile's two accumulators per row into c. */
INL T512 void store_tile(float *c, int ldc, __m512 (*t)[2], const int R, int cols, bool acc)
{
	__mmask16 m0 = tail16(cols), m1 = tail16(cols - 16);
#pragma GCC unroll 12
	for (int r = 0; r < R; r++) {
		float *cr = c + (size_t)r * ldc;
		if (acc) {
			t[r][0] = _mm512_add_ps(t[r][0], _mm512_maskz_loadu_ps(m0, cr));
			t[r][1] = _mm512_add_ps(t[r][1], _mm512_maskz_loadu_ps(m1, cr + 16));
		}
		_mm512_mask_storeu_ps(cr, m0, t[r][0]);
		_mm512_mask_storeu_ps(cr + 16, m1, t[r][1]);
	}
}

INL T512 void mk512(float *c, int ldc, const float *a, size_t sar, size_t sap, const float *bp,
		    int kc, const int R, int cols, bool acc)
{
	__m512 t[GEMM_MR][2];
#pragma GCC unroll 12
	for (int r = 0; r < R; r++)
		t[r][0] = t[r][1] = _mm512_setzero_ps();
	for (int p = 0; p < kc; p++) {
		__m512 b0 = _mm512_loadu_ps(bp + (size_t)p * GEMM_NR);
		__m512 b1 = _mm512_loadu_ps(bp + (size_t)p * GEMM_NR + 16);
		const float *ap = a + (size_t)p * sap;
#pragma GCC unroll 12
		for (int r = 0; r < R; r++) {
			__m512 av = _mm512_set1_ps(ap[r * sar]);
			t[r][0] = _mm512_fmadd_ps(av, b0, t[r][0]);
			t[r][1] = _mm512_fmadd_ps(av, b1, t[r][1]);
		}
	}
	store_tile(c, ldc, t, R, cols, acc);
}

T512 void gemm_mk_f32_avx512(float *c, int ldc, const float *a, size_t sar, size_t sap,
			     const float *bp, int kc, int rows, int cols, bool acc)
{
#define MK(R) mk512(c, ldc, a, sar, sap, bp, kc, R, cols, acc)
	BY_ROWS(rows, MK);
#undef MK
}

INL T512BF16 void mkbf(float *c, int ldc, const uint32_t *ap, size_t lda2, const uint32_t *bp,
		       int kcp, const int R, int cols, bool acc)
{
	__m512 t[GEMM_MR][2];
#pragma GCC unroll 12
	for (int r = 0; r < R; r++)
		t[r][0] = t[r][1] = _mm512_setzero_ps();
	for (int pp = 0; pp < kcp; pp++) {
		__m512bh b0 = (__m512bh)_mm512_loadu_si512(bp + (size_t)pp * GEMM_NR);
		__m512bh b1 = (__m512bh)_mm512_loadu_si512(bp + (size_t)pp * GEMM_NR + 16);
#pragma GCC unroll 12
		for (int r = 0; r < R; r++) {
			__m512bh av = (__m512bh)_mm512_set1_epi32((int)ap[r * lda2 + pp]);
			t[r][0] = _mm512_dpbf16_ps(t[r][0], av, b0);
			t[r][1] = _mm512_dpbf16_ps(t[r][1], av, b1);
		}
	}
	store_tile(c, ldc, t, R, cols, acc);
}

T512BF16 void gemm_mk_bf16_avx512(float *c, int ldc, const uint32_t *ap, size_t lda2,
				  const uint32_t *bp, int kcp, int rows, int cols, bool acc)
{
#define MK(R) mkbf(c, ldc, ap, lda2, bp, kcp, R, cols, acc)
	BY_ROWS(rows, MK);
#undef MK
}
#endif
