/* gemm_tiles.h — what gemm.c shares with its micro-kernels (internal to engine/cpu/):
 * the blocking, the micro-kernels' signatures, the AVX-512 kernels (gemm_avx512.c) and
 * the AVX2 kernel and packers (gemm_avx2.c). */
#ifndef QWENCHAT_CPU_GEMM_TILES_H
#define QWENCHAT_CPU_GEMM_TILES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define GEMM_NR       32  /* columns of a panel */
#define GEMM_MR       12  /* rows of a micro-tile: 24 accumulators of the 32 registers */
#define GEMM_KC       256 /* depth of a packed panel (even) */
#define GEMM_MC       256 /* rows of C a work item sweeps: their A stays in L2 across panels */
#define GEMM_MC_TILES ((GEMM_MC + GEMM_MR - 1) / GEMM_MR * GEMM_MR)

/* fp32: c (rows x cols of a tile, ldc) (+)= sum_p a(r, p) * bp[p][j], a(r, p) at
 * a[r*sar + p*sap]. */
typedef void mk_f32_fn(float *c, int ldc, const float *a, size_t sar, size_t sap, const float *bp,
		       int kc, int rows, int cols, bool acc);

/* bf16: the same with a's pairs at ap[r*lda2 + pp] and bp[pp][j] pairs. */
typedef void mk_bf16_fn(float *c, int ldc, const uint32_t *ap, size_t lda2, const uint32_t *bp,
			int kcp, int rows, int cols, bool acc);

#if defined(__x86_64__)
/* The AVX-512 micro-kernels: tiles of up to GEMM_MR rows x GEMM_NR columns; bf16 where
 * the CPU has AVX-512 BF16. */
mk_f32_fn gemm_mk_f32_avx512;
mk_bf16_fn gemm_mk_bf16_avx512;
/* The AVX2 micro-kernel: tiles of 6 rows x 16 columns, a packed A (pack_a_f32's tiles,
 * sar 1 and sap GEMM_MR) on a path of its own. */
mk_f32_fn gemm_mk_f32_avx2;
/* The whole 8 x 8 squares of a panel of B read transposed: bp[p * GEMM_NR + j] =
 * b[j * ldb + p], cols and kc rounded down to 8 (the caller packs the rest). */
void gemm_pack_bt_avx2(float *bp, const float *b, size_t ldb, int kc, int cols);
/* A block of a row-major A (rows of lda from a) packed as pack_a_f32's tiles
 * (ab[(r / GEMM_MR) * GEMM_MR * kc + p * GEMM_MR + r % GEMM_MR] = a[r * lda + p]) for
 * the whole groups of 4 rows and 8 steps of k; *rw and *pw: how many rows and steps
 * that is (the caller packs the rest). */
void gemm_pack_a_rows_avx2(float *ab, const float *a, size_t lda, int rows, int kc, int *rw,
			   int *pw);
#endif

#endif
