/* avx2.h — what the three AVX2 kernel files share (internal to engine/cpu/): the
 * target attributes, small vector helpers, and each quantized block type's quants
 * unpacked in registers to one byte per weight, with its scales. Every function is
 * inlined into its caller; those that need F16C say so (TQ). */
#ifndef QWENCHAT_CPU_AVX2_H
#define QWENCHAT_CPU_AVX2_H

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include <immintrin.h>

#include "engine/cpu/tiling.h"
#include "engine/quant.h"

#define T256 __attribute__((target("avx2,fma")))
/* The quantized kernels read f16 scales: the AVX2 table is chosen on AVX2, FMA and
 * F16C (cpu_isa_supported). */
#define TQ __attribute__((target("avx2,fma,f16c")))

INL T256 float hsum(__m256 v)
{
	__m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
	s = _mm_add_ps(s, _mm_movehl_ps(s, s));
	s = _mm_add_ss(s, _mm_movehdup_ps(s));
	return _mm_cvtss_f32(s);
}

/* 16 bf16 values (8 pairs in 32-bit lanes) as fp32: the even-indexed ones (shifted
 * into the high half) and the odd-indexed ones (the low half masked off). */
INL T256 __m256 bf16_even(__m256i raw)
{
	return _mm256_castsi256_ps(_mm256_slli_epi32(raw, 16));
}

INL T256 __m256 bf16_odd(__m256i raw)
{
	return _mm256_castsi256_ps(_mm256_and_si256(raw, _mm256_set1_epi32((int)0xffff0000u)));
}

INL T256 int hsum_i32(__m256i v)
{
	__m128i s = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
	s = _mm_add_epi32(s, _mm_unpackhi_epi64(s, s));
	s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 1));
	return _mm_cvtsi128_si32(s);
}

/* 16 floats in the AVX2 kernels' packed order (kernels.h: the 8 even-indexed, then
 * the 8 odd-indexed) at dst. */
INL T256 void store_packed16(float *dst, __m256 a, __m256 b)
{
	__m256 e = _mm256_shuffle_ps(a, b, _MM_SHUFFLE(2, 0, 2, 0)); /* a0 a2 b0 b2 | a4 a6 b4 b6 */
	__m256 o = _mm256_shuffle_ps(a, b, _MM_SHUFFLE(3, 1, 3, 1));
	_mm256_storeu_ps(dst, _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(e), 0xd8)));
	_mm256_storeu_ps(dst + 8,
			 _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(o), 0xd8)));
}

INL TQ float half(const uint8_t *p)
{
	uint16_t h;
	memcpy(&h, p, 2);
	return _cvtsh_ss(h);
}

/* Eight 32-bit sums of u[i] * s[i] over the 32 bytes (u unsigned, s signed). With
 * u <= 128 and |s| <= 127 no 16-bit pair sum saturates. */
INL T256 __m256i dot_u8s8(__m256i u, __m256i s)
{
	return _mm256_madd_epi16(_mm256_maddubs_epi16(u, s), _mm256_set1_epi16(1));
}

INL T256 __m256i load32(const void *p)
{
	return _mm256_loadu_si256((const __m256i *)p);
}

/* 16 bytes of nibbles to 32 bytes: the low nibbles, then the high ones. */
INL T256 __m256i nibbles(const uint8_t *p)
{
	__m128i raw = _mm_loadu_si128((const __m128i *)p);
	__m256i both = _mm256_set_m128i(_mm_srli_epi16(raw, 4), raw);
	return _mm256_and_si256(both, _mm256_set1_epi8(15));
}

/* Byte i is 0xff where bit i of `bits` is set: each byte of the word is spread over
 * eight bytes, which keep only "their" bit clear in the or-mask. */
INL T256 __m256i bits_to_bytes(uint32_t bits)
{
	const __m256i spread =
		_mm256_set_epi64x(0x0303030303030303, 0x0202020202020202, 0x0101010101010101, 0);
	__m256i v = _mm256_shuffle_epi8(_mm256_set1_epi32((int)bits), spread);
	v = _mm256_or_si256(v, _mm256_set1_epi64x(0x7fbfdfeff7fbfdfe));
	return _mm256_cmpeq_epi8(v, _mm256_set1_epi64x(-1));
}

/* Sub-blocks 2j and 2j + 1 of a Q4_K/Q5_K block as 32 unsigned bytes each: the low
 * and high nibbles of qs[32j, 32j + 32), for Q5_K with bits 2j and 2j + 1 of each
 * byte of hb (the block's qh) as their fifth bit. */
INL T256 void k4_quants(const uint8_t *qs, __m256i hb, int j, const bool five, __m256i *lo,
		      __m256i *hi)
{
	const __m256i m4 = _mm256_set1_epi8(15), one = _mm256_set1_epi8(1);
	__m256i raw = load32(qs + 32 * j);
	*lo = _mm256_and_si256(raw, m4);
	*hi = _mm256_and_si256(_mm256_srli_epi16(raw, 4), m4);
	if (five) {
		__m256i b0 = _mm256_and_si256(_mm256_srli_epi16(hb, 2 * j), one);
		__m256i b1 = _mm256_and_si256(_mm256_srli_epi16(hb, 2 * j + 1), one);
		*lo = _mm256_or_si256(*lo, _mm256_slli_epi16(b0, 4));
		*hi = _mm256_or_si256(*hi, _mm256_slli_epi16(b1, 4));
	}
}

/* The 32 quants of a Q4_0 or Q5_0 block as unsigned bytes (0..15, 0..31). */
INL T256 __m256i q4_q5_quants(const uint8_t *blk, const bool five)
{
	if (!five)
		return nibbles(blk + 2);
	uint32_t qh;
	memcpy(&qh, blk + 2, 4);
	return _mm256_or_si256(nibbles(blk + 6),
			       _mm256_and_si256(bits_to_bytes(qh), _mm256_set1_epi8(16)));
}

/* The 32 quants of activation block j (0..7) of a Q2_K or Q3_K block as unsigned
 * bytes: bits 2(j % 4) and 2(j % 4) + 1 of qs[32(j / 4) .. + 32), and for Q3_K (hm:
 * its 32 bytes of high bits) bit j of each byte of hm as bit 2, so that u - 4 is
 * the value. The 16-bit shifts carry bits across bytes; the masks drop them. */
INL T256 __m256i k23_quants(const uint8_t *qs, __m256i hm, int j, const bool three)
{
	__m256i raw = load32(qs + 32 * (j / 4));
	__m256i u = _mm256_and_si256(_mm256_srli_epi16(raw, 2 * (j % 4)), _mm256_set1_epi8(3));
	if (three) {
		__m256i hb = j >= 2 ? _mm256_srli_epi16(hm, j - 2) : _mm256_slli_epi16(hm, 2 - j);
		u = _mm256_or_si256(u, _mm256_and_si256(hb, _mm256_set1_epi8(4)));
	}
	return u;
}

/* 16 bytes of IQ4_NL / IQ4_XS indices (laid out as Q4_0's nibbles) as the 32 signed
 * levels they pick: the 16-entry table is one vpshufb. */
INL T256 __m256i iq4_levels(const uint8_t *qs)
{
	const __m256i table =
		_mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)quant_iq4_levels));
	return _mm256_shuffle_epi8(table, nibbles(qs));
}

/* The 16 scales of a Q3_K block minus 32, as int16, from its 12 packed bytes at p.
 * Inline, where the call to the portable unpacking was a third of a Q3_K row's time. */
INL T256 __m256i q3_k_scales16(const uint8_t *p)
{
	uint32_t w[4];
	quant_q3_k_scale_words(p, w);
	__m128i v = _mm_set_epi32((int)w[3], (int)w[2], (int)w[1], (int)w[0]);
	return _mm256_cvtepi8_epi16(_mm_sub_epi8(v, _mm_set1_epi8(32)));
}

/* The eight 6-bit scales and mins of a Q4_K/Q5_K block as two vectors of int32:
 * bytes 0-3 hold scales 0-3 (low 6 bits) and the top bits of scales 4-7; bytes 4-7
 * the same for the mins; bytes 8-11 the low nibbles of scales 4-7 and, above them,
 * of mins 4-7. Four masked words instead of eight calls of the scalar unpacking. */
INL T256 void k4_scales(const uint8_t *p, __m256i *sc, __m256i *mn)
{
	uint32_t u0, u1, u2; /* three loads, not a copy through the stack */
	memcpy(&u0, p, 4);
	memcpy(&u1, p + 4, 4);
	memcpy(&u2, p + 8, 4);
	uint32_t sc_lo = u0 & 0x3f3f3f3f, mn_lo = u1 & 0x3f3f3f3f;
	uint32_t sc_hi = (u2 & 0x0f0f0f0f) | (u0 >> 6 & 0x03030303) << 4;
	uint32_t mn_hi = (u2 >> 4 & 0x0f0f0f0f) | (u1 >> 6 & 0x03030303) << 4;
	*sc = _mm256_cvtepu8_epi32(_mm_set_epi32(0, 0, (int)sc_hi, (int)sc_lo));
	*mn = _mm256_cvtepu8_epi32(_mm_set_epi32(0, 0, (int)mn_hi, (int)mn_lo));
}

/* The 128 quants of half h (0, 1) of a Q6_K block at w as four vectors of 32
 * unsigned bytes (0..63): ql's low nibbles of bytes [64h, 64h + 32), of the next 32,
 * then their high nibbles, each with two bits of qh as bits 4 and 5. The two bits
 * come into place by one shift of the 16-bit lanes and one mask (the bits that cross
 * into the next byte are masked off): one instruction fewer per 32 weights than
 * shifting them down, masking and shifting them up. */
INL T256 void q6_half(const uint8_t *w, int h, __m256i q[4])
{
	const __m256i m4 = _mm256_set1_epi8(15), m30 = _mm256_set1_epi8(0x30);
	__m256i l0 = load32(w + 64 * h), l1 = load32(w + 64 * h + 32);
	__m256i hb = load32(w + 128 + 32 * h);
	q[0] = _mm256_or_si256(_mm256_and_si256(l0, m4),
			       _mm256_and_si256(_mm256_slli_epi16(hb, 4), m30));
	q[1] = _mm256_or_si256(_mm256_and_si256(l1, m4),
			       _mm256_and_si256(_mm256_slli_epi16(hb, 2), m30));
	q[2] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(l0, 4), m4),
			       _mm256_and_si256(hb, m30));
	q[3] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(l1, 4), m4),
			       _mm256_and_si256(_mm256_srli_epi16(hb, 2), m30));
}

#endif
