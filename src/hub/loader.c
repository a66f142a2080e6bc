/* loader.c — model files in either format: a directory's JSON files through the
 * tokenizer and sampler, a GGUF file's key/values through the engine's metadata API
 * turned into the tokenizer's in-memory lists (tok_from_vocab). */
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

/* tokenizer_config.json, which holds a directory's template, may be 16 MiB at most */
#define TEMPLATE_MAX (16 << 20)

static loader_warn_fn g_warn;

loader_warn_fn loader_warn_to(loader_warn_fn fn)
{
	loader_warn_fn old = g_warn;
	g_warn = fn;
	return old;
}

/* What a GGUF lacks that llama.cpp reads with a default: said, and the load goes on. */
static void warn(const struct eng_gguf *g, const char *what)
{
	char msg[600];
	snprintf(msg, sizeof msg, "warning: %s: %s", eng_gguf_name(g), what);
	if (g_warn)
		g_warn(msg);
}

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

/* tokenizer.ggml.pre: Qwen2's regex, by its name or one llama.cpp reads as it
 * (llama-vocab.cpp); absent, Qwen2's too, with a warning (llama.cpp's default for a
 * file without one is not Qwen's: it warns as well). */
static int pre_tokenizer(const struct eng_gguf *g)
{
	static const char *const alias[] = {"deepseek-r1-qwen", "kormo", "f2llmv2"};
	const char *s;
	size_t n;
	int r = eng_gguf_str(g, "tokenizer.ggml.pre", &s, &n);
	if (r == 1)
		warn(g, "key tokenizer.ggml.pre is missing: Qwen2's pre-tokenizer is used, as "
			"Qwen3's GGUF files name");
	for (size_t i = 0; r == 0 && i < sizeof alias / sizeof *alias; i++)
		if (n == strlen(alias[i]) && !memcmp(s, alias[i], n))
			return 0;
	return r == 0 ? expect_str(g, "tokenizer.ggml.pre", "qwen2") : r < 0 ? -1 : 0;
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

/* A string as pointer and length, for sorting and searching the merges' results. */
struct piece {
	const char *s;
	size_t n, split; /* a merge "a b": its result is s minus the space at split */
};

static int piece_cmp(const void *x, const void *y)
{
	const struct piece *a = x, *b = y;
	size_t i = 0, j = 0;
	for (;; i++, j++) {
		i += i == a->split;
		j += j == b->split;
		if (i >= a->n || j >= b->n)
			return (i < a->n) - (j < b->n);
		if (a->s[i] != b->s[j])
			return (unsigned char)a->s[i] - (unsigned char)b->s[j];
	}
}

/* Whether a token is one character (UTF-8), as the byte-level alphabet's 256 are. */
static bool one_char(const char *s, size_t n)
{
	size_t k = 1;
	while (k < n && ((unsigned char)s[k] & 0xC0) == 0x80)
		k++;
	return n >= 1 && k == n;
}

/* The kinds of a GGUF without token_type. In a byte-level BPE a vocabulary token is
 * one of the 256 byte characters or the result of a merge; any other is an added
 * token: special when it has Qwen's control form <|...|> (llama.cpp's converter marks
 * those CONTROL), "[PADn]" a padding id, else added but not special (<think>). */
static int kinds_guessed(const struct eng_gguf *g, const struct tok_vocab *v, unsigned char **out)
{
	size_t n = v->n_tokens;
	struct piece *res = malloc((v->n_merges ? v->n_merges : 1) * sizeof *res);
	if (!res || !(*out = malloc(n ? n : 1))) {
		free(res);
		return err_set("out of memory");
	}
	for (size_t i = 0; i < v->n_merges; i++) {
		const char *sp = memchr(v->merges[i], ' ', v->merge_len[i]);
		res[i] = (struct piece){v->merges[i], v->merge_len[i],
					sp ? (size_t)(sp - v->merges[i]) : SIZE_MAX};
	}
	qsort(res, v->n_merges, sizeof *res, piece_cmp);
	for (size_t i = 0; i < n; i++) {
		const char *s = v->tokens[i];
		size_t k = v->token_len[i];
		struct piece key = {s, k, SIZE_MAX};
		(*out)[i] = TOK_NORMAL;
		if (one_char(s, k) || bsearch(&key, res, v->n_merges, sizeof *res, piece_cmp))
			continue;
		if (k >= 5 && !memcmp(s, "<|", 2) && !memcmp(s + k - 2, "|>", 2))
			(*out)[i] = TOK_SPECIAL;
		else if (k > 5 && !memcmp(s, "[PAD", 4) && s[k - 1] == ']')
			(*out)[i] = TOK_UNUSED;
		else
			(*out)[i] = TOK_ADDED;
	}
	free(res);
	warn(g, "key " TYPES " is missing: the tokens no merge makes are taken as added "
		"ones, <|...|> as special");
	return 0;
}

/* token_type: llama.cpp's numbers (1 normal, 3 control, 4 user-defined, 5 unused) as
 * the tokenizer's kinds. convert_hf_to_gguf.py marks added tokens CONTROL when
 * tokenizer.json has them special (or they look like <|...|>), else USER_DEFINED;
 * the padding ids past the tokenizer are UNUSED. */
static int kinds_of(const struct eng_gguf *g, const struct tok_vocab *v, unsigned char **out)
{
	enum eng_gguf_type et;
	uint64_t count;
	size_t n = v->n_tokens;
	int r = eng_gguf_array(g, TYPES, &et, &count);
	if (r == 1)
		return kinds_guessed(g, v, out);
	if (r)
		return -1;
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

/* llama.cpp's converter marks every <|...|> token CONTROL (its does_token_look_special),
 * and so does quantize, as it does; Qwen's tokenizer.json has these six non-special:
 * typed, they stay tokens, and decoded they are shown. Their kind is Qwen's again. */
static void qwen_non_special(const char **tokens, const size_t *len, unsigned char *kinds, size_t n)
{
	static const char *const names[] = {"<|fim_prefix|>", "<|fim_middle|>", "<|fim_suffix|>",
					    "<|fim_pad|>",    "<|repo_name|>",  "<|file_sep|>"};
	for (size_t i = 0; i < n; i++)
		for (size_t k = 0; kinds[i] == TOK_SPECIAL && k < sizeof names / sizeof names[0];
		     k++)
			if (len[i] == strlen(names[k]) && !memcmp(tokens[i], names[k], len[i]))
				kinds[i] = TOK_ADDED;
}

/* The text of a token id key (eos, padding), NUL-terminated in buf; "" when absent,
 * and when out of range and not needed (warned). */
static int token_text(const struct eng_gguf *g, const char *key, const struct tok_vocab *v,
		      bool needed, char *buf, size_t cap)
{
	int64_t id;
	int r = eng_gguf_int(g, key, &id);
	buf[0] = 0;
	if (r)
		return r < 0 ? -1 : 0;
	if ((id < 0 || (uint64_t)id >= v->n_tokens) && !needed) {
		/* llama.cpp ignores such an id too (the padding id is only metadata here) */
		char what[160];
		snprintf(what, sizeof what, "key %s = %lld is not a token id below %zu: ignored",
			 key, (long long)id, v->n_tokens);
		warn(g, what);
		return 0;
	}
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
	if (n > TEMPLATE_MAX) /* as tokenizer_config.json's own size limit */
		return err_set("%s: key tokenizer.chat_template is %zu bytes, more than a chat "
			       "template takes (%d)",
			       eng_gguf_name(g), n, TEMPLATE_MAX);
	if (!(*out = malloc(n + 1)))
		return err_set("out of memory");
	memcpy(*out, s, n);
	(*out)[n] = 0;
	return 0;
}

/* NORMALIZER into *nfc: "NFC" or "none"; absent, NFC. */
static int normalizer(const struct eng_gguf *g, bool *nfc)
{
	const char *s;
	size_t n;
	int r = eng_gguf_str(g, NORMALIZER, &s, &n);
	*nfc = true;
	if (r < 0)
		return -1;
	if (r == 1 || (n == 3 && !memcmp(s, "NFC", 3)))
		return 0;
	if (n == 4 && !memcmp(s, "none", 4)) {
		*nfc = false;
		return 0;
	}
	return err_set("%s: key " NORMALIZER " is \"%.*s\"; \"NFC\" or \"none\"", eng_gguf_name(g),
		       (int)(n < 40 ? n : 40), s);
}

/* tokenizer.ggml.add_bos_token and add_eos_token: the tokens Hugging Face's
 * post-processor put around a text (llama.cpp's converter writes add_eos_token for
 * Qwen3-Embedding's appended <|endoftext|>). */
static int special_ends(const struct eng_gguf *g, struct tok *t)
{
	static const char *const flag[2] = {"tokenizer.ggml.add_bos_token",
					    "tokenizer.ggml.add_eos_token"};
	static const char *const key[2] = {"tokenizer.ggml.bos_token_id",
					   "tokenizer.ggml.eos_token_id"};
	struct tok_ends e = {0};
	for (int side = 0; side < 2; side++) {
		int64_t on = 0, id = -1;
		int r = eng_gguf_int(g, flag[side], &on);
		if (r < 0)
			return -1;
		if (r == 1 || !on)
			continue;
		if ((r = eng_gguf_int(g, key[side], &id)) != 0)
			return r < 0 ? -1
				     : err_set("%s: key %s is true and %s is missing",
					       eng_gguf_name(g), flag[side], key[side]);
		if (id < 0 || id >= tok_vocab_size(t))
			return err_set("%s: key %s is %lld, not a token id", eng_gguf_name(g),
				       key[side], (long long)id);
		e.ids[side][e.n[side]++] = (int32_t)id;
	}
	return tok_set_ends(t, &e);
}

struct tok *loader_tokenizer_gguf(const struct eng_gguf *g, char **json, size_t *json_len)
{
	struct tok_vocab v = {
		.name = eng_gguf_name(g), .tokens_key = TOKENS, .merges_key = MERGES, .nfc = true};
	const char **tokens = NULL, **merges = NULL;
	size_t *tlen = NULL, *mlen = NULL;
	unsigned char *kinds = NULL;
	char *tmpl = NULL, eos[256], pad[256];
	struct tok *t = NULL;
	/* Qwen2's pre-tokenizer; tokenizer.json has the NFC normalizer with it */
	if (expect_str(g, "tokenizer.ggml.model", "gpt2") || pre_tokenizer(g) ||
	    normalizer(g, &v.nfc) || str_list(g, TOKENS, &v.n_tokens, &tokens, &tlen) ||
	    str_list(g, MERGES, &v.n_merges, &merges, &mlen))
		goto out;
	v.tokens = tokens;
	v.token_len = tlen;
	v.merges = merges;
	v.merge_len = mlen;
	if (kinds_of(g, &v, &kinds))
		goto out;
	qwen_non_special(tokens, tlen, kinds, v.n_tokens);
	v.kinds = kinds;
	if (token_text(g, "tokenizer.ggml.eos_token_id", &v, true, eos, sizeof eos) ||
	    token_text(g, "tokenizer.ggml.padding_token_id", &v, false, pad, sizeof pad) ||
	    chat_template(g, &tmpl))
		goto out;
	v.eos = eos[0] ? eos : NULL;
	v.pad = pad[0] ? pad : NULL;
	v.chat_template = tmpl;
	t = tok_from_vocab(&v);
	if (t && special_ends(g, t)) {
		tok_free(t);
		t = NULL;
	}
	if (t && json && !(*json = tok_vocab_json(&v, json_len))) {
		tok_free(t);
		t = NULL;
	}
out:
	free(tokens);
	free(tlen);
	free(kinds);
	free(merges);
	free(mlen);
	free(tmpl);
	return t;
}

struct tok *loader_tokenizer_json(const char *path, char **json, size_t *len)
{
	struct eng_gguf *g = eng_gguf_open(path);
	struct tok *t = g ? loader_tokenizer_gguf(g, json, len) : NULL;
	eng_gguf_free(g);
	return t;
}

int loader_check_vocab(const struct tok *t, int vocab_size, const char *path)
{
	int n = tok_vocab_size(t);
	if (n <= vocab_size)
		return 0;
	return err_set("%s: the tokenizer has %d ids but the model's vocab_size is %d: ids %d to "
		       "%d have no embedding row (the tokenizer is not this model's)",
		       path, n, vocab_size, vocab_size, n - 1);
}

/* Whether path is read as a GGUF file: any regular file is, so that one that is not
 * GGUF is refused as such (the weights' loader says the same), not taken for a
 * directory. */
static bool as_gguf(const char *path)
{
	return fio_is_file(path); /* a GGUF file is one (eng_is_gguf also reads its magic) */
}

bool loader_has_tokenizer(const char *dir, const char *why)
{
	char *tj = fio_join(dir, "tokenizer.json");
	bool none = tj && !fio_exists(tj);
	if (none)
		err_set("%s: missing: %s", tj, why);
	free(tj);
	return !none;
}

struct tok *loader_tokenizer(const char *path)
{
	if (!as_gguf(path)) {
		if (fio_is_dir(path) &&
		    !loader_has_tokenizer(path,
					  "the model has no tokenizer (as one trained on token ids "
					  "alone), and text needs one"))
			return NULL;
		return tok_load(path);
	}
	struct eng_gguf *g = eng_gguf_open(path);
	struct tok *t = g ? loader_tokenizer_gguf(g, NULL, NULL) : NULL;
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
	if (r == 0 && (v < 0 || v > SAMP_MAX_TOP_K))
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
	if (!as_gguf(path))
		return samp_load_generation_config(path, p, eos, n_eos);
	struct eng_gguf *g = eng_gguf_open(path);
	int rc = g ? gguf_generation(g, p, eos, n_eos) : -1;
	eng_gguf_free(g);
	return rc;
}
