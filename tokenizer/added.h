/* added.h — added tokens (<|im_end|>, <think>, ...): finding them in text the way
 * Hugging Face tokenizers' AddedVocabulary does (leftmost-longest matches, then
 * single_word, lstrip and rstrip), before the rest is normalized and pre-tokenized. */
#ifndef QWENCHAT_ADDED_H
#define QWENCHAT_ADDED_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

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

/* Splits s[0..n) by the tokens whose `normalized` flag is `normalized`, appending the
 * segments (covering all of s) to out. */
int added_split(const struct added_set *a, bool normalized, const char *s, size_t n,
		struct added_segs *out);

#endif
