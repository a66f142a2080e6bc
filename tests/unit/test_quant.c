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

#include "engine/quant.h"

static const char *env_or(const char *name, const char *dflt)
{
	const char *s = getenv(name);
	return s ? s : dflt;
}

static int hex_nibble(char c)
{
	return c <= '9' ? c - '0' : (c | 32) - 'a' + 10;
}

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
	for (size_t i = 0; i < nbytes; i++)
		b[i] = (uint8_t)(hex_nibble(bytes_hex[2 * i]) << 4 |
				 hex_nibble(bytes_hex[2 * i + 1]));
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
	snprintf(path, sizeof path, "%s/tests/golden/dequant-golden.txt",
		 env_or("TOP_SRCDIR", "."));
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
	for (int t = ENG_Q8_0; t <= ENG_Q6_K; t++)
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

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_golden),
		cmocka_unit_test(test_f16),
		cmocka_unit_test(test_float_rows),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
