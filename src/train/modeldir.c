/* modeldir.c — config.json, generation_config.json and tokenizer_config.json of a
 * checkpoint. */
#include "src/train/modeldir.h"
#include "src/base/err.h"
#include "src/base/strbuf.h"
#include "src/train/tokens.h"

#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void put_id(struct strbuf *b, const char *key, int id)
{
	if (id >= 0)
		sb_printf(b, "  \"%s\": %d,\n", key, id);
	else
		sb_printf(b, "  \"%s\": null,\n", key);
}

/* x, or where x is exactly a float (as a GGUF holds its settings: 0.7f, 1e-6f) the number
 * of fewest digits that gives that float back (0.7, 1e-06), as the Hugging Face file it
 * came from had it. A double that is no float (1e-6 read from JSON) stays as it is; one
 * that is a float by chance (1000000.0625) becomes another decimal of the same float. */
static double float_decimal(double x)
{
	if (isfinite(x) && x == (double)(float)x)
		for (int digits = 1; digits <= 9; digits++) {
			char t[32];
			snprintf(t, sizeof t, "%.*g", digits, x);
			if ((float)strtod(t, NULL) == (float)x)
				return strtod(t, NULL);
		}
	return x;
}

static void put_rope_scaling(struct strbuf *b, const struct eng_config *c)
{
	if (!strcmp(c->rope_type, "linear")) {
		sb_puts(b, "  \"rope_scaling\": {\n    \"rope_type\": \"linear\",\n    \"factor\": ");
		sb_real(b, float_decimal(c->rope_factor));
		sb_puts(b, "\n  },\n");
		return;
	}
	if (strcmp(c->rope_type, "yarn")) {
		sb_puts(b, "  \"rope_scaling\": null,\n");
		return;
	}
	sb_puts(b, "  \"rope_scaling\": {\n    \"rope_type\": \"yarn\",\n    \"factor\": ");
	sb_real(b, float_decimal(c->rope_factor));
	if (c->rope_original_max_position > 0)
		sb_printf(b, ",\n    \"original_max_position_embeddings\": %d",
			  c->rope_original_max_position);
	/* 0 is "absent" for these, as config.c reads them */
	const char *key[] = {"attention_factor", "beta_fast", "beta_slow", "mscale", "mscale_all_dim"};
	double v[] = {c->rope_attention_factor, c->rope_beta_fast, c->rope_beta_slow, c->rope_mscale,
		      c->rope_mscale_all_dim};
	for (int i = 0; i < 5; i++)
		if (v[i] != 0) {
			sb_printf(b, ",\n    \"%s\": ", key[i]);
			sb_real(b, float_decimal(v[i]));
		}
	sb_puts(b, "\n  },\n");
}

static const char *torch_dtype(enum eng_dtype t)
{
	return t == ENG_F32 ? "float32" : t == ENG_F16 ? "float16" : "bfloat16";
}

char *mdir_config_json(const struct eng_config *c)
{
	struct strbuf b = {0};
	sb_puts(&b, "{\n  \"architectures\": [\n    \"Qwen3ForCausalLM\"\n  ],\n"
		    "  \"attention_bias\": false,\n  \"attention_dropout\": 0.0,\n");
	put_id(&b, "bos_token_id", c->bos_token_id);
	put_id(&b, "eos_token_id", c->eos_token_id);
	sb_printf(&b,
		  "  \"head_dim\": %d,\n  \"hidden_act\": \"silu\",\n  \"hidden_size\": %d,\n"
		  "  \"initializer_range\": 0.02,\n  \"intermediate_size\": %d,\n"
		  "  \"max_position_embeddings\": %d,\n  \"max_window_layers\": %d,\n"
		  "  \"model_type\": \"qwen3\",\n  \"num_attention_heads\": %d,\n"
		  "  \"num_hidden_layers\": %d,\n  \"num_key_value_heads\": %d,\n"
		  "  \"rms_norm_eps\": ",
		  c->head_dim, c->hidden_size, c->intermediate_size, c->max_position_embeddings,
		  c->num_layers, c->num_heads, c->num_layers, c->num_kv_heads);
	sb_real(&b, float_decimal(c->rms_norm_eps));
	sb_puts(&b, ",\n");
	put_rope_scaling(&b, c);
	sb_puts(&b, "  \"rope_theta\": ");
	sb_real(&b, float_decimal(c->rope_theta));
	sb_printf(&b,
		  ",\n  \"sliding_window\": null,\n  \"tie_word_embeddings\": %s,\n"
		  "  \"torch_dtype\": \"%s\",\n  \"transformers_version\": \"4.51.0\",\n"
		  "  \"use_cache\": true,\n  \"use_sliding_window\": false,\n"
		  "  \"vocab_size\": %d\n}\n",
		  c->tie_word_embeddings ? "true" : "false", torch_dtype(c->dtype), c->vocab_size);
	if (b.oom) {
		free(b.p);
		err_set("config.json: out of memory");
		return NULL;
	}
	return b.p;
}

const struct mdir_sampling mdir_qwen3_sampling = {
	.temperature = 0.6, .top_p = 0.95, .min_p = 0, .repetition_penalty = 1, .top_k = 20};

static void put_setting(struct strbuf *b, const char *key, double x)
{
	sb_printf(b, "  \"%s\": ", key);
	sb_real(b, float_decimal(x));
	sb_puts(b, ",\n");
}

char *mdir_generation_json(int bos, const int *eos, int n_eos, int pad,
			   const struct mdir_sampling *s)
{
	struct strbuf b = {0};
	sb_puts(&b, "{\n");
	put_id(&b, "bos_token_id", bos);
	sb_puts(&b, "  \"do_sample\": true,\n");
	if (n_eos > 0) {
		sb_puts(&b, "  \"eos_token_id\": [");
		for (int i = 0; i < n_eos; i++)
			sb_printf(&b, "%s\n    %d", i ? "," : "", eos[i]);
		sb_puts(&b, "\n  ],\n");
	}
	if (s->min_p > 0) /* the keys in order, as transformers writes them */
		put_setting(&b, "min_p", s->min_p);
	if (pad >= 0)
		sb_printf(&b, "  \"pad_token_id\": %d,\n", pad);
	if (s->repetition_penalty != 1)
		put_setting(&b, "repetition_penalty", s->repetition_penalty);
	put_setting(&b, "temperature", s->temperature);
	sb_printf(&b, "  \"top_k\": %d,\n", s->top_k);
	put_setting(&b, "top_p", s->top_p);
	sb_puts(&b, "  \"transformers_version\": \"4.51.0\"\n}\n");
	if (b.oom) {
		free(b.p);
		err_set("generation_config.json: out of memory");
		return NULL;
	}
	return b.p;
}

/* Sets key to s[0..n) unless the object has it (a null counts as missing). */
static int set_default(json_t *o, const char *key, const char *s, size_t n)
{
	json_t *v = json_object_get(o, key);
	if (!s || (v && !json_is_null(v)))
		return 0;
	return json_object_set_new(o, key, json_stringn(s, n));
}

/* What Qwen3's tokenizer_config.json says of the added tokens: added_tokens_decoder
 * (each by id: its content and flags, as tokenizer.json's added_tokens) and
 * additional_special_tokens (the special ones but the end of text, which is the pad
 * token). bos_token null: Qwen3 has none. */
static int added_tokens(json_t *o, const struct tok *t, int eot)
{
	json_t *dec = json_object(), *extra = json_array();
	int rc = dec && extra ? 0 : -1;
	for (int id = 0; !rc && id < tok_vocab_size(t); id++) {
		size_t n;
		const char *s = tok_is_added(t, id) ? tok_piece(t, id, &n) : NULL;
		if (!s)
			continue;
		char key[16];
		snprintf(key, sizeof key, "%d", id);
		bool special = tok_is_special(t, id);
		rc |= json_object_set_new(
			dec, key,
			json_pack("{s:s%, s:b, s:b, s:b, s:b, s:b}", "content", s, n, "lstrip", 0,
				  "normalized", 0, "rstrip", 0, "single_word", 0, "special", special));
		if (special && id != eot)
			rc |= json_array_append_new(extra, json_stringn(s, n));
	}
	rc |= json_object_set(o, "added_tokens_decoder", dec);
	rc |= json_object_set(o, "additional_special_tokens", extra);
	rc |= json_object_set_new(o, "bos_token", json_null());
	json_decref(dec);
	json_decref(extra);
	return rc ? -1 : 0;
}

char *mdir_tokenizer_config(const char *existing, const char *name, const struct tok *t,
			    const char *chat_template, bool *markers)
{
	json_error_t je;
	json_t *o = existing ? json_loads(existing, JSON_REJECT_DUPLICATES, &je) : json_object();
	if (!json_is_object(o)) {
		json_decref(o);
		err_set("%s: not a JSON object%s%s", name, existing ? ": " : "",
			existing ? je.text : "");
		return NULL;
	}
	int eot = tokens_eot(t);
	size_t eot_len = 0;
	const char *eot_text = eot >= 0 ? tok_piece(t, eot, &eot_len) : NULL;
	bool im_end = tok_id(t, "<|im_end|>") >= 0;
	*markers = im_end && tok_id(t, "<|im_start|>") >= 0;
	const char *eos = tok_eos_token(t), *pad = tok_pad_token(t);
	int rc = json_object_set_new(o, "chat_template",
				     json_string(chat_template ? chat_template : mdir_qwen3_template));
	rc |= set_default(o, "eos_token", eos, eos ? strlen(eos) : 0);
	rc |= set_default(o, "pad_token", pad, pad ? strlen(pad) : 0);
	rc |= im_end ? set_default(o, "eos_token", "<|im_end|>", 10)
		     : set_default(o, "eos_token", eot_text, eot_len);
	rc |= set_default(o, "pad_token", eot_text, eot_len);
	if (!existing) {
		/* Given as null where there is none: Qwen2TokenizerFast would otherwise make
		 * "<|endoftext|>" each of them, a new id past the vocabulary if it is not one
		 * (Qwen3's file has "unk_token": null too). */
		static const char *const keys[] = {"eos_token", "pad_token", "unk_token"};
		for (int i = 0; i < 3; i++)
			if (!json_object_get(o, keys[i]))
				rc |= json_object_set_new(o, keys[i], json_null());
		rc |= added_tokens(o, t, eot);
		rc |= json_object_set_new(o, "add_bos_token", json_false());
		rc |= json_object_set_new(o, "clean_up_tokenization_spaces", json_false());
		rc |= json_object_set_new(o, "errors", json_string("replace"));
		rc |= json_object_set_new(o, "split_special_tokens", json_false());
		rc |= json_object_set_new(o, "tokenizer_class", json_string("Qwen2Tokenizer"));
	}
	char *text = rc ? NULL : json_dumps(o, JSON_INDENT(2));
	json_decref(o);
	if (!text) {
		err_set("%s: out of memory", name);
		return NULL;
	}
	size_t n = strlen(text);
	char *out = realloc(text, n + 2);
	if (!out) {
		free(text);
		err_set("%s: out of memory", name);
		return NULL;
	}
	memcpy(out + n, "\n", 2);
	return out;
}
