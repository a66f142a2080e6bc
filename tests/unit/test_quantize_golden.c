/* test_quantize_golden.c — engine/quantize.c against ggml itself: every row of
 * tests/golden/quant-golden.txt (written by tests/golden/make-quant-golden.py through
 * llama.cpp's libggml-base: quantize_row_*_ref, the fp16 and bf16 row converters)
 * must come out of quant_quantize_row as the very same bytes; and quant_f32_to_f16 on
 * the edge values, against the IEEE encodings. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/quant.h"
#include "tests/unit/testutil.h"

#define MAX_ROWS 64
#define MAX_N    4096

static float *rows[MAX_ROWS];
static int64_t row_n[MAX_ROWS];

static enum eng_dtype type_named(const char *name)
{
	for (int t = 0; t < ENG_DTYPE_COUNT; t++)
		if (!strcmp(eng_dtype_name((enum eng_dtype)t), name))
			return (enum eng_dtype)t;
	fail_msg("unknown type %s", name);
	return ENG_DTYPE_COUNT;
}

/* An `in ID N HEX` line: N floats as 8-digit big-endian bit patterns. */
static void read_row(char *line)
{
	int id, pos;
	long long n;
	assert_int_equal(sscanf(line, "in %d %lld %n", &id, &n, &pos), 2);
	assert_true(id >= 0 && id < MAX_ROWS && n > 0 && n <= MAX_N && !rows[id]);
	const char *hex = line + pos;
	assert_int_equal(strlen(hex), (size_t)n * 8);
	rows[id] = malloc((size_t)n * sizeof(float));
	row_n[id] = n;
	for (long long i = 0; i < n; i++) {
		uint8_t be[4];
		char word[9];
		memcpy(word, hex + 8 * i, 8);
		word[8] = 0;
		assert_int_equal(tu_unhex(word, be, 4), 0);
		uint32_t u = (uint32_t)be[0] << 24 | (uint32_t)be[1] << 16 | (uint32_t)be[2] << 8 |
			     be[3];
		memcpy(&rows[id][i], &u, 4);
	}
}

/* An `out ID TYPE HEX` line: the row quantized here must be those bytes. Returns
 * whether it was. */
static bool check_out(char *line, const char *comment)
{
	int id, pos;
	char tname[16];
	assert_int_equal(sscanf(line, "out %d %15s %n", &id, tname, &pos), 2);
	assert_true(id >= 0 && id < MAX_ROWS && rows[id]);
	enum eng_dtype t = type_named(tname);
	size_t nb = eng_row_bytes(t, row_n[id]);
	assert_true(nb > 0);
	uint8_t *want = malloc(nb), *got = malloc(nb + 1);
	assert_int_equal(tu_unhex(line + pos, want, nb), 0);
	got[nb] = 0xa5; /* a canary: nothing written past the row */
	quant_quantize_row(t, rows[id], got, row_n[id]);
	size_t i = 0;
	while (i < nb && got[i] == want[i])
		i++;
	if (i < nb)
		print_error(
			"row %d (%s) as %s: byte %zu of %zu (block %zu) is %02x, ggml wrote %02x\n",
			id, comment, tname, i, nb, i / eng_dtype_block_bytes(t), got[i], want[i]);
	assert_int_equal(got[nb], 0xa5);
	free(want);
	free(got);
	return i == nb;
}

static void test_rows_match_ggml(void **state)
{
	(void)state;
	char path[4200];
	snprintf(path, sizeof path, "%s/tests/golden/quant-golden.txt", tu_srcdir());
	FILE *f = fopen(path, "r");
	assert_non_null(f);
	size_t cap = 1 << 20;
	char *line = malloc(cap), comment[200] = "";
	int checked = 0, failed = 0, per_type[ENG_DTYPE_COUNT] = {0};
	while (fgets(line, (int)cap, f)) {
		line[strcspn(line, "\n")] = 0;
		if (line[0] == '#') {
			snprintf(comment, sizeof comment, "%s", line + 2);
		} else if (!strncmp(line, "in ", 3)) {
			read_row(line);
		} else if (!strncmp(line, "out ", 4)) {
			char tname[16];
			assert_int_equal(sscanf(line, "out %*d %15s", tname), 1);
			per_type[type_named(tname)]++;
			failed += !check_out(line, comment);
			checked++;
		}
	}
	fclose(f);
	free(line);
	for (int i = 0; i < MAX_ROWS; i++)
		free(rows[i]);
	/* every type the writer produces is covered, from many rows */
	static const enum eng_dtype want[] = {ENG_F16,  ENG_BF16, ENG_Q8_0, ENG_Q4_0,
					      ENG_Q5_0, ENG_Q4_K, ENG_Q5_K, ENG_Q6_K,
					      ENG_Q4_1, ENG_Q5_1, ENG_Q2_K, ENG_Q3_K};
	for (size_t k = 0; k < sizeof want / sizeof want[0]; k++)
		assert_true(per_type[want[k]] >= 30);
	if (failed)
		fail_msg("%d of %d rows differ from ggml's", failed, checked);
}

static uint16_t h(float f)
{
	return quant_f32_to_f16(f);
}

static float from_bits(uint32_t u)
{
	float f;
	memcpy(&f, &u, 4);
	return f;
}

/* The IEEE half encodings, worked out by hand: exact values, rounding to nearest
 * even at the halfway points, overflow, subnormals and NaN. */
static void test_f16_edges(void **state)
{
	(void)state;
	assert_int_equal(h(0.0f), 0x0000);
	assert_int_equal(h(-0.0f), 0x8000);
	assert_int_equal(h(1.0f), 0x3c00);
	assert_int_equal(h(-2.0f), 0xc000);
	assert_int_equal(h(65504.0f), 0x7bff);  /* largest half */
	assert_int_equal(h(65519.99f), 0x7bff); /* just under the midpoint */
	assert_int_equal(h(65520.0f), 0x7c00);  /* the midpoint: to infinity */
	assert_int_equal(h(-1e6f), 0xfc00);
	assert_int_equal(h(INFINITY), 0x7c00);
	assert_int_equal(h(-INFINITY), 0xfc00);
	assert_int_equal(h(0x1p-24f), 0x0001);                     /* smallest subnormal */
	assert_int_equal(h(0x1p-25f), 0x0000);                     /* half of it: ties to even 0 */
	assert_int_equal(h(from_bits(0x33000001)), 0x0001);        /* just above half: rounds up */
	assert_int_equal(h(0x3p-25f), 0x0002);                     /* 1.5 units: ties to even 2 */
	assert_int_equal(h(0x1p-14f), 0x0400);                     /* smallest normal */
	assert_int_equal(h(0x1p-14f - 0x1p-25f), 0x0400);          /* 1023.5 units: up to normal */
	assert_int_equal(h(0x1p-14f - 0x1p-24f), 0x03ff);          /* largest subnormal */
	assert_int_equal(h(1.0f + 0x1p-11f), 0x3c00);              /* halfway, even below */
	assert_int_equal(h(1.0f + 0x3p-11f), 0x3c02);              /* halfway, even above */
	assert_int_equal(h(from_bits(0x3f801001)), 0x3c01);        /* above halfway */
	assert_int_equal(h(2047.0f / 1024.0f + 0x1p-11f), 0x4000); /* carry into exponent */
	assert_int_equal(h(from_bits(1)), 0x0000);                 /* float subnormal */
	assert_int_equal(h(-from_bits(1)), 0x8000);
	assert_int_equal(h(NAN), 0x7e00);
	assert_int_equal(h(from_bits(0xff800001)), 0xfe00); /* signalling NaN: quiet, sign kept */
	assert_int_equal(h(from_bits(0x7fffffff)), 0x7e00);
}

/* F32 rows are copied. */
static void test_f32_copy(void **state)
{
	(void)state;
	float in[4] = {1.5f, -0.0f, NAN, 3e38f}, out[4];
	quant_quantize_row(ENG_F32, in, out, 4);
	assert_memory_equal(in, out, sizeof in);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_rows_match_ggml),
		cmocka_unit_test(test_f16_edges),
		cmocka_unit_test(test_f32_copy),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
