/* tiling.h — what the per-ISA kernel files share (internal to engine/cpu/): the
 * packed-activation layout of kernels.h, reading a K/V cache row of either element
 * type, and the always-inline marker the tile kernels are written with (their shape
 * parameters become constants, so each instantiation is fully unrolled). */
#ifndef QWENCHAT_CPU_TILING_H
#define QWENCHAT_CPU_TILING_H

#include "engine/cpu/kernels.h"

#define INL static inline __attribute__((always_inline))

/* Where k = 2p and 2p + 1 sit in a row packed with block size `pack`. */
static inline void packed_pair(int p, int K, int pack, int *ke, int *ko)
{
	int kb = pack > 1 ? K / pack * pack : 0;
	if (2 * p < kb) {
		*ke = 2 * p / pack * pack + p % (pack / 2);
		*ko = *ke + pack / 2;
	} else {
		*ke = 2 * p;
		*ko = 2 * p + 1;
	}
}

/* Element i of a K/V cache row, bf16 or fp32. */
static inline float kv_at(const void *rows, size_t i, bool bf16)
{
	return bf16 ? cpu_bf16_to_f32(((const uint16_t *)rows)[i]) : ((const float *)rows)[i];
}

/* A tile kernel of the matrix product: R rows (4 or 1) by one token tile, the R and
 * the tile's token count fixed at compile time (mk512_R_T, mk256_R_T). */
typedef void mk_fn(float *, int, const float *, int, const uint16_t *, int, bool);

/* Rows in chunks of ROWS_CHUNK (a 64-row slice of a K=1024 matrix is 128 KB, which
 * stays in L2 while every token block passes over it), tokens in blocks of 5 (AVX-512:
 * 4x5 accumulators + 8 widened weights fill the 32 registers). */
#define ROWS_CHUNK 64

static inline void matmul_tiles(mk_fn *const *r4, mk_fn *const *r1, int tb, float *out, int ldo,
				const float *xp, int ldx, int n, const uint16_t *w, int K, int m0,
				int m1, bool acc)
{
	for (int mc = m0; mc < m1; mc += ROWS_CHUNK) {
		int me = mc + ROWS_CHUNK < m1 ? mc + ROWS_CHUNK : m1;
		for (int t = 0; t < n; t += tb) {
			int T = n - t < tb ? n - t : tb;
			const float *x = xp + (size_t)t * ldx;
			float *o = out + (size_t)t * ldo;
			int m = mc;
			for (; m + 4 <= me; m += 4)
				r4[T - 1](o + m, ldo, x, ldx, w + (size_t)m * K, K, acc);
			for (; m < me; m++)
				r1[T - 1](o + m, ldo, x, ldx, w + (size_t)m * K, K, acc);
		}
	}
}

/* Decode (one token) reads every weight once, so its speed is the memory's, and two
 * things keep a core from reading at that speed:
 * - Reading the rows one after another is a single stream that stalls at every
 *   4 KB page (a TLB miss, the hardware prefetcher starting over). MV_STREAMS rows
 *   from as many separate parts of the block are read side by side instead, so
 *   those stalls overlap, and each activation load serves all of them.
 * - Tensors in a safetensors file start wherever the header ends, so weight rows
 *   are rarely 64-byte aligned and every 64-byte load would straddle two cache
 *   lines. When a row starts 4*sh bytes into a cache line (the same for every row
 *   when K is a multiple of 32), the kernel loads whole aligned lines and shifts
 *   each pair into place with one permute (valignd's variable-count form). */
#define MV_STREAMS 4
/* Each stream also prefetches the line MV_AHEAD lines ahead of the one it loads: the
 * hardware prefetcher starts over at every 4 KB. 24 lines (1.5 KB) ahead decoded
 * faster than no prefetch; 8 and 48 lines did no better than none. */
#define MV_AHEAD   24

#endif
