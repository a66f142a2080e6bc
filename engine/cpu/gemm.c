/* gemm.c — C (n, m) (+)= A (n, k) . B (k, m) for training, in fp32 or bf16 (gemm.h).
 *
 * The work items are blocks of up to GEMM_MC rows of C by one or more panels of 32
 * columns. An item takes the k-blocks of GEMM_KC in turn; for each it packs each panel
 * of B into 32 consecutive values per step of k (transposing when B is read
 * transposed) and sweeps the block's rows with a micro-kernel that keeps a tile of C
 * in registers (12 rows x 32 columns with AVX-512, gemm_avx512.c; 6 x 16 with AVX2):
 * per step of k it loads the panel's values once and multiplies them with the tile's
 * values of A, broadcast. In fp32 a row-major A is read where it lies (a tile's rows
 * are streams the prefetcher follows); a transposed A is first packed, a k-block of
 * the item's rows at a time (pack_a_f32), and serves all of the item's panels. On AVX2
 * (gemm_avx2.c) a row-major A is packed too, and each half of a panel sweeps the rows
 * in turn. For bf16, A is first converted once, by every thread together, into rows of
 * bf16 pairs (k, k+1) that vdpbf16ps takes, and the panel into pairs too. Each value
 * of C is summed in one fixed order (the k-blocks in turn, then k within), whatever
 * thread computes it. An operand that several items would pack alike (B when C has
 * more than one block of rows) is packed whole first, by every thread together. */
#include "engine/cpu/gemm.h"

#include "engine/cpu/amx.h"
#include "engine/cpu/gemm_tiles.h"

#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "src/base/err.h"

struct gemm_ctx {
	struct cpu_pool *pool;
	int threads;
	mk_f32_fn *mk_f32;
	mk_bf16_fn *mk_bf16; /* NULL: GEMM_BF16 runs in fp32 */
	bool amx;            /* GEMM_BF16's blocks of 32 rows on AMX tiles (amx.h) */
	bool avx2;           /* panels of a transposed B packed by 8 x 8 transposes */
	bool narrow;         /* fp32 on AVX2: tiles half a panel wide, A always packed */
	unsigned char *scratch; /* per thread: a packed panel of B, a packed block of A */
	size_t per;
	uint32_t *apack; /* bf16 A as pairs, shared; grown on demand */
	size_t apack_words;
	uint32_t *atmp; /* per thread: a converted row of A transposed */
	size_t atmp_words;
	uint32_t *serial; /* per thread: A's pairs for gemm_serial (serial_words each) */
	size_t serial_words;
	float *prepack; /* B, then A, packed whole: GEMM_PREPACK floats each */
};

/* ---- micro-kernels: portable C ----------------------------------------------------- */

static void mk_f32_c(float *c, int ldc, const float *a, size_t sar, size_t sap, const float *bp,
		     int kc, int rows, int cols, bool acc)
{
	float t[GEMM_MR][GEMM_NR] = {{0}};
	for (int p = 0; p < kc; p++)
		for (int r = 0; r < rows; r++) {
			float av = a[r * sar + p * sap];
			for (int j = 0; j < GEMM_NR; j++)
				t[r][j] += av * bp[p * GEMM_NR + j];
		}
	for (int r = 0; r < rows; r++)
		for (int j = 0; j < cols; j++)
			c[(size_t)r * ldc + j] = acc ? c[(size_t)r * ldc + j] + t[r][j] : t[r][j];
}

/* ---- bf16 pairs, vectorized with AVX-512 (the packing would otherwise cost as much as
 * the products: each converted value meets only m/32 or n/8 tiles) ---- */
#if defined(__x86_64__)
#include "engine/cpu/avx512.h"

/* dst[q] = the pair (src[2q], src[2q + 1]) for q < n/2 (n even). */
INL T512BF16 void pairs_row_bf(uint32_t *dst, const float *src, int n)
{
	int i = 0;
	for (; i + 32 <= n; i += 32) {
		__m512bh v = _mm512_cvtne2ps_pbh(_mm512_loadu_ps(src + i + 16), _mm512_loadu_ps(src + i));
		_mm512_storeu_si512(dst + i / 2, (__m512i)v);
	}
	for (; i < n; i += 2)
		dst[i / 2] = (uint32_t)cpu_f32_to_bf16(src[i]) | (uint32_t)cpu_f32_to_bf16(src[i + 1]) << 16;
}

/* dst[q] = the pair (lo[q], hi[q]) for q < n. */
INL T512BF16 void pairs_2rows_bf(uint32_t *dst, const float *lo, const float *hi, int n)
{
	const __m512i inter = _mm512_set_epi16(31, 15, 30, 14, 29, 13, 28, 12, 27, 11, 26, 10, 25, 9,
					       24, 8, 23, 7, 22, 6, 21, 5, 20, 4, 19, 3, 18, 2, 17,
					       1, 16, 0);
	int i = 0;
	for (; i + 16 <= n; i += 16) {
		__m512bh v = _mm512_cvtne2ps_pbh(_mm512_loadu_ps(hi + i), _mm512_loadu_ps(lo + i));
		_mm512_storeu_si512(dst + i, _mm512_permutexvar_epi16(inter, (__m512i)v));
	}
	for (; i < n; i++)
		dst[i] = (uint32_t)cpu_f32_to_bf16(lo[i]) | (uint32_t)cpu_f32_to_bf16(hi[i]) << 16;
}

/* out[i * ldo + q] = the pair (lo_q[i], hi_q[i]) for i, q < 16, where lo_q and hi_q are
 * the stored rows 2q and 2q + 1 of `a` (row stride lda) from column i0: sixteen pairs
 * of rows interleaved, then one transpose. */
static T512BF16 void pairs_t16_bf(uint32_t *out, size_t ldo, const float *a, size_t lda, int i0)
{
	const __m512i inter = _mm512_set_epi16(31, 15, 30, 14, 29, 13, 28, 12, 27, 11, 26, 10, 25, 9,
					       24, 8, 23, 7, 22, 6, 21, 5, 20, 4, 19, 3, 18, 2, 17,
					       1, 16, 0);
	__m512i r[16];
	for (int q = 0; q < 16; q++) {
		const float *lo = a + (size_t)(2 * q) * lda + i0;
		__m512bh v = _mm512_cvtne2ps_pbh(_mm512_loadu_ps(lo + lda), _mm512_loadu_ps(lo));
		r[q] = _mm512_permutexvar_epi16(inter, (__m512i)v);
	}
	transpose16(r);
	for (int i = 0; i < 16; i++)
		_mm512_storeu_si512(out + (size_t)i * ldo, r[i]);
}

/* out[j * ldo + q] (q < 16, j < 16) from sixteen stored rows j of b (row stride ldb),
 * each 32 values from column p0 converted to 16 pairs: the panel of a B read
 * transposed, sixteen columns at a time (ldo = the panel's width). */
static T512BF16 void rows_t16_bf(uint32_t *out, size_t ldo, const float *b, size_t ldb)
{
	__m512i r[16];
	for (int j = 0; j < 16; j++) {
		const float *src = b + (size_t)j * ldb;
		r[j] = (__m512i)_mm512_cvtne2ps_pbh(_mm512_loadu_ps(src + 16), _mm512_loadu_ps(src));
	}
	transpose16(r);
	for (int q = 0; q < 16; q++)
		_mm512_storeu_si512(out + (size_t)q * ldo, r[q]);
}
#endif

/* ---- packing ------------------------------------------------------------------------- */

/* fp32 panel: bp[p][j] = b(p0 + p, j0 + j), zero past the columns. */
static void pack_b_f32(float *bp, const struct gemm *g, int p0, int kc, int j0, bool avx2)
{
	int cols = g->m - j0 < GEMM_NR ? g->m - j0 : GEMM_NR;
	if (!g->bt) {
		for (int p = 0; p < kc; p++) {
			float *dst = bp + (size_t)p * GEMM_NR;
			const float *src = g->b + (size_t)(p0 + p) * g->ldb + j0;
			if (cols == GEMM_NR) {
				memcpy(dst, src, GEMM_NR * sizeof(float));
				continue;
			}
			memcpy(dst, src, (size_t)cols * sizeof(float));
			memset(dst + cols, 0, (GEMM_NR - cols) * sizeof(float));
		}
		return;
	}
	int jw = 0, pw = 0; /* the squares the vector transpose packed */
#if defined(__x86_64__)
	if (avx2) {
		gemm_pack_bt_avx2(bp, g->b + (size_t)j0 * g->ldb + p0, (size_t)g->ldb, kc, cols);
		jw = cols / 8 * 8, pw = kc / 8 * 8;
	}
#else
	(void)avx2;
#endif
	for (int j = 0; j < GEMM_NR; j++) { /* rows of the stored B: read along them */
		const float *src = j < cols ? g->b + (size_t)(j0 + j) * g->ldb + p0 : NULL;
		for (int p = j < jw ? pw : 0; p < kc; p++)
			bp[(size_t)p * GEMM_NR + j] = src ? src[p] : 0.0f;
	}
}

/* fp32 block of A: rows [r0, r1) at depths [p0, p0 + kc), as the micro-kernel reads
 * them: tiles of GEMM_MR rows, each kc steps of GEMM_MR consecutive values (tile t from
 * ab + t * GEMM_MR * kc). A read transposed is packed always: read in place, each step
 * of k is a stored row of A further, and with rows of whole pages (a vocabulary of
 * 8192 makes 32 KB) every step missed the caches and the TLB; packed, each stored
 * row's run of the block is read once, whole. A row-major A is read in place (its
 * tile's rows are streams the prefetcher follows) except by AVX2's kernel, which runs
 * faster on a packed one (gemm_avx2.c): this is the AVX2 path then. */
static void pack_a_f32(float *ab, const struct gemm *g, int r0, int r1, int p0, int kc)
{
	int rows = r1 - r0;
#if defined(__x86_64__)
	if (!g->at) {
		int rw, pw; /* the whole groups of 4 rows by 8 steps, then the rest */
		gemm_pack_a_rows_avx2(ab, g->a + (size_t)r0 * g->lda + p0, (size_t)g->lda, rows, kc,
				      &rw, &pw);
		for (int r = 0; r < rows; r++) {
			const float *src = g->a + (size_t)(r0 + r) * g->lda + p0;
			float *dst = ab + (size_t)(r / GEMM_MR) * GEMM_MR * kc + r % GEMM_MR;
			for (int p = r < rw ? pw : 0; p < kc; p++)
				dst[(size_t)p * GEMM_MR] = src[p];
		}
		return;
	}
#endif
	for (int p = 0; p < kc; p++) {
		const float *src = g->a + (size_t)(p0 + p) * g->lda + r0;
		float *dst = ab + (size_t)p * GEMM_MR;
		/* an A zero below its diagonal: the tiles that start past row p0 + p never
		   read this step (tile_depth) */
		int end = g->tri == GEMM_TRI_A_UPPER && p0 + p + 1 - r0 < rows ? p0 + p + 1 - r0
									       : rows;
		int t0 = 0;
		for (; t0 + GEMM_MR <= end; t0 += GEMM_MR)
			memcpy(dst + (size_t)t0 * kc, src + t0, GEMM_MR * sizeof(float));
		if (t0 < end) /* the tile across row p0 + p, or the last, short one */
			memcpy(dst + (size_t)t0 * kc, src + t0,
			       (size_t)((rows - t0 < GEMM_MR ? rows - t0 : GEMM_MR)) *
				       sizeof(float));
	}
}

static uint32_t pair(float lo, float hi)
{
	return (uint32_t)cpu_f32_to_bf16(lo) | (uint32_t)cpu_f32_to_bf16(hi) << 16;
}

#if defined(__x86_64__)
/* bf16 panel: bp[pp][j] = the pair b(p0 + 2pp, j0 + j), b(p0 + 2pp + 1, j0 + j), zero
 * past k and the columns. */
static T512BF16 void pack_b_bf16(uint32_t *bp, const struct gemm *g, int p0, int kc, int j0)
{
	int cols = g->m - j0 < GEMM_NR ? g->m - j0 : GEMM_NR, kcp = (kc + 1) / 2;
	if (!g->bt) {
		for (int pp = 0; pp < kcp; pp++) {
			const float *lo = g->b + (size_t)(p0 + 2 * pp) * g->ldb + j0;
			uint32_t *o = bp + (size_t)pp * GEMM_NR;
			if (2 * pp + 1 < kc)
				pairs_2rows_bf(o, lo, lo + g->ldb, cols);
			else
				for (int j = 0; j < cols; j++)
					o[j] = pair(lo[j], 0.0f);
			memset(o + cols, 0, (GEMM_NR - cols) * sizeof *o);
		}
		return;
	}
	/* B transposed: each stored row j holds the pairs along k; sixteen rows by sixteen
	   pairs at a time are converted and transposed into the panel */
	int full = cols == GEMM_NR ? kc / 32 * 16 : 0; /* pairs done by whole blocks */
	for (int q0 = 0; q0 < full; q0 += 16)
		for (int j0b = 0; j0b < GEMM_NR; j0b += 16)
			rows_t16_bf(bp + (size_t)q0 * GEMM_NR + j0b, GEMM_NR,
				    g->b + (size_t)(j0 + j0b) * g->ldb + p0 + 2 * q0, g->ldb);
	for (int pp = full; pp < kcp; pp++) {
		uint32_t *o = bp + (size_t)pp * GEMM_NR;
		for (int j = 0; j < GEMM_NR; j++) {
			const float *src = g->b + (size_t)(j0 + j) * g->ldb + p0 + 2 * pp;
			o[j] = j >= cols ? 0 : pair(src[0], 2 * pp + 1 < kc ? src[1] : 0.0f);
		}
	}
}

/* The pairs [*lo, *hi) of row i of A that the tiles read: all of them, but for an A
 * zero past its diagonal only the k-blocks that tile_needs lets a tile holding row i
 * take (one of at most 32 rows, whichever of them it starts at). Causal attention's
 * A is an L x L block, and converting its zero half cost more than multiplying. */
static void pair_span(const struct gemm *g, int i, int kp, int *lo, int *hi)
{
	*lo = 0, *hi = kp;
	if (g->tri == GEMM_TRI_A_LOWER) { /* blocks up to the one of the tile's last row */
		int end = ((i + 31) / GEMM_KC + 1) * (GEMM_KC / 2);
		*hi = end < kp ? end : kp;
	} else if (g->tri == GEMM_TRI_A_UPPER && i > 31) { /* from the block of its first */
		*lo = (i - 31) / GEMM_KC * (GEMM_KC / 2);
	}
}

/* The rows [*r0, *r1) of A that read any of the pairs [q0, q1) (pair_span). */
static void rows_reading(const struct gemm *g, int q0, int q1, int *r0, int *r1)
{
	*r0 = 0, *r1 = g->n;
	if (g->tri == GEMM_TRI_A_LOWER) { /* rows whose last block reaches q0 */
		int first = 2 * q0 / GEMM_KC * GEMM_KC - 31;
		*r0 = first > 0 ? (first < g->n ? first : g->n) : 0;
	} else if (g->tri == GEMM_TRI_A_UPPER) { /* rows whose first block is before q1 */
		int end = (2 * q1 + GEMM_KC - 1) / GEMM_KC * GEMM_KC + 31;
		*r1 = end < g->n ? end : g->n;
	}
}

/* A as bf16 pairs: out[i * kp + pp] = a(i, 2pp), a(i, 2pp + 1), where the tiles read
 * them (pair_span; the rest is left as it was). Item `it` of apack_items: a row of A
 * (A stored row-major), or 16 pairs of its stored rows (A transposed: the pair pp of
 * every row i comes from stored rows 2pp and 2pp + 1), sixteen rows at a time through
 * one transpose. tmp: n words. */
static int apack_items(const struct gemm *g)
{
	return g->at ? ((g->k + 1) / 2 + 15) / 16 : g->n;
}

static T512BF16 void apack_item(const struct gemm *g, uint32_t *out, int kp, uint32_t *tmp, int it)
{
	if (!g->at) {
		const float *src = g->a + (size_t)it * g->lda;
		uint32_t *o = out + (size_t)it * kp;
		int lo, hi, whole;
		pair_span(g, it, kp, &lo, &hi);
		whole = g->k / 2 < hi ? g->k / 2 : hi; /* the pairs of two values */
		if (whole > lo)
			pairs_row_bf(o + lo, src + 2 * lo, 2 * (whole - lo));
		if (hi > whole) /* k odd: the last pair's second value is past it */
			o[kp - 1] = pair(src[g->k - 1], 0.0f);
		return;
	}
	int q0 = 16 * it, nq = kp - q0 < 16 ? kp - q0 : 16, r0, r1;
	rows_reading(g, q0, q0 + nq, &r0, &r1);
	int i = r0;
	if (nq == 16 && 2 * q0 + 32 <= g->k)
		for (; i + 16 <= r1; i += 16)
			pairs_t16_bf(out + (size_t)i * kp + q0, kp, g->a + (size_t)(2 * q0) * g->lda,
				     g->lda, i);
	for (int q = q0; q < q0 + nq; q++) { /* the rest, a pair of rows at a time */
		const float *lo = g->a + (size_t)(2 * q) * g->lda;
		if (2 * q + 1 < g->k)
			pairs_2rows_bf(tmp + i, lo + i, lo + g->lda + i, r1 - i);
		else
			for (int r = i; r < r1; r++)
				tmp[r] = pair(lo[r], 0.0f);
		for (int r = i; r < r1; r++)
			out[(size_t)r * kp + q] = tmp[r];
	}
}

struct apack_task {
	const struct gemm *g;
	uint32_t *out;
	uint32_t *tmp; /* per thread: n words */
	size_t tmp_stride;
	int kp;
	atomic_int next;
};

/* Items are claimed in runs: an item can be one short row, cheaper than the claim's
 * contended atomic when every thread takes one at a time. */
static void apack_fn(void *arg, int tid, int nthreads)
{
	struct apack_task *t = arg;
	int items = apack_items(t->g);
	for (int it, end; (it = cpu_claim_range(&t->next, items, nthreads, &end)) >= 0;)
		for (; it < end; it++)
			apack_item(t->g, t->out, t->kp, t->tmp + (size_t)tid * t->tmp_stride, it);
}
#endif

/* ---- the product --------------------------------------------------------------------- */

static int kblocks(const struct gemm *g)
{
	return (g->k + GEMM_KC - 1) / GEMM_KC;
}

static int panels_of(const struct gemm *g)
{
	return (g->m + GEMM_NR - 1) / GEMM_NR;
}

static int row_blocks(const struct gemm *g)
{
	return (g->n + GEMM_MC - 1) / GEMM_MC;
}

/* The depth of the k-block that starts at p0, and the end of the block of rows at r0. */
static int depth_at(const struct gemm *g, int p0)
{
	return g->k - p0 < GEMM_KC ? g->k - p0 : GEMM_KC;
}

static int rows_end(const struct gemm *g, int r0)
{
	return r0 + GEMM_MC < g->n ? r0 + GEMM_MC : g->n;
}

/* Where an operand packed whole (prepack) keeps a block: B's at k-block kb of panel jp,
 * A's at k-block kb of the block of rows rb. */
static size_t bpk_at(const struct gemm *g, int kb, int jp)
{
	return ((size_t)kb * panels_of(g) + jp) * GEMM_KC * GEMM_NR;
}

static size_t apk_at(const struct gemm *g, int rb, int kb)
{
	return ((size_t)rb * kblocks(g) + kb) * GEMM_MC_TILES * GEMM_KC;
}

struct gemm_task {
	struct gemm_ctx *ctx;
	const struct gemm *g;
	const uint32_t *ap; /* bf16: A as pairs, kp a row; NULL in fp32 */
	int kp;
	float *bpk, *apk; /* B (fp32, or bf16 pairs) and fp32 A packed whole (prepack), or NULL */
	atomic_int next;
};

/* Whether the tile of rows [i0, i0 + rows) at columns j0.. needs the k-block at p0
 * (struct gemm's tri), and the first k-block it needs (for when its sum starts). */
static bool tile_needs(const struct gemm *g, int i0, int rows, int j0, int p0, int kc)
{
	switch (g->tri) {
	case GEMM_TRI_C: return j0 <= i0 + rows - 1;
	case GEMM_TRI_A_LOWER: return p0 <= i0 + rows - 1;
	case GEMM_TRI_A_UPPER: return p0 + kc > i0;
	default: return true;
	}
}

static int first_block(const struct gemm *g, int i0)
{
	return g->tri == GEMM_TRI_A_UPPER ? i0 / GEMM_KC * GEMM_KC : 0;
}

/* The steps [*kb, *ke) of the k-block at p0 (kc deep) that the tile of rows [i0, i0 +
 * rows) needs: an A zero past its diagonal ends them at the tile's last row, one zero
 * before it starts them at the first. Causal attention's products would otherwise
 * multiply every tile by a whole block, half of it zeros. The steps skipped add only
 * exact zeros to each sum. (The fp32 kernels; bf16's pairs still take whole blocks.) */
static void tile_depth(const struct gemm *g, int i0, int rows, int p0, int kc, int *kb, int *ke)
{
	*kb = 0, *ke = kc;
	if (g->tri == GEMM_TRI_A_LOWER && i0 + rows - p0 < kc)
		*ke = i0 + rows - p0;
	else if (g->tri == GEMM_TRI_A_UPPER && i0 > p0)
		*kb = i0 - p0;
}

/* Rows [r0, r1) of C at columns j0.. (cols of them) times one packed k-block of B (bp,
 * kc deep from p0) and of A (ab: pack_a_f32's block, or NULL to read a row-major A in
 * place; ap: bf16 pairs). On AMX, 32 rows at a time by tiles over the whole pairs of
 * 16 (the rest of k by the vector kernel, adding); the rows left over, and every other
 * ISA, by the vector micro-kernel, GEMM_MR rows at a time. */
static void panel_rows(struct gemm_ctx *ctx, const struct gemm *g, const uint32_t *ap, int kp,
		       const float *ab, const float *bp, int p0, int kc, int j0, int cols, int r0,
		       int r1)
{
	int kcp = (kc + 1) / 2, tiled = ap && ctx->amx ? kcp / 16 * 16 : 0;
	for (int i0 = r0; i0 < r1;) {
		int rows = r1 - i0 >= 32 && tiled ? 32 : r1 - i0 < GEMM_MR ? r1 - i0 : GEMM_MR;
		if (!tile_needs(g, i0, rows, j0, p0, kc)) {
			i0 += rows;
			continue;
		}
		bool acc = g->acc || p0 > first_block(g, i0);
		float *c = g->c + (size_t)i0 * g->ldc + j0;
		const uint32_t *a = ap ? ap + (size_t)i0 * kp + p0 / 2 : NULL;
		const uint32_t *b = (const uint32_t *)bp;
		if (rows == 32) {
			cpu_amx_tile32(c, g->ldc, a, kp, b, GEMM_NR, tiled, 32, cols, acc);
			for (int r = 0; r < 32 && tiled < kcp; r += GEMM_MR)
				ctx->mk_bf16(c + (size_t)r * g->ldc, g->ldc, a + (size_t)r * kp + tiled,
					     kp, b + (size_t)tiled * GEMM_NR, kcp - tiled,
					     32 - r < GEMM_MR ? 32 - r : GEMM_MR, cols, true);
		} else if (ap) {
			ctx->mk_bf16(c, g->ldc, a, kp, b, kcp, rows, cols, acc);
		} else {
			int kb, ke;
			tile_depth(g, i0, rows, p0, kc, &kb, &ke);
			if (ab)
				ctx->mk_f32(c, g->ldc,
					    ab + (size_t)(i0 - r0) * kc + (size_t)kb * GEMM_MR, 1,
					    GEMM_MR, bp + (size_t)kb * GEMM_NR, ke - kb, rows, cols,
					    acc);
			else /* A row-major, read in place */
				ctx->mk_f32(c, g->ldc, g->a + (size_t)i0 * g->lda + p0 + kb,
					    (size_t)g->lda, 1, bp + (size_t)kb * GEMM_NR, ke - kb,
					    rows, cols, acc);
		}
		i0 += rows;
	}
}

/* Whether fp32 packs A (pack_a_f32): read transposed, or on AVX2, whose kernel is faster
 * on it, except in attention's triangular products, where packing the causal block's
 * zeros cost more than the kernel gained. */
static bool packs_a(const struct gemm_ctx *ctx, const struct gemm *g)
{
	return g->at || (ctx->narrow && g->tri == GEMM_FULL);
}

/* Panels [jp0, jp1) of C over rows [r0, r1) (at most GEMM_MC): each k-block of A
 * packed once (fp32; bf16's pairs are ap, kp a row; or read from t->apk) and, for each
 * panel in turn, that k-block of B (or read from t->bpk). Each value of C still sums
 * the k-blocks in order. */
static void gemm_item(const struct gemm_task *t, int jp0, int jp1, int r0, int r1, int tid)
{
	struct gemm_ctx *ctx = t->ctx;
	const struct gemm *g = t->g;
	const uint32_t *ap = t->ap;
	float *scratch = (float *)(ctx->scratch + (size_t)tid * ctx->per), *bp = scratch;
	float *ab = !ap && packs_a(ctx, g) ? scratch + GEMM_KC * GEMM_NR : NULL;
	for (int p0 = 0; p0 < g->k; p0 += GEMM_KC) {
		int kc = depth_at(g, p0);
		if (!tile_needs(g, r0, r1 - r0, jp0 * GEMM_NR, p0, kc))
			continue; /* no tile of these rows needs this block */
		if (t->apk)
			ab = t->apk + apk_at(g, r0 / GEMM_MC, p0 / GEMM_KC);
		else if (ab)
			pack_a_f32(ab, g, r0, r1, p0, kc);
		for (int jp = jp0; jp < jp1; jp++) {
			int j0 = jp * GEMM_NR, cols = g->m - j0 < GEMM_NR ? g->m - j0 : GEMM_NR;
			if (!tile_needs(g, r0, r1 - r0, j0, p0, kc))
				continue;
			if (t->bpk)
				bp = t->bpk + bpk_at(g, p0 / GEMM_KC, jp);
#if defined(__x86_64__)
			else if (ap)
				pack_b_bf16((uint32_t *)bp, g, p0, kc, j0);
#endif
			else
				pack_b_f32(bp, g, p0, kc, j0, ctx->avx2);
			/* AVX2's tiles are half a panel wide: each half sweeps all the rows,
			   so that only its half of the panel need stay in L1 */
			for (int h = 0, w = ctx->narrow && !ap ? 16 : GEMM_NR; h < cols; h += w)
				panel_rows(ctx, g, ap, t->kp, ab, bp + h, p0, kc, j0 + h,
					   cols - h < w ? cols - h : w, r0, r1);
		}
	}
}

/* Items: GEMM_MC rows by a group of panels, the groups of a block of rows one after
 * the other. An A read in place takes one panel an item: the item's tile of C stays
 * in the caches across the k-blocks. A packed A serves a group of panels, as wide as
 * leaves each thread four items to take: packing again for each panel cost more than
 * the C tiles' extra traffic. */
static int panels_per_item(const struct gemm_ctx *ctx, const struct gemm *g, int threads)
{
	if (!packs_a(ctx, g))
		return 1;
	int panels = panels_of(g), blocks = row_blocks(g);
	int groups = (4 * threads + blocks - 1) / blocks;
	groups = groups < 1 ? 1 : groups > panels ? panels : groups;
	return (panels + groups - 1) / groups;
}

static void gemm_task_fn(void *arg, int tid, int nthreads)
{
	struct gemm_task *t = arg;
	const struct gemm *g = t->g;
	int panels = panels_of(g), blocks = row_blocks(g);
	int per = panels_per_item(t->ctx, g, nthreads), groups = (panels + per - 1) / per, it;
	bool tiles = t->ap && t->ctx->amx;
	if (tiles)
		cpu_amx_begin();
	while ((it = cpu_claim(&t->next, groups * blocks)) >= 0) {
		int r0 = it / groups * GEMM_MC, r1 = rows_end(g, r0);
		int jp0 = it % groups * per, jp1 = jp0 + per < panels ? jp0 + per : panels;
		gemm_item(t, jp0, jp1, r0, r1, tid);
	}
	if (tiles)
		cpu_amx_end();
}

/* ---- operands packed once ------------------------------------------------------------
 * An item packs the k-blocks of the panels of B it multiplies and of the rows of A it
 * sweeps. Where several items would pack the same block (B's when C has more than one
 * block of rows; fp32 A's when a block of rows is cut into groups of panels), the
 * product first packs that operand whole, every thread together, and the items read
 * it: each block packed once (bf16's A is already pairs, packed once). Up to
 * GEMM_PREPACK floats an operand; a bf16 panel takes half its block's room. */
#define GEMM_PREPACK (4u << 20)

struct prepack_task {
	const struct gemm_task *t;
	int bitems, aitems; /* B's blocks, then A's */
	atomic_int next;
};

static void prepack_fn(void *arg, int tid, int nthreads)
{
	(void)tid;
	(void)nthreads;
	struct prepack_task *pt = arg;
	const struct gemm *g = pt->t->g;
	int it;
	while ((it = cpu_claim(&pt->next, pt->bitems + pt->aitems)) >= 0) {
		if (it < pt->bitems) {
			int kb = it / panels_of(g), jp = it % panels_of(g), p0 = kb * GEMM_KC;
			float *bp = pt->t->bpk + bpk_at(g, kb, jp);
#if defined(__x86_64__)
			if (pt->t->ap) /* bf16 pairs: half of the block's room */
				pack_b_bf16((uint32_t *)bp, g, p0, depth_at(g, p0), jp * GEMM_NR);
			else
#endif
				pack_b_f32(bp, g, p0, depth_at(g, p0), jp * GEMM_NR,
					   pt->t->ctx->avx2);
			continue;
		}
		it -= pt->bitems;
		int rb = it / kblocks(g), kb = it % kblocks(g), r0 = rb * GEMM_MC,
		    p0 = kb * GEMM_KC;
		pack_a_f32(pt->t->apk + apk_at(g, rb, kb), g, r0, rows_end(g, r0), p0,
			   depth_at(g, p0));
	}
}

/* Packs B, A or both whole into t->bpk, t->apk where that saves packing them again;
 * leaves them NULL (each item packs its own) where not, or without the memory. */
static void prepack(struct gemm_ctx *ctx, struct gemm_task *t)
{
	const struct gemm *g = t->g;
	int blocks = row_blocks(g);
	size_t bsize = bpk_at(g, kblocks(g), 0), asize = apk_at(g, blocks, 0);
	bool b = g->tri == GEMM_FULL && blocks > 1 && bsize <= GEMM_PREPACK;
	bool a = g->tri == GEMM_FULL && !t->ap && packs_a(ctx, g) &&
		 panels_per_item(ctx, g, ctx->threads) < panels_of(g) && asize <= GEMM_PREPACK;
	if (!a && !b)
		return;
	if (!ctx->prepack && posix_memalign((void **)&ctx->prepack, 64, gemm_shared_scratch()))
		return;
	t->bpk = b ? ctx->prepack : NULL;
	t->apk = a ? ctx->prepack + GEMM_PREPACK : NULL;
	struct prepack_task pt = {t, b ? kblocks(g) * panels_of(g) : 0, a ? blocks * kblocks(g) : 0,
				  0};
	cpu_pool_run(ctx->pool, prepack_fn, &pt);
}

/* bf16 needs A as pairs (and, transposed, a row of n words per thread): grows the
 * shared buffer. */
static bool apack_fit(struct gemm_ctx *ctx, size_t words, size_t tmp_words)
{
	if (words > ctx->apack_words) {
		uint32_t *p = NULL;
		if (posix_memalign((void **)&p, 64, words * sizeof *p))
			return false;
		free(ctx->apack);
		ctx->apack = p;
		ctx->apack_words = words;
	}
	if (tmp_words * ctx->threads > ctx->atmp_words) {
		uint32_t *p = NULL;
		if (posix_memalign((void **)&p, 64, tmp_words * ctx->threads * sizeof *p))
			return false;
		free(ctx->atmp);
		ctx->atmp = p;
		ctx->atmp_words = tmp_words * ctx->threads;
	}
	return true;
}

/* A product over no depth is a sum of nothing: C is zero, or left as it is when added
 * to. True when that is all there was to do. */
static bool empty_product(const struct gemm *g)
{
	if (g->n > 0 && g->m > 0 && g->k > 0)
		return false;
	if (g->k <= 0 && !g->acc && g->m > 0)
		for (int i = 0; i < g->n; i++)
			memset(g->c + (size_t)i * g->ldc, 0, (size_t)g->m * sizeof(float));
	return true;
}

void gemm_run(struct gemm_ctx *ctx, const struct gemm *g, enum gemm_prec prec)
{
	if (empty_product(g))
		return;
	int kp = (g->k + 1) / 2;
	bool bf16 = prec == GEMM_BF16 && ctx->mk_bf16 &&
		    apack_fit(ctx, (size_t)g->n * kp, g->at ? (size_t)g->n : 0);
#if defined(__x86_64__)
	if (bf16) {
		struct apack_task at = {g, ctx->apack, ctx->atmp, (size_t)g->n, kp, 0};
		cpu_pool_run(ctx->pool, apack_fn, &at);
	}
#endif
	struct gemm_task t = {ctx, g, bf16 ? ctx->apack : NULL, kp, NULL, NULL, 0};
	prepack(ctx, &t);
	cpu_pool_run(ctx->pool, gemm_task_fn, &t);
}

void gemm_serial(struct gemm_ctx *ctx, const struct gemm *g, enum gemm_prec prec, int tid)
{
	if (empty_product(g))
		return;
	int panels = panels_of(g), kp = (g->k + 1) / 2;
	uint32_t *ap = NULL;
#if defined(__x86_64__)
	if (prec == GEMM_BF16 && ctx->mk_bf16 && (size_t)g->n * kp + g->n <= ctx->serial_words) {
		ap = ctx->serial + (size_t)tid * ctx->serial_words;
		for (int it = 0; it < apack_items(g); it++)
			apack_item(g, ap, kp, ap + (size_t)g->n * kp, it);
	}
#else
	(void)prec;
#endif
	if (ap && ctx->amx)
		cpu_amx_begin();
	struct gemm_task t = {ctx, g, ap, kp, NULL, NULL, 0};
	for (int r0 = 0; r0 < g->n; r0 += GEMM_MC)
		gemm_item(&t, 0, panels, r0, rows_end(g, r0), tid);
	if (ap && ctx->amx)
		cpu_amx_end();
}

int gemm_reserve_serial(struct gemm_ctx *ctx, int n, int k)
{
	size_t words = (size_t)n * ((k + 1) / 2) + n;
	if (!ctx->mk_bf16 || words <= ctx->serial_words)
		return 0;
	uint32_t *p = NULL;
	if (posix_memalign((void **)&p, 64, words * ctx->threads * sizeof *p))
		return err_set("training: out of memory for the products' bf16 scratch");
	free(ctx->serial);
	ctx->serial = p;
	ctx->serial_words = words;
	return 0;
}

/* ---- set-up ---------------------------------------------------------------------------- */

size_t gemm_thread_scratch(void)
{
	/* a packed panel of B and a packed block of A (whole tiles) */
	return (size_t)GEMM_KC * (GEMM_NR + GEMM_MC_TILES) * sizeof(float);
}

size_t gemm_shared_scratch(void)
{
	return 2 * (size_t)GEMM_PREPACK * sizeof(float);
}

struct gemm_ctx *gemm_new(enum cpu_isa isa, struct cpu_pool *pool)
{
	struct gemm_ctx *ctx = calloc(1, sizeof *ctx);
	if (!ctx) {
		err_set("training: out of memory");
		return NULL;
	}
	ctx->pool = pool;
	ctx->threads = cpu_pool_size(pool);
	ctx->mk_f32 = mk_f32_c;
#if defined(__x86_64__)
	if (isa >= CPU_ISA_AVX512)
		ctx->mk_f32 = gemm_mk_f32_avx512;
	else if (isa == CPU_ISA_AVX2)
		ctx->mk_f32 = gemm_mk_f32_avx2;
	if (isa >= CPU_ISA_AVX512BF16)
		ctx->mk_bf16 = gemm_mk_bf16_avx512;
	ctx->amx = isa >= CPU_ISA_AMX;
	ctx->avx2 = isa >= CPU_ISA_AVX2;
	ctx->narrow = isa == CPU_ISA_AVX2;
#else
	(void)isa;
#endif
	ctx->per = gemm_thread_scratch();
	if (posix_memalign((void **)&ctx->scratch, 64, ctx->per * ctx->threads)) {
		free(ctx);
		err_set("training: out of memory for the matrix products' scratch");
		return NULL;
	}
	return ctx;
}

void gemm_free(struct gemm_ctx *ctx)
{
	if (!ctx)
		return;
	free(ctx->scratch);
	free(ctx->apack);
	free(ctx->atmp);
	free(ctx->serial);
	free(ctx->prepack);
	free(ctx);
}

bool gemm_has_bf16(const struct gemm_ctx *ctx)
{
	return ctx->mk_bf16 != NULL;
}
