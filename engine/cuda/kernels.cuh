/* kernels.cuh — launchers of the CUDA backend's kernels. Every launcher takes the
 * stream, computes its grid with CEIL_DIV, checks the launch, and returns 0 or -1
 * (err_set). Positions and token ids are read from device memory so that the same
 * decode step can be replayed from a CUDA graph. */
#ifndef QWENCHAT_CUDA_KERNELS_CUH
#define QWENCHAT_CUDA_KERNELS_CUH

#include "engine/cuda/common.cuh"

/* What the launchers need to know of the device: queried once, when the backend
 * starts (cuda_init), kept in its state and handed to every launcher that reads it. */
struct cu_device {
	int sms;  /* multiprocessors: the decode products size their grids by them */
	bool pdl; /* programmatic dependent launch (compute capability 9.0 and up) */
};

/* Launches kernel k on stream s allowing programmatic dependent launch where the device
 * has it (pdl): k may start while the kernel before it drains, and must call pdl_wait
 * before it reads anything that kernel (or any earlier one) writes. */
template <typename... P, typename... A>
static inline cudaError_t launch_pdl(void (*k)(P...), dim3 grid, dim3 block, size_t smem,
				     cudaStream_t s, bool pdl, A... args)
{
	cudaLaunchAttribute attr = {};
	attr.id = cudaLaunchAttributeProgrammaticStreamSerialization;
	attr.val.programmaticStreamSerializationAllowed = pdl;
	cudaLaunchConfig_t cfg = {};
	cfg.gridDim = grid;
	cfg.blockDim = block;
	cfg.dynamicSmemBytes = smem;
	cfg.stream = s;
	cfg.attrs = &attr;
	cfg.numAttrs = 1;
	return cudaLaunchKernelEx(&cfg, k, args...);
}

/* x (n, dim) fp32 = embedding rows ids[0..n) of table (vocab, dim) bf16. */
int cu_embed(float *x, const bf16 *table, const int32_t *ids, int n, int dim, cudaStream_t s);

/* out (n, dim) bf16 = x / rms(x) * w, fp32 reduction. */
int cu_rmsnorm(bf16 *out, const float *x, const bf16 *w, int n, int dim, float eps, cudaStream_t s);

/* The decode matrix-vector product (matvec.cu): W (M, K) bf16 . x, where the kernel
 * makes x from its input, and writes y or, for the MLP's gate/up rows (interleaved:
 * gate row f at 2f, up row f at 2f + 1), h = silu(gate) * up. */
enum cu_matvec_input {
	CU_MV_BF16,    /* x: in (K) bf16, as is */
	CU_MV_RMSNORM, /* x: rmsnorm(in) * norm, in (K) fp32 */
};
enum cu_matvec_output {
	CU_MV_OUT_F32,    /* y (M) fp32 (+)= W . x */
	CU_MV_OUT_SWIGLU, /* h (M/2) bf16 = silu(W[2f] . x) * (W[2f+1] . x) */
};
struct cu_matvec_args {
	float *y; /* CU_MV_OUT_F32 */
	bf16 *h;  /* CU_MV_OUT_SWIGLU */
	const bf16 *W;
	const void *in;
	const bf16 *norm; /* CU_MV_RMSNORM */
	float eps;
	int M, K;
	int input, output; /* enum cu_matvec_input, enum cu_matvec_output */
	bool acc;          /* add to y */
};
#define MATVEC_THREADS 512
/* Once per process, before cu_matvec: the shared-memory opt-in for the largest K. */
int cu_matvec_setup(int max_k);
/* The grid is sized by dev's multiprocessors; launched with dev's PDL setting. */
int cu_matvec(const struct cu_matvec_args *a, const struct cu_device *dev, cudaStream_t s);

/* Per token t of n at position *pos + t: RMSNorm of each q and k head with its weight,
 * rotate-half RoPE from the (ctx, hd/2) cos/sin tables, q heads to q_out (n, H*hd)
 * fp32, k and v heads into this layer's caches (Hkv, ctx, hd) bf16.
 * qkv is the (n, (H + 2 Hkv) hd) fp32 output of the fused projection. */
struct cu_rope_args {
	float *q_out;
	bf16 *k_cache, *v_cache;
	const float *qkv;
	const bf16 *q_norm, *k_norm;
	const float *cos, *sin;
	const int *pos;
	int n, H, Hkv, hd, ctx;
	float eps;
};
int cu_qk_norm_rope_store(const struct cu_rope_args *a, cudaStream_t s);

/* h (n, F) bf16 = silu(g) * u, where gate_up is (n, 2F) fp32: gate and up interleaved. */
int cu_swiglu(bf16 *h, const float *gate_up, int n, int F, cudaStream_t s);

/* Attention over this layer's cache for n queries at positions *pos .. *pos+n-1
 * (causal; query head h reads kv head h / (H / Hkv)). */
struct cu_attn_args {
	const float *q;                /* (n, H*hd) fp32, RoPE applied */
	bf16 *out;                     /* prefill: (n, H*hd) bf16; decode: the query's row (H*hd) */
	const bf16 *k_cache, *v_cache; /* this layer: (Hkv, ctx, hd) */
	const int *pos;
	int n, H, Hkv, hd, ctx;
	float scale; /* 1/sqrt(hd) */
	/* decode only (n == 1): split-K partials and the optional softmax capture */
	float *part; /* (H, max_splits, hd + 2) */
	int max_splits;
	float *cap;   /* (H, ctx) softmax row of the query, or NULL */
	int q_offset; /* decode: the query is token q_offset of the chunk */
	/* decode: when rope.qkv is set, q is unused and the kernel makes the queries from
	 * the raw projection itself (q/k norms and RoPE, as cu_qk_norm_rope_store) and
	 * stores the new key and value: one launch fewer per layer */
	struct cu_rope_args rope;
};
/* Once per process, before the first decode: the shapes' shared-memory opt-in. */
int cu_attention_setup(int head_dim, int group);
/* Split-K (flash-decoding) attention for one query; stays parallel at long context. */
int cu_attention_decode(const struct cu_attn_args *a, cudaStream_t s);
/* Tiled flash attention for a chunk of queries: no n x n buffer. */
int cu_attention_prefill(const struct cu_attn_args *a, cudaStream_t s);

/* Sampling on the device (sample.cu). The settings live in device memory, written
 * before each step, so that one graph serves every step. */
#define CU_SAMPLE_MAX_K      64   /* = ENG_SAMPLE_MAX_K */
#define CU_SAMPLE_MAX_RECENT 64   /* = ENG_SAMPLE_MAX_RECENT */
#define CU_SAMPLE_SLICE      1024 /* vocabulary ids per block of the first stage */
static_assert(CU_SAMPLE_MAX_K == ENG_SAMPLE_MAX_K && CU_SAMPLE_MAX_RECENT == ENG_SAMPLE_MAX_RECENT,
	      "the device sampler's limits are the engine's");
struct cu_sample_params {
	int k; /* candidates kept: top_k, or 1 when greedy */
	int n_recent, vocab, vocab_limit;
	double temperature, top_p, min_p, presence_penalty, repetition_penalty, uniform;
	int recent[CU_SAMPLE_MAX_RECENT];
};
struct cu_sample_args {
	float *logits; /* (vocab) fp32; the penalties are applied in place */
	const struct cu_sample_params *params; /* device copy */
	int vocab;
	int2 *cand; /* (cu_sample_blocks(vocab) * CU_SAMPLE_MAX_K) */
	int *bad;   /* one int of scratch */
	int *out;   /* 3 ints: the id, 1 when the draw decided, first
	                              * non-finite logit's id (>= vocab: none) */
};
/* Blocks of the first stage for this vocabulary (sizes cand). */
int cu_sample_blocks(int vocab);
/* Enqueues penalties, selection and the draw. */
int cu_sample(const struct cu_sample_args *a, cudaStream_t s);

/* out (n, M) fp32 (+)= in (n, K) bf16 . W (M, K)^T through cuBLAS (bf16 in, fp32
 * accumulation): the prefill's matrix products (gemm.cu). */
int cu_gemm(cublasHandle_t blas, float *out, const bf16 *in, const bf16 *W, int n, int M, int K,
	    bool acc);
/* The same into columns of a wider out: row t of out starts ldo floats after row t-1
 * (a part of the stacked q/k/v outputs, a tile of a dequantized matrix's rows). */
int cu_gemm_ld(cublasHandle_t blas, float *out, int ldo, const bf16 *in, const bf16 *W, int n,
	       int M, int K, bool acc);

/* The device's copy bandwidth and GEMM rate (measure.cu), for eng_measure. */
int cu_measure_peaks(cublasHandle_t blas, cudaStream_t s, int m, int n, int k,
		     struct eng_peaks *out);

/* The backend's table (cuda.cu), or NULL with err_set when no device is usable; the
 * module's entry point (host.cu) hands it to the program. */
const struct eng_backend_ops *cuda_backend_ops(void);

/* Most splits of the decode attention. */
#define CU_MAX_SPLITS   1024
/* Largest head_dim the attention kernels handle. */
#define CU_MAX_HEAD_DIM 256

#endif
