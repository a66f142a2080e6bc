/* gemm.cu — the prefill's matrix products through cuBLAS: bf16 inputs and weights, fp32
 * accumulation. A quantized matrix is first dequantized to bf16 by tiles of rows
 * (quant.cu's cu_dequant_rows), each tile still one wide GEMM. */
#include "engine/cuda/state.cuh"

/* out (n, M) fp32 (+)= in (n, K) bf16 . W (M, K)^T through cuBLAS: column-major, that
 * is out^T (M, n) = W^T' (M, K) . in^T (K, n). */
int cu_gemm(cublasHandle_t blas, float *out, const bf16 *in, const bf16 *W, int n, int M, int K,
	    bool acc)
{
	return cu_gemm_ld(blas, out, M, in, W, n, M, K, acc);
}

int cu_gemm_ld(cublasHandle_t blas, float *out, int ldo, const bf16 *in, const bf16 *W, int n,
	       int M, int K, bool acc)
{
	const float one = 1.0f, zero = 0.0f;
	CUBLAS_CHECK(cublasGemmEx(blas, CUBLAS_OP_T, CUBLAS_OP_N, M, n, K, &one, W, CUDA_R_16BF, K,
				  in, CUDA_R_16BF, K, acc ? &one : &zero, out, CUDA_R_32F, ldo,
				  CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
	return 0;
}

/* out (n, ldo) columns [0, W->rows) (+)= in (n, K) . W^T: cuBLAS on the bf16 weights,
 * or, for a quantized W, on tiles of its rows dequantized into s->deq one after the
 * other (stream order keeps a tile's GEMM before the next tile overwrites it). */
int cu_mat_gemm(struct cu_state *s, float *out, int ldo, const bf16 *in, const struct cu_mat *W,
		int n, int K, bool acc)
{
	if (W->t == ENG_BF16)
		return cu_gemm_ld(s->blas, out, ldo, in, (const bf16 *)W->w, n, W->rows, K, acc);
	int tile = (int)(s->deq_elems / K);
	for (int m0 = 0; m0 < W->rows; m0 += tile) {
		int m1 = W->rows - m0 < tile ? W->rows : m0 + tile;
		if (cu_dequant_rows(s->deq, W->w, W->t, W->stride, m0, m1, K, s->stream) ||
		    cu_gemm_ld(s->blas, out + m0, ldo, in, s->deq, n, m1 - m0, K, acc))
			return -1;
	}
	return 0;
}
