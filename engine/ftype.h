/* ftype.h — llama.cpp's quantization mixes (enum eng_ftype, in engine.h because
 * eng_options names one): their names, and the type each tensor of a Qwen3 gets in a
 * mix, as llama-quantize chooses it. qwenchat quantize writes GGUF files with these
 * types and --quant quantizes a model in memory with them. */
#ifndef QWENCHAT_FTYPE_H
#define QWENCHAT_FTYPE_H

#include "engine/engine.h"

#include <stdint.h>

/* "f32", "bf16", "q8_0", "q6_k", "q5_k_m", "q5_k_s", "q5_1", "q5_0", "q4_k_m",
 * "q4_k_s", "q4_1", "q4_0", "q3_k_l", "q3_k_m", "q3_k_s", "q2_k" (any case) into *out;
 * -1 for anything else. */
int eng_ftype_parse(const char *name, enum eng_ftype *out);
const char *eng_ftype_name(enum eng_ftype f);
/* The quantized mixes' names, comma-separated, for messages and help. */
#define ENG_FTYPE_QUANT_NAMES                                                                  \
	"q8_0, q6_k, q5_k_m, q5_k_s, q5_1, q5_0, q4_k_m, q4_k_s, q4_1, q4_0, q3_k_l, q3_k_m, " \
	"q3_k_s, q2_k"
/* The general.file_type of a GGUF in mix f: llama.h's LLAMA_FTYPE_* value. */
int eng_ftype_file_type(enum eng_ftype f);

/* A tensor's part in the model, for the type choice. */
enum eng_tensor_role {
	ENG_ROLE_EMBED,
	ENG_ROLE_OUTPUT,
	ENG_ROLE_NORM,
	ENG_ROLE_ATTN_Q,
	ENG_ROLE_ATTN_K,
	ENG_ROLE_ATTN_V,
	ENG_ROLE_ATTN_O,
	ENG_ROLE_FFN_GATE,
	ENG_ROLE_FFN_UP,
	ENG_ROLE_FFN_DOWN,
};
/* The type a tensor of `role` in `layer` (0 for the others), with rows of `ncols`
 * weights, gets in mix f, as llama-quantize chooses it: a K-quant whose blocks do not
 * divide the rows falls back to a 32-weight type, then F16; the lm_head (and the tied
 * embedding) is Q8_0 whenever 256 does not divide its rows. Where even that type's
 * blocks do not divide them (a 32-weight type has no fallback), eng_row_bytes of the
 * result is 0: the caller refuses the model, as llama-quantize does. */
enum eng_dtype eng_quant_type(const struct eng_config *c, enum eng_ftype f,
			      enum eng_tensor_role role, int layer, int64_t ncols);

/* llama.cpp's name of a role's tensors ("attn_q", "token_embd"), for messages. */
const char *eng_role_gguf_name(enum eng_tensor_role role);

#endif
