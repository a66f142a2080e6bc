/* loader.c — model files in either format: a directory's JSON files through the
 * tokenizer and sampler, a GGUF file's key/values through the engine's metadata API
 * turned into the tokenizer's in-memory lists (tok_from_vocab). */
#include "src/hub/loader.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "src/base/err.h"
#include "src/base/fileio.h"

#define TOKENS "tokenizer.ggml.tokens"
#define TYPES  "tokenizer.ggml.token_type"
#define MERGES "tokenizer.ggml.merges"

/* A string key that must equal `want` (the tokenizer kinds we implement). */
static int expect_str(const struct eng_gguf *g, const char *key, const char *want)
{
	const char *s;
	size_t n;
	int r = eng_gguf_str(g, key, &s, &n);
	if (r < 0)
		return -1;
	if (r == 1)
		return err_set("%s: key %s is missing (no tokenizer in this GGUF)",
			       eng_gguf_name(g), key);
	if (n != strlen(want) || memcmp(s, want, n))
		return err_set("%s: key %s is \"%.*s\"; only \"%s\" (Qwen's byte-level BPE) is "
			       "supported",
			       eng_gguf_name(g), key, (int)(n < 40 ? n : 40), s, want);
	return 0;
}

/* A string array's elements as pointer and length lists. */
static int str_list(const struct eng_gguf *g, const char *key, size_t *n, const char ***s,
		    size_t **len)
{
	enum eng_gguf_type et;
	uint64_t count;
	int r = eng_gguf_array(g, key, &et, &count);
	if (r)
		return r < 0 ? -1 : err_set("%s: key %s is missing", eng_gguf_name(g), key);
	if (et != ENG_GGUF_STRING)
		return err_set("%s: key %s is not an array of strings", eng_gguf_name(g), key);
	*s = malloc((size_t)(count ? count : 1) * sizeof **s);
	*len = malloc((size_t)(count ? count : 1) * sizeof **len);
	if (!*s || !*len)
		return err_set("out of memory");
	for (uint64_t i = 0; i < count; i++)
		(*s)[i] = eng_gguf_array_str(g, key, i, &(*len)[i]);
	*n = (size_t)count;
	return 0;
}

/* token_type: llama.cpp's numbers (1 normal, 3 control, 4 user-defined, 5 unused) as
 * the tokenizer's kinds. convert_hf_to_gguf.py marks added tokens CONTROL when
 * tokenizer.json has them special (or they look like <|...|>), else USER_DEFINED;
 * the padding ids past the tokenizer are UNUSED. */
static int kinds_of(const struct eng_gguf *g, size_t n, unsigned char **out)
{
	enum eng_gguf_type et;
	uint64_t count;
	int r = eng_gguf_array(g, TYPES, &et, &count);
	if (r)
		return r < 0 ? -1 : err_set("%s: key %s is missing", eng_gguf_name(g), TYPES);
	if (count != n)
		return err_set("%s: key %s has %llu entries, %s has %zu", eng_gguf_name(g), TYPES,
			       (unsigned long long)count, TOKENS, n);
	if (!(*out = malloc(n ? n : 1)))
		return err_set("out of memory");
	for (size_t i = 0; i < n; i++) {
		int64_t t;
		if (eng_gguf_array_int(g, TYPES, i, &t))
			return err_set("%s: key %s is not an array of integers", eng_gguf_name(g),
				       TYPES);
		switch (t) {
		case 1: (*out)[i] = TOK_NORMAL; break;
		case 3: (*out)[i] = TOK_SPECIAL; break;
		case 4: (*out)[i] = TOK_ADDED; break;
		case 5: (*out)[i] = TOK_UNUSED; break;
		default:
			return err_set("%s: %s[%zu] = %lld is not supported for a byte-level BPE "
				       "(1 normal, 3 control, 4 user-defined, 5 unused)",
				       eng_gguf_name(g), TYPES, i, (long long)t);
		}
	}
	return 0;
}

/* The text of a token id key (eos, padding), NUL-terminated in buf; "" when absent. */
static int token_text(const struct eng_gguf *g, const char *key, const struct tok_vocab *v,
		      char *buf, size_t cap)
{
	int64_t id;
	int r = eng_gguf_int(g, key, &id);
	buf[0] = 0;
	if (r)
		return r < 0 ? -1 : 0;
	if (id < 0 || (uint64_t)id >= v->n_tokens)
		return err_set("%s: key %s = %lld is not a token id below %zu", eng_gguf_name(g),
			       key, (long long)id, v->n_tokens);
	size_t n = v->token_len[id];
	snprintf(buf, cap, "%.*s", (int)(n < cap ? n : cap - 1), v->tokens[id]);
	return 0;
}

/* tokenizer.chat_template, NUL-terminated (malloc'd), or NULL when absent. */
static int chat_template(const struct eng_gguf *g, char **out)
{
	const char *s;
	size_t n;
	int r = eng_gguf_str(g, "tokenizer.chat_template", &s, &n);
	*out = NULL;
	if (r)
		return r < 0 ? -1 : 0;
	if (memchr(s, 0, n))
		return err_set("%s: key tokenizer.chat_template holds a NUL", eng_gguf_name(g));
	if (!(*out = malloc(n + 1)))
		return err_set("out of memory");
	memcpy(*out, s, n);
	(*out)[n] = 0;
	return 0;
}

struct tok *loader_tokenizer_gguf(const struct eng_gguf *g)
{
	struct tok_vocab v = {
		.name = eng_gguf_name(g), .tokens_key = TOKENS, .merges_key = MERGES, .nfc = true};
	const char **tokens = NULL, **merges = NULL;
	size_t *tlen = NULL, *mlen = NULL;
	unsigned char *kinds = NULL;
	char *tmpl = NULL, eos[256], pad[256];
	struct tok *t = NULL;
	/* Qwen2's pre-tokenizer; tokenizer.json has the NFC normalizer with it */
	if (expect_str(g, "tokenizer.ggml.model", "gpt2") ||
	    expect_str(g, "tokenizer.ggml.pre", "qwen2") ||
	    str_list(g, TOKENS, &v.n_tokens, &tokens, &tlen) || kinds_of(g, v.n_tokens, &kinds) ||
	    str_list(g, MERGES, &v.n_merges, &merges, &mlen))
		goto out;
	v.tokens = tokens;
	v.token_len = tlen;
	v.kinds = kinds;
	v.merges = merges;
	v.merge_len = mlen;
	if (token_text(g, "tokenizer.ggml.eos_token_id", &v, eos, sizeof eos) ||
	    token_text(g, "tokenizer.ggml.padding_token_id", &v, pad, sizeof pad) ||
	    chat_template(g, &tmpl))
		goto out;
	v.eos = eos[0] ? eos : NULL;
	v.pad = pad[0] ? pad : NULL;
	v.chat_template = tmpl;
	t = tok_from_vocab(&v);
out:
	free(tokens);
	free(tlen);
	free(kinds);
	free(merges);
	free(mlen);
	free(tmpl);
	return t;
}

struct tok *loader_tokenizer(const char *path)
{
	if (!eng_is_gguf(path))
		return tok_load(path);
	struct eng_gguf *g = eng_gguf_open(path);
	struct tok *t = g ? loader_tokenizer_gguf(g) : NULL;
	eng_gguf_free(g);
	return t;
}

/* general.sampling.* (llama.cpp's keys, from generation_config.json) and the eos and
 * eot ids. */
static int gguf_generation(const struct eng_gguf *g, struct samp_params *p, int32_t *eos,
			   int *n_eos)
{
	struct samp_params q = *p;
	double topk = q.top_k;
	static const char *const ids[] = {"tokenizer.ggml.eos_token_id",
					  "tokenizer.ggml.eot_token_id"};
	int32_t found[2];
	int k = 0;
	if (eng_gguf_float(g, "general.sampling.temp", &q.temperature) < 0 ||
	    eng_gguf_float(g, "general.sampling.top_p", &q.top_p) < 0 ||
	    eng_gguf_float(g, "general.sampling.min_p", &q.min_p) < 0 ||
	    eng_gguf_float(g, "general.sampling.penalty_repeat", &q.repetition_penalty) < 0)
		return -1;
	int64_t v;
	int r = eng_gguf_int(g, "general.sampling.top_k", &v);
	if (r < 0)
		return -1;
	if (r == 0 && (v < 0 || v > 1 << 24))
		return err_set("%s: key general.sampling.top_k = %lld is out of range",
			       eng_gguf_name(g), (long long)v);
	if (r == 0)
		topk = (double)v;
	q.top_k = (int)topk;
	if (samp_params_check(&q))
		return err_prefix("%s: general.sampling", eng_gguf_name(g));
	for (int i = 0; i < 2; i++) {
		r = eng_gguf_int(g, ids[i], &v);
		if (r < 0)
			return -1;
		if (r == 0 && v >= 0 && v < INT32_MAX)
			found[k++] = (int32_t)v;
	}
	*p = q;
	if (k && eos)
		memcpy(eos, found, (size_t)k * sizeof *found);
	if (k && n_eos)
		*n_eos = k;
	return 0;
}

int loader_generation(const char *path, struct samp_params *p, int32_t *eos, int *n_eos)
{
	if (!eng_is_gguf(path))
		return samp_load_generation_config(path, p, eos, n_eos);
	struct eng_gguf *g = eng_gguf_open(path);
	int rc = g ? gguf_generation(g, p, eos, n_eos) : -1;
	eng_gguf_free(g);
	return rc;
}
