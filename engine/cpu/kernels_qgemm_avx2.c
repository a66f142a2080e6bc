/* kernels_qgemm_avx2.c — prefill over quantized weights in integers, with AVX2.
 *
 * Each prefill block of 64 weight rows is first repacked ("qpack") into a panel of
 * unsigned bytes with the rows in the vector lanes: for every 4 columns, 8 rows' 4
 * quants side by side (32 bytes). The product kernel ("qgemm") broadcasts 4 bytes of
 * a token's int8 activations, multiplies them with those 32 bytes by vpmaddubsw
 * (8 rows x 2 pairs of columns), sums two such steps in 16 bits, widens by vpmaddwd
 * and applies each row's block scale once per 32 columns in fp32 for 8 rows at once.
 * 2 row groups x 3 tokens per step; the activations are the ones decode uses
 * (kernels.h: int8, one scale per 32), so prefill and decode round alike.
 *
 * Why: the bf16/fp32 panel kernels do 8 multiply-adds per instruction; this does 32
 * per vpmaddubsw.
 *
 * The quants are stored unsigned (weight = s * q + o per row and block of 32; Q4_0:
 * o = -8 s, Q4_1: o = m, the K-quants: o = -dmin * min), so that no 16-bit sum of two
 * steps can saturate: 2 * 2 * 63 * 127 < 32768. Three kinds differ: Q8_0's quants
 * (and IQ4_NL's and IQ4_XS's levels) are signed and multiply as |q| by (x with q's
 * sign), one vpmaddwd per step; Q6_K
 * and Q3_K have a scale per 16 columns, which vpmaddwd applies as a 16-bit factor,
 * and their offset (-32 times the scales times the sums of x; Q3_K's quants are
 * stored 28 higher to share it) is taken off in integers; Q2_K has a scale and a min
 * per 16 columns: the scales as Q6_K's, the mins times the 16-sums of x by one
 * vpmaddwd, times -dmin. */
#include <string.h>

#include "engine/cpu/kernels.h"

/* One group of 8 rows in the panel, per block b of 32 columns (nb blocks):
 *   q:   nb x 256 bytes, [column quad c][row r][4]: the quants of columns 4c..4c+3
 *   s:   nb x 8 floats, each row's block scale
 *   o:   nb x 8 floats, each row's block offset (0 for Q8_0, Q6_K and Q3_K; -dmin
 *        for Q2_K)
 *   six: nb x 48 int16 (Q6_K, Q3_K, Q2_K): each row's scale of the block's first 16
 *        columns in both of the row's 16-bit lanes (A), of the second 16 (B), and the
 *        pair A, B (Q2_K: the pair of the two 16s' mins) */
#define GROUP_BLOCK_BYTES (256 + 32 + 32 + 96)

size_t cpu_qpanel_bytes(int K)
{
	return (size_t)(CPU_PANEL_ROWS / 8) * (size_t)(K / 32) * GROUP_BLOCK_BYTES;
}

#if defined(__x86_64__)
#include <immintrin.h>

#include "engine/cpu/avx2.h"
#include "engine/quant.h"

struct group {
	uint8_t *q;
	float *s, *o;
	int16_t *six;
};

static struct group group_at(uint8_t *panel, int g, int nb)
{
	uint8_t *base = panel + (size_t)g * nb * GROUP_BLOCK_BYTES;
	return (struct group){
		.q = base,
		.s = (float *)(void *)(base + (size_t)nb * 256),
		.o = (float *)(void *)(base + (size_t)nb * 288),
		.six = (int16_t *)(void *)(base + (size_t)nb * 320),
	};
}

/* ---- qpack: 8 rows at a time, 8 blocks of 32 (one unit) at a time ---- */

/* A unit of one row: up to 8 blocks' 32 quants (unsigned, or signed for Q8_0), each
 * block's scale and offset, and for Q6_K, Q3_K and Q2_K its two 16-column scales and
 * the pair the offset takes (Q2_K: the two mins). */
struct unit {
	__m256i q[8];
	float s[8], o[8];
	int16_t a[8], b[8], pa[8], pb[8];
};

static TQ void unit_32(enum eng_dtype t, const uint8_t *w, int blocks, struct unit *u)
{
	size_t bb = eng_dtype_block_bytes(t);
	for (int j = 0; j < blocks; j++, w += bb) {
		float d = half(w);
		u->s[j] = d;
		if (t == ENG_Q4_1 || t == ENG_Q5_1) {
			u->o[j] = half(w + 2);
			u->q[j] = q4_q5_quants(w + 2, t == ENG_Q5_1);
			continue;
		}
		u->o[j] = t == ENG_Q8_0 ? 0 : t == ENG_Q4_0 ? -8 * d : -16 * d;
		u->q[j] = t == ENG_Q8_0 ? load32(w + 2) : q4_q5_quants(w, t == ENG_Q5_0);
	}
}

/* IQ4_NL (blocks of 32) and IQ4_XS (8 x 32): the signed levels, as Q8_0's quants. */
static TQ void unit_iq4(const uint8_t *w, int blocks, const bool xs, struct unit *u)
{
	for (int j = 0; j < blocks; j++) {
		const uint8_t *blk = xs ? w : w + (size_t)j * 18;
		u->s[j] = xs ? half(w) * (float)quant_iq4_xs_scale(w, j) : half(blk);
		u->o[j] = 0;
		u->q[j] = iq4_levels(xs ? w + 8 + 16 * j : blk + 2);
	}
}

static TQ void unit_k4(const uint8_t *w, const bool five, struct unit *u)
{
	__m256i sc, mn;
	k4_scales(w + 4, &sc, &mn);
	int32_t scs[8], mns[8];
	_mm256_storeu_si256((__m256i *)scs, sc);
	_mm256_storeu_si256((__m256i *)mns, mn);
	float d = half(w), dmin = half(w + 2);
	for (int j = 0; j < 8; j++) {
		u->s[j] = d * (float)scs[j];
		u->o[j] = -dmin * (float)mns[j];
	}
	__m256i hb = five ? load32(w + 16) : _mm256_setzero_si256();
	for (int j = 0; j < 4; j++)
		k4_quants(w + (five ? 48 : 16), hb, j, five, &u->q[2 * j], &u->q[2 * j + 1]);
}

static TQ void unit_q6_k(const uint8_t *w, struct unit *u)
{
	const int8_t *sc = (const int8_t *)(w + 192);
	float d = half(w + 208);
	for (int h = 0; h < 2; h++) {
		q6_half(w, h, u->q + 4 * h);
		for (int k = 0; k < 4; k++) {
			int j = 4 * h + k;
			u->s[j] = d;
			u->o[j] = 0;
			u->a[j] = u->pa[j] = sc[2 * j];
			u->b[j] = u->pb[j] = sc[2 * j + 1];
		}
	}
}

/* Q3_K as Q6_K: quants u + 28 (28..35), so that -32 is Q3_K's offset -4. Q2_K: the
 * low nibbles of its scale bytes as the scales, the high ones as the mins. */
static TQ void unit_k23(const uint8_t *w, const bool three, struct unit *u)
{
	int8_t sc[16];
	if (three)
		quant_q3_k_scales(w + 96, sc);
	float d = half(w + (three ? 108 : 80)), dmin = three ? 0 : half(w + 82);
	__m256i hm = three ? load32(w) : _mm256_setzero_si256();
	for (int j = 0; j < 8; j++) {
		u->q[j] = k23_quants(w + (three ? 32 : 16), hm, j, three);
		u->s[j] = d;
		u->o[j] = -dmin;
		if (three) {
			u->q[j] = _mm256_add_epi8(u->q[j], _mm256_set1_epi8(28));
			u->a[j] = u->pa[j] = sc[2 * j];
			u->b[j] = u->pb[j] = sc[2 * j + 1];
		} else {
			u->a[j] = w[2 * j] & 15;
			u->b[j] = w[2 * j + 1] & 15;
			u->pa[j] = w[2 * j] >> 4;
			u->pb[j] = w[2 * j + 1] >> 4;
		}
	}
}

/* 8 rows of 8 int32 each (a row's 32 quants as 8 quads) to 8 vectors of one quad
 * of every row: the standard 8 x 8 transpose. */
static TQ void transpose8(__m256i *v)
{
	__m256i t[8], s[8];
	for (int i = 0; i < 8; i += 2) {
		t[i] = _mm256_unpacklo_epi32(v[i], v[i + 1]);
		t[i + 1] = _mm256_unpackhi_epi32(v[i], v[i + 1]);
	}
	for (int i = 0; i < 8; i += 4) {
		s[i] = _mm256_unpacklo_epi64(t[i], t[i + 2]);
		s[i + 1] = _mm256_unpackhi_epi64(t[i], t[i + 2]);
		s[i + 2] = _mm256_unpacklo_epi64(t[i + 1], t[i + 3]);
		s[i + 3] = _mm256_unpackhi_epi64(t[i + 1], t[i + 3]);
	}
	for (int i = 0; i < 4; i++) {
		v[i] = _mm256_permute2x128_si256(s[i], s[i + 4], 0x20);
		v[i + 4] = _mm256_permute2x128_si256(s[i], s[i + 4], 0x31);
	}
}

/* Rows [0, rows) (<= 8) of one group, each rb bytes; missing rows are zero. */
static TQ void pack_group(enum eng_dtype t, const uint8_t *w, size_t rb, int rows, int K,
			  struct group g)
{
	int nb = K / 32, per_unit = eng_dtype_block(t) == 256 ? 1 : 8;
	size_t bb = eng_dtype_block_bytes(t);
	struct unit u[8];
	for (int b0 = 0, i = 0; b0 < nb; b0 += 8, i += per_unit) {
		int blocks = nb - b0 < 8 ? nb - b0 : 8;
		memset(u, 0, sizeof u);
		for (int r = 0; r < rows; r++) {
			const uint8_t *src = w + (size_t)r * rb + (size_t)i * bb;
			if (t == ENG_Q4_K || t == ENG_Q5_K)
				unit_k4(src, t == ENG_Q5_K, &u[r]);
			else if (t == ENG_Q6_K)
				unit_q6_k(src, &u[r]);
			else if (t == ENG_Q2_K || t == ENG_Q3_K)
				unit_k23(src, t == ENG_Q3_K, &u[r]);
			else if (t == ENG_IQ4_NL || t == ENG_IQ4_XS)
				unit_iq4(src, blocks, t == ENG_IQ4_XS, &u[r]);
			else
				unit_32(t, src, blocks, &u[r]);
		}
		for (int j = 0; j < blocks; j++) {
			int b = b0 + j;
			__m256i v[8];
			for (int r = 0; r < 8; r++) {
				v[r] = u[r].q[j];
				g.s[8 * b + r] = u[r].s[j];
				g.o[8 * b + r] = u[r].o[j];
				int16_t *six = g.six + 48 * b;
				six[2 * r] = six[2 * r + 1] = u[r].a[j];
				six[16 + 2 * r] = six[16 + 2 * r + 1] = u[r].b[j];
				six[32 + 2 * r] = u[r].pa[j];
				six[32 + 2 * r + 1] = u[r].pb[j];
			}
			transpose8(v);
			for (int c = 0; c < 8; c++)
				_mm256_storeu_si256((__m256i *)(g.q + 256 * (size_t)b + 32 * c), v[c]);
		}
	}
}

TQ void cpu_qpack_avx2(enum eng_dtype t, const void *w, size_t rb, int rows, int K,
		       uint8_t *panel)
{
	int nb = K / 32;
	for (int g = 0; 8 * g < rows; g++) {
		int n = rows - 8 * g < 8 ? rows - 8 * g : 8;
		pack_group(t, (const uint8_t *)w + (size_t)8 * g * rb, rb, n, K,
			   group_at(panel, g, nb));
	}
}

/* ---- qgemm ---- */

enum mode { UNSIGNED, SIGNED8, SIX, MINS };

static enum mode mode_of(enum eng_dtype t)
{
	switch (t) {
	case ENG_Q8_0:
	case ENG_IQ4_NL:
	case ENG_IQ4_XS: return SIGNED8;
	case ENG_Q6_K:
	case ENG_Q3_K: return SIX;
	case ENG_Q2_K: return MINS;
	default: return UNSIGNED;
	}
}

INL TQ __m256i bcast4(const int8_t *p)
{
	return _mm256_castps_si256(_mm256_broadcast_ss((const float *)(const void *)p));
}

/* out[t][8r + i] = row 8r + i of groups g[0..R) times token x[t], t < T. */
INL TQ void tile(const enum mode m, const int R, const int T, float *out, const struct group *g,
		 const struct cpu_xq *x, int nb)
{
	const __m256i ones = _mm256_set1_epi16(1);
	__m256 acc[2][3];
#pragma GCC unroll 2
	for (int r = 0; r < R; r++)
#pragma GCC unroll 3
		for (int t = 0; t < T; t++)
			acc[r][t] = _mm256_setzero_ps();
	for (int b = 0; b < nb; b++) {
		__m256i i32[2][3];
#pragma GCC unroll 2
		for (int r = 0; r < R; r++)
#pragma GCC unroll 3
			for (int t = 0; t < T; t++)
				i32[r][t] = _mm256_setzero_si256();
#pragma GCC unroll 4
		for (int c0 = 0; c0 < 8; c0 += 2) {
			__m256i i16[2][3];
#pragma GCC unroll 2
			for (int c = c0; c < c0 + 2; c++) {
				__m256i w[2], aw[2];
#pragma GCC unroll 2
				for (int r = 0; r < R; r++) {
					w[r] = _mm256_loadu_si256(
						(const __m256i *)(g[r].q + 256 * (size_t)b + 32 * c));
					if (m == SIGNED8)
						aw[r] = _mm256_abs_epi8(w[r]);
				}
#pragma GCC unroll 3
				for (int t = 0; t < T; t++) {
					__m256i xv = bcast4(x[t].q + 32 * b + 4 * c);
#pragma GCC unroll 2
					for (int r = 0; r < R; r++) {
						if (m == SIGNED8) {
							__m256i p = _mm256_maddubs_epi16(
								aw[r], _mm256_sign_epi8(xv, w[r]));
							i32[r][t] = _mm256_add_epi32(
								i32[r][t], _mm256_madd_epi16(p, ones));
							continue;
						}
						__m256i p = _mm256_maddubs_epi16(w[r], xv);
						i16[r][t] = c == c0 ? p : _mm256_add_epi16(i16[r][t], p);
					}
				}
			}
			if (m == SIGNED8)
				continue;
#pragma GCC unroll 2
			for (int r = 0; r < R; r++) {
				__m256i f = m == SIX || m == MINS
						    ? load32(g[r].six + 48 * b + (c0 < 4 ? 0 : 16))
						    : ones;
#pragma GCC unroll 3
				for (int t = 0; t < T; t++)
					i32[r][t] = _mm256_add_epi32(i32[r][t],
								     _mm256_madd_epi16(i16[r][t], f));
			}
		}
#pragma GCC unroll 2
		for (int r = 0; r < R; r++) {
			__m256 sv = _mm256_loadu_ps(g[r].s + 8 * b), ov = _mm256_loadu_ps(g[r].o + 8 * b);
			__m256i pair =
				m == SIX || m == MINS ? load32(g[r].six + 48 * b + 32) : ones;
#pragma GCC unroll 3
			for (int t = 0; t < T; t++) {
				__m256i v = i32[r][t], ps = _mm256_setzero_si256();
				if (m == SIX ||
				    m == MINS) /* a * the first 16's sum + b * the second's */
					ps = _mm256_madd_epi16(
						pair, bcast4((const int8_t *)(x[t].s16 + 2 * b)));
				if (m == SIX)
					v = _mm256_sub_epi32(v, _mm256_slli_epi32(ps, 5));
				__m256 xd = _mm256_broadcast_ss(x[t].d + b);
				__m256 sd = _mm256_mul_ps(sv, xd);
				acc[r][t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(v), sd, acc[r][t]);
				if (m == UNSIGNED)
					acc[r][t] = _mm256_fmadd_ps(ov, _mm256_broadcast_ss(x[t].ds + b),
								    acc[r][t]);
				if (m == MINS)
					acc[r][t] =
						_mm256_fmadd_ps(_mm256_cvtepi32_ps(ps),
								_mm256_mul_ps(ov, xd), acc[r][t]);
			}
		}
	}
#pragma GCC unroll 2
	for (int r = 0; r < R; r++)
#pragma GCC unroll 3
		for (int t = 0; t < T; t++)
			_mm256_storeu_ps(out + 16 * t + 8 * r, acc[r][t]);
}

typedef void tile_fn(float *out, const struct group *g, const struct cpu_xq *x, int nb);

#define TILE(M, R, T)                                                                         \
	static TQ void tile_##M##_##R##_##T(float *out, const struct group *g,                \
					    const struct cpu_xq *x, int nb)                   \
	{                                                                                     \
		tile(M, R, T, out, g, x, nb);                                                 \
	}
#define TILES(M) TILE(M, 1, 1) TILE(M, 1, 2) TILE(M, 1, 3) TILE(M, 2, 1) TILE(M, 2, 2) TILE(M, 2, 3)
TILES(UNSIGNED)
TILES(SIGNED8)
TILES(SIX)
TILES(MINS)
#define TILE_ROW(M)                                                                           \
	{                                                                                     \
		{tile_##M##_1_1, tile_##M##_1_2, tile_##M##_1_3},                             \
		{                                                                             \
			tile_##M##_2_1, tile_##M##_2_2, tile_##M##_2_3                        \
		}                                                                             \
	}
static tile_fn *const tiles[4][2][3] = {TILE_ROW(UNSIGNED), TILE_ROW(SIGNED8), TILE_ROW(SIX),
					TILE_ROW(MINS)};

TQ void cpu_qgemm_avx2(enum eng_dtype t, float *out, int ldo, const struct cpu_xq *x, int n,
		       const uint8_t *panel, int K, int rows, bool acc)
{
	int nb = K / 32, groups = (rows + 7) / 8;
	enum mode m = mode_of(t);
	float tmp[3 * 16];
	for (int t0 = 0; t0 < n; t0 += 3) {
		int T = n - t0 < 3 ? n - t0 : 3;
		for (int g0 = 0; g0 < groups; g0 += 2) {
			int R = groups - g0 < 2 ? 1 : 2;
			struct group g[2] = {group_at((uint8_t *)panel, g0, nb)};
			if (R == 2)
				g[1] = group_at((uint8_t *)panel, g0 + 1, nb);
			tiles[m][R - 1][T - 1](tmp, g, x + t0, nb);
			int r1 = rows - 8 * g0 < 8 * R ? rows - 8 * g0 : 8 * R;
			for (int i = 0; i < T; i++) {
				float *o = out + (size_t)(t0 + i) * ldo + 8 * g0;
				int r = 0;
				for (; r + 8 <= r1; r += 8) {
					__m256 v = _mm256_loadu_ps(tmp + 16 * i + r);
					if (acc)
						v = _mm256_add_ps(v, _mm256_loadu_ps(o + r));
					_mm256_storeu_ps(o + r, v);
				}
				for (; r < r1; r++)
					o[r] = acc ? o[r] + tmp[16 * i + r] : tmp[16 * i + r];
			}
		}
	}
}

#endif
