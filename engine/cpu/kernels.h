/* kernels.h — the CPU backend's numeric kernels: bf16-weight matrix products with
 * fp32 activations and accumulation, picked at run time for the CPU's vector ISA,
 * plus the small element-wise steps of the forward pass. */
#ifndef QWENCHAT_CPU_KERNELS_H
#define QWENCHAT_CPU_KERNELS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "engine/engine.h"

/* bf16 is the top half of an fp32: widening is exact. */
static inline float cpu_bf16_to_f32(uint16_t h)
{
	uint32_t u = (uint32_t)h << 16;
	float f;
	memcpy(&f, &u, sizeof f);
	return f;
}

/* Rounds to nearest even (as torch does); NaN stays NaN. */
static inline uint16_t cpu_f32_to_bf16(float f)
{
	uint32_t u;
	memcpy(&u, &f, sizeof u);
	if ((u & 0x7fffffffu) > 0x7f800000u)
		return (uint16_t)((u >> 16) | 0x40);
	u += 0x7fffu + ((u >> 16) & 1);
	return (uint16_t)(u >> 16);
}

/* One input row of a matrix product over quantized weights, made once and read by
 * every row of the matrix: the fp32 values in natural order (what F16/F32 weights
 * multiply), and for the block-quantized types the values as int8 with one fp32
 * scale per 32 (q = round(x / d), d = max|x| / 127, as ggml's Q8_0), so that each
 * weight block's dot product is an integer sum times two scales. */
struct cpu_xq {
	const float *f; /* (K) */
	int8_t *q;      /* (K) */
	float *d;       /* (K/32) the scale of each 32 */
	float *ds;      /* (K/32) d times the sum of the 32 q: the blocks' offsets */
	int16_t *s16;   /* (K/16) the sum of each 16 q (Q6_K's offset, per scale) */
};

/* Each level runs everything the one before it does. AMX: AVX-512 BF16 with Intel's
 * tile registers (amx.h) for the bf16 products. */
enum cpu_isa { CPU_ISA_C, CPU_ISA_AVX2, CPU_ISA_AVX512, CPU_ISA_AVX512BF16, CPU_ISA_AMX };

/* Rows of a weight matrix that a prefill matmul repacks at a time, and the scratch
 * it needs for K columns: the panel, then 32 rows of bf16 activations (the AMX
 * kernel's last block of tokens, padded to a whole tile). */
#define CPU_PANEL_ROWS 64
static inline size_t cpu_panel_words(int K)
{
	return (size_t)(CPU_PANEL_ROWS + 32) * (size_t)((K + 1) / 2);
}

/* One AdamW update's constants (train_cpu.c): decay = 1 - lr * weight_decay (1 for
 * the norms), c1 = 1 - beta1 and c2 = 1 - beta2 (each rounded from the double),
 * step = lr / (1 - beta1^t), rbc2 = 1 / sqrt(1 - beta2^t). */
struct cpu_adamw {
	float decay, b1, b2, c1, c2, step, rbc2, eps;
};

/* One ISA's kernels. Matrix products take the activations "packed": within each
 * full block of `pack` elements of a row, the even-indexed elements come first and
 * the odd-indexed ones after (pack 1: natural order). That lets the kernel widen
 * 2*W bf16 weights with one shift and one and-mask instead of a shuffle. */
struct cpu_kernels {
	const char *name; /* "avx512", "avx2", "c" */
	int pack;         /* 32, 16 or 1 */
	/* out[t*ldo + m] (+)= sum_k xp[t*ldx + k] * w[m*K + k]
	 * for t in [0,n), m in [m0,m1); w is (M, K) row-major bf16 (M >= m1).
	 * acc: add to out instead of overwriting it. panel: NULL, or the caller's
	 * scratch of cpu_panel_words(K) 32-bit words, 64-byte aligned, one per thread,
	 * for the faster prefill kernel that repacks the weights (worth it when every
	 * row meets many tokens; attention's small tiles pass NULL). */
	void (*matmul)(float *out, int ldo, const float *xp, int ldx, int n, const uint16_t *w,
		       int K, int m0, int m1, bool acc, uint32_t *panel);
	/* As matmul, but the activations are bf16 in natural order (xb, row stride ldx)
	 * and the products are bf16 x bf16 (vdpbf16ps), accumulated in fp32: twice
	 * the FLOP per instruction, at ~1e-3 relative error from rounding the
	 * activations. panel: as for matmul, but required. NULL where the CPU lacks
	 * AVX-512 BF16. */
	void (*matmul_bf16)(float *out, int ldo, const uint16_t *xb, int ldx, int n,
			    const uint16_t *w, int K, int m0, int m1, bool acc, uint32_t *panel);
	/* out[t*ldo + r] = sum_k xp[t*ldx + k] * w_r[k] for t < n, r < rows <= 64, with
	 * the rows w_r given already packed as one panel, the way the prefill matmuls
	 * pack weights: panel[p * CPU_PANEL_ROWS + r] holds w_r[2p] and w_r[2p + 1] as two
	 * bf16 (K even). xp packed as for matmul. The bf16 key cache is kept this way. */
	void (*matmul_panel)(float *out, int ldo, const float *xp, int ldx, int n,
			     const uint32_t *panel, int K, int rows);
	/* The bf16 prefill's attention scores: out[t*ldo + j] = sum_k xb[t*ldx + k] *
	 * key_j[k] for t < n, j < nk, the keys kept as consecutive panels of 64 in
	 * matmul_panel's layout; xb holds bf16 query rows, readable up to a multiple of
	 * 32 rows. NULL where matmul_panel is as fast (all but AMX). */
	void (*scores_bf16)(float *out, int ldo, const uint16_t *xb, int ldx, int n,
			    const uint32_t *panels, int K, int nk);
	/* s[j] = scale * dot(q, k_j) for j < nk; keys (nk, hd) bf16 or fp32 rows. */
	void (*scores)(float *s, const float *q, const void *keys, int nk, int hd, bool bf16,
		       float scale);
	/* For each of T queries t: out[t*ldo + i] = sum_j p[t*ldp + j] * v_j[i] for i < hd,
	 * j < nk; values as for scores. A query that sees fewer keys has zeros past
	 * them. Several queries at once read each value row once for all of them. */
	void (*mix)(float *out, int ldo, const float *p, int ldp, int T, const void *vals, int nk,
		    int hd, bool bf16);
	/* cpu_pack_row(xp, x, K, pack) for this ISA's pack, vectorized. */
	void (*pack_row)(float *xp, const float *x, int K);
	/* The element-wise steps, vectorized (e^x by a polynomial within 2 ulp of expf);
	 * the portable versions are cpu_softmax etc. below. */
	void (*softmax)(float *s, int n, float scale, double *lse);
	void (*swiglu)(float *g, const float *u, int n);
	/* Training's backward of h = silu(g) * u for dh: dh becomes d g in place, du d u. */
	void (*swiglu_back)(float *dh, float *du, const float *g, const float *u, int n);
	/* Training's optimizer over n elements of one tensor. scale_sq: g *= scale and
	 * the sum of the new g squared, in double (summed in a fixed order of its own).
	 * adamw: cpu_adamw_c's update, the same fp32 operations in the same order (no
	 * fused multiply-adds), so every kernel set gives the same bits. */
	double (*scale_sq)(float *g, size_t n, float scale);
	void (*adamw)(float *w, float *m, float *v, const float *g, size_t n,
		      const struct cpu_adamw *h);
	void (*rmsnorm)(float *out, const float *x, const float *w, int n, float eps);
	void (*to_bf16)(uint16_t *xb, const float *x, int n);
	/* cpu_quantize_act, bit for bit. */
	void (*quantize_act)(const float *x, int K, struct cpu_xq *xq);
	/* out[m] (+)= dot(row m of w, x) for m in [m0, m1): w is (M, K) in type t, any
	 * but BF16 (the matmuls above), rows eng_row_bytes(t, K) apart; x from
	 * cpu_quantize_act (K a multiple of the type's block). Decode's product. */
	void (*qmatvec)(enum eng_dtype t, float *out, const void *w, const struct cpu_xq *x, int K,
			int m0, int m1, bool acc);
	/* dst[0..K) = one row of K weights of type t (any but BF16) rounded to bf16:
	 * prefill's weights for the panel kernels. */
	void (*dequant_bf16)(enum eng_dtype t, const void *w, uint16_t *dst, int K);
	/* The same row as fp32 in this ISA's packed order (exact: no rounding), and
	 * out[t*ldo + r] (+)= sum_k xp[t*ldx + k] * w[r*K + k] for t < n, r < rows <= 64
	 * over such rows: prefill over the exact dequantized weights. */
	void (*dequant_f32p)(enum eng_dtype t, const void *w, float *dst, int K);
	void (*matmul_f32w)(float *out, int ldo, const float *xp, int ldx, int n, const float *w,
			    int K, int rows, bool acc);
	/* Prefill in integers over the block-quantized types (NULL where not written):
	 * qpack repacks `rows` (<= 64) rows of rb bytes each into a panel of
	 * cpu_qpanel_bytes(K), and qgemm sets out[t*ldo + r] (or adds, acc) to the
	 * product of row r with token t's activations x[t] (quantized as for qmatvec),
	 * for t < n, r < rows: prefill rounds its activations as decode does. */
	void (*qpack)(enum eng_dtype t, const void *w, size_t rb, int rows, int K, uint8_t *panel);
	void (*qgemm)(enum eng_dtype t, float *out, int ldo, const struct cpu_xq *x, int n,
		      const uint8_t *panel, int K, int rows, bool acc);
};

/* Each instruction set's table, in its own file (kernels_avx512.c, kernels_avx2.c;
 * the portable C one is in kernels.c). x86-64 only. */
extern const struct cpu_kernels cpu_kernels_avx512, cpu_kernels_avx512bf16, cpu_kernels_amx,
	cpu_kernels_avx2;

/* The best ISA this CPU supports, and its kernels (CPU_ISA_C always works). */
enum cpu_isa cpu_isa_best(void);
const struct cpu_kernels *cpu_kernels_get(enum cpu_isa isa);
/* Whether this CPU can run `isa`. */
bool cpu_isa_supported(enum cpu_isa isa);
/* The ISA whose kernels are called `name` ("c", "avx2", "avx512", "avx512bf16",
 * "amx"). */
bool cpu_isa_from_name(const char *name, enum cpu_isa *isa);

/* Fills xq (whose arrays hold K, K/32 and K/16 elements) from the K values x (in
 * natural order; x must outlive xq's use). Blocks of 32 only: a tail is left out. */
void cpu_quantize_act(const float *x, int K, struct cpu_xq *xq);
/* The portable qmatvec, and one row's dot product (the tests' reference). */
void cpu_qmatvec_c(enum eng_dtype t, float *out, const void *w, const struct cpu_xq *x, int K,
		   int m0, int m1, bool acc);
float cpu_qdot_c(enum eng_dtype t, const void *row, const struct cpu_xq *x, int K);
/* The AVX2 quantize_act and qmatvec (kernels_quant_avx2.c), which the AVX-512 tables
 * share. */
void cpu_quantize_act_avx2(const float *x, int K, struct cpu_xq *xq);
void cpu_qmatvec_avx2(enum eng_dtype t, float *out, const void *w, const struct cpu_xq *x, int K,
		      int m0, int m1, bool acc);

void cpu_dequant_bf16_c(enum eng_dtype t, const void *w, uint16_t *dst, int K);
/* A row dequantized to fp32 and packed for block size `pack`. */
void cpu_dequant_f32p(enum eng_dtype t, const void *w, float *dst, int K, int pack);
void cpu_dequant_f32p_c(enum eng_dtype t, const void *w, float *dst, int K);
void cpu_dequant_f32p_avx2(enum eng_dtype t, const void *w, float *dst, int K);
void cpu_matmul_f32w_c(float *out, int ldo, const float *xp, int ldx, int n, const float *w, int K,
		       int rows, bool acc);
/* cpu_dequant_f32p_avx2 in the packed order of the AVX-512 tables (pack 32). */
void cpu_dequant_f32p32_avx2(enum eng_dtype t, const void *w, float *dst, int K);
void cpu_matmul_f32w_avx2(float *out, int ldo, const float *xp, int ldx, int n, const float *w,
			  int K, int rows, bool acc);
void cpu_dequant_bf16_avx2(enum eng_dtype t, const void *w, uint16_t *dst, int K);
/* The integer prefill (kernels_qgemm_avx2.c) and the bytes of its panel. */
size_t cpu_qpanel_bytes(int K);
void cpu_qpack_avx2(enum eng_dtype t, const void *w, size_t rb, int rows, int K, uint8_t *panel);
void cpu_qgemm_avx2(enum eng_dtype t, float *out, int ldo, const struct cpu_xq *x, int n,
		    const uint8_t *panel, int K, int rows, bool acc);

/* Undoes cpu_pack_row: the natural order of a packed row. */
void cpu_unpack_row(float *x, const float *xp, int K, int pack);

/* Rounds one row of K floats to bf16, to nearest even (the portable to_bf16). */
void cpu_bf16_row(uint16_t *xb, const float *x, int K);

/* Packs one row of K activations for kernels with block size `pack`. */
void cpu_pack_row(float *xp, const float *x, int K, int pack);

/* ---- element-wise steps in portable C (the C ISA's table entries) ------------- */

/* out[i] = x[i] / rms(x) * w[i] for i < n; out may equal x. */
void cpu_rmsnorm(float *out, const float *x, const float *w, int n, float eps);
/* In-place rotate-half RoPE of one head (hd even) with cos/sin rows of hd/2. */
void cpu_rope(float *x, const float *cos, const float *sin, int hd);
/* In-place softmax of scale * s[0..n); fp32 throughout, max subtracted first. lse: NULL,
 * or where the log of its normaliser goes, log sum_i exp(scale * s[i]) (the loss's
 * log-sum-exp; attention's rows need none). */
void cpu_softmax(float *s, int n, float scale, double *lse);
/* g[i] = silu(g[i]) * u[i]. */
void cpu_swiglu(float *g, const float *u, int n);
void cpu_swiglu_back(float *dh, float *du, const float *g, const float *u, int n);
double cpu_scale_sq(float *g, size_t n, float scale);
/* AdamW as torch.optim.AdamW: w = w * decay; m = b1 m + c1 g;
 * v = b2 v + c2 g g; w -= step * m / (sqrt(v) * rbc2 + eps). */
void cpu_adamw_c(float *w, float *m, float *v, const float *g, size_t n,
		 const struct cpu_adamw *h);

#endif
