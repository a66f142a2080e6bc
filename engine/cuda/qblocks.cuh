/* qblocks.cuh — ggml's weight blocks decoded in registers, written from the layouts of
 * ggml-common.h and the meaning ggml-quants.c's dequantize_row_* gives them.
 *
 * A block is cut into units: a few runs of 8 consecutive weights that come from the
 * same bytes (Q4_0 keeps weights j and j + 16 in the low and high nibble of one
 * byte, so its unit is 8 bytes: weights 8v..8v+7 and 16+8v..16+8v+7). A lane decodes
 * a unit at a time; qt<T>::base(u, g) says where run g of unit u starts in the block.
 *
 * Blocks of 34, 18, 22 and 210 bytes leave their fields only 2-byte aligned, so bytes
 * are read four at a time as two 16-bit halves (ld_u32). */
#ifndef QWENCHAT_CUDA_QBLOCKS_CUH
#define QWENCHAT_CUDA_QBLOCKS_CUH

#include <cuda_fp16.h>

#include "engine/cuda/common.cuh"

__device__ static inline uint32_t ld_u32(const uint8_t *p)
{
	const uint16_t *h = (const uint16_t *)p;
	return h[0] | (uint32_t)h[1] << 16;
}

__device__ static inline float ld_f16(const uint8_t *p)
{
	return __half2float(*(const __half *)p);
}

/* Byte i (0..7) of two words. */
__device__ static inline int byte_of(const uint32_t (&q)[2], int i)
{
	return (q[i / 4] >> (8 * (i % 4))) & 0xff;
}

__device__ static inline void ld_8(uint32_t (&q)[2], const uint8_t *p)
{
	q[0] = ld_u32(p);
	q[1] = ld_u32(p + 4);
}

/* Scale and min of sub-block j (0..7) of a Q4_K/Q5_K block: 6-bit values packed in
 * 12 bytes, the low 6 bits of bytes 0..7 for j < 4, else a nibble of bytes 8..11 with
 * the top 2 bits of bytes 0..7. */
__device__ static inline void k_scale_min(const uint8_t *sc, int j, float d, float dmin, float *ds,
					  float *dm)
{
	int s, m;
	if (j < 4) {
		s = sc[j] & 63;
		m = sc[j + 4] & 63;
	} else {
		s = (sc[j + 4] & 15) | (sc[j - 4] >> 6) << 4;
		m = (sc[j + 4] >> 4) | (sc[j] >> 6) << 4;
	}
	*ds = d * (float)s;
	*dm = dmin * (float)m;
}

/* W weights in B bytes per block, U units per block of UW weights each. */
template <int T> struct qt;

/* Q8_0: f16 scale d, 32 int8; w = q * d. Unit: 8 weights. */
template <> struct qt<ENG_Q8_0> {
	enum { W = 32, B = 34, U = 4, UW = 8 };
	__device__ static int base(int u, int)
	{
		return 8 * u;
	}
	__device__ static void decode(const uint8_t *b, int u, float *w)
	{
		float d = ld_f16(b);
		uint32_t q[2];
		ld_8(q, b + 2 + 8 * u);
#pragma unroll
		for (int i = 0; i < 8; i++)
			w[i] = (float)(int8_t)byte_of(q, i) * d;
	}
};

/* Q4_0: f16 d, 16 bytes: weight j in the low nibble of byte j, j + 16 in its high
 * nibble; w = (q - 8) * d. */
template <> struct qt<ENG_Q4_0> {
	enum { W = 32, B = 18, U = 2, UW = 16 };
	__device__ static int base(int u, int g)
	{
		return 8 * u + 16 * g;
	}
	__device__ static void decode(const uint8_t *b, int u, float *w)
	{
		float d = ld_f16(b);
		uint32_t q[2];
		ld_8(q, b + 2 + 8 * u);
#pragma unroll
		for (int i = 0; i < 8; i++) {
			int v = byte_of(q, i);
			w[i] = (float)((v & 15) - 8) * d;
			w[8 + i] = (float)((v >> 4) - 8) * d;
		}
	}
};

/* Q5_0: f16 d, 32 high bits (bit j for weight j), nibbles as Q4_0; w = (q - 16) * d. */
template <> struct qt<ENG_Q5_0> {
	enum { W = 32, B = 22, U = 2, UW = 16 };
	__device__ static int base(int u, int g)
	{
		return 8 * u + 16 * g;
	}
	__device__ static void decode(const uint8_t *b, int u, float *w)
	{
		float d = ld_f16(b);
		uint32_t qh = ld_u32(b + 2), q[2];
		ld_8(q, b + 6 + 8 * u);
#pragma unroll
		for (int i = 0; i < 8; i++) {
			int v = byte_of(q, i), j = 8 * u + i;
			int lo = (v & 15) | ((qh >> j) & 1) << 4;
			int hi = (v >> 4) | ((qh >> (j + 16)) & 1) << 4;
			w[i] = (float)(lo - 16) * d;
			w[8 + i] = (float)(hi - 16) * d;
		}
	}
};

/* Q4_K: f16 d and dmin, 12 bytes of scales and mins, 128 bytes of nibbles. Weights
 * 64c + l (l < 32) are the low nibbles of bytes 32c + l, weights 64c + 32 + l the
 * high ones, sub-blocks 2c and 2c + 1: w = d * sc * q - dmin * m. Unit u: c = u / 4,
 * l = 8 (u % 4) .. + 7. Q5_K (FIVE) adds a fifth bit per weight after the scales:
 * byte l of the 32 high-bit bytes holds bit 2c for weight 64c + l and bit 2c + 1 for
 * weight 64c + 32 + l; its nibbles follow at byte 48. */
template <bool FIVE> __device__ static void k4_decode(const uint8_t *b, int u, float *w)
{
	int c = u / 4, l0 = 8 * (u % 4);
	float d = ld_f16(b), dmin = ld_f16(b + 2), d1, m1, d2, m2;
	k_scale_min(b + 4, 2 * c, d, dmin, &d1, &m1);
	k_scale_min(b + 4, 2 * c + 1, d, dmin, &d2, &m2);
	uint32_t q[2], h[2] = {0, 0};
	if (FIVE)
		ld_8(h, b + 16 + l0);
	ld_8(q, b + (FIVE ? 48 : 16) + 32 * c + l0);
#pragma unroll
	for (int i = 0; i < 8; i++) {
		int v = byte_of(q, i), hb = byte_of(h, i);
		int lo = (v & 15) + ((hb >> (2 * c)) & 1) * 16;
		int hi = (v >> 4) + ((hb >> (2 * c + 1)) & 1) * 16;
		w[i] = d1 * (float)lo - m1;
		w[8 + i] = d2 * (float)hi - m2;
	}
}

template <> struct qt<ENG_Q4_K> {
	enum { W = 256, B = 144, U = 16, UW = 16 };
	__device__ static int base(int u, int g)
	{
		return 64 * (u / 4) + 32 * g + 8 * (u % 4);
	}
	__device__ static void decode(const uint8_t *b, int u, float *w)
	{
		k4_decode<false>(b, u, w);
	}
};

template <> struct qt<ENG_Q5_K> {
	enum { W = 256, B = 176, U = 16, UW = 16 };
	__device__ static int base(int u, int g)
	{
		return qt<ENG_Q4_K>::base(u, g);
	}
	__device__ static void decode(const uint8_t *b, int u, float *w)
	{
		k4_decode<true>(b, u, w);
	}
};

/* Q6_K: 128 bytes of low nibbles (ql), 64 of 2-bit highs (qh), 16 int8 scales, f16 d
 * last. Half n (128 weights) uses ql[64n..), qh[32n..), scales[8n..); for l < 32 the
 * weights l, l + 32, l + 64, l + 96 take the low nibble of ql[l], of ql[l + 32], the
 * high nibble of ql[l], of ql[l + 32], with bits 0-1, 2-3, 4-5, 6-7 of qh[l] on top,
 * and scale l / 16 + 0, 2, 4, 6: w = d * sc * (q - 32). Unit u: n = u / 4,
 * l = 8 (u % 4) .. + 7, four runs of 8. */
template <> struct qt<ENG_Q6_K> {
	enum { W = 256, B = 210, U = 8, UW = 32 };
	__device__ static int base(int u, int g)
	{
		return 128 * (u / 4) + 32 * g + 8 * (u % 4);
	}
	__device__ static void decode(const uint8_t *b, int u, float *w)
	{
		int n = u / 4, l0 = 8 * (u % 4), is = l0 / 16;
		const uint8_t *ql = b + 64 * n + l0;
		const int8_t *sc = (const int8_t *)(b + 192 + 8 * n) + is;
		float d = ld_f16(b + 208);
		float d0 = d * sc[0], d1 = d * sc[2], d2 = d * sc[4], d3 = d * sc[6];
		uint32_t lo[2], hi[2], h[2];
		ld_8(lo, ql);
		ld_8(hi, ql + 32);
		ld_8(h, b + 128 + 32 * n + l0);
#pragma unroll
		for (int i = 0; i < 8; i++) {
			int a = byte_of(lo, i), c = byte_of(hi, i), hb = byte_of(h, i);
			w[i] = d0 * (float)(((a & 15) | (hb & 3) << 4) - 32);
			w[8 + i] = d1 * (float)(((c & 15) | ((hb >> 2) & 3) << 4) - 32);
			w[16 + i] = d2 * (float)(((a >> 4) | ((hb >> 4) & 3) << 4) - 32);
			w[24 + i] = d3 * (float)(((c >> 4) | ((hb >> 6) & 3) << 4) - 32);
		}
	}
};

#endif
