/* test_rowexp.c — the vector sums of exp against long double, on every set of
 * kernels this CPU has: rows of a vocabulary's size and odd lengths (the scalar
 * tail), temperatures, masked (-inf) and underflowing logits. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "src/base/rowexp.h"

/* A reproducible row: roughly normal logits of the given spread. */
static void fill(float *x, int n, double spread, unsigned seed)
{
	srand(seed);
	for (int i = 0; i < n; i++) {
		double u = 0;
		for (int k = 0; k < 4; k++)
			u += rand() / (double)RAND_MAX - 0.5;
		x[i] = (float)(u * spread);
	}
}

static float row_max(const float *x, int n)
{
	float m = -INFINITY;
	for (int i = 0; i < n; i++)
		m = x[i] > m ? x[i] : m;
	return m;
}

/* exp's argument as the kernels compute it: its rounding, not exp's error, is what
 * a long double argument would show (1e-16 relative of a large argument). */
static long double arg(float x, double shift, double t)
{
	return ((double)x - shift) / t;
}

/* Every kernel set against long double, each term and the sum (within what
 * summing n doubles in any order may lose: n rounding errors at most). */
static void check_row(const float *x, int n, double t)
{
	double tol = (n + 4) * 1.2e-16, shift = n ? row_max(x, n) : 0;
	long double ref = 0;
	for (int i = 0; i < n; i++)
		ref += expl(arg(x[i], shift, t));
	double *terms = calloc((size_t)n + 1, sizeof *terms);
	assert_non_null(terms);
	enum rowexp_isa isas[] = {ROWEXP_C, ROWEXP_AVX2, ROWEXP_AVX512};
	for (size_t k = 0; k < sizeof isas / sizeof isas[0]; k++) {
		double z, again;
		if (!rowexp_sum_isa(isas[k], x, n, shift, t, terms, &z)) {
			assert_int_not_equal(isas[k], ROWEXP_C); /* the C path is always there */
			continue;
		}
		if (ref == 0)
			assert_true(z == 0);
		else
			assert_true(fabsl((z - ref) / ref) < tol);
		for (int i = 0; i < n; i++) {
			long double e = expl(arg(x[i], shift, t));
			assert_true(fabsl(terms[i] - e) <= 1e-15L * e + 1e-300L);
		}
		/* the same bits again, without terms */
		assert_true(rowexp_sum_isa(isas[k], x, n, shift, t, NULL, &again));
		assert_memory_equal(&z, &again, sizeof z);
	}
	double z = rowexp_sum(x, n, shift, t, NULL);
	assert_true(ref == 0 ? z == 0 : fabsl((z - ref) / ref) < tol);
	free(terms);
}

static void test_vocabulary(void **state)
{
	(void)state;
	int n = 151936;
	float *x = malloc((size_t)n * sizeof *x);
	assert_non_null(x);
	double spreads[] = {1, 8, 40};
	for (int s = 0; s < 3; s++) {
		fill(x, n, spreads[s], 7u + (unsigned)s);
		check_row(x, n, 1);
		check_row(x, n, 0.7);
	}
	free(x);
}

static void test_lengths(void **state)
{
	(void)state;
	float x[37];
	fill(x, 37, 5, 3);
	for (int n = 0; n <= 37; n++) /* every tail the vector loops leave */
		check_row(x, n, 1);
	check_row(x, 37, 1e-3); /* a low temperature: most terms underflow to 0 */
	check_row(x, 37, 250);
}

static void test_extremes(void **state)
{
	(void)state;
	float x[24];
	fill(x, 24, 3, 11);
	x[2] = -INFINITY; /* a masked logit: a zero term */
	x[9] = -1e30f;    /* far under exp's range */
	x[17] = -745.5f;  /* where doubles run out */
	check_row(x, 24, 1);
	double terms[24], z;
	assert_true(rowexp_sum_isa(ROWEXP_C, x, 24, row_max(x, 24), 1, terms, &z));
	assert_true(terms[2] == 0 && terms[9] == 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_vocabulary),
		cmocka_unit_test(test_lengths),
		cmocka_unit_test(test_extremes),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
