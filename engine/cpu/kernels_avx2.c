/* kernels_avx2.c — the CPU kernels for AVX2 with FMA: the same operations as the
 * AVX-512 file on 8-lane vectors, for CPUs without AVX-512. Every function carries
 * __attribute__((target)); kernels.c dispatches. A new kernel for this instruction
 * set goes here, and into the table at the end. */
#include <math.h>
#include <string.h>

#if defined(__x86_64__)
#include <immintrin.h>

#include "engine/cpu/avx2.h"

/* ---- AVX2 + FMA ---------------------------------------------------------------- */

INL T256 void mk256(float *out, int ldo, const float *xp, int ldx, const uint16_t *w, int K,
		    const int R, const int T, bool acc)
{
	__m256 a[4][3];
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
			__m256 we = bf16_even(raw), wo = bf16_odd(raw);
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
			float s = hsum(a[r][t]);
			for (int k = kb; k < K; k++)
				s += cpu_bf16_to_f32(w[(size_t)r * K + k]) *
				     xp[(size_t)t * ldx + k];
			float *o = out + (size_t)t * ldo + r;
			*o = acc ? *o + s : s;
		}
}

#define MK256(R, T)                                                                  \
	static T256 void mk256_##R##_##T(float *o, int ldo, const float *x, int ldx, \
					 const uint16_t *w, int K, bool acc)         \
	{                                                                            \
		mk256(o, ldo, x, ldx, w, K, R, T, acc);                              \
	}
MK256(4, 1)
MK256(4, 2)
MK256(4, 3)
MK256(1, 1)
MK256(1, 2)
MK256(1, 3)
static mk_fn *const mk256_r4[3] = {mk256_4_1, mk256_4_2, mk256_4_3};
static mk_fn *const mk256_r1[3] = {mk256_1_1, mk256_1_2, mk256_1_3};

/* Decode as matvec_512 does it: MV_STREAMS rows from as many parts of the block side
 * by side, each prefetching MV_AHEAD lines ahead (no aligned-line shifting: AVX2
 * has no two-register permute). S (a constant): MV_STREAMS, or 1 for the rows left. */
INL T256 void mv256_rows(float *out, const float *xp, const uint16_t *w, int K, int m0, int q,
			 int i, bool acc, const int S)
{
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
			ae[j] = _mm256_fmadd_ps(bf16_even(raw), xe, ae[j]);
			ao[j] = _mm256_fmadd_ps(bf16_odd(raw), xo, ao[j]);
		}
	}
#pragma GCC unroll 8
	for (int j = 0; j < S; j++) {
		float sum = hsum(_mm256_add_ps(ae[j], ao[j]));
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

static void matmul_256(float *out, int ldo, const float *xp, int ldx, int n, const uint16_t *w,
		       int K, int m0, int m1, bool acc, uint32_t *panel)
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

static T256 void scores_256(float *s, const float *q, const void *keys, int nk, int hd, bool bf16,
			    float scale)
{
	int hb = hd & ~7;
	for (int j = 0; j < nk; j++) {
		__m256 a = _mm256_setzero_ps();
		for (int i = 0; i < hb; i += 8)
			a = _mm256_fmadd_ps(_mm256_loadu_ps(q + i),
					    kv8_256(keys, (size_t)j * hd + i, bf16), a);
		float d = hsum(a);
		for (int i = hb; i < hd; i++)
			d += q[i] * kv_at(keys, (size_t)j * hd + i, bf16);
		s[j] = d * scale;
	}
}

/* out[t][c, c + 8W) = sum_j p[t][j] * vals[j][c, c + 8W) for R <= 5 rows t: each value
 * vector widened once for R rows, and R x W accumulators in flight. One accumulator
 * per row and column block (a chain of dependent FMAs, one per 4 cycles) made the
 * mix cost a prefill more than the scores. Five rows: a prefill's attention
 * item has ATT_ROWS / group = 5 queries per head with Qwen3-0.6B's groups of 2. */
INL T256 void mix_tile(float *out, int ldo, const float *p, int ldp, const int R, const void *vals,
		       int nk, int hd, int c, const int W, bool bf16)
{
	__m256 a[5][2];
#pragma GCC unroll 5
	for (int t = 0; t < R; t++)
#pragma GCC unroll 2
		for (int w = 0; w < W; w++)
			a[t][w] = _mm256_setzero_ps();
	for (int j = 0; j < nk; j++) {
		__m256 v[2];
#pragma GCC unroll 2
		for (int w = 0; w < W; w++)
			v[w] = kv8_256(vals, (size_t)j * hd + c + 8 * w, bf16);
#pragma GCC unroll 5
		for (int t = 0; t < R; t++) {
			__m256 pj = _mm256_broadcast_ss(p + (size_t)t * ldp + j);
#pragma GCC unroll 2
			for (int w = 0; w < W; w++)
				a[t][w] = _mm256_fmadd_ps(pj, v[w], a[t][w]);
		}
	}
#pragma GCC unroll 5
	for (int t = 0; t < R; t++)
#pragma GCC unroll 2
		for (int w = 0; w < W; w++)
			_mm256_storeu_ps(out + (size_t)t * ldo + c + 8 * w, a[t][w]);
}

#define MIX(R, W)                                                                          \
	static T256 void mix_##R##_##W(float *o, int ldo, const float *p, int ldp,         \
				       const void *v, int nk, int hd, int c, bool bf16)    \
	{                                                                                  \
		mix_tile(o, ldo, p, ldp, R, v, nk, hd, c, W, bf16);                        \
	}
MIX(1, 1)
MIX(2, 1)
MIX(3, 1)
MIX(4, 1)
MIX(5, 1)
MIX(1, 2)
MIX(2, 2)
MIX(3, 2)
MIX(4, 2)
MIX(5, 2)

/* out[t][c, c + 32) for R <= 2 rows over a bf16 cache: a decode's group of query
 * heads. Each 16 bf16 values are widened by two instructions, the even columns by a
 * shift and the odd ones by a mask, and summed apart, then interleaved once at the
 * end; widening 8 at a time (vpmovzxwd and a shift per 8) kept the shuffle pipes
 * busier than the FMAs, and at long context the mix is a large part of a step. */
INL T256 void mix_pairs(float *out, int ldo, const float *p, int ldp, const int R,
			const uint16_t *vals, int nk, int hd, int c)
{
	__m256 a[2][4]; /* per row: even, odd columns of [c, c + 16), then of [c + 16, c + 32) */
#pragma GCC unroll 2
	for (int t = 0; t < R; t++)
#pragma GCC unroll 4
		for (int i = 0; i < 4; i++)
			a[t][i] = _mm256_setzero_ps();
	for (int j = 0; j < nk; j++) {
		const uint16_t *v = vals + (size_t)j * hd + c;
		__m256i h0 = load32(v), h1 = load32(v + 16);
		__m256 w[4] = {bf16_even(h0), bf16_odd(h0), bf16_even(h1), bf16_odd(h1)};
#pragma GCC unroll 2
		for (int t = 0; t < R; t++) {
			__m256 pj = _mm256_broadcast_ss(p + (size_t)t * ldp + j);
#pragma GCC unroll 4
			for (int i = 0; i < 4; i++)
				a[t][i] = _mm256_fmadd_ps(pj, w[i], a[t][i]);
		}
	}
#pragma GCC unroll 2
	for (int t = 0; t < R; t++)
#pragma GCC unroll 2
		for (int i = 0; i < 2; i++) {
			/* lanes (e0 o0 e1 o1 | e4 o4 e5 o5) and (e2 o2 e3 o3 | e6 o6 e7 o7) */
			__m256 lo = _mm256_unpacklo_ps(a[t][2 * i], a[t][2 * i + 1]);
			__m256 hi = _mm256_unpackhi_ps(a[t][2 * i], a[t][2 * i + 1]);
			float *o = out + (size_t)t * ldo + c + 16 * i;
			_mm256_storeu_ps(o, _mm256_permute2f128_ps(lo, hi, 0x20));
			_mm256_storeu_ps(o + 8, _mm256_permute2f128_ps(lo, hi, 0x31));
		}
}

static T256 void mix_pairs_1(float *o, int ldo, const float *p, int ldp, const uint16_t *v,
			     int nk, int hd, int c)
{
	mix_pairs(o, ldo, p, ldp, 1, v, nk, hd, c);
}

static T256 void mix_pairs_2(float *o, int ldo, const float *p, int ldp, const uint16_t *v,
			     int nk, int hd, int c)
{
	mix_pairs(o, ldo, p, ldp, 2, v, nk, hd, c);
}

static T256 void mix_256(float *out, int ldo, const float *p, int ldp, int T, const void *vals,
			 int nk, int hd, bool bf16)
{
	typedef void fn(float *, int, const float *, int, const void *, int, int, int, bool);
	static fn *const tiles[2][5] = {{mix_1_1, mix_2_1, mix_3_1, mix_4_1, mix_5_1},
					{mix_1_2, mix_2_2, mix_3_2, mix_4_2, mix_5_2}};
	int hb = hd & ~7;
	for (int t = 0; t < T; t += 5) {
		int R = T - t < 5 ? T - t : 5;
		float *o = out + (size_t)t * ldo;
		const float *pt = p + (size_t)t * ldp;
		int c = 0;
		if (bf16 && R <= 2)
			for (; c + 32 <= hb; c += 32)
				(R == 1 ? mix_pairs_1 : mix_pairs_2)(o, ldo, pt, ldp, vals, nk, hd, c);
		for (; c + 16 <= hb; c += 16)
			tiles[1][R - 1](o, ldo, pt, ldp, vals, nk, hd, c, bf16);
		if (c < hb)
			tiles[0][R - 1](o, ldo, pt, ldp, vals, nk, hd, c, bf16);
		for (int r = 0; r < R; r++)
			for (int i = hb; i < hd; i++) {
				float d = 0;
				for (int j = 0; j < nk; j++)
					d += pt[(size_t)r * ldp + j] * kv_at(vals, (size_t)j * hd + i, bf16);
				o[(size_t)r * ldo + i] = d;
			}
	}
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
	__m256i e = _mm256_slli_epi32(
		_mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)), 23);
	return _mm256_mul_ps(p, _mm256_castsi256_ps(e));
}

static T256 void softmax_256(float *s, int n, float scale, double *lse)
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
	float total = hsum(sum);
	for (int i = nb; i < n; i++) {
		s[i] = expf(s[i] - top);
		total += s[i];
	}
	__m256 inv = _mm256_set1_ps(1.0f / total);
	for (int i = 0; i < nb; i += 8)
		_mm256_storeu_ps(s + i, _mm256_mul_ps(_mm256_loadu_ps(s + i), inv));
	for (int i = nb; i < n; i++)
		s[i] *= inv[0];
	if (lse)
		*lse = (double)top + log((double)total);
}

/* Lanes below x = -87, where exp_256 clamps e^-x: sigma(x) is 4e-39 there and x sigma(x)
 * no longer near 0 for a huge -x; SwiGLU takes both as 0. */
INL T256 __m256 far_below(__m256 x)
{
	return _mm256_cmp_ps(x, _mm256_set1_ps(-87.0f), _CMP_LT_OQ);
}

static T256 void swiglu_256(float *g, const float *u, int n)
{
	int nb = n & ~7;
	const __m256 one = _mm256_set1_ps(1.0f);
	for (int i = 0; i < nb; i += 8) {
		__m256 x = _mm256_loadu_ps(g + i);
		__m256 silu = _mm256_div_ps(
			x, _mm256_add_ps(one, exp_256(_mm256_sub_ps(_mm256_setzero_ps(), x))));
		silu = _mm256_andnot_ps(far_below(x), silu);
		_mm256_storeu_ps(g + i, _mm256_mul_ps(silu, _mm256_loadu_ps(u + i)));
	}
	cpu_swiglu(g + nb, u + nb, n - nb);
}

/* cpu_swiglu_back, 8 at a time: du = dh g sigma(g), dh = dh u sigma(g) (1 + g (1 - sigma(g))). */
static T256 void swiglu_back_256(float *dh, float *du, const float *g, const float *u, int n)
{
	int nb = n & ~7;
	const __m256 one = _mm256_set1_ps(1.0f);
	for (int i = 0; i < nb; i += 8) {
		__m256 x = _mm256_loadu_ps(g + i), d = _mm256_loadu_ps(dh + i);
		__m256 e = exp_256(_mm256_sub_ps(_mm256_setzero_ps(), x));
		__m256 sg =
			_mm256_andnot_ps(far_below(x), _mm256_div_ps(one, _mm256_add_ps(one, e)));
		__m256 dx = _mm256_mul_ps(d, sg);
		_mm256_storeu_ps(du + i, _mm256_mul_ps(dx, x));
		/* 1 - sigma as e^-g sigma where g > 0, as cpu_swiglu_back says why; 0 past
		 * g = 80, where exp_256's clamped e^-g is no longer small enough for g */
		__m256 rest = _mm256_blendv_ps(_mm256_sub_ps(one, sg), _mm256_mul_ps(e, sg),
					       _mm256_cmp_ps(x, _mm256_setzero_ps(), _CMP_GT_OQ));
		rest = _mm256_andnot_ps(_mm256_cmp_ps(x, _mm256_set1_ps(80.0f), _CMP_GT_OQ), rest);
		__m256 t = _mm256_fmadd_ps(x, rest, one);
		_mm256_storeu_ps(dh + i,
				 _mm256_mul_ps(_mm256_mul_ps(dx, _mm256_loadu_ps(u + i)), t));
	}
	cpu_swiglu_back(dh + nb, du + nb, g + nb, u + nb, n - nb);
}

/* matmul_panel on AVX2: 8 rows per vector, all 8 vectors of the panel's 64 rows
 * accumulated side by side, one token at a time. */
/* Keys [32h, 32h + 32) of the panel against T (<= 2) query rows: each bf16 pair is
 * widened once for both rows. One row at a time widened every pair again for each
 * row, two integer operations per two FMAs, and the scores cost a prefill more than
 * the mix. */
INL T256 void panel_tile(float *out, int ldo, const float *xp, int ldx, const int T,
			 const uint32_t *panel, int K, int h)
{
	__m256 a[2][4];
#pragma GCC unroll 2
	for (int t = 0; t < T; t++)
#pragma GCC unroll 4
		for (int g = 0; g < 4; g++)
			a[t][g] = _mm256_setzero_ps();
	for (int p = 0; p < K / 2; p++) {
		int ke, ko;
		packed_pair(p, K, 16, &ke, &ko);
		const __m256i *w = (const __m256i *)(panel + (size_t)p * CPU_PANEL_ROWS) + 4 * h;
#pragma GCC unroll 4
		for (int g = 0; g < 4; g++) {
			__m256i raw = _mm256_load_si256(w + g);
			__m256 we = bf16_even(raw), wo = bf16_odd(raw);
#pragma GCC unroll 2
			for (int t = 0; t < T; t++) {
				const float *x = xp + (size_t)t * ldx;
				a[t][g] = _mm256_fmadd_ps(we, _mm256_broadcast_ss(x + ke), a[t][g]);
				a[t][g] = _mm256_fmadd_ps(wo, _mm256_broadcast_ss(x + ko), a[t][g]);
			}
		}
	}
#pragma GCC unroll 2
	for (int t = 0; t < T; t++)
#pragma GCC unroll 4
		for (int g = 0; g < 4; g++)
			_mm256_storeu_ps(out + (size_t)t * ldo + 8 * g, a[t][g]);
}

static T256 void panel_tile_1(float *o, int ldo, const float *x, int ldx, const uint32_t *p, int K,
			      int h)
{
	panel_tile(o, ldo, x, ldx, 1, p, K, h);
}

static T256 void panel_tile_2(float *o, int ldo, const float *x, int ldx, const uint32_t *p, int K,
			      int h)
{
	panel_tile(o, ldo, x, ldx, 2, p, K, h);
}

static T256 void matmul_panel_256(float *out, int ldo, const float *xp, int ldx, int n,
				  const uint32_t *panel, int K, int rows)
{
	float all[2][CPU_PANEL_ROWS];
	for (int t = 0; t < n; t += 2) {
		int T = n - t < 2 ? n - t : 2;
		const float *x = xp + (size_t)t * ldx;
		for (int h = 0; 32 * h < rows; h++)
			(T == 2 ? panel_tile_2 : panel_tile_1)(all[0] + 32 * h, CPU_PANEL_ROWS, x,
								ldx, panel, K, h);
		for (int i = 0; i < T; i++)
			memcpy(out + (size_t)(t + i) * ldo, all[i], (size_t)rows * sizeof *all[i]);
	}
}

/* cpu_rmsnorm with fp32 sums in 16 lanes, as the AVX-512 one: the portable loop's
 * double accumulation showed in a quantized prefill's profile. */
static T256 void rmsnorm_256(float *out, const float *x, const float *w, int n, float eps)
{
	__m256 a = _mm256_setzero_ps(), b = _mm256_setzero_ps();
	int i = 0;
	for (; i + 16 <= n; i += 16) {
		__m256 v = _mm256_loadu_ps(x + i), u = _mm256_loadu_ps(x + i + 8);
		a = _mm256_fmadd_ps(v, v, a);
		b = _mm256_fmadd_ps(u, u, b);
	}
	float ss = hsum(_mm256_add_ps(a, b));
	for (int j = i; j < n; j++)
		ss += x[j] * x[j];
	float r = 1.0f / sqrtf(ss / (float)n + eps);
	__m256 vr = _mm256_set1_ps(r);
	int nb = n & ~7;
	for (i = 0; i < nb; i += 8)
		_mm256_storeu_ps(out + i, _mm256_mul_ps(_mm256_loadu_ps(w + i),
							_mm256_mul_ps(_mm256_loadu_ps(x + i), vr)));
	for (; i < n; i++)
		out[i] = w[i] * (x[i] * r);
}

/* cpu_pack_row with pack 16, as the quantized rows are packed (store_packed16; the
 * scalar loop showed in a prefill's profile). */
static T256 void pack_row_256(float *xp, const float *x, int K)
{
	int kb = K & ~15;
	for (int b = 0; b < kb; b += 16)
		store_packed16(xp + b, _mm256_loadu_ps(x + b), _mm256_loadu_ps(x + b + 8));
	for (int k = kb; k < K; k++)
		xp[k] = x[k];
}

static T256 double scale_sq_256(float *g, size_t n, float scale)
{
	const __m256 sc = _mm256_set1_ps(scale);
	__m256d a = _mm256_setzero_pd(), b = _mm256_setzero_pd();
	size_t k = 0;
	for (; k + 8 <= n; k += 8) {
		__m256 x = _mm256_mul_ps(_mm256_loadu_ps(g + k), sc);
		_mm256_storeu_ps(g + k, x);
		__m256d lo = _mm256_cvtps_pd(_mm256_castps256_ps128(x));
		__m256d hi = _mm256_cvtps_pd(_mm256_extractf128_ps(x, 1));
		a = _mm256_fmadd_pd(lo, lo, a);
		b = _mm256_fmadd_pd(hi, hi, b);
	}
	double t[4];
	_mm256_storeu_pd(t, _mm256_add_pd(a, b));
	return (t[0] + t[1]) + (t[2] + t[3]) + cpu_scale_sq(g + k, n - k, scale);
}

/* cpu_adamw_c, 8 at a time: mul and add apart, never fused, for the same bits. */
static T256 void adamw_256(float *w, float *m, float *v, const float *g, size_t n,
			   const struct cpu_adamw *h)
{
	const __m256 decay = _mm256_set1_ps(h->decay), b1 = _mm256_set1_ps(h->b1),
		     b2 = _mm256_set1_ps(h->b2), c1 = _mm256_set1_ps(h->c1),
		     c2 = _mm256_set1_ps(h->c2), step = _mm256_set1_ps(h->step),
		     rbc2 = _mm256_set1_ps(h->rbc2), eps = _mm256_set1_ps(h->eps);
	size_t k = 0;
	for (; k + 8 <= n; k += 8) {
		__m256 gk = _mm256_loadu_ps(g + k), wk = _mm256_mul_ps(_mm256_loadu_ps(w + k), decay);
		__m256 mk = _mm256_add_ps(_mm256_mul_ps(b1, _mm256_loadu_ps(m + k)), _mm256_mul_ps(c1, gk));
		__m256 vk = _mm256_add_ps(_mm256_mul_ps(b2, _mm256_loadu_ps(v + k)),
					  _mm256_mul_ps(_mm256_mul_ps(c2, gk), gk));
		_mm256_storeu_ps(m + k, mk);
		_mm256_storeu_ps(v + k, vk);
		__m256 den = _mm256_add_ps(_mm256_mul_ps(_mm256_sqrt_ps(vk), rbc2), eps);
		_mm256_storeu_ps(w + k, _mm256_sub_ps(wk, _mm256_div_ps(_mm256_mul_ps(step, mk), den)));
	}
	cpu_adamw_c(w + k, m + k, v + k, g + k, n - k, h);
}

const struct cpu_kernels cpu_kernels_avx2 = {
	.name = "avx2",
	.pack = 16,
	.matmul = matmul_256,
	.matmul_panel = matmul_panel_256,
	.scores = scores_256,
	.mix = mix_256,
	.pack_row = pack_row_256,
	.softmax = softmax_256,
	.swiglu = swiglu_256,
	.swiglu_back = swiglu_back_256,
	.scale_sq = scale_sq_256,
	.adamw = adamw_256,
	.rmsnorm = rmsnorm_256,
	.to_bf16 = cpu_bf16_row,
	.quantize_act = cpu_quantize_act_avx2,
	.qmatvec = cpu_qmatvec_avx2,
	.dequant_bf16 = cpu_dequant_bf16_avx2,
	.dequant_f32p = cpu_dequant_f32p_avx2,
	.matmul_f32w = cpu_matmul_f32w_avx2,
	.qpack = cpu_qpack_avx2,
	.qgemm = cpu_qgemm_avx2,
};
#endif /* __x86_64__ */
