/* sample.cu — picking the next token on the GPU, so that one id crosses PCIe per
 * decode step instead of a row of logits: penalties, then the top-k candidates in two
 * stages (each block's own top k, then the best k of those), then temperature, top-p,
 * min-p and the draw on the k sorted candidates, as src/session/sampler.c does them (same
 * order, same double-precision sums). Kernels first, the launcher after. */
#include <float.h>
#include <limits.h>
#include <math.h>

#include "engine/cuda/kernels.cuh"

#define SELECT_THREADS 256

/* The candidate order of src/session/sampler.c: larger value first, ties by smaller id. */
__device__ static bool better(float va, int ia, float vb, int ib)
{
	return va > vb || (va == vb && ia < ib);
}

/* The best (value, index) of the block; every thread gets it. Entries whose value is
 * -INFINITY are taken (removed) ones and never win. */
__device__ static void block_best(float v, int i, float *best_v, int *best_i)
{
	__shared__ float sv[SELECT_THREADS / 32];
	__shared__ int si[SELECT_THREADS / 32];
	for (int o = 16; o > 0; o /= 2) {
		float ov = __shfl_xor_sync(0xffffffffu, v, o);
		int oi = __shfl_xor_sync(0xffffffffu, i, o);
		if (better(ov, oi, v, i))
			v = ov, i = oi;
	}
	int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
	__syncthreads(); /* sv/si may still be read by the previous call */
	if (lane == 0)
		sv[warp] = v, si[warp] = i;
	__syncthreads();
	v = sv[0], i = si[0];
	for (int w = 1; w < SELECT_THREADS / 32; w++)
		if (better(sv[w], si[w], v, i))
			v = sv[w], i = si[w];
	*best_v = v;
	*best_i = i;
}

/* One block: each distinct recent id's logit gets the repetition and presence
 * penalties once (HF order: repetition, then presence), in double as on the CPU. */
__global__ static void penalty_kernel(float *logits, const struct cu_sample_params *p)
{
	int i = threadIdx.x;
	if (i >= p->n_recent || (p->repetition_penalty == 1 && p->presence_penalty == 0))
		return;
	int id = p->recent[i];
	if (id < 0 || id >= p->vocab)
		return;
	for (int j = 0; j < i; j++) /* only the first occurrence applies it */
		if (p->recent[j] == id)
			return;
	float x = logits[id];
	if (!isfinite(x)) /* left for block_topk_kernel to report */
		return;
	x = x > 0 ? (float)(x / p->repetition_penalty) : (float)(x * p->repetition_penalty);
	x = (float)(x - p->presence_penalty);
	logits[id] = isfinite(x) ? x : x > 0 ? FLT_MAX : -FLT_MAX;
}

/* Block b takes ids [b*slice, ...) below vocab_limit and writes its k best, sorted,
 * to cand[b*k ...] (id -1 where the slice had fewer). A non-finite logit anywhere in
 * the row is reported in bad[0] (the smallest such id). */
__global__ static void block_topk_kernel(const float *logits, const struct cu_sample_params *p,
					 int slice, int2 *cand, int *bad)
{
	extern __shared__ float vals[]; /* (slice) */
	int k = p->k, first = blockIdx.x * slice;
	int end = min(first + slice, p->vocab);
	for (int j = first + threadIdx.x; j < end; j += blockDim.x) {
		float v = logits[j];
		if (!isfinite(v))
			atomicMin(bad, j);
		vals[j - first] = j < p->vocab_limit ? v : -INFINITY;
	}
	for (int j = end - first + threadIdx.x; j < slice; j += blockDim.x)
		vals[j] = -INFINITY;
	__syncthreads();
	for (int r = 0; r < k; r++) {
		float v = -INFINITY;
		int i = INT_MAX;
		for (int j = threadIdx.x; j < slice; j += blockDim.x)
			if (vals[j] != -INFINITY && better(vals[j], first + j, v, i))
				v = vals[j], i = first + j;
		block_best(v, i, &v, &i);
		if (threadIdx.x == 0) {
			cand[blockIdx.x * k + r] =
				make_int2(v == -INFINITY ? -1 : i, __float_as_int(v));
			if (v != -INFINITY)
				vals[i - first] = -INFINITY;
		}
		__syncthreads();
	}
}

/* One block: the best k of the blocks' candidates, sorted; then thread 0 applies the
 * temperature, top-p and min-p cuts and the draw exactly as src/session/sampler.c's
 * cut_sorted and samp_next, and writes out = {id, draw used, first bad id}. */
__global__ static void final_pick_kernel(int2 *cand, int blocks, const struct cu_sample_params *p,
					 const int *bad, int *out)
{
	__shared__ int ids[CU_SAMPLE_MAX_K];
	__shared__ float vals[CU_SAMPLE_MAX_K];
	int k = p->k, n = 0, n_cand = blocks * k;
	for (int r = 0; r < k; r++) {
		float v = -INFINITY;
		int i = INT_MAX, at = -1;
		for (int j = threadIdx.x; j < n_cand; j += blockDim.x) {
			int2 c = cand[j];
			float cv = __int_as_float(c.y);
			if (c.x >= 0 && better(cv, c.x, v, i))
				v = cv, i = c.x, at = j;
		}
		float bv;
		int bi;
		block_best(v, i, &bv, &bi);
		if (bv == -INFINITY)
			break;
		if (bi == i && at >= 0) /* the owner takes it out of the running */
			cand[at].x = -1;
		if (threadIdx.x == 0)
			ids[n] = bi, vals[n] = bv;
		n++;
		__syncthreads();
	}
	if (threadIdx.x != 0)
		return;
	out[2] = *bad;
	if (n == 0) { /* nothing below vocab_limit: cannot happen for a checked limit */
		out[0] = 0, out[1] = 0;
		return;
	}
	if (n == 1) { /* greedy (k = 1), or one id below vocab_limit */
		out[0] = ids[0], out[1] = 0;
		return;
	}
	float cp[CU_SAMPLE_MAX_K];
	double T = p->temperature, m = vals[0], z = 0;
	for (int i = 0; i < n; i++) {
		cp[i] = (float)exp((vals[i] - m) / T);
		z += cp[i];
	}
	double cum = 0;
	int keep = n;
	for (int i = 0; i < n; i++) {
		cum += cp[i] / z;
		if (cum >= p->top_p) {
			keep = i + 1;
			break;
		}
	}
	int j = 1;
	while (j < keep && cp[j] >= p->min_p)
		j++;
	n = j;
	z = 0;
	for (int i = 0; i < n; i++)
		z += cp[i];
	for (int i = 0; i < n; i++)
		cp[i] = (float)(cp[i] / z);
	if (n == 1) {
		out[0] = ids[0], out[1] = 0;
		return;
	}
	out[1] = 1;
	cum = 0;
	for (int i = 0; i < n; i++) {
		cum += cp[i];
		if (p->uniform < cum) {
			out[0] = ids[i];
			return;
		}
	}
	int i = n - 1; /* rounding left the draw above the total */
	while (i > 0 && cp[i] == 0)
		i--;
	out[0] = ids[i];
}

/* ---- launcher ------------------------------------------------------------------------ */

int cu_sample_blocks(int vocab)
{
	return CEIL_DIV(vocab, CU_SAMPLE_SLICE);
}

int cu_sample(const struct cu_sample_args *a, cudaStream_t s)
{
	int blocks = cu_sample_blocks(a->vocab);
	CUDA_CHECK(cudaMemsetAsync(a->bad, 0x7f, sizeof(int), s)); /* INT_MAX-ish: none */
	penalty_kernel<<<1, CU_SAMPLE_MAX_RECENT, 0, s>>>(a->logits, a->params);
	LAUNCH_CHECK();
	block_topk_kernel<<<blocks, SELECT_THREADS, CU_SAMPLE_SLICE * sizeof(float), s>>>(
		a->logits, a->params, CU_SAMPLE_SLICE, a->cand, a->bad);
	LAUNCH_CHECK();
	final_pick_kernel<<<1, SELECT_THREADS, 0, s>>>(a->cand, blocks, a->params, a->bad, a->out);
	LAUNCH_CHECK();
	return 0;
}
