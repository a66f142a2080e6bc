/* tokenizer.c — encode (added tokens, NFC, pre-tokenizer, BPE), decode and lookups.
 *
 * Bytes that are not valid UTF-8 cannot reach Hugging Face tokenizers (it takes
 * strings); here each such byte becomes the token of that single byte, and the valid
 * runs between them are encoded as usual (NFC applies to those runs only). Decoding
 * the ids therefore gives the input back byte for byte, except where NFC changed it. */
#include "tokenizer/tokenizer.h"

#include <stdlib.h>
#include <string.h>
#include <utf8proc.h>

#include "src/base/err.h"
#include "tokenizer/bytelevel.h"
#include "tokenizer/nfc.h"
#include "tokenizer/pretok.h"
#include "tokenizer/tok_impl.h"

/* True when NFC might change text holding c (c >= 0x300): combining marks, characters
 * with a canonical decomposition, characters that compose with what precedes them,
 * and the Hangul vowel and trailing jamo (composed algorithmically). Everything below
 * U+0300 is left alone by NFC unless a later character is one of these. */
static bool nfc_suspect(int32_t c)
{
	if ((c >= 0x1161 && c <= 0x1175) || (c >= 0x11A8 && c <= 0x11C2))
		return true;
	const utf8proc_property_t *p = utf8proc_get_property(c);
	return p->combining_class != 0 ||
	       (p->decomp_seqindex != UINT16_MAX && p->decomp_type == 0) ||
	       (p->comb_index != UINT16_MAX && (p->comb_index & 0x8000));
}

/* Scans s[i..n): returns the end of the valid UTF-8 run starting at i, and sets
 * *suspect when it holds a character NFC may change. */
static size_t valid_run(const unsigned char *s, size_t n, size_t i, bool *suspect)
{
	while (i < n) {
		while (i + 8 <= n) {
			uint64_t w;
			memcpy(&w, s + i, 8);
			if (w & 0x8080808080808080ull)
				break;
			i += 8;
		}
		if (i >= n)
			break;
		unsigned b = s[i];
		if (b < 0x80) {
			i++;
			continue;
		}
		int32_t c;
		size_t k;
		if (b >= 0xC2 && b <= 0xDF && n - i >= 2 && (s[i + 1] & 0xC0) == 0x80) {
			c = (int32_t)(b & 0x1F) << 6 | (s[i + 1] & 0x3F);
			k = 2;
		} else if (b >= 0xE0 && b <= 0xEF && n - i >= 3 && (s[i + 1] & 0xC0) == 0x80 &&
			   (s[i + 2] & 0xC0) == 0x80) {
			c = (int32_t)(b & 0x0F) << 12 | (int32_t)(s[i + 1] & 0x3F) << 6 |
			    (s[i + 2] & 0x3F);
			if (c < 0x800 || (c >= 0xD800 && c <= 0xDFFF))
				break;
			k = 3;
		} else if (b >= 0xF0 && b <= 0xF4 && n - i >= 4 && (s[i + 1] & 0xC0) == 0x80 &&
			   (s[i + 2] & 0xC0) == 0x80 && (s[i + 3] & 0xC0) == 0x80) {
			c = (int32_t)(b & 0x07) << 18 | (int32_t)(s[i + 1] & 0x3F) << 12 |
			    (int32_t)(s[i + 2] & 0x3F) << 6 | (s[i + 3] & 0x3F);
			if (c < 0x10000 || c > 0x10FFFF)
				break;
			k = 4;
		} else {
			break;
		}
		if (c >= 0x300 && !*suspect && nfc_suspect(c))
			*suspect = true;
		i += k;
	}
	return i;
}

/* Pre-tokenizes and BPE-encodes valid, normalized text. */
static int encode_pieces(struct tok *t, const char *s, size_t n, struct bpe_ids *ids)
{
	for (size_t pos = 0; pos < n;) {
		size_t e = pretok_next(s, n, pos);
		int32_t id;
		if (t->ignore_merges && (id = bpe_lookup(t->bpe, s + pos, e - pos)) >= 0) {
			if (bpe_ids_push(ids, &id, 1))
				return -1;
		} else if (bpe_encode(t->bpe, s + pos, e - pos, ids)) {
			return -1;
		}
		pos = e;
	}
	return 0;
}

/* A valid UTF-8 run: NFC, the normalized added tokens (the special ones as text
 * when `literal`), then the pieces. */
static int encode_valid(struct tok *t, const char *s, size_t n, bool suspect, bool literal,
			struct bpe_ids *ids)
{
	char *nf = NULL;
	if (t->nfc && suspect) {
		size_t m;
		if (!(nf = tok_nfc(s, n, &m)))
			return -1;
		s = nf;
		n = m;
	}
	int rc = 0;
	if (t->added.any[1]) {
		t->segs2.n = 0;
		struct added_literal all = {NULL, 0, true};
		rc = added_split(&t->added, true, s, n, literal ? &all : NULL, &t->segs2);
		for (size_t k = 0; !rc && k < t->segs2.n; k++) {
			const struct added_seg *g = &t->segs2.v[k];
			rc = g->id >= 0 ? bpe_ids_push(ids, &g->id, 1)
					: encode_pieces(t, s + g->start, g->end - g->start, ids);
		}
	} else {
		rc = encode_pieces(t, s, n, ids);
	}
	free(nf);
	return rc;
}

/* Text between added tokens: valid runs, and single bytes for invalid UTF-8. */
static int encode_text(struct tok *t, const char *s, size_t n, bool literal, struct bpe_ids *ids)
{
	const unsigned char *u = (const unsigned char *)s;
	for (size_t i = 0; i < n;) {
		bool suspect = false;
		size_t e = valid_run(u, n, i, &suspect);
		if (e > i) {
			if (encode_valid(t, s + i, e - i, suspect, literal, ids))
				return -1;
			i = e;
		} else {
			/* an invalid byte: the token of that byte alone */
			if (bpe_encode(t->bpe, s + i, 1, ids))
				return -1;
			i++;
		}
	}
	return 0;
}

static int32_t *encode_locked(struct tok *t, const char *text, size_t len,
			      const struct tok_span *literal, size_t n_literal, size_t *n)
{
	struct bpe_ids ids = {0};
	struct added_literal lit = {literal, n_literal, false};
	t->segs.n = 0;
	if (added_split(&t->added, false, text, len, n_literal ? &lit : NULL, &t->segs))
		return NULL;
	for (size_t k = 0; k < t->segs.n; k++) {
		const struct added_seg *g = &t->segs.v[k];
		bool in_literal = n_literal && added_literal_overlaps(&lit, g->start, g->end);
		int rc = g->id >= 0 ? bpe_ids_push(&ids, &g->id, 1)
				    : encode_text(t, text + g->start, g->end - g->start, in_literal,
						  &ids);
		if (rc) {
			free(ids.v);
			return NULL;
		}
	}
	if (!ids.v && !(ids.v = malloc(sizeof *ids.v))) {
		err_set("tokenizer: out of memory");
		return NULL;
	}
	*n = ids.n;
	return ids.v;
}

int32_t *tok_encode_literal(struct tok *t, const char *text, size_t len,
			    const struct tok_span *literal, size_t n_literal, size_t *n)
{
	pthread_mutex_lock(&t->lock);
	int32_t *ids = encode_locked(t, text, len, literal, n_literal, n);
	pthread_mutex_unlock(&t->lock);
	return ids;
}

int32_t *tok_encode(struct tok *t, const char *text, size_t len, size_t *n)
{
	return tok_encode_literal(t, text, len, NULL, 0, n);
}

char *tok_decode(const struct tok *t, const int32_t *ids, size_t n, bool skip_special, size_t *len)
{
	size_t total = 0;
	for (size_t i = 0; i < n; i++) {
		if (ids[i] < 0 || ids[i] >= t->n_ids || !(t->flags[ids[i]] & TOKF_VALID)) {
			bool gap = ids[i] >= 0 && ids[i] < t->n_ids;
			err_set(gap ? "token id %d at position %zu names no token: the "
				      "tokenizer's ids leave it out (ids 0 to %d)"
				    : "token id %d at position %zu is not in the vocabulary (ids 0 "
				      "to %d)",
				ids[i], i, t->n_ids - 1);
			return NULL;
		}
		size_t k;
		tok_bytes(t, ids[i], &k);
		total += k;
	}
	char *out = malloc(total + 1), *p = out;
	if (!out) {
		err_set("tokenizer: out of memory");
		return NULL;
	}
	for (size_t i = 0; i < n; i++) {
		if (skip_special && (t->flags[ids[i]] & TOKF_SPECIAL))
			continue;
		size_t k;
		const char *b = tok_bytes(t, ids[i], &k);
		memcpy(p, b, k);
		p += k;
	}
	*p = 0;
	*len = (size_t)(p - out);
	return out;
}

int tok_vocab_size(const struct tok *t)
{
	return t->n_ids;
}

int tok_id(const struct tok *t, const char *content)
{
	size_t n = strlen(content);
	for (size_t k = 0; k < t->added.n; k++)
		if (!strcmp(t->added.t[k].content, content))
			return t->added.t[k].id;
	/* base tokens are named as in tokenizer.json, in the byte-level alphabet */
	char *raw = malloc(n + 1);
	if (!raw)
		return -1;
	long m = bl_decode(content, n, raw);
	int id = m > 0 ? bpe_lookup(t->bpe, raw, (size_t)m) : -1;
	free(raw);
	return id;
}

const char *tok_piece(const struct tok *t, int32_t id, size_t *len)
{
	if (id < 0 || id >= t->n_ids || !(t->flags[id] & TOKF_VALID))
		return NULL;
	return tok_bytes(t, id, len);
}

char *tok_spelling(const struct tok *t, int32_t id, size_t *len)
{
	size_t n = 0;
	const char *piece = tok_piece(t, id, &n);
	bool added = piece && (t->flags[id] & TOKF_ADDED);
	char *out = piece ? malloc(added ? n + 1 : 2 * n + 1) : NULL; /* the alphabet: < U+0800 */
	if (!out)
		return NULL;
	size_t k = 0;
	if (added)
		memcpy(out, piece, k = n);
	for (size_t i = 0; !added && i < n; i++)
		k += (size_t)utf8proc_encode_char(
			(utf8proc_int32_t)bl_byte_to_char((unsigned char)piece[i]),
			(utf8proc_uint8_t *)out + k);
	out[k] = 0;
	*len = k;
	return out;
}

bool tok_is_special(const struct tok *t, int32_t id)
{
	return id >= 0 && id < t->n_ids && (t->flags[id] & TOKF_SPECIAL);
}

bool tok_is_added(const struct tok *t, int32_t id)
{
	return id >= 0 && id < t->n_ids && (t->flags[id] & TOKF_ADDED);
}

const char *tok_chat_template(const struct tok *t)
{
	return t->chat_template;
}

const char *tok_eos_token(const struct tok *t)
{
	return t->eos;
}

const char *tok_pad_token(const struct tok *t)
{
	return t->pad;
}
