/* test_tokenizer_files.c — tokenizer files written by the test: a small valid
 * tokenizer.json (both merge forms, an added token, tokenizer_config.json beside it), a
 * GGUF-style vocabulary with a token given twice, and one-line errors naming the file
 * and field for every malformed or truncated form, never a crash. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>
#include <jansson.h>
#include <utf8proc.h>

#include "src/base/err.h"
#include "tokenizer/bytelevel.h"
#include "tokenizer/tokenizer.h"

static bool sanitized;

/* A small valid tokenizer.json: the 256 byte tokens (id = byte), "ab" 256, "abc" 257,
 * merges in both forms, one special added token 258. */
static char *tiny_json(void)
{
	json_t *re = json_string("(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}"
				 "| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+");
	char *res = json_dumps(re, JSON_ENCODE_ANY);
	json_decref(re);
	json_t *vocab = json_object();
	for (unsigned b = 0; b < 256; b++) {
		/* GPT-2's byte alphabet: printable Latin-1 stands for itself, the rest from U+0100 */
		unsigned c;
		if ((b >= 33 && b <= 126) || (b >= 161 && b <= 172) || b >= 174)
			c = b;
		else
			c = 256 + (b <= 32 ? b : b <= 160 ? 33 + b - 127 : 67);
		char u[3] = {0};
		if (c < 0x80)
			u[0] = (char)c;
		else
			u[0] = (char)(0xC0 | c >> 6), u[1] = (char)(0x80 | (c & 0x3F));
		json_object_set_new(vocab, u, json_integer(b));
	}
	json_object_set_new(vocab, "ab", json_integer(256));
	json_object_set_new(vocab, "abc", json_integer(257));
	char *vs = json_dumps(vocab, JSON_COMPACT | JSON_SORT_KEYS);
	json_decref(vocab);
	char *out;
	int n = asprintf(
		&out,
		"{\"version\":\"1.0\",\"truncation\":null,\"padding\":null,\"added_tokens\":[{"
		"\"id\":258,"
		"\"content\":\"<|e|>\",\"single_word\":false,\"lstrip\":false,\"rstrip\":false,"
		"\"normalized\":false,\"special\":true}],\"normalizer\":{\"type\":\"NFC\"},"
		"\"pre_tokenizer\":{\"type\":\"Sequence\",\"pretokenizers\":[{\"type\":\"Split\","
		"\"pattern\":{\"Regex\":%s},\"behavior\":\"Isolated\",\"invert\":false},"
		"{\"type\":\"ByteLevel\",\"add_prefix_space\":false,\"trim_offsets\":false,"
		"\"use_regex\":false}]},\"post_processor\":null,\"decoder\":{\"type\":"
		"\"ByteLevel\"},"
		"\"model\":{\"type\":\"BPE\",\"dropout\":null,\"unk_token\":null,\"vocab\":%s,"
		"\"merges\":[\"a b\",[\"ab\",\"c\"]]}}",
		res, vs);
	assert_true(n > 0);
	free(res);
	free(vs);
	return out;
}

static char *replace(const char *s, const char *from, const char *to)
{
	const char *at = strstr(s, from);
	if (!at)
		fail_msg("fixture lacks '%s'", from);
	char *out;
	int n = asprintf(&out, "%.*s%s%s", (int)(at - s), s, to, at + strlen(from));
	assert_true(n > 0);
	return out;
}

static void write_file(const char *path, const char *s, size_t n)
{
	FILE *f = fopen(path, "wb");
	assert_non_null(f);
	assert_int_equal(fwrite(s, 1, n, f), n);
	fclose(f);
}

static void test_tiny_valid(void **state)
{
	(void)state;
	char *j = tiny_json();
	char path[] = "/tmp/qwenchat-tok-tiny.XXXXXX";
	int fd = mkstemp(path);
	assert_true(fd >= 0);
	close(fd);
	write_file(path, j, strlen(j));
	/* the pair form written before the vocabulary resolves too */
	char *late = replace(j, "\"vocab\":", "\"merges\":[[\"ab\",\"c\"],\"a b\"],\"vocab\":");
	char *late2 = replace(late, ",\"merges\":[\"a b\",[\"ab\",\"c\"]]}", "}");
	for (int k = 0; k < 2; k++) {
		if (k)
			write_file(path, late2, strlen(late2));
		struct tok *t = tok_load_files(path, NULL);
		if (!t)
			fail_msg("%s", err_msg());
		size_t n;
		int32_t *ids = tok_encode(t, "abcab<|e|>abca", 14, &n);
		int32_t want[] = {257, 256, 258, 257, 97};
		assert_int_equal(n, 5);
		assert_memory_equal(ids, want, sizeof want);
		free(ids);
		assert_int_equal(tok_vocab_size(t), 259);
		tok_free(t);
	}
	/* a post-processor's tokens around the text, as add_special_tokens=True adds them */
	char *pp = replace(j, "\"post_processor\":null",
			   "\"post_processor\":{\"type\":\"Sequence\",\"processors\":[{\"type\":"
			   "\"ByteLevel\"},{\"type\":\"TemplateProcessing\",\"single\":[{"
			   "\"SpecialToken\":{\"id\":\"E\"}},{\"Sequence\":{\"id\":\"A\"}},{"
			   "\"SpecialToken\":{\"id\":\"E\"}},{\"SpecialToken\":{\"id\":\"B\"}}],"
			   "\"special_tokens\":{\"E\":{\"ids\":[258]},\"B\":{\"ids\":[97,98]}}}]}");
	write_file(path, pp, strlen(pp));
	struct tok *t = tok_load_files(path, NULL);
	if (!t)
		fail_msg("%s", err_msg());
	size_t n;
	int32_t *ids = tok_encode_ends(t, "abc", 3, &n);
	int32_t want[] = {258, 257, 258, 97, 98};
	assert_int_equal(n, 5);
	assert_memory_equal(ids, want, sizeof want);
	free(ids);
	ids = tok_encode(t, "abc", 3, &n); /* add_special_tokens=False: the text alone */
	assert_int_equal(n, 1);
	assert_int_equal(ids[0], 257);
	free(ids);
	struct tok_ends e = {.ids = {{0}, {97}}, .n = {0, 1}};
	assert_int_equal(tok_set_ends(t, &e), 0); /* a GGUF's add_eos_token */
	ids = tok_encode_ends(t, "", 0, &n);
	assert_int_equal(n, 1);
	assert_int_equal(ids[0], 97);
	free(ids);
	e.ids[1][0] = 259;
	assert_int_equal(tok_set_ends(t, &e), -1);
	assert_non_null(strstr(err_msg(), "259 is not in the vocabulary"));
	tok_free(t);
	free(pp);
	unlink(path);
	free(late);
	free(late2);
	free(j);
}

/* A vocabulary given as lists (a GGUF's tokenizer.ggml.*): the 256 byte tokens, then
 * the tokens of `extra` with their kinds. NULL with err_set as tok_from_vocab. */
static struct tok *vocab_with(const char *const *extra, const unsigned char *kinds, size_t n)
{
	static char bytes[256][8];
	const char *tokens[256 + 8];
	size_t len[256 + 8];
	unsigned char kind[256 + 8];
	for (unsigned b = 0; b < 256; b++) {
		/* the byte-level alphabet's character for byte b, as UTF-8 */
		uint32_t c = bl_byte_to_char(b);
		len[b] = (size_t)utf8proc_encode_char((utf8proc_int32_t)c, (uint8_t *)bytes[b]);
		tokens[b] = bytes[b];
		kind[b] = TOK_NORMAL;
	}
	for (size_t i = 0; i < n; i++) {
		tokens[256 + i] = extra[i];
		len[256 + i] = strlen(extra[i]);
		kind[256 + i] = kinds[i];
	}
	struct tok_vocab v = {.name = "v.gguf",
			      .tokens_key = "tokenizer.ggml.tokens",
			      .merges_key = "tokenizer.ggml.merges",
			      .n_tokens = 256 + n,
			      .tokens = tokens,
			      .token_len = len,
			      .kinds = kind};
	return tok_from_vocab(&v);
}

/* One text for two ids is refused whatever the kind: a duplicated special token (an
 * <|im_end|> overwritten with <|im_start|>) as a duplicated normal one always was. */
static void test_vocab_duplicates(void **state)
{
	(void)state;
	const char *ok[] = {"<|im_start|>", "<|im_end|>", "<think>"};
	const unsigned char ok_kinds[] = {TOK_SPECIAL, TOK_SPECIAL, TOK_ADDED};
	struct tok *t = vocab_with(ok, ok_kinds, 3);
	if (!t)
		fail_msg("%s", err_msg());
	tok_free(t);
	const char *dup[] = {"<|im_start|>", "<|im_start|>"};
	const unsigned char specials[] = {TOK_SPECIAL, TOK_SPECIAL},
			    mixed[] = {TOK_SPECIAL, TOK_ADDED};
	assert_null(vocab_with(dup, specials, 2));
	assert_non_null(strstr(err_msg(), "v.gguf: tokenizer.ggml.tokens[257]: token "
					  "\"<|im_start|>\" for id 257 given twice (also id 256)"));
	assert_null(vocab_with(dup, mixed, 2));
	assert_non_null(strstr(err_msg(), "given twice"));
	const char *normal[] = {"ab", "ab"};
	const unsigned char normals[] = {TOK_NORMAL, TOK_NORMAL};
	assert_null(vocab_with(normal, normals, 2));
	assert_non_null(strstr(err_msg(), "given twice"));
}

static void test_malformed(void **state)
{
	(void)state;
	static const char *const cases[][3] = {
		{"\"type\":\"BPE\"", "\"type\":\"Unigram\"", "model.type: \"Unigram\""},
		{"\"type\":\"BPE\"", "\"type\":\"WordPiece\"", "model.type: \"WordPiece\""},
		{"\"type\":\"BPE\",", "", "model.type: missing"},
		{"\"type\":\"Sequence\"", "\"type\":\"Whitespace\"",
		 "pre_tokenizer: type \"Whitespace\""},
		{"(?i:'s", "(?i:'x", "pre_tokenizer.pretokenizers[0].pattern.Regex"},
		{"\"Isolated\"", "\"Removed\"", "behavior"},
		{"\"type\":\"Split\"", "\"type\":\"Digits\"", "pretokenizers[0]: type \"Digits\""},
		{"\"decoder\":{\"type\":\"ByteLevel\"}", "\"decoder\":{\"type\":\"WordPiece\"}",
		 "decoder: type \"WordPiece\""},
		{"\"decoder\":{\"type\":\"ByteLevel\"},", "", "decoder: missing"},
		{"\"normalizer\":{\"type\":\"NFC\"}", "\"normalizer\":{\"type\":\"NFKC\"}",
		 "normalizer: type \"NFKC\""},
		{"\"abc\":257", "\"abc\":\"x\"", "model.vocab"},
		{"\"abc\":257", "\"abc\":256", "model.vocab"},
		{"\"abc\":257", "\"abc\":99999999999", "model.vocab"},
		{"\"abc\":257", "\"abc\":-3", "model.vocab"},
		{"\"z\":122", "\"zz\":122", "model.vocab: no token for byte 0x7a"},
		{"\"abc\":257", "\"a\\u0000c\":257", "model.vocab"},
		{"\"abc\":257",
		 "\"a\xff"
		 "c\":257",
		 "model.vocab: invalid UTF-8"},
		{"\"abc\":257", "\"a\xe2\x82\":257", "model.vocab: invalid UTF-8"},
		{"\"a b\"", "\"a q\"", "model.merges: entry 0: the merged token"},
		{"\"a b\"", "\"a b c\"", "model.merges: entry 0"},
		{"\"a b\"", "\"ab\"", "model.merges: entry 0"},
		{"[\"ab\",\"c\"]", "[\"ab\",5]", "model.merges"},
		{"[\"ab\",\"c\"]", "[\"zz\",\"c\"]", "model.merges: entry 1: its left token"},
		{"\"merges\":", "\"merged\":", "model.merges: missing"},
		{"\"model\":", "\"modelx\":", "model: missing"},
		{"\"content\":\"<|e|>\"", "\"contents\":\"<|e|>\"", "added_tokens[0].content"},
		{"\"id\":258", "\"id\":\"x\"", "added_tokens[0].id"},
		{"\"id\":258", "\"id\":97", "id 97 is the vocabulary's token for other text"},
		{"\"special\":true", "\"special\":1", "added_tokens[0]"},
		{"\"truncation\":null", "\"truncation\":{\"max_length\":5}", "truncation"},
		{"\"padding\":null",
		 "\"padding\":{\"strategy\":{\"Fixed\":8},\"direction\":\"Right\",\"pad_id\":0}",
		 "padding: only null or the BatchLongest strategy"},
		{"\"padding\":null",
		 "\"padding\":{\"strategy\":\"BatchLongest\",\"direction\":\"Left\",\"pad_id\":258,"
		 "\"pad_type_id\":0,\"pad_token\":\"<|e|>\"}",
		 NULL}, /* valid: one text is never padded */
		{"\"post_processor\":null", "\"post_processor\":{\"type\":\"BertProcessing\"}",
		 "post_processor"},
		{"\"post_processor\":null",
		 "\"post_processor\":{\"type\":\"TemplateProcessing\",\"single\":[{"
		 "\"SpecialToken\":"
		 "{\"id\":\"E\"}}],\"special_tokens\":{\"E\":{\"ids\":[258]}}}",
		 "post_processor.single: no text ($A)"},
		{"\"post_processor\":null",
		 "\"post_processor\":{\"type\":\"TemplateProcessing\",\"single\":[{\"Sequence\":"
		 "{\"id\":\"A\"}},{\"SpecialToken\":{\"id\":\"E\"}}],\"special_tokens\":{}}",
		 "post_processor.special_tokens: \"E\" has no ids"},
		{"\"post_processor\":null",
		 "\"post_processor\":{\"type\":\"TemplateProcessing\",\"single\":[{\"Sequence\":"
		 "{\"id\":\"A\"}},{\"SpecialToken\":{\"id\":\"E\"}}],\"special_tokens\":{\"E\":"
		 "{\"ids\":[259]}}}",
		 "post_processor: special token id 259 is not in the vocabulary"},
		{"\"post_processor\":null",
		 "\"post_processor\":{\"type\":\"TemplateProcessing\",\"single\":[{\"Sequence\":"
		 "{\"id\":\"A\"}},{\"Sequence\":{\"id\":\"A\"}}]}",
		 "post_processor.single[1]"},
		{"\"post_processor\":null",
		 "\"post_processor\":{\"type\":\"Sequence\",\"processors\":[{\"type\":\"Sequence\","
		 "\"processors\":[]}]}",
		 "post_processor.processors[0]: a Sequence within a Sequence"},
		{"\"post_processor\":null",
		 "\"post_processor\":{\"type\":\"Sequence\",\"processors\":[7]}",
		 "post_processor.processors[0]: not an object"},
		{"\"dropout\":null", "\"dropout\":0.1", "model.dropout"},
		{"\"version\"", "\"version\" ", NULL}, /* still valid: whitespace */
		{"{\"version\"", "[{\"version\"", "expected '{'"},
		{"\"ab\":256", "\"ab\":256,\"ab\":255", "model.vocab"},
	};
	char *j = tiny_json();
	char path[] = "/tmp/qwenchat-tok-bad.XXXXXX";
	int fd = mkstemp(path);
	assert_true(fd >= 0);
	close(fd);
	for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
		char *s = replace(j, cases[i][0], cases[i][1]);
		write_file(path, s, strlen(s));
		struct tok *t = tok_load_files(path, NULL);
		if (!cases[i][2]) {
			if (!t)
				fail_msg("case %zu: %s", i, err_msg());
			tok_free(t);
		} else {
			if (t)
				fail_msg("case %zu (%s): loaded", i, cases[i][2]);
			const char *m = err_msg();
			if (!strstr(m, path) || !strstr(m, cases[i][2]) || strchr(m, '\n'))
				fail_msg("case %zu: message \"%s\" lacks the file or \"%s\"", i, m,
					 cases[i][2]);
		}
		free(s);
	}
	/* truncated anywhere: an error naming the file, never a crash */
	size_t len = strlen(j), step = sanitized ? 97 : 13;
	for (size_t cut = 0; cut < len; cut += step) {
		write_file(path, j, cut);
		struct tok *t = tok_load_files(path, NULL);
		assert_null(t);
		assert_non_null(strstr(err_msg(), path));
	}
	/* tokenizer_config.json: bad JSON, a disagreeing added token */
	write_file(path, j, strlen(j));
	char cfg[] = "/tmp/qwenchat-tok-cfg.XXXXXX";
	fd = mkstemp(cfg);
	assert_true(fd >= 0);
	close(fd);
	const char *bad_cfg[][2] = {
		{"{\"eos_token\": ", "line"},
		{"{\"added_tokens_decoder\": {\"258\": {\"content\": \"<|x|>\"}}}",
		 "added_tokens_decoder.\"258\".content"},
		{"{\"added_tokens_decoder\": {\"abc\": {\"content\": \"<|x|>\"}}}",
		 "added_tokens_decoder.\"abc\""},
		{"{\"eos_token\": 5}", "eos_token"},
		{"{\"chat_template\": 5}", "chat_template"},
	};
	for (size_t i = 0; i < sizeof bad_cfg / sizeof *bad_cfg; i++) {
		write_file(cfg, bad_cfg[i][0], strlen(bad_cfg[i][0]));
		assert_null(tok_load_files(path, cfg));
		const char *m = err_msg();
		if (!strstr(m, cfg) || !strstr(m, bad_cfg[i][1]) || strchr(m, '\n'))
			fail_msg("config case %zu: message \"%s\"", i, m);
	}
	const char *good =
		"{\"added_tokens_decoder\": {\"258\": {\"content\": \"<|e|>\", \"special\": true},"
		" \"259\": {\"content\": \"<new>\", \"special\": false}}, \"eos_token\": "
		"{\"content\": \"<|e|>\"},"
		" \"chat_template\": [{\"name\": \"default\", \"template\": \"T\"}]}";
	write_file(cfg, good, strlen(good));
	struct tok *t = tok_load_files(path, cfg);
	if (!t)
		fail_msg("%s", err_msg());
	assert_int_equal(tok_id(t, "<new>"), 259);
	assert_string_equal(tok_eos_token(t), "<|e|>");
	assert_string_equal(tok_chat_template(t), "T");
	assert_null(tok_pad_token(t));
	tok_free(t);
	assert_null(tok_load_files("/nonexistent/tokenizer.json", NULL));
	assert_non_null(strstr(err_msg(), "/nonexistent/tokenizer.json"));
	unlink(cfg);
	unlink(path);
	free(j);
}

int main(void)
{
	sanitized = getenv("QWENCHAT_SANITIZED") && !strcmp(getenv("QWENCHAT_SANITIZED"), "1");
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_tiny_valid),
		cmocka_unit_test(test_malformed),
		cmocka_unit_test(test_vocab_duplicates),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
