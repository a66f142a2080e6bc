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

#endif
