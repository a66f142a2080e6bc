/* dataset.h — the token stream a run trains (or evaluates) on: its files read by the
 * tokens module and concatenated in the order given, kept encoded in a cache file next
 * to the checkpoint (DIR/train-state/data.u32 with data.json describing where it came
 * from), so that a rerun or a resumed run does not encode the text again. With --sft
 * the stream is conversations, each token flagged (data.sft): whether it is a target
 * of the loss, and where each conversation starts. */
#ifndef QWENCHAT_DATASET_H
#define QWENCHAT_DATASET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tokenizer/tokenizer.h"

/* Flags of a token of a conversation stream (--sft). */
enum {
	DSET_SCORED = 1, /* a target of the loss: a token the assistant wrote */
	DSET_START = 2,  /* the first token of a conversation */
};

/* What is known of a conversation stream. */
struct dset_sft {
	int64_t conversations; /* in the stream */
	int64_t cut;           /* cut after an answer to fit a row (--ctx) */
	int64_t left_out;      /* whose first answer ends past a row: not in the stream */
	int64_t left_out_ctx;  /* the --ctx that would keep every one left out (0: none) */
	int64_t no_answer;     /* without an assistant answer: not in the stream */
	int64_t scored;        /* targets in the stream (answer tokens after the first) */
};

struct dset {
	int32_t *ids; /* (len) the stream */
	size_t len;
	bool cached;     /* read from the cache, not encoded */
	char sha256[72]; /* "sha256:" and the hex digits of the stream's ids (and flags) */
	/* --sft: a stream of conversations, each at most ctx + 1 tokens (the inputs of a
	 * row and the target one further) and ending with an answer's last token */
	uint8_t *flags;     /* (len) DSET_* of each token; NULL: a plain stream */
	size_t *seq;        /* (sft.conversations + 1): conversation k is [seq[k], seq[k+1]) */
	struct dset_sft sft;
};

/* The conversations of one file, as a conversation reader gives them: one after
 * another, the first token of each flagged DSET_START, the answers' DSET_SCORED. */
struct dset_convs {
	int32_t *ids;
	uint8_t *flags;
	size_t n, cap;
	int64_t no_answer; /* conversations without an assistant answer, left out */
};

/* Appends a conversation: ids[0..n) (n >= 1), scored[i] != 0 for the tokens the
 * assistant wrote. 0 or -1 (err_set: out of memory). */
int dset_convs_add(struct dset_convs *c, const int32_t *ids, const unsigned char *scored, size_t n);

/* Reads the conversations of one file into out (appending). 0 or -1 (err_set naming
 * the file, and the line or message). */
typedef int (*dset_conv_reader)(void *user, const char *path, struct dset_convs *out);

/* The stream a resumed run must train on: the one it started with. */
struct dset_want {
	int64_t tokens;
	const char *sha256; /* NULL or "": not known (a state written before it was kept) */
};

/* The stream of files[0..n) (n >= 1). tk encodes the text files (NULL: every file must
 * be *.u32); tok_hash names the tokenizer (its files' sha256) so that a cache made
 * with another one is not used; ids are checked below vocab. A text file must be UTF-8
 * (refused with the offset of the first bad byte). The cache CACHE.u32 + CACHE.json
 * (0600) is used when it lists the same files (absolute paths, sizes, modification
 * and change times, inodes), tokenizer and vocab, else rewritten. With want (NULL:
 * none) a stream that is not the one it describes is refused, the cache left as it
 * was. 0 or -1 (err_set naming the file). */
int dset_load(struct dset *d, char *const *files, int n, struct tok *tk, const char *tok_hash,
	      int vocab, const char *cache, const struct dset_want *want);

/* The conversation stream of files[0..n) (n >= 1), each file read by rd (user is its
 * first argument). A conversation longer than ctx + 1 tokens is cut after its last
 * answer that ends within them; one whose first answer does not is left out
 * (counted). The cache (CACHE.u32, CACHE.sft of flags, CACHE.json) is used as
 * dset_load's, when it also holds conversations cut for this ctx. Ids are checked
 * below vocab; want as for dset_load. 0 or -1 (err_set naming the file). */
int dset_load_sft(struct dset *d, char *const *files, int n, dset_conv_reader rd, void *user,
		  const char *tok_hash, int vocab, int ctx, const char *cache,
		  const struct dset_want *want);

/* The same conversations without a cache (an evaluation: perplexity --sft). */
int dset_read_sft(struct dset *d, char *const *files, int n, dset_conv_reader rd, void *user,
		  int vocab, int ctx);

/* The cache alone (a resumed run trains on what it was trained on, even when the
 * files changed or are gone); its JSON must say `vocab` and, when sft_ctx > 0, that it
 * holds conversations cut for --ctx sft_ctx (0: a plain stream), and its stream must
 * be want's (NULL: any). 0 or -1 (err_set). */
/* The first of files[0..n) that is not as the cache at `cache` (its path without
 * extension) describes it (size, times, inode; gone), or NULL: all as they were, or
 * a cache that does not describe its files. */
const char *dset_changed(const char *cache, char *const *files, int n);

/* Whether the cache at `cache` says its stream was encoded by a tokenizer (text
 * files, or conversations), not read from *.u32 files alone; false without one. */
bool dset_tokenized(const char *cache);
/* False when the cache's stream was encoded by a tokenizer other than the one whose
 * files hash to tok_hash (dset_hash); true when it was, or was not encoded at all. */
bool dset_same_tokenizer(const char *cache, const char *tok_hash);

int dset_load_cache(struct dset *d, int vocab, int sft_ctx, const char *cache,
		    const struct dset_want *want);

void dset_free(struct dset *d);

/* sha256 of texts[0..n) one after the other (the tokenizer's files), as "sha256:" and
 * 64 hex digits in out. */
void dset_hash(const char *const *texts, const size_t *lens, int n, char out[72]);

#endif
