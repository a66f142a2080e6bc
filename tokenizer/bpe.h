/* bpe.h — the BPE model over raw bytes: vocabulary and merge tables (hash tables),
 * merging one pre-token by rank, and a cache of pieces already encoded. */
#ifndef QWENCHAT_BPE_H
#define QWENCHAT_BPE_H

#include <stddef.h>
#include <stdint.h>

struct bpe;

/* A growing array of ids. */
struct bpe_ids {
	int32_t *v;
	size_t n, cap;
};
int bpe_ids_push(struct bpe_ids *a, const int32_t *ids, size_t n);

struct bpe *bpe_new(void);
void bpe_free(struct bpe *b);

/* Adds vocabulary token `id` with raw bytes s[0..n). -1 (err_set) when the id or
 * the bytes are already there, or the id is absurd (>= BPE_MAX_ID). */
enum { BPE_MAX_ID = 1 << 24 };
int bpe_add_token(struct bpe *b, const char *s, size_t n, int32_t id);
/* The id of the token with raw bytes s[0..n), or -1. */
int32_t bpe_lookup(const struct bpe *b, const char *s, size_t n);
/* The raw bytes of token id (NULL when id has no token). */
const char *bpe_token(const struct bpe *b, int32_t id, size_t *n);
/* One more than the largest id in the vocabulary. */
int32_t bpe_id_limit(const struct bpe *b);
/* Records merge (a, b) -> merged with priority `rank` (lower merges first); a pair
 * given twice keeps the later rank, as Hugging Face does. */
int bpe_add_merge(struct bpe *b, int32_t a, int32_t bb, int32_t rank, int32_t merged);
/* Sizes the tables for about this many tokens and merges (a hint; they grow). */
int bpe_reserve(struct bpe *b, size_t tokens, size_t merges);
/* Checks that every single byte has a token; call once all tokens are in. -1 names
 * the first byte missing. */
int bpe_finish(struct bpe *b);

/* Encodes the raw bytes of one pre-token, appending its ids to out. */
int bpe_encode(struct bpe *b, const char *s, size_t n, struct bpe_ids *out);

#endif
