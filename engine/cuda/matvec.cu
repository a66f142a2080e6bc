/* matvec.cu — the decode's matrix-vector products, where a decode step spends nearly
 * all its time: y = W . x with W (M, K) bf16 streamed once from device memory.
 *
 * Each block first makes x in shared memory from the kernel's input: as given (bf16),
 * or the RMSNorm of the fp32 residual stream times the norm weight, fused here so the
 * normalized vector never goes through global memory (rounded to bf16 as the prefill's
 * rmsnorm kernel does). Then one warp per row (two for the gate/up pairs), grid-strided:
 * 16-byte streaming loads of the weights (read once, so evict first), eight in flight
 * per lane.
 *
 * Small kernels lose their time at the edges: the launch, the block's set-up, the tail.
 * So every kernel is launched with programmatic dependent launch (Hopper): it starts
 * while the previous kernel drains, loads its first weights into registers (weights
 * never depend on the previous kernel), and only then waits for the previous kernel's
 * output: its blocks take an SM as soon as the previous kernel's blocks there are done.
 * On a GPU without it, launches are plainly serialized. */
#include "engine/cuda/kernels.cuh"

/* Two blocks of MATVEC_THREADS per SM, so at most 64 registers a thread: the output,
 * gate/up and down products, most of a step's bytes, read faster than with one block
 * (q/k/v and the logits slightly slower). */
#define MATVEC_BLOCKS_PER_SM 2

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

/* x (K) bf16 in shared memory, from the input as IN says. */
template <int IN> __device__ static void make_x(bf16 *xs, const struct cu_matvec_args &a)
{
	int K = a.K;
	if (IN == CU_MV_BF16) {
		const bf16 *x = (const bf16 *)a.in;
		for (int i = threadIdx.x; i < K; i += blockDim.x)
			xs[i] = x[i];
	} else { /* CU_MV_RMSNORM */
		const float *x = (const float *)a.in;
		float ss = 0.0f;
		for (int i = threadIdx.x; i < K; i += blockDim.x)
			ss += x[i] * x[i];
		float inv = rsqrtf(block_sum(ss) / K + a.eps);
		for (int i = threadIdx.x; i < K; i += blockDim.x)
			xs[i] = __float2bfloat16(x[i] * inv * __bfloat162float(a.norm[i]));
	}
}

/* The warp's next step of U 16-byte pieces per row, for its rows row .. row + R - 1:
 * pieces base + lane + 32 u; zero past the row's end or the matrix's. */
template <int R, int U>
__device__ static void load_step(uint4 (&w)[R][U], const bf16 *W, int row, int M, int K, int base,
				 int lane)
{
	int k8 = K / 8;
#pragma unroll
	for (int r = 0; r < R; r++)
#pragma unroll
		for (int u = 0; u < U; u++) {
			int i = base + lane + 32 * u;
			w[r][u] = row + r < M && i < k8
					  ? __ldcs((const uint4 *)(W + (size_t)(row + r) * K) + i)
					  : make_uint4(0, 0, 0, 0);
		}
}

/* R rows per warp step: 1, or 2 for CU_MV_OUT_SWIGLU, where the weights hold gate and
 * up rows interleaved and the warp writes silu(gate) * up as bf16. Each lane keeps U
 * 16-byte loads per row in flight (R * U = 8: 128 bytes). The grid is
 * MATVEC_BLOCKS_PER_SM blocks per SM, rows grid-strided. */
template <int IN, int OUT, int U>
__global__ __launch_bounds__(MATVEC_THREADS, MATVEC_BLOCKS_PER_SM) static void matvec_kernel(
	struct cu_matvec_args a)
{
	constexpr int R = OUT == CU_MV_OUT_SWIGLU ? 2 : 1;
	extern __shared__ __align__(16) unsigned char smem[];
	bf16 *xs = (bf16 *)smem;
	int K = a.K, k8 = K / 8, lane = threadIdx.x % 32, warps = blockDim.x / 32;
	bool vec = (K & 7) == 0;
	int row = (blockIdx.x * warps + threadIdx.x / 32) * R, step = gridDim.x * warps * R;

	pdl_launch_dependents();
	uint4 w[R][U]; /* the warp's first step, loaded before the wait */
	if (vec)
		load_step<R, U>(w, a.W, row, a.M, K, 0, lane);
	pdl_wait();
	make_x<IN>(xs, a);
	__syncthreads();

	const uint4 *xv = (const uint4 *)xs;
	for (; row < a.M; row += step) {
		float sum[R] = {};
		if (vec) {
			for (int base = 0;;) {
#pragma unroll
				for (int u = 0; u < U; u++) {
					int i = base + lane + 32 * u;
					if (i < k8)
#pragma unroll
						for (int r = 0; r < R; r++)
							sum[r] += dot8(w[r][u], xv[i]);
				}
				base += 32 * U;
				if (base >= k8)
					break;
				load_step<R, U>(w, a.W, row, a.M, K, base, lane);
			}
			/* the next rows' first step, in flight during the reduction */
			load_step<R, U>(w, a.W, row + step, a.M, K, 0, lane);
		} else { /* K not a multiple of 8: tiny test shapes only */
			for (int k = lane; k < K; k += 32)
#pragma unroll
				for (int r = 0; r < R; r++)
					sum[r] += __bfloat162float(a.W[(size_t)(row + r) * K + k]) *
						  __bfloat162float(xs[k]);
		}
#pragma unroll
		for (int r = 0; r < R; r++)
			for (int o = 16; o > 0; o /= 2)
				sum[r] += __shfl_xor_sync(0xffffffffu, sum[r], o);
		if (lane != 0)
			continue;
		if (OUT == CU_MV_OUT_SWIGLU) {
			float g = sum[0], u = sum[R - 1];
			a.h[row / 2] = __float2bfloat16(g / (1.0f + expf(-g)) * u);
		} else {
			a.y[row] = a.acc ? a.y[row] + sum[0] : sum[0];
		}
	}
}

/* ---- launchers ---------------------------------------------------------------------- */

template <int IN, int OUT, int U> static int allow_smem(int bytes)
{
	CUDA_CHECK(cudaFuncSetAttribute(matvec_kernel<IN, OUT, U>,
					cudaFuncAttributeMaxDynamicSharedMemorySize, bytes));
	return 0;
}

int cu_matvec_setup(int max_k)
{
	/* x above 48 KB (F = 25600 of the 32B shape: 50 KB) needs the opt-in */
	int bytes = max_k * (int)sizeof(bf16);
	if (allow_smem<CU_MV_BF16, CU_MV_OUT_F32, 8>(bytes) ||
	    allow_smem<CU_MV_BF16, CU_MV_OUT_F32, 4>(bytes) ||
	    allow_smem<CU_MV_RMSNORM, CU_MV_OUT_F32, 8>(bytes) ||
	    allow_smem<CU_MV_RMSNORM, CU_MV_OUT_F32, 4>(bytes) ||
	    allow_smem<CU_MV_RMSNORM, CU_MV_OUT_SWIGLU, 4>(bytes) ||
	    allow_smem<CU_MV_RMSNORM, CU_MV_OUT_SWIGLU, 2>(bytes))
		return -1;
	return 0;
}

/* At most MATVEC_BLOCKS_PER_SM blocks on each multiprocessor, the rows grid-strided. */
template <int IN, int OUT, int U>
static int launch(const struct cu_matvec_args *a, const struct cu_device *dev, cudaStream_t s)
{
	int rows_per_block = MATVEC_THREADS / 32 * (OUT == CU_MV_OUT_SWIGLU ? 2 : 1);
	int blocks = CEIL_DIV(a->M, rows_per_block);
	if (blocks > MATVEC_BLOCKS_PER_SM * dev->sms)
		blocks = MATVEC_BLOCKS_PER_SM * dev->sms;
	CUDA_CHECK(launch_pdl(matvec_kernel<IN, OUT, U>, dim3(blocks), dim3(MATVEC_THREADS),
			      (size_t)a->K * sizeof(bf16), s, dev->pdl, *a));
	return 0;
}

/* U, the loads per row and step: 8 per lane in all, fewer where a row is too short
 * for a warp's step (K = 1024: 128 pieces, four per lane). */
template <int IN, int OUT>
static int launch_u(const struct cu_matvec_args *a, const struct cu_device *dev, cudaStream_t s)
{
	constexpr int R = OUT == CU_MV_OUT_SWIGLU ? 2 : 1;
	if (a->K / 8 >= 32 * 8 / R)
		return launch<IN, OUT, 8 / R>(a, dev, s);
	return launch<IN, OUT, 4 / R>(a, dev, s);
}

int cu_matvec(const struct cu_matvec_args *a, const struct cu_device *dev, cudaStream_t s)
{
	if (a->output == CU_MV_OUT_SWIGLU) {
		if (a->input != CU_MV_RMSNORM || a->M % 2)
			return err_set("cu_matvec: the SwiGLU output needs the RMSNorm input and "
				       "row pairs (M %d)",
				       a->M);
		return launch_u<CU_MV_RMSNORM, CU_MV_OUT_SWIGLU>(a, dev, s);
	}
	if (a->input == CU_MV_RMSNORM)
		return launch_u<CU_MV_RMSNORM, CU_MV_OUT_F32>(a, dev, s);
	return launch_u<CU_MV_BF16, CU_MV_OUT_F32>(a, dev, s);
}
