/* test_engine_kernels.c — the CPU kernels of every ISA this machine runs against a
 * plain double-precision reference, on shapes that exercise every tile remainder,
 * plus the thread pool's work split. */
#include <math.h>
#include <stdatomic.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "engine/cpu/kernels.h"
#include "engine/cpu/pool.h"

static uint64_t rng = 88172645463325252ull;

static float frand(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return (float)((rng >> 11) * (1.0 / 9007199254740992.0)) * 2 - 1;
}

/* out (n, M) against sum_k w[m][k] * x[t][k] in double (plus 1.5 when acc), for
 * rows [1, M); row 0 must hold its initial value (1.5 with acc, else NaN). */
static void check_out(const char *what, const struct cpu_kernels *k, const float *out,
		      const uint16_t *w, const float *x, int n, int M, int K, bool acc)
{
	for (int t = 0; t < n; t++)
		for (int m = 0; m < M; m++) {
			float got = out[(size_t)t * M + m];
			if (m == 0 && M > 1) {
				assert_true(acc ? got == 1.5f : isnan(got));
				continue;
			}
			double ref = acc ? 1.5 : 0, mag = 1;
			for (int i = 0; i < K; i++) {
				double p = (double)cpu_bf16_to_f32(w[(size_t)m * K + i]) *
					   x[(size_t)t * K + i];
				ref += p;
				mag += fabs(p);
			}
			if (fabs(got - ref) > 1e-6 * mag)
				fail_msg("%s %s n=%d M=%d K=%d t=%d m=%d: %g vs %g", k->name, what,
					 n, M, K, t, m, got, ref);
		}
}

/* Every prefill/decode kernel of an ISA on one shape: matmul without and with a
 * panel, and matmul_bf16 (whose activations are rounded to bf16 first). The
 * weights start `shift` bf16 elements past a 64-byte boundary (tensors in a
 * safetensors file start wherever the header ends), between NaN bit patterns that
 * a kernel reading whole cache lines must load but never use. */
static void check_matmul_at(const struct cpu_kernels *k, int n, int M, int K, bool acc, int shift)
{
	size_t span = (size_t)M * K + (size_t)shift + 64;
	uint16_t *base = aligned_alloc(64, (span * sizeof *base + 63) / 64 * 64);
	assert_non_null(base);
	for (size_t i = 0; i < span; i++)
		base[i] = 0xffff; /* NaN */
	uint16_t *w = base + shift;
	size_t nk = (size_t)n * K;
	float *x = malloc(nk * sizeof *x), *xp = calloc(nk, sizeof *xp),
	      *xr = malloc(nk * sizeof *xr);
	float *out = malloc((size_t)n * M * sizeof *out);
	uint16_t *xb = malloc(nk * sizeof *xb);
	uint32_t *panel = aligned_alloc(64, cpu_panel_words(K) * sizeof *panel);
	for (size_t i = 0; i < (size_t)M * K; i++)
		w[i] = cpu_f32_to_bf16(frand());
	for (int t = 0; t < n; t++) {
		for (int i = 0; i < K; i++)
			x[(size_t)t * K + i] = frand();
		cpu_pack_row(xp + (size_t)t * K, x + (size_t)t * K, K, k->pack);
		cpu_bf16_row(xb + (size_t)t * K, x + (size_t)t * K, K);
	}
	for (size_t i = 0; i < nk; i++)
		xr[i] = cpu_bf16_to_f32(xb[i]);
	int m0 = M > 1 ? 1 : 0;
	if (!acc && K % 2 == 0 && M - m0 <= CPU_PANEL_ROWS) { /* rows given as a panel */
		memset(panel, 0xff, cpu_panel_words(K) * sizeof *panel);
		for (int r = 0; r < M - m0; r++)
			for (int p = 0; p < K / 2; p++)
				panel[(size_t)p * CPU_PANEL_ROWS + r] =
					w[(size_t)(m0 + r) * K + 2 * p] |
					(uint32_t)w[(size_t)(m0 + r) * K + 2 * p + 1] << 16;
		for (size_t i = 0; i < (size_t)n * M; i++)
			out[i] = NAN;
		k->matmul_panel(out + m0, M, xp, K, n, panel, K, M - m0);
		check_out("matmul_panel", k, out, w, x, n, M, K, false);
	}
	for (int pass = 0; pass < 3; pass++) {
		if (pass == 2 && !k->matmul_bf16)
			break;
		for (size_t i = 0; i < (size_t)n * M; i++)
			out[i] = acc ? 1.5f : NAN;
		if (pass < 2)
			k->matmul(out, M, xp, K, n, w, K, m0, M, acc, pass ? panel : NULL);
		else
			k->matmul_bf16(out, M, xb, K, n, w, K, m0, M, acc, panel);
		static const char *const what[] = {"matmul", "matmul+panel", "matmul_bf16"};
		check_out(what[pass], k, out, w, pass < 2 ? x : xr, n, M, K, acc);
	}
	free(base);
	free(x);
	free(xp);
	free(xr);
	free(out);
	free(xb);
	free(panel);
}

static void check_matmul(const struct cpu_kernels *k, int n, int M, int K, bool acc)
{
	check_matmul_at(k, n, M, K, acc, 0);
}

static void test_matmul(void **state)
{
	(void)state;
	static const int Ks[] = {1, 3, 16, 31, 32, 33, 64, 100, 1024};
	for (int isa = CPU_ISA_C; isa <= CPU_ISA_AMX; isa++) {
		if (!cpu_isa_supported(isa))
			continue;
		const struct cpu_kernels *k = cpu_kernels_get(isa);
		for (size_t ki = 0; ki < sizeof Ks / sizeof Ks[0]; ki++)
			for (int n = 1; n <= 13; n++)
				for (int M = 1; M <= 9; M += 4)
					check_matmul(k, n, M, Ks[ki], n & 1);
		check_matmul(k, 7, 70, 128, false); /* more rows than one chunk */
		check_matmul(k, 12, 130, 64, true);
		check_matmul(k, 70, 100, 64, true); /* AMX: 32-token blocks and a tail */
		check_matmul(k, 33, 40, 1024, false);
	}
}

/* The bf16 prefill gives a token the same bits however the prompt is cut into calls
 * and the weight rows into ranges (the seed's promise: a prompt's logits do not
 * depend on how much of it the cache held), adding to the output or not. */
static void test_matmul_bf16_cuts(void **state)
{
	(void)state;
	int n = 70, M = 100, K = 64;
	uint16_t *w = malloc((size_t)M * K * sizeof *w), *xb = malloc((size_t)n * K * sizeof *xb);
	float *one = malloc((size_t)n * M * sizeof *one), *cut = malloc((size_t)n * M * sizeof *cut);
	uint32_t *panel = aligned_alloc(64, cpu_panel_words(K) * sizeof *panel);
	for (int i = 0; i < M * K; i++)
		w[i] = cpu_f32_to_bf16(frand());
	for (int i = 0; i < n * K; i++)
		xb[i] = cpu_f32_to_bf16(frand());
	for (int isa = CPU_ISA_C; isa <= CPU_ISA_AMX; isa++) {
		const struct cpu_kernels *k = cpu_kernels_get(isa);
		if (!cpu_isa_supported(isa) || !k->matmul_bf16)
			continue;
		for (int acc = 0; acc < 2; acc++) {
			for (int i = 0; i < n * M; i++)
				one[i] = cut[i] = 0.25f * (i % 7);
			k->matmul_bf16(one, M, xb, K, n, w, K, 1, M, acc, panel);
			static const int t_cuts[] = {0, 5, 42, 70}, m_cuts[] = {1, 40, 100};
			for (int a = 0; a < 3; a++)
				for (int b = 0; b < 2; b++) {
					int t0 = t_cuts[a], t1 = t_cuts[a + 1];
					k->matmul_bf16(cut + (size_t)t0 * M, M, xb + (size_t)t0 * K, K,
						       t1 - t0, w, K, m_cuts[b], m_cuts[b + 1], acc, panel);
				}
			if (memcmp(one, cut, (size_t)n * M * sizeof *one))
				fail_msg("%s matmul_bf16 acc %d: a cut product differs", k->name, acc);
		}
	}
	free(w);
	free(xb);
	free(one);
	free(cut);
	free(panel);
}

/* scores_bf16 (AMX) against a double sum over the same bf16 values, for partial
 * blocks of queries and keys, and a query's scores the same bits among 40 or alone. */
static void test_scores_bf16(void **state)
{
	(void)state;
	const struct cpu_kernels *k = cpu_kernels_get(CPU_ISA_AMX);
	if (!cpu_isa_supported(CPU_ISA_AMX) || !k->scores_bf16)
		skip();
	int hd = 128, n = 40, nk = 130, panels = (nk + 63) / 64;
	uint16_t *q = calloc((size_t)64 * hd, sizeof *q); /* readable to 64 rows */
	uint16_t *kr = malloc((size_t)nk * hd * sizeof *kr);
	uint32_t *kp = calloc((size_t)panels * 64 * hd / 2, sizeof *kp);
	float *s = malloc((size_t)n * nk * sizeof *s), *s1 = malloc((size_t)nk * sizeof *s1);
	for (int i = 0; i < n * hd; i++)
		q[i] = cpu_f32_to_bf16(frand());
	for (int j = 0; j < nk; j++) /* key j: lane j % 64 of panel j / 64, pairs of k */
		for (int p = 0; p < hd / 2; p++) {
			kr[j * hd + 2 * p] = cpu_f32_to_bf16(frand());
			kr[j * hd + 2 * p + 1] = cpu_f32_to_bf16(frand());
			kp[(size_t)(j / 64) * 64 * hd / 2 + (size_t)p * 64 + j % 64] =
				kr[j * hd + 2 * p] | (uint32_t)kr[j * hd + 2 * p + 1] << 16;
		}
	k->scores_bf16(s, nk, q, hd, n, kp, hd, nk);
	for (int t = 0; t < n; t++)
		for (int j = 0; j < nk; j++) {
			double ref = 0, mag = 0;
			for (int i = 0; i < hd; i++) {
				double x = (double)cpu_bf16_to_f32(q[t * hd + i]) *
					   cpu_bf16_to_f32(kr[j * hd + i]);
				ref += x, mag += fabs(x);
			}
			if (fabs(s[t * nk + j] - ref) > 1e-5 * mag)
				fail_msg("scores_bf16 [%d][%d] = %g, reference %g", t, j, s[t * nk + j], ref);
		}
	memmove(q, q + 33 * hd, (size_t)hd * sizeof *q); /* query 33 alone */
	k->scores_bf16(s1, nk, q, hd, 1, kp, hd, nk);
	assert_memory_equal(s1, s + 33 * nk, (size_t)nk * sizeof *s1);
	free(q);
	free(kr);
	free(kp);
	free(s);
	free(s1);
}

/* Decode (n = 1) on weights at every offset from a cache line: the AVX-512 kernel
 * loads aligned lines and shifts them when the offset is a multiple of 4 bytes. */
static void test_matvec_misaligned(void **state)
{
	(void)state;
	static const int Ks[] = {32, 64, 96, 1024, 100};
	static const int Ms[] = {1, 4, 9, 70};
	for (int isa = CPU_ISA_C; isa <= CPU_ISA_AMX; isa++) {
		if (!cpu_isa_supported(isa))
			continue;
		const struct cpu_kernels *k = cpu_kernels_get(isa);
		for (int shift = 0; shift < 32; shift++)
			for (size_t ki = 0; ki < sizeof Ks / sizeof Ks[0]; ki++)
				for (size_t mi = 0; mi < sizeof Ms / sizeof Ms[0]; mi++)
					check_matmul_at(k, 1, Ms[mi], Ks[ki], shift & 1, shift);
		check_matmul_at(k, 3, 9, 64, false, 6); /* prefill tiles too */
	}
}

static void check_attn(const struct cpu_kernels *k, int nk, int hd, bool bf16)
{
	float *q = malloc((size_t)hd * sizeof *q), *s = malloc((size_t)nk * sizeof *s);
	float *kf = malloc((size_t)nk * hd * sizeof *kf), *out = malloc((size_t)hd * sizeof *out);
	uint16_t *kb = malloc((size_t)nk * hd * sizeof *kb);
	for (int i = 0; i < hd; i++)
		q[i] = frand();
	for (int i = 0; i < nk * hd; i++) {
		kb[i] = cpu_f32_to_bf16(frand());
		kf[i] = bf16 ? cpu_bf16_to_f32(kb[i]) : frand();
	}
	const void *rows = bf16 ? (const void *)kb : (const void *)kf;
	k->scores(s, q, rows, nk, hd, bf16, 0.25f);
	for (int j = 0; j < nk; j++) {
		double ref = 0, mag = 1;
		for (int i = 0; i < hd; i++) {
			ref += (double)q[i] * kf[(size_t)j * hd + i];
			mag += fabs((double)q[i] * kf[(size_t)j * hd + i]);
		}
		if (fabs(s[j] - 0.25 * ref) > 1e-6 * mag)
			fail_msg("%s scores nk=%d hd=%d bf16=%d j=%d", k->name, nk, hd, bf16, j);
	}
	k->softmax(s, nk, 1.0f, NULL);
	k->mix(out, hd, s, nk, 1, rows, nk, hd, bf16);
	for (int i = 0; i < hd; i++) {
		double ref = 0;
		for (int j = 0; j < nk; j++)
			ref += (double)s[j] * kf[(size_t)j * hd + i];
		if (fabs(out[i] - ref) > 1e-6)
			fail_msg("%s mix nk=%d hd=%d bf16=%d i=%d: %g vs %g", k->name, nk, hd, bf16,
				 i, out[i], ref);
	}
	/* T queries at once (as a prefill tile): query t sees nk - T + 1 + t keys, its
	 * row zero past them; rows and outputs at strides wider than they need */
	for (int T = 2; T <= 11; T++) {
		if (nk < T)
			break;
		int ldp = nk + 3, ldo = hd + 5;
		float *p = calloc((size_t)T * ldp, sizeof *p),
		      *o = malloc((size_t)T * ldo * sizeof *o);
		for (int t = 0; t < T; t++)
			for (int j = 0; j < nk - T + 1 + t; j++)
				p[(size_t)t * ldp + j] = (frand() + 1) / nk;
		k->mix(o, ldo, p, ldp, T, rows, nk, hd, bf16);
		for (int t = 0; t < T; t++)
			for (int i = 0; i < hd; i++) {
				double ref = 0;
				for (int j = 0; j < nk; j++)
					ref += (double)p[(size_t)t * ldp + j] *
					       kf[(size_t)j * hd + i];
				if (fabs(o[(size_t)t * ldo + i] - ref) > 1e-6)
					fail_msg("%s mix T=%d nk=%d hd=%d bf16=%d t=%d i=%d: %g vs "
						 "%g",
						 k->name, T, nk, hd, bf16, t, i,
						 o[(size_t)t * ldo + i], ref);
			}
		free(p);
		free(o);
	}
	free(q);
	free(s);
	free(kf);
	free(out);
	free(kb);
}

static void test_attention(void **state)
{
	(void)state;
	static const int hds[] = {2, 16, 20, 64, 128, 200, 256};
	for (int isa = CPU_ISA_C; isa <= CPU_ISA_AMX; isa++) {
		if (!cpu_isa_supported(isa))
			continue;
		const struct cpu_kernels *k = cpu_kernels_get(isa);
		for (size_t h = 0; h < sizeof hds / sizeof hds[0]; h++)
			for (int nk = 1; nk < 40; nk += 9) {
				check_attn(k, nk, hds[h], true);
				check_attn(k, nk, hds[h], false);
			}
	}
}

static void test_elementwise(void **state)
{
	(void)state;
	float x[8] = {1, -2, 3, -4, 0.5f, 6, -7, 8}, o[8], s[4] = {1000, 1001, -1e30f, 1000};
	float w[8];
	double ss = 0;
	for (int i = 0; i < 8; i++) {
		w[i] = 0.5f + i;
		ss += x[i] * x[i];
	}
	cpu_rmsnorm(o, x, w, 8, 1e-6f);
	for (int i = 0; i < 8; i++)
		assert_float_equal(o[i], x[i] / sqrt(ss / 8 + 1e-6) * (0.5 + i), 1e-5);
	cpu_softmax(s, 4, 1.0f, NULL); /* large values must not overflow */
	assert_float_equal(s[1], exp(1) / (2 + exp(1)), 1e-6);
	assert_float_equal(s[2], 0, 1e-30);
	float r[4] = {1, 2, 3, 4}, c[2] = {0, 1}, sn[2] = {1, 0};
	cpu_rope(r, c, sn, 4); /* pair 0 turned by 90 degrees, pair 1 kept */
	assert_float_equal(r[0], -3, 0);
	assert_float_equal(r[2], 1, 0);
	assert_float_equal(r[1], 2, 0);
	assert_float_equal(r[3], 4, 0);
	float g[2] = {0, 2}, u[2] = {3, 5};
	cpu_swiglu(g, u, 2);
	assert_float_equal(g[0], 0, 0);
	assert_float_equal(g[1], 2 / (1 + exp(-2.0)) * 5, 1e-5);
	assert_int_equal(cpu_f32_to_bf16(1.00390625f), 0x3f80); /* tie to even */
	assert_int_equal(cpu_f32_to_bf16(1.01171875f), 0x3f82); /* tie rounds up to even */
	assert_true(isnan(cpu_bf16_to_f32(cpu_f32_to_bf16(NAN))));
}

/* Every ISA's element-wise steps against double precision: the activation packing,
 * softmax at several lengths and scales (and far from 0), SwiGLU over the whole useful
 * range of e^x, RMSNorm, and the bf16 rounding bit for bit (random bit patterns, NaN,
 * infinities, ties). */
static void test_elementwise_isa(void **state)
{
	(void)state;
	static const int lens[] = {1, 5, 16, 17, 40, 100, 1030};
	float *a = malloc(2048 * sizeof *a), *b = malloc(2048 * sizeof *b);
	float *w = malloc(2048 * sizeof *w);
	uint16_t *hb = malloc(2048 * sizeof *hb);
	for (int isa = CPU_ISA_C; isa <= CPU_ISA_AMX; isa++) {
		if (!cpu_isa_supported(isa))
			continue;
		const struct cpu_kernels *k = cpu_kernels_get(isa);
		for (size_t li = 0; li < 2 * sizeof lens / sizeof lens[0]; li++) {
			/* each length twice: scores near 0, and near 300, where exp overflows a
			 * float unless the row's largest is subtracted first */
			int n = lens[li / 2];
			float off = li % 2 ? 1000 : 0;
			double mx = -INFINITY, sum = 0;
			for (int i = 0; i < n; i++) {
				a[i] = 40 * frand() + off;
				b[i] = a[i] * 0.3f;
				mx = b[i] > mx ? b[i] : mx;
			}
			for (int i = 0; i < n; i++)
				sum += exp(b[i] - mx);
			double lse, lse_ref = mx + log(sum);
			k->softmax(a, n, 0.3f, &lse);
			for (int i = 0; i < n; i++) {
				double ref = exp(b[i] - mx) / sum;
				if (fabs(a[i] - ref) > 2e-6 * ref + 1e-30)
					fail_msg(
						"%s softmax n=%d i=%d: %.9g vs %.9g b %.9g mx %.9g",
						k->name, n, i, a[i], ref, b[i], mx);
			}
			/* the log-sum-exp the loss takes: its sum of exponentials in fp32 */
			if (fabs(lse - lse_ref) > 1e-6 * fabs(lse_ref) + 2e-6)
				fail_msg("%s softmax n=%d: log-sum-exp %.9g vs %.9g", k->name, n,
					 lse, lse_ref);
			double ss = 0;
			for (int i = 0; i < n; i++) {
				a[i] = 3 * frand();
				w[i] = frand();
				ss += (double)a[i] * a[i];
			}
			k->rmsnorm(b, a, w, n, 1e-6f);
			for (int i = 0; i < n; i++) {
				double ref = a[i] / sqrt(ss / n + 1e-6) * w[i];
				if (fabs(b[i] - ref) > 1e-6 * fabs(ref) + 1e-7)
					fail_msg("%s rmsnorm n=%d i=%d: %g vs %g", k->name, n, i,
						 b[i], ref);
			}
		}
		for (int K = 1; K <= 200; K += 7) { /* pack_row: the portable packing, vectorized */
			for (int i = 0; i < K; i++)
				a[i] = frand();
			k->pack_row(b, a, K);
			float ref[200];
			cpu_pack_row(ref, a, K, k->pack);
			assert_memory_equal(b, ref, (size_t)K * sizeof *b);
		}
		for (int i = 0; i < 2048; i++) { /* g from -120 to 120 */
			a[i] = -120 + 240.0f * i / 2047;
			b[i] = frand();
		}
		/* and gates far past any exp's range: sigma 0 or 1, 1 - sigma 0 */
		const float huge[] = {1e30f, 1e36f, 1e38f, 3.4e38f, -1e30f, -3.4e38f};
		for (int i = 0; i < 6; i++)
			a[2000 + 7 * i] = huge[i];
		float g[2048];
		memcpy(g, a, sizeof g);
		k->swiglu(g, b, 2048);
		for (int i = 0; i < 2048; i++) {
			double ref = a[i] / (1 + exp(-(double)a[i])) * b[i];
			if (fabs(g[i] - ref) > 1e-6 * fabs(ref) + 1e-35)
				fail_msg("%s swiglu g=%g: %g vs %g", k->name, a[i], g[i], ref);
		}
		float dh[2048], du[2048], d0[2048]; /* its backward, against float64 derivatives */
		for (int i = 0; i < 2048; i++)
			dh[i] = d0[i] = frand();

		k->swiglu_back(dh, du, a, b, 2048);
		for (int i = 0; i < 2048; i++) {
			double x = a[i], sg = 1 / (1 + exp(-x)), dx = d0[i] * sg;
			double rdu = dx * x, rdh = dx * b[i] * (1 + x * (1 - sg));
			double mag = fabs(dx * b[i]) * (1 + fabs(x) * (1 - sg));
			if (fabs(du[i] - rdu) > 1e-6 * fabs(rdu) + 1e-35 ||
			    fabs(dh[i] - rdh) > 1e-6 * mag + 1e-35)
				fail_msg("%s swiglu_back g=%g: du %g vs %g, dh %g vs %g", k->name,
					 a[i], du[i], rdu, dh[i], rdh);
		}
		for (int i = 0; i < 2048; i++) {
			frand();
			uint32_t u = (uint32_t)(rng >> 32);
			if (i % 7 == 0)
				u = (u & 0xffff0000u) | 0x8000u; /* a tie */
			memcpy(&a[i], &u, sizeof u);
		}
		a[0] = NAN;
		a[1] = INFINITY;
		a[2] = -INFINITY;
		a[3] = 3.4e38f;
		for (int n = 2048; n > 2000; n -= 13) {
			k->to_bf16(hb, a, n);
			for (int i = 0; i < n; i++)
				if (hb[i] != cpu_f32_to_bf16(a[i]))
					fail_msg("%s to_bf16 %a: %04x vs %04x", k->name, a[i],
						 hb[i], cpu_f32_to_bf16(a[i]));
		}
	}
	free(a);
	free(b);
	free(w);
	free(hb);
}

struct count_task {
	atomic_int next;
	int items;
	bool ranges; /* cpu_claim_range rather than cpu_claim */
	int hits[1000];
	int tids[4];
};

static void count_task(void *arg, int tid, int nt)
{
	struct count_task *c = arg;
	assert_true(tid >= 0 && tid < nt && nt <= 4);
	__atomic_fetch_add(&c->tids[tid], 1, __ATOMIC_SEQ_CST);
	if (c->ranges) {
		for (int i, end; (i = cpu_claim_range(&c->next, c->items, nt, &end)) >= 0;) {
			assert_true(end > i && end <= c->items);
			for (; i < end; i++)
				__atomic_fetch_add(&c->hits[i], 1, __ATOMIC_SEQ_CST);
		}
		return;
	}
	for (int i; (i = cpu_claim(&c->next, c->items)) >= 0;)
		__atomic_fetch_add(&c->hits[i], 1, __ATOMIC_SEQ_CST);
}

/* Every work item runs exactly once per task, whichever threads join it, claimed one
 * at a time or in runs. */
static void test_pool(void **state)
{
	(void)state;
	for (int nt = 1; nt <= 3; nt++) {
		struct cpu_pool *p = cpu_pool_new(nt);
		assert_non_null(p);
		assert_int_equal(cpu_pool_size(p), nt);
		for (int r = 0; r < 200; r++) {
			struct count_task c = {.items = 1 + r * 5 % 1000, .ranges = r % 2};
			atomic_init(&c.next, 0);
			cpu_pool_run(p, count_task, &c);
			for (int i = 0; i < 1000; i++)
				assert_int_equal(c.hits[i], i < c.items);
			assert_int_equal(c.tids[0], 1); /* the caller always takes part */
		}
		cpu_pool_free(p);
	}
	cpu_pool_free(NULL);
}

/* The optimizer's kernels: every set's AdamW gives cpu_adamw_c's bits (a resumed run
 * must repeat an uninterrupted one on any machine's kernels), and scale_sq scales
 * exactly and sums the squares to double precision; lengths that leave tails. */
static void test_optimizer(void **state)
{
	(void)state;
	static const size_t lens[] = {1, 7, 16, 33, 1000};
	for (int isa = CPU_ISA_C; isa <= CPU_ISA_AMX; isa++) {
		if (!cpu_isa_supported(isa))
			continue;
		const struct cpu_kernels *k = cpu_kernels_get(isa);
		for (size_t li = 0; li < sizeof lens / sizeof lens[0]; li++) {
			size_t n = lens[li];
			float *a = malloc(8 * n * sizeof *a), *g = a + 7 * n;
			for (size_t i = 0; i < 7 * n; i++)
				a[i] = frand();
			for (size_t i = 0; i < n; i++) {
				a[2 * n + i] = a[5 * n + i] = a[2 * n + i] * a[2 * n + i]; /* v >= 0 */
				a[3 * n + i] = a[i], a[4 * n + i] = a[n + i];
				g[i] = a[6 * n + i];
			}
			struct cpu_adamw h = {.decay = 0.999f,
					      .b1 = 0.9f,
					      .b2 = 0.95f,
					      .c1 = 0.1f,
					      .c2 = 0.05f,
					      .step = 3e-3f,
					      .rbc2 = 1.2f,
					      .eps = 1e-8f};
			cpu_adamw_c(a, a + n, a + 2 * n, g, n, &h);
			k->adamw(a + 3 * n, a + 4 * n, a + 5 * n, g, n, &h);
			assert_memory_equal(a, a + 3 * n, 3 * n * sizeof *a);
			double ref = 0;
			for (size_t i = 0; i < n; i++) {
				float x = g[i] * 0.37f;
				ref += (double)x * x;
			}
			double got = k->scale_sq(g, n, 0.37f);
			if (fabs(got - ref) > 1e-12 * ref)
				fail_msg("%s scale_sq n %zu: %.17g, reference %.17g", k->name, n, got, ref);
			for (size_t i = 0; i < n; i++)
				assert_true(g[i] == a[6 * n + i] * 0.37f);
			free(a);
		}
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_matmul),          cmocka_unit_test(test_matvec_misaligned),
		cmocka_unit_test(test_attention),       cmocka_unit_test(test_elementwise),
		cmocka_unit_test(test_elementwise_isa), cmocka_unit_test(test_pool),
		cmocka_unit_test(test_optimizer),       cmocka_unit_test(test_matmul_bf16_cuts),
		cmocka_unit_test(test_scores_bf16),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
