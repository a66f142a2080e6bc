/* loader_keys.c — a model directory's tokenizer and sampling settings as GGUF
 * key/values, as llama.cpp's converter writes them (qwenchat quantize). */
#include "src/hub/loader.h"

#include <jansson.h>
#include <stdbool.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "src/base/err.h"
#include "src/base/fileio.h"
#include "src/base/jsonlimit.h"
#include "src/hub/loader_impl.h"

/* convert_hf_to_gguf.py's does_token_look_special, for the forms Qwen uses. */
static bool looks_special(const char *t, size_t n)
{
	return (n >= 4 && !memcmp(t, "<|", 2) && !memcmp(t + n - 2, "|>", 2)) ||
	       (n == 5 && !memcmp(t, "<pad>", 5)) || (n == 6 && !memcmp(t, "<mask>", 6));
}

struct vocab_out {
	const char **tok;
	size_t *len;
	int32_t *type;
	char **pad; /* the [PADn] names made for ids without a token */
	size_t n;
};

/* One added token (tokenizer.json's added_tokens or tokenizer_config.json's
 * added_tokens_decoder): CONTROL when special or <|...|>, else USER_DEFINED. */
static int set_added(struct vocab_out *v, json_t *o, long long id, const char *file)
{
	json_t *c = json_object_get(o, "content");
	if (id < 0 || (size_t)id >= v->n || !json_is_string(c))
		return err_set("%s: added token %lld: not an id below %zu with a content", file, id,
			       v->n);
	v->tok[id] = json_string_value(c);
	v->len[id] = json_string_length(c);
	v->type[id] =
		json_is_true(json_object_get(o, "special")) || looks_special(v->tok[id], v->len[id])
			? 3
			: 4;
	return 0;
}

/* tokens and token_type as get_vocab_base makes them: ids without a token are
 * "[PADn]", UNUSED. */
static int vocab_lists(json_t *tj, json_t *tc, struct vocab_out *v, const char *file)
{
	const char *key;
	json_t *val, *a;
	size_t i;
	json_object_foreach(json_object_get(json_object_get(tj, "model"), "vocab"), key, val)
	{
		json_int_t id = json_integer_value(val);
		if (!json_is_integer(val) || id < 0 || (size_t)id >= v->n)
			return err_set("%s: model.vocab: %.40s: not an id below %zu", file, key,
				       v->n);
		v->tok[id] = key;
		v->len[id] = strlen(key);
		v->type[id] = 1;
	}
	json_array_foreach(json_object_get(tj, "added_tokens"), i,
			   a) if (set_added(v, a, json_integer_value(json_object_get(a, "id")),
					    file)) return -1;
	json_object_foreach(json_object_get(tc, "added_tokens_decoder"), key, a)
	{
		long long id = atoll(key);
		if (id >= 0 && (size_t)id < v->n && v->tok[id])
			continue; /* tokenizer.json has it */
		if (set_added(v, a, id, "tokenizer_config.json"))
			return -1;
	}
	for (i = 0; i < v->n; i++) {
		if (v->tok[i])
			continue;
		char name[32];
		snprintf(name, sizeof name, "[PAD%zu]", i);
		if (!(v->pad[i] = strdup(name)))
			return err_set("out of memory");
		v->tok[i] = v->pad[i];
		v->len[i] = strlen(name);
		v->type[i] = 5;
	}
	return 0;
}

/* merges as "a b" strings (the pair form joined), as gguf-py's SpecialVocab. */
static int merge_list(json_t *tj, struct eng_gguf_out *o, const char *file)
{
	json_t *m = json_object_get(json_object_get(tj, "model"), "merges"), *e;
	size_t n = json_array_size(m), i;
	const char **s = calloc(n + 1, sizeof *s);
	size_t *len = calloc(n + 1, sizeof *len);
	char **own = calloc(n + 1, sizeof *own);
	int rc = s && len && own ? 0 : err_set("out of memory");
	json_array_foreach(m, i, e)
	{
		if (rc)
			break;
		if (json_is_string(e)) {
			s[i] = json_string_value(e);
			len[i] = json_string_length(e);
			continue;
		}
		const char *a = json_string_value(json_array_get(e, 0));
		const char *b = json_string_value(json_array_get(e, 1));
		if (!a || !b) {
			rc = err_set("%s: model.merges[%zu]: not \"a b\" or [a, b]", file, i);
			break;
		}
		len[i] = strlen(a) + 1 + strlen(b);
		if (!(own[i] = malloc(len[i] + 1))) {
			rc = err_set("out of memory");
			break;
		}
		sprintf(own[i], "%s %s", a, b);
		s[i] = own[i];
	}
	if (rc == 0)
		rc = eng_gguf_out_strs(o, MERGES, s, len, n);
	for (i = 0; own && i < n; i++)
		free(own[i]);
	free(own);
	free(s);
	free(len);
	return rc;
}

/* eos/padding/bos ids: tokenizer_config.json's tokens, else config.json's ids; and
 * the post-processor's special tokens as add_bos_token and add_eos_token, one a side
 * (all a GGUF says), the token they add as bos or eos, as llama.cpp's converter
 * writes Qwen3-Embedding (the eos it replaces, <|im_end|>, then its eot). */
static int special_ids(json_t *tj, json_t *tc, json_t *cfg, const struct vocab_out *v,
		       struct eng_gguf_out *o)
{
	static const struct {
		const char *conf, *id, *key;
	} sp[] = {{"eos_token", "eos_token_id", "tokenizer.ggml.eos_token_id"},
		  {"pad_token", "pad_token_id", "tokenizer.ggml.padding_token_id"},
		  {"bos_token", "bos_token_id", "tokenizer.ggml.bos_token_id"}};
	struct tok_ends e;
	if (tok_parse_ends(json_object_get(tj, "post_processor"), "tokenizer.json", &e))
		return -1;
	if (e.n[0] > 1 || e.n[1] > 1)
		return err_set("tokenizer.json: post_processor: %d special tokens %s the text; a "
			       "GGUF file adds at most one (add_bos_token, add_eos_token)",
			       e.n[0] > 1 ? e.n[0] : e.n[1], e.n[0] > 1 ? "before" : "after");
	for (size_t k = 0; k < sizeof sp / sizeof sp[0]; k++) {
		json_t *t = json_object_get(tc, sp[k].conf);
		if (json_is_object(t))
			t = json_object_get(t, "content");
		long long id = -1;
		for (size_t i = 0; json_is_string(t) && i < v->n && id < 0; i++)
			if (v->len[i] == json_string_length(t) &&
			    !memcmp(v->tok[i], json_string_value(t), v->len[i]))
				id = (long long)i;
		json_t *c = json_object_get(cfg, sp[k].id);
		if (id < 0 && json_is_integer(c) && json_integer_value(c) >= 0)
			id = json_integer_value(c);
		int side = k == 0 ? 1 : k == 2 ? 0 : -1; /* eos after, bos before */
		if (side >= 0 && e.n[side] && e.ids[side][0] != id) {
			if (side == 1 && id >= 0 &&
			    eng_gguf_out_u32(o, "tokenizer.ggml.eot_token_id", (uint32_t)id))
				return -1;
			id = e.ids[side][0];
		}
		if (id >= 0 && eng_gguf_out_u32(o, sp[k].key, (uint32_t)id))
			return -1;
	}
	if (e.n[1] && eng_gguf_out_bool(o, "tokenizer.ggml.add_eos_token", true))
		return -1;
	json_t *ab = json_object_get(tc, "add_bos_token");
	return e.n[0] || json_is_boolean(ab) ? eng_gguf_out_bool(o, "tokenizer.ggml.add_bos_token",
								 e.n[0] || json_is_true(ab))
					     : 0;
}

static int template_key(const char *dir, json_t *tc, struct eng_gguf_out *o)
{
	bool missing;
	char *file = tok_read_template_file(dir, &missing); /* preferred, as tok_load does */
	if (file || !missing) {
		int rc = file ? eng_gguf_out_str(o, "tokenizer.chat_template", file, strlen(file))
			      : -1;
		free(file);
		return rc;
	}
	json_t *t = json_object_get(tc, "chat_template"), *e;
	size_t i;
	json_array_foreach(t, i, e)
	{
		const char *n = json_string_value(json_object_get(e, "name"));
		if (n && !strcmp(n, "default"))
			t = json_object_get(e, "template");
	}
	if (!json_is_string(t))
		return 0;
	return eng_gguf_out_str(o, "tokenizer.chat_template", json_string_value(t),
				json_string_length(t));
}

/* Qwen3's tokenizer.json is 11 MB with ~760k values (151k vocabulary entries and
 * merges): the caps leave room for vocabularies of a million and bound jansson's
 * allocations (~1 GB). */
json_t *loader_load_json(const char *dir, const char *name, bool optional)
{
	static const struct jlim lim = {.max_depth = 32, .max_values = 1 << 22};
	char *p = fio_join(dir, name), *text = NULL;
	size_t len;
	json_error_t je;
	json_t *j = NULL;
	bool absent = p && optional && !fio_exists(p);
	if (p && !absent && (text = jlim_read_file(p, 256u << 20, &lim, &len)) &&
	    !(j = json_loadb(text, len, 0, &je)))
		err_set("%s: %s (line %d)", p, je.text, je.line);
	free(text);
	free(p);
	return j ? j : absent ? json_object() : NULL;
}

/* A sampling member's value as the key's type: a whole number (a real too, as
 * json.load would give 20.0), or a number that stays finite as a float. */
static bool whole(json_t *v, double *x)
{
	*x = json_is_integer(v) ? (double)json_integer_value(v)
	     : json_is_real(v)  ? json_real_value(v)
				: NAN;
	return *x == floor(*x);
}

static bool as_float(json_t *v, float *out)
{
	*out = json_is_number(v) ? (float)json_number_value(v) : NAN;
	return isfinite(*out);
}

/* Whether the sampler takes v as its repetition penalty (samp_params_check). */
static bool penalty_ok(json_t *v, float *f)
{
	struct samp_params p;
	samp_params_default(&p);
	if (!as_float(v, f))
		return false;
	p.repetition_penalty = *f;
	bool ok = samp_params_check(&p) == 0;
	err_clear();
	return ok;
}

/* generation_config.json's sampling defaults as general.sampling.*: the keys
 * convert_hf_to_gguf.py writes, from the members it reads, with its types (and
 * gguf_generation reads some back). One more: Hugging Face's repetition_penalty as
 * penalty_repeat where "penalty_repeat" (which no Hugging Face config has) gives
 * none the sampler takes. A value the key cannot hold, or that the file's reader
 * would refuse (a top_k past SAMP_MAX_TOP_K is held to it, as the directory's reader
 * does), is left out, so that the file loads wherever the directory did. */
static int sampling_keys(json_t *gen, struct eng_gguf_out *o)
{
	enum { I32, F32, STR };
	static const struct {
		const char *json, *key;
		int type;
	} keys[] = {{"sequence", "general.sampling.sequence", STR},
		    {"top_k", "general.sampling.top_k", I32},
		    {"top_p", "general.sampling.top_p", F32},
		    {"min_p", "general.sampling.min_p", F32},
		    {"xtc_probability", "general.sampling.xtc_probability", F32},
		    {"xtc_threshold", "general.sampling.xtc_threshold", F32},
		    {"temperature", "general.sampling.temp", F32},
		    {"penalty_last_n", "general.sampling.penalty_last_n", I32},
		    {"penalty_repeat", "general.sampling.penalty_repeat", F32},
		    {"mirostat", "general.sampling.mirostat", I32},
		    {"mirostat_tau", "general.sampling.mirostat_tau", F32},
		    {"mirostat_eta", "general.sampling.mirostat_eta", F32}};
	for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) {
		json_t *v = json_object_get(gen, keys[i].json);
		bool top_k = !strcmp(keys[i].json, "top_k");
		bool repeat = !strcmp(keys[i].json, "penalty_repeat");
		double x;
		float f;
		if (repeat && !penalty_ok(v, &f))
			v = json_object_get(gen, "repetition_penalty");
		int rc = 0;
		if (keys[i].type == STR && json_is_string(v))
			rc = eng_gguf_out_str(o, keys[i].key, json_string_value(v),
					      json_string_length(v));
		else if (keys[i].type == F32 && (repeat ? penalty_ok(v, &f) : as_float(v, &f)))
			rc = eng_gguf_out_f32(o, keys[i].key, f);
		else if (keys[i].type == I32 && whole(v, &x) && x >= (top_k ? 0 : INT32_MIN) &&
			 (top_k || x <= INT32_MAX))
			rc = eng_gguf_out_i32(
				o, keys[i].key,
				(int32_t)(top_k && x > SAMP_MAX_TOP_K ? SAMP_MAX_TOP_K : x));
		if (rc)
			return -1;
	}
	return 0;
}

int loader_gguf_keys(const char *dir, int vocab_size, struct eng_gguf_out *o)
{
	if (!loader_has_tokenizer(dir,
				  "a GGUF file carries its model's tokenizer, and this model has "
				  "none (as one trained on token ids alone)"))
		return -1;
	json_t *tj = loader_load_json(dir, "tokenizer.json", false);
	json_t *tc = tj ? loader_load_json(dir, "tokenizer_config.json", true) : NULL;
	json_t *cfg = tc ? loader_load_json(dir, "config.json", true) : NULL;
	json_t *gen = cfg ? loader_load_json(dir, "generation_config.json", true) : NULL;
	struct vocab_out v = {.n = (size_t)(vocab_size > 0 ? vocab_size : 0)};
	int rc = -1;
	if (!gen)
		goto out;
	json_t *norm = json_object_get(tj, "normalizer"); /* absent: none */
	bool nfc = false;
	if (norm && tok_read_normalizer(norm, &nfc, "tokenizer.json"))
		goto out;
	v.tok = calloc(v.n + 1, sizeof *v.tok);
	v.len = calloc(v.n + 1, sizeof *v.len);
	v.type = calloc(v.n + 1, sizeof *v.type);
	v.pad = calloc(v.n + 1, sizeof *v.pad);
	if (!v.tok || !v.len || !v.type || !v.pad) {
		err_set("out of memory");
		goto out;
	}
	if (vocab_lists(tj, tc, &v, "tokenizer.json") ||
	    eng_gguf_out_str(o, "tokenizer.ggml.model", "gpt2", 4) ||
	    eng_gguf_out_str(o, "tokenizer.ggml.pre", "qwen2", 5) ||
	    eng_gguf_out_str(o, NORMALIZER, nfc ? "NFC" : "none", nfc ? 3 : 4) ||
	    eng_gguf_out_strs(o, TOKENS, v.tok, v.len, v.n) ||
	    eng_gguf_out_i32s(o, TYPES, v.type, v.n) || merge_list(tj, o, "tokenizer.json") ||
	    special_ids(tj, tc, cfg, &v, o) || template_key(dir, tc, o) || sampling_keys(gen, o) ||
	    loader_pooling_key(dir, o))
		goto out;
	rc = 0;
out:
	for (size_t i = 0; v.pad && i < v.n; i++)
		free(v.pad[i]);
	free(v.pad);
	free(v.tok);
	free(v.len);
	free(v.type);
	json_decref(tj);
	json_decref(tc);
	json_decref(cfg);
	json_decref(gen);
	return rc;
}
