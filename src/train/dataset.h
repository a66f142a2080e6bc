/* dataset.h — the token stream a run trains (or evaluates) on: its files read by the
 * tokens module and concatenated in the order given, kept encoded in a cache file next
 * to the checkpoint (DIR/train-state/data.u32 with data.json describing where it came
 * from), so that a rerun or a resumed run does not encode the text again. */
#ifndef QWENCHAT_DATASET_H
#define QWENCHAT_DATASET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tokenizer/tokenizer.h"

struct dset {
	int32_t *ids; /* (len) the stream */
	size_t len;
	bool cached; /* read from the cache, not encoded */
};

/* The stream of files[0..n) (n >= 1). tk encodes the text files (NULL: every file must
 * be *.u32); tok_hash names the tokenizer (its files' sha256) so that a cache made
 * with another one is not used; ids are checked below vocab. A text file must be UTF-8
 * (refused with the offset of the first bad byte). The cache CACHE.u32 + CACHE.json
 * (0600) is used when it lists the same files (absolute paths, sizes, modification
 * times), tokenizer and vocab, else rewritten. 0 or -1 (err_set naming the file). */
int dset_load(struct dset *d, char *const *files, int n, struct tok *tk,
	      const char *tok_hash, int vocab, const char *cache);

/* The cache alone (a resumed run trains on what it was trained on, even when the
 * files changed or are gone); its JSON must say `vocab`. 0 or -1 (err_set). */
int dset_load_cache(struct dset *d, int vocab, const char *cache);

void dset_free(struct dset *d);

/* sha256 of texts[0..n) one after the other (the tokenizer's files), as "sha256:" and
 * 64 hex digits in out. */
void dset_hash(const char *const *texts, const size_t *lens, int n, char out[72]);

#endif
