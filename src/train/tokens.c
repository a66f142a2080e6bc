/* tokens.c — a data file's token ids: .u32 files checked id by id, text encoded as one
 * plain-text document with end-of-text appended. */
#include "src/train/tokens.h"
#include "src/base/err.h"
#include "src/base/fileio.h"
#include "src/base/utf8.h"
#include "tokenizer/tokenizer.h"

#include <stdlib.h>
#include <string.h>

bool tokens_is_u32(const char *path)
{
	size_t n = strlen(path);
	return n >= 4 && !strcmp(path + n - 4, ".u32");
}

int32_t tokens_eot(const struct tok *tk)
{
	int id = tok_id(tk, "<|endoftext|>");
	if (id >= 0)
		return id;
	const char *eos = tok_eos_token(tk);
	if (eos && (id = tok_id(tk, eos)) >= 0)
		return id;
	return err_set("the tokenizer has no end-of-text token (no <|endoftext|>%s%s%s)",
		       eos ? ", and its eos_token \"" : ", no eos_token", eos ? eos : "",
		       eos ? "\" is not one of its tokens" : "");
}

/* The id at p (4 bytes, little-endian). */
static uint32_t id_at(const unsigned char *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* Checks len bytes of ids below vocab. */
static int check_u32(const unsigned char *p, size_t len, int vocab)
{
	if (len % 4)
		return err_set("%zu bytes are not a whole number of 4-byte token ids (byte offset "
			       "%zu starts a partial one)",
			       len, len - len % 4);
	for (size_t i = 0; i < len / 4; i++) {
		uint32_t v = id_at(p + 4 * i);
		if (v >= (uint32_t)vocab)
			return err_set("byte offset %zu: token id %lu is not below the model's "
				       "vocab_size %d",
				       4 * i, (unsigned long)v, vocab);
	}
	return 0;
}

int tokens_from_u32(const void *data, size_t len, int vocab, int32_t **ids, size_t *n)
{
	const unsigned char *p = data;
	*ids = NULL;
	*n = 0;
	if (check_u32(p, len, vocab))
		return -1;
	/* checked first, filled after: a bad file costs no allocation of its size */
	size_t count = len / 4;
	int32_t *v = malloc(count ? count * sizeof *v : 1);
	if (!v)
		return err_set("out of memory for %zu token ids", count);
	for (size_t i = 0; i < count; i++)
		v[i] = (int32_t)id_at(p + 4 * i);
	*ids = v;
	*n = count;
	return 0;
}

/* The bytes text becomes with every ill-formed UTF-8 sequence replaced by U+FFFD
 * (its maximal subpart, as Python's errors="replace"), or 0 when it is all
 * well-formed: then it is encoded in place, without a copy. */
static size_t replaced_len(const char *text, size_t len)
{
	size_t out = 0, pieces = 0;
	for (size_t i = 0; i < len;) {
		size_t valid, bad;
		utf8_next_piece(text + i, len - i, &valid, &bad);
		out += valid + (bad ? 3 : 0); /* bad >= 1: out <= 3 * len */
		pieces += bad ? 1 : 0;
		i += valid + bad;
	}
	return pieces ? out : 0;
}

static void replace_ill_formed(const char *text, size_t len, char *out)
{
	for (size_t i = 0; i < len;) {
		size_t valid, bad;
		utf8_next_piece(text + i, len - i, &valid, &bad);
		memcpy(out, text + i, valid);
		out += valid;
		if (bad) {
			memcpy(out, UTF8_REPLACEMENT, 3);
			out += 3;
		}
		i += valid + bad;
	}
}

int tokens_from_text(struct tok *tk, int vocab, const char *text, size_t len, int32_t **ids,
		     size_t *n)
{
	*ids = NULL;
	*n = 0;
	int32_t eot = tokens_eot(tk);
	if (eot < 0)
		return -1;
	if (eot >= vocab)
		return err_set("the end-of-text token id %d is not below the model's vocab_size %d",
			       (int)eot, vocab);
	size_t clean_len = replaced_len(text, len);
	char *clean = NULL;
	if (clean_len) {
		if (len > (size_t)-1 / 3 || !(clean = malloc(clean_len)))
			return err_set("out of memory for %zu bytes of text", len);
		replace_ill_formed(text, len, clean);
		text = clean;
		len = clean_len;
	}
	/* all of it literal: special-token strings in data are text, as a user's typing is */
	struct tok_span all = {0, len};
	size_t k = 0;
	int32_t *v = tok_encode_literal(tk, text, len, &all, 1, &k);
	free(clean);
	if (!v)
		return -1;
	int32_t *grown = realloc(v, (k + 1) * sizeof *v);
	if (!grown) {
		free(v);
		return err_set("out of memory for %zu token ids", k + 1);
	}
	v = grown;
	v[k++] = eot;
	for (size_t i = 0; i < k; i++)
		if (v[i] < 0 || v[i] >= vocab) {
			int32_t bad = v[i];
			free(v);
			return err_set("token %zu: the tokenizer gave id %d, not below the model's "
				       "vocab_size %d (the tokenizer is not this model's)",
				       i, (int)bad, vocab);
		}
	*ids = v;
	*n = k;
	return 0;
}

int tokens_read_file(const char *path, struct tok *tk, int vocab, int32_t **ids, size_t *n)
{
	*ids = NULL;
	*n = 0;
	bool u32 = strcmp(path, "-") && tokens_is_u32(path);
	if (!u32 && !tk)
		return err_set("%s: a text file needs the model's tokenizer", path);
	size_t len = 0;
	char *data = fio_read_all(path, TOKENS_MAX_FILE, &len);
	if (!data)
		return -1; /* the message names path */
	if (u32) {
		/* the ids in the file's own buffer (malloc'd, so aligned for them): a stream of
		 * a third of the memory is not held twice */
		unsigned char *p = (unsigned char *)data;
		if (check_u32(p, len, vocab)) {
			free(data);
			return err_prefix("%s", path);
		}
		for (size_t i = 0; i < len / 4; i++) {
			int32_t v = (int32_t)id_at(p + 4 * i);
			memcpy(p + 4 * i, &v, sizeof v);
		}
		*ids = (int32_t *)(void *)data;
		*n = len / 4;
		return 0;
	}
	int rc = tokens_from_text(tk, vocab, data, len, ids, n);
	free(data);
	return rc ? err_prefix("%s", path) : 0;
}
