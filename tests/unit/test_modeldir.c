/* test_modeldir.c — a checkpoint's small files: the embedded Qwen3 chat template
 * against the real tokenizer_config.json's (tests/golden), config.json read back by
 * the engine's parser field by field, generation_config.json, tokenizer_config.json
 * with the template added. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "engine/engine.h"
#include "src/base/err.h"
#include "src/base/fileio.h"
#include "src/train/modeldir.h"
#include "tests/unit/testutil.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void test_template_is_qwen3s(void **state)
{
	(void)state;
	char path[4096];
	snprintf(path, sizeof path, "%s/tests/golden/template-config-qwen3.json", tu_srcdir());
	json_error_t je;
	json_t *o = json_load_file(path, 0, &je);
	assert_non_null(o);
	const char *t = json_string_value(json_object_get(o, "chat_template"));
	assert_non_null(t);
	assert_string_equal(mdir_qwen3_template, t);
	json_decref(o);
}

static void roundtrip(const struct eng_config *c)
{
	char *text = mdir_config_json(c);
	assert_non_null(text);
	struct eng_config b;
	if (eng_config_parse(text, strlen(text), "config.json", &b))
		fail_msg("%s\n%s", err_msg(), text);
	assert_int_equal(b.vocab_size, c->vocab_size);
	assert_int_equal(b.hidden_size, c->hidden_size);
	assert_int_equal(b.intermediate_size, c->intermediate_size);
	assert_int_equal(b.num_layers, c->num_layers);
	assert_int_equal(b.num_heads, c->num_heads);
	assert_int_equal(b.num_kv_heads, c->num_kv_heads);
	assert_int_equal(b.head_dim, c->head_dim);
	assert_true(b.rms_norm_eps == c->rms_norm_eps);
	assert_true(b.rope_theta == c->rope_theta);
	assert_string_equal(b.rope_type, c->rope_type);
	assert_true(b.rope_factor == c->rope_factor);
	assert_int_equal(b.rope_original_max_position, c->rope_original_max_position);
	assert_true(b.rope_attention_factor == c->rope_attention_factor);
	assert_true(b.rope_beta_fast == c->rope_beta_fast);
	assert_true(b.rope_beta_slow == c->rope_beta_slow);
	assert_true(b.rope_mscale == c->rope_mscale);
	assert_true(b.rope_mscale_all_dim == c->rope_mscale_all_dim);
	assert_int_equal(b.max_position_embeddings, c->max_position_embeddings);
	assert_int_equal(b.tie_word_embeddings, c->tie_word_embeddings);
	assert_int_equal(b.dtype, c->dtype);
	assert_int_equal(b.bos_token_id, c->bos_token_id);
	assert_int_equal(b.eos_token_id, c->eos_token_id);
	free(text);
}

static void test_config(void **state)
{
	(void)state;
	struct eng_config c = {.vocab_size = 151936, .hidden_size = 1024, .intermediate_size = 3072,
			       .num_layers = 28, .num_heads = 16, .num_kv_heads = 8, .head_dim = 128,
			       .rms_norm_eps = 1e-6, .rope_theta = 1e6, .rope_factor = 1,
			       .rope_beta_fast = 32, .rope_beta_slow = 1,
			       .max_position_embeddings = 40960, .tie_word_embeddings = true,
			       .dtype = ENG_F32, .bos_token_id = 151643, .eos_token_id = 151645};
	snprintf(c.rope_type, sizeof c.rope_type, "default");
	roundtrip(&c);
	char *text = mdir_config_json(&c);
	assert_non_null(strstr(text, "\"rope_theta\": 1000000.0,"));
	assert_non_null(strstr(text, "\"rms_norm_eps\": 1e-06,"));
	assert_non_null(strstr(text, "\"torch_dtype\": \"float32\""));
	free(text);
	c.dtype = ENG_BF16;
	c.tie_word_embeddings = false;
	c.bos_token_id = c.eos_token_id = -1;
	snprintf(c.rope_type, sizeof c.rope_type, "yarn");
	c.rope_factor = 4;
	c.rope_original_max_position = 32768;
	c.rope_attention_factor = 0.8;
	c.rope_beta_fast = 16;
	c.rope_mscale = 0.707;
	roundtrip(&c);
	snprintf(c.rope_type, sizeof c.rope_type, "linear");
	c.rope_factor = 2.5;
	c.rope_original_max_position = 0;
	c.rope_attention_factor = 0;
	c.rope_beta_fast = 32;
	c.rope_mscale = 0;
	roundtrip(&c);
}

static void test_generation(void **state)
{
	(void)state;
	int eos[] = {7, 5};
	char *text = mdir_generation_json(5, eos, 2, 5, &mdir_qwen3_sampling);
	json_t *o = json_loads(text, 0, NULL);
	assert_non_null(o);
	assert_int_equal(json_integer_value(json_object_get(o, "bos_token_id")), 5);
	assert_int_equal(json_integer_value(json_array_get(json_object_get(o, "eos_token_id"), 0)), 7);
	assert_int_equal(json_integer_value(json_object_get(o, "pad_token_id")), 5);
	assert_true(json_real_value(json_object_get(o, "temperature")) == 0.6);
	assert_int_equal(json_integer_value(json_object_get(o, "top_k")), 20);
	assert_null(json_object_get(o, "min_p"));
	json_decref(o);
	free(text);
	/* a GGUF's float32 settings are written as the decimals they were, in key order */
	struct mdir_sampling s = {(float)0.7, (float)0.8, (float)0.05, (float)1.1, 40};
	text = mdir_generation_json(5, eos, 2, -1, &s);
	assert_non_null(strstr(text,
			       "\"min_p\": 0.05,\n  \"repetition_penalty\": 1.1,\n  "
			       "\"temperature\": 0.7,\n  \"top_k\": 40,\n  \"top_p\": 0.8,\n"));
	free(text);
}

/* A tokenizer from train-bpe's tiny golden file, with the Qwen3 template added. */
static void test_tokenizer_config(void **state)
{
	(void)state;
	char path[4096];
	snprintf(path, sizeof path, "%s/tests/golden/template-tiny-tokenizer.json", tu_srcdir());
	struct tok *t = tok_load_files(path, NULL);
	if (!t)
		fail_msg("%s", err_msg());
	bool markers;
	char *text = mdir_tokenizer_config(NULL, "tokenizer_config.json", t, NULL, &markers);
	assert_non_null(text);
	json_t *o = json_loads(text, 0, NULL);
	assert_non_null(o);
	assert_string_equal(json_string_value(json_object_get(o, "chat_template")),
			    mdir_qwen3_template);
	assert_true(json_is_null(json_object_get(o, "bos_token")));
	assert_true(json_is_null(json_object_get(o, "unk_token")));
	json_decref(o);
	free(text);
	/* an existing file keeps its fields */
	text = mdir_tokenizer_config("{\"eos_token\": \"x\", \"model_max_length\": 7}", "t.json", t,
				     NULL, &markers);
	o = json_loads(text, 0, NULL);
	assert_string_equal(json_string_value(json_object_get(o, "eos_token")), "x");
	assert_int_equal(json_integer_value(json_object_get(o, "model_max_length")), 7);
	assert_null(json_object_get(o, "added_tokens_decoder"));
	json_decref(o);
	free(text);
	assert_null(mdir_tokenizer_config("[1]", "t.json", t, NULL, &markers));
	assert_non_null(strstr(err_msg(), "t.json"));
	tok_free(t);
}

/* A new file lists the added tokens as Qwen3's does: added_tokens_decoder by id with
 * their special flags, additional_special_tokens the special ones but the end of text. */
static void test_added_tokens(void **state)
{
	(void)state;
	char path[4096];
	snprintf(path, sizeof path, "%s/tests/golden/template-tiny-tokenizer.json", tu_srcdir());
	json_t *tj = json_load_file(path, 0, NULL);
	assert_non_null(tj);
	int n = (int)json_object_size(json_object_get(json_object_get(tj, "model"), "vocab"));
	json_t *added = json_array();
	const char *names[] = {"<|endoftext|>", "<|im_start|>", "<|im_end|>", "<think>"};
	for (int i = 0; i < 4; i++)
		json_array_append_new(added, json_pack("{s:i, s:s, s:b, s:b, s:b, s:b, s:b}", "id",
						       n + i, "content", names[i], "single_word", 0,
						       "lstrip", 0, "rstrip", 0, "normalized", 0,
						       "special", i < 3));
	json_object_set_new(tj, "added_tokens", added);
	char tmp[] = "/tmp/qwenchat-modeldir.XXXXXX";
	assert_non_null(mkdtemp(tmp));
	char file[4200];
	snprintf(file, sizeof file, "%s/tokenizer.json", tmp);
	assert_int_equal(json_dump_file(tj, file, 0), 0);
	json_decref(tj);
	struct tok *t = tok_load_files(file, NULL);
	if (!t)
		fail_msg("%s", err_msg());
	bool markers;
	char *text = mdir_tokenizer_config(NULL, "tokenizer_config.json", t, NULL, &markers);
	assert_true(markers);
	json_t *o = json_loads(text, 0, NULL), *dec = json_object_get(o, "added_tokens_decoder");
	assert_int_equal(json_object_size(dec), 4);
	for (int i = 0; i < 4; i++) {
		char key[16];
		snprintf(key, sizeof key, "%d", n + i);
		json_t *e = json_object_get(dec, key);
		assert_string_equal(json_string_value(json_object_get(e, "content")), names[i]);
		assert_int_equal(json_is_true(json_object_get(e, "special")), i < 3);
	}
	json_t *extra = json_object_get(o, "additional_special_tokens");
	assert_int_equal(json_array_size(extra), 2);
	assert_string_equal(json_string_value(json_array_get(extra, 1)), "<|im_end|>");
	assert_string_equal(json_string_value(json_object_get(o, "eos_token")), "<|im_end|>");
	assert_string_equal(json_string_value(json_object_get(o, "pad_token")), "<|endoftext|>");
	json_decref(o);
	free(text);
	tok_free(t);
	unlink(file);
	rmdir(tmp);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_template_is_qwen3s),
		cmocka_unit_test(test_config),
		cmocka_unit_test(test_generation),
		cmocka_unit_test(test_tokenizer_config),
		cmocka_unit_test(test_added_tokens),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
