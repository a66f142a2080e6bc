/* avx512.h — what the two AVX-512 kernel files share (internal to engine/cpu/):
 * the target attribute, the masked tail, and the element-wise and attention kernels
 * of kernels_avx512_ops.c that kernels_avx512.c puts in its tables. */
#ifndef QWENCHAT_CPU_AVX512_H
#define QWENCHAT_CPU_AVX512_H

#include <immintrin.h>

#include "engine/cpu/tiling.h"

#define T512 __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,fma")))

/* The first min(left, 16) lanes (none when left <= 0). */
INL T512 __mmask16 tail16(int left)
{
	return left >= 16 ? 0xffff : left <= 0 ? 0 : (__mmask16)((1u << left) - 1);
}

void cpu512_scores(float *s, const float *q, const void *keys, int nk, int hd, bool bf16,
		   float scale);
void cpu512_mix(float *out, int ldo, const float *p, int ldp, int T, const void *vals, int nk,
		int hd, bool bf16);
void cpu512_softmax(float *s, int n, float scale);
void cpu512_swiglu(float *g, const float *u, int n);
void cpu512_rmsnorm(float *out, const float *x, const float *w, int n, float eps);
void cpu512_pack_row(float *xp, const float *x, int K);
void cpu512_to_bf16(uint16_t *xb, const float *x, int n);

#endif
