/* rowexp.h — the sum of exponentials over a row of logits, in double: the
 * denominator of a softmax over a whole vocabulary (151,936 terms for Qwen3), which
 * scoring a prompt or a text needs at every position. glibc's vector exp (libmvec,
 * within 4 ulp of the exact value, as its manual lists) runs eight or four terms at a
 * time where the CPU has AVX-512 or AVX2; libm's exp does the rest, and all of them
 * where libmvec is missing. */
#ifndef QWENCHAT_BASE_ROWEXP_H
#define QWENCHAT_BASE_ROWEXP_H

#include <stdbool.h>

enum rowexp_isa { ROWEXP_C, ROWEXP_AVX2, ROWEXP_AVX512 };

/* The sum over i < n of exp((x[i] - shift) / t) (t > 0), with shift usually the
 * row's largest value so that no term overflows; with terms (may be NULL), each
 * term too. The sum's order is fixed for a given CPU: the same row gives the same
 * bits every time, on any thread. */
double rowexp_sum(const float *x, int n, double shift, double t, double *terms);

/* The same on the kernels named (for tests): false, and nothing computed, where
 * this CPU or this build lacks them. */
bool rowexp_sum_isa(enum rowexp_isa isa, const float *x, int n, double shift, double t,
		    double *terms, double *sum);

#endif
