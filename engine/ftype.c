/* ftype.c — llama.cpp's quantization mixes: their names, the general.file_type a GGUF
 * in each says, and the type llama-quantize gives each tensor of a Qwen3 in it
 * (src/llama-quant.cpp, llama_tensor_get_type). */
#include "engine/ftype.h"
#include "src/base/err.h"

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
 * does (to the 32-weight types, then F16). */
static enum eng_dtype fallback(enum eng_dtype t, int64_t ncols)
{
	if (ncols % eng_dtype_block(t) == 0)
		return t;
	switch (t) {
	case ENG_Q4_K: t = ENG_Q5_0; break;
	case ENG_Q6_K: t = ENG_Q8_0; break;
	case ENG_Q5_K: /* llama.cpp falls back to Q5_1, a type qwenchat does not read */
		err_set("rows of %lld weights are not whole Q5_K blocks (llama.cpp would use "
			"Q5_1, which qwenchat does not support)",
			(long long)ncols);
		return ENG_DTYPE_COUNT;
	default: break;
	}
	return ncols % eng_dtype_block(t) == 0 ? t : ENG_F16;
}

enum eng_dtype eng_quant_type(const struct eng_config *c, enum eng_ftype f,
			      enum eng_tensor_role role, int layer, int64_t ncols)
{
	enum eng_dtype t = mixes[f].base;
	bool mix_m = f == ENG_FTYPE_Q4_K_M || f == ENG_FTYPE_Q5_K_M;
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
	if ((role == ENG_ROLE_ATTN_V || role == ENG_ROLE_FFN_DOWN) && mix_m &&
	    more_bits(layer, c->num_layers))
		t = ENG_Q6_K;
	return fallback(t, ncols);
}
