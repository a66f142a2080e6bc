/* kernels_quant.c — decoding over weights stored in GGUF's block-quantized types
 * (and F16/F32), in portable C: the activations are quantized once per input row to
 * int8 with one scale per 32 values, and each row of weights is read once, its
 * blocks' integer dot products with those int8 values scaled by both blocks' scales.
 * This is the reference the vectorized kernels (kernels_quant_avx2.c) compute the
 * same sums as; the sums are exact in integers, so they differ only in the order of
 * the float additions. */
#include <math.h>
#include <string.h>

#include "engine/cpu/kernels.h"
#include "engine/quant.h"

/* x rounded to the nearest integer, ties to even, for |x| <= 2^22: adding and
 * subtracting 1.5 * 2^23 leaves no fraction bits. nearbyintf does the same through a
 * library call per element, which showed in a decode step's profile. */
static inline float round_even(float x)
{
	const float magic = 12582912.0f;
	return (x + magic) - magic;
}

/* d = max|x| / 127 per block of 32 (ggml's q8_0), q = round(x / d), ties to even. */
void cpu_quantize_act(const float *x, int K, struct cpu_xq *xq)
{
	xq->f = x;
	for (int b = 0; b < K / 32; b++) {
		const float *v = x + 32 * b;
		float amax = 0;
		for (int i = 0; i < 32; i++)
			amax = fabsf(v[i]) > amax ? fabsf(v[i]) : amax;
		float d = amax / 127.0f, id = d != 0 ? 1.0f / d : 0;
		int s[2] = {0, 0};
		for (int i = 0; i < 32; i++) {
			int q = (int)round_even(v[i] * id);
			xq->q[32 * b + i] = (int8_t)q;
			s[i / 16] += q;
		}
		xq->d[b] = d;
		xq->ds[b] = d * (float)(s[0] + s[1]);
		xq->s16[2 * b] = (int16_t)s[0];
		xq->s16[2 * b + 1] = (int16_t)s[1];
	}
}

static float half(const uint8_t *p)
{
	uint16_t h;
	memcpy(&h, p, 2);
	return quant_f16_to_f32(h);
}

static int idot(const uint8_t *w, const int8_t *x, int n)
{
	int s = 0;
	for (int i = 0; i < n; i++)
		s += w[i] * x[i];
	return s;
}

/* Q8_0, Q4_0, Q5_0: weight = d * (u - offset) for unsigned quants u of one block;
 * Q4_1, Q5_1 (their quants 2 bytes further on, after the min m): d * u + m. */
static float dot_32(enum eng_dtype t, const uint8_t *w, const struct cpu_xq *x, int K)
{
	bool one = t == ENG_Q4_1 || t == ENG_Q5_1, five = t == ENG_Q5_0 || t == ENG_Q5_1;
	float sum = 0;
	for (int b = 0; b < K / 32; b++) {
		const uint8_t *blk = w + (size_t)b * eng_dtype_block_bytes(t), *q = blk + 2 * one;
		uint8_t u[32];
		int off = 0;
		if (t == ENG_Q8_0) {
			for (int i = 0; i < 32; i++)
				u[i] = (uint8_t)((int8_t)blk[2 + i] + 128);
			off = 128;
		} else { /* 4 bits, and for Q5_0 / Q5_1 a fifth from the 32-bit mask first */
			uint32_t qh = 0;
			if (five)
				memcpy(&qh, q + 2, 4);
			const uint8_t *qs = q + (five ? 6 : 2);
			for (int i = 0; i < 16; i++) {
				u[i] = (uint8_t)((qs[i] & 15) | (qh >> i & 1) << 4);
				u[i + 16] = (uint8_t)((qs[i] >> 4) | (qh >> (i + 16) & 1) << 4);
			}
			off = one ? 0 : five ? 16 : 8;
		}
		float d = half(blk), dot = d * x->d[b] * (float)idot(u, x->q + 32 * b, 32);
		sum += one ? dot + half(blk + 2) * x->ds[b] : dot - (float)off * d * x->ds[b];
	}
	return sum;
}

/* The 32 quants of activation block j (of 8) of a Q2_K or Q3_K block: bits
 * 2(j % 4).. of the 32 bytes qs[32(j / 4)..]; for Q3_K (hm) plus 4 where bit j of
 * hm[l] is set, so that u - 4 is the value. */
static void k23_quants(const uint8_t *qs, const uint8_t *hm, int j, uint8_t u[32])
{
	for (int l = 0; l < 32; l++) {
		u[l] = (uint8_t)(qs[32 * (j / 4) + l] >> (2 * (j % 4)) & 3);
		if (hm)
			u[l] |= (uint8_t)((hm[l] >> j & 1) << 2);
	}
}

/* Q2_K: per 16 weights, weight = d * sc * u - dmin * m; Q3_K: d * sc * (u - 4). */
static float dot_k23(bool three, const uint8_t *w, const struct cpu_xq *x, int K)
{
	size_t bb = eng_dtype_block_bytes(three ? ENG_Q3_K : ENG_Q2_K);
	float sum = 0;
	for (int i = 0; i < K / 256; i++) {
		const uint8_t *blk = w + (size_t)i * bb;
		int8_t sc3[16];
		if (three)
			quant_q3_k_scales(blk + 96, sc3);
		float d = half(blk + (three ? 108 : 80)), dmin = three ? 0 : half(blk + 82);
		for (int j = 0; j < 8; j++) {
			int b = 8 * i + j, isum = 0, msum = 0;
			uint8_t u[32];
			k23_quants(blk + (three ? 32 : 16), three ? blk : NULL, j, u);
			for (int h = 0; h < 2; h++) {
				int g = 2 * j + h, s16 = x->s16[2 * b + h];
				int dot = idot(u + 16 * h, x->q + 32 * b + 16 * h, 16);
				if (three) {
					isum += sc3[g] * (dot - 4 * s16);
				} else {
					isum += (blk[g] & 15) * dot;
					msum += (blk[g] >> 4) * s16;
				}
			}
			sum += d * x->d[b] * (float)isum - dmin * x->d[b] * (float)msum;
		}
	}
	return sum;
}

/* IQ4_NL and IQ4_XS: per 32 weights, weight = scale * level[index], the levels
 * signed bytes; IQ4_XS's scale is d * (its 6-bit scale - 32). */
static float dot_iq4(bool xs, const uint8_t *w, const struct cpu_xq *x, int K)
{
	float sum = 0;
	for (int b = 0; b < K / 32; b++) {
		const uint8_t *blk = xs ? w + (size_t)(b / 8) * 136 : w + (size_t)b * 18;
		const uint8_t *qs = xs ? blk + 8 + 16 * (b % 8) : blk + 2;
		float d = xs ? half(blk) * (float)quant_iq4_xs_scale(blk, b % 8) : half(blk);
		const int8_t *xq = x->q + 32 * b;
		int s = 0;
		for (int i = 0; i < 16; i++)
			s += quant_iq4_levels[qs[i] & 15] * xq[i] +
			     quant_iq4_levels[qs[i] >> 4] * xq[i + 16];
		sum += d * x->d[b] * (float)s;
	}
	return sum;
}

/* Q4_K and Q5_K: per sub-block of 32, weight = d * sc * u - dmin * m. */
static float dot_k4(bool five, const uint8_t *w, const struct cpu_xq *x, int K)
{
	size_t bb = eng_dtype_block_bytes(five ? ENG_Q5_K : ENG_Q4_K);
	float sum = 0;
	for (int i = 0; i < K / 256; i++) {
		const uint8_t *blk = w + (size_t)i * bb, *qh = blk + 16;
		const uint8_t *qs = blk + (five ? 48 : 16);
		float d = half(blk), dmin = half(blk + 2);
		for (int s = 0; s < 8; s++) {
			int sc, m, b = 8 * i + s;
			quant_k4_scale_min(s, blk + 4, &sc, &m);
			uint8_t u[32];
			for (int l = 0; l < 32; l++) {
				u[l] = s & 1 ? qs[32 * (s / 2) + l] >> 4
					     : qs[32 * (s / 2) + l] & 15;
				if (five)
					u[l] |= (uint8_t)((qh[l] >> s & 1) << 4);
			}
			sum += d * (float)sc * x->d[b] * (float)idot(u, x->q + 32 * b, 32) -
			       dmin * (float)m * x->ds[b];
		}
	}
	return sum;
}

/* Q6_K: per 16 weights, weight = d * sc * (u - 32). */
static float dot_q6_k(const uint8_t *w, const struct cpu_xq *x, int K)
{
	float sum = 0;
	for (int i = 0; i < K / 256; i++) {
		const uint8_t *blk = w + (size_t)i * 210;
		const int8_t *sc = (const int8_t *)(blk + 192);
		float d = half(blk + 208);
		for (int h = 0; h < 2; h++) {
			const uint8_t *ql = blk + 64 * h, *qh = blk + 128 + 32 * h;
			for (int k = 0; k < 4; k++) {
				int b = 8 * i + 4 * h + k, isum = 0;
				uint8_t u[32];
				for (int l = 0; l < 32; l++) {
					int lo = k & 1 ? ql[l + 32] : ql[l];
					u[l] = (uint8_t)((k < 2 ? lo & 15 : lo >> 4) |
							 (qh[l] >> (2 * k) & 3) << 4);
				}
				for (int j = 0; j < 2; j++) {
					int s16 = 2 * b + j, scale = sc[s16 % 16];
					isum += scale *
						(idot(u + 16 * j, x->q + 32 * b + 16 * j, 16) -
						 32 * x->s16[s16]);
				}
				sum += d * x->d[b] * (float)isum;
			}
		}
	}
	return sum;
}

static float dot_float(enum eng_dtype t, const uint8_t *w, const float *x, int K)
{
	float sum = 0;
	for (int k = 0; k < K; k++) {
		uint16_t h;
		float v;
		if (t == ENG_F32) {
			memcpy(&v, w + 4 * (size_t)k, 4);
		} else {
			memcpy(&h, w + 2 * (size_t)k, 2);
			v = t == ENG_F16 ? quant_f16_to_f32(h) : cpu_bf16_to_f32(h);
		}
		sum += v * x[k];
	}
	return sum;
}

float cpu_qdot_c(enum eng_dtype t, const void *row, const struct cpu_xq *x, int K)
{
	switch (t) {
	case ENG_Q8_0:
	case ENG_Q4_0:
	case ENG_Q5_0:
	case ENG_Q4_1:
	case ENG_Q5_1: return dot_32(t, row, x, K);
	case ENG_Q4_K: return dot_k4(false, row, x, K);
	case ENG_Q5_K: return dot_k4(true, row, x, K);
	case ENG_Q6_K: return dot_q6_k(row, x, K);
	case ENG_Q2_K: return dot_k23(false, row, x, K);
	case ENG_Q3_K: return dot_k23(true, row, x, K);
	case ENG_IQ4_NL: return dot_iq4(false, row, x, K);
	case ENG_IQ4_XS: return dot_iq4(true, row, x, K);
	default: return dot_float(t, row, x->f, K);
	}
}

void cpu_qmatvec_c(enum eng_dtype t, float *out, const void *w, const struct cpu_xq *x, int K,
		   int m0, int m1, bool acc)
{
	size_t rb = eng_row_bytes(t, K);
	for (int m = m0; m < m1; m++) {
		float v = cpu_qdot_c(t, (const uint8_t *)w + (size_t)m * rb, x, K);
		out[m] = acc ? out[m] + v : v;
	}
}

/* A row dequantized 256 weights at a time, then stored as bf16 (pack 0) or as fp32
 * packed for block size `pack`. */
static void dequant_row(enum eng_dtype t, const void *w, void *dst, int K, int pack)
{
	float tmp[256];
	size_t bb = eng_dtype_block_bytes(t);
	int blk = eng_dtype_block(t), step = 256 / blk * blk;
	for (int k = 0; k < K; k += step) {
		int n = K - k < step ? K - k : step;
		quant_dequantize_row(t, (const uint8_t *)w + (size_t)(k / blk) * bb, tmp, n);
		if (pack)
			cpu_pack_row((float *)dst + k, tmp, n, pack);
		else
			cpu_bf16_row((uint16_t *)dst + k, tmp, n);
	}
}

void cpu_dequant_bf16_c(enum eng_dtype t, const void *w, uint16_t *dst, int K)
{
	dequant_row(t, w, dst, K, 0);
}

void cpu_dequant_f32p(enum eng_dtype t, const void *w, float *dst, int K, int pack)
{
	dequant_row(t, w, dst, K, pack);
}

void cpu_dequant_f32p_c(enum eng_dtype t, const void *w, float *dst, int K)
{
	cpu_dequant_f32p(t, w, dst, K, 1);
}

void cpu_matmul_f32w_c(float *out, int ldo, const float *xp, int ldx, int n, const float *w, int K,
		       int rows, bool acc)
{
	for (int t = 0; t < n; t++)
		for (int r = 0; r < rows; r++) {
			float s = 0;
			for (int k = 0; k < K; k++)
				s += w[(size_t)r * K + k] * xp[(size_t)t * ldx + k];
			float *o = out + (size_t)t * ldo + r;
			*o = acc ? *o + s : s;
		}
}
