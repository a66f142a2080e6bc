/* ftype.h — llama.cpp's quantization mixes (enum eng_ftype, in engine.h because
 * eng_options names one): their names, and the type each tensor of a Qwen3 gets in a
 * mix, as llama-quantize chooses it. qwenchat quantize writes GGUF files with these
 * types and --quant quantizes a model in memory with them. */
#ifndef QWENCHAT_FTYPE_H
#define QWENCHAT_FTYPE_H

#include "engine/engine.h"

#include <stdint.h>

/* "f32", "bf16", "q8_0", "q6_k", "q5_k_m", "q4_k_m", "q4_0" (any case) into *out;
 * -1 for anything else. */
int eng_ftype_parse(const char *name, enum eng_ftype *out);
const char *eng_ftype_name(enum eng_ftype f);
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
 * weights, gets in mix f; ENG_DTYPE_COUNT when no supported type fits its rows
 * (err_set). */
enum eng_dtype eng_quant_type(const struct eng_config *c, enum eng_ftype f,
			      enum eng_tensor_role role, int layer, int64_t ncols);

#endif
