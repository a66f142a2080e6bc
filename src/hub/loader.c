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

#define TOKENS "tokenizer.ggml.tokens"
#define TYPES  "tokenizer.ggml.token_type"
#define MERGES "tokenizer.ggml.merges"
/* GGUF has no key for tokenizer.json's normalizer: Qwen's files have NFC, train-bpe's
 * none. This one, written by quantize, says which; absent, NFC (Qwen's, as in the
 * files llama.cpp's converter makes of Qwen3). */
#define NORMALIZER "qwenchat.tokenizer.normalizer"
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

/* Whether the model directory dir has a tokenizer.json; else (a model trained on
 * token ids alone has none) false with err_set "DIR/tokenizer.json: missing: why". */
static bool has_tokenizer(const char *dir, const char *why)
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
		    !has_tokenizer(path, "the model has no tokenizer (as one trained on token ids "
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

/* ---- the tokenizer as GGUF key/values (qwenchat quantize) ---- */

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

/* eos/padding/bos ids: tokenizer_config.json's tokens, else config.json's ids. */
static int special_ids(json_t *tc, json_t *cfg, const struct vocab_out *v, struct eng_gguf_out *o)
{
	static const struct {
		const char *conf, *id, *key;
	} sp[] = {{"eos_token", "eos_token_id", "tokenizer.ggml.eos_token_id"},
		  {"pad_token", "pad_token_id", "tokenizer.ggml.padding_token_id"},
		  {"bos_token", "bos_token_id", "tokenizer.ggml.bos_token_id"}};
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
		if (id >= 0 && eng_gguf_out_u32(o, sp[k].key, (uint32_t)id))
			return -1;
	}
	json_t *ab = json_object_get(tc, "add_bos_token");
	return json_is_boolean(ab)
		       ? eng_gguf_out_bool(o, "tokenizer.ggml.add_bos_token", json_is_true(ab))
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

/* DIR/NAME parsed; {} for an optional file that is absent. Qwen3's tokenizer.json is
 * 11 MB with ~760k values (151k vocabulary entries and merges): the caps leave room
 * for vocabularies of a million and bound jansson's allocations (~1 GB). */
static json_t *load_json(const char *dir, const char *name, bool optional)
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
	if (!has_tokenizer(dir, "a GGUF file carries its model's tokenizer, and this model has "
				"none (as one trained on token ids alone)"))
		return -1;
	json_t *tj = load_json(dir, "tokenizer.json", false);
	json_t *tc = tj ? load_json(dir, "tokenizer_config.json", true) : NULL;
	json_t *cfg = tc ? load_json(dir, "config.json", true) : NULL;
	json_t *gen = cfg ? load_json(dir, "generation_config.json", true) : NULL;
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
	    special_ids(tc, cfg, &v, o) || template_key(dir, tc, o) || sampling_keys(gen, o))
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
