/* measure.cu — the device's own limits, measured in the benchmark's run: the
 * device-to-device copy bandwidth (the decode's bound) and the cuBLAS bf16 GEMM rate
 * at a prefill's shape (the prefill's bound). */
#include "engine/cuda/kernels.cuh"

#define COPY_BYTES ((size_t)1 << 30) /* each of the two copy buffers, at most */
#define REPS       5

/* Small values that stay finite through a long sum: the timing must not see NaNs. */
__global__ static void fill_kernel(bf16 *p, size_t n)
{
	for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
	     i += (size_t)gridDim.x * blockDim.x)
		p[i] = __float2bfloat16((float)(int)(i % 17 - 8) / 64.0f);
}

/* Milliseconds of the fastest of REPS runs of what `run` enqueues. */
template <typename F> static int best_ms(cudaStream_t s, F run, float *best)
{
	cudaEvent_t t0, t1;
	CUDA_CHECK(cudaEventCreate(&t0));
	if (cudaEventCreate(&t1) != cudaSuccess) {
		cudaEventDestroy(t0);
		return err_set("cuda: cudaEventCreate failed (%s:%d)", __FILE__, __LINE__);
	}
	int rc = run(); /* warm-up */
	*best = 0;
	for (int r = 0; rc == 0 && r < REPS; r++) {
		float ms = 0;
		if (cudaEventRecord(t0, s) != cudaSuccess || (rc = run()) != 0 ||
		    cudaEventRecord(t1, s) != cudaSuccess ||
		    cudaEventSynchronize(t1) != cudaSuccess ||
		    cudaEventElapsedTime(&ms, t0, t1) != cudaSuccess) {
			rc = rc ? rc
				: err_set("cuda: timing failed: %s",
					  cudaGetErrorString(cudaGetLastError()));
			break;
		}
		if (*best == 0 || ms < *best)
			*best = ms;
	}
	cudaEventDestroy(t0);
	cudaEventDestroy(t1);
	return rc;
}

/* (read + written bytes) / s of cudaMemcpyAsync between two buffers of up to 1 GB
 * (a quarter of the free memory each when less is free). */
static int copy_bandwidth(cudaStream_t s, double *gb_s)
{
	size_t free_b = 0, total_b = 0;
	CUDA_CHECK(cudaMemGetInfo(&free_b, &total_b));
	size_t bytes = free_b / 4 < COPY_BYTES ? free_b / 4 & ~(size_t)4095 : COPY_BYTES;
	void *a = NULL, *b = NULL;
	int rc = -1;
	float ms = 0;
	if (cudaMalloc(&a, bytes) != cudaSuccess || cudaMalloc(&b, bytes) != cudaSuccess) {
		cudaGetLastError();
		err_set("cuda: no device memory for the %zu MB copy-bandwidth buffers",
			bytes >> 19);
		goto out;
	}
	if (cudaMemsetAsync(a, 1, bytes, s) != cudaSuccess) {
		err_set("cuda: cudaMemsetAsync failed");
		goto out;
	}
	rc = best_ms(
		s,
		[&]() -> int {
			CUDA_CHECK(cudaMemcpyAsync(b, a, bytes, cudaMemcpyDeviceToDevice, s));
			return 0;
		},
		&ms);
	if (rc == 0)
		*gb_s = 2.0 * bytes / (ms * 1e-3) / 1e9;
out:
	cudaFree(a);
	cudaFree(b);
	return rc;
}

/* The prefill's matrix product (cu_gemm) at n tokens of k inputs and m outputs. */
static int gemm_rate(cublasHandle_t blas, cudaStream_t s, int m, int n, int k, double *tflop_s)
{
	bf16 *a = NULL, *b = NULL;
	float *c = NULL;
	int rc = -1;
	float ms = 0;
	if (cudaMalloc((void **)&a, (size_t)m * k * sizeof(bf16)) != cudaSuccess ||
	    cudaMalloc((void **)&b, (size_t)k * n * sizeof(bf16)) != cudaSuccess ||
	    cudaMalloc((void **)&c, (size_t)m * n * sizeof(float)) != cudaSuccess) {
		cudaGetLastError();
		err_set("cuda: no device memory for a %dx%dx%d GEMM", m, n, k);
		goto out;
	}
	fill_kernel<<<1024, 256, 0, s>>>(a, (size_t)m * k);
	fill_kernel<<<1024, 256, 0, s>>>(b, (size_t)k * n);
	if (cudaGetLastError() != cudaSuccess) {
		err_set("cuda: fill kernel launch failed");
		goto out;
	}
	rc = best_ms(
		s, [&]() -> int { return cu_gemm(blas, c, b, a, n, m, k, false); }, &ms);
	if (rc == 0)
		*tflop_s = 2.0 * m * n * k / (ms * 1e-3) / 1e12;
out:
	cudaFree(a);
	cudaFree(b);
	cudaFree(c);
	return rc;
}

int cu_measure_peaks(cublasHandle_t blas, cudaStream_t s, int m, int n, int k,
		     struct eng_peaks *out)
{
	out->device = true;
	out->gemm_m = m, out->gemm_n = n, out->gemm_k = k;
	if (copy_bandwidth(s, &out->copy_gb_s) || gemm_rate(blas, s, m, n, k, &out->gemm_tflop_s))
		return -1;
	return 0;
}
