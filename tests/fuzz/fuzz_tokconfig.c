/* fuzz_tokconfig.c — a model's tokenizer_config.json is untrusted: the input is one,
 * loaded (tok_load_files) beside a fixed tokenizer.json of the 256 byte tokens, "ab"
 * and the special <|e|>. Bytes jansson refuses are refused, and a refused file says
 * why. A file that loads must give what it says, read here again with jansson: each
 * added_tokens_decoder entry an added token of its id that decodes to its content's
 * bytes, is special as said (tokenizer.json's own flags for its tokens) and encodes
 * alone to its id (unless it holds a token split out before it); the
 * tokenizer.json tokens as they were; the vocabulary up to the largest id; eos_token,
 * pad_token and the chat template (a string, or a list's "default") as given. */
#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "src/base/err.h"
#include "tokenizer/pretok.h"
#include "tokenizer/tokenizer.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

enum { BASE_IDS = 258 }; /* the byte tokens 0-255, "ab" 256, <|e|> 257 */

/* GPT-2's byte alphabet: alphabet[b] is the character of byte b. */
static unsigned alphabet[256];

static void make_alphabet(void)
{
	unsigned n = 256;
	for (int b = 0; b < 256; b++) {
		bool shown = (b >= 33 && b <= 126) || (b >= 161 && b <= 172) || b >= 174;
		alphabet[b] = shown ? (unsigned)b : n++;
	}
}

/* The byte of alphabet character c, or -1. */
static int char_byte(unsigned c)
{
	for (int b = 0; b < 256; b++)
		if (alphabet[b] == c)
			return b;
	return -1;
}

/* What the ByteLevel decoder makes of an added token's content (valid UTF-8): its
 * characters mapped back to bytes when all are in the alphabet, else the text as is.
 * Returns the length written to out (room for n bytes). */
static size_t content_bytes(const char *s, size_t n, char *out)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t o = 0;
	for (size_t i = 0; i < n;) {
		unsigned c = p[i];
		size_t w = c < 0x80 ? 1 : c < 0xE0 ? 2 : c < 0xF0 ? 3 : 4;
		if (w == 2)
			c = (c & 0x1F) << 6 | (p[i + 1] & 0x3F);
		int b = w <= 2 ? char_byte(c) : -1;
		if (b < 0) {
			memcpy(out, s, n);
			return n;
		}
		out[o++] = (char)b;
		i += w;
	}
	return o;
}

/* The fixed tokenizer.json, written to a memfd whose path goes to path. */
static void base_file(char path[64])
{
	json_t *vocab = json_object();
	for (int b = 0; vocab && b < 256; b++) {
		char ch[3] = {(char)alphabet[b], 0, 0};
		if (alphabet[b] >= 0x80) {
			ch[0] = (char)(0xC0 | alphabet[b] >> 6);
			ch[1] = (char)(0x80 | (alphabet[b] & 0x3F));
		}
		json_object_set_new(vocab, ch, json_integer(b));
	}
	json_object_set_new(vocab, "ab", json_integer(256));
	json_t *j = json_pack(
		"{s:[{s:i, s:s, s:b}], s:n, s:{s:s, s:[{s:s, s:{s:s}, s:s}, {s:s}]}, s:{s:s}, "
		"s:{s:s, s:o, s:[s]}}",
		"added_tokens", "id", 257, "content", "<|e|>", "special", 1, "normalizer",
		"pre_tokenizer", "type", "Sequence", "pretokenizers", "type", "Split", "pattern",
		"Regex", pretok_qwen2_regex, "behavior", "Isolated", "type", "ByteLevel", "decoder",
		"type", "ByteLevel", "model", "type", "BPE", "vocab", vocab, "merges", "a b");
	int fd = memfd_create("tokenizer.json", 0);
	if (!j || fd < 0 || json_dumpfd(j, fd, 0))
		abort();
	json_decref(j);
	snprintf(path, 64, "/proc/self/fd/%d", fd);
}

static char base_path[64];
static struct tok *base;

/* The decoded bytes of one id, malloc'd (*n), or NULL when out of range. */
static char *decode1(const struct tok *t, int32_t id, size_t *n)
{
	return tok_decode(t, &id, 1, false, n);
}

static bool same_str(const char *got, json_t *v)
{
	if (json_is_object(v))
		v = json_object_get(v, "content");
	const char *want = json_is_string(v) ? json_string_value(v) : NULL;
	return want ? got && !strcmp(got, want) : !got;
}

static json_t *template_of(json_t *cfg)
{
	json_t *v = json_object_get(cfg, "chat_template"), *o, *pick = NULL;
	size_t i;
	if (!json_is_array(v))
		return v;
	json_array_foreach(v, i, o)
	{
		const char *name = json_string_value(json_object_get(o, "name"));
		if (name && !strcmp(name, "default"))
			pick = json_object_get(o, "template");
	}
	return pick;
}

/* A token's normalized flag as tokenizers defaults it: the opposite of special. */
static bool normalized(json_t *o)
{
	json_t *v = json_object_get(o, "normalized");
	return json_is_boolean(v) ? json_is_true(v) : !json_is_true(json_object_get(o, "special"));
}

/* Whether s, the content of token o, holds the content of a token split out before o
 * is looked for: tokenizers splits the text by the tokens not normalized first (the
 * special <|e|> of tokenizer.json is one), then by the normalized ones. Such an s
 * does not encode to o's id alone. */
static bool holds_earlier(const char *s, json_t *o, json_t *dec)
{
	const char *key;
	json_t *e;
	if (!normalized(o))
		return false;
	if (strstr(s, "<|e|>"))
		return true;
	json_object_foreach(dec, key, e)
	{
		const char *c = json_string_value(json_object_get(e, "content"));
		if (!normalized(e) && strcmp(c, s) && strstr(s, c))
			return true;
	}
	return false;
}

/* Whether the token of entry `key` has that entry's flags: not one of tokenizer.json's,
 * and no earlier key ("7" after "07") names its id. */
static bool own_flags(json_t *dec, const char *key, int32_t id)
{
	const char *k;
	json_t *o;
	if (tok_is_added(base, id))
		return false;
	json_object_foreach(dec, k, o)
	{
		if (k == key)
			return true;
		if (strtoll(k, NULL, 10) == id)
			return false;
	}
	return true;
}

/* One added_tokens_decoder entry of a file that loaded. */
static void check_added(struct tok *t, const char *key, json_t *o, json_t *dec, int32_t *max_id)
{
	int32_t id = (int32_t)strtoll(key, NULL, 10);
	json_t *c = json_object_get(o, "content");
	size_t n, want_n;
	char *got = decode1(t, id, &n), *want = malloc(json_string_length(c) + 1);
	if (!got || !want || !tok_is_added(t, id))
		abort();
	want_n = content_bytes(json_string_value(c), json_string_length(c), want);
	if (n != want_n || memcmp(got, want, n))
		abort();
	bool own = own_flags(dec, key, id);
	if (tok_is_added(base, id) && tok_is_special(t, id) != tok_is_special(base, id))
		abort();
	if (own && tok_is_special(t, id) != json_is_true(json_object_get(o, "special")))
		abort();
	size_t k;
	int32_t *ids = tok_encode(t, json_string_value(c), json_string_length(c), &k);
	if (!ids ||
	    (own && !holds_earlier(json_string_value(c), o, dec) && (k != 1 || ids[0] != id)))
		abort();
	if (id > *max_id)
		*max_id = id;
	free(ids);
	free(got);
	free(want);
}

static void check_loaded(struct tok *t, json_t *cfg)
{
	for (int32_t id = 0; id < BASE_IDS; id++) {
		size_t n, bn;
		char *got = decode1(t, id, &n), *was = decode1(base, id, &bn);
		if (!got || !was || n != bn || memcmp(got, was, n))
			abort();
		/* a byte token the file makes an added one takes the file's flags */
		if ((tok_is_added(base, id) || !tok_is_added(t, id)) &&
		    tok_is_special(t, id) != tok_is_special(base, id))
			abort();
		free(got);
		free(was);
	}
	int32_t max_id = BASE_IDS - 1;
	const char *key;
	json_t *o, *dec = json_object_get(cfg, "added_tokens_decoder");
	json_object_foreach(dec, key, o) check_added(t, key, o, dec, &max_id);
	if (tok_vocab_size(t) != max_id + 1)
		abort();
	if (!same_str(tok_eos_token(t), json_object_get(cfg, "eos_token")) ||
	    !same_str(tok_pad_token(t), json_object_get(cfg, "pad_token")) ||
	    !same_str(tok_chat_template(t), template_of(cfg)))
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (!base) {
		make_alphabet();
		base_file(base_path);
		if (!(base = tok_load_files(base_path, NULL)))
			abort();
	}
	int fd = memfd_create("tokenizer_config.json", 0);
	if (fd < 0 || (size && write(fd, data, size) != (ssize_t)size))
		abort();
	char path[64];
	snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
	json_t *cfg = json_loadb((const char *)data, size, JSON_REJECT_DUPLICATES, NULL);
	struct tok *t = tok_load_files(base_path, path);
	if (t) {
		if (!json_is_object(cfg))
			abort();
		check_loaded(t, cfg);
	} else if (!err_msg()[0]) {
		abort();
	}
	tok_free(t);
	json_decref(cfg);
	close(fd);
	return 0;
}
