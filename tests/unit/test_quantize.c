/* test_quantize.c — the per-tensor types of qwenchat quantize's mixes against the ones
 * llama.cpp's llama-quantize chose for the same models (tests/golden/quantize-types.json:
 * two shapes, tied and untied, every mix), and the mix names. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/engine.h"
#include "engine/ftype.h"

/* The value of `--flag N` in a golden shape's mkmodel flags. */
static int flag(const char *flags, const char *name)
{
	const char *p = strstr(flags, name);
	if (!p)
		fail_msg("no %s in the shape '%s'", name, flags);
	return atoi(p + strlen(name));
}

/* A golden model's shape, from the mkmodel flags the file gives for it. */
static struct eng_config shape_of(const char *flags, bool tied)
{
	struct eng_config c = {0};
	c.vocab_size = flag(flags, "--vocab-size ");
	c.hidden_size = flag(flags, "--hidden-size ");
	c.intermediate_size = flag(flags, "--intermediate-size ");
	c.num_layers = flag(flags, "--layers ");
	c.num_heads = flag(flags, "--heads ");
	c.num_kv_heads = flag(flags, "--kv-heads ");
	c.head_dim = flag(flags, "--head-dim ");
	c.tie_word_embeddings = tied;
	return c;
}

/* The first golden shape, for the unit checks below. */
static struct eng_config shape(bool tied)
{
	return shape_of("--vocab-size 1024 --hidden-size 256 --intermediate-size 512 "
			"--layers 8 --heads 2 --kv-heads 1 --head-dim 128",
			tied);
}

/* A llama.cpp tensor name's role, layer and row length in that model. */
static enum eng_tensor_role role_of(const char *name, const struct eng_config *c, int *layer,
				    int64_t *ncols)
{
	static const struct {
		const char *part;
		enum eng_tensor_role role;
		int wide; /* rows of the intermediate size */
	} parts[] = {
		{"attn_norm", ENG_ROLE_NORM, 0},    {"attn_q_norm", ENG_ROLE_NORM, 0},
		{"attn_k_norm", ENG_ROLE_NORM, 0},  {"ffn_norm", ENG_ROLE_NORM, 0},
		{"attn_q", ENG_ROLE_ATTN_Q, 0},     {"attn_k", ENG_ROLE_ATTN_K, 0},
		{"attn_v", ENG_ROLE_ATTN_V, 0},     {"attn_output", ENG_ROLE_ATTN_O, 0},
		{"ffn_gate", ENG_ROLE_FFN_GATE, 0}, {"ffn_up", ENG_ROLE_FFN_UP, 0},
		{"ffn_down", ENG_ROLE_FFN_DOWN, 1},
	};
	char part[64];
	*layer = 0;
	*ncols = c->hidden_size;
	if (!strcmp(name, "token_embd.weight"))
		return ENG_ROLE_EMBED;
	if (!strcmp(name, "output.weight"))
		return ENG_ROLE_OUTPUT;
	if (!strcmp(name, "output_norm.weight"))
		return ENG_ROLE_NORM;
	if (sscanf(name, "blk.%d.%63[a-z_].weight", layer, part) != 2)
		fail_msg("unexpected tensor %s", name);
	for (size_t i = 0; i < sizeof parts / sizeof parts[0]; i++)
		if (!strcmp(part, parts[i].part)) {
			if (parts[i].wide)
				*ncols = c->intermediate_size;
			return parts[i].role;
		}
	fail_msg("unexpected tensor %s", name);
	return ENG_ROLE_NORM;
}

static void test_types_match_llama_quantize(void **state)
{
	(void)state;
	char path[4200];
	const char *src = getenv("TOP_SRCDIR");
	snprintf(path, sizeof path, "%s/tests/golden/quantize-types.json", src ? src : ".");
	json_error_t je;
	json_t *g = json_load_file(path, 0, &je), *mix, *tie, *type, *flags;
	assert_non_null(g);
	const char *mname, *tname, *tensor, *key;
	int checked = 0, mixes = 0;
	json_object_foreach(json_object_get(g, "shapes"), key, flags)
		json_object_foreach(json_object_get(g, key), mname, mix)
	{
		enum eng_ftype f;
		assert_int_equal(eng_ftype_parse(mname, &f), 0);
		mixes++;
		json_object_foreach(mix, tname, tie)
		{
			struct eng_config c =
				shape_of(json_string_value(flags), !strcmp(tname, "tie"));
			json_object_foreach(tie, tensor, type)
			{
				int layer;
				int64_t ncols;
				enum eng_tensor_role r = role_of(tensor, &c, &layer, &ncols);
				enum eng_dtype t = eng_quant_type(&c, f, r, layer, ncols);
				if (strcmp(eng_dtype_name(t), json_string_value(type)))
					fail_msg("%s %s %s: %s, llama-quantize chose %s", mname,
						 tname, tensor, eng_dtype_name(t),
						 json_string_value(type));
				checked++;
			}
		}
	}
	/* every quantized mix on both shapes: 8 layers (90 tensors tied, 91 untied), 16
	 * layers with 4 query heads per kv head (178, 179) */
	assert_int_equal(mixes, 2 * 14);
	assert_int_equal(checked, 14 * (90 + 91 + 178 + 179));
	json_decref(g);
}

/* Rows that the blocks do not divide fall back as llama.cpp does. */
static void test_fallbacks(void **state)
{
	(void)state;
	struct eng_config c = shape(false);
	assert_int_equal(eng_quant_type(&c, ENG_FTYPE_Q4_K_M, ENG_ROLE_ATTN_Q, 1, 96), ENG_Q5_0);
	assert_int_equal(eng_quant_type(&c, ENG_FTYPE_Q6_K, ENG_ROLE_ATTN_Q, 1, 96), ENG_Q8_0);
	assert_int_equal(eng_quant_type(&c, ENG_FTYPE_Q4_K_M, ENG_ROLE_OUTPUT, 0, 96), ENG_Q8_0);
	/* the 32-weight types have none: llama-quantize stops, and the row has no bytes */
	assert_int_equal(eng_quant_type(&c, ENG_FTYPE_Q8_0, ENG_ROLE_ATTN_Q, 1, 48), ENG_Q8_0);
	assert_int_equal(eng_row_bytes(ENG_Q8_0, 48), 0);
	assert_int_equal(eng_quant_type(&c, ENG_FTYPE_Q5_K_M, ENG_ROLE_ATTN_Q, 1, 96), ENG_Q5_1);
	assert_int_equal(eng_quant_type(&c, ENG_FTYPE_Q2_K, ENG_ROLE_ATTN_Q, 1, 96), ENG_Q4_0);
	assert_int_equal(eng_quant_type(&c, ENG_FTYPE_Q3_K_M, ENG_ROLE_FFN_UP, 1, 96), ENG_Q4_0);
	assert_int_equal(eng_quant_type(&c, ENG_FTYPE_Q4_1, ENG_ROLE_ATTN_Q, 1, 48), ENG_Q4_1);
	/* a K-quant falls back to a 32-weight type, then F16 */
	assert_int_equal(eng_quant_type(&c, ENG_FTYPE_Q4_K_M, ENG_ROLE_ATTN_Q, 1, 48), ENG_F16);
	assert_int_equal(eng_quant_type(&c, ENG_FTYPE_BF16, ENG_ROLE_ATTN_Q, 1, 96), ENG_BF16);
	assert_int_equal(eng_quant_type(&c, ENG_FTYPE_BF16, ENG_ROLE_NORM, 1, 96), ENG_F32);
}

static void test_names(void **state)
{
	(void)state;
	enum eng_ftype f;
	assert_int_equal(eng_ftype_parse("Q4_K_M", &f), 0);
	assert_int_equal(f, ENG_FTYPE_Q4_K_M);
	assert_string_equal(eng_ftype_name(f), "q4_k_m");
	assert_int_equal(eng_ftype_parse("q4_k", &f), -1);
	assert_int_equal(eng_ftype_parse("", &f), -1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_types_match_llama_quantize),
		cmocka_unit_test(test_fallbacks),
		cmocka_unit_test(test_names),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
