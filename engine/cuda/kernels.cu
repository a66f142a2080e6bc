/* kernels.cu — the element-wise kernels and the decode matrix-vector product of the
 * CUDA backend: kernels first, their launchers after. */
#include "engine/cuda/kernels.cuh"

/* Sum over a block of up to 1024 threads; every thread gets the result. */
__device__ static float block_sum(float v)
{
	__shared__ float warp_sums[32];
	int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
	for (int o = 16; o > 0; o /= 2)
		v += __shfl_xor_sync(0xffffffffu, v, o);
	__syncthreads(); /* warp_sums may still be read by a previous call */
	if (lane == 0)
		warp_sums[warp] = v;
	__syncthreads();
	int nwarps = CEIL_DIV(blockDim.x, 32);
	v = lane < nwarps ? warp_sums[lane] : 0.0f;
	for (int o = 16; o > 0; o /= 2)
		v += __shfl_xor_sync(0xffffffffu, v, o);
	return v;
}

__global__ static void embed_kernel(float *x, const bf16 *table, const int32_t *ids, int dim)
{
	const bf16 *row = table + (size_t)ids[blockIdx.x] * dim;
	float *out = x + (size_t)blockIdx.x * dim;
	for (int i = threadIdx.x; i < dim; i += blockDim.x)
		out[i] = __bfloat162float(row[i]);
}

__global__ static void rmsnorm_kernel(bf16 *out, const float *x, const bf16 *w, int dim, float eps)
{
	const float *row = x + (size_t)blockIdx.x * dim;
	float ss = 0.0f;
	for (int i = threadIdx.x; i < dim; i += blockDim.x)
		ss += row[i] * row[i];
	float inv = rsqrtf(block_sum(ss) / dim + eps);
	bf16 *o = out + (size_t)blockIdx.x * dim;
	for (int i = threadIdx.x; i < dim; i += blockDim.x)
		o[i] = __float2bfloat16(row[i] * inv * __bfloat162float(w[i]));
}

/* Eight bf16 products of two 16-byte vectors, accumulated in fp32. */
__device__ static float dot8(uint4 a, uint4 b)
{
	const __nv_bfloat162 *pa = (const __nv_bfloat162 *)&a, *pb = (const __nv_bfloat162 *)&b;
	float acc = 0.0f;
#pragma unroll
	for (int i = 0; i < 4; i++) {
		float2 fa = __bfloat1622float2(pa[i]), fb = __bfloat1622float2(pb[i]);
		acc = fmaf(fa.x, fb.x, acc);
		acc = fmaf(fa.y, fb.y, acc);
	}
	return acc;
}

/* One warp per row: 16-byte streaming loads of the weights (read once, so evict
 * first), four loads in flight per lane, the shared x vector through the read-only
 * cache. K must be a multiple of 8 (checked by the launcher). */
__global__ static void matvec_kernel(float *y, const bf16 *W, const bf16 *x, int M, int K, int acc)
{
	int row = (blockIdx.x * blockDim.x + threadIdx.x) / 32, lane = threadIdx.x % 32;
	if (row >= M)
		return;
	const uint4 *w = (const uint4 *)(W + (size_t)row * K);
	const uint4 *xv = (const uint4 *)x;
	int k8 = K / 8;
	float sum = 0.0f;
	int i = lane;
	for (; i + 96 < k8; i += 128) {
		uint4 w0 = __ldcs(w + i), w1 = __ldcs(w + i + 32), w2 = __ldcs(w + i + 64),
		      w3 = __ldcs(w + i + 96);
		sum += dot8(w0, __ldg(xv + i)) + dot8(w1, __ldg(xv + i + 32)) +
		       dot8(w2, __ldg(xv + i + 64)) + dot8(w3, __ldg(xv + i + 96));
	}
	for (; i < k8; i += 32)
		sum += dot8(__ldcs(w + i), __ldg(xv + i));
	for (int o = 16; o > 0; o /= 2)
		sum += __shfl_xor_sync(0xffffffffu, sum, o);
	if (lane == 0)
		y[row] = acc ? y[row] + sum : sum;
}

/* The same for K not a multiple of 8 (tiny test shapes only). */
__global__ static void matvec_scalar_kernel(float *y, const bf16 *W, const bf16 *x, int M, int K,
					    int acc)
{
	int row = (blockIdx.x * blockDim.x + threadIdx.x) / 32, lane = threadIdx.x % 32;
	if (row >= M)
		return;
	float sum = 0.0f;
	for (int k = lane; k < K; k += 32)
		sum += __bfloat162float(W[(size_t)row * K + k]) * __bfloat162float(x[k]);
	for (int o = 16; o > 0; o /= 2)
		sum += __shfl_xor_sync(0xffffffffu, sum, o);
	if (lane == 0)
		y[row] = acc ? y[row] + sum : sum;
}

/* Block (token, head): heads [0,H) are queries, [H,H+Hkv) keys, then values. */
__global__ static void qk_norm_rope_store_kernel(struct cu_rope_args a)
{
	int t = blockIdx.x, hh = blockIdx.y, hd = a.hd, half = hd / 2;
	int p = *a.pos + t;
	int qkv_dim = (a.H + 2 * a.Hkv) * hd;
	const float *src = a.qkv + (size_t)t * qkv_dim + (size_t)hh * hd;
	if (hh >= a.H + a.Hkv) { /* value head: stored as is */
		int kvh = hh - a.H - a.Hkv;
		bf16 *dst = a.v_cache + ((size_t)kvh * a.ctx + p) * hd;
		for (int i = threadIdx.x; i < hd; i += blockDim.x)
			dst[i] = __float2bfloat16(src[i]);
		return;
	}
	bool is_q = hh < a.H;
	const bf16 *w = is_q ? a.q_norm : a.k_norm;
	float ss = 0.0f;
	for (int i = threadIdx.x; i < hd; i += blockDim.x)
		ss += src[i] * src[i];
	float inv = rsqrtf(block_sum(ss) / hd + a.eps);
	const float *cs = a.cos + (size_t)p * half, *sn = a.sin + (size_t)p * half;
	for (int i = threadIdx.x; i < half; i += blockDim.x) {
		float x1 = src[i] * inv * __bfloat162float(w[i]);
		float x2 = src[i + half] * inv * __bfloat162float(w[i + half]);
		float o1 = x1 * cs[i] - x2 * sn[i], o2 = x2 * cs[i] + x1 * sn[i];
		if (is_q) {
			float *q = a.q_out + (size_t)t * a.H * hd + (size_t)hh * hd;
			q[i] = o1;
			q[i + half] = o2;
		} else {
			bf16 *k = a.k_cache + ((size_t)(hh - a.H) * a.ctx + p) * hd;
			k[i] = __float2bfloat16(o1);
			k[i + half] = __float2bfloat16(o2);
		}
	}
}

__global__ static void swiglu_kernel(bf16 *h, const float *gate_up, int F, size_t total)
{
	size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
	if (i >= total)
		return;
	size_t t = i / F, f = i % F;
	float g = gate_up[t * 2 * F + f], u = gate_up[t * 2 * F + F + f];
	h[i] = __float2bfloat16(g / (1.0f + expf(-g)) * u);
}

/* ---- launchers ---------------------------------------------------------------------- */

int cu_embed(float *x, const bf16 *table, const int32_t *ids, int n, int dim, cudaStream_t s)
{
	embed_kernel<<<n, 256, 0, s>>>(x, table, ids, dim);
	LAUNCH_CHECK();
	return 0;
}

int cu_rmsnorm(bf16 *out, const float *x, const bf16 *w, int n, int dim, float eps, cudaStream_t s)
{
	rmsnorm_kernel<<<n, 256, 0, s>>>(out, x, w, dim, eps);
	LAUNCH_CHECK();
	return 0;
}

int cu_matvec(float *y, const bf16 *W, const bf16 *x, int M, int K, bool acc, cudaStream_t s)
{
	const int threads = 256, rows_per_block = threads / 32;
	if (K % 8 == 0)
		matvec_kernel<<<CEIL_DIV(M, rows_per_block), threads, 0, s>>>(y, W, x, M, K, acc);
	else
		matvec_scalar_kernel<<<CEIL_DIV(M, rows_per_block), threads, 0, s>>>(y, W, x, M, K,
										     acc);
	LAUNCH_CHECK();
	return 0;
}

int cu_qk_norm_rope_store(const struct cu_rope_args *a, cudaStream_t s)
{
	dim3 grid(a->n, a->H + 2 * a->Hkv);
	qk_norm_rope_store_kernel<<<grid, 64, 0, s>>>(*a);
	LAUNCH_CHECK();
	return 0;
}

int cu_swiglu(bf16 *h, const float *gate_up, int n, int F, cudaStream_t s)
{
	size_t total = (size_t)n * F;
	swiglu_kernel<<<(unsigned)CEIL_DIV(total, 256), 256, 0, s>>>(h, gate_up, F, total);
	LAUNCH_CHECK();
	return 0;
}
