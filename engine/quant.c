/* quant.c — dequantization of ggml's weight formats, one row at a time, exactly as
 * ggml's dequantize_row_* functions define it. Each block's products are written in
 * ggml's order ((d * scale) * q - (dmin * min)) and the project compiles with
 * -std=c11, which keeps GCC from contracting them into fused multiply-adds: the
 * results are the reference's bit for bit (tests/unit/test_quant.c checks it
 * against gguf-py's dequantization). */
#include "engine/quant.h"

#include <math.h>
#include <stdbool.h>
#include <string.h>

float quant_f16_to_f32(uint16_t h)
{
	int e = h >> 10 & 31, m = h & 1023;
	float v = e == 0    ? ldexpf((float)m, -24)
		  : e == 31 ? (m ? NAN : INFINITY)
			    : ldexpf((float)(m | 1024), e - 25);
	return h >> 15 ? -v : v;
}

static float half_at(const uint8_t *p)
{
	uint16_t h;
	memcpy(&h, p, 2);
	return quant_f16_to_f32(h);
}

static float bf16_at(const uint8_t *p)
{
	uint16_t h;
	memcpy(&h, p, 2);
	uint32_t u = (uint32_t)h << 16;
	float f;
	memcpy(&f, &u, 4);
	return f;
}

/* Q8_0: d (f16), 32 x int8. */
static void dequant_q8_0(const uint8_t *b, float *y)
{
	float d = half_at(b);
	for (int j = 0; j < 32; j++)
		y[j] = (float)(int8_t)b[2 + j] * d;
}

/* Q4_0: d (f16), 16 bytes: element j in the low nibble of byte j, element j + 16 in
 * its high nibble; values are nibble - 8. */
static void dequant_q4_0(const uint8_t *b, float *y)
{
	float d = half_at(b);
	const uint8_t *qs = b + 2;
	for (int j = 0; j < 16; j++) {
		y[j] = (float)((qs[j] & 15) - 8) * d;
		y[j + 16] = (float)((qs[j] >> 4) - 8) * d;
	}
}

/* Q5_0: d (f16), 32 high bits (bit j of a little-endian uint32 for element j), then
 * the low nibbles as in Q4_0; values are the 5-bit number - 16. */
static void dequant_q5_0(const uint8_t *b, float *y)
{
	float d = half_at(b);
	uint32_t qh =
		(uint32_t)b[2] | (uint32_t)b[3] << 8 | (uint32_t)b[4] << 16 | (uint32_t)b[5] << 24;
	const uint8_t *qs = b + 6;
	for (int j = 0; j < 16; j++) {
		int lo = (qs[j] & 15) | (int)(qh >> j << 4 & 16);
		int hi = (qs[j] >> 4) | (int)(qh >> (j + 12) & 16);
		y[j] = (float)(lo - 16) * d;
		y[j + 16] = (float)(hi - 16) * d;
	}
}

/* Q4_1 (five == false): d, m (f16), then the nibbles as in Q4_0; Q5_1: d, m, the
 * high bits and nibbles as in Q5_0. Values are unsigned: weight = q * d + m. */
static void dequant_q4_q5_1(const uint8_t *b, float *y, bool five)
{
	float d = half_at(b), m = half_at(b + 2);
	uint32_t qh = five ? (uint32_t)b[4] | (uint32_t)b[5] << 8 | (uint32_t)b[6] << 16 |
				      (uint32_t)b[7] << 24
			   : 0;
	const uint8_t *qs = b + (five ? 8 : 4);
	for (int j = 0; j < 16; j++) {
		int lo = (qs[j] & 15) | (int)(qh >> j << 4 & 16);
		int hi = (qs[j] >> 4) | (int)(qh >> (j + 12) & 16);
		y[j] = (float)lo * d + m;
		y[j + 16] = (float)hi * d + m;
	}
}

/* Q2_K: 16 bytes of scales (low nibble: scale, high nibble: min, one per 16 weights),
 * 64 bytes of 2-bit values, d and dmin (f16). Each half of 128 weights reads 32
 * bytes four times, 2 bits further each time: weight 32s + l of the half is bits
 * 2s..2s+1 of byte l. Weight = d * scale * q - dmin * min. */
static void dequant_q2_k(const uint8_t *b, float *y)
{
	const uint8_t *sc = b, *qs = b + 16;
	float d = half_at(b + 80), dmin = half_at(b + 82);
	for (int g = 0; g < 16; g++) {
		float dl = d * (float)(sc[g] & 15), ml = dmin * (float)(sc[g] >> 4);
		const uint8_t *q = qs + 32 * (g / 8) + 16 * (g % 2);
		int shift = 2 * (g % 8 / 2);
		for (int l = 0; l < 16; l++)
			y[16 * g + l] = dl * (float)(q[l] >> shift & 3) - ml;
	}
}

const int8_t quant_iq4_levels[16] = {-127, -104, -83, -65, -49, -35, -22, -10,
				     1,    13,   25,  38,  53,  69,  89,  113};

/* IQ4_NL: d (f16), 16 bytes of indices laid out as Q4_0's nibbles; weight = d * the
 * level an index picks. IQ4_XS (a super-block of 8 x 32): d, 16 bits of high scale
 * bits (2 per 32), 4 bytes of low scale nibbles, 128 bytes of indices; sub-block j's
 * weights are d * (scale - 32) * level. */
static void dequant_iq4(const uint8_t *qs, float d, float *y)
{
	for (int j = 0; j < 16; j++) {
		y[j] = d * (float)quant_iq4_levels[qs[j] & 15];
		y[j + 16] = d * (float)quant_iq4_levels[qs[j] >> 4];
	}
}

static void dequant_iq4_xs(const uint8_t *b, float *y)
{
	float d = half_at(b);
	for (int j = 0; j < 8; j++)
		dequant_iq4(b + 8 + 16 * j, d * (float)quant_iq4_xs_scale(b, j), y + 32 * j);
}

void quant_q3_k_scales(const uint8_t *s, int8_t out[16])
{
	uint32_t w[4];
	quant_q3_k_scale_words(s, w);
	uint8_t u[16];
	memcpy(u, w, 16);
	for (int j = 0; j < 16; j++)
		out[j] = (int8_t)(u[j] - 32);
}

/* Q3_K: 32 bytes of high bits, 64 of 2-bit values (laid out as Q2_K's), 12 bytes of
 * 6-bit scales, d (f16). Weight 32s + l of half h has its third bit in bit 4h + s
 * of hmask[l]; value = low bits - (that bit ? 0 : 4), weight = d * scale * value. */
static void dequant_q3_k(const uint8_t *b, float *y)
{
	const uint8_t *hm = b, *qs = b + 32;
	int8_t sc[16];
	quant_q3_k_scales(b + 96, sc);
	float d = half_at(b + 108);
	for (int g = 0; g < 16; g++) {
		float dl = d * (float)sc[g];
		int h = g / 8, s = g % 8 / 2, off = 16 * (g % 2);
		const uint8_t *q = qs + 32 * h + off;
		for (int l = 0; l < 16; l++) {
			int v = (q[l] >> (2 * s) & 3) - (hm[off + l] >> (4 * h + s) & 1 ? 0 : 4);
			y[16 * g + l] = dl * (float)v;
		}
	}
}

/* The 6-bit scale and min of sub-block j (of 8) of a Q4_K/Q5_K super-block, packed
 * in 12 bytes: sub-blocks 0-3 in the low 6 bits of bytes 0-3 (scales) and 4-7
 * (mins); sub-blocks 4-7 in the nibbles of bytes 8-11 with their top two bits in
 * the spare high bits of bytes 0-7. */
void quant_k4_scale_min(int j, const uint8_t *q, int *sc, int *m)
{
	if (j < 4) {
		*sc = q[j] & 63;
		*m = q[j + 4] & 63;
	} else {
		*sc = (q[j + 4] & 15) | (q[j - 4] >> 6) << 4;
		*m = (q[j + 4] >> 4) | (q[j] >> 6) << 4;
	}
}

/* Q4_K: d, dmin (f16), 12 bytes of scales and mins, 128 bytes of nibbles. Each 64
 * weights share 32 bytes: the low nibbles are the first sub-block of 32, the high
 * nibbles the second. Weight = d * scale * q - dmin * min. Q5_K (qh != NULL) adds
 * a fifth bit: bit 2i of qh[l] for element l of sub-block 2i, bit 2i + 1 for 2i + 1. */
static void dequant_k4(const uint8_t *b, const uint8_t *qh, const uint8_t *qs, float *y)
{
	float d = half_at(b), dmin = half_at(b + 2);
	const uint8_t *scales = b + 4;
	for (int j = 0; j < 4; j++) {
		int sc, m;
		quant_k4_scale_min(2 * j, scales, &sc, &m);
		float d1 = d * (float)sc, m1 = dmin * (float)m;
		quant_k4_scale_min(2 * j + 1, scales, &sc, &m);
		float d2 = d * (float)sc, m2 = dmin * (float)m;
		for (int l = 0; l < 32; l++) {
			int hi1 = qh && qh[l] >> (2 * j) & 1 ? 16 : 0;
			int hi2 = qh && qh[l] >> (2 * j + 1) & 1 ? 16 : 0;
			y[l] = d1 * (float)((qs[l] & 15) + hi1) - m1;
			y[l + 32] = d2 * (float)((qs[l] >> 4) + hi2) - m2;
		}
		qs += 32;
		y += 64;
	}
}

/* Q6_K: 128 bytes of low nibbles, 64 of high 2-bit pairs, 16 int8 scales (one per
 * 16 weights), d (f16). Each half of 128 weights uses 64 low-nibble bytes and 32
 * high bytes: element l (l < 32) of its four quarters takes the low or high nibble
 * of ql[l] or ql[l + 32] and bits 0-1, 2-3, 4-5, 6-7 of qh[l]; value - 32. */
static void dequant_q6_k(const uint8_t *b, float *y)
{
	const uint8_t *ql = b, *qh = b + 128;
	const int8_t *sc = (const int8_t *)(b + 192);
	float d = half_at(b + 208);
	for (int half = 0; half < 2; half++) {
		for (int l = 0; l < 32; l++) {
			int is = l / 16;
			int q1 = ((ql[l] & 15) | (qh[l] & 3) << 4) - 32;
			int q2 = ((ql[l + 32] & 15) | (qh[l] >> 2 & 3) << 4) - 32;
			int q3 = ((ql[l] >> 4) | (qh[l] >> 4 & 3) << 4) - 32;
			int q4 = ((ql[l + 32] >> 4) | (qh[l] >> 6 & 3) << 4) - 32;
			y[l] = d * (float)sc[is] * (float)q1;
			y[l + 32] = d * (float)sc[is + 2] * (float)q2;
			y[l + 64] = d * (float)sc[is + 4] * (float)q3;
			y[l + 96] = d * (float)sc[is + 6] * (float)q4;
		}
		y += 128;
		ql += 64;
		qh += 32;
		sc += 8;
	}
}

void quant_dequantize_row(enum eng_dtype t, const void *src, float *dst, int64_t n)
{
	const uint8_t *p = src;
	switch (t) { /* the float types: one loop each, not a switch per weight */
	case ENG_F32: memcpy(dst, p, (size_t)n * 4); return;
	case ENG_F16:
		for (int64_t i = 0; i < n; i++)
			dst[i] = half_at(p + 2 * i);
		return;
	case ENG_BF16:
		for (int64_t i = 0; i < n; i++)
			dst[i] = bf16_at(p + 2 * i);
		return;
	default: break;
	}
	size_t bb = eng_dtype_block_bytes(t);
	int blk = eng_dtype_block(t);
	for (int64_t i = 0; i < n; i += blk, p += bb, dst += blk) {
		switch (t) {
		case ENG_Q8_0: dequant_q8_0(p, dst); break;
		case ENG_Q4_0: dequant_q4_0(p, dst); break;
		case ENG_Q5_0: dequant_q5_0(p, dst); break;
		case ENG_Q4_K: dequant_k4(p, NULL, p + 16, dst); break;
		case ENG_Q5_K: dequant_k4(p, p + 16, p + 48, dst); break;
		case ENG_Q6_K: dequant_q6_k(p, dst); break;
		case ENG_Q4_1: dequant_q4_q5_1(p, dst, false); break;
		case ENG_Q5_1: dequant_q4_q5_1(p, dst, true); break;
		case ENG_Q2_K: dequant_q2_k(p, dst); break;
		case ENG_Q3_K: dequant_q3_k(p, dst); break;
		case ENG_IQ4_NL: dequant_iq4(p + 2, half_at(p), dst); break;
		case ENG_IQ4_XS: dequant_iq4_xs(p, dst); break;
		default: return;
		}
	}
}
