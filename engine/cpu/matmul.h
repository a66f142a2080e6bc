/* matmul.h — the CPU backend's matrix products, out = x @ W^T, over weights of any
 * stored type: bf16 straight into the ISA's kernels; the block-quantized types (and
 * F16/F32) by the integer matrix-vector kernels when there are few tokens (decode;
 * the exact path's references dequantize them as a prefill does, exact_decode),
 * and for a prefill 64 rows at a time either repacked for the ISA's integer kernels
 * (qgemm, where it has them) or dequantized to bf16 for the same panel kernels as
 * bf16 weights (to fp32 on the exact path). The work is split over the thread pool
 * by blocks of rows. */
#ifndef QWENCHAT_CPU_MATMUL_H
#define QWENCHAT_CPU_MATMUL_H

#include "engine/cpu/kernels.h"
#include "engine/cpu/pool.h"
#include "engine/engine.h"

/* Fewer tokens than this take the matrix-vector kernels over quantized weights,
 * one token at a time; more pay for dequantizing each weight once per chunk. */
#define CPU_QDIRECT 8

/* One product: out (n, M) = x (n, K) @ w^T, w (M, K); acc adds to out. */
struct cpu_mm {
	float *out;
	const struct eng_tensor *w;
	int M;
	bool acc;
};

/* What the products need, made once per backend state. */
struct cpu_matmul {
	const struct cpu_kernels *k;
	struct cpu_pool *pool;
	int widest;       /* the largest K */
	uint32_t *panels; /* (threads, panel_words): the panel kernels' scratch */
	size_t panel_words;
	/* (threads, 64, widest): a prefill's dequantized weight rows, in fp32 and packed
	 * on the exact path (wrows32), else in bf16 */
	uint16_t *wrows;
	float *wrows32;
	bool exact_decode; /* a few tokens' products over wrows32 too */
	/* (threads, cpu_qpanel_bytes(widest)): the integer prefill's repacked rows,
	 * where the ISA has qgemm and the path is not exact */
	uint8_t *qpanels;
	size_t qpanel_bytes;
	/* The quantized inputs of up to xq_rows tokens (CPU_QDIRECT, or a whole chunk
	 * for the integer prefill): xq[i] points into these, each token's arrays at a
	 * stride that keeps them 4-byte aligned (cpu_matmul_init) */
	float *xf;       /* (max(CPU_QDIRECT, threads), widest): natural-order input rows */
	int8_t *xq8;     /* (xq_rows, ~widest) */
	float *xd, *xds; /* (xq_rows, widest / 32 + 1) */
	int16_t *xs16;   /* (xq_rows, ~widest / 16 + 2) */
	struct cpu_xq *xq;
	int xq_rows;
	size_t bytes; /* allocated */
};

/* 0, or -1 (err_set) when out of memory. bf16_only (every matrix is bf16) skips the
 * quantized paths' buffers; chunk is the most tokens of one call.
 * exact: a prefill over F32, F16 and quantized weights multiplies them in fp32
 * (matmul_f32w, every kernel set has one), as the reference path does; else by the
 * ISA's integer kernels where it has them (qgemm, much faster than the exact path),
 * else rounded to bf16 for the bf16 kernels. exact_decode (with exact): fewer than
 * CPU_QDIRECT tokens take those fp32 products too, not the int8 matrix-vector ones. */
int cpu_matmul_init(struct cpu_matmul *c, const struct cpu_kernels *k, struct cpu_pool *pool,
		    int widest, int chunk, bool bf16_only, bool exact, bool exact_decode);
void cpu_matmul_free(struct cpu_matmul *c);

/* count (<= 3) products sharing one input of n rows of K: xp packed for the ISA
 * (kernels.h), or, when xb is not NULL, bf16 rows in natural order (the bf16
 * prefill). Every thread takes blocks of rows from every matrix. */
void cpu_matmul(struct cpu_matmul *c, const float *xp, const uint16_t *xb, int n, int K, int count,
		const struct cpu_mm *mm);

#endif
