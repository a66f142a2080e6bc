/* tok_impl.h — struct tok, shared by the tokenizer's own files (not a public API). */
#ifndef QWENCHAT_TOK_IMPL_H
#define QWENCHAT_TOK_IMPL_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "tokenizer/added.h"
#include "tokenizer/bpe.h"
#include "tokenizer/tokenizer.h"

enum { TOKF_VALID = 1, TOKF_ADDED = 2, TOKF_SPECIAL = 4 };

struct tok {
	struct bpe *bpe;
	struct added_set added;
	bool nfc;           /* normalizer NFC (else none) */
	bool ignore_merges; /* model.ignore_merges: a piece in the vocabulary is one token */
	int32_t n_ids;      /* max id + 1 */
	uint8_t *flags;     /* (n_ids) TOKF_* */
	/* decoded bytes of added token id: abytes[aoff[id - amin] ..] (alen[id - amin] bytes);
	 * other ids decode to their vocabulary bytes (bpe_token) */
	int32_t amin;
	char *abytes;
	uint32_t *aoff, *alen; /* (n_ids - amin) */
	char *chat_template, *eos, *pad;
	struct tok_ends ends; /* the post-processor's special tokens (tok_encode_ends) */
	/* scratch reused by tok_encode, and the lock that lets one encode at a time use it
	 * and the piece cache (a server tokenizes requests beside its running one) */
	struct added_segs segs, segs2;
	pthread_mutex_t lock;
};

/* The decoded bytes of a valid id (checked by the caller). */
static inline const char *tok_bytes(const struct tok *t, int32_t id, size_t *n)
{
	if (t->flags[id] & TOKF_ADDED) {
		*n = t->alen[id - t->amin];
		return t->abytes + t->aoff[id - t->amin];
	}
	return bpe_token(t->bpe, id, n);
}

/* Shared by tokenizer.json loading (tokload.c) and tok_from_vocab (tokvocab.c). */

/* Merge i: raw bytes s[0..na) + s[na..na+nb) resolved against the vocabulary and
 * recorded; `merges` and `vocab` name the fields in messages. */
int tok_resolve_merge(struct bpe *b, const char *s, size_t na, size_t nb, size_t i,
		      const char *file, const char *merges, const char *vocab, int32_t *next);
/* Appends added token `id` with `content` and the flags of *flags. */
int tok_push_added(struct tok *t, const struct added_tok *flags, const char *content, size_t len,
		   int32_t id, const char *file, const char *field);
/* Once the vocabulary and added tokens are in: the per-id flags, the added tokens'
 * bytes, their NFC forms. */
int tok_build_pieces(struct tok *t, const char *file);

/* Shared by tokenizer.json loading (tokload.c) and tokenizer_config.json's (tokconfig.c). */
struct json_t;
/* Appends added token `id` with `content` and the flags the JSON object o gives (absent
 * ones take tokenizers' defaults). */
int tok_add_added(struct tok *t, const char *content, size_t len, int64_t id, struct json_t *o,
		  const char *file, const char *field);
/* Reads the tokenizer_config.json at path into t: added_tokens_decoder, eos_token,
 * pad_token, chat_template. 0 or -1 (err_set). */
int tok_read_config(struct tok *t, const char *path);

#endif
