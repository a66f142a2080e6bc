/* test_tokenizer_pretok.c — the Qwen2 pre-tokenizer scanner against splits made by
 * Hugging Face `tokenizers` (npm @anush008/tokenizers 0.6.0, preTokenizeString of the
 * Qwen3 tokenizer.json pre-tokenizer, byte-level pieces mapped back to bytes). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "tokenizer/pretok.h"

/* Input text, then its pre-tokens joined with '|' (no input contains '|'). */
static const char *const cases[][2] = {
	{"Hello world", "Hello"
			"|"
			" world"},
	{"I'm here, they're 'RE you'LL", "I"
					 "|"
					 "'m"
					 "|"
					 " here"
					 "|"
					 ","
					 "|"
					 " they"
					 "|"
					 "'re"
					 "|"
					 " '"
					 "|"
					 "RE"
					 "|"
					 " you"
					 "|"
					 "'LL"},
	{"it's 'S 'T 'Ve 'mM 'D 'x", "it"
				     "|"
				     "'s"
				     "|"
				     " '"
				     "|"
				     "S"
				     "|"
				     " '"
				     "|"
				     "T"
				     "|"
				     " '"
				     "|"
				     "Ve"
				     "|"
				     " '"
				     "|"
				     "mM"
				     "|"
				     " '"
				     "|"
				     "D"
				     "|"
				     " '"
				     "|"
				     "x"},
	{"'\xc5"
	 "\xbf",
	 "'\xc5"
	 "\xbf"},
	{"12345 abc", "1"
		      "|"
		      "2"
		      "|"
		      "3"
		      "|"
		      "4"
		      "|"
		      "5"
		      "|"
		      " abc"},
	{"a  b   c", "a"
		     "|"
		     " "
		     "|"
		     " b"
		     "|"
		     "  "
		     "|"
		     " c"},
	{"x \x0a"
	 "\x0a"
	 "  y",
	 "x"
	 "|"
	 " \x0a"
	 "\x0a"
	 "|"
	 " "
	 "|"
	 " y"},
	{"\x0d"
	 "\x0a"
	 "\x0d"
	 "\x0a"
	 "\x09"
	 "z",
	 "\x0d"
	 "\x0a"
	 "\x0d"
	 "\x0a"
	 "|"
	 "\x09"
	 "z"},
	{"foo.bar()\x0a"
	 "\x0a",
	 "foo"
	 "|"
	 ".bar"
	 "|"
	 "()\x0a"
	 "\x0a"},
	{"  \xc2"
	 "\xa0"
	 "x",
	 "  "
	 "|"
	 "\xc2"
	 "\xa0"
	 "x"},
	{"\xef"
	 "\xbb"
	 "\xbf"
	 "word",
	 "\xef"
	 "\xbb"
	 "\xbf"
	 "word"},
	{"a\xc2"
	 "\x85"
	 "b",
	 "a"
	 "|"
	 "\xc2"
	 "\x85"
	 "b"},
	{"\xe3"
	 "\x80"
	 "\x80"
	 "\xe3"
	 "\x80"
	 "\x80"
	 "x",
	 "\xe3"
	 "\x80"
	 "\x80"
	 "|"
	 "\xe3"
	 "\x80"
	 "\x80"
	 "x"},
	{"end   ", "end"
		   "|"
		   "   "},
	{"\xe2"
	 "\x80"
	 "\xa8"
	 "\xe2"
	 "\x80"
	 "\xa9",
	 "\xe2"
	 "\x80"
	 "\xa8"
	 "\xe2"
	 "\x80"
	 "\xa9"},
	{"\x1c"
	 "\x1d"
	 "q",
	 "\x1c"
	 "\x1d"
	 "|"
	 "q"},
	{"x\xcc"
	 "\x81"
	 "y",
	 "x"
	 "|"
	 "\xcc"
	 "\x81"
	 "y"},
	{"\xe4"
	 "\xb8"
	 "\xad"
	 "\xe6"
	 "\x96"
	 "\x87"
	 "\xe5"
	 "\xad"
	 "\x97",
	 "\xe4"
	 "\xb8"
	 "\xad"
	 "\xe6"
	 "\x96"
	 "\x87"
	 "\xe5"
	 "\xad"
	 "\x97"},
	{"\xd9"
	 "\xa1"
	 "\xd9"
	 "\xa2"
	 "\xd9"
	 "\xa3",
	 "\xd9"
	 "\xa1"
	 "|"
	 "\xd9"
	 "\xa2"
	 "|"
	 "\xd9"
	 "\xa3"},
	{"\xe2"
	 "\x85"
	 "\xa7"
	 " \xc2"
	 "\xbd",
	 "\xe2"
	 "\x85"
	 "\xa7"
	 "|"
	 " "
	 "|"
	 "\xc2"
	 "\xbd"},
	{"\xf0"
	 "\x9f"
	 "\x91"
	 "\x8d"
	 "\xf0"
	 "\x9f"
	 "\x8f"
	 "\xbd"
	 "!!",
	 "\xf0"
	 "\x9f"
	 "\x91"
	 "\x8d"
	 "\xf0"
	 "\x9f"
	 "\x8f"
	 "\xbd"
	 "!!"},
	{"\x22"
	 "quoted\x22",
	 "\x22"
	 "quoted"
	 "|"
	 "\x22"},
	{"--x", "--"
		"|"
		"x"},
	{"  .\x0d"
	 "\x0a",
	 " "
	 "|"
	 " .\x0d"
	 "\x0a"},
};

static void test_hf_splits(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		const char *s = cases[i][0];
		size_t len = strlen(s), pos = 0, o = 0;
		char got[256];
		while (pos < len) {
			size_t e = pretok_next(s, len, pos);
			assert_true(e > pos && e <= len);
			if (o)
				got[o++] = '|';
			assert_true(o + (e - pos) < sizeof got);
			memcpy(got + o, s + pos, e - pos);
			o += e - pos;
			pos = e;
		}
		got[o] = 0;
		if (strcmp(got, cases[i][1]) != 0)
			fail_msg("case %zu: got [%s], want [%s]", i, got, cases[i][1]);
	}
}

/* Arbitrary bytes (invalid UTF-8 too): always progress, never past the end. */
static void test_any_bytes_progress(void **state)
{
	(void)state;
	uint32_t x = 12345;
	unsigned char buf[64];
	for (int iter = 0; iter < 20000; iter++) {
		size_t len = 1 + iter % (sizeof buf);
		for (size_t i = 0; i < len; i++) {
			x = x * 1664525u + 1013904223u;
			buf[i] = (unsigned char)(x >> 24);
		}
		size_t pos = 0;
		while (pos < len) {
			size_t e = pretok_next((const char *)buf, len, pos);
			assert_true(e > pos && e <= len);
			pos = e;
		}
	}
}

/* A truncated multibyte sequence at the end is not read past. */
static void test_truncated_tail(void **state)
{
	(void)state;
	const char s[] = "ab\xe4\xb8";
	assert_int_equal(pretok_next(s, 4, 0), 2);
	size_t e = pretok_next(s, 4, 2);
	assert_true(e > 2 && e <= 4);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_hf_splits),
		cmocka_unit_test(test_any_bytes_progress),
		cmocka_unit_test(test_truncated_tail),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
