/* quant.cuh — the CUDA backend's kernels for ggml's block-quantized weights (quant.cu):
 * Q8_0, Q4_0, Q5_0 (32 weights a block) and Q4_K, Q5_K, Q6_K (256). On the device each
 * row of blocks is repacked into planes (qblocks.cuh: the quants of all its blocks
 * first, 16-byte aligned, the scales apart) and padded to a multiple of 16 bytes
 * (cu_qrow_stride).
 *
 * tests/unit/test_cuda_qblocks.cu checks the repacking and the decoding on the host;
 * tests/cuda.sh checks the kernels against the CPU backend (every mix of llama.cpp's,
 * prefill and decode, graph and plain launches) where a GPU is present. */
#ifndef QWENCHAT_CUDA_QUANT_CUH
#define QWENCHAT_CUDA_QUANT_CUH

#include "engine/cuda/kernels.cuh"

/* True for the block-quantized types (the module cannot call engine.h's functions:
 * it links nothing of the program but the host table). */
bool cu_quantized(int type);
/* Bytes of a row of K weights of `type` as a file stores it (BF16, F16, F32 or a
 * block type; K a multiple of the block), 0 for an unknown type. */
size_t cu_row_bytes(int type, int64_t K);
/* The device's row of a block type: the file's, padded to a multiple of 16 bytes. */
size_t cu_qrow_stride(int type, int64_t K);
/* dst (cu_row_bytes(type, K) bytes) = the row of K weights src, as the file has it,
 * repacked into the device's planes (host code, at upload). */
int cu_qrepack_row(int type, uint8_t *dst, const uint8_t *src, int64_t K);

/* The decode matrix-vector product on quantized rows: what cu_matvec does for bf16
 * (same inputs, same outputs, the same `acc`), with x quantized to int8 per 32 values
 * as the CPU's decode kernels do. */
struct cu_qmatvec_args {
	float *y;         /* CU_MV_OUT_F32 */
	bf16 *h;          /* CU_MV_OUT_SWIGLU: rows 2f and 2f + 1 are gate and up */
	const void *W;    /* (M rows of `stride` bytes, repacked) */
	int type;         /* enum eng_dtype, a block type */
	size_t stride;    /* cu_qrow_stride(type, K) */
	const void *in;   /* as cu_matvec_args.in */
	const bf16 *norm; /* CU_MV_RMSNORM */
	float eps;
	int M, K;
	int input, output; /* enum cu_matvec_input, enum cu_matvec_output */
	bool acc;          /* add to y */
};
/* Once per process, before cu_qmatvec: the shared-memory opt-in for the largest K. */
int cu_qmatvec_setup(int max_k);
/* The grid is sized by dev's multiprocessors; launched with dev's PDL setting. */
int cu_qmatvec(const struct cu_qmatvec_args *a, const struct cu_device *dev, cudaStream_t s);

/* out (m1 - m0, K) bf16, row-major = rows [m0, m1) of W dequantized: the prefill's
 * cuBLAS GEMM then runs on this copy. */
int cu_dequant_rows(bf16 *out, const void *W, int type, size_t stride, int m0, int m1, int K,
		    cudaStream_t s);

/* x (n, dim) fp32 = rows ids[0..n) of a quantized embedding table. */
int cu_qembed(float *x, const void *table, int type, size_t stride, const int32_t *ids, int n,
	      int dim, cudaStream_t s);

#endif
