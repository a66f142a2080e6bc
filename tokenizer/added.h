/* added.h — added tokens (<|im_end|>, <think>, ...): finding them in text the way
 * Hugging Face tokenizers' AddedVocabulary does (leftmost-longest matches, then
 * single_word, lstrip and rstrip), before the rest is normalized and pre-tokenized. */
#ifndef QWENCHAT_ADDED_H
#define QWENCHAT_ADDED_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tokenizer/tokenizer.h"

struct added_tok {
	char *content; /* UTF-8; for normalized tokens, its NFC form */
	size_t len;
	int32_t id;
	bool special, lstrip, rstrip, single_word, normalized;
};

struct added_set {
	struct added_tok *t;
	size_t n;
	/* by normalized flag: which bytes can start a token of that group */
	bool first[2][256];
	bool any[2];
};

/* One piece of text: an added token (id >= 0) or plain text to tokenize (id -1). */
struct added_seg {
	size_t start, end;
	int32_t id;
};

struct added_segs {
	struct added_seg *v;
	size_t n, cap;
};

/* Sorts the tokens longest first and fills the first-byte tables. */
void added_prepare(struct added_set *a);
void added_clear(struct added_set *a);

/* Byte ranges of s where special tokens are text (sorted, not overlapping). */
struct added_literal {
	const struct tok_span *span;
	size_t n;
	bool all; /* every special token is text (split_special_tokens=True) */
};

/* Splits s[0..n) by the tokens whose `normalized` flag is `normalized`, appending the
 * segments (covering all of s) to out. A special token that `lit` (may be NULL) makes
 * text is passed over as Hugging Face does with encode_special_tokens: the search
 * goes on after it. */
int added_split(const struct added_set *a, bool normalized, const char *s, size_t n,
		const struct added_literal *lit, struct added_segs *out);

/* Whether [start, stop) overlaps a span of lit (NULL: no). */
bool added_literal_overlaps(const struct added_literal *lit, size_t start, size_t stop);

#endif
