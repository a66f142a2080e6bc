/* quant.cu — decode, prefill and embedding kernels for block-quantized weights, which
 * the device keeps repacked in planes (qblocks.cuh says how, and decodes them).
 *
 * Decode is memory-bound: the matrix-vector product must stream each row once with
 * wide coalesced loads and spend few instructions per weight. Each block of the
 * kernel first quantizes x to int8 with one scale per 32 values in shared memory
 * (what the CPU's decode kernels do, cpu_quantize_act), then each warp takes two rows
 * at a time and each lane a few 16-byte chunks of both: the loads of all its chunks
 * are issued before any is used, and a chunk's 32 (Q6_K: 64) weights meet x in four
 * (sixteen) byte dot products (dp4a) per 16 weights, scaled once per run of 16. Widening
 * every weight to fp32 for an FMA instead costs three or more instructions per weight,
 * more than the memory system leaves time for at a data-centre GPU's bandwidth.
 *
 * Prefill dequantizes tiles of rows to bf16 (cu_dequant_rows) for cuBLAS: a GEMM of
 * hundreds of tokens reads each weight once per tile, so the extra pass is small. */
#include "engine/cuda/qblocks.cuh"
#include "engine/cuda/quant.cuh"

#define QMV_THREADS 256
#define QMV_WARPS   (QMV_THREADS / 32)
#define QMV_ROWS    2 /* rows a warp computes together (a gate/up pair for SwiGLU) */
/* Decode waits on memory: what bounds it is the bytes an SM has in flight, a lane's
 * loads times the warps the registers leave room for. Per block type, the chunks a
 * lane loads per row and step (16 bytes each, Q6_K's 48; QMV_ROWS rows at a time) and
 * the blocks an SM must hold, which caps the registers (3: 80 a lane, 2: 128). Chosen
 * by measurement on the 8B shape: twice the chunks at two blocks an SM is best for
 * Q8_0, and no better for Q4_K; the Q4_K kernels at four blocks (64 registers) are
 * slower, and with four times the chunks at one block slower still. */
template <int T> __host__ __device__ constexpr int qmv_step()
{
	return T == ENG_Q8_0 ? 8 : T == ENG_Q6_K ? 1 : 2;
}
template <int T> __host__ __device__ constexpr int qmv_min_blocks()
{
	return T == ENG_Q8_0 ? 2 : 3;
}

/* Shared memory of a block: x as int8 (K), its scales (K/32 floats) and the sums of
 * each 16 (K/16 ints). */
static size_t qmv_smem(int K)
{
	return (size_t)K + (size_t)K / 32 * sizeof(float) + (size_t)K / 16 * sizeof(int);
}

__device__ static struct qx qmv_x(unsigned char *smem, int K)
{
	struct qx x = {(const int8_t *)smem, (const float *)(smem + K),
		       (const int *)(smem + K + K / 32 * sizeof(float))};
	return x;
}

/* ---- the decode matrix-vector product ------------------------------------------------ */

/* x (K) from the kernel's input (the RMSNorm kept in fp32) quantized into shared
 * memory as cpu_quantize_act does: per 32 values d = max|x| / 127, q = round(x / d)
 * to nearest even. A warp takes four blocks of 32 at a time, eight lanes each, four
 * values per lane. */
template <int IN> __device__ static void quantize_x(unsigned char *smem, const struct cu_qmatvec_args &a)
{
	int K = a.K, nblk = K / 32;
	int8_t *xq = (int8_t *)smem;
	float *xd = (float *)(smem + K);
	int *s16 = (int *)(smem + K + nblk * sizeof(float));
	float inv = 1.0f;
	if (IN == CU_MV_RMSNORM) {
		const float *x = (const float *)a.in;
		float ss = 0.0f;
		for (int i = threadIdx.x; i < K; i += blockDim.x)
			ss += x[i] * x[i];
		inv = rsqrtf(block_sum(ss) / K + a.eps);
	}
	int lane = threadIdx.x % 32, warp = threadIdx.x / 32, sub = lane % 8;
	for (int b0 = 4 * warp; b0 < nblk; b0 += 4 * QMV_WARPS) {
		int blk = b0 + lane / 8, i0 = 32 * blk + 4 * sub;
		bool ok = blk < nblk;
		float v[4] = {0.0f, 0.0f, 0.0f, 0.0f};
		if (ok && IN == CU_MV_BF16) {
			const __nv_bfloat162 *x = (const __nv_bfloat162 *)((const bf16 *)a.in + i0);
			float2 p = __bfloat1622float2(x[0]), q = __bfloat1622float2(x[1]);
			v[0] = p.x, v[1] = p.y, v[2] = q.x, v[3] = q.y;
		} else if (ok) {
			float4 x = *(const float4 *)((const float *)a.in + i0);
			const bf16 *n = a.norm + i0;
			v[0] = x.x * inv * __bfloat162float(n[0]);
			v[1] = x.y * inv * __bfloat162float(n[1]);
			v[2] = x.z * inv * __bfloat162float(n[2]);
			v[3] = x.w * inv * __bfloat162float(n[3]);
		}
		float amax = fmaxf(fmaxf(fabsf(v[0]), fabsf(v[1])), fmaxf(fabsf(v[2]), fabsf(v[3])));
		for (int o = 1; o < 8; o *= 2)
			amax = fmaxf(amax, __shfl_xor_sync(0xffffffffu, amax, o));
		float d = amax / 127.0f, id = d != 0.0f ? 1.0f / d : 0.0f;
		int q[4], s = 0;
#pragma unroll
		for (int i = 0; i < 4; i++) {
			q[i] = __float2int_rn(__fmul_rn(v[i], id));
			s += q[i];
		}
		s += __shfl_xor_sync(0xffffffffu, s, 1); /* the 16 values of lanes 0-3, 4-7 */
		s += __shfl_xor_sync(0xffffffffu, s, 2);
		if (ok) {
			*(uint32_t *)(xq + i0) = (uint32_t)(q[0] & 0xff) | (uint32_t)(q[1] & 0xff) << 8 |
						 (uint32_t)(q[2] & 0xff) << 16 | (uint32_t)q[3] << 24;
			if (sub == 0)
				xd[blk] = d;
			if (sub % 4 == 0)
				s16[2 * blk + sub / 4] = s;
		}
	}
}

__device__ static inline void prefetch_l2(const void *p)
{
	asm volatile("prefetch.global.L2 [%0];" ::"l"(p));
}

/* Warp g of the grid (grid-strided) computes rows g*2 and g*2 + 1; lane l takes chunks
 * l, l + 32, ... of both rows, qmv_step of them per row at a time, all loaded before
 * the first is used. The first chunks are asked of the L2 before the kernel waits for
 * the one before it (programmatic dependent launch), as matvec.cu's kernels do. */
template <int T, int IN, int OUT>
__global__ __launch_bounds__(QMV_THREADS, qmv_min_blocks<T>()) static void qmatvec_kernel(
	struct cu_qmatvec_args a)
{
	typedef qp<T> Q;
	constexpr int R = QMV_ROWS, S = qmv_step<T>();
	extern __shared__ __align__(16) unsigned char smem[];
	int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
	int nb = a.K / Q::W, C = nb * Q::CPB, groups = CEIL_DIV(a.M, R);
	const uint8_t *W = (const uint8_t *)a.W;
	int g = blockIdx.x * QMV_WARPS + warp, gstep = gridDim.x * QMV_WARPS;

	pdl_launch_dependents();
	if (g < groups)
		for (int r = 0; r < R; r++)
			for (int j = lane; j < C && j < 32 * S; j += 32)
				prefetch_l2(W + (size_t)min(g * R + r, a.M - 1) * a.stride + 16 * j);
	pdl_wait();
	quantize_x<IN>(smem, a);
	__syncthreads();
	const struct qx x = qmv_x(smem, a.K);

	for (; g < groups; g += gstep) {
		const uint8_t *row[R];
#pragma unroll
		for (int r = 0; r < R; r++)
			row[r] = W + (size_t)min(g * R + r, a.M - 1) * a.stride;
		float sum[R] = {};
		for (int j0 = lane; j0 < C; j0 += 32 * S) {
			typename Q::chunk c[R][S];
#pragma unroll
			for (int s = 0; s < S; s++)
#pragma unroll
				for (int r = 0; r < R; r++)
					if (j0 + 32 * s < C)
						Q::load(c[r][s], row[r], nb, j0 + 32 * s);
#pragma unroll
			for (int s = 0; s < S; s++)
#pragma unroll
				for (int r = 0; r < R; r++)
					if (j0 + 32 * s < C)
						sum[r] += Q::dot(c[r][s], j0 + 32 * s, x);
		}
#pragma unroll
		for (int r = 0; r < R; r++)
			for (int o = 16; o > 0; o /= 2)
				sum[r] += __shfl_xor_sync(0xffffffffu, sum[r], o);
		if (lane == 0) {
			if (OUT == CU_MV_OUT_SWIGLU) {
				float gt = sum[0], up = sum[1];
				a.h[g] = __float2bfloat16(gt / (1.0f + expf(-gt)) * up);
			} else {
#pragma unroll
				for (int r = 0; r < R; r++) {
					int m = g * R + r;
					if (m < a.M)
						a.y[m] = a.acc ? a.y[m] + sum[r] : sum[r];
				}
			}
		}
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

/* One thread per chunk of rows [m0, m0 + rows): neighbours read neighbouring chunks. */
template <int T>
__global__ static void dequant_kernel(bf16 *out, const uint8_t *W, size_t stride, int m0, int rows,
				      int K)
{
	typedef qp<T> Q;
	int nb = K / Q::W, C = nb * Q::CPB;
	size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
	if (i >= (size_t)rows * C)
		return;
	int r = (int)(i / C), j = (int)(i % C);
	typename Q::chunk c;
	Q::load(c, W + (size_t)(m0 + r) * stride, nb, j);
	float w[16 * Q::RUNS];
	Q::decode(c, j, w);
	bf16 *o = out + (size_t)r * K;
#pragma unroll
	for (int g = 0; g < Q::RUNS; g++) {
		store8_bf16(o + Q::run(j, g), w + 16 * g);
		store8_bf16(o + Q::run(j, g) + 8, w + 16 * g + 8);
	}
}

/* Block t: row ids[t] of the table into x row t. */
template <int T>
__global__ static void qembed_kernel(float *x, const uint8_t *table, size_t stride,
				     const int32_t *ids, int dim)
{
	typedef qp<T> Q;
	pdl_launch_dependents();
	const uint8_t *row = table + (size_t)ids[blockIdx.x] * stride;
	float *out = x + (size_t)blockIdx.x * dim;
	int nb = dim / Q::W, C = nb * Q::CPB;
	for (int j = threadIdx.x; j < C; j += blockDim.x) {
		typename Q::chunk c;
		Q::load(c, row, nb, j);
		float w[16 * Q::RUNS];
		Q::decode(c, j, w);
#pragma unroll
		for (int g = 0; g < Q::RUNS; g++) {
			float4 *o = (float4 *)(out + Q::run(j, g));
#pragma unroll
			for (int v = 0; v < 4; v++)
				o[v] = make_float4(w[16 * g + 4 * v], w[16 * g + 4 * v + 1],
						   w[16 * g + 4 * v + 2], w[16 * g + 4 * v + 3]);
		}
	}
}

/* ---- host side ------------------------------------------------------------------------ */

bool cu_quantized(int type)
{
	switch (type) {
	case ENG_Q8_0:
	case ENG_Q4_0:
	case ENG_Q5_0:
	case ENG_Q4_K:
	case ENG_Q5_K:
	case ENG_Q6_K: return true;
	default: return false; /* Q4_1, Q5_1, Q2_K, Q3_K, IQ4_*: no kernels here yet */
	}
}

size_t cu_row_bytes(int type, int64_t K)
{
	switch (type) {
	case ENG_BF16:
	case ENG_F16: return (size_t)K * 2;
	case ENG_F32: return (size_t)K * 4;
	case ENG_Q8_0: return (size_t)(K / qp<ENG_Q8_0>::W) * qp<ENG_Q8_0>::B;
	case ENG_Q4_0: return (size_t)(K / qp<ENG_Q4_0>::W) * qp<ENG_Q4_0>::B;
	case ENG_Q5_0: return (size_t)(K / qp<ENG_Q5_0>::W) * qp<ENG_Q5_0>::B;
	case ENG_Q4_K: return (size_t)(K / qp<ENG_Q4_K>::W) * qp<ENG_Q4_K>::B;
	case ENG_Q5_K: return (size_t)(K / qp<ENG_Q5_K>::W) * qp<ENG_Q5_K>::B;
	case ENG_Q6_K: return (size_t)(K / qp<ENG_Q6_K>::W) * qp<ENG_Q6_K>::B;
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

template <int T> static int repack_row(uint8_t *dst, const uint8_t *src, int64_t K)
{
	qp<T>::repack(dst, src, (int)(K / qp<T>::W));
	return 0;
}

int cu_qrepack_row(int type, uint8_t *dst, const uint8_t *src, int64_t K)
{
	QUANT_DISPATCH(type, repack_row, dst, src, K);
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

int cu_qmatvec_setup(int max_k)
{
	/* x in int8 with its scales: past the default 48 KB from K = 35,000 on */
	int bytes = (int)qmv_smem(max_k);
	for (int t = ENG_Q8_0; t < ENG_DTYPE_COUNT; t++) {
		if (!cu_quantized(t))
			continue;
		auto allow = [&](int type) -> int { QUANT_DISPATCH(type, allow_smem, bytes); };
		if (allow(t))
			return -1;
	}
	return 0;
}

/* As many blocks as the SMs hold at once, the row pairs grid-strided: a second,
 * partial wave of blocks would leave most SMs idle at its end, and every block
 * quantizes x once however many rows it then takes. */
template <int T, int IN, int OUT>
static int qmv_launch(const struct cu_qmatvec_args *a, const struct cu_device *dev, cudaStream_t s)
{
	int groups = a->M / (OUT == CU_MV_OUT_SWIGLU ? 2 : 1);
	int blocks = CEIL_DIV(groups, QMV_WARPS), per_sm = 0;
	size_t smem = qmv_smem(a->K);
	CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(
		&per_sm, qmatvec_kernel<T, IN, OUT>, QMV_THREADS, smem));
	if (per_sm < 1)
		per_sm = 1;
	if (blocks > per_sm * dev->sms)
		blocks = per_sm * dev->sms;
	CUDA_CHECK(launch_pdl(qmatvec_kernel<T, IN, OUT>, dim3(blocks), dim3(QMV_THREADS), smem, s,
			      dev->pdl, *a));
	return 0;
}

template <int T>
static int qmv_type(const struct cu_qmatvec_args *a, const struct cu_device *dev, cudaStream_t s)
{
	if (a->output == CU_MV_OUT_SWIGLU)
		return qmv_launch<T, CU_MV_RMSNORM, CU_MV_OUT_SWIGLU>(a, dev, s);
	if (a->input == CU_MV_RMSNORM)
		return qmv_launch<T, CU_MV_RMSNORM, CU_MV_OUT_F32>(a, dev, s);
	return qmv_launch<T, CU_MV_BF16, CU_MV_OUT_F32>(a, dev, s);
}

int cu_qmatvec(const struct cu_qmatvec_args *a, const struct cu_device *dev, cudaStream_t s)
{
	if (a->output == CU_MV_OUT_SWIGLU && (a->input != CU_MV_RMSNORM || a->M % 2))
		return err_set("cu_qmatvec: the SwiGLU output needs the RMSNorm input and row "
			       "pairs (M %d)",
			       a->M);
	if ((size_t)a->stride % 16 || (uintptr_t)a->W % 16)
		return err_set("cu_qmatvec: rows must start 16-byte aligned (stride %zu)",
			       a->stride);
	QUANT_DISPATCH(a->type, qmv_type, a, dev, s);
}

template <int T>
static int dequant_launch(bf16 *out, const void *W, size_t stride, int m0, int m1, int K,
			  cudaStream_t s)
{
	size_t chunks = (size_t)(m1 - m0) * (K / qp<T>::W) * qp<T>::CPB;
	dequant_kernel<T><<<(unsigned)CEIL_DIV(chunks, 256), 256, 0, s>>>(out, (const uint8_t *)W,
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
