/* test_cuda_qblocks.cu — the CUDA backend's repacked quantized rows (engine/cuda/
 * qblocks.cuh), run on the host: for every block type, a row quantized by the CPU's
 * reference (quant_quantize_row) and repacked as the upload does decodes, chunk by
 * chunk, to exactly ggml's dequantized weights, every weight once; and the chunks'
 * dot products with int8 activations (cpu_quantize_act) sum to the CPU decode
 * kernel's (cpu_qdot_c) within fp32 rounding. The kernels that use these functions
 * are checked on a GPU by tests/cuda.sh. Built with nvcc as host code. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/cuda/qblocks.cuh"

extern "C" {
#include "engine/cpu/kernels.h"
#include "engine/quant.h"
}

static int failures;

#define CHECK(cond, ...)                                   \
	do {                                               \
		if (!(cond)) {                             \
			fprintf(stderr, "FAIL: " __VA_ARGS__); \
			fputc('\n', stderr);               \
			failures++;                        \
			return;                            \
		}                                          \
	} while (0)

/* A deterministic normal sample (Box-Muller over a xorshift). */
static uint64_t rng = 88172645463325252ull;
static double uniform(void)
{
	rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
	return ((rng >> 11) + 0.5) / 9007199254740992.0;
}
static float normal(void)
{
	return (float)(sqrt(-2 * log(uniform())) * cos(6.283185307179586 * uniform()));
}

template <int T> static void check_type(int K)
{
	typedef qp<T> Q;
	const char *name = eng_dtype_name((enum eng_dtype)T);
	int nb = K / Q::W, C = nb * Q::CPB;
	size_t bytes = eng_row_bytes((enum eng_dtype)T, K);
	CHECK(bytes == (size_t)nb * Q::B, "%s: %zu bytes per row, the planes hold %d", name, bytes,
	      nb * Q::B);
	float *w = (float *)malloc(K * sizeof(float)), *ref = (float *)malloc(K * sizeof(float));
	float *x = (float *)malloc(K * sizeof(float));
	uint8_t *file = (uint8_t *)malloc(bytes), *dev = (uint8_t *)malloc(bytes);
	int *seen = (int *)calloc(K, sizeof(int));
	int8_t *xq8 = (int8_t *)malloc(K);
	float *xd = (float *)malloc(K / 32 * sizeof(float)), *xds = (float *)malloc(K / 32 * 4);
	int16_t *s16 = (int16_t *)malloc(K / 16 * 2);
	int *s16i = (int *)malloc(K / 16 * sizeof(int));
	/* weights with a few large ones, so that the scales differ between blocks */
	for (int i = 0; i < K; i++)
		w[i] = normal() * (i % 97 == 0 ? 8.0f : 1.0f) * (1 + i / 256);
	quant_quantize_row((enum eng_dtype)T, w, file, K);
	quant_dequantize_row((enum eng_dtype)T, file, ref, K);
	memset(dev, 0xa5, bytes);
	Q::repack(dev, file, nb);

	for (int j = 0; j < C; j++) {
		typename Q::chunk c;
		Q::load(c, dev, nb, j);
		float got[16 * Q::RUNS];
		Q::decode(c, j, got);
		for (int r = 0; r < Q::RUNS; r++)
			for (int i = 0; i < 16; i++) {
				int at = Q::run(j, r) + i;
				CHECK(at >= 0 && at < K, "%s K %d: chunk %d run %d at %d", name, K, j, r,
				      at);
				CHECK(memcmp(&got[16 * r + i], &ref[at], 4) == 0,
				      "%s K %d: weight %d (chunk %d) is %.9g, ggml's %.9g", name, K, at, j,
				      got[16 * r + i], ref[at]);
				seen[at]++;
			}
	}
	for (int i = 0; i < K; i++)
		CHECK(seen[i] == 1, "%s K %d: weight %d decoded %d times", name, K, i, seen[i]);

	for (int i = 0; i < K; i++)
		x[i] = normal() * (i % 61 == 0 ? 20.0f : 1.0f);
	struct cpu_xq xq = {x, xq8, xd, xds, s16};
	cpu_quantize_act(x, K, &xq);
	for (int i = 0; i < K / 16; i++)
		s16i[i] = s16[i];
	struct qx act = {xq8, xd, s16i};
	double sum = 0, mag = 0;
	for (int j = 0; j < C; j++) {
		typename Q::chunk c;
		Q::load(c, dev, nb, j);
		sum += Q::dot(c, j, act);
	}
	for (int i = 0; i < K; i++)
		mag += fabs((double)ref[i] * xd[i / 32] * xq8[i]);
	double cpu = cpu_qdot_c((enum eng_dtype)T, file, &xq, K);
	CHECK(fabs(sum - cpu) <= 2e-6 * mag, "%s K %d: dot %.9g, the CPU's %.9g (sum |w x| %.3g)",
	      name, K, sum, cpu, mag);
	printf("ok %s K %d: %d chunks decode to ggml's weights; dot %.6g, CPU %.6g\n", name, K, C,
	       sum, cpu);
	free(w), free(ref), free(x), free(file), free(dev), free(seen), free(xq8), free(xd);
	free(xds), free(s16), free(s16i);
}

template <int T> static void check_sizes(void)
{
	int block = qp<T>::W;
	for (int K : {block, 2 * block, 3 * block, 4096})
		if (K % block == 0)
			check_type<T>(K);
}

/* Q4_K/Q5_K scales and mins as the device keeps them (qb_k4_pair) against the file's
 * packing (qb_k4_scale_min), for every sub-block of random 12-byte fields: every 6-bit
 * value, the high bits of sub-blocks 4-7 among them. */
static void check_k4_pairs(void)
{
	uint64_t r = 12345;
	for (int n = 0; n < 10000; n++) {
		uint32_t w[4];
		for (int i = 0; i < 4; i++) {
			r = r * 6364136223846793005ull + 1442695040888963407ull;
			w[i] = (uint32_t)(r >> 32);
		}
		uint4 meta = make_uint4(w[0], w[1], w[2], w[3]), dev = qb_k4_repack_meta(meta);
		CHECK(dev.x == meta.x, "k4 pairs: d and dmin moved");
		for (int p = 0; p < 4; p++) {
			int s[4], m[4];
			qb_k4_scale_min(meta, 2 * p, &s[0], &m[0]);
			qb_k4_scale_min(meta, 2 * p + 1, &s[1], &m[1]);
			qb_k4_pair(dev, p, &s[2], &m[2], &s[3], &m[3]);
			CHECK(s[0] == s[2] && m[0] == m[2] && s[1] == s[3] && m[1] == m[3],
			      "k4 pairs: pair %d of %08x %08x %08x: %d %d %d %d against %d %d %d "
			      "%d",
			      p, w[1], w[2], w[3], s[2], m[2], s[3], m[3], s[0], m[0], s[1], m[1]);
		}
	}
	printf("ok Q4_K/Q5_K scales and mins: the device's pairs equal the file's packing\n");
}

int main(void)
{
	check_k4_pairs();
	check_sizes<ENG_Q8_0>();
	check_sizes<ENG_Q4_0>();
	check_sizes<ENG_Q5_0>();
	check_sizes<ENG_Q4_K>();
	check_sizes<ENG_Q5_K>();
	check_sizes<ENG_Q6_K>();
	check_type<ENG_Q8_0>(352); /* a row that 256 does not divide, as ffn_down can be */
	check_type<ENG_Q5_0>(352);
	if (failures)
		fprintf(stderr, "%d failures\n", failures);
	return failures ? 1 : 0;
}
