/* kernels.cu — the CUDA backend's small kernels between the matrix products: the
 * embedding lookup, RMSNorm, the q/k norms with RoPE and the KV cache store, and
 * SwiGLU. Decode uses only the lookup; it fuses the others into its matrix-vector
 * products (matvec.cu, quant.cu) and its attention (attention.cu). Kernels first,
 * their launchers after. */
#include "engine/cuda/kernels.cuh"

__global__ static void embed_kernel(float *x, const bf16 *table, const int32_t *ids, int dim)
{
	pdl_launch_dependents();
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

__global__ static void swiglu_kernel(bf16 *h, const float *gate_up, size_t total)
{
	size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
	if (i >= total)
		return;
	/* gate and up rows are interleaved in the weights (upload.cu puts them so) */
	float g = gate_up[2 * i], u = gate_up[2 * i + 1];
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
	swiglu_kernel<<<(unsigned)CEIL_DIV(total, 256), 256, 0, s>>>(h, gate_up, total);
	LAUNCH_CHECK();
	return 0;
}
