/* ftype.c — llama.cpp's quantization mixes: their names, the general.file_type a GGUF
 * in each says, and the type llama-quantize gives each tensor of a Qwen3 in it
 * (src/llama-quant.cpp, llama_tensor_get_type). */
#include "engine/ftype.h"

#include <strings.h>

static const struct {
	const char *name;
	enum eng_dtype base;
	int llama_ftype; /* general.file_type: llama.h's LLAMA_FTYPE_* */
} mixes[ENG_FTYPE_COUNT] = {
	[ENG_FTYPE_F32] = {"f32", ENG_F32, 0},
	[ENG_FTYPE_BF16] = {"bf16", ENG_BF16, 32},
	[ENG_FTYPE_Q8_0] = {"q8_0", ENG_Q8_0, 7},
	[ENG_FTYPE_Q6_K] = {"q6_k", ENG_Q6_K, 18},
	[ENG_FTYPE_Q5_K_M] = {"q5_k_m", ENG_Q5_K, 17},
	[ENG_FTYPE_Q4_K_M] = {"q4_k_m", ENG_Q4_K, 15},
	[ENG_FTYPE_Q4_0] = {"q4_0", ENG_Q4_0, 2},
	[ENG_FTYPE_Q4_1] = {"q4_1", ENG_Q4_1, 3},
	[ENG_FTYPE_Q5_0] = {"q5_0", ENG_Q5_0, 8},
	[ENG_FTYPE_Q5_1] = {"q5_1", ENG_Q5_1, 9},
	[ENG_FTYPE_Q2_K] = {"q2_k", ENG_Q2_K, 10},
	[ENG_FTYPE_Q3_K_S] = {"q3_k_s", ENG_Q3_K, 11},
	[ENG_FTYPE_Q3_K_M] = {"q3_k_m", ENG_Q3_K, 12},
	[ENG_FTYPE_Q3_K_L] = {"q3_k_l", ENG_Q3_K, 13},
	[ENG_FTYPE_Q4_K_S] = {"q4_k_s", ENG_Q4_K, 14},
	[ENG_FTYPE_Q5_K_S] = {"q5_k_s", ENG_Q5_K, 16},
	[ENG_FTYPE_F16] = {"f16", ENG_F16, 1},
};

int eng_ftype_parse(const char *name, enum eng_ftype *out)
{
	for (int f = ENG_FTYPE_NONE + 1; f < ENG_FTYPE_COUNT; f++)
		if (!strcasecmp(name, mixes[f].name)) {
			*out = (enum eng_ftype)f;
			return 0;
		}
	return -1;
}

const char *eng_ftype_name(enum eng_ftype f)
{
	return f > ENG_FTYPE_NONE && f < ENG_FTYPE_COUNT ? mixes[f].name : "?";
}

int eng_ftype_file_type(enum eng_ftype f)
{
	return mixes[f].llama_ftype;
}

/* llama-quant.cpp's use_more_bits: the first and last eighth of the layers, and
 * every third one between. */
static bool more_bits(int layer, int n)
{
	return layer < n / 8 || layer >= 7 * n / 8 || (layer - n / 8) % 3 == 2;
}

/* A type whose blocks do not divide the rows falls back as tensor_type_fallback
 * does: a K-quant to a 32-weight type, then F16; the 32-weight types have none (t is
 * returned, which the caller refuses, as llama-quantize stops there). */
static enum eng_dtype fallback(enum eng_dtype t, int64_t ncols)
{
	if (ncols % eng_dtype_block(t) == 0)
		return t;
	switch (t) {
	case ENG_Q2_K:
	case ENG_Q3_K: t = ENG_Q4_0; break;
	case ENG_Q4_K: t = ENG_Q5_0; break;
	case ENG_Q5_K: t = ENG_Q5_1; break;
	case ENG_Q6_K: t = ENG_Q8_0; break;
	default: return t;
	}
	return ncols % eng_dtype_block(t) == 0 ? t : ENG_F16;
}

const char *eng_role_gguf_name(enum eng_tensor_role role)
{
	static const char *const names[] = {
		[ENG_ROLE_EMBED] = "token_embd",   [ENG_ROLE_OUTPUT] = "output",
		[ENG_ROLE_NORM] = "norm",          [ENG_ROLE_ATTN_Q] = "attn_q",
		[ENG_ROLE_ATTN_K] = "attn_k",      [ENG_ROLE_ATTN_V] = "attn_v",
		[ENG_ROLE_ATTN_O] = "attn_output", [ENG_ROLE_FFN_GATE] = "ffn_gate",
		[ENG_ROLE_FFN_UP] = "ffn_up",      [ENG_ROLE_FFN_DOWN] = "ffn_down"};
	return names[role];
}

/* The attention value projection: the mixes that give it more bits. */
static enum eng_dtype attn_v_type(const struct eng_config *c, enum eng_ftype f, int layer,
				  enum eng_dtype t)
{
	switch (f) {
	case ENG_FTYPE_Q2_K: return c->num_heads / c->num_kv_heads >= 4 ? ENG_Q4_K : ENG_Q3_K;
	case ENG_FTYPE_Q3_K_M: return layer < 2 ? ENG_Q5_K : ENG_Q4_K;
	case ENG_FTYPE_Q3_K_L: return ENG_Q5_K;
	case ENG_FTYPE_Q4_K_M:
	case ENG_FTYPE_Q5_K_M: return more_bits(layer, c->num_layers) ? ENG_Q6_K : t;
	case ENG_FTYPE_Q4_K_S: return layer < 4 ? ENG_Q5_K : t;
	default: return t;
	}
}

/* The MLP's down projection. */
static enum eng_dtype ffn_down_type(const struct eng_config *c, enum eng_ftype f, int layer,
				    enum eng_dtype t)
{
	int n = c->num_layers;
	switch (f) {
	case ENG_FTYPE_Q2_K: return ENG_Q3_K;
	case ENG_FTYPE_Q3_K_M: return layer < n / 16 ? ENG_Q5_K : ENG_Q4_K;
	case ENG_FTYPE_Q3_K_L: return ENG_Q5_K;
	case ENG_FTYPE_Q4_K_M:
	case ENG_FTYPE_Q5_K_M: return more_bits(layer, n) ? ENG_Q6_K : t;
	case ENG_FTYPE_Q4_K_S: return layer < n / 8 ? ENG_Q5_K : t;
	default: return t;
	}
}

enum eng_dtype eng_quant_type(const struct eng_config *c, enum eng_ftype f,
			      enum eng_tensor_role role, int layer, int64_t ncols)
{
	enum eng_dtype t = mixes[f].base;
	if (role == ENG_ROLE_NORM)
		return ENG_F32; /* 1-D tensors are never quantized; convert writes them F32 */
	if (!eng_dtype_quantized(t))
		return t;
	if (role == ENG_ROLE_OUTPUT || (role == ENG_ROLE_EMBED && c->tie_word_embeddings)) {
		/* the lm_head: Q6_K unless the mix is Q8_0, Q8_0 when 256 does not divide */
		if (ncols % 256)
			return ENG_Q8_0;
		return t == ENG_Q8_0 ? t : ENG_Q6_K;
	}
	if (role == ENG_ROLE_ATTN_V)
		t = attn_v_type(c, f, layer, t);
	else if (role == ENG_ROLE_FFN_DOWN)
		t = ffn_down_type(c, f, layer, t);
	else if (role == ENG_ROLE_ATTN_O && f == ENG_FTYPE_Q2_K)
		t = ENG_Q3_K;
	else if (role == ENG_ROLE_ATTN_O && f == ENG_FTYPE_Q3_K_M)
		t = ENG_Q4_K;
	else if (role == ENG_ROLE_ATTN_O && f == ENG_FTYPE_Q3_K_L)
		t = ENG_Q5_K;
	return fallback(t, ncols);
}
