/* quantize.c — fp32 rows to GGUF's weight types, byte for byte what ggml's reference
 * quantizers write (ggml-quants.c, quantize_row_*_ref, llama.cpp b10573): llama-quantize
 * uses them when it has no importance matrix, so a model quantized here is the file
 * llama.cpp would have written.
 *
 * Being bit-exact means doing the same float32 operations in the same order: every
 * a*b+c below is two roundings, as in ggml's build (x86-64 baseline, no FMA). GCC does
 * not fuse them into FMAs in -std=c11 (there its default is -ffp-contract=off), but
 * would in GNU mode with -mfma and clang would within one expression: hence the
 * pragmas (a fused build fails the golden test). Sums are accumulated left to right
 * in float, never in double, and the block layouts are ggml-common.h's, little-endian.
 *
 * At the end, quant_convert_rows: a tensor's rows from any type to another, by
 * threads, which --quant (model_quant.c) and qwenchat quantize (gguf_write.c) share. */
#include "engine/quant.h"
#include "src/base/err.h"
#include "src/base/proc.h"

#include <math.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#if defined(__clang__)
#pragma STDC FP_CONTRACT OFF
#elif defined(__GNUC__)
#pragma GCC optimize("fp-contract=off") /* in case of -std=gnu11 CFLAGS */
#endif

#define QK       32     /* weights in a Q8_0 / Q4_0 / Q5_0 block */
#define QK_K     256    /* weights in a K-quant super-block */
#define TINY_MAX 1e-15f /* ggml's GROUP_MAX_EPS: a group this small is all zero */

/* ---- scalar conversions ---- */

static uint32_t bits_of(float f)
{
	uint32_t u;
	memcpy(&u, &f, 4);
	return u;
}

uint16_t quant_f32_to_f16(float f)
{
	uint32_t u = bits_of(f), a = u & 0x7fffffffu;
	uint16_t sign = (uint16_t)(u >> 16 & 0x8000);
	if (a > 0x7f800000u)
		return sign | 0x7e00; /* NaN: ggml returns the canonical quiet NaN */
	if (a >= 0x477ff000u)         /* 65520 and up round past 65504: infinity */
		return sign | 0x7c00;
	if (a >= 0x38800000u) { /* normal half (>= 2^-14): drop 13 bits, ties to even */
		uint32_t r = a + 0xfffu + (a >> 13 & 1);
		return sign | (uint16_t)((r >> 13) - (112u << 10)); /* rebias 127 -> 15 */
	}
	/* Subnormal half: a multiple of 2^-24. With the implicit bit, the float is
	 * m * 2^(e-150), i.e. m >> (126 - e) units, rounded to nearest even. Below
	 * 2^-25 (shift > 24) everything rounds to zero, float subnormals included. */
	int e = (int)(a >> 23), shift = 126 - e;
	if (shift > 24)
		return sign;
	uint32_t m = (a & 0x7fffffu) | 0x800000u;
	uint32_t q = m >> shift, rest = m & ((1u << shift) - 1), half = 1u << (shift - 1);
	if (rest > half || (rest == half && (q & 1)))
		q++; /* may carry into the smallest normal, whose encoding is q == 0x400 */
	return sign | (uint16_t)q;
}

/* bfloat16: round to nearest even; a NaN stays a NaN, made quiet. */
static uint16_t f32_to_bf16(float f)
{
	uint32_t u = bits_of(f);
	if ((u & 0x7fffffffu) > 0x7f800000u)
		return (uint16_t)(u >> 16 | 64);
	return (uint16_t)((u + 0x7fffu + (u >> 16 & 1)) >> 16);
}

static void put_f16(uint8_t *p, float f)
{
	uint16_t h = quant_f32_to_f16(f);
	p[0] = (uint8_t)h;
	p[1] = (uint8_t)(h >> 8);
}

/* The scale just written, read back exactly (ggml quantizes the weights against the
 * f16 scale, not the float it came from). */
static float get_f16(const uint8_t *p)
{
	return quant_f16_to_f32((uint16_t)(p[0] | p[1] << 8));
}

/* ggml's nearest_int: adding 1.5 * 2^23 leaves the integer part in the low mantissa
 * bits, rounded to nearest even. Kept as the same trick rather than lrintf so that
 * even out-of-range inputs (|x| > 2^22) give ggml's numbers. */
static int round_int(float x)
{
	float v = x + 12582912.f;
	int32_t i;
	memcpy(&i, &v, 4);
	return (i & 0x007fffff) - 0x00400000;
}

static int clamp(int v, int lo, int hi)
{
	return v < lo ? lo : v > hi ? hi : v;
}

/* ggml's (int8_t) casts of floats, made defined: when a block's scale is a float
 * subnormal, 1/d overflows and the casts see infinities and NaNs, which C leaves
 * undefined. ggml's x86 build truncates to 32 bits (cvttss2si, giving 0x80000000 for
 * those) and keeps the low byte; do the same whatever the compiler. */
static int8_t trunc_int8(float v)
{
	if (!(v > -2147483648.f && v < 2147483648.f))
		return 0; /* the low byte of 0x80000000 */
	return (int8_t)(uint8_t)(uint32_t)(int32_t)v;
}

/* The weight of largest magnitude, with its sign; the first one on ties. */
static float signed_absmax(const float *x, int n)
{
	float amax = 0, max = 0;
	for (int i = 0; i < n; i++)
		if (amax < fabsf(x[i])) {
			amax = fabsf(x[i]);
			max = x[i];
		}
	return max;
}

/* ---- 32-weight blocks: one f16 scale each ---- */

/* Q8_0: d = absmax / 127, q = round(x / d) (half away from zero). */
/* roundf (half away from zero) without the libm call that took a fifth of --quant
 * q8_0's time (and without branches); the same integer for every finite input, roundf itself for the rest. */
static inline float round_away(float v)
{
	if (!(fabsf(v) < 8388608.0f))
		return roundf(v);
	int i = (int)v; /* truncated */
	float f = v - (float)i;
	/* comparisons as 0/1, not branches: the fractions are random */
	return (float)(i + (int)(f >= 0.5f) - (int)(f <= -0.5f));
}

static void q8_0_block(const float *x, uint8_t *out)
{
	float amax = 0;
	for (int j = 0; j < QK; j++)
		amax = amax > fabsf(x[j]) ? amax : fabsf(x[j]); /* not fmaxf: NaN as ggml's MAX */
	float d = amax / 127, id = d ? 1.0f / d : 0.0f;
	put_f16(out, d);
	for (int j = 0; j < QK; j++)
		out[2 + j] = (uint8_t)trunc_int8(round_away(x[j] * id));
}

/* Q4_0 and Q5_0: d = -max / 2^(bits-1) with max the signed extreme, so that weight
 * lands on level 0; q = trunc(x / d + 2^(bits-1) + 0.5), at most 2^bits - 1. The low
 * nibbles of weights j and j + 16 share byte j; Q5_0 keeps the fifth bits in a
 * 32-bit mask (bit j for weight j) before them. */
static void q4_q5_0_block(const float *x, uint8_t *out, int bits)
{
	int top = (1 << bits) - 1;
	float mid = (float)(1 << (bits - 1));
	float d = signed_absmax(x, QK) / -mid, id = d ? 1.0f / d : 0.0f;
	put_f16(out, d);
	uint8_t *qs = out + (bits == 5 ? 6 : 2);
	uint32_t qh = 0;
	for (int j = 0; j < QK / 2; j++) {
		/* truncation toward zero is the C conversion ggml relies on; the sums are
		 * positive, so it is floor(x + 0.5), a rounding half up */
		int lo = trunc_int8(x[j] * id + (mid + 0.5f));
		int hi = trunc_int8(x[j + QK / 2] * id + (mid + 0.5f));
		lo = lo < top ? lo : top;
		hi = hi < top ? hi : top;
		qs[j] = (uint8_t)((lo & 15) | (hi & 15) << 4);
		qh |= (uint32_t)(lo >> 4 & 1) << j | (uint32_t)(hi >> 4 & 1) << (j + QK / 2);
	}
	if (bits == 5)
		for (int b = 0; b < 4; b++)
			out[2 + b] = (uint8_t)(qh >> 8 * b);
}

/* Q4_1 and Q5_1: d = (max - min) / (2^bits - 1) and m = min (both f16), q =
 * trunc((x - min) / d + 0.5); Q4_1 caps q at 15 and ors the high nibble in without
 * masking the low one, Q5_1 keeps the fifth bits as Q5_0 does (ggml's code, edge
 * cases included: only non-finite weights reach them). */
static void q4_q5_1_block(const float *x, uint8_t *out, int bits)
{
	float min = 3.40282347e+38f, max = -3.40282347e+38f;
	for (int j = 0; j < QK; j++) {
		if (x[j] < min)
			min = x[j];
		if (x[j] > max)
			max = x[j];
	}
	float d = (max - min) / (float)((1 << bits) - 1), id = d ? 1.0f / d : 0.0f;
	put_f16(out, d);
	put_f16(out + 2, min);
	uint8_t *qs = out + (bits == 5 ? 8 : 4);
	uint32_t qh = 0;
	for (int j = 0; j < QK / 2; j++) {
		int8_t lo = trunc_int8((x[j] - min) * id + 0.5f);
		int8_t hi = trunc_int8((x[j + QK / 2] - min) * id + 0.5f);
		if (bits == 4) {
			uint8_t l4 = (uint8_t)(lo < 15 ? lo : 15),
				h4 = (uint8_t)(hi < 15 ? hi : 15);
			qs[j] = (uint8_t)(l4 | h4 << 4);
			continue;
		}
		uint8_t l5 = (uint8_t)lo, h5 = (uint8_t)hi;
		qs[j] = (uint8_t)((l5 & 15) | (h5 & 15) << 4);
		qh |= (uint32_t)((l5 & 0x10u) >> 4) << j | (uint32_t)((h5 & 0x10u) >> 4)
								   << (j + QK / 2);
	}
	if (bits == 5)
		for (int b = 0; b < 4; b++)
			out[4 + b] = (uint8_t)(qh >> 8 * b);
}

/* ---- K-quants: 256-weight super-blocks ---- */

/* The affine fit of one sub-block of N (16 or 32) weights of Q2_K / Q4_K / Q5_K
 * (ggml's make_qkx2_quants): x ~ scale * L - *neg_min, L in 0..nmax, the min never
 * above zero. The first guess spans [min, max] with nmax steps; then nstep + 1 grids
 * of nmax + rmin + 0.1 * is steps each get a weighted least-squares scale and min, and
 * the one with the least weighted error (squared, or absolute with mad) wins. */
static float fit_min_scale(const float *x, const float *w, int N, int nmax, float rmin, int nstep,
			   bool mad, uint8_t *L, float *neg_min)
{
	const float rdelta = 0.1f;
	float min = x[0], max = x[0], sum_w = w[0], sum_x = sum_w * x[0];
	for (int i = 1; i < N; i++) {
		if (x[i] < min)
			min = x[i];
		if (x[i] > max)
			max = x[i];
		sum_w += w[i];
		sum_x += w[i] * x[i];
	}
	if (min > 0)
		min = 0;
	if (max == min) {
		memset(L, 0, N);
		*neg_min = -min;
		return 0.f;
	}
	float iscale = (float)nmax / (max - min), scale = 1 / iscale, best = 0;
	for (int i = 0; i < N; i++) {
		L[i] = (uint8_t)clamp(round_int(iscale * (x[i] - min)), 0, nmax);
		float diff = scale * L[i] + min - x[i];
		best += w[i] * (mad ? fabsf(diff) : diff * diff);
	}
	for (int is = 0; is <= nstep; is++) {
		uint8_t trial[32];
		float sum_l = 0, sum_l2 = 0, sum_xl = 0;
		iscale = (rmin + rdelta * (float)is + (float)nmax) / (max - min);
		for (int i = 0; i < N; i++) {
			int l = clamp(round_int(iscale * (x[i] - min)), 0, nmax);
			trial[i] = (uint8_t)l;
			sum_l += w[i] * (float)l;
			sum_l2 += w[i] * (float)l * (float)l;
			sum_xl += w[i] * (float)l * x[i];
		}
		float D = sum_w * sum_l2 - sum_l * sum_l;
		if (!(D > 0))
			continue;
		float this_scale = (sum_w * sum_xl - sum_x * sum_l) / D;
		float this_min = (sum_l2 * sum_x - sum_l * sum_xl) / D;
		if (this_min > 0) {
			this_min = 0;
			this_scale = sum_xl / sum_l2;
		}
		float err = 0;
		for (int i = 0; i < N; i++) {
			float diff = this_scale * trial[i] + this_min - x[i];
			err += w[i] * (mad ? fabsf(diff) : diff * diff);
		}
		if (err < best) {
			memcpy(L, trial, N);
			best = err;
			scale = this_scale;
			min = this_min;
		}
	}
	*neg_min = -min;
	return scale;
}

/* 6-bit scales and mins of Q4_K / Q5_K: sub-blocks 0-3 in the low six bits of bytes
 * 0-3 (scales) and 4-7 (mins); sub-blocks 4-7 as nibbles in bytes 8-11 with their top
 * two bits in the spare high bits of bytes 0-7. */
static void pack_scales_mins(const uint8_t ls[8], const uint8_t lm[8], uint8_t s[12])
{
	for (int j = 0; j < 4; j++) {
		s[j] = (uint8_t)(ls[j] | (ls[j + 4] >> 4) << 6);
		s[j + 4] = (uint8_t)(lm[j] | (lm[j + 4] >> 4) << 6);
		s[j + 8] = (uint8_t)((ls[j + 4] & 15) | (lm[j + 4] & 15) << 4);
	}
}

/* A Q4_K / Q5_K super-block but for the packing of its levels: hdr gets d and dmin
 * (f16) and the 12 bytes of scales and mins, L[256] the levels 0..nmax. The
 * sub-block fits are weighted by rms + |x|; their scales and mins are quantized to
 * 6 bits against the largest of each, and the weights are then requantized against
 * the scales as stored (a sub-block whose stored scale is 0 keeps its fitted levels). */
static void kquant_levels(const float *x, int nmax, float rmin, int nstep, uint8_t *hdr,
			  uint8_t L[QK_K])
{
	float scales[8], mins[8], w[32], max_scale = 0, max_min = 0;
	uint8_t ls[8], lm[8];
	for (int j = 0; j < 8; j++) {
		const float *xs = x + 32 * j;
		float sum_x2 = 0;
		for (int l = 0; l < 32; l++)
			sum_x2 += xs[l] * xs[l];
		float av_x = sqrtf(sum_x2 / 32);
		for (int l = 0; l < 32; l++)
			w[l] = av_x + fabsf(xs[l]);
		scales[j] =
			fit_min_scale(xs, w, 32, nmax, rmin, nstep, false, L + 32 * j, &mins[j]);
		if (scales[j] > max_scale)
			max_scale = scales[j];
		if (mins[j] > max_min)
			max_min = mins[j];
	}
	float inv_scale = max_scale > 0 ? 63.f / max_scale : 0.f;
	float inv_min = max_min > 0 ? 63.f / max_min : 0.f;
	for (int j = 0; j < 8; j++) {
		/* ggml stores the rounded int in a uint8_t first: a negative one wraps */
		uint8_t s = (uint8_t)round_int(inv_scale * scales[j]);
		uint8_t m = (uint8_t)round_int(inv_min * mins[j]);
		ls[j] = s < 63 ? s : 63;
		lm[j] = m < 63 ? m : 63;
	}
	pack_scales_mins(ls, lm, hdr + 4);
	put_f16(hdr, max_scale / 63.f);
	put_f16(hdr + 2, max_min / 63.f);
	float d_all = get_f16(hdr), m_all = get_f16(hdr + 2);
	for (int j = 0; j < 8; j++) {
		float d = d_all * ls[j];
		if (!d)
			continue;
		float dm = m_all * lm[j];
		for (int i = 32 * j; i < 32 * j + 32; i++)
			L[i] = (uint8_t)clamp(round_int((x[i] + dm) / d), 0, nmax);
	}
}

/* Q4_K (144 bytes): d, dmin, scales[12], then 4 chunks of 32 bytes, byte l of chunk
 * c holding weight 64c + l low and 64c + 32 + l high. */
static void q4_k_block(const float *x, uint8_t *out)
{
	uint8_t L[QK_K];
	kquant_levels(x, 15, -1.f, 20, out, L);
	uint8_t *qs = out + 16;
	for (int c = 0; c < 4; c++)
		for (int l = 0; l < 32; l++)
			qs[32 * c + l] = (uint8_t)(L[64 * c + l] | L[64 * c + 32 + l] << 4);
}

/* Q5_K (176 bytes): d, dmin, scales[12], qh[32], qs[128]: the low nibbles as in Q4_K,
 * the fifth bit of weights 64c + l and 64c + 32 + l in bits 2c and 2c + 1 of qh[l]. */
static void q5_k_block(const float *x, uint8_t *out)
{
	uint8_t L[QK_K];
	kquant_levels(x, 31, -0.5f, 15, out, L);
	uint8_t *qh = out + 16, *qs = out + 48;
	memset(qh, 0, 32);
	for (int c = 0; c < 4; c++)
		for (int l = 0; l < 32; l++) {
			int lo = L[64 * c + l], hi = L[64 * c + 32 + l];
			qh[l] |= (uint8_t)((lo >> 4) << (2 * c) | (hi >> 4) << (2 * c + 1));
			qs[32 * c + l] = (uint8_t)((lo & 15) | (hi & 15) << 4);
		}
}

/* Levels L[0..256) (0..3) of a Q2_K / Q3_K block into its 64 bytes of qs: each half
 * of 128 packs weights l, l + 32, l + 64, l + 96 into bits 0-1, 2-3, 4-5, 6-7 of byte
 * l. */
static void pack_2bit(const uint8_t *L, uint8_t *qs)
{
	for (int h = 0; h < 2; h++)
		for (int l = 0; l < 32; l++) {
			const uint8_t *q = L + 128 * h + l;
			qs[32 * h + l] = (uint8_t)(q[0] | q[32] << 2 | q[64] << 4 | q[96] << 6);
		}
}

/* Q2_K (84 bytes): scales[16] (low nibble scale, high nibble min, per 16 weights),
 * qs[64], d, dmin. Each 16 gets the affine fit of fit_min_scale (weights |x|,
 * absolute error); scales and mins are quantized to 4 bits against the largest of
 * each, and the weights requantized against them as stored. */
static void q2_k_block(const float *x, uint8_t *out)
{
	uint8_t L[QK_K], *sc = out;
	float w[16], scales[16], mins[16], max_scale = 0, max_min = 0;
	for (int j = 0; j < 16; j++) {
		for (int l = 0; l < 16; l++)
			w[l] = fabsf(x[16 * j + l]);
		scales[j] =
			fit_min_scale(x + 16 * j, w, 16, 3, -0.5f, 15, true, L + 16 * j, &mins[j]);
		if (scales[j] > max_scale)
			max_scale = scales[j];
		if (mins[j] > max_min)
			max_min = mins[j];
	}
	memset(sc, 0, 16);
	if (max_scale > 0) {
		float iscale = 15.f / max_scale;
		for (int j = 0; j < 16; j++)
			sc[j] = (uint8_t)round_int(iscale * scales[j]);
	}
	put_f16(out + 80, max_scale > 0 ? max_scale / 15.f : 0.f);
	if (max_min > 0) {
		float iscale = 15.f / max_min;
		for (int j = 0; j < 16; j++) /* ggml shifts an int that a NaN makes negative */
			sc[j] |= (uint8_t)((unsigned)round_int(iscale * mins[j]) << 4);
	}
	put_f16(out + 82, max_min > 0 ? max_min / 15.f : 0.f);
	float d_all = get_f16(out + 80), m_all = get_f16(out + 82);
	for (int j = 0; j < 16; j++) {
		float d = d_all * (float)(sc[j] & 15);
		if (!d)
			continue;
		float dm = m_all * (float)(sc[j] >> 4);
		for (int i = 16 * j; i < 16 * j + 16; i++)
			L[i] = (uint8_t)clamp(round_int((x[i] + dm) / d), 0, 3);
	}
	pack_2bit(L, out + 16);
}

/* The symmetric fit of 16 weights of Q3_K (ggml's make_q3_quants, nmax 4, weights
 * x^2): levels -4..3 against the extreme weight, then up to 5 passes moving single
 * levels while that improves the weighted fit. L gets level + 4; the scale is the
 * weighted least-squares one. */
static float fit_q3(const float *x, int8_t *L)
{
	float max = signed_absmax(x, 16);
	if (fabsf(max) < TINY_MAX) {
		memset(L, 0, 16);
		return 0.f;
	}
	float iscale = -4 / max, sumlx = 0, suml2 = 0;
	for (int i = 0; i < 16; i++) {
		int l = clamp(round_int(iscale * x[i]), -4, 3);
		L[i] = (int8_t)l;
		float w = x[i] * x[i];
		sumlx += w * x[i] * (float)l;
		suml2 += w * (float)l * (float)l;
	}
	for (int itry = 0; itry < 5; itry++) {
		int changed = 0;
		for (int i = 0; i < 16; i++) {
			float w = x[i] * x[i], slx = sumlx - w * x[i] * (float)L[i];
			if (!(slx > 0))
				continue;
			float sl2 = suml2 - w * (float)L[i] * (float)L[i];
			int l = clamp(round_int(x[i] * sl2 / slx), -4, 3);
			if (l == L[i])
				continue;
			slx += w * x[i] * (float)l;
			sl2 += w * (float)l * (float)l;
			if (sl2 > 0 && slx * slx * suml2 > sumlx * sumlx * sl2) {
				L[i] = (int8_t)l;
				sumlx = slx;
				suml2 = sl2;
				changed++;
			}
		}
		if (!changed)
			break;
	}
	for (int i = 0; i < 16; i++)
		L[i] = (int8_t)(L[i] + 4);
	return suml2 > 0.0f ? sumlx / suml2 : 0.0f;
}

/* The symmetric fits of a super-block's 16 sub-blocks (Q3_K's, Q6_K's) into scales[]
 * and L: the scale of largest magnitude, with its sign (the first on ties), and that
 * magnitude in *amax. */
static float fit_16s(const float *x, float (*fit)(const float *, int8_t *), int8_t L[QK_K],
		     float scales[16], float *amax)
{
	float max_scale = 0;
	*amax = 0;
	for (int j = 0; j < 16; j++) {
		scales[j] = fit(x + 16 * j, L + 16 * j);
		if (fabsf(scales[j]) > *amax) {
			*amax = fabsf(scales[j]);
			max_scale = scales[j];
		}
	}
	return max_scale;
}

/* Q3_K (110 bytes): hmask[32], qs[64], 12 bytes of 6-bit scales, d. Scales are
 * stored as round(-32 * scale / the extreme scale) + 32 (the layout quant.h's
 * quant_q3_k_scales reads); the weights are requantized against them as stored;
 * bit 2 of each level goes to the high-bit mask (bit j / 32 of hmask[j % 32]). */
static void q3_k_block(const float *x, uint8_t *out)
{
	int8_t L[QK_K];
	float scales[16], amax, max_scale = fit_16s(x, fit_q3, L, scales, &amax);
	uint8_t *hm = out, *sc = out + 96;
	memset(sc, 0, 12);
	float iscale = max_scale ? -32.f / max_scale : 0.f;
	for (int j = 0; max_scale && j < 16; j++) {
		int l = clamp(round_int(iscale * scales[j]), -32, 31) + 32;
		if (j < 8)
			sc[j] = (uint8_t)(l & 15);
		else
			sc[j - 8] |= (uint8_t)((l & 15) << 4);
		sc[8 + j % 4] |= (uint8_t)((l >> 4) << (2 * (j / 4)));
	}
	put_f16(out + 108, max_scale ? 1 / iscale : 0.f);
	int8_t s[16];
	quant_q3_k_scales(sc, s);
	float d_all = get_f16(out + 108);
	for (int j = 0; j < 16; j++) {
		float d = d_all * (float)s[j];
		if (!d)
			continue;
		for (int i = 16 * j; i < 16 * j + 16; i++)
			L[i] = (int8_t)(clamp(round_int(x[i] / d), -4, 3) + 4);
	}
	memset(hm, 0, 32);
	uint8_t low[QK_K];
	for (int j = 0; j < QK_K; j++) {
		if (L[j] > 3)
			hm[j % 32] |= (uint8_t)(1 << (j / 32));
		low[j] = (uint8_t)(L[j] > 3 ? L[j] - 4 : L[j]);
	}
	pack_2bit(low, out + 32);
}

enum { SYM_N = 16, SYM_NMAX = 32 };

/* One grid of fit_symmetric: each weight's level at iscale, and the x^2-weighted
 * sums of x * l and l * l. */
static void symmetric_levels(const float *x, float iscale, int8_t *L, float *sumlx,
			     float *suml2)
{
	float lx = 0, l2 = 0;
	for (int i = 0; i < SYM_N; i++) {
		int l = clamp(round_int(iscale * x[i]), -SYM_NMAX, SYM_NMAX - 1);
		L[i] = (int8_t)(l + SYM_NMAX);
		float w = x[i] * x[i];
		lx += w * x[i] * (float)l;
		l2 += w * (float)l * (float)l;
	}
	*sumlx = lx;
	*suml2 = l2;
}

/* The symmetric fit of one 16-weight sub-block of Q6_K (ggml's make_qx_quants with
 * nmax 32 and weights x^2): levels L in 0..63 stand for L - 32; the scale is the
 * weighted least-squares one of the best of 19 grids (32 + 0.1 * is steps for the
 * extreme weight, is in -9..9) by the same criterion ggml uses. */
static float fit_symmetric(const float *x, int8_t *L)
{
	float max = signed_absmax(x, SYM_N);
	if (fabsf(max) < TINY_MAX) {
		memset(L, 0, SYM_N);
		return 0.f;
	}
	float sumlx, suml2;
	symmetric_levels(x, -(float)SYM_NMAX / max, L, &sumlx, &suml2);
	float scale = suml2 ? sumlx / suml2 : 0.0f, best = scale * sumlx;
	for (int is = -9; is <= 9; is++) {
		if (is == 0)
			continue;
		int8_t trial[SYM_N];
		symmetric_levels(x, -((float)SYM_NMAX + 0.1f * (float)is) / max, trial, &sumlx,
				 &suml2);
		if (suml2 > 0 && sumlx * sumlx > best * suml2) {
			memcpy(L, trial, SYM_N);
			scale = sumlx / suml2;
			best = scale * sumlx;
		}
	}
	return scale;
}

/* Q6_K (210 bytes): ql[128], qh[64], 16 int8 scales, d. Sub-block scales are stored
 * as round(-128 * scale / the extreme scale), so that one becomes -128 (in range:
 * the other end is capped at 127), and the weights are requantized against the
 * scales as stored. Each 128-weight half packs weights l, l+32, l+64, l+96: low
 * nibbles of the first and third in ql[l], of the second and fourth in ql[l+32],
 * the four top 2-bit pairs in qh[l]. */
static void q6_k_block(const float *x, uint8_t *out)
{
	int8_t L[QK_K];
	float scales[16], max_abs, max_scale = fit_16s(x, fit_symmetric, L, scales, &max_abs);
	if (max_abs < TINY_MAX) { /* all (nearly) zero: an all-zero block */
		memset(out, 0, 210);
		return;
	}
	uint8_t *ql = out, *qh = out + 128, *sc = out + 192;
	float iscale = -128.f / max_scale;
	put_f16(out + 208, 1 / iscale);
	float d_all = get_f16(out + 208);
	for (int b = 0; b < 16; b++) {
		int s = round_int(iscale * scales[b]);
		sc[b] = (uint8_t)(int8_t)(s < 127 ? s : 127);
	}
	for (int b = 0; b < 16; b++) {
		float d = d_all * (float)(int8_t)sc[b];
		if (!d)
			continue;
		for (int i = 16 * b; i < 16 * b + 16; i++)
			L[i] = (int8_t)(clamp(round_int(x[i] / d), -32, 31) + 32);
	}
	for (int h = 0; h < 2; h++, ql += 64, qh += 32)
		for (int l = 0; l < 32; l++) {
			const int8_t *q = L + 128 * h + l;
			ql[l] = (uint8_t)((q[0] & 15) | (q[64] & 15) << 4);
			ql[l + 32] = (uint8_t)((q[32] & 15) | (q[96] & 15) << 4);
			qh[l] = (uint8_t)(q[0] >> 4 | (q[32] >> 4) << 2 | (q[64] >> 4) << 4 |
					  (q[96] >> 4) << 6);
		}
}

/* ---- rows ---- */

void quant_quantize_row(enum eng_dtype t, const float *src, void *dst, int64_t n)
{
	uint8_t *out = dst;
	if (t == ENG_F32) {
		memcpy(out, src, (size_t)n * 4);
		return;
	}
	if (t == ENG_F16 || t == ENG_BF16) {
		for (int64_t i = 0; i < n; i++) {
			uint16_t h = t == ENG_F16 ? quant_f32_to_f16(src[i]) : f32_to_bf16(src[i]);
			out[2 * i] = (uint8_t)h;
			out[2 * i + 1] = (uint8_t)(h >> 8);
		}
		return;
	}
	int64_t bw = eng_dtype_block(t), nb = n / bw;
	size_t bb = eng_dtype_block_bytes(t);
	for (int64_t b = 0; b < nb; b++, src += bw, out += bb)
		switch (t) {
		case ENG_Q8_0: q8_0_block(src, out); break;
		case ENG_Q4_0: q4_q5_0_block(src, out, 4); break;
		case ENG_Q5_0: q4_q5_0_block(src, out, 5); break;
		case ENG_Q4_K: q4_k_block(src, out); break;
		case ENG_Q5_K: q5_k_block(src, out); break;
		case ENG_Q6_K: q6_k_block(src, out); break;
		case ENG_Q4_1: q4_q5_1_block(src, out, 4); break;
		case ENG_Q5_1: q4_q5_1_block(src, out, 5); break;
		case ENG_Q2_K: q2_k_block(src, out); break;
		case ENG_Q3_K: q3_k_block(src, out); break;
		default: return;
		}
}

/* ---- whole tensors, by threads ---- */

/* Rows per work item: small enough that threads end together, large enough that
 * claiming them costs nothing. */
#define ROWS_PER_ITEM 16

struct job {
	const struct eng_tensor *src;
	enum eng_dtype type;
	int64_t cols, r0, n;
	uint8_t *dst;
	atomic_long next;  /* the next item */
	atomic_int failed; /* a thread had no memory for its row */
	atomic_long bad;   /* the first row (of n) that is not finite, or n */
};

static bool all_finite(const float *x, int64_t n)
{
	for (int64_t i = 0; i < n; i++)
		if (!isfinite(x[i]))
			return false;
	return true;
}

/* Row i of the job into row (source) and dst, then read back into out: false when
 * either holds a NaN or an infinity (a weight of 1e7 overflows Q8_0's fp16 scale). */
static bool convert_row(struct job *j, int64_t i, float *row, float *out)
{
	size_t sb = eng_row_bytes(j->src->dtype, j->cols), db = eng_row_bytes(j->type, j->cols);
	quant_dequantize_row(j->src->dtype,
			     (const uint8_t *)j->src->data + (size_t)(j->r0 + i) * sb, row,
			     j->cols);
	if (!all_finite(row, j->cols))
		return false;
	quant_quantize_row(j->type, row, j->dst + (size_t)i * db, j->cols);
	quant_dequantize_row(j->type, j->dst + (size_t)i * db, out, j->cols);
	return all_finite(out, j->cols);
}

static void *worker(void *arg)
{
	struct job *j = arg;
	float *row = malloc((size_t)j->cols * 2 * sizeof *row);
	if (!row) {
		atomic_store(&j->failed, 1);
		return NULL;
	}
	for (long it; (it = atomic_fetch_add(&j->next, 1)) * ROWS_PER_ITEM < j->n;) {
		int64_t i0 = it * ROWS_PER_ITEM, i1 = i0 + ROWS_PER_ITEM;
		for (int64_t i = i0; i < i1 && i < j->n && i < atomic_load(&j->bad); i++)
			if (!convert_row(j, i, row, row + j->cols)) {
				long b =
					atomic_load(&j->bad); /* keep the first, whichever thread */
				while (i < b && !atomic_compare_exchange_weak(&j->bad, &b, (long)i))
					;
			}
	}
	free(row);
	return NULL;
}

/* Why row r of t did not convert to type: its own weights, or what they became. */
static int bad_row(const struct eng_tensor *t, int64_t cols, int64_t r, enum eng_dtype type)
{
	float *row = malloc((size_t)cols * sizeof *row);
	if (!row)
		return err_set("row %lld is not finite", (long long)r);
	size_t rb = eng_row_bytes(t->dtype, cols);
	quant_dequantize_row(t->dtype, (const uint8_t *)t->data + (size_t)r * rb, row, cols);
	bool nan = false, inf = false;
	double amax = 0;
	for (int64_t i = 0; i < cols; i++)
		if (isnan(row[i]))
			nan = true;
		else if (isinf(row[i]))
			inf = true;
		else if (fabs(row[i]) > amax)
			amax = fabs(row[i]);
	free(row);
	if (nan || inf)
		return err_set("row %lld holds a weight that is %s", (long long)r,
			       nan ? "NaN" : "infinite");
	if (eng_dtype_quantized(type))
		return err_set("row %lld: weights up to %g overflow %s's fp16 block scale",
			       (long long)r, amax, eng_dtype_name(type));
	return err_set("row %lld: weights up to %g do not fit %s", (long long)r, amax,
		       eng_dtype_name(type));
}

int quant_convert_rows(const struct eng_tensor *t, int64_t cols, int64_t r0, int64_t n,
		       enum eng_dtype type, uint8_t *dst, int threads)
{
	struct job j = {.src = t, .type = type, .cols = cols, .r0 = r0, .n = n, .dst = dst};
	atomic_init(&j.next, 0);
	atomic_init(&j.failed, 0);
	atomic_init(&j.bad, (long)n);
	if (threads < 1)
		threads = (int)sysconf(_SC_NPROCESSORS_ONLN);
	int64_t items = (n + ROWS_PER_ITEM - 1) / ROWS_PER_ITEM;
	pthread_t tid[64];
	int started = 0;
	for (; started < threads - 1 && started < 64 && started + 1 < items; started++)
		if (proc_thread_create(&tid[started], worker, &j))
			break;
	worker(&j);
	for (int i = 0; i < started; i++)
		pthread_join(tid[i], NULL);
	if (atomic_load(&j.failed))
		return err_set("out of memory converting rows");
	return atomic_load(&j.bad) < n ? bad_row(t, cols, r0 + atomic_load(&j.bad), type) : 0;
}
