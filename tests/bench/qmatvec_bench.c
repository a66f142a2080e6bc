/* qmatvec_bench.c — the CPU decode kernel for quantized rows, alone on one core: billions
 * of weights per second for rows that stay in the L2 cache, so that what is measured is
 * the kernel's instructions, not the memory. The figures behind the kernel's choices in
 * BENCHMARKS.md ("Measurements behind choices in the code") come from runs like this.
 *
 *   tests/bench/qmatvec_bench [--isa c|avx2|avx512|avx512bf16|amx] [--rows R] [--k K]
 *                             [--reps N] [--json]
 *
 * Each type (Q8_0, Q4_0, Q5_0, Q4_K, Q5_K, Q6_K) gets R rows of K weights quantized from
 * random values; the product over all rows runs N times after one warm-up, and the best
 * of five such timings is printed (the machine's other work only ever slows a run). */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "engine/cpu/kernels.h"
#include "engine/engine.h"
#include "engine/quant.h"

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static float frand(uint64_t *s)
{
	*s = *s * 6364136223846793005ULL + 1442695040888963407ULL;
	return (float)((*s >> 40) & 0xffffff) / (float)0x1000000 * 2.0f - 1.0f;
}

static int usage(const char *arg)
{
	fprintf(stderr, "qmatvec_bench: bad argument '%s'\nusage: qmatvec_bench [--isa NAME] "
			"[--rows R] [--k K] [--reps N] [--json]\n",
		arg);
	return 2;
}

int main(int argc, char **argv)
{
	enum cpu_isa isa = cpu_isa_best();
	int rows = 400, K = 1024, reps = 200;
	bool json = false;
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
		if (!strcmp(a, "--json"))
			json = true;
		else if (!v)
			return usage(a);
		else if (!strcmp(a, "--isa") && cpu_isa_from_name(v, &isa) && cpu_isa_supported(isa))
			i++;
		else if (!strcmp(a, "--rows") && (rows = atoi(v)) > 0)
			i++;
		else if (!strcmp(a, "--k") && (K = atoi(v)) > 0 && K % 256 == 0)
			i++;
		else if (!strcmp(a, "--reps") && (reps = atoi(v)) > 0)
			i++;
		else
			return usage(a);
	}
	const struct cpu_kernels *k = cpu_kernels_get(isa);
	static const enum eng_dtype types[] = {ENG_Q8_0, ENG_Q4_0, ENG_Q5_0,   ENG_Q4_K,
					       ENG_Q5_K, ENG_Q6_K, ENG_Q4_1,   ENG_Q5_1,
					       ENG_Q2_K, ENG_Q3_K, ENG_IQ4_NL, ENG_IQ4_XS};
	float *x = malloc(sizeof(float) * (size_t)K), *src = malloc(sizeof(float) * (size_t)K);
	float *out = malloc(sizeof(float) * (size_t)rows), *xd = malloc(sizeof(float) * (size_t)K);
	float *xds = malloc(sizeof(float) * (size_t)K);
	int8_t *xq8 = malloc((size_t)K);
	int16_t *s16 = malloc(sizeof(int16_t) * (size_t)K);
	uint8_t *w = malloc(eng_row_bytes(ENG_Q8_0, K) * (size_t)rows);
	if (!x || !src || !out || !xd || !xds || !xq8 || !s16 || !w)
		return fprintf(stderr, "qmatvec_bench: out of memory\n"), 1;
	uint64_t seed = 1;
	for (int i = 0; i < K; i++)
		x[i] = frand(&seed);
	struct cpu_xq xq = {.q = xq8, .d = xd, .ds = xds, .s16 = s16};
	k->quantize_act(x, K, &xq);
	if (!json)
		printf("%s kernels, %d rows of %d weights, one core\n", k->name, rows, K);
	for (size_t ti = 0; ti < sizeof types / sizeof types[0]; ti++) {
		enum eng_dtype t = types[ti];
		size_t rb = eng_row_bytes(t, K);
		bool read_only = t == ENG_IQ4_NL || t == ENG_IQ4_XS; /* no quantizer here */
		for (int r = 0; r < rows; r++) {
			for (int i = 0; i < K; i++)
				src[i] = frand(&seed);
			if (!read_only) {
				quant_quantize_row(t, src, w + (size_t)r * rb, K);
				continue;
			}
			uint8_t *row = w + (size_t)r * rb; /* random indices, scales 0.1 */
			for (size_t i = 0; i < rb; i++)
				row[i] = (uint8_t)(frand(&seed) * 127.0f + 128.0f);
			for (size_t b = 0; b < rb; b += eng_dtype_block_bytes(t))
				row[b] = 0x66, row[b + 1] = 0x2e;
		}
		k->qmatvec(t, out, w, &xq, K, 0, rows, false); /* warm-up: into the cache */
		double best = 1e30;
		for (int round = 0; round < 5; round++) {
			double t0 = now();
			for (int n = 0; n < reps; n++)
				k->qmatvec(t, out, w, &xq, K, 0, rows, false);
			double dt = now() - t0;
			best = dt < best ? dt : best;
		}
		double gw = (double)rows * K * reps / best / 1e9;
		if (json)
			printf("{\"isa\": \"%s\", \"type\": \"%s\", \"rows\": %d, \"k\": %d, "
			       "\"kib\": %.0f, \"gweights_s\": %.2f}\n",
			       k->name, eng_dtype_name(t), rows, K, rows * (double)rb / 1024, gw);
		else
			printf("  %-5s %6.0f KiB  %6.2f G weights/s\n", eng_dtype_name(t),
			       rows * (double)rb / 1024, gw);
	}
	free(x), free(src), free(out), free(xd), free(xds), free(xq8), free(s16), free(w);
	return 0;
}
