/* kernels_avx512.c — the CPU matrix products for AVX-512 (F, BW, VL, DQ) and, for
 * the opt-in bf16-activation prefill, AVX-512 BF16 (vdpbf16ps), and the AVX-512
 * kernel tables (attention and element-wise steps: kernels_avx512_ops.c). Every function carries
 * __attribute__((target)), so the program is built for baseline x86-64 and only
 * calls these where the CPU has them (kernels.c dispatches). A new kernel for this
 * instruction set goes here, and into the tables at the end. */
#include <math.h>
#include <string.h>

#if defined(__x86_64__)
#include "engine/cpu/amx.h"
#include "engine/cpu/avx512.h"

/* ---- AVX-512F ------------------------------------------------------------------ */

/* R rows of w times T packed activation rows; K split into 32-wide blocks where
 * one 64-byte load gives 16 even and 16 odd weights (shift / mask). */
INL T512 void mk512(float *out, int ldo, const float *xp, int ldx, const uint16_t *w, int K,
		    const int R, const int T, bool acc)
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
				s += cpu_bf16_to_f32(w[(size_t)r * K + k]) *
				     xp[(size_t)t * ldx + k];
			float *o = out + (size_t)t * ldo + r;
			*o = acc ? *o + s : s;
		}
}

#define MK512(R, T)                                                                  \
	static T512 void mk512_##R##_##T(float *o, int ldo, const float *x, int ldx, \
					 const uint16_t *w, int K, bool acc)         \
	{                                                                            \
		mk512(o, ldo, x, ldx, w, K, R, T, acc);                              \
	}
MK512(4, 1)
MK512(4, 2)
MK512(4, 3)
MK512(4, 4)
MK512(4, 5)
MK512(1, 1)
MK512(1, 2)
MK512(1, 3)
MK512(1, 4)
MK512(1, 5)

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


/* Software prefetch distance of the row loads, in bytes: the 16 rows are 16 streams
 * the hardware prefetcher alone kept waiting. */
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
				_mm512_store_si512(
					panel + (size_t)(p + j) * CPU_PANEL_ROWS + 16 * g, r[j]);
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
INL T512 void mkpanel32(float *out, int ldo, const float *xp, int ldx, const uint32_t *panel, int K,
			int rows, bool acc, const int T)
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
		bool odd = ko < K; /* false only for an odd K's last pair */
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
#define MKP32(T)                                                                         \
	static T512 void mkpanel32_##T(float *o, int ldo, const float *x, int ldx,       \
				       const uint32_t *panel, int K, int rows, bool acc) \
	{                                                                                \
		mkpanel32(o, ldo, x, ldx, panel, K, rows, acc, T);                       \
	}
MKP32(1)
MKP32(2)
MKP32(3)
MKP32(4)
MKP32(5)
static mkp32_fn *const mkpanel32_t[5] = {mkpanel32_1, mkpanel32_2, mkpanel32_3, mkpanel32_4,
					 mkpanel32_5};


/* Decode: MV_STREAMS rows side by side, prefetching MV_AHEAD lines ahead (tiling.h). */

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
INL T512 void mv_rows_shifted(float *out, const float *xp, const uint16_t *w, int K, int m0, int q,
			      int i, int sh, bool acc)
{
	const __m512i hi = _mm512_set1_epi32((int)0xffff0000u);
	const __m512i idx = _mm512_add_epi32(
		_mm512_set_epi32(15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0),
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
			fma_bf16_512(_mm512_loadu_si512((const void *)(wr[j] + k)), xe, xo, hi,
				     &ae[j], &ao[j]);
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

static T512 void matvec_512(float *out, const float *xp, const uint16_t *w, int K, int m0, int m1,
			    bool acc)
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
		mkpanel32_t[T - 1](out + (size_t)t * ldo, ldo, xp + (size_t)t * ldx, ldx, panel, K,
				   rows, acc);
	}
}

static void matmul_panel_512(float *out, int ldo, const float *xp, int ldx, int n,
			     const uint32_t *panel, int K, int rows)
{
	panel_tiles_512(out, ldo, xp, ldx, n, panel, K, rows, false);
}

static void matmul_512(float *out, int ldo, const float *xp, int ldx, int n, const uint16_t *w,
		       int K, int m0, int m1, bool acc, uint32_t *panel)
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

/* What the three AVX-512 tables share: they differ in the bf16 prefill alone. The
 * exact path's prefill over F32, F16 and quantized weights multiplies them in fp32 by
 * the AVX2 kernels (rounding them to bf16 for the faster kernels would put ~1e-2 of
 * error into the logits that must match a float64 reference). */
#define AVX512_TABLE                                                                   \
	.pack = 32, .matmul = matmul_512, .matmul_panel = matmul_panel_512,           \
	.scores = cpu512_scores, .mix = cpu512_mix, .pack_row = cpu512_pack_row,      \
	.softmax = cpu512_softmax, .swiglu = cpu512_swiglu,                           \
	.swiglu_back = cpu512_swiglu_back, .rmsnorm = cpu512_rmsnorm,                 \
	.scale_sq = cpu512_scale_sq, .adamw = cpu512_adamw,                           \
	.to_bf16 = cpu512_to_bf16, .quantize_act = cpu_quantize_act_avx2,             \
	.qmatvec = cpu_qmatvec_avx2, .dequant_bf16 = cpu_dequant_bf16_avx2,           \
	.dequant_f32p = cpu_dequant_f32p32_avx2, .matmul_f32w = cpu_matmul_f32w_avx2

const struct cpu_kernels cpu_kernels_avx512 = {.name = "avx512", AVX512_TABLE};

/* ---- AVX-512 BF16: bf16 activations (opt-in prefill) ------------------------------ */

/* vdpbf16ps multiplies pairs: each 32-bit lane of the panel holds two adjacent k of
 * one weight row, and the token's same two k are broadcast to every lane. T tokens
 * (a constant) times the panel's 64 rows: 6 x 4 accumulators. */
INL T512BF16 void mkpanel(float *out, int ldo, const uint16_t *xb, int ldx, const uint32_t *panel,
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
				x2 = xt[0]; /* odd K's last pair: never read past the row */
			__m512bh x = (__m512bh)_mm512_set1_epi32((int)x2);
#pragma GCC unroll 4
			for (int r = 0; r < 4; r++)
				a[t][r] = _mm512_dpbf16_ps(a[t][r], w[r], x);
		}
	}
	store_panel_tile(out, ldo, a, rows, acc, T);
}

typedef void mkp_fn(float *, int, const uint16_t *, int, const uint32_t *, int, int, bool);
#define MKP(T)                                                                             \
	static T512BF16 void mkpanel_##T(float *o, int ldo, const uint16_t *x, int ldx,    \
					 const uint32_t *panel, int K, int rows, bool acc) \
	{                                                                                  \
		mkpanel(o, ldo, x, ldx, panel, K, rows, acc, T);                           \
	}
MKP(1)
MKP(2)
MKP(3)
MKP(4)
MKP(5)
MKP(6)
static mkp_fn *const mkpanel_t[6] = {mkpanel_1, mkpanel_2, mkpanel_3,
				     mkpanel_4, mkpanel_5, mkpanel_6};

static void matmul_bf16_512(float *out, int ldo, const uint16_t *xb, int ldx, int n,
			    const uint16_t *w, int K, int m0, int m1, bool acc, uint32_t *panel)
{
	for (int mc = m0; mc < m1; mc += CPU_PANEL_ROWS) {
		int rows = m1 - mc < CPU_PANEL_ROWS ? m1 - mc : CPU_PANEL_ROWS;
		pack_panel(panel, w, K, mc, rows);
		for (int t = 0; t < n; t += 6) {
			int T = n - t < 6 ? n - t : 6;
			mkpanel_t[T - 1](out + (size_t)t * ldo + mc, ldo, xb + (size_t)t * ldx, ldx,
					 panel, K, rows, acc);
		}
	}
}

/* AMX: 32 tokens by 32 rows of the same panel per tile block (the panel's row q of
 * pairs is B's, the tokens' bf16 rows A's, read where they lie). Every token takes
 * the tiles, the last few from a copy padded to 32 rows, so that a token's outputs
 * do not depend on how a prompt was cut into calls. A K that is not a multiple of 32
 * takes the AVX-512 BF16 kernel above for the whole matrix. */
static void matmul_bf16_amx(float *out, int ldo, const uint16_t *xb, int ldx, int n,
			    const uint16_t *w, int K, int m0, int m1, bool acc, uint32_t *panel)
{
	if (K % 32 || ldx % 2) {
		matmul_bf16_512(out, ldo, xb, ldx, n, w, K, m0, m1, acc, panel);
		return;
	}
	int whole = n / 32 * 32, tail = n - whole, kp = K / 2;
	uint32_t *pad = panel + (size_t)CPU_PANEL_ROWS * kp; /* cpu_panel_words' 32 rows */
	for (int t = 0; tail && t < 32; t++)
		if (t < tail)
			memcpy(pad + (size_t)t * kp, xb + (size_t)(whole + t) * ldx, (size_t)K * 2);
		else
			memset(pad + (size_t)t * kp, 0, (size_t)K * 2);
	cpu_amx_begin();
	for (int mc = m0; mc < m1; mc += CPU_PANEL_ROWS) {
		int rows = m1 - mc < CPU_PANEL_ROWS ? m1 - mc : CPU_PANEL_ROWS;
		pack_panel(panel, w, K, mc, rows);
		for (int t = 0; t < n; t += 32) {
			const uint32_t *a = t < whole ? (const uint32_t *)(xb + (size_t)t * ldx) : pad;
			size_t lda = t < whole ? (size_t)ldx / 2 : (size_t)kp;
			for (int r = 0; r < rows; r += 32)
				cpu_amx_tile32(out + (size_t)t * ldo + mc + r, ldo, a, lda,
					       panel + r, CPU_PANEL_ROWS, kp, t < whole ? 32 : tail,
					       rows - r < 32 ? rows - r : 32, acc);
		}
	}
	cpu_amx_end();
}

/* A panel of 64 keys is B as it stands; every query takes the tiles, as in
 * matmul_bf16_amx, whatever its place among n. */
static void scores_bf16_amx(float *out, int ldo, const uint16_t *xb, int ldx, int n,
			    const uint32_t *panels, int K, int nk)
{
	size_t per = (size_t)CPU_PANEL_ROWS * ((K + 1) / 2); /* words of a panel */
	if (K % 32 || ldx % 2) {
		for (int b = 0; CPU_PANEL_ROWS * b < nk; b++) {
			int keys = nk - CPU_PANEL_ROWS * b;
			for (int t = 0; t < n; t += 6)
				mkpanel_t[(n - t < 6 ? n - t : 6) - 1](
					out + (size_t)t * ldo + CPU_PANEL_ROWS * b, ldo, xb + (size_t)t * ldx,
					ldx, panels + per * b, K, keys < 64 ? keys : 64, false);
		}
		return;
	}
	cpu_amx_begin();
	for (int j = 0; j < nk; j += 32) {
		const uint32_t *b = panels + per * (j / CPU_PANEL_ROWS) + j % CPU_PANEL_ROWS;
		for (int t = 0; t < n; t += 32)
			cpu_amx_tile32(out + (size_t)t * ldo + j, ldo,
				       (const uint32_t *)(xb + (size_t)t * ldx), (size_t)ldx / 2, b,
				       CPU_PANEL_ROWS, K / 2, n - t < 32 ? n - t : 32,
				       nk - j < 32 ? nk - j : 32, false);
	}
	cpu_amx_end();
}

const struct cpu_kernels cpu_kernels_avx512bf16 = {
	.name = "avx512bf16",
	.matmul_bf16 = matmul_bf16_512,
	AVX512_TABLE,
};

/* The same kernels, the bf16 prefill on AMX tiles (and training's, gemm.c). */
const struct cpu_kernels cpu_kernels_amx = {
	.name = "amx",
	.matmul_bf16 = matmul_bf16_amx,
	.scores_bf16 = scores_bf16_amx,
	AVX512_TABLE,
};

#endif /* __x86_64__ */
