/* attention.cu — causal GQA attention over the bf16 KV cache: split-K
 * (flash-decoding) for one query, tiled flash attention for a chunk of queries.
 * Softmax in fp32; no n x n buffer anywhere. Kernels first, launchers after. */
#include "engine/cuda/kernels.cuh"

#define DECODE_THREADS 128
#define PREFILL_WARPS  8  /* queries per block */
#define PREFILL_KEYS   32 /* keys per shared-memory tile */
#define REG_DIMS       (CU_MAX_HEAD_DIM / 32)

__device__ static float warp_sum(float v)
{
	for (int o = 16; o > 0; o /= 2)
		v += __shfl_xor_sync(0xffffffffu, v, o);
	return v;
}

__device__ static float warp_max(float v)
{
	for (int o = 16; o > 0; o /= 2)
		v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
	return v;
}

/* Block (head, split): keys [split*SPLIT, ...) of the query's nk keys. Writes the
 * split's unnormalized output, its max score and its sum of exponentials. */
__global__ static void decode_split_kernel(struct cu_attn_args a)
{
	__shared__ float qs[CU_MAX_HEAD_DIM];
	__shared__ float sc[CU_ATTN_SPLIT];
	__shared__ float red[DECODE_THREADS / 32];
	int h = blockIdx.x, split = blockIdx.y, hd = a.hd;
	int nk = *a.pos + a.q_offset + 1;
	int start = split * CU_ATTN_SPLIT;
	if (start >= nk)
		return;
	int len = min(CU_ATTN_SPLIT, nk - start);
	int kvh = h / (a.H / a.Hkv);
	const bf16 *K = a.k_cache + ((size_t)kvh * a.ctx + start) * hd;
	const bf16 *V = a.v_cache + ((size_t)kvh * a.ctx + start) * hd;
	const float *q = a.q + (size_t)a.q_offset * a.H * hd + (size_t)h * hd;
	int lane = threadIdx.x % 32, warp = threadIdx.x / 32, nwarps = DECODE_THREADS / 32;

	for (int d = threadIdx.x; d < hd; d += blockDim.x)
		qs[d] = q[d] * a.scale;
	__syncthreads();
	/* scores: one warp per key */
	for (int j = warp; j < len; j += nwarps) {
		float s = 0.0f;
		for (int d = lane; d < hd; d += 32)
			s += qs[d] * __bfloat162float(K[(size_t)j * hd + d]);
		s = warp_sum(s);
		if (lane == 0)
			sc[j] = s;
	}
	__syncthreads();
	/* the split's max */
	float m = -INFINITY;
	for (int j = threadIdx.x; j < len; j += blockDim.x)
		m = fmaxf(m, sc[j]);
	m = warp_max(m);
	if (lane == 0)
		red[warp] = m;
	__syncthreads();
	m = red[0];
	for (int w = 1; w < nwarps; w++)
		m = fmaxf(m, red[w]);
	__syncthreads();
	/* exponentials (and the raw scores for the capture, normalized by the combine) */
	float l = 0.0f;
	for (int j = threadIdx.x; j < len; j += blockDim.x) {
		if (a.cap)
			a.cap[(size_t)h * a.ctx + start + j] = sc[j];
		float e = expf(sc[j] - m);
		sc[j] = e;
		l += e;
	}
	l = warp_sum(l);
	if (lane == 0)
		red[warp] = l;
	__syncthreads();
	l = 0.0f;
	for (int w = 0; w < nwarps; w++)
		l += red[w];
	/* unnormalized output: thread per dimension, keys in order */
	float *part = a.part + ((size_t)h * a.max_splits + split) * (hd + 2);
	for (int d = threadIdx.x; d < hd; d += blockDim.x) {
		float o = 0.0f;
		for (int j = 0; j < len; j++)
			o = fmaf(sc[j], __bfloat162float(V[(size_t)j * hd + d]), o);
		part[d] = o;
	}
	if (threadIdx.x == 0) {
		part[hd] = m;
		part[hd + 1] = l;
	}
}

/* Block per head: rescales the splits to the global max and normalizes. */
__global__ static void decode_combine_kernel(struct cu_attn_args a)
{
	int h = blockIdx.x, hd = a.hd;
	int nk = *a.pos + a.q_offset + 1, splits = CEIL_DIV(nk, CU_ATTN_SPLIT);
	const float *part = a.part + (size_t)h * a.max_splits * (hd + 2);
	float m = -INFINITY;
	for (int s = 0; s < splits; s++)
		m = fmaxf(m, part[(size_t)s * (hd + 2) + hd]);
	float l = 0.0f;
	for (int s = 0; s < splits; s++)
		l += part[(size_t)s * (hd + 2) + hd + 1] *
		     expf(part[(size_t)s * (hd + 2) + hd] - m);
	for (int d = threadIdx.x; d < hd; d += blockDim.x) {
		float o = 0.0f;
		for (int s = 0; s < splits; s++)
			o += part[(size_t)s * (hd + 2) + d] *
			     expf(part[(size_t)s * (hd + 2) + hd] - m);
		a.out[(size_t)h * hd + d] = __float2bfloat16(o / l);
	}
	if (a.cap)
		for (int j = threadIdx.x; j < nk; j += blockDim.x) {
			float *c = a.cap + (size_t)h * a.ctx + j;
			*c = expf(*c - m) / l;
		}
}

/* Block (head, tile of PREFILL_WARPS queries); each warp owns one query, keeps it and
 * its output accumulator in registers (lane holds dims lane, lane+32, ...), and walks
 * the keys tile by tile with an online softmax. The block's K/V tiles are shared. */
__global__ static void prefill_kernel(struct cu_attn_args a)
{
	__shared__ bf16 ks[PREFILL_KEYS * CU_MAX_HEAD_DIM];
	__shared__ bf16 vs[PREFILL_KEYS * CU_MAX_HEAD_DIM];
	int h = blockIdx.x, hd = a.hd, lane = threadIdx.x % 32, warp = threadIdx.x / 32;
	int pos0 = *a.pos;
	int t = blockIdx.y * PREFILL_WARPS + warp; /* this warp's query in the chunk */
	int t_last = min(a.n - 1, (int)(blockIdx.y + 1) * PREFILL_WARPS - 1);
	int kvh = h / (a.H / a.Hkv);
	const bf16 *K = a.k_cache + (size_t)kvh * a.ctx * hd;
	const bf16 *V = a.v_cache + (size_t)kvh * a.ctx * hd;
	bool active = t < a.n;
	int nk = pos0 + t + 1; /* keys this query sees */

	float q[REG_DIMS], o[REG_DIMS];
#pragma unroll
	for (int r = 0; r < REG_DIMS; r++) {
		int d = lane + 32 * r;
		q[r] = active && d < hd ? a.q[(size_t)t * a.H * hd + (size_t)h * hd + d] * a.scale
					: 0.0f;
		o[r] = 0.0f;
	}
	float m = -INFINITY, l = 0.0f;
	int keys_block = pos0 + t_last + 1;
	for (int k0 = 0; k0 < keys_block; k0 += PREFILL_KEYS) {
		int tile = min(PREFILL_KEYS, keys_block - k0);
		__syncthreads();
		for (int i = threadIdx.x; i < tile * hd; i += blockDim.x) {
			ks[i] = K[(size_t)k0 * hd + i];
			vs[i] = V[(size_t)k0 * hd + i];
		}
		__syncthreads();
		if (!active)
			continue;
		int upto = min(tile, nk - k0);
		for (int j = 0; j < upto; j++) {
			float s = 0.0f;
#pragma unroll
			for (int r = 0; r < REG_DIMS; r++) {
				int d = lane + 32 * r;
				if (d < hd)
					s += q[r] * __bfloat162float(ks[j * hd + d]);
			}
			s = warp_sum(s);
			float m_new = fmaxf(m, s);
			float corr = expf(m - m_new), p = expf(s - m_new);
			l = l * corr + p;
#pragma unroll
			for (int r = 0; r < REG_DIMS; r++) {
				int d = lane + 32 * r;
				if (d < hd)
					o[r] = o[r] * corr + p * __bfloat162float(vs[j * hd + d]);
			}
			m = m_new;
		}
	}
	if (!active)
		return;
#pragma unroll
	for (int r = 0; r < REG_DIMS; r++) {
		int d = lane + 32 * r;
		if (d < hd)
			a.out[(size_t)t * a.H * hd + (size_t)h * hd + d] =
				__float2bfloat16(o[r] / l);
	}
}

/* ---- launchers ---------------------------------------------------------------------- */

static int check_shape(const struct cu_attn_args *a)
{
	if (a->hd > CU_MAX_HEAD_DIM || a->hd % 2)
		return err_set("cuda attention: head_dim %d is not supported (even, at most %d)",
			       a->hd, CU_MAX_HEAD_DIM);
	return 0;
}

int cu_attention_decode(const struct cu_attn_args *a, cudaStream_t s)
{
	if (check_shape(a))
		return -1;
	/* Every possible split is launched; splits past the query's keys return at once,
	 * so one graph serves every position. */
	decode_split_kernel<<<dim3(a->H, a->max_splits), DECODE_THREADS, 0, s>>>(*a);
	LAUNCH_CHECK();
	decode_combine_kernel<<<a->H, 128, 0, s>>>(*a);
	LAUNCH_CHECK();
	return 0;
}

int cu_attention_prefill(const struct cu_attn_args *a, cudaStream_t s)
{
	if (check_shape(a))
		return -1;
	dim3 grid(a->H, CEIL_DIV(a->n, PREFILL_WARPS));
	prefill_kernel<<<grid, PREFILL_WARPS * 32, 0, s>>>(*a);
	LAUNCH_CHECK();
	return 0;
}
