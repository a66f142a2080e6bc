/* tokload.c — loading tokenizer.json into a struct tok, then what tokconfig.c reads
 * beside it (tokenizer_config.json, chat_template.jinja). */
#include "tokenizer/tokenizer.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "src/base/err.h"
#include "src/base/fileio.h"
#include "tokenizer/bytelevel.h"
#include "tokenizer/jscan.h"
#include "tokenizer/nfc.h"
#include "tokenizer/pretok.h"
#include "tokenizer/tok_impl.h"

/* A merge read before it can be resolved (merges may precede the vocabulary). */
struct pending {
	char *bytes; /* raw bytes of both sides, back to back */
	size_t len, cap;
	uint32_t *split; /* per merge: offset of its left side, length of left, of right */
	size_t n, ncap;
};

static int pend_add(struct pending *p, const char *a, size_t na, const char *b, size_t nb)
{
	if (p->len + na + nb > p->cap) {
		size_t cap = p->cap ? p->cap : 1 << 20;
		while (cap < p->len + na + nb)
			cap *= 2;
		char *q = realloc(p->bytes, cap);
		if (!q)
			return err_set("tokenizer: out of memory");
		p->bytes = q;
		p->cap = cap;
	}
	if (p->n * 3 + 3 > p->ncap) {
		size_t cap = p->ncap ? p->ncap * 2 : 3 << 16;
		uint32_t *q = realloc(p->split, cap * sizeof *q);
		if (!q)
			return err_set("tokenizer: out of memory");
		p->split = q;
		p->ncap = cap;
	}
	if (p->len + na + nb >= UINT32_MAX)
		return err_set("merges too large");
	p->split[p->n * 3] = (uint32_t)p->len;
	p->split[p->n * 3 + 1] = (uint32_t)na;
	p->split[p->n * 3 + 2] = (uint32_t)nb;
	memcpy(p->bytes + p->len, a, na);
	memcpy(p->bytes + p->len + na, b, nb);
	p->len += na + nb;
	p->n++;
	return 0;
}

/* Reads model.vocab: {"token": id, ...}, tokens in the byte-level alphabet. */
static int read_vocab(struct jscan *j, struct bpe *b, char **raw, size_t *raw_cap)
{
	j->field = "model.vocab";
	if (jscan_expect(j, '{'))
		return -1;
	for (int r, first = 1; (r = jscan_more(j, '}', first)) != 0; first = 0) {
		int64_t id;
		if (r < 0 || jscan_string(j))
			return -1;
		if (j->buf_len > *raw_cap) {
			char *q = realloc(*raw, j->buf_len);
			if (!q)
				return err_set("tokenizer: out of memory");
			*raw = q;
			*raw_cap = j->buf_len;
		}
		long n = bl_decode(j->buf, j->buf_len, *raw);
		if (n < 0)
			return err_set("%s: model.vocab: token \"%.40s\" is not in the byte-level "
				       "alphabet",
				       j->file, j->buf);
		if (jscan_expect(j, ':') || jscan_int(j, 0, BPE_MAX_ID - 1, &id))
			return -1;
		if (bpe_add_token(b, *raw, (size_t)n, (int32_t)id))
			return err_prefix("%s: model.vocab", j->file);
	}
	return 0;
}

/* Reads one side of a merge from j->buf[0..n) into raw bytes appended to tmp. */
static int merge_side(struct jscan *j, const char *s, size_t n, char *out, size_t *len)
{
	long k = bl_decode(s, n, out);
	if (k <= 0)
		return err_set("%s: model.merges: \"%.40s\" is not a byte-level token", j->file, s);
	*len = (size_t)k;
	return 0;
}

/* Whether token id holds exactly the bytes s[0..n). */
static bool token_is(const struct bpe *b, int32_t id, const char *s, size_t n)
{
	size_t tn;
	const char *t = bpe_token(b, id, &tn);
	return t && tn == n && memcmp(t, s, n) == 0;
}

/* Resolves merge number i, the raw bytes s[0..na) + s[na..na+nb), against the
 * vocabulary: each side and their concatenation must be tokens (tokenizers refuses
 * such a file too). A vocabulary built by BPE training numbers merged tokens in merge order, so the
 * merged token is first looked for at *next, the id after the previous merge's; a
 * token's bytes are unique, so a match there is what the lookup would find. */
int tok_resolve_merge(struct bpe *b, const char *s, size_t na, size_t nb, size_t i,
		      const char *file, const char *merges, const char *vocab, int32_t *next)
{
	int32_t a = bpe_lookup(b, s, na), c = bpe_lookup(b, s + na, nb);
	int32_t m = token_is(b, *next, s, na + nb) ? *next : bpe_lookup(b, s, na + nb);
	*next = m + 1;
	if (a < 0 || c < 0 || m < 0)
		return err_set("%s: %s: entry %zu: %s is not in %s", file, merges, i,
			       a < 0   ? "its left token"
			       : c < 0 ? "its right token"
				       : "the merged token",
			       vocab);
	return bpe_add_merge(b, a, c, (int32_t)i, m);
}

static int resolve_merges(struct bpe *b, const struct pending *p, const char *file)
{
	int32_t next = 0;
	for (size_t i = 0; i < p->n; i++)
		if (tok_resolve_merge(b, p->bytes + p->split[i * 3], p->split[i * 3 + 1],
				      p->split[i * 3 + 2], i, file, "model.merges", "model.vocab",
				      &next))
			return -1;
	return 0;
}

/* Reads model.merges: ["a b", ...] or [["a", "b"], ...]. With the vocabulary already
 * read (the usual order) each merge is resolved at once, else kept in p for later. */
static int read_merges(struct jscan *j, struct pending *p, struct bpe *b, bool direct)
{
	char *cat = NULL; /* both sides' raw bytes, back to back */
	size_t cap = 0, i = 0;
	int32_t next = 0; /* where tok_resolve_merge looks for the merged token first */
	int rc = -1;
	j->field = "model.merges";
	if (jscan_expect(j, '['))
		return -1;
	for (int r, first = 1; (r = jscan_more(j, ']', first)) != 0; first = 0, i++) {
		size_t na = 0, nb = 0;
		if (r < 0)
			goto out;
		bool pair = jscan_peek(j) == '[';
		if ((pair && jscan_expect(j, '[')) || jscan_string(j))
			goto out;
		/* a side never decodes to more bytes than its text; the pair form reads two
		 * strings, so room for twice the longest seen */
		if (2 * j->buf_len + 2 > cap) {
			cap = 2 * j->buf_len + 64;
			char *q = realloc(cat, cap);
			if (!q) {
				err_set("tokenizer: out of memory");
				goto out;
			}
			cat = q;
		}
		if (pair) {
			if (merge_side(j, j->buf, j->buf_len, cat, &na))
				goto out;
			if (jscan_expect(j, ',') || jscan_string(j) || jscan_expect(j, ']'))
				goto out;
			if (na + j->buf_len + 1 > cap) {
				cap = na + j->buf_len + 64;
				char *q = realloc(cat, cap);
				if (!q) {
					err_set("tokenizer: out of memory");
					goto out;
				}
				cat = q;
			}
			if (merge_side(j, j->buf, j->buf_len, cat + na, &nb))
				goto out;
		} else {
			/* "a b": byte-level tokens never hold a space, so there is exactly one */
			char *sp = memchr(j->buf, ' ', j->buf_len);
			if (!sp || memchr(sp + 1, ' ', j->buf_len - (size_t)(sp - j->buf) - 1)) {
				err_set("%s: model.merges: entry %zu \"%.40s\" is not two tokens "
					"separated by one space",
					j->file, i, j->buf);
				goto out;
			}
			size_t la = (size_t)(sp - j->buf);
			if (merge_side(j, j->buf, la, cat, &na) ||
			    merge_side(j, sp + 1, j->buf_len - la - 1, cat + na, &nb))
				goto out;
		}
		if (direct ? tok_resolve_merge(b, cat, na, nb, i, j->file, "model.merges",
					       "model.vocab", &next)
			   : pend_add(p, cat, na, cat + na, nb))
			goto out;
	}
	rc = 0;
out:
	free(cat);
	return rc;
}

/* A small value of the file as a jansson tree (for everything but vocab/merges). */
static json_t *span_json(struct jscan *j)
{
	size_t a, e;
	if (jscan_skip(j, &a, &e))
		return NULL;
	json_error_t je;
	json_t *v = json_loadb(j->s + a, e - a, JSON_DECODE_ANY | JSON_ALLOW_NUL, &je);
	if (!v)
		err_set("%s: %s: %s", j->file, j->field, je.text);
	return v;
}

static int check_model_field(struct tok *t, struct jscan *j, const char *key)
{
	json_t *v = span_json(j);
	if (!v)
		return -1;
	int rc = 0;
	if (!strcmp(key, "type")) {
		if (!json_is_string(v) || strcmp(json_string_value(v), "BPE") != 0)
			rc = err_set("%s: model.type: \"%s\" is not supported (only BPE)", j->file,
				     json_is_string(v) ? json_string_value(v) : "(not a string)");
	} else if (!strcmp(key, "dropout")) {
		if (!json_is_null(v) && !(json_is_number(v) && json_number_value(v) == 0))
			rc = err_set("%s: model.dropout: BPE dropout is not supported", j->file);
	} else if (!strcmp(key, "continuing_subword_prefix") ||
		   !strcmp(key, "end_of_word_suffix")) {
		if (!json_is_null(v) && !(json_is_string(v) && !*json_string_value(v)))
			rc = err_set("%s: model.%s: must be empty for a byte-level BPE", j->file,
				     key);
	} else if (!strcmp(key, "ignore_merges")) {
		if (!json_is_boolean(v))
			rc = err_set("%s: model.ignore_merges: not a boolean", j->file);
		t->ignore_merges = json_is_true(v);
	} else if (!strcmp(key, "byte_fallback") || !strcmp(key, "fuse_unk")) {
		if (!json_is_boolean(v))
			rc = err_set("%s: model.%s: not a boolean", j->file, key);
	} else if (!strcmp(key, "unk_token")) {
		if (!json_is_null(v) && !json_is_string(v))
			rc = err_set("%s: model.unk_token: not a string", j->file);
	}
	json_decref(v);
	return rc;
}

static int read_model(struct tok *t, struct jscan *j, bool *seen_type)
{
	struct pending p = {0};
	char *raw = NULL;
	size_t raw_cap = 0;
	int rc = -1;
	bool vocab = false, merges = false;
	j->field = "model";
	if (jscan_expect(j, '{'))
		return -1;
	for (int r, first = 1; (r = jscan_more(j, '}', first)) != 0; first = 0) {
		if (r < 0 || jscan_string(j) || jscan_expect(j, ':'))
			goto out;
		char key[32];
		snprintf(key, sizeof key, "%s", j->buf);
		if (!strcmp(key, "vocab")) {
			if (read_vocab(j, t->bpe, &raw, &raw_cap))
				goto out;
			vocab = true;
		} else if (!strcmp(key, "merges")) {
			if (read_merges(j, &p, t->bpe, vocab))
				goto out;
			merges = true;
		} else {
			j->field = "model";
			if (!strcmp(key, "type"))
				*seen_type = true;
			if (check_model_field(t, j, key))
				goto out;
		}
		j->field = "model";
	}
	if (!*seen_type)
		rc = err_set("%s: model.type: missing (only BPE is supported)", j->file);
	else if (!vocab || !merges)
		rc = err_set("%s: model.%s: missing", j->file, vocab ? "merges" : "vocab");
	else if (bpe_finish(t->bpe))
		rc = err_prefix("%s: model.vocab", j->file);
	else
		rc = resolve_merges(t->bpe, &p, j->file); /* those read before the vocabulary */
out:
	free(p.bytes);
	free(p.split);
	free(raw);
	return rc;
}

static const char *type_of(json_t *v)
{
	const char *s = json_string_value(json_object_get(v, "type"));
	return s ? s : "(no type)";
}

static bool flag(json_t *o, const char *k, bool dflt, bool *bad)
{
	json_t *v = json_object_get(o, k);
	if (!v)
		return dflt;
	if (!json_is_boolean(v))
		*bad = true;
	return json_is_true(v);
}

int tok_push_added(struct tok *t, const struct added_tok *flags, const char *content, size_t len,
		   int32_t id, const char *file, const char *field)
{
	if (!len)
		return err_set("%s: %s: empty content", file, field);
	if (memchr(content, 0, len))
		return err_set("%s: %s: content holds a NUL", file, field);
	/* Two ids for one text: the text would encode to one of them and the other, an
	 * <|im_end|> overwritten with <|im_start|>, would decode as what it is not. */
	for (size_t k = 0; k < t->added.n; k++)
		if (t->added.t[k].len == len && !memcmp(t->added.t[k].content, content, len))
			return err_set("%s: %s: token \"%.*s\" for id %d given twice (also id %d)",
				       file, field, (int)(len < 40 ? len : 40), content, id,
				       t->added.t[k].id);
	struct added_tok *v = realloc(t->added.t, (t->added.n + 1) * sizeof *v);
	if (!v)
		return err_set("tokenizer: out of memory");
	t->added.t = v;
	struct added_tok a = *flags;
	a.content = malloc(len + 1);
	if (!a.content)
		return err_set("tokenizer: out of memory");
	memcpy(a.content, content, len);
	a.content[len] = 0;
	a.len = len;
	a.id = id;
	t->added.t[t->added.n++] = a;
	return 0;
}

int tok_add_added(struct tok *t, const char *content, size_t len, int64_t id, json_t *o,
		  const char *file, const char *field)
{
	bool bad = false;
	struct added_tok a = {0};
	a.special = flag(o, "special", false, &bad);
	a.lstrip = flag(o, "lstrip", false, &bad);
	a.rstrip = flag(o, "rstrip", false, &bad);
	a.single_word = flag(o, "single_word", false, &bad);
	a.normalized = flag(o, "normalized", !a.special, &bad);
	if (bad)
		return err_set("%s: %s: a flag is not a boolean", file, field);
	return tok_push_added(t, &a, content, len, (int32_t)id, file, field);
}

/* added_tokens: [{"id", "content", "special", "lstrip", "rstrip", "single_word",
 * "normalized"}, ...]; absent flags take tokenizers' defaults. */
static int read_added(struct tok *t, json_t *v, const char *file)
{
	if (json_is_null(v))
		return 0;
	if (!json_is_array(v))
		return err_set("%s: added_tokens: not an array", file);
	size_t i;
	json_t *o;
	json_array_foreach(v, i, o)
	{
		char field[48];
		snprintf(field, sizeof field, "added_tokens[%zu]", i);
		json_t *id = json_object_get(o, "id"), *c = json_object_get(o, "content");
		if (!json_is_integer(id) || json_integer_value(id) < 0 ||
		    json_integer_value(id) >= BPE_MAX_ID)
			return err_set("%s: %s.id: missing or not an id", file, field);
		if (!json_is_string(c))
			return err_set("%s: %s.content: missing or not a string", file, field);
		for (size_t k = 0; k < t->added.n; k++)
			if (t->added.t[k].id == json_integer_value(id))
				return err_set("%s: %s.id: %lld given twice", file, field,
					       (long long)json_integer_value(id));
		if (tok_add_added(t, json_string_value(c), json_string_length(c),
				  json_integer_value(id), o, file, field))
			return -1;
	}
	return 0;
}

int tok_read_normalizer(json_t *v, bool *nfc, const char *file)
{
	*nfc = false;
	if (json_is_null(v))
		return 0;
	const char *ty = type_of(v);
	if (!strcmp(ty, "NFC")) {
		*nfc = true;
		return 0;
	}
	json_t *seq = json_object_get(v, "normalizers");
	if (!strcmp(ty, "Sequence") && json_array_size(seq) <= 1) {
		if (json_array_size(seq) == 1)
			return tok_read_normalizer(json_array_get(seq, 0), nfc, file);
		return 0;
	}
	return err_set("%s: normalizer: type \"%s\" is not supported (only NFC or none)", file, ty);
}

static int read_pretok(json_t *v, const char *file)
{
	const char *want = "need Sequence[Split(Qwen2 regex), ByteLevel]";
	json_t *seq = json_object_get(v, "pretokenizers");
	if (strcmp(type_of(v), "Sequence") != 0 || json_array_size(seq) != 2)
		return err_set("%s: pre_tokenizer: type \"%s\" is not supported (%s)", file,
			       type_of(v), want);
	json_t *sp = json_array_get(seq, 0), *bl = json_array_get(seq, 1);
	if (strcmp(type_of(sp), "Split") != 0)
		return err_set(
			"%s: pre_tokenizer.pretokenizers[0]: type \"%s\" is not supported (%s)",
			file, type_of(sp), want);
	const char *re =
		json_string_value(json_object_get(json_object_get(sp, "pattern"), "Regex"));
	if (!re)
		return err_set("%s: pre_tokenizer.pretokenizers[0].pattern: not a Regex", file);
	if (strcmp(re, pretok_qwen2_regex) != 0)
		return err_set("%s: pre_tokenizer.pretokenizers[0].pattern.Regex: \"%.60s\" is not "
			       "the Qwen2 pattern",
			       file, re);
	const char *beh = json_string_value(json_object_get(sp, "behavior"));
	if (!beh || strcmp(beh, "Isolated") != 0)
		return err_set("%s: pre_tokenizer.pretokenizers[0].behavior: \"%s\" is not "
			       "supported (only Isolated)",
			       file, beh ? beh : "(missing)");
	if (json_is_true(json_object_get(sp, "invert")))
		return err_set("%s: pre_tokenizer.pretokenizers[0].invert: true is not supported",
			       file);
	if (strcmp(type_of(bl), "ByteLevel") != 0)
		return err_set(
			"%s: pre_tokenizer.pretokenizers[1]: type \"%s\" is not supported (%s)",
			file, type_of(bl), want);
	if (json_is_true(json_object_get(bl, "add_prefix_space")) ||
	    json_is_true(json_object_get(bl, "use_regex")))
		return err_set("%s: pre_tokenizer.pretokenizers[1]: add_prefix_space and use_regex "
			       "must be false",
			       file);
	return 0;
}

static int read_section(struct tok *t, struct jscan *j, const char *key)
{
	json_t *v = span_json(j);
	if (!v)
		return -1;
	int rc = 0;
	if (!strcmp(key, "added_tokens")) {
		rc = read_added(t, v, j->file);
	} else if (!strcmp(key, "normalizer")) {
		rc = tok_read_normalizer(v, &t->nfc, j->file);
	} else if (!strcmp(key, "pre_tokenizer")) {
		rc = read_pretok(v, j->file);
	} else if (!strcmp(key, "decoder")) {
		if (strcmp(type_of(v), "ByteLevel") != 0)
			rc = err_set("%s: decoder: type \"%s\" is not supported (only ByteLevel)",
				     j->file, json_is_null(v) ? "null" : type_of(v));
	} else if (!strcmp(key, "post_processor")) {
		rc = tok_parse_ends(v, j->file, &t->ends);
	} else if (!strcmp(key, "padding")) {
		/* padding to the longest of a batch leaves one text as it is, and every encode
		 * here is of one text (transformers sets padding per call anyway) */
		if (!json_is_null(v) &&
		    !json_is_string(json_object_get(v, "strategy")) /* "BatchLongest" */)
			rc = err_set("%s: padding: only null or the BatchLongest strategy (a "
				     "fixed length would pad every text)",
				     j->file);
	} else if (!strcmp(key, "truncation")) {
		if (!json_is_null(v))
			rc = err_set("%s: %s: must be null (not supported)", j->file, key);
	}
	json_decref(v);
	return rc;
}

/* The top level of tokenizer.json: the model with the scanner, the rest with jansson. */
static int read_tokenizer_json(struct tok *t, const char *s, size_t len, const char *file)
{
	struct jscan j;
	bool seen[5] = {0}, type = false;
	static const char *const need[5] = {"model", "pre_tokenizer", "decoder", "normalizer",
					    "added_tokens"};
	jscan_init(&j, s, len, file);
	int rc = -1;
	if (jscan_expect(&j, '{'))
		goto out;
	for (int r, first = 1; (r = jscan_more(&j, '}', first)) != 0; first = 0) {
		if (r < 0 || jscan_string(&j) || jscan_expect(&j, ':'))
			goto out;
		char key[32];
		snprintf(key, sizeof key, "%s", j.buf);
		for (int k = 0; k < 5; k++)
			if (!strcmp(key, need[k])) {
				if (seen[k]) {
					err_set("%s: %s: given twice", file, key);
					goto out;
				}
				seen[k] = true;
			}
		j.field = key;
		if (!strcmp(key, "model") ? read_model(t, &j, &type) : read_section(t, &j, key))
			goto out;
		j.field = "(top level)";
	}
	if (jscan_peek(&j) != 0) {
		jscan_error(&j, "data after the top-level object");
		goto out;
	}
	for (int k = 0; k < 3; k++)
		if (!seen[k]) {
			err_set("%s: %s: missing", file, need[k]);
			goto out;
		}
	rc = 0;
out:
	jscan_done(&j);
	return rc;
}

/* The bytes the ByteLevel decoder gives an added token: its characters mapped back
 * through the byte alphabet when they all are in it, else its UTF-8 as is. */
static size_t added_bytes(const struct added_tok *a, char *out)
{
	long n = bl_decode(a->content, a->len, out);
	if (n >= 0)
		return (size_t)n;
	memcpy(out, a->content, a->len);
	return a->len;
}

/* The per-id flags and the added tokens' decoded bytes; then normalized added
 * tokens get their NFC form for matching. */
int tok_build_pieces(struct tok *t, const char *file)
{
	int32_t lim = bpe_id_limit(t->bpe), amin = INT32_MAX;
	size_t total = 0;
	for (size_t k = 0; k < t->added.n; k++) {
		if (t->added.t[k].id >= lim)
			lim = t->added.t[k].id + 1;
		if (t->added.t[k].id < amin)
			amin = t->added.t[k].id;
		total += t->added.t[k].len;
	}
	if (amin == INT32_MAX)
		amin = lim;
	t->n_ids = lim;
	t->amin = amin;
	t->flags = calloc((size_t)lim + 1, 1);
	t->abytes = malloc(total + 1);
	t->aoff = calloc((size_t)(lim - amin) + 1, sizeof *t->aoff);
	t->alen = calloc((size_t)(lim - amin) + 1, sizeof *t->alen);
	if (!t->flags || !t->abytes || !t->aoff || !t->alen)
		return err_set("tokenizer: out of memory");
	for (int32_t i = 0; i < bpe_id_limit(t->bpe); i++) {
		size_t n;
		if (bpe_token(t->bpe, i, &n))
			t->flags[i] = TOKF_VALID;
	}
	size_t o = 0;
	for (size_t k = 0; k < t->added.n; k++) {
		struct added_tok *a = &t->added.t[k];
		size_t n = added_bytes(a, t->abytes + o), vn;
		/* tokenizers would give such a token another id (with a warning); refusing
		 * the file is clearer than ids that disagree with it */
		const char *v = bpe_token(t->bpe, a->id, &vn);
		if (v && (vn != n || memcmp(v, t->abytes + o, n) != 0))
			return err_set("%s: added_tokens: \"%.40s\": id %d is the vocabulary's "
				       "token for other text",
				       file, a->content, a->id);
		t->aoff[a->id - amin] = (uint32_t)o;
		t->alen[a->id - amin] = (uint32_t)n;
		t->flags[a->id] = TOKF_VALID | TOKF_ADDED | (a->special ? TOKF_SPECIAL : 0);
		o += n;
		if (a->normalized && t->nfc) {
			size_t m;
			char *nf = tok_nfc(a->content, strlen(a->content), &m);
			if (!nf)
				return err_set("%s: added_tokens: \"%.40s\": NFC failed", file,
					       a->content);
			free(a->content);
			a->content = nf;
			a->len = m;
		}
	}
	for (int side = 0; side < 2; side++)
		for (int k = 0; k < t->ends.n[side]; k++)
			if (t->ends.ids[side][k] >= lim || !t->flags[t->ends.ids[side][k]])
				return err_set("%s: post_processor: special token id %d is not in "
					       "the vocabulary",
					       file, t->ends.ids[side][k]);
	added_prepare(&t->added);
	return 0;
}

/* Maps the whole file read-only, populated at once: a read()-into-malloc copy takes
 * a page fault for every page of its buffer, and where faults are dear (a virtual
 * machine) they cost more than the parsing. */
static const char *map_file(const char *path, size_t *len)
{
	int fd = fio_open_file(path, NULL); /* a FIFO here would block the open */
	if (fd < 0)
		return NULL;
	struct stat st = {0};
	if (fstat(fd, &st) != 0 || st.st_size == 0) {
		err_set("%s: empty", path);
		close(fd);
		return NULL;
	}
	void *p = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE | MAP_POPULATE, fd, 0);
	close(fd);
	if (p == MAP_FAILED) {
		err_set("%s: mmap: %s", path, strerror(errno));
		return NULL;
	}
	*len = (size_t)st.st_size;
	return p;
}

struct tok *tok_load_files(const char *tokenizer_json, const char *config_path)
{
	size_t len;
	const char *s = map_file(tokenizer_json, &len);
	if (!s)
		return NULL;
	struct tok *t = calloc(1, sizeof *t);
	if (t)
		pthread_mutex_init(&t->lock, NULL);
	if (!t || !(t->bpe = bpe_new())) {
		munmap((void *)s, len);
		free(t);
		err_set("tokenizer: out of memory");
		return NULL;
	}
	/* ~75 bytes of tokenizer.json per vocabulary entry plus merge (Qwen3: 11.4 MB for
	 * 151k of each): sizing the hash tables up front saves rehashing them */
	int rc = bpe_reserve(t->bpe, len / 75, len / 75);
	if (!rc)
		rc = read_tokenizer_json(t, s, len, tokenizer_json);
	munmap((void *)s, len);
	if (!rc && config_path)
		rc = tok_read_config(t, config_path);
	if (!rc)
		rc = tok_build_pieces(t, tokenizer_json);
	if (rc) {
		tok_free(t);
		return NULL;
	}
	return t;
}

/* Whether dir's tokenizer files are being replaced (or were, by a run stopped then);
 * err_set says so. */
static bool placing(const char *dir)
{
	char *mark = fio_join(dir, TOK_PLACING);
	bool yes = mark && fio_exists(mark);
	free(mark);
	if (yes)
		err_set("%s: 'qwenchat train-bpe' is putting a new tokenizer in place there, or "
			"was "
			"stopped while it did (its next run there finishes it)",
			dir);
	return yes;
}

struct tok *tok_load(const char *dir)
{
	if (placing(dir))
		return NULL;
	char *tj = fio_join(dir, "tokenizer.json"), *cj = fio_join(dir, "tokenizer_config.json");
	struct tok *t = NULL;
	if (!tj || !cj)
		err_set("tokenizer: out of memory");
	else if (!fio_exists(tj))
		err_set("%s: missing (no tokenizer there)", tj);
	else
		t = tok_load_files(tj, fio_exists(cj) ? cj : NULL);
	free(tj);
	free(cj);
	if (t && placing(dir)) { /* begun while the files were read */
		tok_free(t);
		t = NULL;
	}
	bool missing = true;
	char *tmpl = t ? tok_read_template_file(dir, &missing) : NULL;
	if (tmpl) {
		free(t->chat_template);
		t->chat_template = tmpl;
	} else if (t && !missing) {
		tok_free(t);
		t = NULL;
	}
	return t;
}

void tok_free(struct tok *t)
{
	if (!t)
		return;
	bpe_free(t->bpe);
	added_clear(&t->added);
	free(t->abytes);
	free(t->aoff);
	free(t->alen);
	free(t->flags);
	free(t->chat_template);
	free(t->eos);
	free(t->pad);
	free(t->segs.v);
	free(t->segs2.v);
	pthread_mutex_destroy(&t->lock);
	free(t);
}
