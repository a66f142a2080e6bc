/* test_schedule.c — the learning-rate schedule against its formula, written here again
 * in long double, at the boundaries of the warm-up and of the cosine. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "src/train/schedule.h"

#include <math.h>

/* The formula of `qwenchat train --help`, computed independently. */
static long double formula(long double lr, long double min_lr, int64_t warmup, int64_t cosine,
			   int64_t s)
{
	if (s < warmup)
		return (long double)s / warmup * lr;
	if (s > cosine)
		return min_lr;
	long double r = cosine == warmup ? 0 : (long double)(s - warmup) / (cosine - warmup);
	return min_lr + 0.5L * (1 + cosl(3.14159265358979323846264338327950288L * r)) * (lr - min_lr);
}

static void near(double got, long double want)
{
	long double tol = 1e-15L * (fabsl(want) > 1e-300L ? fabsl(want) : 1);
	if (!(fabsl((long double)got - want) <= tol)) /* a NaN is not near anything */
		fail_msg("got %.17g, want %.17Lg", got, want);
}

static void test_boundaries(void **state)
{
	(void)state;
	struct sched s = {6e-4, 6e-5, 10, 100};
	int64_t steps[] = {0, 1, 5, 9, 10, 11, 54, 55, 56, 99, 100, 101, 1000000};
	for (size_t i = 0; i < sizeof steps / sizeof steps[0]; i++)
		near(sched_lr(&s, steps[i]), formula(6e-4, 6e-5, 10, 100, steps[i]));
	assert_true(sched_lr(&s, 0) == 0);                /* the first step of a warm-up */
	near(sched_lr(&s, 9), 0.9L * 6e-4L);             /* its last */
	near(sched_lr(&s, 10), 6e-4L);                   /* the peak */
	near(sched_lr(&s, 55), (6e-4L + 6e-5L) / 2);     /* half way down */
	assert_true(sched_lr(&s, 100) == 6e-5);          /* the floor, exactly */
	assert_true(sched_lr(&s, 101) == 6e-5);
	assert_true(sched_lr(&s, 1000000) == 6e-5);
}

static void test_no_warmup(void **state)
{
	(void)state;
	struct sched s = {1e-3, 0, 0, 4};
	near(sched_lr(&s, 0), 1e-3L);
	for (int64_t k = 0; k <= 6; k++)
		near(sched_lr(&s, k), formula(1e-3, 0, 0, 4, k));
	assert_true(sched_lr(&s, 4) == 0);
}

/* A decay of no length: the peak at s == warmup, the floor after. */
static void test_empty_cosine(void **state)
{
	(void)state;
	struct sched s = {1e-3, 1e-4, 3, 3};
	near(sched_lr(&s, 2), 2e-3L / 3);
	assert_true(sched_lr(&s, 3) == 1e-3);
	assert_true(sched_lr(&s, 4) == 1e-4);
}

static void test_monotone(void **state)
{
	(void)state;
	struct sched s = {3e-4, 3e-5, 7, 333};
	for (int64_t k = 1; k < 7; k++)
		assert_true(sched_lr(&s, k) > sched_lr(&s, k - 1));
	for (int64_t k = 8; k < 400; k++)
		assert_true(sched_lr(&s, k) <= sched_lr(&s, k - 1));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_boundaries),
		cmocka_unit_test(test_no_warmup),
		cmocka_unit_test(test_empty_cosine),
		cmocka_unit_test(test_monotone),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
