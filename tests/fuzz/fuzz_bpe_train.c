/* fuzz_bpe_train.c — training text is untrusted: count any bytes as a corpus (with
 * special tokens) once in one pass and once in tiny blocks split among 3 threads,
 * so the block and range cuts are exercised; when it is UTF-8, train a small
 * vocabulary from each and check that both give the same, consistent merges. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "tokenizer/bpe_count.h"
#include "tokenizer/bpe_train.h"

static const char *const specials[] = {"<|e|>", "<s>", "<s><s>"};

static struct bpe_model *train(const uint8_t *data, size_t size, int threads, size_t block)
{
	struct bpe_count_opts o = {.specials = specials,
				   .n_specials = 3,
				   .threads = threads,
				   .block_bytes = block,
				   .min_range_bytes = block ? 16 : 0};
	struct bpe_counter *c = bpe_counter_new(&o);
	if (!c)
		abort();
	struct bpe_model *m = NULL;
	struct bpe_words w = {0};
	if (bpe_counter_add_text(c, (const char *)data, size, "fuzz") == 0 &&
	    bpe_counter_words(c, &w) == 0) {
		struct bpe_train_opts t = {.vocab_size = 256 + 3 + 48, .n_specials = 3};
		m = bpe_train(&w, &t);
		if (!m)
			abort();
	}
	bpe_words_free(&w);
	bpe_counter_free(c);
	return m;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct bpe_model *a = train(data, size, 1, 0);
	struct bpe_model *b = train(data, size, 3, 200); /* blocks of 200, ranges of 16+ */
	if (!a != !b)
		abort();
	if (a) {
		if (a->n_merges != b->n_merges ||
		    memcmp(a->merges, b->merges, (size_t)a->n_merges * sizeof *a->merges))
			abort();
		for (int i = 0; i < a->n_merges; i++) {
			size_t l0, l1, l;
			const char *x = bpe_model_token(a, a->merges[i][0], &l0);
			const char *y = bpe_model_token(a, a->merges[i][1], &l1);
			const char *z = bpe_model_token(a, 256 + i, &l);
			if (!x || !y || !z || a->merges[i][0] >= 256 + i ||
			    a->merges[i][1] >= 256 + i || l != l0 + l1 || memcmp(z, x, l0) ||
			    memcmp(z + l0, y, l1))
				abort();
		}
	}
	bpe_model_free(a);
	bpe_model_free(b);
	return 0;
}
