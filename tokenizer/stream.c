/* stream.c — streaming decode: complete UTF-8 characters only, holding back a
 * partial sequence until a later token completes it (or proves it never will). */
#include "tokenizer/tokenizer.h"

#include <stdlib.h>
#include <string.h>

#include "src/base/err.h"
#include "tokenizer/tok_impl.h"

struct tok_stream {
	const struct tok *t;
	bool skip_special;
	char *buf; /* bytes handed out by the last call, then the held-back tail */
	size_t cap;
	char hold[4];
	size_t nhold;
};

struct tok_stream *tok_stream_new(const struct tok *t, bool skip_special)
{
	struct tok_stream *s = calloc(1, sizeof *s);
	if (!s) {
		err_set("tokenizer: out of memory");
		return NULL;
	}
	s->t = t;
	s->skip_special = skip_special;
	return s;
}

void tok_stream_free(struct tok_stream *s)
{
	if (!s)
		return;
	free(s->buf);
	free(s);
}

/* Length of the sequence a lead byte starts (1 for ASCII and for bytes that start
 * nothing, which are emitted as they are). */
static size_t seq_len(unsigned char b)
{
	return b >= 0xF0 && b <= 0xF4 ? 4 : b >= 0xE0 ? (b <= 0xEF ? 3 : 1) : b >= 0xC2 ? 2 : 1;
}

/* How many bytes at the end of p[0..n) are an incomplete but still possible UTF-8
 * sequence: a lead byte followed by fewer continuation bytes than it needs. */
static size_t incomplete_tail(const unsigned char *p, size_t n)
{
	for (size_t k = 1; k <= 3 && k <= n; k++) {
		unsigned char b = p[n - k];
		if ((b & 0xC0) == 0x80)
			continue;
		size_t need = seq_len(b);
		if (need <= k)
			return 0;
		/* the second byte narrows the range for E0, ED, F0 and F4 */
		if (k >= 2) {
			unsigned char c = p[n - k + 1];
			if ((b == 0xE0 && c < 0xA0) || (b == 0xED && c > 0x9F) ||
			    (b == 0xF0 && c < 0x90) || (b == 0xF4 && c > 0x8F))
				return 0;
		}
		return k;
	}
	return 0;
}

const char *tok_stream_push(struct tok_stream *s, int32_t id, size_t *len)
{
	size_t n;
	const char *p = tok_piece(s->t, id, &n);
	if (!p) {
		int n_ids = tok_vocab_size(s->t);
		err_set(id >= 0 && id < n_ids
				? "token id %d names no token: the tokenizer's ids "
				  "leave it out (ids 0 to %d)"
				: "token id %d is not in the vocabulary (ids 0 to %d)",
			id, n_ids - 1);
		return NULL;
	}
	if (s->skip_special && tok_is_special(s->t, id))
		n = 0;
	size_t need = s->nhold + n + 1;
	if (need > s->cap) {
		size_t cap = s->cap ? s->cap : 64;
		while (cap < need)
			cap *= 2;
		char *b = realloc(s->buf, cap);
		if (!b) {
			err_set("tokenizer: out of memory");
			return NULL;
		}
		s->buf = b;
		s->cap = cap;
	}
	memcpy(s->buf, s->hold, s->nhold);
	memcpy(s->buf + s->nhold, p, n);
	size_t total = s->nhold + n;
	size_t tail = incomplete_tail((const unsigned char *)s->buf, total);
	s->nhold = tail;
	memcpy(s->hold, s->buf + total - tail, tail);
	s->buf[total - tail] = 0;
	*len = total - tail;
	return s->buf;
}

const char *tok_stream_flush(struct tok_stream *s, size_t *len)
{
	if (s->cap < 5) {
		char *b = realloc(s->buf, 64);
		if (!b) {
			err_set("tokenizer: out of memory");
			return NULL;
		}
		s->buf = b;
		s->cap = 64;
	}
	memcpy(s->buf, s->hold, s->nhold);
	*len = s->nhold;
	s->buf[s->nhold] = 0;
	s->nhold = 0;
	return s->buf;
}
