/* bpe_train.h — byte-level BPE training: merges learned from counted pre-tokens. */
#ifndef QWENCHAT_BPE_TRAIN_H
#define QWENCHAT_BPE_TRAIN_H

#include <stddef.h>
#include <stdint.h>

/* Distinct pre-tokens and how often each occurs (bpe_count.h fills one).
 * Pre-token i is the bytes arena[off[i] .. off[i+1]). */
struct bpe_words {
	size_t n;
	char *arena;
	size_t *off;     /* (n + 1) */
	uint64_t *count; /* (n) */
};

struct bpe_train_opts {
	int vocab_size; /* 256 byte tokens + merges + special tokens */
	int n_specials; /* ids vocab_size - n_specials .. are kept for them */
	/* Called every few merges (may be NULL): merges done, merges wanted. */
	void (*progress)(void *ctx, int done, int total);
	void *progress_ctx;
};

/* The learned vocabulary: ids 0..255 are the bytes in byte order, id 256 + i
 * is merge i (merges[i][0] followed by merges[i][1]). Special tokens are not
 * stored here: the caller numbers them after the last merge. */
struct bpe_model {
	int n_tokens;         /* 256 + n_merges */
	int n_merges;         /* fewer than asked when no pair is left to merge */
	int32_t (*merges)[2]; /* (n_merges, 2) */
	char *arena;          /* token bytes */
	size_t *off;          /* (n_tokens + 1): token id's bytes are arena[off[id]..off[id+1]) */
};

/* Learns vocab_size - 256 - n_specials merges: each step merges the most
 * frequent adjacent pair, ties going to the greater (left bytes, right bytes)
 * pair compared as byte strings. Pair counts are updated incrementally and the
 * best pair comes from a max-heap with lazy invalidation. NULL on error. */
struct bpe_model *bpe_train(const struct bpe_words *words, const struct bpe_train_opts *opts);
void bpe_model_free(struct bpe_model *m);

/* The bytes of token id (*len), or NULL when id is out of range. */
const char *bpe_model_token(const struct bpe_model *m, int id, size_t *len);

#endif
