/* tokvocab.c — a tokenizer from in-memory lists (a GGUF file's tokenizer.ggml.*
 * keys) instead of tokenizer.json: the same vocabulary, merge and added-token code
 * builds it, so both give the same ids. */
#include "tokenizer/tokenizer.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "src/base/err.h"
#include "src/base/utf8.h"
#include "tokenizer/bytelevel.h"
#include "tokenizer/tok_impl.h"
#include "tokenizer/tokjson.h"

/* Grows *buf to hold n bytes. */
static int reserve(char **buf, size_t *cap, size_t n)
{
	if (n <= *cap)
		return 0;
	char *q = realloc(*buf, n);
	if (!q)
		return err_set("tokenizer: out of memory");
	*buf = q;
	*cap = n;
	return 0;
}

static int add_tokens(struct tok *t, const struct tok_vocab *v)
{
	char *raw = NULL;
	size_t cap = 0;
	int rc = 0;
	for (size_t i = 0; i < v->n_tokens && rc == 0; i++) {
		const char *s = v->tokens[i];
		size_t n = v->token_len[i];
		char field[64];
		snprintf(field, sizeof field, "%s[%zu]", v->tokens_key, i);
		if (v->kinds[i] == TOK_UNUSED)
			continue;
		if (v->kinds[i] != TOK_NORMAL) {
			/* added tokens match their text as it is (Qwen's are all
			 * normalized: false); control tokens are the special ones */
			struct added_tok flags = {.special = v->kinds[i] == TOK_SPECIAL};
			rc = tok_push_added(t, &flags, s, n, (int32_t)i, v->name, field);
			continue;
		}
		if ((rc = reserve(&raw, &cap, n + 1)))
			break;
		long k = bl_decode(s, n, raw);
		if (k < 0)
			rc = err_set("%s: %s: \"%.*s\" is not in the byte-level alphabet", v->name,
				     field, (int)(n < 40 ? n : 40), s);
		else if (bpe_add_token(t->bpe, raw, (size_t)k, (int32_t)i))
			rc = err_prefix("%s: %s", v->name, field);
	}
	free(raw);
	if (rc == 0 && bpe_finish(t->bpe))
		rc = err_prefix("%s: %s", v->name, v->tokens_key);
	return rc;
}

/* Merge i "left right": byte-level tokens hold no space, so there is exactly one; *left
 * is the length of the left token. 0 or -1 (err_set). */
static int split_merge(const struct tok_vocab *v, size_t i, size_t *left)
{
	const char *s = v->merges[i];
	size_t n = v->merge_len[i];
	const char *sp = memchr(s, ' ', n);
	if (!sp || memchr(sp + 1, ' ', n - (size_t)(sp - s) - 1))
		return err_set("%s: %s: entry %zu \"%.*s\" is not two tokens separated by one space",
			       v->name, v->merges_key, i, (int)(n < 40 ? n : 40), s);
	*left = (size_t)(sp - s);
	return 0;
}

static int add_merges(struct tok *t, const struct tok_vocab *v)
{
	char *cat = NULL;
	size_t cap = 0;
	int32_t next = 0;
	int rc = 0;
	for (size_t i = 0; i < v->n_merges && rc == 0; i++) {
		const char *s = v->merges[i];
		size_t n = v->merge_len[i], la;
		if ((rc = split_merge(v, i, &la)) || (rc = reserve(&cat, &cap, n + 1)))
			break;
		long a = bl_decode(s, la, cat);
		long b = a > 0 ? bl_decode(s + la + 1, n - la - 1, cat + a) : -1;
		if (a <= 0 || b <= 0)
			rc = err_set("%s: %s: entry %zu \"%.*s\" is not two byte-level tokens",
				     v->name, v->merges_key, i, (int)(n < 40 ? n : 40), s);
		else
			rc = tok_resolve_merge(t->bpe, cat, (size_t)a, (size_t)b, i, v->name,
					       v->merges_key, v->tokens_key, &next);
	}
	free(cat);
	return rc;
}

static int copy_str(char **dst, const char *s)
{
	if (!s)
		return 0;
	*dst = strdup(s);
	return *dst ? 0 : err_set("tokenizer: out of memory");
}

struct tok *tok_from_vocab(const struct tok_vocab *v)
{
	if (v->n_tokens > BPE_MAX_ID) {
		err_set("%s: %s: %zu tokens (at most %d)", v->name, v->tokens_key, v->n_tokens,
			BPE_MAX_ID);
		return NULL;
	}
	struct tok *t = calloc(1, sizeof *t);
	if (t)
		pthread_mutex_init(&t->lock, NULL);
	if (!t || !(t->bpe = bpe_new())) {
		free(t);
		err_set("tokenizer: out of memory");
		return NULL;
	}
	t->nfc = v->nfc;
	int rc = bpe_reserve(t->bpe, v->n_tokens, v->n_merges);
	if (rc == 0)
		rc = add_tokens(t, v);
	if (rc == 0)
		rc = add_merges(t, v);
	if (rc == 0)
		rc = copy_str(&t->chat_template, v->chat_template) || copy_str(&t->eos, v->eos) ||
		     copy_str(&t->pad, v->pad);
	if (rc == 0)
		rc = tok_build_pieces(t, v->name);
	if (rc) {
		tok_free(t);
		return NULL;
	}
	return t;
}

/* Splits the tokens by kind: normal ones into the vocabulary, special and added ones
 * into added_tokens (unused ids have neither). An added token's text is used as it
 * is, so it must be UTF-8 for JSON to hold it (the vocabulary's, in the byte-level
 * alphabet, always are). */
static int split_tokens(const struct tok_vocab *v, struct tokjson *j, struct tokjson_token *vocab,
			struct tokjson_token *added)
{
	for (size_t i = 0; i < v->n_tokens; i++) {
		struct tokjson_token t = {v->tokens[i], v->token_len[i], (int32_t)i,
					  v->kinds[i] == TOK_SPECIAL};
		size_t valid, bad;
		if (v->kinds[i] == TOK_NORMAL) {
			vocab[j->n_vocab++] = t;
		} else if (v->kinds[i] != TOK_UNUSED) {
			utf8_next_piece(t.s, t.n, &valid, &bad);
			if (valid < t.n)
				return err_set("%s: %s[%zu]: the added token is not UTF-8 (byte %zu): "
					       "tokenizer.json cannot hold it",
					       v->name, v->tokens_key, i, valid);
			added[j->n_added++] = t;
		}
	}
	return 0;
}

char *tok_vocab_json(const struct tok_vocab *v, size_t *len)
{
	struct tokjson j = {.nfc = v->nfc};
	struct tokjson_token *vocab = malloc((v->n_tokens + 1) * sizeof *vocab),
			     *added = malloc((v->n_tokens + 1) * sizeof *added);
	struct tokjson_merge *merges = malloc((v->n_merges + 1) * sizeof *merges);
	struct strbuf b = {0};
	int rc = vocab && added && merges ? 0 : err_set("%s: tokenizer.json: out of memory", v->name);
	if (!rc)
		rc = split_tokens(v, &j, vocab, added);
	for (size_t i = 0, la; !rc && i < v->n_merges; i++) {
		const char *s = v->merges[i];
		if (!(rc = split_merge(v, i, &la)))
			merges[j.n_merges++] = (struct tokjson_merge){s, s + la + 1, la,
								      v->merge_len[i] - la - 1};
	}
	j.vocab = vocab;
	j.added = added;
	j.merges = merges;
	if (!rc)
		tokjson_write(&b, &j);
	if (!rc && b.oom)
		rc = err_set("%s: tokenizer.json: out of memory", v->name);
	free(vocab);
	free(added);
	free(merges);
	if (rc) {
		free(b.p);
		return NULL;
	}
	*len = b.n;
	return b.p;
}
