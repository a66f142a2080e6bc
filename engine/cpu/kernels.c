/* kernels.c — CPU kernels with run-time ISA dispatch (AVX-512F, AVX2+FMA, C).
 * Each ISA's functions carry __attribute__((target)) so the rest of the program is
 * built for the baseline x86-64 and still runs anywhere.
 *
 * The weights stay bf16; each kernel widens them to fp32 in registers and
 * accumulates in fp32, so results match an fp32 reference to rounding. AVX-512
 * BF16's vdpbf16ps serves only the opt-in bf16 prefill (matmul_bf16): it multiplies
 * bf16 by bf16, which rounds the activations to 8 bits of mantissa (~4e-3 relative
 * error per product, far outside the 1e-4 agreement with transformers the exact
 * path keeps). */
#include "engine/cpu/kernels.h"

#include <math.h>

#if defined(__x86_64__)
#include <immintrin.h>
#define CPU_X86 1
#endif

/* ---- portable C --------------------------------------------------------------- */

static void matmul_c(float *out, int ldo, const float *xp, int ldx, int n,
		     const uint16_t *w, int K, int m0, int m1, bool acc,
			 uint32_t *panel)
{
	(void)panel;
	for (int m = m0; m < m1; m++) {
		const uint16_t *wr = w + (size_t)m * K;
		for (int t = 0; t < n; t++) {
			const float *x = xp + (size_t)t * ldx;
			float s = 0;
			for (int k = 0; k < K; k++)
				s += cpu_bf16_to_f32(wr[k]) * x[k];
			float *o = out + (size_t)t * ldo + m;
			*o = acc ? *o + s : s;
		}
	}
}

static inline float kv_at(const void *rows, size_t i, bool bf16)
{
	return bf16 ? cpu_bf16_to_f32(((const uint16_t *)rows)[i]) : ((const float *)rows)[i];
}

static void scores_c(float *s, const float *q, const void *keys, int nk, int hd,
		     bool bf16, float scale)
{
	for (int j = 0; j < nk; j++) {
		float d = 0;
		for (int i = 0; i < hd; i++)
			d += q[i] * kv_at(keys, (size_t)j * hd + i, bf16);
		s[j] = d * scale;
	}
}

static void mix_c(float *out, int ldo, const float *p, int ldp, int T, const void *vals, int nk,
		  int hd, bool bf16)
{
	for (int t = 0; t < T; t++) {
		float *o = out + (size_t)t * ldo;
		const float *pt = p + (size_t)t * ldp;
		for (int i = 0; i < hd; i++)
			o[i] = 0;
		for (int j = 0; j < nk; j++)
			for (int i = 0; i < hd; i++)
				o[i] += pt[j] * kv_at(vals, (size_t)j * hd + i, bf16);
	}
}

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

static void matmul_panel_c(float *out, int ldo, const float *xp, int ldx, int n,
			   const uint32_t *panel, int K, int rows)
{
	for (int t = 0; t < n; t++)
		for (int r = 0; r < rows; r++) {
			const float *x = xp + (size_t)t * ldx;   /* pack 1: natural order */
			float s = 0;
			for (int p = 0; p < K / 2; p++) {
				uint32_t w = panel[(size_t)p * CPU_PANEL_ROWS + r];
				s += cpu_bf16_to_f32((uint16_t)w) * x[2 * p];
				s += cpu_bf16_to_f32((uint16_t)(w >> 16)) * x[2 * p + 1];
			}
			out[(size_t)t * ldo + r] = s;
		}
}

static void pack_row_c(float *xp, const float *x, int K)
{
	cpu_pack_row(xp, x, K, 1);
}

static const struct cpu_kernels kernels_c = {
	.name = "c", .pack = 1, .matmul = matmul_c, .matmul_panel = matmul_panel_c,
	.scores = scores_c, .mix = mix_c,
	.pack_row = pack_row_c,
	.softmax = cpu_softmax, .swiglu = cpu_swiglu, .rmsnorm = cpu_rmsnorm, .to_bf16 = cpu_bf16_row,
};

#ifdef CPU_X86
/* ---- AVX-512F ------------------------------------------------------------------ */
#define T512 __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,fma")))
#define INL static inline __attribute__((always_inline))

/* R rows of w times T packed activation rows; K split into 32-wide blocks where
 * one 64-byte load gives 16 even and 16 odd weights (shift / mask). */
INL T512 void mk512(float *out, int ldo, const float *xp, int ldx, const uint16_t *w,
		    int K, const int R, const int T, bool acc)
{
	__m512 a[4][6];
	const __m512i hi = _mm512_set1_epi32((int)0xffff0000u);
#pragma GCC unroll 4
	for (int r = 0; r < R; r++)
#pragma GCC unroll 6
		for (int t = 0; t < T; t++)
			a[r][t] = _mm512_setzero_ps();
	const int kb = K & ~31;
	for (int k = 0; k < kb; k += 32) {
		/* widen the R weight slices once, then each activation load feeds R FMAs */
		__m512 we[4], wo[4];
#pragma GCC unroll 4
		for (int r = 0; r < R; r++) {
			__m512i raw = _mm512_loadu_si512((const void *)(w + (size_t)r * K + k));
			we[r] = _mm512_castsi512_ps(_mm512_slli_epi32(raw, 16));
			wo[r] = _mm512_castsi512_ps(_mm512_and_si512(raw, hi));
		}
#pragma GCC unroll 6
		for (int t = 0; t < T; t++) {
			const float *x = xp + (size_t)t * ldx + k;
			__m512 xe = _mm512_loadu_ps(x), xo = _mm512_loadu_ps(x + 16);
#pragma GCC unroll 4
			for (int r = 0; r < R; r++) {
				a[r][t] = _mm512_fmadd_ps(we[r], xe, a[r][t]);
				a[r][t] = _mm512_fmadd_ps(wo[r], xo, a[r][t]);
			}
		}
	}
#pragma GCC unroll 4
	for (int r = 0; r < R; r++)
#pragma GCC unroll 6
		for (int t = 0; t < T; t++) {
			float s = _mm512_reduce_add_ps(a[r][t]);
			for (int k = kb; k < K; k++)
				s += cpu_bf16_to_f32(w[(size_t)r * K + k]) * xp[(size_t)t * ldx + k];
			float *o = out + (size_t)t * ldo + r;
			*o = acc ? *o + s : s;
		}
}

#define MK512(R, T) static T512 void mk512_##R##_##T(float *o, int ldo, const float *x, \
	int ldx, const uint16_t *w, int K, bool acc) { mk512(o, ldo, x, ldx, w, K, R, T, acc); }
MK512(4, 1) MK512(4, 2) MK512(4, 3) MK512(4, 4) MK512(4, 5)
MK512(1, 1) MK512(1, 2) MK512(1, 3) MK512(1, 4) MK512(1, 5)

typedef void mk_fn(float *, int, const float *, int, const uint16_t *, int, bool);
static mk_fn *const mk512_r4[5] = {mk512_4_1, mk512_4_2, mk512_4_3, mk512_4_4, mk512_4_5};
static mk_fn *const mk512_r1[5] = {mk512_1_1, mk512_1_2, mk512_1_3, mk512_1_4, mk512_1_5};

/* ---- prefill: weight panels ---------------------------------------------------------
 * A prefill multiplies every weight row by many tokens. The weights are repacked,
 * CPU_PANEL_ROWS rows at a time, into a "panel" where the 64 rows' values for one
 * pair of k (2p, 2p+1) sit side by side: four 64-byte vectors of 16 rows, each lane
 * holding the pair as two bf16. Each lane then accumulates one output row, 16 outputs
 * are stored with one instruction, and no horizontal sums are needed. The panel
 * (128 KB at K = 1024) is packed once and stays in L2 while every token tile of the
 * chunk passes over it. */

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
	for (int i = 0; i < 16; i += 4) {   /* u[i + c]: element 4b + c of rows i..i+3, block b */
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

/* Software prefetch distance of the row loads, in bytes: the 16 rows are 16 streams
 * the hardware prefetcher alone kept waiting (pack 5.3% -> 3.5% of a prefill). */
#define PACK_AHEAD 512

/* panel[p * 64 + i] = the pair (w[m0 + i][2p], w[m0 + i][2p + 1]) for i < rows;
 * rows past `rows`, and the missing half of an odd K's last pair, are zero. 16 rows
 * by 16 pairs at a time: 16 row loads, one transpose, 16 stores. */
static T512 void pack_panel(uint32_t *panel, const uint16_t *w, int K, int m0, int rows)
{
	const int kp = K / 2;
	for (int g = 0; g < CPU_PANEL_ROWS / 16; g++) {
		const uint16_t *row0 = w + (size_t)(m0 + 16 * g) * K;
		for (int p = 0; p < kp; p += 16) {
			__mmask16 m = tail16(kp - p);
			__m512i r[16];
			for (int i = 0; i < 16; i++) {
				const uint16_t *src = row0 + (size_t)i * K + 2 * p;
				_mm_prefetch((const char *)src + PACK_AHEAD, _MM_HINT_T0);
				r[i] = 16 * g + i < rows ? _mm512_maskz_loadu_epi32(m, src)
							 : _mm512_setzero_si512();
			}
			transpose16(r);
			for (int j = 0; j < 16 && p + j < kp; j++)
				_mm512_store_si512(panel + (size_t)(p + j) * CPU_PANEL_ROWS + 16 * g, r[j]);
		}
		if (K & 1)
			for (int i = 0; i < 16; i++)
				panel[(size_t)kp * CPU_PANEL_ROWS + 16 * g + i] =
					16 * g + i < rows ? row0[(size_t)i * K + K - 1] : 0;
	}
}

/* Stores (or adds) T tokens x 64 rows of accumulators, the rows past `rows` masked. */
INL T512 void store_panel_tile(float *out, int ldo, __m512 (*a)[4], int rows, bool acc, const int T)
{
#pragma GCC unroll 6
	for (int t = 0; t < T; t++)
#pragma GCC unroll 4
		for (int r = 0; r < 4; r++) {
			__mmask16 m = tail16(rows - 16 * r);
			float *o = out + (size_t)t * ldo + 16 * r;
			__m512 v = a[t][r];
			if (acc)
				v = _mm512_add_ps(v, _mm512_maskz_loadu_ps(m, o));
			_mm512_mask_storeu_ps(o, m, v);
		}
}

/* Exact fp32 products: each pair is widened to the 16 rows' even-k and odd-k weights
 * (shift, mask) and multiplied by the token's two activations, broadcast. xp is
 * packed as for matmul (within each 32-block: 16 even k, then 16 odd k). T tokens
 * (a constant): 5 x 4 accumulators + 8 widened weights. */
INL T512 void mkpanel32(float *out, int ldo, const float *xp, int ldx, const uint32_t *panel,
			int K, int rows, bool acc, const int T)
{
	__m512 a[5][4];
	const __m512i hi = _mm512_set1_epi32((int)0xffff0000u);
#pragma GCC unroll 5
	for (int t = 0; t < T; t++)
#pragma GCC unroll 4
		for (int r = 0; r < 4; r++)
			a[t][r] = _mm512_setzero_ps();
	const int pairs = (K + 1) / 2;
	for (int p = 0; p < pairs; p++) {
		int ke, ko;
		packed_pair(p, K, 32, &ke, &ko);
		const __m512i *pw = (const __m512i *)(panel + (size_t)p * CPU_PANEL_ROWS);
		__m512 we[4], wo[4];
#pragma GCC unroll 4
		for (int r = 0; r < 4; r++) {
			__m512i raw = _mm512_load_si512(pw + r);
			we[r] = _mm512_castsi512_ps(_mm512_slli_epi32(raw, 16));
			wo[r] = _mm512_castsi512_ps(_mm512_and_si512(raw, hi));
		}
		bool odd = ko < K;   /* false only for an odd K's last pair */
#pragma GCC unroll 5
		for (int t = 0; t < T; t++) {
			const float *x = xp + (size_t)t * ldx;
			__m512 xe = _mm512_set1_ps(x[ke]);
#pragma GCC unroll 4
			for (int r = 0; r < 4; r++)
				a[t][r] = _mm512_fmadd_ps(we[r], xe, a[t][r]);
			if (odd) {
				__m512 xo = _mm512_set1_ps(x[ko]);
#pragma GCC unroll 4
				for (int r = 0; r < 4; r++)
					a[t][r] = _mm512_fmadd_ps(wo[r], xo, a[t][r]);
			}
		}
	}
	store_panel_tile(out, ldo, a, rows, acc, T);
}

typedef void mkp32_fn(float *, int, const float *, int, const uint32_t *, int, int, bool);
#define MKP32(T) static T512 void mkpanel32_##T(float *o, int ldo, const float *x, int ldx, \
	const uint32_t *panel, int K, int rows, bool acc) { mkpanel32(o, ldo, x, ldx, panel, K, rows, acc, T); }
MKP32(1) MKP32(2) MKP32(3) MKP32(4) MKP32(5)
static mkp32_fn *const mkpanel32_t[5] = {mkpanel32_1, mkpanel32_2, mkpanel32_3, mkpanel32_4,
					 mkpanel32_5};

/* Rows in chunks of ROWS_CHUNK (a 64-row slice of a K=1024 matrix is 128 KB, which
 * stays in L2 while every token block passes over it), tokens in blocks of 5 (AVX-512:
 * 4x5 accumulators + 8 widened weights fill the 32 registers). */
#define ROWS_CHUNK 64

static void matmul_tiles(mk_fn *const *r4, mk_fn *const *r1, int tb, float *out, int ldo,
			 const float *xp, int ldx, int n, const uint16_t *w, int K,
			 int m0, int m1, bool acc)
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
 *   each pair into place with one permute (valignd's variable-count form).
 * On the 2-core EPYC, Qwen3-0.6B shape, one core: 20 GB/s with plain unaligned
 * loads, 33 GB/s aligned (BENCHMARKS.md). */
#define MV_STREAMS 4
/* Each stream also prefetches the line MV_AHEAD lines ahead of the one it loads: the
 * hardware prefetcher starts over at every 4 KB, and 24 lines (1.5 KB) ahead took
 * decode from 43.5-46.3 to 47.1-48.6 tok/s (8 and 48 lines: no better than none). */
#define MV_AHEAD 24

/* The 64 bytes that start sh 32-bit lanes into the aligned line a, taken from a and
 * the line b after it (idx holds sh, sh + 1, ..., sh + 15). */
INL T512 __m512i shifted_512(__m512i a, __m512i b, __m512i idx)
{
	return _mm512_permutex2var_epi32(a, idx, b);
}

INL T512 void fma_bf16_512(__m512i r, __m512 xe, __m512 xo, __m512i hi, __m512 *ae, __m512 *ao)
{
	*ae = _mm512_fmadd_ps(_mm512_castsi512_ps(_mm512_slli_epi32(r, 16)), xe, *ae);
	*ao = _mm512_fmadd_ps(_mm512_castsi512_ps(_mm512_and_si512(r, hi)), xo, *ao);
}

/* Rows [i, i + q, ..., i + (MV_STREAMS-1) q) of the block at m0, K a multiple of 32,
 * each row starting sh lanes (4 bytes each) past a 64-byte boundary, 0 < sh < 16. */
INL T512 void mv_rows_shifted(float *out, const float *xp, const uint16_t *w, int K, int m0,
			      int q, int i, int sh, bool acc)
{
	const __m512i hi = _mm512_set1_epi32((int)0xffff0000u);
	const __m512i idx = _mm512_add_epi32(_mm512_set_epi32(15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4,
							      3, 2, 1, 0),
					     _mm512_set1_epi32(sh));
	const __m512i *wa[MV_STREAMS];
	__m512i cur[MV_STREAMS];
	__m512 ae[MV_STREAMS], ao[MV_STREAMS];
#pragma GCC unroll 8
	for (int j = 0; j < MV_STREAMS; j++) {
		/* the aligned line holding the row's first weights (its head belongs to the
		 * row before, or to whatever precedes the tensor: loaded, never used) */
		wa[j] = (const __m512i *)(w + (size_t)(m0 + j * q + i) * K - 2 * sh);
		cur[j] = _mm512_load_si512(wa[j]);
		ae[j] = ao[j] = _mm512_setzero_ps();
	}
	for (int k = 0, b = 1; k < K; k += 32, b++) {
		__m512 xe = _mm512_loadu_ps(xp + k), xo = _mm512_loadu_ps(xp + k + 16);
#pragma GCC unroll 8
		for (int j = 0; j < MV_STREAMS; j++) {
			_mm_prefetch((const char *)(wa[j] + b + MV_AHEAD), _MM_HINT_T0);
			__m512i nxt = _mm512_load_si512(wa[j] + b);
			fma_bf16_512(shifted_512(cur[j], nxt, idx), xe, xo, hi, &ae[j], &ao[j]);
			cur[j] = nxt;
		}
	}
#pragma GCC unroll 8
	for (int j = 0; j < MV_STREAMS; j++) {
		float s = _mm512_reduce_add_ps(_mm512_add_ps(ae[j], ao[j]));
		float *o = out + m0 + j * q + i;
		*o = acc ? *o + s : s;
	}
}

/* The same rows with plain (unaligned) loads, any K; S (a constant) rows at a time,
 * MV_STREAMS or 1 for the rows left over. */
INL T512 void mv_rows(float *out, const float *xp, const uint16_t *w, int K, int m0, int q, int i,
		      bool acc, const int S)
{
	const __m512i hi = _mm512_set1_epi32((int)0xffff0000u);
	const int k1 = K & ~31;
	const uint16_t *wr[MV_STREAMS];
	__m512 ae[MV_STREAMS], ao[MV_STREAMS];
#pragma GCC unroll 8
	for (int j = 0; j < S; j++) {
		wr[j] = w + (size_t)(m0 + j * q + i) * K;
		ae[j] = ao[j] = _mm512_setzero_ps();
	}
	for (int k = 0; k < k1; k += 32) {
		__m512 xe = _mm512_loadu_ps(xp + k), xo = _mm512_loadu_ps(xp + k + 16);
#pragma GCC unroll 8
		for (int j = 0; j < S; j++) {
			_mm_prefetch((const char *)(wr[j] + k) + 64 * MV_AHEAD, _MM_HINT_T0);
			fma_bf16_512(_mm512_loadu_si512((const void *)(wr[j] + k)), xe, xo, hi, &ae[j],
				     &ao[j]);
		}
	}
#pragma GCC unroll 8
	for (int j = 0; j < S; j++) {
		float s = _mm512_reduce_add_ps(_mm512_add_ps(ae[j], ao[j]));
		for (int k = k1; k < K; k++)
			s += cpu_bf16_to_f32(wr[j][k]) * xp[k];
		float *o = out + m0 + j * q + i;
		*o = acc ? *o + s : s;
	}
}

static T512 void matvec_512(float *out, const float *xp, const uint16_t *w, int K,
			    int m0, int m1, bool acc)
{
	uintptr_t at = (uintptr_t)(w + (size_t)m0 * K) % 64;
	bool shifted = K % 32 == 0 && at % 4 == 0 && at != 0;
	int q = (m1 - m0) / MV_STREAMS;
	for (int i = 0; i < q; i++) {
		if (shifted)
			mv_rows_shifted(out, xp, w, K, m0, q, i, (int)(at / 4), acc);
		else
			mv_rows(out, xp, w, K, m0, q, i, acc, MV_STREAMS);
	}
	for (int m = m0 + MV_STREAMS * q; m < m1; m++) /* the rows left over, one at a time */
		mv_rows(out, xp, w, K, m, 0, 0, acc, 1);
}

/* n tokens times one packed panel of `rows` rows, 5 tokens at a time. */
static void panel_tiles_512(float *out, int ldo, const float *xp, int ldx, int n,
			    const uint32_t *panel, int K, int rows, bool acc)
{
	for (int t = 0; t < n; t += 5) {
		int T = n - t < 5 ? n - t : 5;
		mkpanel32_t[T - 1](out + (size_t)t * ldo, ldo, xp + (size_t)t * ldx, ldx, panel, K, rows,
				   acc);
	}
}

static void matmul_panel_512(float *out, int ldo, const float *xp, int ldx, int n,
			     const uint32_t *panel, int K, int rows)
{
	panel_tiles_512(out, ldo, xp, ldx, n, panel, K, rows, false);
}

static void matmul_512(float *out, int ldo, const float *xp, int ldx, int n,
		       const uint16_t *w, int K, int m0, int m1, bool acc, uint32_t *panel)
{
	if (n == 1) {
		matvec_512(out, xp, w, K, m0, m1, acc);
		return;
	}
	if (!panel) {
		matmul_tiles(mk512_r4, mk512_r1, 5, out, ldo, xp, ldx, n, w, K, m0, m1, acc);
		return;
	}
	for (int mc = m0; mc < m1; mc += CPU_PANEL_ROWS) {
		int rows = m1 - mc < CPU_PANEL_ROWS ? m1 - mc : CPU_PANEL_ROWS;
		pack_panel(panel, w, K, mc, rows);
		panel_tiles_512(out + mc, ldo, xp, ldx, n, panel, K, rows, acc);
	}
}

/* 16 keys/values elements of row j as fp32 (mask for the tail). */
INL T512 __m512 kv16_512(const void *rows, size_t off, bool bf16, __mmask16 m)
{
	if (bf16) {
		__m256i h = _mm256_maskz_loadu_epi16(m, (const uint16_t *)rows + off);
		return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
	}
	return _mm512_maskz_loadu_ps(m, (const float *)rows + off);
}

static T512 void scores_512(float *s, const float *q, const void *keys, int nk, int hd,
			    bool bf16, float scale)
{
	for (int j = 0; j < nk; j++) {
		__m512 a = _mm512_setzero_ps();
		for (int i = 0; i < hd; i += 16) {
			__mmask16 m = hd - i >= 16 ? 0xffff : (__mmask16)((1u << (hd - i)) - 1);
			__m512 k = kv16_512(keys, (size_t)j * hd + i, bf16, m);
			a = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(m, q + i), k, a);
		}
		s[j] = _mm512_reduce_add_ps(a) * scale;
	}
}

/* mix for head_dim a multiple of 128 (every Qwen3 size): 128 dims per pass, two
 * keys per step into two sets of accumulators, so the FMAs do not wait on each
 * other's latency (one key per step chained every FMA on the one before). */
static T512 void mix_512_by128(float *out, const float *p, const void *vals, int nk, int hd, bool bf16)
{
	for (int i = 0; i < hd; i += 128) {
		__m512 a[8], b[8];
#pragma GCC unroll 8
		for (int c = 0; c < 8; c++)
			a[c] = b[c] = _mm512_setzero_ps();
		int j = 0;
		for (; j + 2 <= nk; j += 2) {
			__m512 p0 = _mm512_set1_ps(p[j]), p1 = _mm512_set1_ps(p[j + 1]);
			size_t r0 = (size_t)j * hd + i, r1 = r0 + hd;
#pragma GCC unroll 8
			for (int c = 0; c < 8; c++) {
				a[c] = _mm512_fmadd_ps(p0, kv16_512(vals, r0 + 16 * c, bf16, 0xffff), a[c]);
				b[c] = _mm512_fmadd_ps(p1, kv16_512(vals, r1 + 16 * c, bf16, 0xffff), b[c]);
			}
		}
		if (j < nk) {
			__m512 p0 = _mm512_set1_ps(p[j]);
#pragma GCC unroll 8
			for (int c = 0; c < 8; c++)
				a[c] = _mm512_fmadd_ps(p0, kv16_512(vals, (size_t)j * hd + i + 16 * c, bf16, 0xffff), a[c]);
		}
#pragma GCC unroll 8
		for (int c = 0; c < 8; c++)
			_mm512_storeu_ps(out + i + 16 * c, _mm512_add_ps(a[c], b[c]));
	}
}

/* T queries (a constant, <= 5) over 64 dims from i0 of head_dim: each value row is
 * widened once for all of them; 5 x 4 accumulators. */
INL T512 void mix_512_tile64(float *out, int ldo, const float *p, int ldp, const void *vals,
			     int nk, int hd, int i0, bool bf16, const int T)
{
	__m512 a[5][4];
#pragma GCC unroll 5
	for (int t = 0; t < T; t++)
#pragma GCC unroll 4
		for (int c = 0; c < 4; c++)
			a[t][c] = _mm512_setzero_ps();
	for (int j = 0; j < nk; j++) {
		__m512 v[4];
#pragma GCC unroll 4
		for (int c = 0; c < 4; c++)
			v[c] = kv16_512(vals, (size_t)j * hd + i0 + 16 * c, bf16, 0xffff);
#pragma GCC unroll 5
		for (int t = 0; t < T; t++) {
			__m512 pj = _mm512_set1_ps(p[(size_t)t * ldp + j]);
#pragma GCC unroll 4
			for (int c = 0; c < 4; c++)
				a[t][c] = _mm512_fmadd_ps(pj, v[c], a[t][c]);
		}
	}
#pragma GCC unroll 5
	for (int t = 0; t < T; t++)
#pragma GCC unroll 4
		for (int c = 0; c < 4; c++)
			_mm512_storeu_ps(out + (size_t)t * ldo + i0 + 16 * c, a[t][c]);
}

/* The same for bf16 values: each 64-byte load gives 32 values, widened as their
 * even and odd dims (one shift, one mask), so the accumulators hold dims i0 + 2i and
 * i0 + 2i + 1 apart and are interleaved back when stored. C (a constant) blocks of 32
 * dims per pass: 4 (a whole 128-dim row, read once) for up to 2 queries, as in decode,
 * where the values come from memory; 2 for the prefill's tiles of up to 5. Each pass
 * prefetches the value rows MIX_AHEAD ahead. */
#define MIX_AHEAD 8
INL T512 void mix_bf16_tile(float *out, int ldo, const float *p, int ldp, const uint16_t *vals,
			    int nk, int hd, int i0, const int T, const int C)
{
	__m512 e[5][4], o[5][4];
	const __m512i hi = _mm512_set1_epi32((int)0xffff0000u);
#pragma GCC unroll 5
	for (int t = 0; t < T; t++)
#pragma GCC unroll 4
		for (int c = 0; c < C; c++)
			e[t][c] = o[t][c] = _mm512_setzero_ps();
	for (int j = 0; j < nk; j++) {
		const uint16_t *v = vals + (size_t)j * hd + i0;
		_mm_prefetch((const char *)(v + (size_t)MIX_AHEAD * hd), _MM_HINT_T0);
		__m512 ve[4], vo[4];
#pragma GCC unroll 4
		for (int c = 0; c < C; c++) {
			__m512i raw = _mm512_loadu_si512((const void *)(v + 32 * c));
			ve[c] = _mm512_castsi512_ps(_mm512_slli_epi32(raw, 16));
			vo[c] = _mm512_castsi512_ps(_mm512_and_si512(raw, hi));
		}
#pragma GCC unroll 5
		for (int t = 0; t < T; t++) {
			__m512 pj = _mm512_set1_ps(p[(size_t)t * ldp + j]);
#pragma GCC unroll 4
			for (int c = 0; c < C; c++) {
				e[t][c] = _mm512_fmadd_ps(pj, ve[c], e[t][c]);
				o[t][c] = _mm512_fmadd_ps(pj, vo[c], o[t][c]);
			}
		}
	}
	const __m512i lo16 = _mm512_set_epi32(23, 7, 22, 6, 21, 5, 20, 4, 19, 3, 18, 2, 17, 1, 16, 0);
	const __m512i hi16 = _mm512_add_epi32(lo16, _mm512_set1_epi32(8));
#pragma GCC unroll 5
	for (int t = 0; t < T; t++)
#pragma GCC unroll 4
		for (int c = 0; c < C; c++) {
			float *d = out + (size_t)t * ldo + i0 + 32 * c;
			_mm512_storeu_ps(d, _mm512_permutex2var_ps(e[t][c], lo16, o[t][c]));
			_mm512_storeu_ps(d + 16, _mm512_permutex2var_ps(e[t][c], hi16, o[t][c]));
		}
}

typedef void mixb_fn(float *, int, const float *, int, const uint16_t *, int, int, int);
#define MIXB(T, C) static T512 void mix_bf16_##T##_##C(float *o, int ldo, const float *p, int ldp, \
	const uint16_t *v, int nk, int hd, int i0) { mix_bf16_tile(o, ldo, p, ldp, v, nk, hd, i0, T, C); }
MIXB(1, 4) MIXB(2, 4) MIXB(3, 2) MIXB(4, 2) MIXB(5, 2)
static mixb_fn *const mix_bf16_tiles[5] = {mix_bf16_1_4, mix_bf16_2_4, mix_bf16_3_2, mix_bf16_4_2,
					   mix_bf16_5_2};

/* bf16 values, head_dim a multiple of 128 (every Qwen3 size). */
static T512 void mix_bf16(float *out, int ldo, const float *p, int ldp, int T, const uint16_t *vals,
			  int nk, int hd)
{
	for (int t = 0; t < T; t += 5) {
		int n = T - t < 5 ? T - t : 5, dims = n <= 2 ? 128 : 64;
		for (int i0 = 0; i0 < hd; i0 += dims)
			mix_bf16_tiles[n - 1](out + (size_t)t * ldo, ldo, p + (size_t)t * ldp, ldp, vals, nk,
					      hd, i0);
	}
}

typedef void mixt_fn(float *, int, const float *, int, const void *, int, int, int, bool);
#define MIXT(T) static T512 void mix_512_tile64_##T(float *o, int ldo, const float *p, int ldp, 	const void *v, int nk, int hd, int i0, bool bf16) { mix_512_tile64(o, ldo, p, ldp, v, nk, hd, i0, bf16, T); }
MIXT(1) MIXT(2) MIXT(3) MIXT(4) MIXT(5)
static mixt_fn *const mix_512_tiles[5] = {mix_512_tile64_1, mix_512_tile64_2, mix_512_tile64_3,
					  mix_512_tile64_4, mix_512_tile64_5};

/* One query, any head_dim: 64 dims per pass, the last pass masked. */
static T512 void mix_512_row(float *out, const float *p, const void *vals, int nk, int hd, bool bf16)
{
	for (int i = 0; i < hd; i += 64) {
		__m512 a[4];
		__mmask16 mk[4];
		for (int c = 0; c < 4; c++) {
			mk[c] = tail16(hd - i - 16 * c);
			a[c] = _mm512_setzero_ps();
		}
		for (int j = 0; j < nk; j++) {
			__m512 pj = _mm512_set1_ps(p[j]);
			for (int c = 0; c < 4; c++)
				if (mk[c])
					a[c] = _mm512_fmadd_ps(pj, kv16_512(vals, (size_t)j * hd + i + 16 * c,
									     bf16, mk[c]), a[c]);
		}
		for (int c = 0; c < 4; c++)
			_mm512_mask_storeu_ps(out + i + 16 * c, mk[c], a[c]);
	}
}

static T512 void mix_512(float *out, int ldo, const float *p, int ldp, int T, const void *vals,
			 int nk, int hd, bool bf16)
{
	if (bf16 && hd % 128 == 0) {   /* every Qwen3 head_dim, with the default bf16 cache */
		mix_bf16(out, ldo, p, ldp, T, vals, nk, hd);
		return;
	}
	if (T == 1 && hd % 128 == 0) {   /* decode */
		mix_512_by128(out, p, vals, nk, hd, bf16);
		return;
	}
	for (int t = 0; t < T; t += 5) {
		int n = T - t < 5 ? T - t : 5;
		const float *pt = p + (size_t)t * ldp;
		float *o = out + (size_t)t * ldo;
		if (hd % 64 == 0)
			for (int i0 = 0; i0 < hd; i0 += 64)
				mix_512_tiles[n - 1](o, ldo, pt, ldp, vals, nk, hd, i0, bf16);
		else
			for (int u = 0; u < n; u++)
				mix_512_row(o + (size_t)u * ldo, pt + (size_t)u * ldp, vals, nk, hd, bf16);
	}
}

/* Element-wise steps. e^x for 16 lanes, within 2 ulp of expf over the whole float
 * range: x = n ln2 + r with |r| <= ln2/2, Cephes' expf polynomial for e^r, and
 * vscalefps for the 2^n (underflow to zero and overflow to inf included). NaN stays
 * NaN: vmaxps/vminps return their second operand when either is NaN. */
INL T512 __m512 exp_512(__m512 x)
{
	x = _mm512_min_ps(_mm512_set1_ps(89.0f), _mm512_max_ps(_mm512_set1_ps(-104.0f), x));
	__m512 n = _mm512_roundscale_ps(_mm512_mul_ps(x, _mm512_set1_ps(1.44269504088896341f)),
					_MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
	__m512 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(0.693359375f), x);   /* ln2 in two parts */
	r = _mm512_fnmadd_ps(n, _mm512_set1_ps(-2.12194440e-4f), r);
	__m512 p = _mm512_set1_ps(1.9875691500e-4f);
	p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.3981999507e-3f));
	p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(8.3334519073e-3f));
	p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(4.1665795894e-2f));
	p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.6666665459e-1f));
	p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(5.0000001201e-1f));
	p = _mm512_fmadd_ps(p, _mm512_mul_ps(r, r), _mm512_add_ps(r, _mm512_set1_ps(1.0f)));
	return _mm512_scalef_ps(p, n);
}

static T512 void softmax_512(float *s, int n, float scale)
{
	__m512 mx = _mm512_set1_ps(-INFINITY), vs = _mm512_set1_ps(scale);
	for (int i = 0; i < n; i += 16) {
		__mmask16 m = tail16(n - i);
		__m512 v = _mm512_mul_ps(_mm512_maskz_loadu_ps(m, s + i), vs);
		_mm512_mask_storeu_ps(s + i, m, v);
		mx = _mm512_mask_max_ps(mx, m, mx, v);
	}
	__m512 top = _mm512_set1_ps(_mm512_reduce_max_ps(mx)), sum = _mm512_setzero_ps();
	for (int i = 0; i < n; i += 16) {
		__mmask16 m = tail16(n - i);
		__m512 e = exp_512(_mm512_sub_ps(_mm512_maskz_loadu_ps(m, s + i), top));
		_mm512_mask_storeu_ps(s + i, m, e);
		sum = _mm512_mask_add_ps(sum, m, sum, e);
	}
	__m512 inv = _mm512_set1_ps(1.0f / _mm512_reduce_add_ps(sum));
	for (int i = 0; i < n; i += 16) {
		__mmask16 m = tail16(n - i);
		_mm512_mask_storeu_ps(s + i, m, _mm512_mul_ps(_mm512_maskz_loadu_ps(m, s + i), inv));
	}
}

static T512 void swiglu_512(float *g, const float *u, int n)
{
	const __m512 one = _mm512_set1_ps(1.0f);
	for (int i = 0; i < n; i += 16) {
		__mmask16 m = tail16(n - i);
		__m512 x = _mm512_maskz_loadu_ps(m, g + i);
		__m512 silu = _mm512_div_ps(x, _mm512_add_ps(one, exp_512(_mm512_sub_ps(_mm512_setzero_ps(), x))));
		_mm512_mask_storeu_ps(g + i, m, _mm512_mul_ps(silu, _mm512_maskz_loadu_ps(m, u + i)));
	}
}

static T512 void rmsnorm_512(float *out, const float *x, const uint16_t *w, int n, float eps)
{
	__m512 a = _mm512_setzero_ps(), b = _mm512_setzero_ps();
	int i = 0;
	for (; i + 32 <= n; i += 32) {
		__m512 v = _mm512_loadu_ps(x + i), u = _mm512_loadu_ps(x + i + 16);
		a = _mm512_fmadd_ps(v, v, a);
		b = _mm512_fmadd_ps(u, u, b);
	}
	for (; i < n; i += 16) {
		__m512 v = _mm512_maskz_loadu_ps(tail16(n - i), x + i);
		a = _mm512_fmadd_ps(v, v, a);
	}
	__m512 r = _mm512_set1_ps(1.0f / sqrtf(_mm512_reduce_add_ps(_mm512_add_ps(a, b)) / n + eps));
	for (i = 0; i < n; i += 16) {
		__mmask16 m = tail16(n - i);
		__m512 v = _mm512_mul_ps(_mm512_maskz_loadu_ps(m, x + i), r);
		_mm512_mask_storeu_ps(out + i, m, _mm512_mul_ps(kv16_512(w, (size_t)i, true, m), v));
	}
}

/* cpu_pack_row with pack 32: two permutes split each block into evens and odds. */
static T512 void pack_row_512(float *xp, const float *x, int K)
{
	const __m512i even = _mm512_set_epi32(30, 28, 26, 24, 22, 20, 18, 16, 14, 12, 10, 8, 6, 4, 2, 0);
	const __m512i odd = _mm512_add_epi32(even, _mm512_set1_epi32(1));
	int kb = K & ~31;
	for (int k = 0; k < kb; k += 32) {
		__m512 a = _mm512_loadu_ps(x + k), b = _mm512_loadu_ps(x + k + 16);
		_mm512_storeu_ps(xp + k, _mm512_permutex2var_ps(a, even, b));
		_mm512_storeu_ps(xp + k + 16, _mm512_permutex2var_ps(a, odd, b));
	}
	for (int k = kb; k < K; k++)
		xp[k] = x[k];
}

/* cpu_f32_to_bf16 on 16 lanes: round to nearest even, NaN kept quiet. */
static T512 void to_bf16_512(uint16_t *xb, const float *x, int n)
{
	const __m512i one = _mm512_set1_epi32(1), half = _mm512_set1_epi32(0x7fff);
	const __m512i abs = _mm512_set1_epi32(0x7fffffff), inf = _mm512_set1_epi32(0x7f800000);
	for (int i = 0; i < n; i += 16) {
		__mmask16 m = tail16(n - i);
		__m512i u = _mm512_castps_si512(_mm512_maskz_loadu_ps(m, x + i));
		__mmask16 nan = _mm512_cmpgt_epi32_mask(_mm512_and_si512(u, abs), inf);
		__m512i lsb = _mm512_and_si512(_mm512_srli_epi32(u, 16), one);
		__m512i r = _mm512_srli_epi32(_mm512_add_epi32(u, _mm512_add_epi32(half, lsb)), 16);
		r = _mm512_mask_or_epi32(r, nan, _mm512_srli_epi32(u, 16), _mm512_set1_epi32(0x40));
		_mm256_mask_storeu_epi16(xb + i, m, _mm512_cvtepi32_epi16(r));
	}
}

static const struct cpu_kernels kernels_512 = {
	.name = "avx512", .pack = 32, .matmul = matmul_512, .matmul_panel = matmul_panel_512,
	.scores = scores_512, .mix = mix_512,
	.pack_row = pack_row_512,
	.softmax = softmax_512, .swiglu = swiglu_512, .rmsnorm = rmsnorm_512, .to_bf16 = to_bf16_512,
};

/* ---- AVX-512 BF16: bf16 activations (opt-in prefill) ------------------------------ */
#define TBF16 __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,avx512bf16,fma")))

/* vdpbf16ps multiplies pairs: each 32-bit lane of the panel holds two adjacent k of
 * one weight row, and the token's same two k are broadcast to every lane. T tokens
 * (a constant) times the panel's 64 rows: 6 x 4 accumulators. */
INL TBF16 void mkpanel(float *out, int ldo, const uint16_t *xb, int ldx, const uint32_t *panel,
		       int K, int rows, bool acc, const int T)
{
	__m512 a[6][4];
#pragma GCC unroll 6
	for (int t = 0; t < T; t++)
#pragma GCC unroll 4
		for (int r = 0; r < 4; r++)
			a[t][r] = _mm512_setzero_ps();
	const int pairs = (K + 1) / 2;
	for (int p = 0; p < pairs; p++) {
		const __m512i *pw = (const __m512i *)(panel + (size_t)p * CPU_PANEL_ROWS);
		__m512bh w[4];
#pragma GCC unroll 4
		for (int r = 0; r < 4; r++)
			w[r] = (__m512bh)_mm512_load_si512(pw + r);
#pragma GCC unroll 6
		for (int t = 0; t < T; t++) {
			uint32_t x2;
			const uint16_t *xt = xb + (size_t)t * ldx + 2 * p;
			if (2 * p + 1 < K)
				memcpy(&x2, xt, sizeof x2);
			else
				x2 = xt[0];   /* odd K's last pair: never read past the row */
			__m512bh x = (__m512bh)_mm512_set1_epi32((int)x2);
#pragma GCC unroll 4
			for (int r = 0; r < 4; r++)
				a[t][r] = _mm512_dpbf16_ps(a[t][r], w[r], x);
		}
	}
	store_panel_tile(out, ldo, a, rows, acc, T);
}

typedef void mkp_fn(float *, int, const uint16_t *, int, const uint32_t *, int, int, bool);
#define MKP(T) static TBF16 void mkpanel_##T(float *o, int ldo, const uint16_t *x, int ldx, \
	const uint32_t *panel, int K, int rows, bool acc) { mkpanel(o, ldo, x, ldx, panel, K, rows, acc, T); }
MKP(1) MKP(2) MKP(3) MKP(4) MKP(5) MKP(6)
static mkp_fn *const mkpanel_t[6] = {mkpanel_1, mkpanel_2, mkpanel_3, mkpanel_4, mkpanel_5, mkpanel_6};

static void matmul_bf16_512(float *out, int ldo, const uint16_t *xb, int ldx, int n,
			    const uint16_t *w, int K, int m0, int m1, bool acc, uint32_t *panel)
{
	for (int mc = m0; mc < m1; mc += CPU_PANEL_ROWS) {
		int rows = m1 - mc < CPU_PANEL_ROWS ? m1 - mc : CPU_PANEL_ROWS;
		pack_panel(panel, w, K, mc, rows);
		for (int t = 0; t < n; t += 6) {
			int T = n - t < 6 ? n - t : 6;
			mkpanel_t[T - 1](out + (size_t)t * ldo + mc, ldo, xb + (size_t)t * ldx, ldx, panel,
					 K, rows, acc);
		}
	}
}

static const struct cpu_kernels kernels_512bf16 = {
	.name = "avx512bf16", .pack = 32, .matmul = matmul_512, .matmul_bf16 = matmul_bf16_512,
	.matmul_panel = matmul_panel_512,
	.scores = scores_512, .mix = mix_512,
	.pack_row = pack_row_512,
	.softmax = softmax_512, .swiglu = swiglu_512, .rmsnorm = rmsnorm_512, .to_bf16 = to_bf16_512,
};

/* ---- AVX2 + FMA ---------------------------------------------------------------- */
#define T256 __attribute__((target("avx2,fma")))

static inline float hsum256(__m256 v) __attribute__((always_inline, target("avx2,fma")));
static inline float hsum256(__m256 v)
{
	__m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
	s = _mm_add_ps(s, _mm_movehl_ps(s, s));
	s = _mm_add_ss(s, _mm_movehdup_ps(s));
	return _mm_cvtss_f32(s);
}

INL T256 void mk256(float *out, int ldo, const float *xp, int ldx, const uint16_t *w,
		    int K, const int R, const int T, bool acc)
{
	__m256 a[4][3];
	const __m256i hi = _mm256_set1_epi32((int)0xffff0000u);
#pragma GCC unroll 4
	for (int r = 0; r < R; r++)
#pragma GCC unroll 3
		for (int t = 0; t < T; t++)
			a[r][t] = _mm256_setzero_ps();
	const int kb = K & ~15;
	for (int k = 0; k < kb; k += 16) {
#pragma GCC unroll 4
		for (int r = 0; r < R; r++) {
			__m256i raw = _mm256_loadu_si256((const __m256i *)(w + (size_t)r * K + k));
			__m256 we = _mm256_castsi256_ps(_mm256_slli_epi32(raw, 16));
			__m256 wo = _mm256_castsi256_ps(_mm256_and_si256(raw, hi));
#pragma GCC unroll 3
			for (int t = 0; t < T; t++) {
				const float *x = xp + (size_t)t * ldx + k;
				a[r][t] = _mm256_fmadd_ps(we, _mm256_loadu_ps(x), a[r][t]);
				a[r][t] = _mm256_fmadd_ps(wo, _mm256_loadu_ps(x + 8), a[r][t]);
			}
		}
	}
#pragma GCC unroll 4
	for (int r = 0; r < R; r++)
#pragma GCC unroll 3
		for (int t = 0; t < T; t++) {
			float s = hsum256(a[r][t]);
			for (int k = kb; k < K; k++)
				s += cpu_bf16_to_f32(w[(size_t)r * K + k]) * xp[(size_t)t * ldx + k];
			float *o = out + (size_t)t * ldo + r;
			*o = acc ? *o + s : s;
		}
}

#define MK256(R, T) static T256 void mk256_##R##_##T(float *o, int ldo, const float *x, \
	int ldx, const uint16_t *w, int K, bool acc) { mk256(o, ldo, x, ldx, w, K, R, T, acc); }
MK256(4, 1) MK256(4, 2) MK256(4, 3) MK256(1, 1) MK256(1, 2) MK256(1, 3)
static mk_fn *const mk256_r4[3] = {mk256_4_1, mk256_4_2, mk256_4_3};
static mk_fn *const mk256_r1[3] = {mk256_1_1, mk256_1_2, mk256_1_3};

/* Decode as matvec_512 does it: MV_STREAMS rows from as many parts of the block side
 * by side, each prefetching MV_AHEAD lines ahead (no aligned-line shifting: AVX2
 * has no two-register permute). S (a constant): MV_STREAMS, or 1 for the rows left. */
INL T256 void mv256_rows(float *out, const float *xp, const uint16_t *w, int K, int m0, int q,
			 int i, bool acc, const int S)
{
	const __m256i hi = _mm256_set1_epi32((int)0xffff0000u);
	const int k1 = K & ~15;
	const uint16_t *wr[MV_STREAMS];
	__m256 ae[MV_STREAMS], ao[MV_STREAMS];
#pragma GCC unroll 8
	for (int j = 0; j < S; j++) {
		wr[j] = w + (size_t)(m0 + j * q + i) * K;
		ae[j] = ao[j] = _mm256_setzero_ps();
	}
	for (int k = 0; k < k1; k += 16) {
		__m256 xe = _mm256_loadu_ps(xp + k), xo = _mm256_loadu_ps(xp + k + 8);
#pragma GCC unroll 8
		for (int j = 0; j < S; j++) {
			_mm_prefetch((const char *)(wr[j] + k) + 64 * MV_AHEAD, _MM_HINT_T0);
			__m256i raw = _mm256_loadu_si256((const __m256i *)(wr[j] + k));
			ae[j] = _mm256_fmadd_ps(_mm256_castsi256_ps(_mm256_slli_epi32(raw, 16)), xe, ae[j]);
			ao[j] = _mm256_fmadd_ps(_mm256_castsi256_ps(_mm256_and_si256(raw, hi)), xo, ao[j]);
		}
	}
#pragma GCC unroll 8
	for (int j = 0; j < S; j++) {
		float sum = hsum256(_mm256_add_ps(ae[j], ao[j]));
		for (int k = k1; k < K; k++)
			sum += cpu_bf16_to_f32(wr[j][k]) * xp[k];
		float *o = out + m0 + j * q + i;
		*o = acc ? *o + sum : sum;
	}
}

static T256 void matvec_256(float *out, const float *xp, const uint16_t *w, int K, int m0, int m1,
			    bool acc)
{
	int q = (m1 - m0) / MV_STREAMS;
	for (int i = 0; i < q; i++)
		mv256_rows(out, xp, w, K, m0, q, i, acc, MV_STREAMS);
	for (int m = m0 + MV_STREAMS * q; m < m1; m++)
		mv256_rows(out, xp, w, K, m, 0, 0, acc, 1);
}

static void matmul_256(float *out, int ldo, const float *xp, int ldx, int n,
		       const uint16_t *w, int K, int m0, int m1, bool acc,
			 uint32_t *panel)
{
	(void)panel;
	if (n == 1) {
		matvec_256(out, xp, w, K, m0, m1, acc);
		return;
	}
	matmul_tiles(mk256_r4, mk256_r1, 3, out, ldo, xp, ldx, n, w, K, m0, m1, acc);
}

INL T256 __m256 kv8_256(const void *rows, size_t off, bool bf16)
{
	if (bf16) {
		__m128i h = _mm_loadu_si128((const __m128i *)((const uint16_t *)rows + off));
		return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
	}
	return _mm256_loadu_ps((const float *)rows + off);
}

static T256 void scores_256(float *s, const float *q, const void *keys, int nk, int hd,
			    bool bf16, float scale)
{
	int hb = hd & ~7;
	for (int j = 0; j < nk; j++) {
		__m256 a = _mm256_setzero_ps();
		for (int i = 0; i < hb; i += 8)
			a = _mm256_fmadd_ps(_mm256_loadu_ps(q + i), kv8_256(keys, (size_t)j * hd + i, bf16), a);
		float d = hsum256(a);
		for (int i = hb; i < hd; i++)
			d += q[i] * kv_at(keys, (size_t)j * hd + i, bf16);
		s[j] = d * scale;
	}
}

static T256 void mix_256_row(float *out, const float *p, const void *vals, int nk, int hd, bool bf16)
{
	int hb = hd & ~7;
	for (int i = 0; i < hb; i += 8) {
		__m256 a = _mm256_setzero_ps();
		for (int j = 0; j < nk; j++)
			a = _mm256_fmadd_ps(_mm256_set1_ps(p[j]), kv8_256(vals, (size_t)j * hd + i, bf16), a);
		_mm256_storeu_ps(out + i, a);
	}
	for (int i = hb; i < hd; i++) {
		float d = 0;
		for (int j = 0; j < nk; j++)
			d += p[j] * kv_at(vals, (size_t)j * hd + i, bf16);
		out[i] = d;
	}
}

static T256 void mix_256(float *out, int ldo, const float *p, int ldp, int T, const void *vals,
			 int nk, int hd, bool bf16)
{
	for (int t = 0; t < T; t++)
		mix_256_row(out + (size_t)t * ldo, p + (size_t)t * ldp, vals, nk, hd, bf16);
}

/* e^x for 8 lanes: exp_512's method, with 2^n built in the exponent field, so x is
 * kept within [-87.3, 88.3] (results below 1e-38 come out as ~1e-38). */
INL T256 __m256 exp_256(__m256 x)
{
	x = _mm256_min_ps(_mm256_set1_ps(88.3f), _mm256_max_ps(_mm256_set1_ps(-87.3f), x));
	__m256 n = _mm256_round_ps(_mm256_mul_ps(x, _mm256_set1_ps(1.44269504088896341f)),
				   _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
	__m256 r = _mm256_fnmadd_ps(n, _mm256_set1_ps(0.693359375f), x);
	r = _mm256_fnmadd_ps(n, _mm256_set1_ps(-2.12194440e-4f), r);
	__m256 p = _mm256_set1_ps(1.9875691500e-4f);
	p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.3981999507e-3f));
	p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(8.3334519073e-3f));
	p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(4.1665795894e-2f));
	p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.6666665459e-1f));
	p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(5.0000001201e-1f));
	p = _mm256_fmadd_ps(p, _mm256_mul_ps(r, r), _mm256_add_ps(r, _mm256_set1_ps(1.0f)));
	__m256i e = _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)), 23);
	return _mm256_mul_ps(p, _mm256_castsi256_ps(e));
}

static T256 void softmax_256(float *s, int n, float scale)
{
	int nb = n & ~7;
	__m256 vs = _mm256_set1_ps(scale), mx = _mm256_set1_ps(-INFINITY);
	for (int i = 0; i < nb; i += 8) {
		__m256 v = _mm256_mul_ps(_mm256_loadu_ps(s + i), vs);
		_mm256_storeu_ps(s + i, v);
		mx = _mm256_max_ps(mx, v);
	}
	float top = -INFINITY;
	for (int i = 0; i < 8; i++)
		top = mx[i] > top ? mx[i] : top;
	for (int i = nb; i < n; i++) {
		s[i] *= scale;
		top = s[i] > top ? s[i] : top;
	}
	__m256 vt = _mm256_set1_ps(top), sum = _mm256_setzero_ps();
	for (int i = 0; i < nb; i += 8) {
		__m256 e = exp_256(_mm256_sub_ps(_mm256_loadu_ps(s + i), vt));
		_mm256_storeu_ps(s + i, e);
		sum = _mm256_add_ps(sum, e);
	}
	float total = hsum256(sum);
	for (int i = nb; i < n; i++) {
		s[i] = expf(s[i] - top);
		total += s[i];
	}
	__m256 inv = _mm256_set1_ps(1.0f / total);
	for (int i = 0; i < nb; i += 8)
		_mm256_storeu_ps(s + i, _mm256_mul_ps(_mm256_loadu_ps(s + i), inv));
	for (int i = nb; i < n; i++)
		s[i] *= inv[0];
}

static T256 void swiglu_256(float *g, const float *u, int n)
{
	int nb = n & ~7;
	const __m256 one = _mm256_set1_ps(1.0f);
	for (int i = 0; i < nb; i += 8) {
		__m256 x = _mm256_loadu_ps(g + i);
		__m256 silu = _mm256_div_ps(x, _mm256_add_ps(one, exp_256(_mm256_sub_ps(_mm256_setzero_ps(), x))));
		_mm256_storeu_ps(g + i, _mm256_mul_ps(silu, _mm256_loadu_ps(u + i)));
	}
	cpu_swiglu(g + nb, u + nb, n - nb);
}

/* matmul_panel on AVX2: 8 rows per vector, all 8 vectors of the panel's 64 rows
 * accumulated side by side, one token at a time. */
static T256 void matmul_panel_256(float *out, int ldo, const float *xp, int ldx, int n,
				  const uint32_t *panel, int K, int rows)
{
	const __m256i hi = _mm256_set1_epi32((int)0xffff0000u);
	for (int t = 0; t < n; t++) {
		const float *x = xp + (size_t)t * ldx;
		__m256 a[8];
		for (int g = 0; g < 8; g++)
			a[g] = _mm256_setzero_ps();
		for (int p = 0; p < K / 2; p++) {
			int ke, ko;
			packed_pair(p, K, 16, &ke, &ko);
			__m256 xe = _mm256_set1_ps(x[ke]), xo = _mm256_set1_ps(x[ko]);
			const __m256i *w = (const __m256i *)(panel + (size_t)p * CPU_PANEL_ROWS);
			for (int g = 0; g < 8; g++) {
				__m256i raw = _mm256_load_si256(w + g);
				a[g] = _mm256_fmadd_ps(_mm256_castsi256_ps(_mm256_slli_epi32(raw, 16)), xe, a[g]);
				a[g] = _mm256_fmadd_ps(_mm256_castsi256_ps(_mm256_and_si256(raw, hi)), xo, a[g]);
			}
		}
		float all[CPU_PANEL_ROWS];
		for (int g = 0; g < 8; g++)
			_mm256_storeu_ps(all + 8 * g, a[g]);
		memcpy(out + (size_t)t * ldo, all, (size_t)rows * sizeof *all);
	}
}

static void pack_row_256(float *xp, const float *x, int K)
{
	cpu_pack_row(xp, x, K, 16);
}

static const struct cpu_kernels kernels_256 = {
	.name = "avx2", .pack = 16, .matmul = matmul_256, .matmul_panel = matmul_panel_256,
	.scores = scores_256, .mix = mix_256,
	.pack_row = pack_row_256,
	.softmax = softmax_256, .swiglu = swiglu_256, .rmsnorm = cpu_rmsnorm, .to_bf16 = cpu_bf16_row,
};
#endif /* CPU_X86 */

/* ---- dispatch ------------------------------------------------------------------ */

bool cpu_isa_supported(enum cpu_isa isa)
{
#ifdef CPU_X86
	__builtin_cpu_init();
	switch (isa) {
	case CPU_ISA_AVX512BF16:
		return cpu_isa_supported(CPU_ISA_AVX512) && __builtin_cpu_supports("avx512bf16");
	case CPU_ISA_AVX512:
		return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
		       __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq") &&
		       __builtin_cpu_supports("fma");
	case CPU_ISA_AVX2:
		return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
	case CPU_ISA_C:
		return true;
	}
	return false;
#else
	return isa == CPU_ISA_C;
#endif
}

enum cpu_isa cpu_isa_best(void)
{
	if (cpu_isa_supported(CPU_ISA_AVX512BF16))
		return CPU_ISA_AVX512BF16;
	if (cpu_isa_supported(CPU_ISA_AVX512))
		return CPU_ISA_AVX512;
	if (cpu_isa_supported(CPU_ISA_AVX2))
		return CPU_ISA_AVX2;
	return CPU_ISA_C;
}

bool cpu_isa_from_name(const char *name, enum cpu_isa *isa)
{
	for (int i = CPU_ISA_C; i <= CPU_ISA_AVX512BF16; i++)
		if (!strcmp(name, cpu_kernels_get((enum cpu_isa)i)->name)) {
			*isa = (enum cpu_isa)i;
			return true;
		}
	return false;
}

const struct cpu_kernels *cpu_kernels_get(enum cpu_isa isa)
{
#ifdef CPU_X86
	if (isa == CPU_ISA_AVX512BF16)
		return &kernels_512bf16;
	if (isa == CPU_ISA_AVX512)
		return &kernels_512;
	if (isa == CPU_ISA_AVX2)
		return &kernels_256;
#endif
	(void)isa;
	return &kernels_c;
}

void cpu_bf16_row(uint16_t *xb, const float *x, int K)
{
	for (int k = 0; k < K; k++)
		xb[k] = cpu_f32_to_bf16(x[k]);
}

void cpu_pack_row(float *xp, const float *x, int K, int pack)
{
	int kb = pack > 1 ? K / pack * pack : 0;
	int h = pack / 2;
	for (int b = 0; b < kb; b += pack)
		for (int i = 0; i < h; i++) {
			xp[b + i] = x[b + 2 * i];
			xp[b + h + i] = x[b + 2 * i + 1];
		}
	for (int k = kb; k < K; k++)
		xp[k] = x[k];
}

/* ---- element-wise steps ---------------------------------------------------------- */

void cpu_rmsnorm(float *out, const float *x, const uint16_t *w, int n, float eps)
{
	double ss = 0;
	for (int i = 0; i < n; i++)
		ss += (double)x[i] * x[i];
	float r = 1.0f / sqrtf((float)(ss / n) + eps);
	for (int i = 0; i < n; i++)
		out[i] = cpu_bf16_to_f32(w[i]) * (x[i] * r);
}

void cpu_rope(float *x, const float *cos, const float *sin, int hd)
{
	int h = hd / 2;
	for (int i = 0; i < h; i++) {
		float a = x[i], b = x[i + h];
		x[i] = a * cos[i] - b * sin[i];
		x[i + h] = b * cos[i] + a * sin[i];
	}
}

void cpu_softmax(float *s, int n, float scale)
{
	float mx = -INFINITY;
	for (int i = 0; i < n; i++) {
		s[i] *= scale;
		mx = s[i] > mx ? s[i] : mx;
	}
	float sum = 0;
	for (int i = 0; i < n; i++) {
		s[i] = expf(s[i] - mx);
		sum += s[i];
	}
	float inv = 1.0f / sum;
	for (int i = 0; i < n; i++)
		s[i] *= inv;
}

void cpu_swiglu(float *g, const float *u, int n)
{
	for (int i = 0; i < n; i++)
		g[i] = g[i] / (1.0f + expf(-g[i])) * u[i];
}
