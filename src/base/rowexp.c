/* rowexp.c — sums of exp over a row, vectorised by libmvec where it can be. */
#include "src/base/rowexp.h"

#include <math.h>
#include <stdbool.h>

#if defined(HAVE_LIBMVEC) && defined(__x86_64__)
#include <immintrin.h>
#define ROWEXP_VECTOR 1

/* libmvec's exp in the x86-64 vector function ABI: 'e' AVX-512 (8 doubles in a
 * zmm register), 'd' AVX2 (4 in a ymm), no mask ('N'), one vector argument ('v'). */
__attribute__((target("avx512f"))) __m512d _ZGVeN8v_exp(__m512d x);
__attribute__((target("avx2"))) __m256d _ZGVdN4v_exp(__m256d x);

__attribute__((target("avx512f"))) static double sum_avx512(const float *x, int n, double shift,
							    double t, double *terms, int *done)
{
	__m512d acc = _mm512_setzero_pd(), s = _mm512_set1_pd(shift), d = _mm512_set1_pd(t);
	int i = 0;
	for (; i + 8 <= n; i += 8) {
		__m512d v = _mm512_sub_pd(_mm512_cvtps_pd(_mm256_loadu_ps(x + i)), s);
		if (t != 1) /* a division, as the scalar loop does: the same arguments */
			v = _mm512_div_pd(v, d);
		__m512d e = _ZGVeN8v_exp(v);
		if (terms)
			_mm512_storeu_pd(terms + i, e);
		acc = _mm512_add_pd(acc, e);
	}
	*done = i;
	return _mm512_reduce_add_pd(acc);
}

__attribute__((target("avx2"))) static double sum_avx2(const float *x, int n, double shift,
						       double t, double *terms, int *done)
{
	__m256d acc = _mm256_setzero_pd(), s = _mm256_set1_pd(shift), d = _mm256_set1_pd(t);
	int i = 0;
	for (; i + 4 <= n; i += 4) {
		__m256d v = _mm256_sub_pd(_mm256_cvtps_pd(_mm_loadu_ps(x + i)), s);
		if (t != 1)
			v = _mm256_div_pd(v, d);
		__m256d e = _ZGVdN4v_exp(v);
		if (terms)
			_mm256_storeu_pd(terms + i, e);
		acc = _mm256_add_pd(acc, e);
	}
	*done = i;
	/* the lanes in a fixed order */
	double l[4];
	_mm256_storeu_pd(l, acc);
	return (l[0] + l[1]) + (l[2] + l[3]);
}
#endif

/* Terms [from, n) one at a time, by libm. */
static double sum_c(const float *x, int from, int n, double shift, double t, double *terms)
{
	double z = 0;
	for (int i = from; i < n; i++) {
		double e = exp(((double)x[i] - shift) / t);
		if (terms)
			terms[i] = e;
		z += e;
	}
	return z;
}

bool rowexp_sum_isa(enum rowexp_isa isa, const float *x, int n, double shift, double t,
		    double *terms, double *sum)
{
	int done = 0;
	double z = 0;
	switch (isa) {
	case ROWEXP_C: break;
#ifdef ROWEXP_VECTOR
	case ROWEXP_AVX512:
		if (!__builtin_cpu_supports("avx512f"))
			return false;
		z = sum_avx512(x, n, shift, t, terms, &done);
		break;
	case ROWEXP_AVX2:
		if (!__builtin_cpu_supports("avx2"))
			return false;
		z = sum_avx2(x, n, shift, t, terms, &done);
		break;
#endif
	default: return false;
	}
	*sum = z + sum_c(x, done, n, shift, t, terms);
	return true;
}

double rowexp_sum(const float *x, int n, double shift, double t, double *terms)
{
	double z;
	if (rowexp_sum_isa(ROWEXP_AVX512, x, n, shift, t, terms, &z) ||
	    rowexp_sum_isa(ROWEXP_AVX2, x, n, shift, t, terms, &z))
		return z;
	rowexp_sum_isa(ROWEXP_C, x, n, shift, t, terms, &z);
	return z;
}
