/* tinytok.c — the small in-memory tokenizer of tinytok.h. */
#include "tests/unit/tinytok.h"
#include "tokenizer/bytelevel.h"
#include "tokenizer/tokenizer.h"

#include <string.h>

/* c as UTF-8 into out (at least 4 bytes); the length. */
static size_t utf8_put(uint32_t c, char *out)
{
	if (c < 0x80)
		return out[0] = (char)c, 1;
	if (c < 0x800)
		return out[0] = (char)(0xc0 | c >> 6), out[1] = (char)(0x80 | (c & 0x3f)), 2;
	out[0] = (char)(0xe0 | c >> 12);
	out[1] = (char)(0x80 | (c >> 6 & 0x3f));
	out[2] = (char)(0x80 | (c & 0x3f));
	return 3;
}

struct tok *tt_tokenizer(bool without_eot, const char *eos)
{
	static char bytes[256][4];
	static const char *tokens[TT_VOCAB];
	static size_t len[TT_VOCAB];
	static unsigned char kinds[TT_VOCAB];
	for (unsigned b = 0; b < 256; b++) {
		len[b] = utf8_put(bl_byte_to_char(b), bytes[b]);
		tokens[b] = bytes[b];
		kinds[b] = TOK_NORMAL;
	}
	static const char *const added[] = {"ab", "<|endoftext|>", "<|im_end|>", "<think>"};
	static const unsigned char added_kind[] = {TOK_NORMAL, TOK_SPECIAL, TOK_SPECIAL, TOK_ADDED};
	for (int i = 0; i < 4; i++) {
		tokens[256 + i] = added[i];
		len[256 + i] = strlen(added[i]);
		kinds[256 + i] = added_kind[i];
	}
	if (without_eot)
		kinds[TT_EOT] = TOK_UNUSED;
	static const char *const merges[] = {"a b"};
	static const size_t merge_len[] = {3};
	struct tok_vocab v = {.name = "tinytok",
			      .tokens_key = "tokens",
			      .merges_key = "merges",
			      .n_tokens = TT_VOCAB,
			      .tokens = tokens,
			      .token_len = len,
			      .kinds = kinds,
			      .n_merges = 1,
			      .merges = merges,
			      .merge_len = merge_len,
			      .eos = eos};
	return tok_from_vocab(&v);
}
