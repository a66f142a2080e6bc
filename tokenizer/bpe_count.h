/* bpe_count.h — counting the pre-tokens of text files for BPE training, in
 * parallel, with special tokens cut out so that no pre-token crosses one. */
#ifndef QWENCHAT_BPE_COUNT_H
#define QWENCHAT_BPE_COUNT_H

#include "tokenizer/bpe_train.h"

#include <stddef.h>
#include <stdint.h>

struct bpe_count_opts {
	const char *const *specials; /* split points, matched leftmost-longest; not counted */
	int n_specials;
	int threads;            /* counting threads, >= 1 */
	size_t block_bytes;     /* input read per round; 0 = 16 MiB */
	size_t min_range_bytes; /* least text per counting thread; 0 = 8 KiB (tests go lower) */
	/* Called after each block (may be NULL): input bytes counted so far. */
	void (*progress)(void *ctx, uint64_t bytes);
	void *progress_ctx;
};

struct bpe_count_stats {
	uint64_t bytes;     /* input bytes read */
	uint64_t pretokens; /* pre-tokens counted */
	uint64_t specials;  /* special tokens found (and cut out) */
	size_t distinct;    /* distinct pre-tokens */
};

struct bpe_counter;

/* NULL on error (an empty special token, no memory). */
struct bpe_counter *bpe_counter_new(const struct bpe_count_opts *opts);
void bpe_counter_free(struct bpe_counter *c);

/* Counts one file, read a block at a time: memory grows with the distinct
 * pre-tokens, not with the file. Each file is its own document. Fails, naming
 * the file and the byte offset, on text that is not valid UTF-8. */
int bpe_counter_add_file(struct bpe_counter *c, const char *path);
/* The same for text in memory; name is used in messages. */
int bpe_counter_add_text(struct bpe_counter *c, const char *text, size_t len, const char *name);
/* Counts n documents lying end to end in buf: document d is buf[ends[d - 1] ..
 * ends[d]) (from 0 for the first), each its own document as a file is (the records
 * of a JSON Lines file), the threads taking runs of whole documents. */
int bpe_counter_add_docs(struct bpe_counter *c, const char *buf, const size_t *ends, size_t n,
			 const char *name);

/* The distinct pre-tokens and their counts so far, all threads' tables merged.
 * The caller owns *out (bpe_words_free). */
int bpe_counter_words(struct bpe_counter *c, struct bpe_words *out);
void bpe_counter_stats(const struct bpe_counter *c, struct bpe_count_stats *st);
void bpe_words_free(struct bpe_words *w);

#endif
