/* fuzz_tokens.c — data files are untrusted: the token reader of perplexity and
 * training (src/train/tokens.c). The first byte picks:
 * even: the rest is a .u32 file for a vocabulary of 1 + (byte >> 1) * 1000 ids;
 * accepted exactly when its size is a multiple of 4 and every id is below it, and then
 * the ids are the file's;
 * odd, bit 1 clear: the rest is a text for the small tokenizer of tests/unit/tinytok.c;
 * the ids end with <|endoftext|>, hold no other special token, and decode to the text
 * with every ill-formed UTF-8 sequence as U+FFFD;
 * odd, bit 1 set: the rest is JSON Lines for that tokenizer; accepted, its ids hold
 * one <|endoftext|> for each non-blank line (a text is literal: none of its own). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "src/base/utf8.h"
#include "src/train/tokens.h"
#include "tests/unit/tinytok.h"
#include "tokenizer/tokenizer.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static struct tok *tiny;

static void u32(const uint8_t *p, size_t n, int vocab)
{
	int32_t *ids;
	size_t k;
	bool ok = n % 4 == 0;
	for (size_t i = 0; ok && i < n / 4; i++)
		ok = ((uint32_t)p[4 * i] | (uint32_t)p[4 * i + 1] << 8 |
		      (uint32_t)p[4 * i + 2] << 16 | (uint32_t)p[4 * i + 3] << 24) <
		     (uint32_t)vocab;
	int rc = tokens_from_u32(p, n, vocab, &ids, &k);
	if ((rc == 0) != ok || (rc == 0 && k != n / 4) || (rc != 0 && ids))
		abort();
	for (size_t i = 0; rc == 0 && i < k; i++)
		if (ids[i] != (int32_t)((uint32_t)p[4 * i] | (uint32_t)p[4 * i + 1] << 8 |
					(uint32_t)p[4 * i + 2] << 16 | (uint32_t)p[4 * i + 3] << 24))
			abort();
	free(ids);
}

static void text(const char *p, size_t n)
{
	if (!tiny && !(tiny = tt_tokenizer(false, NULL)))
		abort();
	/* what the text must decode to: U+FFFD for each ill-formed piece */
	char *want = malloc(3 * n + 1);
	size_t w = 0;
	for (size_t i = 0; i < n;) {
		size_t valid, bad;
		utf8_next_piece(p + i, n - i, &valid, &bad);
		memcpy(want + w, p + i, valid);
		w += valid;
		if (bad)
			memcpy(want + w, UTF8_REPLACEMENT, 3), w += 3;
		i += valid + bad;
	}
	int32_t *ids;
	size_t k, dl;
	if (tokens_from_text(tiny, TT_VOCAB, true, p, n, &ids, &k) || k < 1 || ids[k - 1] != TT_EOT)
		abort();
	for (size_t i = 0; i + 1 < k; i++)
		if (ids[i] < 0 || ids[i] >= TT_VOCAB || tok_is_special(tiny, ids[i]))
			abort();
	char *dec = tok_decode(tiny, ids, k - 1, false, &dl);
	if (!dec || dl != w || memcmp(dec, want, w))
		abort();
	free(dec);
	free(ids);
	free(want);
}

static void jsonl(const char *p, size_t n)
{
	if (!tiny && !(tiny = tt_tokenizer(false, NULL)))
		abort();
	size_t lines = 0, at = n >= 3 && !memcmp(p, "\xef\xbb\xbf", 3) ? 3 : 0;
	bool filled = false;
	for (size_t i = at; i <= n; i++) {
		if (i == n || p[i] == '\n') {
			lines += filled;
			filled = false;
		} else if (!strchr(" \t\r", p[i]) || !p[i]) {
			filled = true;
		}
	}
	int32_t *ids;
	size_t k, eots = 0;
	if (tokens_from_jsonl(tiny, TT_VOCAB, true, p, n, &ids, &k))
		return;
	for (size_t i = 0; i < k; i++)
		eots += ids[i] == TT_EOT;
	if (eots != lines || (k && ids[k - 1] != TT_EOT))
		abort();
	free(ids);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	if ((data[0] & 3) == 3)
		jsonl((const char *)data + 1, size - 1);
	else if (data[0] & 1)
		text((const char *)data + 1, size - 1);
	else
		u32(data + 1, size - 1, 1 + (data[0] >> 1) * 1000);
	return 0;
}
