/* test_config.c — config.json parsing and validation, parameter and byte arithmetic. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "engine/engine.h"
#include "src/base/err.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>

/* Qwen3-8B's published config.json (the fields that matter). */
static const char base_json[] =
	"{\"architectures\": [\"Qwen3ForCausalLM\"], \"attention_bias\": false,"
	" \"bos_token_id\": 151643, \"eos_token_id\": 151645, \"head_dim\": 128,"
	" \"hidden_act\": \"silu\", \"hidden_size\": 4096, \"intermediate_size\": 12288,"
	" \"max_position_embeddings\": 40960, \"model_type\": \"qwen3\","
	" \"num_attention_heads\": 32, \"num_hidden_layers\": 36, \"num_key_value_heads\": 8,"
	" \"rms_norm_eps\": 1e-06, \"rope_scaling\": null, \"rope_theta\": 1000000,"
	" \"sliding_window\": null, \"tie_word_embeddings\": false,"
	" \"torch_dtype\": \"bfloat16\", \"use_sliding_window\": false, \"vocab_size\": 151936}";

/* Parses base_json with `key` set to the JSON `value` (NULL: key removed). */
static int parse_with(const char *key, const char *value, struct eng_config *cfg)
{
	json_t *root = json_loads(base_json, 0, NULL);
	assert_non_null(root);
	if (key && value) {
		json_t *v = json_loads(value, JSON_DECODE_ANY, NULL);
		assert_non_null(v);
		json_object_set_new(root, key, v);
	} else if (key) {
		json_object_del(root, key);
	}
	char *text = json_dumps(root, 0);
	int rc = eng_config_parse(text, strlen(text), "dir/config.json", cfg);
	free(text);
	json_decref(root);
	return rc;
}

/* The parse fails and the message names the file and `field`. */
static void refused(const char *key, const char *value, const char *field)
{
	struct eng_config cfg;
	assert_int_equal(parse_with(key, value, &cfg), -1);
	const char *msg = err_msg();
	if (!strstr(msg, "dir/config.json") || !strstr(msg, field))
		fail_msg("message '%s' should name dir/config.json and '%s'", msg, field);
}

static void test_qwen3_8b(void **state)
{
	(void)state;
	struct eng_config c;
	assert_int_equal(parse_with(NULL, NULL, &c), 0);
	assert_int_equal(c.vocab_size, 151936);
	assert_int_equal(c.hidden_size, 4096);
	assert_int_equal(c.intermediate_size, 12288);
	assert_int_equal(c.num_layers, 36);
	assert_int_equal(c.num_heads, 32);
	assert_int_equal(c.num_kv_heads, 8);
	assert_int_equal(c.head_dim, 128);
	assert_true(c.rms_norm_eps == 1e-6);
	assert_true(c.rope_theta == 1e6);
	assert_string_equal(c.rope_type, "default");
	assert_true(c.rope_factor == 1);
	assert_int_equal(c.max_position_embeddings, 40960);
	assert_false(c.tie_word_embeddings);
	assert_int_equal(c.dtype, ENG_BF16);
	assert_int_equal(c.bos_token_id, 151643);
	assert_int_equal(c.eos_token_id, 151645);

	/* 8.19B parameters, 16.4 GB in bf16, 144 KiB of KV per token */
	struct eng_param_counts p;
	eng_count_params(&c, &p);
	assert_int_equal(p.embedding, 151936LL * 4096);
	assert_int_equal(p.lm_head, 151936LL * 4096);
	assert_int_equal(p.attn_q, 36LL * 4096 * 4096);
	assert_int_equal(p.attn_k, 36LL * 1024 * 4096);
	assert_int_equal(p.qk_norm, 36LL * 256);
	assert_int_equal(p.layer_norms, 36LL * 8192);
	assert_int_equal(p.mlp_down, 36LL * 12288 * 4096);
	assert_int_equal(p.total, 8190735360LL);
	assert_int_equal(p.non_embedding, 8190735360LL - 2 * 151936LL * 4096);
	assert_int_equal(eng_kv_bytes_per_token(&c, 2), 147456);
	assert_int_equal(eng_kv_bytes_per_token(&c, 4), 2 * 147456);
	assert_int_equal(eng_decode_weight_bytes(&c, 2),
			 2 * (size_t)(p.non_embedding + p.embedding + 4096));
}

static void test_defaults_and_variants(void **state)
{
	(void)state;
	struct eng_config c;
	/* Absent keys: Qwen3Config's defaults (head_dim 128 whatever hidden / heads, 32 KV
	 * heads, 32,768 positions). */
	assert_int_equal(parse_with("head_dim", NULL, &c), 0);
	assert_int_equal(c.head_dim, 128);
	assert_int_equal(parse_with("max_position_embeddings", NULL, &c), 0);
	assert_int_equal(c.max_position_embeddings, 32768);
	refused("head_dim", "null", "head_dim");
	/* tie_word_embeddings absent: false (Qwen3Config default) */
	assert_int_equal(parse_with("tie_word_embeddings", NULL, &c), 0);
	assert_false(c.tie_word_embeddings);
	assert_int_equal(parse_with("tie_word_embeddings", "true", &c), 0);
	assert_true(c.tie_word_embeddings);
	/* num_key_value_heads absent: 32, Qwen3Config's default */
	assert_int_equal(parse_with("num_key_value_heads", NULL, &c), 0);
	assert_int_equal(c.num_kv_heads, 32);
	/* eos as a list: the first id */
	assert_int_equal(parse_with("eos_token_id", "[151645, 151643]", &c), 0);
	assert_int_equal(c.eos_token_id, 151645);
	assert_int_equal(parse_with("eos_token_id", "[]", &c), 0); /* as transformers: none */
	assert_int_equal(c.eos_token_id, -1);
	assert_int_equal(parse_with("bos_token_id", "null", &c), 0);
	assert_int_equal(c.bos_token_id, -1);
	assert_int_equal(parse_with("torch_dtype", "\"float16\"", &c), 0);
	assert_int_equal(c.dtype, ENG_F16);
	assert_int_equal(parse_with("torch_dtype", "\"float32\"", &c), 0);
	assert_int_equal(c.dtype, ENG_F32);
	assert_int_equal(parse_with("architectures", NULL, &c), 0);
	assert_int_equal(parse_with("model_type", NULL, &c), 0);
	/* rope_theta given as a real */
	assert_int_equal(parse_with("rope_theta", "1000000.0", &c), 0);
	assert_true(c.rope_theta == 1e6);
}

static void test_rope_scaling(void **state)
{
	(void)state;
	struct eng_config c;
	assert_int_equal(parse_with("rope_scaling",
				    "{\"rope_type\": \"yarn\", \"factor\": 4.0,"
				    " \"original_max_position_embeddings\": 32768}",
				    &c),
			 0);
	assert_string_equal(c.rope_type, "yarn");
	assert_true(c.rope_factor == 4.0);
	assert_int_equal(c.rope_original_max_position, 32768);
	/* older configs say "type" */
	assert_int_equal(parse_with("rope_scaling", "{\"type\": \"yarn\", \"factor\": 2}", &c), 0);
	assert_string_equal(c.rope_type, "yarn");
	assert_int_equal(c.rope_original_max_position, 0); /* absent */
	assert_int_equal(parse_with("rope_scaling", "{\"rope_type\": \"default\"}", &c), 0);
	assert_string_equal(c.rope_type, "default");
	assert_int_equal(
		parse_with("rope_scaling", "{\"rope_type\": \"linear\", \"factor\": 2.5}", &c), 0);
	assert_string_equal(c.rope_type, "linear");
	assert_true(c.rope_factor == 2.5);
	refused("rope_scaling", "{\"rope_type\": \"linear\"}", "rope_scaling.factor");
	refused("rope_scaling", "{\"rope_type\": \"dynamic\", \"factor\": 2}", "rope_type");
	refused("rope_scaling", "{\"rope_type\": \"yarn\"}", "rope_scaling.factor");
	refused("rope_scaling", "{\"rope_type\": \"yarn\", \"factor\": 0.5}",
		"rope_scaling.factor");
	refused("rope_scaling",
		"{\"rope_type\": \"yarn\", \"factor\": 2,"
		" \"original_max_position_embeddings\": 100000000}",
		"rope_scaling.original_max_position_embeddings");
	/* the optional YaRN fields, defaulted as transformers does (a beta of 0 too) */
	assert_true(c.rope_attention_factor == 0 && c.rope_beta_fast == 32 &&
		    c.rope_beta_slow == 1 && c.rope_mscale == 0 && c.rope_mscale_all_dim == 0);
	assert_int_equal(parse_with("rope_scaling",
				    "{\"rope_type\": \"yarn\", \"factor\": 4.0,"
				    " \"attention_factor\": 1.25, \"beta_fast\": 16.0,"
				    " \"beta_slow\": 2, \"mscale\": 0.7, \"mscale_all_dim\": 1.0}",
				    &c),
			 0);
	assert_true(c.rope_attention_factor == 1.25 && c.rope_beta_fast == 16 &&
		    c.rope_beta_slow == 2 && c.rope_mscale == 0.7 && c.rope_mscale_all_dim == 1);
	assert_int_equal(parse_with("rope_scaling",
				    "{\"rope_type\": \"yarn\", \"factor\": 4.0,"
				    " \"beta_fast\": 0, \"beta_slow\": null}",
				    &c),
			 0);
	assert_true(c.rope_beta_fast == 32 && c.rope_beta_slow == 1);
	refused("rope_scaling",
		"{\"rope_type\": \"yarn\", \"factor\": 2, \"beta_fast\": 1.0,"
		" \"beta_slow\": 4.0}",
		"rope_scaling.beta_fast");
	refused("rope_scaling",
		"{\"rope_type\": \"yarn\", \"factor\": 2,"
		" \"attention_factor\": -1.0}",
		"rope_scaling.attention_factor");
	refused("rope_scaling", "{\"rope_type\": \"yarn\", \"factor\": 2, \"mscale\": \"x\"}",
		"rope_scaling.mscale");
	refused("rope_scaling", "{\"rope_type\": \"yarn\", \"factor\": 2, \"truncate\": false}",
		"rope_scaling.truncate: false");
	refused("rope_scaling", "{\"rope_type\": \"yarn\", \"factor\": 2, \"truncate\": 1}",
		"rope_scaling.truncate: must be");
	assert_int_equal(parse_with("rope_scaling",
				    "{\"rope_type\": \"yarn\", \"factor\": 2, \"truncate\": true}",
				    &c),
			 0);
	/* YaRN's correction range divides by ln(rope_theta) */
	json_t *root = json_loads(base_json, 0, NULL);
	json_object_set_new(root, "rope_theta", json_real(1));
	json_object_set_new(root, "rope_scaling",
			    json_pack("{s:s, s:f}", "rope_type", "yarn", "factor", 4.0));
	char *text = json_dumps(root, 0);
	assert_int_equal(eng_config_parse(text, strlen(text), "dir/config.json", &c), -1);
	assert_non_null(strstr(err_msg(), "dir/config.json: rope_theta 1"));
	free(text);
	json_decref(root);
	refused("rope_scaling", "{\"factor\": 2}", "rope_type");
	refused("rope_scaling", "\"yarn\"", "rope_scaling");
}

/* base_json as transformers 5 writes it: rope_theta and rope_scaling gone, `params`
 * (JSON) as rope_parameters, and `theta` (JSON, or NULL) as a top-level rope_theta. */
static int parse_v5(const char *params, const char *theta, struct eng_config *cfg)
{
	json_t *root = json_loads(base_json, 0, NULL);
	assert_non_null(root);
	json_object_del(root, "rope_scaling");
	json_object_del(root, "rope_theta");
	if (theta)
		json_object_set_new(root, "rope_theta", json_loads(theta, JSON_DECODE_ANY, NULL));
	json_object_set_new(root, "rope_parameters", json_loads(params, JSON_DECODE_ANY, NULL));
	char *text = json_dumps(root, 0);
	int rc = eng_config_parse(text, strlen(text), "dir/config.json", cfg);
	free(text);
	json_decref(root);
	return rc;
}

/* The context a model's positions are made for: YaRN's factor times the original
 * context, never below max_position_embeddings (base_json has 40960). */
static void test_max_context(void **state)
{
	(void)state;
	struct eng_config c;
	assert_int_equal(parse_with("rope_scaling", NULL, &c), 0);
	assert_int_equal(eng_max_context(&c), 40960);
	assert_string_equal(eng_max_context_source(&c), "max_position_embeddings");
	assert_int_equal(parse_with("rope_scaling",
				    "{\"rope_type\": \"yarn\", \"factor\": 4.0,"
				    " \"original_max_position_embeddings\": 32768}",
				    &c),
			 0);
	assert_int_equal(eng_max_context(&c), 131072);
	assert_string_equal(eng_max_context_source(&c),
			    "YaRN's factor x original_max_position_embeddings");
	/* without the original context, max_position_embeddings is the original */
	assert_int_equal(parse_with("rope_scaling", "{\"rope_type\": \"yarn\", \"factor\": 2}", &c),
			 0);
	assert_int_equal(eng_max_context(&c), 81920);
	/* a factor that reaches less than max_position_embeddings does not shorten it */
	assert_int_equal(parse_with("rope_scaling",
				    "{\"rope_type\": \"yarn\", \"factor\": 1.5,"
				    " \"original_max_position_embeddings\": 4096}",
				    &c),
			 0);
	assert_int_equal(eng_max_context(&c), 40960);
	/* linear scaling: max_position_embeddings, as transformers configs give it */
	assert_int_equal(
		parse_with("rope_scaling", "{\"rope_type\": \"linear\", \"factor\": 4}", &c), 0);
	assert_int_equal(eng_max_context(&c), 40960);
	/* capped where the product would overflow what the engine addresses */
	assert_int_equal(parse_with("rope_scaling",
				    "{\"rope_type\": \"yarn\", \"factor\": 1000,"
				    " \"original_max_position_embeddings\": 1000000}",
				    &c),
			 0);
	assert_int_equal(eng_max_context(&c), ENG_MAX_CONTEXT);
}

static void test_rope_parameters(void **state)
{
	(void)state;
	struct eng_config c;
	/* rope_type defaults to "default"; rope_theta to the top-level one, then 10000; a
	   rope_parameters keyed by layer type gives the full-attention layers' */
	struct {
		const char *params, *theta, *type;
		double want_theta, factor;
	} ok[] = {
		{"{\"rope_theta\": 1000000, \"rope_type\": \"default\"}", NULL, "default", 1e6, 1},
		{"{\"rope_theta\": 500000.0}", NULL, "default", 5e5, 1},
		{"{\"rope_type\": \"default\"}", "2000000", "default", 2e6, 1},
		{"{}", NULL, "default", 10000, 1},
		{"{\"rope_type\": \"default\", \"rope_theta\": 3e6}", "2e6", "default", 3e6, 1},
		{"{\"rope_type\": \"yarn\", \"rope_theta\": 1e6, \"factor\": 4.0,"
		 " \"original_max_position_embeddings\": 32768}",
		 NULL, "yarn", 1e6, 4},
		{"{\"full_attention\": {\"rope_type\": \"linear\", \"factor\": 2,"
		 " \"rope_theta\": 40000}}",
		 NULL, "linear", 4e4, 2},
	};
	for (size_t i = 0; i < sizeof ok / sizeof *ok; i++) {
		if (parse_v5(ok[i].params, ok[i].theta, &c) < 0)
			fail_msg("rope_parameters %s refused: %s", ok[i].params, err_msg());
		assert_string_equal(c.rope_type, ok[i].type);
		assert_true(c.rope_theta == ok[i].want_theta && c.rope_factor == ok[i].factor);
	}
	assert_int_equal(c.rope_original_max_position, 0);
	assert_int_equal(parse_v5(ok[5].params, NULL, &c), 0);
	assert_int_equal(c.rope_original_max_position, 32768);
	/* a non-empty rope_scaling is read first, as transformers 5 does */
	json_t *root = json_loads(base_json, 0, NULL);
	json_object_set_new(root, "rope_scaling",
			    json_pack("{s:s, s:f}", "rope_type", "linear", "factor", 3.0));
	json_object_set_new(root, "rope_parameters", json_pack("{s:s}", "rope_type", "default"));
	char *text = json_dumps(root, 0);
	assert_int_equal(eng_config_parse(text, strlen(text), "dir/config.json", &c), 0);
	assert_string_equal(c.rope_type, "linear");
	assert_true(c.rope_theta == 1e6 && c.rope_factor == 3);
	free(text);
	json_decref(root);
	/* refused, naming the field */
	struct {
		const char *params, *field;
	} bad[] = {
		{"\"default\"", "rope_parameters must be an object"},
		{"{\"rope_type\": \"dynamic\", \"factor\": 2}",
		 "rope_parameters.rope_type: dynamic"},
		{"{\"rope_type\": \"yarn\"}", "rope_parameters.factor is missing"},
		{"{\"rope_theta\": -1}", "rope_parameters.rope_theta"},
		{"{\"rope_theta\": 1e6, \"partial_rotary_factor\": 0.5}",
		 "rope_parameters.partial_rotary_factor"},
		{"{\"sliding_attention\": {\"rope_theta\": 10000}}",
		 "rope_parameters.sliding_attention: only full-attention layers"},
	};
	for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
		assert_int_equal(parse_v5(bad[i].params, NULL, &c), -1);
		if (!strstr(err_msg(), "dir/config.json") || !strstr(err_msg(), bad[i].field))
			fail_msg("message '%s' should name dir/config.json and '%s'", err_msg(),
				 bad[i].field);
	}
}

static void test_architecture(void **state)
{
	(void)state;
	refused("architectures", "[\"Qwen3MoeForCausalLM\"]", "Qwen3MoeForCausalLM");
	refused("architectures", "[\"LlamaForCausalLM\"]", "architectures");
	refused("architectures", "[]", "architectures");
	refused("architectures", "\"Qwen3ForCausalLM\"", "architectures");
	refused("model_type", "\"qwen3_moe\"", "model_type");
	refused("model_type", "\"llama\"", "model_type");
	refused("attention_bias", "true", "attention_bias");
	refused("hidden_act", "\"gelu\"", "hidden_act");
	refused("use_sliding_window", "true", "use_sliding_window");

	struct eng_config c;
	const char *none = "{\"vocab_size\": 10}";
	assert_int_equal(eng_config_parse(none, strlen(none), "x/config.json", &c), -1);
	assert_non_null(strstr(err_msg(), "x/config.json"));
}

static void test_absurd_values(void **state)
{
	(void)state;
	refused("num_hidden_layers", "1000000000000", "num_hidden_layers");
	refused("num_hidden_layers", "0", "num_hidden_layers");
	refused("num_hidden_layers", "-3", "num_hidden_layers");
	refused("num_hidden_layers", "2.5", "num_hidden_layers");
	refused("num_hidden_layers", "\"36\"", "num_hidden_layers");
	refused("num_hidden_layers", NULL, "num_hidden_layers");
	refused("vocab_size", "100000000000", "vocab_size");
	refused("vocab_size", "0", "vocab_size");
	refused("hidden_size", "0", "hidden_size");
	refused("hidden_size", "99999999999999999", "hidden_size");
	refused("intermediate_size", "-1", "intermediate_size");
	refused("head_dim", "0", "head_dim");
	refused("head_dim", "127", "head_dim");
	refused("num_attention_heads", "0", "num_attention_heads");
	refused("num_key_value_heads", "0", "num_key_value_heads");
	refused("num_key_value_heads", "7", "num_key_value_heads");
	refused("num_key_value_heads", "64", "num_key_value_heads");
	refused("rms_norm_eps", "0", "rms_norm_eps");
	refused("rms_norm_eps", "-1e-6", "rms_norm_eps");
	refused("rope_theta", "0", "rope_theta");
	refused("rope_theta", "1e300", "rope_theta");
	refused("max_position_embeddings", "0", "max_position_embeddings");
	refused("max_position_embeddings", "100000000000", "max_position_embeddings");
	refused("tie_word_embeddings", "1", "tie_word_embeddings");
	refused("torch_dtype", "\"int8\"", "torch_dtype");
	refused("torch_dtype", "7", "torch_dtype");
	refused("eos_token_id", "151936", "eos_token_id");
	refused("eos_token_id", "[151645, -5]", "eos_token_id[...]"); /* every id of a list */
	refused("eos_token_id", "[\"x\"]", "eos_token_id[...]");
	refused("bos_token_id", "-1", "bos_token_id");
	/* each limit alone is fine but together they describe an impossible model */
	struct eng_config c;
	json_t *root = json_loads(base_json, 0, NULL);
	json_object_set_new(root, "num_hidden_layers", json_integer(1024));
	json_object_set_new(root, "hidden_size", json_integer(1 << 20));
	json_object_set_new(root, "intermediate_size", json_integer(1 << 20));
	char *text = json_dumps(root, 0);
	assert_int_equal(eng_config_parse(text, strlen(text), "big/config.json", &c), -1);
	assert_non_null(strstr(err_msg(), "parameters"));
	free(text);
	json_decref(root);
	/* head_dim absent: 128 as in transformers, not hidden / heads (1024 / 16 = 64 in
	 * Qwen3-0.6B, whose head_dim is 128), nor refused when heads do not divide hidden */
	const int heads[][3] = {{1024, 16, 8}, {4096, 2, 2}, {4096, 30, 6}};
	for (size_t i = 0; i < sizeof heads / sizeof heads[0]; i++) {
		root = json_loads(base_json, 0, NULL);
		json_object_del(root, "head_dim");
		json_object_set_new(root, "hidden_size", json_integer(heads[i][0]));
		json_object_set_new(root, "num_attention_heads", json_integer(heads[i][1]));
		json_object_set_new(root, "num_key_value_heads", json_integer(heads[i][2]));
		text = json_dumps(root, 0);
		assert_int_equal(eng_config_parse(text, strlen(text), "d/config.json", &c), 0);
		assert_int_equal(c.head_dim, 128);
		free(text);
		json_decref(root);
	}
	/* num_key_value_heads null: one per query head (16 here, not the default 32) */
	root = json_loads(base_json, 0, NULL);
	json_object_set_new(root, "num_key_value_heads", json_null());
	json_object_set_new(root, "num_attention_heads", json_integer(16));
	text = json_dumps(root, 0);
	assert_int_equal(eng_config_parse(text, strlen(text), "k/config.json", &c), 0);
	assert_int_equal(c.num_kv_heads, 16);
	free(text);
	json_decref(root);
	/* num_key_value_heads absent: 32, which 16 query heads cannot share */
	root = json_loads(base_json, 0, NULL);
	json_object_del(root, "num_key_value_heads");
	json_object_set_new(root, "num_attention_heads", json_integer(16));
	text = json_dumps(root, 0);
	assert_int_equal(eng_config_parse(text, strlen(text), "k/config.json", &c), -1);
	assert_non_null(strstr(err_msg(), "num_key_value_heads 32"));
	free(text);
	json_decref(root);
}

static void test_invalid_json(void **state)
{
	(void)state;
	struct eng_config c;
	static const char *bad[] = {"",
				    "{",
				    "[1,2]",
				    "null",
				    "{\"a\": }",
				    "{\"vocab_size\": 1,"
				    " \"vocab_size\": 2}",
				    "\xff\xfe"};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		assert_int_equal(eng_config_parse(bad[i], strlen(bad[i]), "m/config.json", &c), -1);
		assert_non_null(strstr(err_msg(), "m/config.json"));
	}
	/* not NUL-terminated: only len bytes are read */
	char buf[4] = {'{', '}', 'x', 'x'};
	assert_int_equal(eng_config_parse(buf, 2, "m/config.json", &c), -1);
	assert_int_equal(eng_config_load("/nonexistent-dir-qwenchat", &c), -1);
	assert_non_null(strstr(err_msg(), "config.json"));
}

static void test_dtypes(void **state)
{
	(void)state;
	assert_int_equal(eng_dtype_size(ENG_BF16), 2);
	assert_int_equal(eng_dtype_size(ENG_F16), 2);
	assert_int_equal(eng_dtype_size(ENG_F32), 4);
	assert_string_equal(eng_dtype_name(ENG_BF16), "BF16");
	assert_string_equal(eng_dtype_name(ENG_F16), "F16");
	assert_string_equal(eng_dtype_name(ENG_F32), "F32");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_qwen3_8b),      cmocka_unit_test(test_defaults_and_variants),
		cmocka_unit_test(test_rope_scaling),  cmocka_unit_test(test_rope_parameters),
		cmocka_unit_test(test_max_context),   cmocka_unit_test(test_architecture),
		cmocka_unit_test(test_absurd_values), cmocka_unit_test(test_invalid_json),
		cmocka_unit_test(test_dtypes),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
