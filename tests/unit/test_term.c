/* test_term.c — term_safe on a table of what a hostile text may hold. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "src/base/term.h"
#include "src/base/utf8.h"

static const struct {
	const char *in;
	size_t len; /* 0: strlen(in) */
	const char *out;
} cases[] = {
	{"plain text", 0, "plain text"},
	{"lines\nand\ttabs", 0, "lines\nand\ttabs"},
	{"\x1b]0;pwned\x07title", 0, "^[]0;pwned^Gtitle"}, /* OSC retitle */
	{"\x1b[2J\x1b[H", 0, "^[[2J^[[H"},                 /* clear screen */
	{"\x1b]52;c;aGk=\x1b\\", 0, "^[]52;c;aGk=^[\\"},   /* clipboard write */
	{"a\rb\bc", 0, "a^Mb^Hc"},                         /* carriage return, backspace */
	{"del\x7f", 0, "del^?"},
	{"nul\0after", 9, "nul^@after"},
	{"c1 \xc2\x9b"
	 "2J csi",
	 0,
	 "c1 \xef\xbf\xbd"
	 "2J csi"}, /* U+009B, the 8-bit CSI */
	{"raw \x9b"
	 "2J",
	 0,
	 "raw \xef\xbf\xbd"
	 "2J"},                                              /* a lone byte that is not UTF-8 */
	{"cut \xe4\xb8", 0, "cut \xef\xbf\xbd\xef\xbf\xbd"}, /* truncated sequence */
	{"\xe4\xb8\xad\xe6\x96\x87 \xf0\x9f\x99\x82", 0,
	 "\xe4\xb8\xad\xe6\x96\x87 \xf0\x9f\x99\x82"},
	{"\xc2\xa0nbsp", 0, "\xc2\xa0nbsp"},                         /* U+00A0 is printable */
	{"\xed\xa0\x80", 0, "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd"}, /* a surrogate is not UTF-8 */
};

static void test_table(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		struct strbuf b = {0};
		size_t n = cases[i].len ? cases[i].len : strlen(cases[i].in);
		term_safe(&b, cases[i].in, n);
		assert_false(b.oom);
		if (strcmp(b.p ? b.p : "", cases[i].out))
			fail_msg("case %zu: got '%s', want '%s'", i, b.p, cases[i].out);
		for (size_t k = 0; k < b.n; k++) /* nothing that starts a sequence survives */
			assert_true((unsigned char)b.p[k] != 0x1b && (unsigned char)b.p[k] != 0x07);
		free(b.p);
	}
}

/* Every byte value alone and after a lead byte: the output is valid UTF-8 holding no
 * control character but \n and \t. */
static void test_every_byte(void **state)
{
	(void)state;
	for (int lead = -1; lead < 256; lead++)
		for (int c = 0; c < 256; c++) {
			char in[2];
			size_t n = 0;
			if (lead >= 0)
				in[n++] = (char)lead;
			in[n++] = (char)c;
			struct strbuf b = {0};
			term_safe(&b, in, n);
			for (size_t k = 0; k < b.n; k++) {
				unsigned char x = (unsigned char)b.p[k];
				assert_true(x >= 0x20 || x == '\n' || x == '\t');
				assert_true(x != 0x7f);
				if (x == 0xc2 && k + 1 < b.n) /* no C1 control in UTF-8 form */
					assert_true((unsigned char)b.p[k + 1] > 0x9f);
			}
			free(b.p);
		}
}

/* OSC 52: base64 of RFC 4648's test vectors inside ESC ] 52 ; c ; ... BEL. */
/* One line: a newline too in caret notation, the rest as term_safe. */
static void test_one_line(void **state)
{
	(void)state;
	struct strbuf b = {0};
	const char in[] = "a\nb\r\tc\033]0;x\a";
	term_safe_line(&b, in, sizeof in - 1);
	assert_string_equal(b.p, "a^Jb^M\tc^[]0;x^G");
	free(b.p);
}

static void test_osc52(void **state)
{
	(void)state;
	static const char *const vec[][2] = {
		{"", ""},
		{"f", "Zg=="},
		{"fo", "Zm8="},
		{"foo", "Zm9v"},
		{"foob", "Zm9vYg=="},
		{"fooba", "Zm9vYmE="},
		{"foobar", "Zm9vYmFy"},
	};
	for (size_t i = 0; i < sizeof vec / sizeof vec[0]; i++) {
		char *s = term_osc52(vec[i][0], strlen(vec[i][0]));
		char want[64];
		snprintf(want, sizeof want, "\033]52;c;%s\a", vec[i][1]);
		assert_string_equal(s, want);
		free(s);
	}
	char *s = term_osc52("\xff\x00\n", 3); /* any bytes */
	assert_string_equal(s, "\033]52;c;/wAK\a");
	free(s);
}

/* Ill-formed UTF-8 replaced as Python does: bytes.decode("utf-8", "replace"), its
 * output for each input written down here. */
static void test_utf8_replace(void **state)
{
	(void)state;
	static const char *const cases[][2] = {
		{"abc", "abc"},
		{"\xe2\x82\xac", "\xe2\x82\xac"},
		{"\xe2\x82"
		 "a",
		 UTF8_REPLACEMENT "a"},
		{"\xf0\x80\x80", UTF8_REPLACEMENT UTF8_REPLACEMENT UTF8_REPLACEMENT},
		{"\xed\xa0\x80", UTF8_REPLACEMENT UTF8_REPLACEMENT UTF8_REPLACEMENT},
		{"\xc0\xaf", UTF8_REPLACEMENT UTF8_REPLACEMENT},
		{"\xff", UTF8_REPLACEMENT},
		{"a\xf4\x90\x80\x80"
		 "b",
		 "a" UTF8_REPLACEMENT UTF8_REPLACEMENT UTF8_REPLACEMENT UTF8_REPLACEMENT "b"},
		{"\xe6\x97\xa5\xe6\x9c", "\xe6\x97\xa5" UTF8_REPLACEMENT},
		{"\xf0\x9f\x98\x80\x80", "\xf0\x9f\x98\x80" UTF8_REPLACEMENT},
		{"\xc3", UTF8_REPLACEMENT},
		{"\xe0\xa0", UTF8_REPLACEMENT},
	};
	for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
		const char *s = cases[c][0];
		size_t n = strlen(s), o = 0;
		char out[64];
		while (n > 0) {
			size_t valid, bad;
			utf8_next_piece(s, n, &valid, &bad);
			memcpy(out + o, s, valid), o += valid;
			if (bad)
				memcpy(out + o, UTF8_REPLACEMENT, 3), o += 3;
			assert_true(valid + bad > 0);
			s += valid + bad, n -= valid + bad;
		}
		out[o] = 0;
		assert_string_equal(out, cases[c][1]);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_table),        cmocka_unit_test(test_every_byte),
		cmocka_unit_test(test_one_line),     cmocka_unit_test(test_osc52),
		cmocka_unit_test(test_utf8_replace),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
