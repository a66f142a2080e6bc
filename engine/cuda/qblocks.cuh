/* qblocks.cuh — ggml's weight blocks as the device keeps them: each row repacked at
 * upload into planes, and the decoding of those planes, for the kernels (quant.cu)
 * and for the host test that checks them against the CPU's reference
 * (tests/unit/test_cuda_qblocks.cu; every function here is __host__ __device__).
 *
 * A file's blocks (34, 18, 22, 144, 176 or 210 bytes) leave their quants only 2-byte
 * aligned, so a lane could not read them 16 bytes at a time. On the device a row of
 * nb blocks is stored as planes, each holding one field of every block in block
 * order, the quants first:
 *
 *   Q8_0  qs 32nb | d 2nb
 *   Q4_0  qs 16nb | d 2nb
 *   Q5_0  qs 16nb | qh 4nb | d 2nb
 *   Q4_K  qs 128nb | meta 16nb           meta: d and dmin, then the block's 8 scales
 *   Q5_K  qs 128nb | qh 32nb | meta 16nb       and 8 mins as four 24-bit pairs (qb_k4_pair)
 *   Q6_K  qa 64nb | qb 64nb | qh 64nb | scales 16nb | d 2nb
 *
 * (Q6_K's 128 bytes of low nibbles are split in two planes: qa holds ql[0..31] and
 * ql[64..95] of a block, qb ql[32..63] and ql[96..127], so that 16 bytes of qa, qb
 * and qh at the same offset hold the bits of the same 64 weights.) The row is the
 * same size as the file's, padded to 16 bytes, and every plane read 16 bytes at a
 * time starts 16-byte aligned.
 *
 * A chunk is 16 bytes at offset 16 j of the quant planes and the weights they hold:
 * RUNS runs of 16 consecutive weights, run r starting at weight run(j, r). decode()
 * gives a chunk's weights in fp32 exactly as ggml's dequantize_row_* does; dot() its
 * dot product with activations quantized to int8 with one scale per 32 (the CPU's
 * cpu_quantize_act), as the CPU's decode kernels compute it (kernels_quant.c): the
 * integer sums are exact, only the order of the fp32 additions differs. */
#ifndef QWENCHAT_CUDA_QBLOCKS_CUH
#define QWENCHAT_CUDA_QBLOCKS_CUH

#include <stdint.h>
#include <string.h>

#include <cuda_fp16.h>
#include <cuda_runtime.h>

extern "C" {
#include "engine/engine.h"
}

#define QB __host__ __device__ static inline
/* The host compiler does not know nvcc's unroll pragma. */
#ifdef __CUDA_ARCH__
#define QB_UNROLL _Pragma("unroll")
#else
#define QB_UNROLL
#endif

/* ---- loads and integer helpers that also run on the host ------------------------ */

/* 16 bytes of weights, read once: a streaming load that does not keep them in L1. */
QB uint4 qb_ld16(const uint8_t *p)
{
#ifdef __CUDA_ARCH__
	return __ldcs((const uint4 *)p);
#else
	uint4 v;
	memcpy(&v, p, 16);
	return v;
#endif
}

QB uint32_t qb_ld4(const uint8_t *p)
{
#ifdef __CUDA_ARCH__
	return __ldcs((const unsigned int *)p);
#else
	uint32_t v;
	memcpy(&v, p, 4);
	return v;
#endif
}

QB uint2 qb_ld8(const uint8_t *p)
{
#ifdef __CUDA_ARCH__
	return __ldcs((const uint2 *)p);
#else
	uint2 v;
	memcpy(&v, p, 8);
	return v;
#endif
}

QB uint32_t qb_ld2(const uint8_t *p)
{
#ifdef __CUDA_ARCH__
	return __ldcs((const unsigned short *)p);
#else
	uint16_t v;
	memcpy(&v, p, 2);
	return v;
#endif
}

/* IEEE half to float, exact. */
QB float qb_f16(uint32_t h)
{
#ifdef __CUDA_ARCH__
	return __half2float(__ushort_as_half((unsigned short)h));
#else
	uint32_t sign = (h & 0x8000u) << 16, e = (h >> 10) & 31, m = h & 1023, bits;
	if (e == 31) {
		bits = sign | 0x7f800000u | m << 13;
	} else if (e) {
		bits = sign | (e + 112) << 23 | m << 13;
	} else if (m) { /* subnormal: normalise */
		e = 113;
		while (!(m & 1024)) {
			m <<= 1;
			e--;
		}
		bits = sign | e << 23 | (m & 1023) << 13;
	} else {
		bits = sign;
	}
	float f;
	memcpy(&f, &bits, 4);
	return f;
#endif
}

/* c + the dot product of four signed bytes of a with four of b. */
QB int qb_dp4a(uint32_t a, uint32_t b, int c)
{
#ifdef __CUDA_ARCH__
	return __dp4a((int)a, (int)b, c);
#else
	for (int i = 0; i < 4; i++)
		c += (int8_t)(a >> 8 * i) * (int8_t)(b >> 8 * i);
	return c;
#endif
}

/* Byte i (0..3) of w. */
QB int qb_byte(uint32_t w, int i)
{
	return (w >> 8 * i) & 0xff;
}

/* The activations of a row: int8 values with one scale per 32 and the sum of each 16
 * values (cpu_xq's d and s16). */
struct qx {
	const int8_t *q; /* (K) */
	const float *d;  /* (K/32) */
	const int *s16;  /* (K/16) */
};

/* Sum over the four words of w of the dot products of their bytes with 16 int8
 * activations from x.q[at] (at a multiple of 16). */
QB int qb_dot16(const uint32_t (&w)[4], const struct qx &x, int at)
{
#ifdef __CUDA_ARCH__
	int4 v = *(const int4 *)(x.q + at);
	uint32_t xv[4] = {(uint32_t)v.x, (uint32_t)v.y, (uint32_t)v.z, (uint32_t)v.w};
#else
	uint32_t xv[4];
	memcpy(xv, x.q + at, 16);
#endif
	int s = 0;
QB_UNROLL
	for (int i = 0; i < 4; i++)
		s = qb_dp4a(w[i], xv[i], s);
	return s;
}

/* The four words of a uint4, and each word's nibbles as bytes. */
QB void qb_words(uint4 v, uint32_t (&w)[4])
{
	w[0] = v.x, w[1] = v.y, w[2] = v.z, w[3] = v.w;
}

QB void qb_lo(const uint32_t (&q)[4], uint32_t (&w)[4])
{
QB_UNROLL
	for (int i = 0; i < 4; i++)
		w[i] = q[i] & 0x0f0f0f0fu;
}

QB void qb_hi(const uint32_t (&q)[4], uint32_t (&w)[4])
{
QB_UNROLL
	for (int i = 0; i < 4; i++)
		w[i] = (q[i] >> 4) & 0x0f0f0f0fu;
}

/* Bits 0..3 of t moved to bit 0 of bytes 0..3 (the four terms do not overlap). */
QB uint32_t qb_spread4(uint32_t t)
{
	return ((t & 15) * 0x00204081u) & 0x01010101u;
}

/* Scale and min of sub-block j (0..7) of a Q4_K/Q5_K block from its meta: 6-bit values
 * packed in the 12 bytes after d and dmin (ggml's get_scale_min_k4). */
QB void qb_k4_scale_min(const uint4 &meta, int j, int *sc, int *m)
{
	uint32_t w[3] = {meta.y, meta.z, meta.w};
#define SCB(k) qb_byte(w[(k) / 4], (k) % 4)
	if (j < 4) {
		*sc = SCB(j) & 63;
		*m = SCB(j + 4) & 63;
	} else {
		*sc = (SCB(j + 4) & 15) | (SCB(j - 4) >> 6) << 4;
		*m = (SCB(j + 4) >> 4) | (SCB(j) >> 6) << 4;
	}
#undef SCB
}

/* The same scales and mins as the device keeps them: at upload the 12 bytes after d and
 * dmin are laid out again as four 24-bit pairs, pair p at bit 24 p of the meta's words
 * 1-3 holding sub-blocks 2p and 2p + 1: bits 0-5 the first's scale, 6-11 the second's,
 * 12-17 and 18-23 their mins. A chunk reads one pair, so that its scales cost a few
 * shifts instead of two unpackings with byte indices known only at run time. */
QB void qb_k4_pair(const uint4 &meta, int p, int *s0, int *m0, int *s1, int *m1)
{
	uint64_t lo = meta.y | (uint64_t)meta.z << 32, hi = meta.z | (uint64_t)meta.w << 32;
	uint32_t v = (uint32_t)(p < 2 ? lo >> (24 * p) : hi >> (24 * p - 32)) & 0xffffffu;
	*s0 = v & 63, *s1 = v >> 6 & 63, *m0 = v >> 12 & 63, *m1 = v >> 18 & 63;
}

/* A file's Q4_K/Q5_K meta (d, dmin, 12 bytes of scales) into qb_k4_pair's layout. */
QB uint4 qb_k4_repack_meta(uint4 meta)
{
	uint64_t lo = 0; /* bits 0-63 of the pairs */
	uint32_t hi = 0; /* bits 64-95 */
	for (int p = 0; p < 4; p++) {
		int s0, m0, s1, m1;
		qb_k4_scale_min(meta, 2 * p, &s0, &m0);
		qb_k4_scale_min(meta, 2 * p + 1, &s1, &m1);
		uint32_t v = (uint32_t)(s0 | s1 << 6 | m0 << 12 | m1 << 18);
		if (p < 3)
			lo |= (uint64_t)v << (24 * p);
		if (p == 2)
			hi |= v >> 16;
		if (p == 3)
			hi |= v << 8;
	}
	return make_uint4(meta.x, (uint32_t)lo, (uint32_t)(lo >> 32), hi);
}

/* ---- the types -------------------------------------------------------------------- */

/* W weights and B bytes per block, CPB chunks per block, RUNS runs of 16 per chunk. */
template <int T> struct qp;

/* Q8_0: w = d * q, q int8. Chunk j: weights 16j..16j+15 of the row, block j/2. */
template <> struct qp<ENG_Q8_0> {
	enum { W = 32, B = 34, CPB = 2, RUNS = 1 };
	struct chunk {
		uint4 q;
		uint32_t d;
	};
	QB int run(int j, int)
	{
		return 16 * j;
	}
	QB void load(chunk &c, const uint8_t *row, int nb, int j)
	{
		c.q = qb_ld16(row + 16 * j);
		c.d = qb_ld2(row + 32 * nb + 2 * (j / 2));
	}
	QB void decode(const chunk &c, int, float *w)
	{
		uint32_t q[4];
		qb_words(c.q, q);
		float d = qb_f16(c.d);
QB_UNROLL
		for (int i = 0; i < 16; i++)
			w[i] = (float)(int8_t)qb_byte(q[i / 4], i % 4) * d;
	}
	QB float dot(const chunk &c, int j, const struct qx &x)
	{
		uint32_t q[4];
		qb_words(c.q, q);
		return qb_f16(c.d) * x.d[j / 2] * (float)qb_dot16(q, x, 16 * j);
	}
	static void repack(uint8_t *dst, const uint8_t *src, int nb)
	{
		for (int b = 0; b < nb; b++) {
			memcpy(dst + 32 * (size_t)nb + 2 * b, src + B * b, 2);
			memcpy(dst + 32 * (size_t)b, src + B * b + 2, 32);
		}
	}
};

/* Q4_0: w = d * (q - 8), weight i in the low nibble of byte i, i + 16 in its high one.
 * Chunk j: block j. */
template <> struct qp<ENG_Q4_0> {
	enum { W = 32, B = 18, CPB = 1, RUNS = 2 };
	struct chunk {
		uint4 q;
		uint32_t d;
	};
	QB int run(int j, int r)
	{
		return 32 * j + 16 * r;
	}
	QB void load(chunk &c, const uint8_t *row, int nb, int j)
	{
		c.q = qb_ld16(row + 16 * j);
		c.d = qb_ld2(row + 16 * nb + 2 * j);
	}
	QB void decode(const chunk &c, int, float *w)
	{
		uint32_t q[4];
		qb_words(c.q, q);
		float d = qb_f16(c.d);
QB_UNROLL
		for (int i = 0; i < 16; i++) {
			int v = qb_byte(q[i / 4], i % 4);
			w[i] = (float)((v & 15) - 8) * d;
			w[16 + i] = (float)((v >> 4) - 8) * d;
		}
	}
	QB float dot(const chunk &c, int j, const struct qx &x)
	{
		uint32_t q[4], lo[4], hi[4];
		qb_words(c.q, q);
		qb_lo(q, lo);
		qb_hi(q, hi);
		int s = qb_dot16(lo, x, 32 * j) + qb_dot16(hi, x, 32 * j + 16);
		s -= 8 * (x.s16[2 * j] + x.s16[2 * j + 1]);
		return qb_f16(c.d) * x.d[j] * (float)s;
	}
	static void repack(uint8_t *dst, const uint8_t *src, int nb)
	{
		for (int b = 0; b < nb; b++) {
			memcpy(dst + 16 * (size_t)nb + 2 * b, src + B * b, 2);
			memcpy(dst + 16 * (size_t)b, src + B * b + 2, 16);
		}
	}
};

/* Q5_0: Q4_0's nibbles with a fifth bit, bit i of qh for weight i; w = d * (q - 16). */
template <> struct qp<ENG_Q5_0> {
	enum { W = 32, B = 22, CPB = 1, RUNS = 2 };
	struct chunk {
		uint4 q;
		uint32_t qh, d;
	};
	QB int run(int j, int r)
	{
		return 32 * j + 16 * r;
	}
	QB void load(chunk &c, const uint8_t *row, int nb, int j)
	{
		c.q = qb_ld16(row + 16 * j);
		c.qh = qb_ld4(row + 16 * nb + 4 * j);
		c.d = qb_ld2(row + 20 * nb + 2 * j);
	}
	/* The 5-bit values: weights 4i..4i+3 in lo[i], 16+4i.. in hi[i]. */
	QB void values(const chunk &c, uint32_t (&lo)[4], uint32_t (&hi)[4])
	{
		uint32_t q[4];
		qb_words(c.q, q);
		qb_lo(q, lo);
		qb_hi(q, hi);
QB_UNROLL
		for (int i = 0; i < 4; i++) {
			lo[i] |= qb_spread4(c.qh >> 4 * i) << 4;
			hi[i] |= qb_spread4(c.qh >> (16 + 4 * i)) << 4;
		}
	}
	QB void decode(const chunk &c, int, float *w)
	{
		uint32_t lo[4], hi[4];
		values(c, lo, hi);
		float d = qb_f16(c.d);
QB_UNROLL
		for (int i = 0; i < 16; i++) {
			w[i] = (float)(qb_byte(lo[i / 4], i % 4) - 16) * d;
			w[16 + i] = (float)(qb_byte(hi[i / 4], i % 4) - 16) * d;
		}
	}
	QB float dot(const chunk &c, int j, const struct qx &x)
	{
		uint32_t lo[4], hi[4];
		values(c, lo, hi);
		int s = qb_dot16(lo, x, 32 * j) + qb_dot16(hi, x, 32 * j + 16);
		s -= 16 * (x.s16[2 * j] + x.s16[2 * j + 1]);
		return qb_f16(c.d) * x.d[j] * (float)s;
	}
	static void repack(uint8_t *dst, const uint8_t *src, int nb)
	{
		for (int b = 0; b < nb; b++) {
			memcpy(dst + 20 * (size_t)nb + 2 * b, src + B * b, 2);
			memcpy(dst + 16 * (size_t)nb + 4 * b, src + B * b + 2, 4);
			memcpy(dst + 16 * (size_t)b, src + B * b + 6, 16);
		}
	}
};

/* Q4_K and Q5_K: 256 weights in sub-blocks of 32, w = d * sc * q - dmin * m. Weights
 * 64c + l (l < 32) are the low nibbles of qs[32c + l], 64c + 32 + l the high ones
 * (sub-blocks 2c and 2c + 1); Q5_K's fifth bits are bit 2c (low) and 2c + 1 (high) of
 * qh[l]. Chunk j: block j/8, c = (j%8)/2, l = 16 (j%2) .. + 15. */
template <bool FIVE> struct qp_k4 {
	enum { W = 256, B = FIVE ? 176 : 144, CPB = 8, RUNS = 2 };
	struct chunk {
		uint4 q, qh, meta;
	};
	QB int run(int j, int r)
	{
		return 256 * (j / 8) + 64 * (j % 8 / 2) + 16 * (j % 2) + 32 * r;
	}
	QB void load(chunk &c, const uint8_t *row, int nb, int j)
	{
		c.q = qb_ld16(row + 16 * j);
		if (FIVE)
			c.qh = qb_ld16(row + 128 * nb + 32 * (j / 8) + 16 * (j % 2));
		c.meta = qb_ld16(row + (FIVE ? 160 : 128) * nb + 16 * (j / 8));
	}
	QB void values(const chunk &c, int j, uint32_t (&lo)[4], uint32_t (&hi)[4])
	{
		uint32_t q[4];
		qb_words(c.q, q);
		qb_lo(q, lo);
		qb_hi(q, hi);
		if (FIVE) {
			int sh = 2 * (j % 8 / 2);
			uint32_t h[4];
			qb_words(c.qh, h);
QB_UNROLL
			for (int i = 0; i < 4; i++) {
				lo[i] |= ((h[i] >> sh) & 0x01010101u) << 4;
				hi[i] |= ((h[i] >> (sh + 1)) & 0x01010101u) << 4;
			}
		}
	}
	QB void decode(const chunk &c, int j, float *w)
	{
		uint32_t lo[4], hi[4];
		values(c, j, lo, hi);
		int s0, m0, s1, m1;
		qb_k4_pair(c.meta, j % 8 / 2, &s0, &m0, &s1, &m1);
		float d = qb_f16(c.meta.x & 0xffff), dmin = qb_f16(c.meta.x >> 16);
		float d0 = d * (float)s0, mm0 = dmin * (float)m0;
		float d1 = d * (float)s1, mm1 = dmin * (float)m1;
QB_UNROLL
		for (int i = 0; i < 16; i++) {
			w[i] = d0 * (float)qb_byte(lo[i / 4], i % 4) - mm0;
			w[16 + i] = d1 * (float)qb_byte(hi[i / 4], i % 4) - mm1;
		}
	}
	QB float dot(const chunk &c, int j, const struct qx &x)
	{
		uint32_t lo[4], hi[4];
		values(c, j, lo, hi);
		int s0, m0, s1, m1, at = run(j, 0);
		qb_k4_pair(c.meta, j % 8 / 2, &s0, &m0, &s1, &m1);
		float d = qb_f16(c.meta.x & 0xffff), dmin = qb_f16(c.meta.x >> 16);
		int b0 = at / 32, h = j % 2; /* the activations' 32-block of run 0, its half */
		float r0 = d * (float)s0 * (float)qb_dot16(lo, x, at) -
			   dmin * (float)m0 * (float)x.s16[2 * b0 + h];
		float r1 = d * (float)s1 * (float)qb_dot16(hi, x, at + 32) -
			   dmin * (float)m1 * (float)x.s16[2 * b0 + 2 + h];
		return x.d[b0] * r0 + x.d[b0 + 1] * r1;
	}
	static void repack(uint8_t *dst, const uint8_t *src, int nb)
	{
		for (int b = 0; b < nb; b++) {
			const uint8_t *blk = src + (size_t)B * b;
			memcpy(dst + 128 * (size_t)b, blk + (FIVE ? 48 : 16), 128);
			if (FIVE)
				memcpy(dst + 128 * (size_t)nb + 32 * b, blk + 16, 32);
			uint4 meta;
			memcpy(&meta, blk, 16);
			meta = qb_k4_repack_meta(meta);
			memcpy(dst + (FIVE ? 160 : 128) * (size_t)nb + 16 * b, &meta, 16);
		}
	}
};
template <> struct qp<ENG_Q4_K> : qp_k4<false> {};
template <> struct qp<ENG_Q5_K> : qp_k4<true> {};

/* Q6_K: halves n of 128 weights; for l < 32 the weights 128n + l, +32, +64, +96 take
 * the low nibble of ql[64n + l], of ql[64n + 32 + l], the high nibble of each, with
 * bits 0-1, 2-3, 4-5, 6-7 of qh[32n + l] on top, and scales sc[8n + l/16 + 0, 2, 4,
 * 6]: w = d * sc * (q - 32). Chunk j: block j/4, n = (j%4)/2, l = 16 (j%2) .. + 15,
 * four runs of 16 (planes qa, qb, qh at offset 16 j). */
template <> struct qp<ENG_Q6_K> {
	enum { W = 256, B = 210, CPB = 4, RUNS = 4 };
	struct chunk {
		uint4 a, b, h;
		uint2 sc; /* sc[8n .. 8n + 7] */
		uint32_t d;
	};
	QB int run(int j, int r)
	{
		return 256 * (j / 4) + 128 * (j % 4 / 2) + 16 * (j % 2) + 32 * r;
	}
	QB void load(chunk &c, const uint8_t *row, int nb, int j)
	{
		c.a = qb_ld16(row + 16 * j);
		c.b = qb_ld16(row + 64 * (size_t)nb + 16 * j);
		c.h = qb_ld16(row + 128 * (size_t)nb + 16 * j);
		c.sc = qb_ld8(row + 192 * (size_t)nb + 16 * (j / 4) + 8 * (j % 4 / 2));
		c.d = qb_ld2(row + 208 * (size_t)nb + 2 * (j / 4));
	}
	/* The 6-bit values of run r (0..3): its nibbles with two bits of qh on top. */
	QB void values(const chunk &c, int r, uint32_t (&u)[4])
	{
		uint32_t a[4], b[4], h[4];
		qb_words(c.a, a);
		qb_words(c.b, b);
		qb_words(c.h, h);
QB_UNROLL
		for (int i = 0; i < 4; i++) {
			uint32_t lo = r % 2 ? b[i] : a[i];
			lo = r < 2 ? lo & 0x0f0f0f0fu : (lo >> 4) & 0x0f0f0f0fu;
			u[i] = lo | ((h[i] >> (2 * r)) & 0x03030303u) << 4;
		}
	}
	/* Run r's scale: sc[8n + j%2 + 2r], from the 8 loaded. */
	QB int scale_of(const chunk &c, int j, int r)
	{
		int k = j % 2 + 2 * r; /* 0..7 */
		return (int8_t)qb_byte(k < 4 ? c.sc.x : c.sc.y, k % 4);
	}
	QB void decode(const chunk &c, int j, float *w)
	{
		float d = qb_f16(c.d);
QB_UNROLL
		for (int r = 0; r < 4; r++) {
			uint32_t u[4];
			values(c, r, u);
			float dr = d * (float)scale_of(c, j, r);
QB_UNROLL
			for (int i = 0; i < 16; i++)
				w[16 * r + i] = dr * (float)(qb_byte(u[i / 4], i % 4) - 32);
		}
	}
	QB float dot(const chunk &c, int j, const struct qx &x)
	{
		float sum = 0.0f;
QB_UNROLL
		for (int r = 0; r < 4; r++) {
			uint32_t u[4];
			int at = run(j, r);
			values(c, r, u);
			int s = qb_dot16(u, x, at) - 32 * x.s16[at / 16];
			sum += x.d[at / 32] * (float)(scale_of(c, j, r) * s);
		}
		return qb_f16(c.d) * sum;
	}
	static void repack(uint8_t *dst, const uint8_t *src, int nb)
	{
		for (int b = 0; b < nb; b++) {
			const uint8_t *blk = src + (size_t)B * b;
			for (int n = 0; n < 2; n++) {
				memcpy(dst + 64 * (size_t)b + 32 * n, blk + 64 * n, 32);
				memcpy(dst + 64 * (size_t)nb + 64 * b + 32 * n, blk + 64 * n + 32, 32);
			}
			memcpy(dst + 128 * (size_t)nb + 64 * b, blk + 128, 64);
			memcpy(dst + 192 * (size_t)nb + 16 * b, blk + 192, 16);
			memcpy(dst + 208 * (size_t)nb + 2 * b, blk + 208, 2);
		}
	}
};

#undef QB
#undef QB_UNROLL
#endif
