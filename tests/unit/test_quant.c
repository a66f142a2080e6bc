/* test_quant.c — ggml's weight formats: every block of tests/golden/dequant-golden.txt
 * dequantizes to gguf-py's values bit for bit (random blocks, zero, negative, largest
 * and subnormal f16 scales, quants at their extremes), and fp16 widening is exact. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/cpu/kernels.h"
#include "engine/quant.h"
#include "tests/unit/testutil.h"

static enum eng_dtype type_named(const char *s)
{
	for (int t = 0; t < ENG_DTYPE_COUNT; t++)
		if (!strcmp(eng_dtype_name((enum eng_dtype)t), s))
			return (enum eng_dtype)t;
	fail_msg("unknown type %s in the golden file", s);
	return ENG_DTYPE_COUNT;
}

/* One golden line: TYPE NBLOCKS BYTES_HEX FLOAT_BITS_HEX. */
static void check_line(char *line, int lineno)
{
	char *type = strtok(line, " "), *nb = strtok(NULL, " ");
	char *bytes_hex = strtok(NULL, " "), *floats_hex = strtok(NULL, " \n");
	assert_non_null(floats_hex);
	enum eng_dtype t = type_named(type);
	int blocks = atoi(nb), n = blocks * eng_dtype_block(t);
	size_t nbytes = (size_t)blocks * eng_dtype_block_bytes(t);
	assert_int_equal(strlen(bytes_hex), 2 * nbytes);
	assert_int_equal(strlen(floats_hex), 8 * (size_t)n);
	uint8_t *b = malloc(nbytes);
	float *y = malloc((size_t)n * sizeof *y);
	assert_int_equal(tu_unhex(bytes_hex, b, nbytes), 0);
	quant_dequantize_row(t, b, y, n);
	for (int i = 0; i < n; i++) {
		uint32_t want, got;
		char w[9];
		memcpy(w, floats_hex + 8 * i, 8);
		w[8] = 0;
		want = (uint32_t)strtoul(w, NULL, 16);
		memcpy(&got, &y[i], 4);
		if (got != want)
			fail_msg("line %d (%s): weight %d is %08x (%g), gguf-py says %08x", lineno,
				 type, i, got, y[i], want);
	}
	free(b);
	free(y);
}

static void test_golden(void **state)
{
	(void)state;
	char path[4096];
	snprintf(path, sizeof path, "%s/tests/golden/dequant-golden.txt", tu_srcdir());
	FILE *f = fopen(path, "r");
	assert_non_null(f);
	size_t cap = 0;
	char *line = NULL;
	int lines = 0, seen[ENG_DTYPE_COUNT] = {0};
	while (getline(&line, &cap, f) > 0) {
		char type[8] = "";
		sscanf(line, "%7s", type);
		seen[type_named(type)]++;
		check_line(line, ++lines);
	}
	free(line);
	fclose(f);
	for (int t = ENG_Q8_0; t < ENG_DTYPE_COUNT; t++)
		assert_true(seen[t] >= 20);
}

static void test_f16(void **state)
{
	(void)state;
	assert_true(quant_f16_to_f32(0x3c00) == 1.0f);
	assert_true(quant_f16_to_f32(0xc000) == -2.0f);
	assert_true(quant_f16_to_f32(0x7bff) == 65504.0f);
	assert_true(quant_f16_to_f32(0x0001) == ldexpf(1, -24));
	assert_true(quant_f16_to_f32(0x03ff) == ldexpf(1023, -24));
	assert_true(isinf(quant_f16_to_f32(0xfc00)) && quant_f16_to_f32(0xfc00) < 0);
	assert_true(isnan(quant_f16_to_f32(0x7e00)));
	assert_true(signbit(quant_f16_to_f32(0x8000)));
	/* every finite half survives the round trip */
	for (uint32_t h = 0; h < 65536; h++)
		if ((h >> 10 & 31) != 31)
			assert_int_equal(quant_f32_to_f16(quant_f16_to_f32((uint16_t)h)), h);
}

static void test_float_rows(void **state)
{
	(void)state;
	uint16_t bf[2] = {0x3f80, 0xc040}; /* 1, -3 */
	float y[2], x[2] = {1.5f, -0.25f};
	quant_dequantize_row(ENG_BF16, bf, y, 2);
	assert_true(y[0] == 1.0f && y[1] == -3.0f);
	quant_dequantize_row(ENG_F32, x, y, 2);
	assert_true(y[0] == 1.5f && y[1] == -0.25f);
}

static uint32_t rng = 12345;
static uint32_t next_u32(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 17;
	rng ^= rng << 5;
	return rng;
}
static float frand(void) /* [-1, 1) */
{
	return (float)((double)next_u32() / 2147483648.0 - 1.0);
}

/* Random weights of type t: random bytes with every f16 scale set to a small
 * finite value, so rows look like real ones (dequantized magnitudes ~0.01-1). */
static void random_rows(enum eng_dtype t, uint8_t *w, int rows, int K)
{
	size_t rb = eng_row_bytes(t, K), bb = eng_dtype_block_bytes(t);
	for (size_t i = 0; i < rb * (size_t)rows; i++)
		w[i] = (uint8_t)next_u32();
	if (t == ENG_F16 || t == ENG_F32) {
		for (int i = 0; i < rows * K; i++) {
			float v = frand();
			if (t == ENG_F32)
				memcpy(w + 4 * (size_t)i, &v, 4);
			else {
				uint16_t h = quant_f32_to_f16(v);
				memcpy(w + 2 * (size_t)i, &h, 2);
			}
		}
		return;
	}
	bool with_min = t == ENG_Q4_K || t == ENG_Q5_K || t == ENG_Q4_1 || t == ENG_Q5_1;
	int at[2] = {t == ENG_Q6_K   ? 208
		     : t == ENG_Q3_K ? 108
		     : t == ENG_Q2_K ? 80
				     : 0,
		     t == ENG_Q2_K ? 82
		     : with_min    ? 2
				   : -1};
	for (size_t b = 0; b < rb * (size_t)rows / bb; b++)
		for (int j = 0; j < 2; j++)
			if (at[j] >= 0) {
				uint16_t h = quant_f32_to_f16(0.001f + 0.02f * (frand() + 1));
				memcpy(w + b * bb + at[j], &h, 2);
			}
}

/* Prefill's rows: the dequantized weights rounded to bf16 (a fused multiply-subtract
 * for the mins of Q4_K, Q5_K, Q2_K, Q4_1 and Q5_1 may round once less: one bf16 step
 * at most). */
static void check_dequant_bf16(const struct cpu_kernels *k, enum eng_dtype t, const uint8_t *w,
			       int rows, int K)
{
	float *f = malloc((size_t)K * sizeof *f);
	uint16_t *b = malloc((size_t)K * sizeof *b);
	for (int m = 0; m < rows; m++) {
		const uint8_t *row = w + (size_t)m * eng_row_bytes(t, K);
		quant_dequantize_row(t, row, f, K);
		k->dequant_bf16(t, row, b, K);
		for (int i = 0; i < K; i++) {
			int want = cpu_f32_to_bf16(f[i]), d = abs(want - (int)b[i]);
			bool fused = t == ENG_Q4_K || t == ENG_Q5_K || t == ENG_Q4_1 ||
				     t == ENG_Q5_1 || t == ENG_Q2_K;
			if (d > (fused ? 1 : 0))
				fail_msg("%s %s row %d weight %d: bf16 %04x, want %04x (%g)",
					 k->name, eng_dtype_name(t), m, i, b[i], want, f[i]);
		}
	}
	free(f);
	free(b);
}

/* Prefill's exact rows: the dequantized weights in fp32, in the ISA's packed order,
 * bit for bit, and the fp32-weight product over them in double. */
static void check_dequant_f32(const struct cpu_kernels *k, enum eng_dtype t, const uint8_t *w,
			      int rows, int K)
{
	if (!k->dequant_f32p)
		return;
	float *f = malloc((size_t)K * rows * sizeof *f), *p = malloc((size_t)K * rows * sizeof *p);
	float *u = malloc((size_t)K * sizeof *u), *x = malloc((size_t)3 * K * sizeof *x);
	float *xp = malloc((size_t)3 * K * sizeof *xp), out[3 * 24];
	for (int m = 0; m < rows; m++) {
		const uint8_t *row = w + (size_t)m * eng_row_bytes(t, K);
		quant_dequantize_row(t, row, f + (size_t)m * K, K);
		k->dequant_f32p(t, row, p + (size_t)m * K, K);
		cpu_unpack_row(u, p + (size_t)m * K, K, k->pack);
		for (int i = 0; i < K; i++) {
			float want = f[(size_t)m * K + i];
			if (u[i] != want)
				fail_msg("%s %s row %d weight %d: %g, want %g", k->name,
					 eng_dtype_name(t), m, i, u[i], want);
		}
	}
	for (int i = 0; i < 3 * K; i++)
		x[i] = frand();
	for (int i = 0; i < 3; i++)
		cpu_pack_row(xp + (size_t)i * K, x + (size_t)i * K, K, k->pack);
	k->matmul_f32w(out, rows, xp, K, 3, p, K, rows, false);
	for (int i = 0; i < 3; i++)
		for (int m = 0; m < rows; m++) {
			double ref = 0, mag = 0;
			for (int j = 0; j < K; j++) {
				ref += (double)f[(size_t)m * K + j] * x[(size_t)i * K + j];
				mag += fabs((double)f[(size_t)m * K + j] * x[(size_t)i * K + j]);
			}
			if (fabs(out[i * rows + m] - ref) > 1e-5 * mag)
				fail_msg("%s %s matmul_f32w token %d row %d: %g, want %g", k->name,
					 eng_dtype_name(t), i, m, out[i * rows + m], ref);
		}
	free(f);
	free(p);
	free(u);
	free(x);
	free(xp);
}

/* Every ISA's qmatvec against the dot product of the dequantized weights with the
 * fp32 activations, in double: the only difference allowed is the activations'
 * rounding to int8 (half a step of each block's scale per weight), and the kernels
 * agree with each other to float rounding. */
static void test_qmatvec(void **state)
{
	(void)state;
	enum { K = 1024, ROWS = 24 };
	static const enum eng_dtype types[] = {ENG_Q8_0,   ENG_Q4_0,   ENG_Q5_0, ENG_Q4_K, ENG_Q5_K,
					       ENG_Q6_K,   ENG_Q4_1,   ENG_Q5_1, ENG_Q2_K, ENG_Q3_K,
					       ENG_IQ4_NL, ENG_IQ4_XS, ENG_F16,  ENG_F32};
	float x[K], wf[K], xd[K / 32], xds[K / 32], out[ROWS], ref_c[ROWS];
	int8_t xq8[K];
	int16_t s16[K / 16];
	struct cpu_xq xq = {.q = xq8, .d = xd, .ds = xds, .s16 = s16};
	uint8_t *w = malloc(eng_row_bytes(ENG_F32, K) * ROWS);
	for (size_t ti = 0; ti < sizeof types / sizeof types[0]; ti++) {
		enum eng_dtype t = types[ti];
		random_rows(t, w, ROWS, K);
		for (int k = 0; k < K; k++) /* blocks of very different scales */
			x[k] = frand() * (k / 32 % 3 == 0 ? 10.0f : k / 32 % 3 == 1 ? 0.01f : 1.0f);
		cpu_quantize_act(x, K, &xq);
		cpu_qmatvec_c(t, ref_c, w, &xq, K, 0, ROWS, false);
		for (int m = 0; m < ROWS; m++) {
			quant_dequantize_row(t, w + (size_t)m * eng_row_bytes(t, K), wf, K);
			double ref = 0, bound = 0, mag = 0;
			for (int k = 0; k < K; k++) {
				ref += (double)wf[k] * x[k];
				bound += fabs(wf[k]) * 0.5 * xd[k / 32];
				mag += fabs((double)wf[k] * x[k]);
			}
			if (t == ENG_F16 || t == ENG_F32)
				bound = 0;
			if (fabs(ref_c[m] - ref) > bound * 1.001 + 1e-5 * mag)
				fail_msg("%s row %d: c %g, reference %g (bound %g)",
					 eng_dtype_name(t), m, ref_c[m], ref, bound);
		}
		for (int isa = CPU_ISA_C; isa <= CPU_ISA_AMX; isa++) {
			if (!cpu_isa_supported((enum cpu_isa)isa))
				continue;
			const struct cpu_kernels *k = cpu_kernels_get((enum cpu_isa)isa);
			check_dequant_bf16(k, t, w, ROWS, K);
			check_dequant_f32(k, t, w, ROWS, K);
			for (int m = 0; m < ROWS; m++)
				out[m] = 1.0f;
			k->qmatvec(t, out, w, &xq, K, 2, ROWS - 1, true);
			assert_true(out[0] == 1.0f && out[1] == 1.0f && out[ROWS - 1] == 1.0f);
			for (int m = 2; m < ROWS - 1; m++)
				if (fabsf(out[m] - 1.0f - ref_c[m]) > 1e-4f * (1 + fabsf(ref_c[m])))
					fail_msg("%s %s row %d: %g, c %g", k->name,
						 eng_dtype_name(t), m, out[m] - 1.0f, ref_c[m]);
		}
	}
	free(w);
}

/* The integer prefill (qpack + qgemm) of every ISA that has one against the portable
 * dot product per row and token, to fp32 rounding: the same integer products, only
 * summed in another order. Shapes that leave a partial row group, an odd number of
 * groups, partial token tiles and (K = 288) a partial unit of 8 blocks. */
static void check_qgemm(const struct cpu_kernels *k, enum eng_dtype t)
{
	enum { N = 7, ROWS = 21, LDO = ROWS + 3 };
	int K = eng_dtype_block(t) == 256 ? 512 : 288;
	size_t rb = eng_row_bytes(t, K);
	uint8_t *w = malloc(rb * ROWS), *panel = malloc(cpu_qpanel_bytes(K));
	float *x = malloc((size_t)N * K * sizeof *x), *wf = malloc((size_t)K * sizeof *wf);
	int8_t *q8 = malloc((size_t)N * K);
	float *d = malloc((size_t)N * K / 32 * sizeof *d), *ds = malloc((size_t)N * K / 32 * sizeof *ds);
	int16_t *s16 = malloc((size_t)N * K / 16 * sizeof *s16);
	struct cpu_xq xq[N];
	float out[N * LDO];
	random_rows(t, w, ROWS, K);
	for (int i = 0; i < N; i++) {
		for (int j = 0; j < K; j++)
			x[i * K + j] = frand() * (j / 32 % 3 == 0 ? 10.0f : 1.0f);
		xq[i] = (struct cpu_xq){.q = q8 + i * K, .d = d + i * K / 32, .ds = ds + i * K / 32,
					.s16 = s16 + i * K / 16};
		cpu_quantize_act(x + i * K, K, &xq[i]);
	}
	for (int n = 1; n <= N; n += 4) { /* tiles of 1, then 3 + 3 + 1 tokens */
		for (int i = 0; i < N * LDO; i++)
			out[i] = 1.0f;
		k->qpack(t, w, rb, ROWS, K, panel);
		k->qgemm(t, out, LDO, xq, n, panel, K, ROWS, true);
		for (int m = 0; m < ROWS; m++) {
			quant_dequantize_row(t, w + m * rb, wf, K);
			for (int i = 0; i < n; i++) {
				double want = cpu_qdot_c(t, w + m * rb, &xq[i], K), mag = 0;
				for (int j = 0; j < K; j++)
					mag += fabs((double)wf[j] * x[i * K + j]);
				double got = out[i * LDO + m] - 1.0;
				if (fabs(got - want) > 1e-5 * mag + 1e-6)
					fail_msg("%s %s qgemm token %d row %d: %g, want %g", k->name,
						 eng_dtype_name(t), i, m, got, want);
			}
		}
		for (int i = 0; i < n; i++)
			for (int m = ROWS; m < LDO; m++)
				assert_true(out[i * LDO + m] == 1.0f);
	}
	free(w);
	free(panel);
	free(x);
	free(wf);
	free(q8);
	free(d);
	free(ds);
	free(s16);
}

/* Every ISA's activation quantizer equals the portable one bit for bit, on blocks of
 * very different scales, an all-zero block and exact ties (x.5 steps). */
static void test_quantize_act(void **state)
{
	(void)state;
	enum { K = 256 };
	float x[K], d[2][K / 32], ds[2][K / 32];
	int8_t q[2][K];
	int16_t s16[2][K / 16];
	for (int k = 0; k < K; k++)
		x[k] = frand() * (k / 32 % 3 == 0 ? 10.0f : k / 32 % 3 == 1 ? 1e-3f : 1.0f);
	for (int k = 64; k < 96; k++)
		x[k] = 0;
	for (int k = 96; k < 128; k++) /* max 127: each x.5 a tie */
		x[k] = k == 96 ? 127.0f : (float)(k - 112) + 0.5f;
	struct cpu_xq ref = {.q = q[0], .d = d[0], .ds = ds[0], .s16 = s16[0]};
	struct cpu_xq got = {.q = q[1], .d = d[1], .ds = ds[1], .s16 = s16[1]};
	cpu_quantize_act(x, K, &ref);
	for (int isa = CPU_ISA_C; isa <= CPU_ISA_AMX; isa++) {
		if (!cpu_isa_supported((enum cpu_isa)isa))
			continue;
		const struct cpu_kernels *k = cpu_kernels_get((enum cpu_isa)isa);
		memset(q[1], 0x55, sizeof q[1]);
		k->quantize_act(x, K, &got);
		if (memcmp(q[0], q[1], sizeof q[0]) || memcmp(d[0], d[1], sizeof d[0]) ||
		    memcmp(ds[0], ds[1], sizeof ds[0]) || memcmp(s16[0], s16[1], sizeof s16[0]))
			fail_msg("%s quantize_act differs from the portable one", k->name);
		assert_true(got.f == x);
	}
}

static void test_qgemm(void **state)
{
	(void)state;
	static const enum eng_dtype types[] = {ENG_Q8_0, ENG_Q4_0, ENG_Q5_0,   ENG_Q4_K,
					       ENG_Q5_K, ENG_Q6_K, ENG_Q4_1,   ENG_Q5_1,
					       ENG_Q2_K, ENG_Q3_K, ENG_IQ4_NL, ENG_IQ4_XS};
	int tested = 0;
	for (int isa = CPU_ISA_C; isa <= CPU_ISA_AMX; isa++) {
		const struct cpu_kernels *k = cpu_kernels_get((enum cpu_isa)isa);
		if (!cpu_isa_supported((enum cpu_isa)isa) || !k->qgemm)
			continue;
		for (size_t i = 0; i < sizeof types / sizeof types[0]; i++)
			check_qgemm(k, types[i]);
		tested++;
	}
	if (!tested)
		skip(); /* no ISA of this CPU has the integer prefill */
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_golden),
		cmocka_unit_test(test_f16),
		cmocka_unit_test(test_float_rows),
		cmocka_unit_test(test_qmatvec),
		cmocka_unit_test(test_quantize_act),
		cmocka_unit_test(test_qgemm),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
