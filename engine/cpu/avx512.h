/* avx512.h — what the AVX-512 code shares (internal to engine/cpu/): the target
 * attributes and the masked tail (kernels_avx512*.c, gemm.c, gemm_avx512.c), and the
 * element-wise and attention kernels of kernels_avx512_ops.c that kernels_avx512.c puts
 * in its tables. */
#ifndef QWENCHAT_CPU_AVX512_H
#define QWENCHAT_CPU_AVX512_H

#include <immintrin.h>

#include "engine/cpu/tiling.h"

#define T512 __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,fma")))
/* T512 with AVX-512 BF16 (vdpbf16ps, vcvtne2ps2bf16) */
#define T512BF16 __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,avx512bf16,fma")))

/* The first min(left, 16) lanes (none when left <= 0). */
INL T512 __mmask16 tail16(int left)
{
	return left >= 16 ? 0xffff : left <= 0 ? 0 : (__mmask16)((1u << left) - 1);
}

/* Transposes 16 vectors of 16 32-bit lanes in place: r[i][j] <-> r[j][i]. Within
 * 128-bit blocks first (dwords, then qwords), then the 128-bit blocks. */
INL T512 void transpose16(__m512i r[16])
{
	__m512i t[16], u[16];
	for (int i = 0; i < 16; i += 2) {
		t[i] = _mm512_unpacklo_epi32(r[i], r[i + 1]);
		t[i + 1] = _mm512_unpackhi_epi32(r[i], r[i + 1]);
	}
	for (int i = 0; i < 16; i += 4) { /* u[i + c]: element 4b + c of rows i..i+3, block b */
		u[i] = _mm512_unpacklo_epi64(t[i], t[i + 2]);
		u[i + 1] = _mm512_unpackhi_epi64(t[i], t[i + 2]);
		u[i + 2] = _mm512_unpacklo_epi64(t[i + 1], t[i + 3]);
		u[i + 3] = _mm512_unpackhi_epi64(t[i + 1], t[i + 3]);
	}
	for (int c = 0; c < 4; c++) {
		__m512i x0 = _mm512_shuffle_i32x4(u[c], u[4 + c], 0x44);
		__m512i x1 = _mm512_shuffle_i32x4(u[c], u[4 + c], 0xee);
		__m512i y0 = _mm512_shuffle_i32x4(u[8 + c], u[12 + c], 0x44);
		__m512i y1 = _mm512_shuffle_i32x4(u[8 + c], u[12 + c], 0xee);
		r[c] = _mm512_shuffle_i32x4(x0, y0, 0x88);
		r[4 + c] = _mm512_shuffle_i32x4(x0, y0, 0xdd);
		r[8 + c] = _mm512_shuffle_i32x4(x1, y1, 0x88);
		r[12 + c] = _mm512_shuffle_i32x4(x1, y1, 0xdd);
	}
}

void cpu512_scores(float *s, const float *q, const void *keys, int nk, int hd, bool bf16,
		   float scale);
void cpu512_mix(float *out, int ldo, const float *p, int ldp, int T, const void *vals, int nk,
		int hd, bool bf16);
void cpu512_softmax(float *s, int n, float scale, double *lse);
void cpu512_swiglu(float *g, const float *u, int n);
void cpu512_swiglu_back(float *dh, float *du, const float *g, const float *u, int n);
double cpu512_scale_sq(float *g, size_t n, float scale);
void cpu512_adamw(float *w, float *m, float *v, const float *g, size_t n,
		  const struct cpu_adamw *h);
void cpu512_rmsnorm(float *out, const float *x, const float *w, int n, float eps);
void cpu512_pack_row(float *xp, const float *x, int K);
void cpu512_to_bf16(uint16_t *xb, const float *x, int n);

#endif
