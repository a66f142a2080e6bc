/* kernels_avx512_ops.c — the AVX-512 kernels around the matrix products: attention
 * (scores over the key cache, the value mix) and the element-wise steps (softmax,
 * SwiGLU, RMSNorm, activation packing, bf16 rounding). kernels_avx512.c puts them in
 * its tables. */
#include <math.h>
#include <string.h>

#if defined(__x86_64__)
#include "engine/cpu/avx512.h"

/* 16 keys/values elements of row j as fp32 (mask for the tail). */
INL T512 __m512 kv16_512(const void *rows, size_t off, bool bf16, __mmask16 m)
{
	if (bf16) {
		__m256i h = _mm256_maskz_loadu_epi16(m, (const uint16_t *)rows + off);
		return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
	}
	return _mm512_maskz_loadu_ps(m, (const float *)rows + off);
}

T512 void cpu512_scores(float *s, const float *q, const void *keys, int nk, int hd, bool bf16,
			float scale)
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
static T512 void mix_512_by128(float *out, const float *p, const void *vals, int nk, int hd,
			       bool bf16)
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
				a[c] = _mm512_fmadd_ps(
					p0, kv16_512(vals, r0 + 16 * c, bf16, 0xffff), a[c]);
				b[c] = _mm512_fmadd_ps(
					p1, kv16_512(vals, r1 + 16 * c, bf16, 0xffff), b[c]);
			}
		}
		if (j < nk) {
			__m512 p0 = _mm512_set1_ps(p[j]);
#pragma GCC unroll 8
			for (int c = 0; c < 8; c++)
				a[c] = _mm512_fmadd_ps(
					p0,
					kv16_512(vals, (size_t)j * hd + i + 16 * c, bf16, 0xffff),
					a[c]);
		}
#pragma GCC unroll 8
		for (int c = 0; c < 8; c++)
			_mm512_storeu_ps(out + i + 16 * c, _mm512_add_ps(a[c], b[c]));
	}
}

/* T queries (a constant, <= 5) over 64 dims from i0 of head_dim: each value row is
 * widened once for all of them; 5 x 4 accumulators. */
INL T512 void mix_512_tile64(float *out, int ldo, const float *p, int ldp, const void *vals, int nk,
			     int hd, int i0, bool bf16, const int T)
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
	const __m512i lo16 =
		_mm512_set_epi32(23, 7, 22, 6, 21, 5, 20, 4, 19, 3, 18, 2, 17, 1, 16, 0);
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
#define MIXB(T, C)                                                                      \
	static T512 void mix_bf16_##T##_##C(float *o, int ldo, const float *p, int ldp, \
					    const uint16_t *v, int nk, int hd, int i0)  \
	{                                                                               \
		mix_bf16_tile(o, ldo, p, ldp, v, nk, hd, i0, T, C);                     \
	}
MIXB(1, 4)
MIXB(2, 4)
MIXB(3, 2)
MIXB(4, 2)
MIXB(5, 2)
static mixb_fn *const mix_bf16_tiles[5] = {mix_bf16_1_4, mix_bf16_2_4, mix_bf16_3_2, mix_bf16_4_2,
					   mix_bf16_5_2};

/* bf16 values, head_dim a multiple of 128 (every Qwen3 size). */
static T512 void mix_bf16(float *out, int ldo, const float *p, int ldp, int T, const uint16_t *vals,
			  int nk, int hd)
{
	for (int t = 0; t < T; t += 5) {
		int n = T - t < 5 ? T - t : 5, dims = n <= 2 ? 128 : 64;
		for (int i0 = 0; i0 < hd; i0 += dims)
			mix_bf16_tiles[n - 1](out + (size_t)t * ldo, ldo, p + (size_t)t * ldp, ldp,
					      vals, nk, hd, i0);
	}
}

typedef void mixt_fn(float *, int, const float *, int, const void *, int, int, int, bool);
#define MIXT(T)                                                                               \
	static T512 void mix_512_tile64_##T(float *o, int ldo, const float *p, int ldp,       \
					    const void *v, int nk, int hd, int i0, bool bf16) \
	{                                                                                     \
		mix_512_tile64(o, ldo, p, ldp, v, nk, hd, i0, bf16, T);                       \
	}
MIXT(1)
MIXT(2)
MIXT(3)
MIXT(4)
MIXT(5)
static mixt_fn *const mix_512_tiles[5] = {mix_512_tile64_1, mix_512_tile64_2, mix_512_tile64_3,
					  mix_512_tile64_4, mix_512_tile64_5};

/* One query, any head_dim: 64 dims per pass, the last pass masked. */
static T512 void mix_512_row(float *out, const float *p, const void *vals, int nk, int hd,
			     bool bf16)
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
					a[c] = _mm512_fmadd_ps(pj,
							       kv16_512(vals,
									(size_t)j * hd + i + 16 * c,
									bf16, mk[c]),
							       a[c]);
		}
		for (int c = 0; c < 4; c++)
			_mm512_mask_storeu_ps(out + i + 16 * c, mk[c], a[c]);
	}
}

T512 void cpu512_mix(float *out, int ldo, const float *p, int ldp, int T, const void *vals, int nk,
		     int hd, bool bf16)
{
	if (bf16 && hd % 128 == 0) { /* every Qwen3 head_dim, with the default bf16 cache */
		mix_bf16(out, ldo, p, ldp, T, vals, nk, hd);
		return;
	}
	if (T == 1 && hd % 128 == 0) { /* decode */
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
				mix_512_row(o + (size_t)u * ldo, pt + (size_t)u * ldp, vals, nk, hd,
					    bf16);
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
	__m512 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(0.693359375f), x); /* ln2 in two parts */
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

T512 void cpu512_softmax(float *s, int n, float scale, double *lse)
{
	__m512 mx = _mm512_set1_ps(-INFINITY), vs = _mm512_set1_ps(scale);
	for (int i = 0; i < n; i += 16) {
		__mmask16 m = tail16(n - i);
		__m512 v = _mm512_mul_ps(_mm512_maskz_loadu_ps(m, s + i), vs);
		_mm512_mask_storeu_ps(s + i, m, v);
		mx = _mm512_mask_max_ps(mx, m, mx, v);
	}
	float topf = _mm512_reduce_max_ps(mx);
	__m512 top = _mm512_set1_ps(topf), sum = _mm512_setzero_ps();
	for (int i = 0; i < n; i += 16) {
		__mmask16 m = tail16(n - i);
		__m512 e = exp_512(_mm512_sub_ps(_mm512_maskz_loadu_ps(m, s + i), top));
		_mm512_mask_storeu_ps(s + i, m, e);
		sum = _mm512_mask_add_ps(sum, m, sum, e);
	}
	float total = _mm512_reduce_add_ps(sum);
	__m512 inv = _mm512_set1_ps(1.0f / total);
	for (int i = 0; i < n; i += 16) {
		__mmask16 m = tail16(n - i);
		_mm512_mask_storeu_ps(s + i, m,
				      _mm512_mul_ps(_mm512_maskz_loadu_ps(m, s + i), inv));
	}
	if (lse)
		*lse = (double)topf + log((double)total);
}

T512 void cpu512_swiglu(float *g, const float *u, int n)
{
	const __m512 one = _mm512_set1_ps(1.0f);
	for (int i = 0; i < n; i += 16) {
		__mmask16 m = tail16(n - i);
		__m512 x = _mm512_maskz_loadu_ps(m, g + i);
		__m512 silu = _mm512_div_ps(
			x, _mm512_add_ps(one, exp_512(_mm512_sub_ps(_mm512_setzero_ps(), x))));
		/* 0 below x = -87, where exp_512 clamps e^-x (as kernels_avx2.c's far_below) */
		silu = _mm512_mask_mov_ps(silu,
					  _mm512_cmp_ps_mask(x, _mm512_set1_ps(-87.0f), _CMP_LT_OQ),
					  _mm512_setzero_ps());
		_mm512_mask_storeu_ps(g + i, m,
				      _mm512_mul_ps(silu, _mm512_maskz_loadu_ps(m, u + i)));
	}
}

T512 void cpu512_swiglu_back(float *dh, float *du, const float *g, const float *u, int n)
{
	const __m512 one = _mm512_set1_ps(1.0f);
	for (int i = 0; i < n; i += 16) {
		__mmask16 m = tail16(n - i);
		__m512 x = _mm512_maskz_loadu_ps(m, g + i), d = _mm512_maskz_loadu_ps(m, dh + i);
		__m512 e = exp_512(_mm512_sub_ps(_mm512_setzero_ps(), x));
		__m512 sg = _mm512_div_ps(one, _mm512_add_ps(one, e));
		sg = _mm512_mask_mov_ps(sg,
					_mm512_cmp_ps_mask(x, _mm512_set1_ps(-87.0f), _CMP_LT_OQ),
					_mm512_setzero_ps());
		__m512 dx = _mm512_mul_ps(d, sg);
		_mm512_mask_storeu_ps(du + i, m, _mm512_mul_ps(dx, x));
		/* 1 - sigma as e^-g sigma where g > 0, as cpu_swiglu_back says why; 0 past
		 * g = 80, where exp_512's clamped e^-g is no longer small enough for g */
		__mmask16 pos = _mm512_cmp_ps_mask(x, _mm512_setzero_ps(), _CMP_GT_OQ);
		__mmask16 big = _mm512_cmp_ps_mask(x, _mm512_set1_ps(80.0f), _CMP_GT_OQ);
		__m512 rest = _mm512_mask_mul_ps(_mm512_sub_ps(one, sg), pos, e, sg);
		rest = _mm512_mask_mov_ps(rest, big, _mm512_setzero_ps());
		__m512 t = _mm512_fmadd_ps(x, rest, one); /* 1 + g (1 - sigma) */
		_mm512_mask_storeu_ps(dh + i, m,
				      _mm512_mul_ps(_mm512_mul_ps(dx, _mm512_maskz_loadu_ps(m, u + i)), t));
	}
}

T512 double cpu512_scale_sq(float *g, size_t n, float scale)
{
	const __m512 sc = _mm512_set1_ps(scale);
	__m512d a = _mm512_setzero_pd(), b = _mm512_setzero_pd();
	size_t k = 0;
	for (; k + 16 <= n; k += 16) {
		__m512 x = _mm512_mul_ps(_mm512_loadu_ps(g + k), sc);
		_mm512_storeu_ps(g + k, x);
		__m512d lo = _mm512_cvtps_pd(_mm512_castps512_ps256(x));
		__m512d hi = _mm512_cvtps_pd(_mm512_extractf32x8_ps(x, 1));
		a = _mm512_fmadd_pd(lo, lo, a);
		b = _mm512_fmadd_pd(hi, hi, b);
	}
	double s = _mm512_reduce_add_pd(_mm512_add_pd(a, b));
	return s + cpu_scale_sq(g + k, n - k, scale);
}

/* cpu_adamw_c, 16 at a time: mul and add apart, never fused, for the same bits. */
T512 void cpu512_adamw(float *w, float *m, float *v, const float *g, size_t n,
		       const struct cpu_adamw *h)
{
	const __m512 decay = _mm512_set1_ps(h->decay), b1 = _mm512_set1_ps(h->b1),
		     b2 = _mm512_set1_ps(h->b2), c1 = _mm512_set1_ps(h->c1),
		     c2 = _mm512_set1_ps(h->c2), step = _mm512_set1_ps(h->step),
		     rbc2 = _mm512_set1_ps(h->rbc2), eps = _mm512_set1_ps(h->eps);
	size_t k = 0;
	for (; k + 16 <= n; k += 16) {
		__m512 gk = _mm512_loadu_ps(g + k), wk = _mm512_mul_ps(_mm512_loadu_ps(w + k), decay);
		__m512 mk = _mm512_add_ps(_mm512_mul_ps(b1, _mm512_loadu_ps(m + k)), _mm512_mul_ps(c1, gk));
		__m512 vk = _mm512_add_ps(_mm512_mul_ps(b2, _mm512_loadu_ps(v + k)),
					  _mm512_mul_ps(_mm512_mul_ps(c2, gk), gk));
		_mm512_storeu_ps(m + k, mk);
		_mm512_storeu_ps(v + k, vk);
		__m512 den = _mm512_add_ps(_mm512_mul_ps(_mm512_sqrt_ps(vk), rbc2), eps);
		_mm512_storeu_ps(w + k, _mm512_sub_ps(wk, _mm512_div_ps(_mm512_mul_ps(step, mk), den)));
	}
	cpu_adamw_c(w + k, m + k, v + k, g + k, n - k, h);
}

T512 void cpu512_rmsnorm(float *out, const float *x, const float *w, int n, float eps)
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
	__m512 r =
		_mm512_set1_ps(1.0f / sqrtf(_mm512_reduce_add_ps(_mm512_add_ps(a, b)) / n + eps));
	for (i = 0; i < n; i += 16) {
		__mmask16 m = tail16(n - i);
		__m512 v = _mm512_mul_ps(_mm512_maskz_loadu_ps(m, x + i), r);
		_mm512_mask_storeu_ps(out + i, m,
				      _mm512_mul_ps(_mm512_maskz_loadu_ps(m, w + i), v));
	}
}

/* cpu_pack_row with pack 32: two permutes split each block into evens and odds. */
T512 void cpu512_pack_row(float *xp, const float *x, int K)
{
	const __m512i even =
		_mm512_set_epi32(30, 28, 26, 24, 22, 20, 18, 16, 14, 12, 10, 8, 6, 4, 2, 0);
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
T512 void cpu512_to_bf16(uint16_t *xb, const float *x, int n)
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

#endif /* __x86_64__ */
