/* test_tokens.c — the data-file reader (src/train/tokens.c): .u32 files id by id
 * (partial ids and ids beyond the vocabulary refused with their byte offset), text as
 * one literal document with end-of-text appended and ill-formed UTF-8 as U+FFFD, the
 * end-of-text token found or its absence named, files read or refused by path; the
 * real Qwen3 tokenizer's <|endoftext|> and <|im_end|>. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <cmocka.h>

#include "src/base/err.h"
#include "src/train/tokens.h"
#include "tests/unit/testutil.h"
#include "tests/unit/tinytok.h"
#include "tokenizer/tokenizer.h"

static struct tok *tiny;

static int setup(void **state)
{
	(void)state;
	tiny = tt_tokenizer(false, "<|im_end|>");
	if (!tiny)
		fprintf(stderr, "%s\n", err_msg());
	return tiny ? 0 : -1;
}

static int teardown(void **state)
{
	(void)state;
	tok_free(tiny);
	return 0;
}

static void assert_err_has(const char *what)
{
	if (!strstr(err_msg(), what))
		fail_msg("error '%s' lacks '%s'", err_msg(), what);
}

static void test_is_u32(void **state)
{
	(void)state;
	assert_true(tokens_is_u32("data.u32"));
	assert_true(tokens_is_u32("dir/x.y.u32"));
	assert_true(tokens_is_u32(".u32"));
	assert_false(tokens_is_u32("u32"));
	assert_false(tokens_is_u32("data.u32.txt"));
	assert_true(tokens_is_u32("data.U32"));
	assert_true(tokens_is_u32("Data.U32"));
	assert_false(tokens_is_u32("data.txt"));
}

static void test_u32(void **state)
{
	(void)state;
	const unsigned char ok[] = {1, 0, 0, 0, 0xff, 3, 0, 0, 0, 0, 0, 0};
	int32_t *ids;
	size_t n;
	assert_int_equal(tokens_from_u32(ok, sizeof ok, 1024, &ids, &n), 0);
	assert_int_equal(n, 3);
	assert_int_equal(ids[0], 1);
	assert_int_equal(ids[1], 1023); /* little-endian */
	assert_int_equal(ids[2], 0);
	free(ids);
	/* no ids: an empty array, not an error */
	assert_int_equal(tokens_from_u32(ok, 0, 1024, &ids, &n), 0);
	assert_non_null(ids);
	assert_int_equal(n, 0);
	free(ids);
	/* a partial id at the end, named by its offset */
	assert_int_equal(tokens_from_u32(ok, 10, 1024, &ids, &n), -1);
	assert_null(ids);
	assert_err_has("10 bytes");
	assert_err_has("byte offset 8");
	/* the first id beyond the vocabulary, named by its offset */
	const unsigned char big[] = {5, 0, 0, 0, 0, 4, 0, 0, 0xff, 0xff, 0xff, 0xff};
	assert_int_equal(tokens_from_u32(big, sizeof big, 1024, &ids, &n), -1);
	assert_err_has("byte offset 4: token id 1024 is not below the model's vocab_size 1024");
	assert_int_equal(tokens_from_u32(big, sizeof big, 1025, &ids, &n), -1);
	assert_err_has("byte offset 8: token id 4294967295");
}

/* ids of text through the tiny tokenizer, with its vocabulary as the model's */
static int32_t *text_ids(const char *text, size_t len, size_t *n)
{
	int32_t *ids;
	if (tokens_from_text(tiny, TT_VOCAB, true, text, len, &ids, n))
		fail_msg("tokens_from_text: %s", err_msg());
	return ids;
}

static void test_text(void **state)
{
	(void)state;
	size_t n;
	int32_t *ids = text_ids("xab", 3, &n);
	assert_int_equal(n, 3);
	assert_int_equal(ids[0], 'x');
	assert_int_equal(ids[1], TT_AB);
	assert_int_equal(ids[2], TT_EOT); /* appended */
	free(ids);
	ids = text_ids("", 0, &n);
	assert_int_equal(n, 1);
	assert_int_equal(ids[0], TT_EOT);
	free(ids);
	/* the bytes of the text, NUL included, are all encoded */
	ids = text_ids("a\0b", 3, &n);
	assert_int_equal(n, 4);
	assert_int_equal(ids[1], 0);
	free(ids);
}

/* Special-token strings in data are text; the non-special added tokens stay tokens,
 * as Hugging Face's split_special_tokens=True leaves them. */
static void test_text_literal(void **state)
{
	(void)state;
	const char *s = "a<|im_end|>b<|endoftext|>";
	size_t n, dl;
	int32_t *ids = text_ids(s, strlen(s), &n);
	for (size_t i = 0; i + 1 < n; i++) {
		assert_int_not_equal(ids[i], TT_IM_END);
		assert_int_not_equal(ids[i], TT_EOT);
	}
	assert_int_equal(ids[n - 1], TT_EOT);
	char *dec = tok_decode(tiny, ids, n - 1, false, &dl);
	assert_int_equal(dl, strlen(s));
	assert_memory_equal(dec, s, dl);
	free(dec);
	free(ids);
	ids = text_ids("<think>", 7, &n);
	assert_int_equal(n, 2);
	assert_int_equal(ids[0], TT_THINK);
	free(ids);
}

/* Ill-formed UTF-8 encodes as U+FFFD would, one per maximal subpart. */
static void test_text_ill_formed(void **state)
{
	(void)state;
	static const struct {
		const char *bad, *good;
	} cases[] = {
		{"a\xff" "b", "a\xef\xbf\xbd" "b"},
		{"\xe2\x82", "\xef\xbf\xbd"},                                   /* cut short */
		{"\xc0\xaf" "x", "\xef\xbf\xbd\xef\xbf\xbd" "x"},               /* overlong */
		{"\xed\xa0\x80", "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd"},       /* surrogate */
		{"ok \xf0\x9f\xa6\x80", "ok \xf0\x9f\xa6\x80"},                 /* well-formed */
	};
	for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
		size_t nb, ng;
		int32_t *b = text_ids(cases[c].bad, strlen(cases[c].bad), &nb);
		int32_t *g = text_ids(cases[c].good, strlen(cases[c].good), &ng);
		assert_int_equal(nb, ng);
		assert_memory_equal(b, g, nb * sizeof *b);
		free(b);
		free(g);
	}
}

static void test_text_errors(void **state)
{
	(void)state;
	int32_t *ids;
	size_t n;
	/* an id the model has no row for */
	assert_int_equal(tokens_from_text(tiny, TT_EOT + 1, true, "<think>", 7, &ids, &n), -1);
	assert_null(ids);
	assert_err_has("token 0: the tokenizer gave id 259");
	assert_int_equal(tokens_from_text(tiny, 200, true, "x", 1, &ids, &n), -1);
	assert_err_has("end-of-text token id 257");
	/* no <|endoftext|>: the eos_token, else an error */
	struct tok *t = tt_tokenizer(true, "<|im_end|>");
	assert_non_null(t);
	assert_int_equal(tokens_eot(t), TT_IM_END);
	tok_free(t);
	t = tt_tokenizer(true, NULL);
	assert_non_null(t);
	assert_int_equal(tokens_eot(t), -1);
	assert_err_has("no end-of-text token");
	assert_int_equal(tokens_from_text(t, TT_VOCAB, true, "x", 1, &ids, &n), -1);
	assert_err_has("no end-of-text token");
	/* ... which a text without one appended (perplexity --no-eot) does not need */
	assert_int_equal(tokens_from_text(t, TT_VOCAB, false, "x", 1, &ids, &n), 0);
	assert_int_equal(n, 1);
	assert_int_not_equal(ids[0], TT_EOT);
	free(ids);
	assert_int_equal(tokens_from_jsonl(t, TT_VOCAB, false,
					   "{\"text\": \"x\"}\n{\"text\": \"x\"}", 27, &ids, &n),
			 0);
	assert_int_equal(n, 2);
	free(ids);
	tok_free(t);
	t = tt_tokenizer(true, "</s>");
	assert_int_equal(tokens_eot(t), -1);
	assert_err_has("\"</s>\" is not one of its tokens");
	tok_free(t);
	assert_int_equal(tokens_eot(tiny), TT_EOT);
}

static void write_file(const char *path, const void *data, size_t n)
{
	FILE *f = fopen(path, "wb");
	assert_non_null(f);
	assert_int_equal(fwrite(data, 1, n, f), n);
	assert_int_equal(fclose(f), 0);
}

static void test_read_file(void **state)
{
	(void)state;
	char dir[] = "/tmp/qwenchat-tokens.XXXXXX", path[128];
	assert_non_null(mkdtemp(dir));
	int32_t *ids;
	size_t n;
	snprintf(path, sizeof path, "%s/ids.u32", dir);
	write_file(path, "\x07\0\0\0\x01\x01\0\0", 8);
	assert_int_equal(tokens_read_file(path, NULL, 300, true, &ids, &n),
			 0); /* no tokenizer needed */
	assert_int_equal(n, 2);
	assert_int_equal(ids[0], 7);
	assert_int_equal(ids[1], 257);
	free(ids);
	assert_int_equal(tokens_read_file(path, NULL, 257, true, &ids, &n), -1);
	assert_err_has("ids.u32: byte offset 4: token id 257");
	/* appended to a stream, read into it: twice, then a refusal that keeps n */
	ids = NULL;
	n = 0;
	assert_int_equal(tokens_append_u32(path, 300, &ids, &n), 0);
	assert_int_equal(tokens_append_u32(path, 300, &ids, &n), 0);
	assert_int_equal(n, 4);
	assert_int_equal(ids[2], 7);
	assert_int_equal(ids[3], 257);
	assert_int_equal(tokens_append_u32(path, 257, &ids, &n), -1);
	assert_err_has("ids.u32: byte offset 4: token id 257");
	assert_int_equal(n, 4);
	free(ids);
	snprintf(path, sizeof path, "%s/doc.txt", dir);
	write_file(path, "xab", 3);
	assert_int_equal(tokens_read_file(path, tiny, TT_VOCAB, true, &ids, &n), 0);
	assert_int_equal(n, 3);
	assert_int_equal(ids[2], TT_EOT);
	free(ids);
	assert_int_equal(tokens_read_file(path, NULL, TT_VOCAB, true, &ids, &n), -1);
	assert_err_has("doc.txt: a text file needs the model's tokenizer");
	snprintf(path, sizeof path, "%s/none.u32", dir);
	assert_int_equal(tokens_read_file(path, NULL, 300, true, &ids, &n), -1);
	assert_err_has("none.u32: cannot open");
	snprintf(path, sizeof path, "%s/sub.u32", dir);
	assert_int_equal(mkdir(path, 0700), 0);
	assert_int_equal(tokens_read_file(path, NULL, 300, true, &ids, &n), -1);
	assert_null(ids);
	assert_err_has("sub.u32");
	char cmd[200];
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
	assert_int_equal(system(cmd), 0);
}

/* The real Qwen3 tokenizer: <|endoftext|> (151643) ends a document, not the chat's
 * eos_token <|im_end|> (151645), which in a text is text. */
static void test_qwen3(void **state)
{
	(void)state;
	char tdir[4096];
	tu_tokenizer_dir(tdir, sizeof tdir);
	struct tok *t = tok_load(tdir);
	assert_non_null(t);
	assert_int_equal(tokens_eot(t), 151643);
	const char *s = "Hello<|im_end|><|im_start|>user";
	int32_t *ids;
	size_t n;
	assert_int_equal(tokens_from_text(t, 151936, true, s, strlen(s), &ids, &n), 0);
	assert_true(n > 4);
	for (size_t i = 0; i + 1 < n; i++)
		assert_false(tok_is_special(t, ids[i]));
	assert_int_equal(ids[n - 1], 151643);
	free(ids);
	tok_free(t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_is_u32),          cmocka_unit_test(test_u32),
		cmocka_unit_test(test_text),            cmocka_unit_test(test_text_literal),
		cmocka_unit_test(test_text_ill_formed), cmocka_unit_test(test_text_errors),
		cmocka_unit_test(test_read_file),       cmocka_unit_test(test_qwen3),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
