/* kernels_quant_avx2.c — decode's matrix-vector product over quantized weights with
 * AVX2: each block's quants are unpacked in registers to one byte per weight and
 * multiplied with the int8 activations by vpmaddubsw (unsigned x signed bytes, pairs
 * summed to 16 bits) and vpmaddwd (pairs to 32 bits), then scaled in fp32 by the
 * weight block's and the activation block's scales. Integer products keep the
 * instruction count per weight low enough that a core streams the weights at memory
 * speed; widening each weight to fp32 for an FMA instead costs three instructions per
 * 8 weights. The sums equal kernels_quant.c's exactly up to the order of the fp32
 * additions. Every function carries __attribute__((target)). */
#include <string.h>

#if defined(__x86_64__)
#include <immintrin.h>

#include "engine/cpu/kernels.h"
#include "engine/cpu/avx2.h"
#include "engine/quant.h"

/* cpu_quantize_act with 8 lanes: the same float operations in the same order per
 * element (no FMA), vcvtps2dq rounding to nearest even as the portable code does, so
 * the result is the same bit for bit. The portable loop showed in a quantized
 * prefill's profile. */
TQ void cpu_quantize_act_avx2(const float *x, int K, struct cpu_xq *xq)
{
	const __m256 sign = _mm256_set1_ps(-0.0f);
	const __m256i order = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7);
	xq->f = x;
	for (int b = 0; b < K / 32; b++) {
		__m256 a[4], m = _mm256_setzero_ps();
		for (int i = 0; i < 4; i++) {
			a[i] = _mm256_loadu_ps(x + 32 * b + 8 * i);
			m = _mm256_max_ps(_mm256_andnot_ps(sign, a[i]), m); /* NaN: m, as in C */
		}
		__m128 h = _mm_max_ps(_mm256_castps256_ps128(m), _mm256_extractf128_ps(m, 1));
		h = _mm_max_ps(h, _mm_movehl_ps(h, h));
		h = _mm_max_ss(h, _mm_movehdup_ps(h));
		float d = _mm_cvtss_f32(h) / 127.0f, id = d != 0 ? 1.0f / d : 0;
		__m256i q[4];
		for (int i = 0; i < 4; i++)
			q[i] = _mm256_cvtps_epi32(_mm256_mul_ps(a[i], _mm256_set1_ps(id)));
		/* packs work within 128-bit halves: dwords 0,4,1,5,... restore the order */
		__m256i p = _mm256_packs_epi16(_mm256_packs_epi32(q[0], q[1]),
					       _mm256_packs_epi32(q[2], q[3]));
		_mm256_storeu_si256((__m256i *)(xq->q + 32 * b), _mm256_permutevar8x32_epi32(p, order));
		int s0 = hsum_i32(_mm256_add_epi32(q[0], q[1]));
		int s1 = hsum_i32(_mm256_add_epi32(q[2], q[3]));
		xq->d[b] = d;
		xq->ds[b] = d * (float)(s0 + s1);
		xq->s16[2 * b] = (int16_t)s0;
		xq->s16[2 * b + 1] = (int16_t)s1;
	}
}

/* Software prefetch this many bytes ahead of the block being read: a row is one
 * stream that the hardware prefetcher loses at every 4 KB page (tiling.h says the
 * same of bf16 decode); one prefetch per cache line of the block. */
#define QAHEAD 1536

INL TQ void prefetch_block(const uint8_t *w, int bytes)
{
	for (int o = 0; o < bytes; o += 64)
		_mm_prefetch((const char *)w + QAHEAD + o, _MM_HINT_T0);
}

/* The fp32 accumulation is a chain of FMAs, each waiting ~4 cycles for the one
 * before: one accumulator capped a row at one block per 4 cycles; each kernel keeps
 * four chains going. */
#define CHAINS 4

INL TQ float hsum4(const __m256 *a)
{
	return hsum(_mm256_add_ps(_mm256_add_ps(a[0], a[1]), _mm256_add_ps(a[2], a[3])));
}

/* Lane i of v in every lane. */
INL TQ __m256 lane(__m256 v, int i)
{
	return _mm256_permutevar8x32_ps(v, _mm256_set1_epi32(i));
}

/* The decode kernels keep a vector of eight scales in memory and give each block its
 * own by a broadcast load: a load port is free where the lane permute above (vpermps)
 * competes with the products for the vector pipes. */
INL TQ __m256 bcast(const float *v, int i)
{
	return _mm256_broadcast_ss(v + i);
}

/* The f16 scales at the start of 8 consecutive blocks `stride` bytes apart, as one
 * vector: each block then broadcasts its lane instead of converting its scale alone,
 * one conversion for eight blocks. */
INL TQ __m256 halves8(const uint8_t *w, size_t stride)
{
	uint16_t h[8]; /* gathered into a register: a copy through the stack stalls its load */
	for (int i = 0; i < 8; i++)
		memcpy(&h[i], w + i * stride, 2);
	__m128i v = _mm_set_epi16((short)h[7], (short)h[6], (short)h[5], (short)h[4],
				  (short)h[3], (short)h[2], (short)h[1], (short)h[0]);
	return _mm256_cvtph_ps(v);
}

static TQ float row_q8_0(const uint8_t *w, const struct cpu_xq *x, int nb)
{
	__m256 acc[CHAINS] = {_mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps(),
			      _mm256_setzero_ps()};
	float dd[8] __attribute__((aligned(32)));
	int b = 0;
	for (; b + 8 <= nb; b += 8) {
		_mm256_store_ps(dd, _mm256_mul_ps(halves8(w + 34 * b, 34), _mm256_loadu_ps(x->d + b)));
#pragma GCC unroll 8
		for (int i = 0; i < 8; i++) {
			const uint8_t *blk = w + 34 * (b + i);
			if (i % 2 == 0)
				prefetch_block(blk, 64);
			/* signed x signed as |w| x (x with w's sign) */
			__m256i q = load32(blk + 2), v = load32(x->q + 32 * (b + i));
			__m256i p = dot_u8s8(_mm256_sign_epi8(q, q), _mm256_sign_epi8(v, q));
			acc[i % CHAINS] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(p), bcast(dd, i),
							  acc[i % CHAINS]);
		}
	}
	for (; b < nb; b++) {
		const uint8_t *blk = w + 34 * b;
		__m256i q = load32(blk + 2), v = load32(x->q + 32 * b);
		__m256i p = dot_u8s8(_mm256_sign_epi8(q, q), _mm256_sign_epi8(v, q));
		acc[0] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(p), _mm256_set1_ps(half(blk) * x->d[b]),
					 acc[0]);
	}
	return hsum4(acc);
}

/* Q4_0 and Q5_0: unsigned quants u, weight = d * (u - off): the products with the
 * unsigned quants, minus off * d * (the activations' scaled block sums), both with the
 * scales of 8 blocks as one vector. Q4_1 and Q5_1 (one): weight = d * u + m, the
 * quants 2 bytes further on and m * (the scaled block sums) added instead. */
INL TQ float row_q4_q5(const uint8_t *w, const struct cpu_xq *x, int nb, const bool five,
		       const bool one)
{
	const size_t bb = one ? (five ? 24 : 20) : (five ? 22 : 18), at = one ? 2 : 0;
	__m256 acc[CHAINS] = {_mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps(),
			      _mm256_setzero_ps()};
	__m256 offv = _mm256_setzero_ps();
	float off = 0, dd[8] __attribute__((aligned(32)));
	int b = 0;
	for (; b + 8 <= nb; b += 8) {
		__m256 dw = halves8(w + bb * b, bb);
		_mm256_store_ps(dd, _mm256_mul_ps(dw, _mm256_loadu_ps(x->d + b)));
		offv = _mm256_fmadd_ps(one ? halves8(w + bb * b + 2, bb) : dw,
				       _mm256_loadu_ps(x->ds + b), offv);
#pragma GCC unroll 8
		for (int i = 0; i < 8; i++) {
			const uint8_t *blk = w + bb * (b + i);
			if (i % 3 == 0)
				prefetch_block(blk, 64);
			__m256i p =
				dot_u8s8(q4_q5_quants(blk + at, five), load32(x->q + 32 * (b + i)));
			acc[i % CHAINS] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(p), bcast(dd, i),
							  acc[i % CHAINS]);
		}
	}
	for (; b < nb; b++) {
		const uint8_t *blk = w + bb * b;
		__m256i p = dot_u8s8(q4_q5_quants(blk + at, five), load32(x->q + 32 * b));
		float d = half(blk);
		acc[0] =
			_mm256_fmadd_ps(_mm256_cvtepi32_ps(p), _mm256_set1_ps(d * x->d[b]), acc[0]);
		off += (one ? half(blk + 2) : d) * x->ds[b];
	}
	return hsum4(acc) + (one ? 1.0f : five ? -16.0f : -8.0f) * (hsum(offv) + off);
}

static TQ float row_q4_0(const uint8_t *w, const struct cpu_xq *x, int nb)
{
	return row_q4_q5(w, x, nb, false, false);
}

static TQ float row_q5_0(const uint8_t *w, const struct cpu_xq *x, int nb)
{
	return row_q4_q5(w, x, nb, true, false);
}

static TQ float row_q4_1(const uint8_t *w, const struct cpu_xq *x, int nb)
{
	return row_q4_q5(w, x, nb, false, true);
}

static TQ float row_q5_1(const uint8_t *w, const struct cpu_xq *x, int nb)
{
	return row_q4_q5(w, x, nb, true, true);
}

/* Q4_K and Q5_K: eight sub-blocks of 32, each with a 6-bit scale and min. The
 * scales times d times the activation scales are one vector per super-block, and so
 * are the mins' contributions (dmin * min * the activations' scaled sums). */
INL TQ float row_k4(const uint8_t *w, const struct cpu_xq *x, int nb, const bool five)
{
	size_t bb = five ? 176 : 144;
	__m256 acc[CHAINS] = {_mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps(),
			      _mm256_setzero_ps()};
	__m256 offv = _mm256_setzero_ps();
	float scale[8] __attribute__((aligned(32)));
	for (int i = 0; i < nb; i++, w += bb) {
		prefetch_block(w, (int)bb);
		__m256i sc, mn;
		k4_scales(w + 4, &sc, &mn);
		_mm256_store_ps(scale, _mm256_mul_ps(
			_mm256_cvtepi32_ps(sc),
			_mm256_mul_ps(_mm256_set1_ps(half(w)), _mm256_loadu_ps(x->d + 8 * i))));
		offv = _mm256_fmadd_ps(
			_mm256_mul_ps(_mm256_cvtepi32_ps(mn), _mm256_set1_ps(half(w + 2))),
			_mm256_loadu_ps(x->ds + 8 * i), offv);
		const uint8_t *qs = w + (five ? 48 : 16);
		__m256i hb = five ? load32(w + 16) : _mm256_setzero_si256();
		const int8_t *xq = x->q + 256 * i;
#pragma GCC unroll 4
		for (int j = 0; j < 4; j++) {
			__m256i lo, hi;
			k4_quants(qs, hb, j, five, &lo, &hi);
			__m256i p0 = dot_u8s8(lo, load32(xq + 64 * j));
			__m256i p1 = dot_u8s8(hi, load32(xq + 64 * j + 32));
			/* two FMAs in a row on one chain rather than a multiply, an add and
			 * an FMA: the vector pipes, not the chain's latency, bound this loop */
			acc[j] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(p0), bcast(scale, 2 * j), acc[j]);
			acc[j] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(p1), bcast(scale, 2 * j + 1),
						 acc[j]);
		}
	}
	return hsum4(acc) - hsum(offv);
}

/* The 16-bit scales of Q6_K block k (of 4) of a half: its first 16 weights' scale
 * (element 2k of sch) in the low 128 bits, the next 16's (2k + 1) in the high. */
INL TQ __m256i q6_scale_pair(__m256i sch, int k)
{
	short a = (short)((4 * k + 1) << 8 | 4 * k), b = (short)((4 * k + 3) << 8 | (4 * k + 2));
	return _mm256_shuffle_epi8(sch, _mm256_set_m128i(_mm_set1_epi16(b), _mm_set1_epi16(a)));
}

/* Q6_K: per half of 128, four quarters of 32 (low or high nibbles of ql[0..32) or
 * ql[32..64), two bits of qh each), one int8 scale per 16: vpmaddwd by the scales
 * sums each 16 already weighted. The -32 offset is the scales times the 16-sums of
 * x, one vpmaddwd per super-block. */
static TQ float row_q4_k(const uint8_t *w, const struct cpu_xq *x, int nb)
{
	return row_k4(w, x, nb, false);
}

static TQ float row_q5_k(const uint8_t *w, const struct cpu_xq *x, int nb)
{
	return row_k4(w, x, nb, true);
}

static TQ float row_q6_k(const uint8_t *w, const struct cpu_xq *x, int nb)
{
	__m256 acc[CHAINS] = {_mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps(),
			      _mm256_setzero_ps()};
	__m256 offv = _mm256_setzero_ps();
	float ddv[8] __attribute__((aligned(32)));
	for (int i = 0; i < nb; i++, w += 210) {
		prefetch_block(w, 210);
		__m256 dd =
			_mm256_mul_ps(_mm256_set1_ps(half(w + 208)), _mm256_loadu_ps(x->d + 8 * i));
		_mm256_store_ps(ddv, dd);
		__m256i sc16 = _mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i *)(w + 192)));
		__m256i o = _mm256_madd_epi16(sc16, load32(x->s16 + 16 * i));
		offv = _mm256_fmadd_ps(_mm256_cvtepi32_ps(o), dd, offv);
		const int8_t *xq = x->q + 256 * i;
#pragma GCC unroll 2
		for (int h = 0; h < 2; h++) {
			__m256i q[4];
			q6_half(w, h, q);
			__m256i sch =
				_mm256_broadcastsi128_si256(h ? _mm256_extracti128_si256(sc16, 1)
							      : _mm256_castsi256_si128(sc16));
#pragma GCC unroll 4
			for (int k = 0; k < 4; k++) {
				__m256i p16 =
					_mm256_maddubs_epi16(q[k], load32(xq + 128 * h + 32 * k));
				__m256 p = _mm256_cvtepi32_ps(
					_mm256_madd_epi16(p16, q6_scale_pair(sch, k)));
				acc[k] = _mm256_fmadd_ps(p, bcast(ddv, 4 * h + k), acc[k]);
			}
		}
	}
	return hsum4(acc) - 32 * hsum(offv);
}

/* Q2_K and Q3_K: 16 scales of 16 weights as Q6_K has (vpmaddwd applies them), the
 * quants 0..3 (Q2_K) or 0..7 (Q3_K, value u - 4). Q2_K's mins (dmin * min per 16)
 * and Q3_K's offset (4 times the scales) meet the 16-sums of x in one vpmaddwd per
 * block. */
INL TQ float row_k23(const uint8_t *w, const struct cpu_xq *x, int nb, const bool three)
{
	const size_t bb = three ? 110 : 84;
	__m256 acc[CHAINS] = {_mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps(),
			      _mm256_setzero_ps()};
	__m256 offv = _mm256_setzero_ps();
	float ddv[8] __attribute__((aligned(32)));
	for (int i = 0; i < nb; i++, w += bb) {
		prefetch_block(w, (int)bb);
		__m256 xd = _mm256_loadu_ps(x->d + 8 * i);
		__m256 dd = _mm256_mul_ps(_mm256_set1_ps(half(w + (three ? 108 : 80))), xd);
		_mm256_store_ps(ddv, dd);
		__m256i sc16, o, hm = three ? load32(w) : _mm256_setzero_si256();
		__m256i s16 = load32(x->s16 + 16 * i);
		if (three) {
			sc16 = q3_k_scales16(w + 96);
			o = _mm256_madd_epi16(sc16, s16);
			offv = _mm256_fmadd_ps(_mm256_cvtepi32_ps(o), dd, offv);
		} else {
			__m128i raw = _mm_loadu_si128((const __m128i *)w), m4 = _mm_set1_epi8(15);
			sc16 = _mm256_cvtepu8_epi16(_mm_and_si128(raw, m4));
			o = _mm256_madd_epi16(
				_mm256_cvtepu8_epi16(_mm_and_si128(_mm_srli_epi16(raw, 4), m4)),
				s16);
			offv = _mm256_fmadd_ps(_mm256_cvtepi32_ps(o),
					       _mm256_mul_ps(_mm256_set1_ps(half(w + 82)), xd),
					       offv);
		}
		const uint8_t *qs = w + (three ? 32 : 16);
		const int8_t *xq = x->q + 256 * i;
#pragma GCC unroll 2
		for (int h = 0; h < 2; h++) {
			__m256i sch =
				_mm256_broadcastsi128_si256(h ? _mm256_extracti128_si256(sc16, 1)
							      : _mm256_castsi256_si128(sc16));
#pragma GCC unroll 4
			for (int k = 0; k < 4; k++) {
				__m256i u = k23_quants(qs, hm, 4 * h + k, three);
				__m256i p16 =
					_mm256_maddubs_epi16(u, load32(xq + 128 * h + 32 * k));
				__m256 p = _mm256_cvtepi32_ps(
					_mm256_madd_epi16(p16, q6_scale_pair(sch, k)));
				acc[k] = _mm256_fmadd_ps(p, bcast(ddv, 4 * h + k), acc[k]);
			}
		}
	}
	return hsum4(acc) - (three ? 4 : 1) * hsum(offv);
}

static TQ float row_q2_k(const uint8_t *w, const struct cpu_xq *x, int nb)
{
	return row_k23(w, x, nb, false);
}

static TQ float row_q3_k(const uint8_t *w, const struct cpu_xq *x, int nb)
{
	return row_k23(w, x, nb, true);
}

/* IQ4_NL and IQ4_XS: the levels looked up 32 at a time, then signed x signed as
 * Q8_0's: |level| times (x with the level's sign). */
INL TQ __m256 iq4_dot(const uint8_t *qs, const int8_t *xq, float scale, __m256 acc)
{
	__m256i q = iq4_levels(qs), v = load32(xq);
	__m256i p = dot_u8s8(_mm256_sign_epi8(q, q), _mm256_sign_epi8(v, q));
	return _mm256_fmadd_ps(_mm256_cvtepi32_ps(p), _mm256_set1_ps(scale), acc);
}

static TQ float row_iq4_nl(const uint8_t *w, const struct cpu_xq *x, int nb)
{
	__m256 acc[CHAINS] = {_mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps(),
			      _mm256_setzero_ps()};
	float dd[8] __attribute__((aligned(32)));
	int b = 0;
	for (; b + 8 <= nb; b += 8) {
		_mm256_store_ps(dd,
				_mm256_mul_ps(halves8(w + 18 * b, 18), _mm256_loadu_ps(x->d + b)));
#pragma GCC unroll 8
		for (int i = 0; i < 8; i++) {
			const uint8_t *blk = w + 18 * (b + i);
			if (i % 3 == 0)
				prefetch_block(blk, 64);
			acc[i % CHAINS] =
				iq4_dot(blk + 2, x->q + 32 * (b + i), dd[i], acc[i % CHAINS]);
		}
	}
	for (; b < nb; b++)
		acc[0] = iq4_dot(w + 18 * b + 2, x->q + 32 * b, half(w + 18 * b) * x->d[b], acc[0]);
	return hsum4(acc);
}

/* IQ4_XS: the eight 6-bit scales of a block as one vector (low nibbles of the 32-bit
 * word at w + 4, 2-bit pairs of the 16 bits at w + 2), times d and the activation
 * scales: one conversion per 256 weights, not eight scalar unpackings. */
static TQ float row_iq4_xs(const uint8_t *w, const struct cpu_xq *x, int nb)
{
	__m256 acc[CHAINS] = {_mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps(),
			      _mm256_setzero_ps()};
	const __m256i lo_shift = _mm256_setr_epi32(0, 4, 8, 12, 16, 20, 24, 28);
	const __m256i hi_shift = _mm256_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14);
	float dd[8] __attribute__((aligned(32)));
	for (int i = 0; i < nb; i++, w += 136) {
		prefetch_block(w, 136);
		uint32_t sl;
		uint16_t sh;
		memcpy(&sl, w + 4, 4);
		memcpy(&sh, w + 2, 2);
		__m256i lo =
			_mm256_and_si256(_mm256_srlv_epi32(_mm256_set1_epi32((int)sl), lo_shift),
					 _mm256_set1_epi32(15));
		__m256i hi = _mm256_and_si256(_mm256_srlv_epi32(_mm256_set1_epi32(sh), hi_shift),
					      _mm256_set1_epi32(3));
		__m256i ls = _mm256_sub_epi32(_mm256_or_si256(lo, _mm256_slli_epi32(hi, 4)),
					      _mm256_set1_epi32(32));
		_mm256_store_ps(dd, _mm256_mul_ps(_mm256_mul_ps(_mm256_set1_ps(half(w)),
								_mm256_cvtepi32_ps(ls)),
						  _mm256_loadu_ps(x->d + 8 * i)));
#pragma GCC unroll 8
		for (int j = 0; j < 8; j++)
			acc[j % CHAINS] = iq4_dot(w + 8 + 16 * j, x->q + 256 * i + 32 * j, dd[j],
						  acc[j % CHAINS]);
	}
	return hsum4(acc);
}

static TQ float row_float(enum eng_dtype t, const uint8_t *w, const float *x, int K)
{
	__m256 a0 = _mm256_setzero_ps(), a1 = _mm256_setzero_ps();
	int k = 0;
	if (t == ENG_F16)
		for (; k + 16 <= K; k += 16) {
			__m256i h = load32(w + 2 * (size_t)k);
			a0 = _mm256_fmadd_ps(_mm256_cvtph_ps(_mm256_castsi256_si128(h)),
					     _mm256_loadu_ps(x + k), a0);
			a1 = _mm256_fmadd_ps(_mm256_cvtph_ps(_mm256_extracti128_si256(h, 1)),
					     _mm256_loadu_ps(x + k + 8), a1);
		}
	else
		for (; k + 16 <= K; k += 16) {
			const float *f = (const float *)(const void *)(w + 4 * (size_t)k);
			a0 = _mm256_fmadd_ps(_mm256_loadu_ps(f), _mm256_loadu_ps(x + k), a0);
			a1 = _mm256_fmadd_ps(_mm256_loadu_ps(f + 8), _mm256_loadu_ps(x + k + 8),
					     a1);
		}
	float s = hsum(_mm256_add_ps(a0, a1));
	for (; k < K; k++) {
		uint16_t h;
		float v;
		if (t == ENG_F16) {
			memcpy(&h, w + 2 * (size_t)k, 2);
			v = _cvtsh_ss(h);
		} else {
			memcpy(&v, w + 4 * (size_t)k, 4);
		}
		s += v * x[k];
	}
	return s;
}

/* ---- prefill: rows dequantized to bf16 for the panel kernels ---- */

/* 16 floats to bf16, rounded to nearest even, in order. */
INL TQ __m256i to_bf16x16(__m256 a, __m256 b)
{
	const __m256i bias = _mm256_set1_epi32(0x7fff), one = _mm256_set1_epi32(1);
	__m256i ia = _mm256_castps_si256(a), ib = _mm256_castps_si256(b);
	ia = _mm256_add_epi32(
		ia, _mm256_add_epi32(bias, _mm256_and_si256(_mm256_srli_epi32(ia, 16), one)));
	ib = _mm256_add_epi32(
		ib, _mm256_add_epi32(bias, _mm256_and_si256(_mm256_srli_epi32(ib, 16), one)));
	__m256i p = _mm256_packus_epi32(_mm256_srli_epi32(ia, 16), _mm256_srli_epi32(ib, 16));
	return _mm256_permute4x64_epi64(p, 0xd8); /* packus works within 128-bit halves */
}

/* Weights [i, i + 32) = q * scale - min (q: 32 int8; the first 16 take sa, ma, the
 * rest sb, mb), at dst as bf16 in natural order, or (f32) as fp32 in packed order.
 * The fp32 rows are the exact path's: a product and a difference, each rounded, as
 * ggml's dequantization computes them (the same bits); the bf16 ones fuse the two. */
INL TQ void emit32(void *dst, size_t i, const bool f32, __m256i q, __m256 sa, __m256 sb, __m256 ma,
		   __m256 mb)
{
	__m128i lo = _mm256_castsi256_si128(q), hi = _mm256_extracti128_si256(q, 1);
	__m256 f0 = _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(lo));
	__m256 f1 = _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_srli_si128(lo, 8)));
	__m256 f2 = _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(hi));
	__m256 f3 = _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_srli_si128(hi, 8)));
	if (f32) {
		f0 = _mm256_sub_ps(_mm256_mul_ps(f0, sa), ma);
		f1 = _mm256_sub_ps(_mm256_mul_ps(f1, sa), ma);
		f2 = _mm256_sub_ps(_mm256_mul_ps(f2, sb), mb);
		f3 = _mm256_sub_ps(_mm256_mul_ps(f3, sb), mb);
	} else {
		f0 = _mm256_fmsub_ps(f0, sa, ma);
		f1 = _mm256_fmsub_ps(f1, sa, ma);
		f2 = _mm256_fmsub_ps(f2, sb, mb);
		f3 = _mm256_fmsub_ps(f3, sb, mb);
	}
	if (f32) {
		store_packed16((float *)dst + i, f0, f1);
		store_packed16((float *)dst + i + 16, f2, f3);
	} else {
		uint16_t *b = (uint16_t *)dst + i;
		_mm256_storeu_si256((__m256i *)b, to_bf16x16(f0, f1));
		_mm256_storeu_si256((__m256i *)(b + 16), to_bf16x16(f2, f3));
	}
}

INL TQ void dequant_k4_to(const uint8_t *w, void *dst, int nb, const bool five, const bool f32)
{
	for (int i = 0; i < nb; i++, w += five ? 176 : 144) {
		__m256i sc, mn;
		k4_scales(w + 4, &sc, &mn);
		__m256 scale = _mm256_mul_ps(_mm256_cvtepi32_ps(sc), _mm256_set1_ps(half(w)));
		__m256 mins = _mm256_mul_ps(_mm256_cvtepi32_ps(mn), _mm256_set1_ps(half(w + 2)));
		const uint8_t *qs = w + (five ? 48 : 16);
		__m256i hb = five ? load32(w + 16) : _mm256_setzero_si256();
		for (int j = 0; j < 4; j++) {
			__m256i lo, hi;
			k4_quants(qs, hb, j, five, &lo, &hi);
			__m256 s0 = lane(scale, 2 * j), s1 = lane(scale, 2 * j + 1);
			__m256 n0 = lane(mins, 2 * j), n1 = lane(mins, 2 * j + 1);
			size_t at = (size_t)256 * i + 64 * j;
			emit32(dst, at, f32, lo, s0, s0, n0, n0);
			emit32(dst, at + 32, f32, hi, s1, s1, n1, n1);
		}
	}
}

INL TQ void dequant_q6_k_to(const uint8_t *w, void *dst, int nb, const bool f32)
{
	const __m256i c32 = _mm256_set1_epi8(32);
	const __m256 zero = _mm256_setzero_ps();
	for (int i = 0; i < nb; i++, w += 210) {
		const int8_t *sc = (const int8_t *)(w + 192);
		float d = half(w + 208);
		for (int h = 0; h < 2; h++) {
			__m256i u[4];
			q6_half(w, h, u);
			for (int k = 0; k < 4; k++) {
				__m256i q = _mm256_sub_epi8(u[k], c32);
				__m256 sa = _mm256_set1_ps(d * (float)sc[8 * h + 2 * k]);
				__m256 sb = _mm256_set1_ps(d * (float)sc[8 * h + 2 * k + 1]);
				emit32(dst, (size_t)256 * i + 128 * h + 32 * k, f32, q, sa, sb,
				       zero, zero);
			}
		}
	}
}

/* Q8_0, Q4_0, Q5_0: signed quants times one scale. */
INL TQ void dequant_32_to(enum eng_dtype t, const uint8_t *w, void *dst, int nb, const bool f32)
{
	const __m256 zero = _mm256_setzero_ps();
	size_t bb = eng_dtype_block_bytes(t);
	for (int b = 0; b < nb; b++, w += bb) {
		__m256i q;
		if (t == ENG_Q8_0) {
			q = load32(w + 2);
		} else if (t == ENG_Q4_0) {
			q = _mm256_sub_epi8(nibbles(w + 2), _mm256_set1_epi8(8));
		} else {
			uint32_t qh;
			memcpy(&qh, w + 2, 4);
			q = _mm256_or_si256(nibbles(w + 6), _mm256_and_si256(bits_to_bytes(qh),
									     _mm256_set1_epi8(16)));
			q = _mm256_sub_epi8(q, _mm256_set1_epi8(16));
		}
		__m256 d = _mm256_set1_ps(half(w));
		emit32(dst, (size_t)32 * b, f32, q, d, d, zero, zero);
	}
}

/* Q4_1, Q5_1: unsigned quants times the scale, plus the min. */
INL TQ void dequant_32_min_to(const uint8_t *w, void *dst, int nb, const bool five, const bool f32)
{
	const size_t bb = five ? 24 : 20;
	for (int b = 0; b < nb; b++, w += bb) {
		__m256 d = _mm256_set1_ps(half(w)), m = _mm256_set1_ps(-half(w + 2));
		emit32(dst, (size_t)32 * b, f32, q4_q5_quants(w + 2, five), d, d, m, m);
	}
}

/* Q2_K (d * scale * q - dmin * min per 16) and Q3_K (d * scale * (u - 4)). */
INL TQ void dequant_k23_to(const uint8_t *w, void *dst, int nb, const bool three, const bool f32)
{
	const size_t bb = three ? 110 : 84;
	float sc[16] __attribute__((aligned(32))), mn[16] __attribute__((aligned(32)));
	for (int i = 0; i < nb; i++, w += bb) {
		float d0 = half(w + (three ? 108 : 80));
		__m256 d = _mm256_set1_ps(d0);
		__m256i hm = three ? load32(w) : _mm256_setzero_si256();
		if (three) {
			__m256i s16 = q3_k_scales16(w + 96);
			__m256i s32l = _mm256_cvtepi16_epi32(_mm256_castsi256_si128(s16));
			__m256i s32h = _mm256_cvtepi16_epi32(_mm256_extracti128_si256(s16, 1));
			_mm256_store_ps(sc, _mm256_mul_ps(d, _mm256_cvtepi32_ps(s32l)));
			_mm256_store_ps(sc + 8, _mm256_mul_ps(d, _mm256_cvtepi32_ps(s32h)));
			memset(mn, 0, sizeof mn);
		} else {
			float dmin = half(w + 82);
			for (int g = 0; g < 16; g++) { /* as quant.c: d * scale, dmin * min */
				sc[g] = d0 * (float)(w[g] & 15);
				mn[g] = dmin * (float)(w[g] >> 4);
			}
		}
		for (int j = 0; j < 8; j++) {
			__m256i q = k23_quants(w + (three ? 32 : 16), hm, j, three);
			if (three)
				q = _mm256_sub_epi8(q, _mm256_set1_epi8(4));
			emit32(dst, (size_t)256 * i + 32 * j, f32, q, bcast(sc, 2 * j),
			       bcast(sc, 2 * j + 1), bcast(mn, 2 * j), bcast(mn, 2 * j + 1));
		}
	}
}

/* IQ4_NL and IQ4_XS: the signed levels times the (sub-)block's scale. */
INL TQ void dequant_iq4_to(const uint8_t *w, void *dst, int nb, const bool xs, const bool f32)
{
	const __m256 zero = _mm256_setzero_ps();
	for (int b = 0; b < (xs ? 8 * nb : nb); b++) {
		const uint8_t *blk = xs ? w + (size_t)(b / 8) * 136 : w + (size_t)b * 18;
		const uint8_t *qs = xs ? blk + 8 + 16 * (b % 8) : blk + 2;
		float d = xs ? half(blk) * (float)quant_iq4_xs_scale(blk, b % 8) : half(blk);
		__m256 s = _mm256_set1_ps(d);
		emit32(dst, (size_t)32 * b, f32, iq4_levels(qs), s, s, zero, zero);
	}
}

INL TQ bool dequant_to(enum eng_dtype t, const void *w, void *dst, int K, const bool f32)
{
	int nb = K / eng_dtype_block(t);
	switch (t) {
	case ENG_Q8_0:
	case ENG_Q4_0:
	case ENG_Q5_0: dequant_32_to(t, w, dst, nb, f32); return true;
	case ENG_Q4_K: dequant_k4_to(w, dst, nb, false, f32); return true;
	case ENG_Q5_K: dequant_k4_to(w, dst, nb, true, f32); return true;
	case ENG_Q6_K: dequant_q6_k_to(w, dst, nb, f32); return true;
	case ENG_Q4_1: dequant_32_min_to(w, dst, nb, false, f32); return true;
	case ENG_Q5_1: dequant_32_min_to(w, dst, nb, true, f32); return true;
	case ENG_Q2_K: dequant_k23_to(w, dst, nb, false, f32); return true;
	case ENG_Q3_K: dequant_k23_to(w, dst, nb, true, f32); return true;
	case ENG_IQ4_NL: dequant_iq4_to(w, dst, nb, false, f32); return true;
	case ENG_IQ4_XS: dequant_iq4_to(w, dst, nb, true, f32); return true;
	default: return false;
	}
}

TQ void cpu_dequant_bf16_avx2(enum eng_dtype t, const void *w, uint16_t *dst, int K)
{
	if (!dequant_to(t, w, dst, K, false))
		cpu_dequant_bf16_c(t, w, dst, K);
}

TQ void cpu_dequant_f32p_avx2(enum eng_dtype t, const void *w, float *dst, int K)
{
	if (!dequant_to(t, w, dst, K, true))
		cpu_dequant_f32p(t, w, dst, K, 16);
}

/* The same in the AVX-512 tables' order (pack 32): a block of 32 packed by 16 is the
 * even and odd values of its two halves, [e0 o0 e1 o1] in groups of 8, and packed by
 * 32 it is [e0 e1 o0 o1]. The block-quantized types (K a multiple of 32) are
 * dequantized as above and their middle groups swapped; F16 and F32 rows, of any K,
 * go through the portable loop. */
TQ void cpu_dequant_f32p32_avx2(enum eng_dtype t, const void *w, float *dst, int K)
{
	if (K % 32 || !dequant_to(t, w, dst, K, true)) {
		cpu_dequant_f32p(t, w, dst, K, 32);
		return;
	}
	for (int i = 0; i < K; i += 32) {
		__m256 o0 = _mm256_loadu_ps(dst + i + 8), e1 = _mm256_loadu_ps(dst + i + 16);
		_mm256_storeu_ps(dst + i + 8, e1);
		_mm256_storeu_ps(dst + i + 16, o0);
	}
}

/* One step of mkf over 8 values from k (with `tail`, those of mask m: the row's end). */
INL TQ void mkf_step(__m256 (*a)[3], const float *xp, int ldx, const float *w, int K, int k,
		     const bool tail, __m256i m, const int R, const int T)
{
	__m256 x[3];
#pragma GCC unroll 3
	for (int t = 0; t < T; t++)
		x[t] = tail ? _mm256_maskload_ps(xp + (size_t)t * ldx + k, m)
			    : _mm256_loadu_ps(xp + (size_t)t * ldx + k);
#pragma GCC unroll 4
	for (int r = 0; r < R; r++) {
		__m256 wv = tail ? _mm256_maskload_ps(w + (size_t)r * K + k, m)
				 : _mm256_loadu_ps(w + (size_t)r * K + k);
#pragma GCC unroll 3
		for (int t = 0; t < T; t++)
			a[r][t] = _mm256_fmadd_ps(wv, x[t], a[r][t]);
	}
}

/* out[t*ldo + r] = dot(xp row t, w row r) for 4 rows (R) by T tokens, both packed
 * alike: fp32 weights need no widening, so each step is T x R FMAs on 4 + T loads
 * (the bf16 kernels spend a shift and an and per weight vector besides). F32 and F16
 * weights may have any K; the last K % 8 values are read under a mask. */
INL TQ void mkf(float *out, int ldo, const float *xp, int ldx, const float *w, int K, const int R,
		const int T)
{
	__m256 a[4][3];
#pragma GCC unroll 4
	for (int r = 0; r < R; r++)
#pragma GCC unroll 3
		for (int t = 0; t < T; t++)
			a[r][t] = _mm256_setzero_ps();
	int k = 0;
	for (; k + 8 <= K; k += 8)
		mkf_step(a, xp, ldx, w, K, k, false, _mm256_setzero_si256(), R, T);
	if (k < K) {
		const __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
		mkf_step(a, xp, ldx, w, K, k, true,
			 _mm256_cmpgt_epi32(_mm256_set1_epi32(K - k), lane), R, T);
	}
#pragma GCC unroll 4
	for (int r = 0; r < R; r++)
#pragma GCC unroll 3
		for (int t = 0; t < T; t++)
			out[(size_t)t * ldo + r] = hsum(a[r][t]);
}

#define MKF(R, T)                                                                                \
	static TQ void mkf_##R##_##T(float *o, int ldo, const float *x, int ldx, const float *w, \
				     int K)                                                      \
	{                                                                                        \
		mkf(o, ldo, x, ldx, w, K, R, T);                                                 \
	}
MKF(4, 1)
MKF(4, 2)
MKF(4, 3)
MKF(1, 1)
MKF(1, 2)
MKF(1, 3)

/* The products with `rows` (<= 64) fp32 rows in packed order. */
TQ void cpu_matmul_f32w_avx2(float *out, int ldo, const float *xp, int ldx, int n, const float *w,
			     int K, int rows, bool acc)
{
	typedef void fn(float *, int, const float *, int, const float *, int);
	static fn *const r4[3] = {mkf_4_1, mkf_4_2, mkf_4_3}, *const r1[3] = {mkf_1_1, mkf_1_2,
									      mkf_1_3};
	float tmp[3 * 64];
	for (int t = 0; t < n; t += 3) {
		int T = n - t < 3 ? n - t : 3, r = 0;
		const float *x = xp + (size_t)t * ldx;
		for (; r + 4 <= rows; r += 4)
			r4[T - 1](tmp + r, 64, x, ldx, w + (size_t)r * K, K);
		for (; r < rows; r++)
			r1[T - 1](tmp + r, 64, x, ldx, w + (size_t)r * K, K);
		for (int i = 0; i < T; i++)
			for (int j = 0; j < rows; j++) {
				float *o = out + (size_t)(t + i) * ldo + j;
				*o = acc ? *o + tmp[64 * i + j] : tmp[64 * i + j];
			}
	}
}

TQ void cpu_qmatvec_avx2(enum eng_dtype t, float *out, const void *w, const struct cpu_xq *x, int K,
			 int m0, int m1, bool acc)
{
	if (t != ENG_F16 && t != ENG_F32 && !eng_dtype_quantized(t)) {
		cpu_qmatvec_c(t, out, w, x, K, m0, m1, acc); /* bf16: the matmuls' business */
		return;
	}
	size_t rb = eng_row_bytes(t, K);
	int nb = K / eng_dtype_block(t);
	for (int m = m0; m < m1; m++) {
		const uint8_t *r = (const uint8_t *)w + (size_t)m * rb;
		float v;
		switch (t) {
		case ENG_Q8_0: v = row_q8_0(r, x, nb); break;
		case ENG_Q4_0: v = row_q4_0(r, x, nb); break;
		case ENG_Q5_0: v = row_q5_0(r, x, nb); break;
		case ENG_Q4_K: v = row_q4_k(r, x, nb); break;
		case ENG_Q5_K: v = row_q5_k(r, x, nb); break;
		case ENG_Q6_K: v = row_q6_k(r, x, nb); break;
		case ENG_Q4_1: v = row_q4_1(r, x, nb); break;
		case ENG_Q5_1: v = row_q5_1(r, x, nb); break;
		case ENG_Q2_K: v = row_q2_k(r, x, nb); break;
		case ENG_Q3_K: v = row_q3_k(r, x, nb); break;
		case ENG_IQ4_NL: v = row_iq4_nl(r, x, nb); break;
		case ENG_IQ4_XS: v = row_iq4_xs(r, x, nb); break;
		default: v = row_float(t, r, x->f, K); break;
		}
		out[m] = acc ? out[m] + v : v;
	}
}
#endif /* __x86_64__ */
