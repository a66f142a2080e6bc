/* quant.h — ggml's weight formats: fp16 and the block-quantized types of GGUF files
 * (Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, Q2_K, Q3_K, Q4_K, Q5_K, Q6_K; IQ4_NL and IQ4_XS read
 * only), converted to and from fp32 exactly as ggml's reference code (ggml-quants.c,
 * the *_ref functions) defines them, bit for bit.
 * The block layouts are ggml-common.h's; sizes and block lengths are engine.h's
 * eng_dtype_block and eng_dtype_block_bytes. */
#ifndef QWENCHAT_QUANT_H
#define QWENCHAT_QUANT_H

#include "engine/engine.h"

#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* IEEE half precision: exact widening; narrowing rounds to nearest even (as the F16C
 * instruction and ggml's GGML_FP32_TO_FP16 do), overflow to infinity. */
float quant_f16_to_f32(uint16_t h);
uint16_t quant_f32_to_f16(float f);

/* dst[0..n) = the n weights stored in src with type t (any eng_dtype; n a multiple
 * of the block length). ggml's dequantize_row_* for each type. */
void quant_dequantize_row(enum eng_dtype t, const void *src, float *dst, int64_t n);

/* Writes n floats (a multiple of the block length) into dst as type t (any
 * eng_dtype but IQ4_NL and IQ4_XS, which are read only; eng_row_bytes(t, n) bytes), as ggml's quantize_row_*_ref does without
 * an importance matrix, which is what llama-quantize writes: the same bytes. */
void quant_quantize_row(enum eng_dtype t, const float *src, void *dst, int64_t n);

/* Rows [r0, r0 + n) of t (rows of `cols` weights, any type) converted to `type` at
 * dst, one after the other (eng_row_bytes(type, cols) bytes each; cols a multiple of
 * type's block), dequantized and requantized as ggml's reference code does, by up to
 * `threads` threads (< 1: every CPU). --quant and qwenchat quantize both convert
 * through it. 0, or -1 (err_set) when out of memory or a row is not finite: a NaN or
 * an infinity in the source, or in what it becomes (a scale past fp16's range). */
int quant_convert_rows(const struct eng_tensor *t, int64_t cols, int64_t r0, int64_t n,
		       enum eng_dtype type, uint8_t *dst, int threads);

/* The 6-bit scale and min of sub-block j (0..7) of a Q4_K or Q5_K block, from its 12
 * packed bytes (ggml's get_scale_min_k4). */
void quant_k4_scale_min(int j, const uint8_t *q, int *sc, int *m);

/* The 16 scales of a Q3_K block, minus their offset 32 (-32..31), from its 12 packed
 * bytes: scale j's low 4 bits are the low (j < 8) or high nibble of byte j % 8, its
 * top 2 bits are bits 2(j / 4)..2(j / 4)+1 of byte 8 + j % 4. */
void quant_q3_k_scales(const uint8_t *s, int8_t out[16]);

/* The same scales before the offset is taken off (0..63), four to a little-endian
 * word: ggml's own unpacking, a few word operations per block where decode reads one
 * block per 256 weights (the vector kernels inline it). */
static inline void quant_q3_k_scale_words(const uint8_t *s, uint32_t w[4])
{
	uint32_t a0, a1, hi;
	memcpy(&a0, s, 4);
	memcpy(&a1, s + 4, 4);
	memcpy(&hi, s + 8, 4);
	w[0] = (a0 & 0x0f0f0f0f) | (hi & 0x03030303) << 4;
	w[1] = (a1 & 0x0f0f0f0f) | (hi >> 2 & 0x03030303) << 4;
	w[2] = (a0 >> 4 & 0x0f0f0f0f) | (hi >> 4 & 0x03030303) << 4;
	w[3] = (a1 >> 4 & 0x0f0f0f0f) | (hi >> 6 & 0x03030303) << 4;
}

/* The 16 non-uniform levels IQ4_NL and IQ4_XS indices pick (ggml's kvalues_iq4nl). */
extern const int8_t quant_iq4_levels[16];

/* The 6-bit scale of sub-block j (0..7) of an IQ4_XS block at b, minus 32. */
static inline int quant_iq4_xs_scale(const uint8_t *b, int j)
{
	int sh = b[2] | b[3] << 8;
	return ((b[4 + j / 2] >> (4 * (j % 2)) & 15) | (sh >> (2 * j) & 3) << 4) - 32;
}

#endif
