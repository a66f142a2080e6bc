/* quant.cu — decode, prefill and embedding kernels for block-quantized weights
 * (qblocks.cuh decodes the blocks).
 *
 * Decode is memory-bound: the matrix-vector product must stream each row once with
 * wide coalesced loads. Blocks of 34 or 210 bytes cannot be read with 16-byte loads
 * block by block, so a warp copies a segment of its row (up to 2 KB, a whole number
 * of blocks and of 16-byte pieces) from global memory into its own slice of shared
 * memory, 16 bytes per lane and load, and then each lane decodes units of that
 * segment from shared memory against x (fp32, also in shared memory). The loads of
 * the next segment are issued before the current one is decoded, so a warp always
 * has memory requests in flight. Launched with programmatic dependent launch, as
 * matvec.cu's kernels: the first segment is loaded before waiting for the previous
 * kernel.
 *
 * Prefill dequantizes tiles of rows to bf16 (cu_dequant_rows) for cuBLAS: a GEMM of
 * hundreds of tokens reads each weight once per tile, so the extra pass is small.
 *
 * On an H100 (8B shape) decode reaches 25-40% of the bandwidth: a warp decodes a staged
 * segment from shared memory between its loads, and the largest share of its stalls
 * (ncu: 36%) waits on those shared-memory reads (scale, quants and x per 8 weights). */
#include "engine/cuda/qblocks.cuh"
#include "engine/cuda/quant.cuh"

#define QMV_THREADS 256
#define QMV_WARPS   (QMV_THREADS / 32)
#define QMV_STAGE   2048                  /* bytes of a row a warp stages per step */
#define QMV_LOADS   (QMV_STAGE / 16 / 32) /* 16-byte loads per lane and step */

__host__ __device__ constexpr int gcd_(int a, int b)
{
	return b ? gcd_(b, a % b) : a;
}

/* Blocks per segment: the most that fill at most QMV_STAGE bytes and a whole number
 * of 16-byte pieces, so that every segment of a 16-byte aligned row starts aligned. */
template <int T> __host__ __device__ constexpr int seg_blocks()
{
	constexpr int B = qt<T>::B, unit = B / gcd_(B, 16) * 16;
	return QMV_STAGE / unit * (unit / B);
}

/* ---- the decode matrix-vector product ------------------------------------------------ */

/* x (K) fp32 in shared memory from the kernel's input (the RMSNorm kept in fp32). */
template <int IN> __device__ static void make_xf(float *xs, const struct cu_qmatvec_args &a)
{
	int K = a.K;
	if (IN == CU_MV_BF16) {
		const bf16 *x = (const bf16 *)a.in;
		for (int i = threadIdx.x; i < K; i += blockDim.x)
			xs[i] = __bfloat162float(x[i]);
	} else {
		const float *x = (const float *)a.in;
		float ss = 0.0f;
		for (int i = threadIdx.x; i < K; i += blockDim.x)
			ss += x[i] * x[i];
		float inv = rsqrtf(block_sum(ss) / K + a.eps);
		for (int i = threadIdx.x; i < K; i += blockDim.x)
			xs[i] = x[i] * inv * __bfloat162float(a.norm[i]);
	}
}

/* Segment sg of a row: where it starts and how many bytes it has. */
template <int T>
__device__ static const uint4 *seg_at(const struct cu_qmatvec_args &a, int row, int sg, int nb,
				      int *bytes)
{
	constexpr int SEG = seg_blocks<T>();
	int blocks = nb - sg * SEG < SEG ? nb - sg * SEG : SEG;
	*bytes = blocks * qt<T>::B;
	return (const uint4 *)((const uint8_t *)a.W + (size_t)row * a.stride +
			       (size_t)sg * SEG * qt<T>::B);
}

/* The warp's loads of a segment: piece lane + 32 p. The last piece may run past the
 * segment's bytes, never past the row's padding. Streaming loads: read once. */
__device__ static void seg_load(uint4 (&r)[QMV_LOADS], const uint4 *src, int bytes, int lane)
{
	int n = CEIL_DIV(bytes, 16);
#pragma unroll
	for (int p = 0; p < QMV_LOADS; p++)
		r[p] = lane + 32 * p < n ? __ldcs(src + lane + 32 * p) : make_uint4(0, 0, 0, 0);
}

/* Dot product of nblk staged blocks with x (their weights' part of x), this lane's
 * units only. */
template <int T>
__device__ static float seg_dot(const uint8_t *buf, int nblk, const float *x, int lane)
{
	typedef qt<T> Q;
	float acc = 0.0f;
	for (int u = lane; u < nblk * Q::U; u += 32) {
		int b = u / Q::U, k = u % Q::U;
		float w[Q::UW];
		Q::decode(buf + b * Q::B, k, w);
		const float *xb = x + b * Q::W;
#pragma unroll
		for (int g = 0; g < Q::UW / 8; g++) {
			const float4 *xv = (const float4 *)(xb + Q::base(k, g));
			float4 x0 = xv[0], x1 = xv[1];
			const float *wg = w + 8 * g;
			acc = fmaf(wg[0], x0.x, acc);
			acc = fmaf(wg[1], x0.y, acc);
			acc = fmaf(wg[2], x0.z, acc);
			acc = fmaf(wg[3], x0.w, acc);
			acc = fmaf(wg[4], x1.x, acc);
			acc = fmaf(wg[5], x1.y, acc);
			acc = fmaf(wg[6], x1.z, acc);
			acc = fmaf(wg[7], x1.w, acc);
		}
	}
	return acc;
}

/* One warp per row (per row pair for CU_MV_OUT_SWIGLU: gate and up interleaved),
 * grid-strided. The warp walks its work as (row group, row of the group, segment),
 * loading item i + 1 into registers while decoding item i from shared memory. */
template <int T, int IN, int OUT>
__global__ __launch_bounds__(QMV_THREADS) static void qmatvec_kernel(struct cu_qmatvec_args a)
{
	constexpr int R = OUT == CU_MV_OUT_SWIGLU ? 2 : 1, SEG = seg_blocks<T>();
	extern __shared__ __align__(16) unsigned char smem[];
	int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
	uint4 *stage = (uint4 *)(smem + warp * QMV_STAGE);
	float *xs = (float *)(smem + QMV_WARPS * QMV_STAGE);
	int nb = a.K / qt<T>::W, nseg = CEIL_DIV(nb, SEG), groups = a.M / R;
	int g = blockIdx.x * QMV_WARPS + warp, gstep = gridDim.x * QMV_WARPS, r = 0, sg = 0;

	pdl_launch_dependents();
	uint4 pre[QMV_LOADS];
	int bytes = 0;
	if (g < groups)
		seg_load(pre, seg_at<T>(a, g * R, 0, nb, &bytes), bytes, lane);
	pdl_wait();
	make_xf<IN>(xs, a);
	__syncthreads();

	float sum[R] = {};
	while (g < groups) {
		__syncwarp(); /* every lane is done with the previous segment */
#pragma unroll
		for (int p = 0; p < QMV_LOADS; p++)
			if (lane + 32 * p < CEIL_DIV(bytes, 16))
				stage[lane + 32 * p] = pre[p];
		__syncwarp();
		int cur_bytes = bytes, ng = g, nr = r, ns = sg + 1;
		if (ns == nseg) {
			ns = 0;
			if (++nr == R) {
				nr = 0;
				ng += gstep;
			}
		}
		if (ng < groups)
			seg_load(pre, seg_at<T>(a, ng * R + nr, ns, nb, &bytes), bytes, lane);
		float d = seg_dot<T>((const uint8_t *)stage, cur_bytes / qt<T>::B,
				     xs + (size_t)sg * SEG * qt<T>::W, lane);
#pragma unroll
		for (int i = 0; i < R; i++)
			if (i == r)
				sum[i] += d;
		if (ng != g) { /* the group's rows are done */
#pragma unroll
			for (int i = 0; i < R; i++)
				for (int o = 16; o > 0; o /= 2)
					sum[i] += __shfl_xor_sync(0xffffffffu, sum[i], o);
			if (lane == 0) {
				if (OUT == CU_MV_OUT_SWIGLU) {
					float gt = sum[0], up = sum[R - 1];
					a.h[g] = __float2bfloat16(gt / (1.0f + expf(-gt)) * up);
				} else {
					a.y[g] = a.acc ? a.y[g] + sum[0] : sum[0];
				}
			}
#pragma unroll
			for (int i = 0; i < R; i++)
				sum[i] = 0.0f;
		}
		g = ng;
		r = nr;
		sg = ns;
	}
}

/* ---- dequantization for prefill, and the embedding ------------------------------------ */

/* Eight floats as eight bf16 in one 16-byte store. */
__device__ static void store8_bf16(bf16 *dst, const float *w)
{
	__nv_bfloat162 v[4];
#pragma unroll
	for (int i = 0; i < 4; i++)
		v[i] = __floats2bfloat162_rn(w[2 * i], w[2 * i + 1]);
	*(uint4 *)dst = *(const uint4 *)v;
}

/* One thread per unit of rows [m0, m0 + rows): neighbours decode neighbouring units,
 * so a warp reads a contiguous stretch of the row. */
template <int T>
__global__ static void dequant_kernel(bf16 *out, const uint8_t *W, size_t stride, int m0, int rows,
				      int K)
{
	typedef qt<T> Q;
	int upr = K / Q::W * Q::U;
	size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
	if (i >= (size_t)rows * upr)
		return;
	int r = (int)(i / upr), u = (int)(i % upr), b = u / Q::U, k = u % Q::U;
	float w[Q::UW];
	Q::decode(W + (size_t)(m0 + r) * stride + (size_t)b * Q::B, k, w);
	bf16 *o = out + (size_t)r * K + (size_t)b * Q::W;
#pragma unroll
	for (int g = 0; g < Q::UW / 8; g++)
		store8_bf16(o + Q::base(k, g), w + 8 * g);
}

/* Block t: row ids[t] of the table into x row t. */
template <int T>
__global__ static void qembed_kernel(float *x, const uint8_t *table, size_t stride,
				     const int32_t *ids, int dim)
{
	typedef qt<T> Q;
	pdl_launch_dependents();
	const uint8_t *row = table + (size_t)ids[blockIdx.x] * stride;
	float *out = x + (size_t)blockIdx.x * dim;
	int upr = dim / Q::W * Q::U;
	for (int u = threadIdx.x; u < upr; u += blockDim.x) {
		int b = u / Q::U, k = u % Q::U;
		float w[Q::UW];
		Q::decode(row + (size_t)b * Q::B, k, w);
#pragma unroll
		for (int g = 0; g < Q::UW / 8; g++) {
			float4 *o = (float4 *)(out + b * Q::W + Q::base(k, g));
			o[0] = make_float4(w[8 * g], w[8 * g + 1], w[8 * g + 2], w[8 * g + 3]);
			o[1] = make_float4(w[8 * g + 4], w[8 * g + 5], w[8 * g + 6], w[8 * g + 7]);
		}
	}
}

/* ---- host side ------------------------------------------------------------------------ */

bool cu_quantized(int type)
{
	return type >= ENG_Q8_0 && type < ENG_DTYPE_COUNT;
}

size_t cu_row_bytes(int type, int64_t K)
{
	switch (type) {
	case ENG_BF16:
	case ENG_F16: return (size_t)K * 2;
	case ENG_F32: return (size_t)K * 4;
	case ENG_Q8_0: return (size_t)(K / qt<ENG_Q8_0>::W) * qt<ENG_Q8_0>::B;
	case ENG_Q4_0: return (size_t)(K / qt<ENG_Q4_0>::W) * qt<ENG_Q4_0>::B;
	case ENG_Q5_0: return (size_t)(K / qt<ENG_Q5_0>::W) * qt<ENG_Q5_0>::B;
	case ENG_Q4_K: return (size_t)(K / qt<ENG_Q4_K>::W) * qt<ENG_Q4_K>::B;
	case ENG_Q5_K: return (size_t)(K / qt<ENG_Q5_K>::W) * qt<ENG_Q5_K>::B;
	case ENG_Q6_K: return (size_t)(K / qt<ENG_Q6_K>::W) * qt<ENG_Q6_K>::B;
	default: return 0;
	}
}

size_t cu_qrow_stride(int type, int64_t K)
{
	return (cu_row_bytes(type, K) + 15) & ~(size_t)15;
}

/* Calls fn<T>(args) for the block type `type`; an error for anything else. */
#define QUANT_DISPATCH(type, fn, ...)                                           \
	switch (type) {                                                         \
	case ENG_Q8_0: return fn<ENG_Q8_0>(__VA_ARGS__);                        \
	case ENG_Q4_0: return fn<ENG_Q4_0>(__VA_ARGS__);                        \
	case ENG_Q5_0: return fn<ENG_Q5_0>(__VA_ARGS__);                        \
	case ENG_Q4_K: return fn<ENG_Q4_K>(__VA_ARGS__);                        \
	case ENG_Q5_K: return fn<ENG_Q5_K>(__VA_ARGS__);                        \
	case ENG_Q6_K: return fn<ENG_Q6_K>(__VA_ARGS__);                        \
	default:                                                                \
		return err_set("cuda: no kernel for weights of type %s",        \
			       (unsigned)(type) < ENG_DTYPE_COUNT               \
				       ? eng_dtype_name((enum eng_dtype)(type)) \
				       : "unknown");                            \
	}

static size_t qmv_smem(int K)
{
	return (size_t)QMV_WARPS * QMV_STAGE + (size_t)K * sizeof(float);
}

template <int T> static int allow_smem(int bytes)
{
	CUDA_CHECK(cudaFuncSetAttribute(qmatvec_kernel<T, CU_MV_BF16, CU_MV_OUT_F32>,
					cudaFuncAttributeMaxDynamicSharedMemorySize, bytes));
	CUDA_CHECK(cudaFuncSetAttribute(qmatvec_kernel<T, CU_MV_RMSNORM, CU_MV_OUT_F32>,
					cudaFuncAttributeMaxDynamicSharedMemorySize, bytes));
	CUDA_CHECK(cudaFuncSetAttribute(qmatvec_kernel<T, CU_MV_RMSNORM, CU_MV_OUT_SWIGLU>,
					cudaFuncAttributeMaxDynamicSharedMemorySize, bytes));
	return 0;
}

/* Set once by cu_qmatvec_setup: the device's multiprocessors. */
static int qmv_sms = 1;

int cu_qmatvec_setup(int max_k, int sms)
{
	qmv_sms = sms;
	/* 16 KB of staging and x in fp32: past 48 KB from K = 8192 on */
	int bytes = (int)qmv_smem(max_k);
	for (int t = ENG_Q8_0; t < ENG_DTYPE_COUNT; t++) {
		auto allow = [&](int type) -> int { QUANT_DISPATCH(type, allow_smem, bytes); };
		if (allow(t))
			return -1;
	}
	return 0;
}

/* As many blocks as the SMs hold at once (x in fp32 makes a block's shared memory grow
 * with K: 64 KB at K = 12288), the rows grid-strided: a second, partial wave of blocks
 * would leave most SMs idle at its end. */
template <int T, int IN, int OUT>
static int qmv_launch(const struct cu_qmatvec_args *a, cudaStream_t s)
{
	int groups = a->M / (OUT == CU_MV_OUT_SWIGLU ? 2 : 1);
	int blocks = CEIL_DIV(groups, QMV_WARPS), per_sm = 0;
	size_t smem = qmv_smem(a->K);
	CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(
		&per_sm, qmatvec_kernel<T, IN, OUT>, QMV_THREADS, smem));
	if (per_sm < 1)
		per_sm = 1;
	if (blocks > per_sm * qmv_sms)
		blocks = per_sm * qmv_sms;
	CUDA_CHECK(launch_pdl(qmatvec_kernel<T, IN, OUT>, dim3(blocks), dim3(QMV_THREADS), smem, s,
			      *a));
	return 0;
}

template <int T> static int qmv_type(const struct cu_qmatvec_args *a, cudaStream_t s)
{
	if (a->output == CU_MV_OUT_SWIGLU)
		return qmv_launch<T, CU_MV_RMSNORM, CU_MV_OUT_SWIGLU>(a, s);
	if (a->input == CU_MV_RMSNORM)
		return qmv_launch<T, CU_MV_RMSNORM, CU_MV_OUT_F32>(a, s);
	return qmv_launch<T, CU_MV_BF16, CU_MV_OUT_F32>(a, s);
}

int cu_qmatvec(const struct cu_qmatvec_args *a, cudaStream_t s)
{
	if (a->output == CU_MV_OUT_SWIGLU && (a->input != CU_MV_RMSNORM || a->M % 2))
		return err_set("cu_qmatvec: the SwiGLU output needs the RMSNorm input and row "
			       "pairs (M %d)",
			       a->M);
	if ((size_t)a->stride % 16 || (uintptr_t)a->W % 16)
		return err_set("cu_qmatvec: rows must start 16-byte aligned (stride %zu)",
			       a->stride);
	QUANT_DISPATCH(a->type, qmv_type, a, s);
}

template <int T>
static int dequant_launch(bf16 *out, const void *W, size_t stride, int m0, int m1, int K,
			  cudaStream_t s)
{
	size_t units = (size_t)(m1 - m0) * (K / qt<T>::W) * qt<T>::U;
	dequant_kernel<T><<<(unsigned)CEIL_DIV(units, 256), 256, 0, s>>>(out, (const uint8_t *)W,
									 stride, m0, m1 - m0, K);
	LAUNCH_CHECK();
	return 0;
}

int cu_dequant_rows(bf16 *out, const void *W, int type, size_t stride, int m0, int m1, int K,
		    cudaStream_t s)
{
	if (m1 <= m0)
		return 0;
	QUANT_DISPATCH(type, dequant_launch, out, W, stride, m0, m1, K, s);
}

template <int T>
static int qembed_launch(float *x, const void *table, size_t stride, const int32_t *ids, int n,
			 int dim, cudaStream_t s)
{
	qembed_kernel<T><<<n, 256, 0, s>>>(x, (const uint8_t *)table, stride, ids, dim);
	LAUNCH_CHECK();
	return 0;
}

int cu_qembed(float *x, const void *table, int type, size_t stride, const int32_t *ids, int n,
	      int dim, cudaStream_t s)
{
	QUANT_DISPATCH(type, qembed_launch, x, table, stride, ids, n, dim, s);
}
