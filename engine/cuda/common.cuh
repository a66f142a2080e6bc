/* common.cuh — what every file of the CUDA backend shares: checked calls that carry
 * the call, file and line into err_set, bf16 helpers and CEIL_DIV. */
#ifndef QWENCHAT_CUDA_COMMON_CUH
#define QWENCHAT_CUDA_COMMON_CUH

#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <stdint.h>

extern "C" {
#include "engine/backend.h"
#include "src/base/err.h"
}

typedef __nv_bfloat16 bf16;

#define CEIL_DIV(a, b) (((a) + (b)-1) / (b))

/* On failure these record what failed and where, and return -1 from the caller. */
#define CUDA_CHECK(call)                                                            \
	do {                                                                        \
		cudaError_t e_ = (call);                                            \
		if (e_ != cudaSuccess)                                              \
			return err_set("cuda: %s failed: %s (%s:%d)", #call,        \
				       cudaGetErrorString(e_), __FILE__, __LINE__); \
	} while (0)

#define CUBLAS_CHECK(call)                                                             \
	do {                                                                           \
		cublasStatus_t s_ = (call);                                            \
		if (s_ != CUBLAS_STATUS_SUCCESS)                                       \
			return err_set("cublas: %s failed: %s (%s:%d)", #call,         \
				       cublasGetStatusString(s_), __FILE__, __LINE__); \
	} while (0)

/* After every kernel launch: catches bad launch configurations at once. */
#define LAUNCH_CHECK() CUDA_CHECK(cudaGetLastError())

/* Sum over a block of up to 1024 threads; every thread gets the result. */
__device__ static inline float block_sum(float v)
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

/* Programmatic dependent launch (Hopper): a kernel launched with the attribute may
 * start while the one before it finishes, and must wait (pdl_wait) before it reads
 * anything that kernel writes; launch_dependents lets the next kernel start early.
 * Without sm_90 both are no-ops and launches stay serialized. */
__device__ static inline void pdl_launch_dependents(void)
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
	asm volatile("griddepcontrol.launch_dependents;");
#endif
}

__device__ static inline void pdl_wait(void)
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
	asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}

#endif
