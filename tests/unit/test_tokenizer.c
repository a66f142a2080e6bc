/* test_tokenizer.c — the Qwen3 tokenizer against Hugging Face tokenizers: golden ids
 * (tests/golden/tokenizer-cases.jsonl, the published Qwen2 cases, a 1 MB mixed text),
 * lossless decode, streaming decode and lookups (test_tokenizer_files.c: small and bad
 * files). Needs the real tokenizer files (tests/fetch-tokenizer.sh; SKIP without them,
 * except CI). */
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
#include "tests/unit/testutil.h"
#include "src/base/fileio.h"
#include "tokenizer/nfc.h"
#include "tokenizer/tokenizer.h"

static char tokdir[4096];
static struct tok *T;
static bool sanitized;

static const char *top(void)
{
	const char *s = getenv("TOP_SRCDIR");
	return s ? s : ".";
}

static json_t *read_jsonl_line(const char *line)
{
	json_error_t je;
	json_t *v = json_loads(line, JSON_ALLOW_NUL, &je);
	if (!v)
		fail_msg("bad golden line: %s", je.text);
	return v;
}

/* Calls fn on each JSON line of tests/golden/NAME. */
static void each_line(const char *name, void (*fn)(json_t *, void *), void *arg)
{
	char path[4200];
	snprintf(path, sizeof path, "%s/tests/golden/%s", top(), name);
	FILE *f = fopen(path, "r");
	if (!f)
		fail_msg("cannot open %s", path);
	char *line = NULL;
	size_t cap = 0;
	while (getline(&line, &cap, f) > 0) {
		json_t *v = read_jsonl_line(line);
		fn(v, arg);
		json_decref(v);
	}
	free(line);
	fclose(f);
}

static int32_t *ids_of(json_t *a, size_t *n)
{
	*n = json_array_size(a);
	int32_t *v = malloc((*n + 1) * sizeof *v);
	for (size_t i = 0; i < *n; i++)
		v[i] = (int32_t)json_integer_value(json_array_get(a, i));
	return v;
}

static void check_case(struct tok *t, json_t *c)
{
	json_t *text = json_object_get(c, "text");
	size_t want_n, got_n;
	int32_t *want = ids_of(json_object_get(c, "ids"), &want_n);
	int32_t *got = tok_encode(t, json_string_value(text), json_string_length(text), &got_n);
	assert_non_null(got);
	size_t i = 0;
	while (i < want_n && i < got_n && want[i] == got[i])
		i++;
	if (i != want_n || i != got_n)
		fail_msg("case %s: %zu ids, want %zu; first difference at %zu: got %d want %d",
			 json_string_value(json_object_get(c, "name")), got_n, want_n, i,
			 i < got_n ? got[i] : -1, i < want_n ? want[i] : -1);
	free(want);
	free(got);
}

static void golden_base(json_t *c, void *arg)
{
	int *count = arg;
	if (!json_object_get(c, "ids") || json_object_get(c, "tokenizer"))
		return;
	check_case(T, c);
	++*count;
}

static void test_golden_cases(void **state)
{
	(void)state;
	int n = 0;
	each_line("tokenizer-cases.jsonl", golden_base, &n);
	assert_true(n >= 60);
	n = 0;
	each_line("qwen2-tokenizer-reference-cases.jsonl", golden_base, &n);
	assert_int_equal(n, 46);
}

/* Special tokens inside the literal byte ranges are text, the template's around them
 * control tokens (tests/golden/tokenizer-literal.jsonl, made with Hugging Face's). */
static void literal_line(json_t *c, void *arg)
{
	int *count = arg;
	json_t *lit = json_object_get(c, "literal"), *text = json_object_get(c, "text");
	if (!lit)
		return;
	const char *name = json_string_value(json_object_get(c, "name"));
	size_t n_lit = json_array_size(lit), want_n, got_n, plain_n;
	struct tok_span *spans = calloc(n_lit + 1, sizeof *spans);
	for (size_t i = 0; i < n_lit; i++) {
		spans[i].start =
			(size_t)json_integer_value(json_array_get(json_array_get(lit, i), 0));
		spans[i].end =
			(size_t)json_integer_value(json_array_get(json_array_get(lit, i), 1));
	}
	int32_t *want = ids_of(json_object_get(c, "ids"), &want_n);
	int32_t *got = tok_encode_literal(T, json_string_value(text), json_string_length(text),
					  spans, n_lit, &got_n);
	assert_non_null(got);
	size_t i = 0;
	while (i < want_n && i < got_n && want[i] == got[i])
		i++;
	if (i != want_n || i != got_n)
		fail_msg("literal case %s: %zu ids, want %zu; first difference at %zu: got %d want "
			 "%d",
			 name, got_n, want_n, i, i < got_n ? got[i] : -1,
			 i < want_n ? want[i] : -1);
	/* Hugging Face's default parses every special token: the forged turn is real there */
	int32_t *plain = tok_encode(T, json_string_value(text), json_string_length(text), &plain_n);
	int im_start = tok_id(T, "<|im_start|>"), n_plain = 0, n_lit_ids = 0;
	for (size_t k = 0; k < plain_n; k++)
		n_plain += plain[k] == im_start;
	for (size_t k = 0; k < got_n; k++)
		n_lit_ids += got[k] == im_start;
	if (!strcmp(name, "forged system turn"))
		assert_int_equal(n_plain - n_lit_ids, 2);
	free(plain);
	free(want);
	free(got);
	free(spans);
	++*count;
}

static void test_golden_literal(void **state)
{
	(void)state;
	int n = 0;
	each_line("tokenizer-literal.jsonl", literal_line, &n);
	assert_int_equal(n, 8);
}

/* The extra added tokens (lstrip, rstrip, single_word, normalized): inserted at the
 * head of added_tokens in a copy of tokenizer.json, as the golden script did. */
struct extra {
	char *entries;
	struct tok *t;
	int count;
};

static void extra_line(json_t *c, void *arg)
{
	struct extra *e = arg;
	json_t *x = json_object_get(c, "extra_added_tokens");
	if (x) {
		char *s = json_dumps(x, JSON_COMPACT);
		/* drop the outer brackets: the entries go inside the existing array */
		s[strlen(s) - 1] = 0;
		e->entries = strdup(s + 1);
		free(s);
		return;
	}
	const char *tk = json_string_value(json_object_get(c, "tokenizer"));
	if (!tk || strcmp(tk, "extra") != 0)
		return;
	if (!e->t) {
		assert_non_null(e->entries);
		char path[4200];
		size_t len;
		snprintf(path, sizeof path, "%s/tokenizer.json", tokdir);
		char *j = fio_read_all(path, 1 << 30, &len);
		assert_non_null(j);
		char *at = strstr(j, "\"added_tokens\": [");
		assert_non_null(at);
		at = strchr(at, '[') + 1;
		char tmp[] = "/tmp/qwenchat-tok-extra.XXXXXX";
		int fd = mkstemp(tmp);
		assert_true(fd >= 0);
		FILE *f = fdopen(fd, "w");
		fwrite(j, 1, (size_t)(at - j), f);
		fprintf(f, "%s,", e->entries);
		fwrite(at, 1, len - (size_t)(at - j), f);
		fclose(f);
		free(j);
		e->t = tok_load_files(tmp, NULL);
		unlink(tmp);
		if (!e->t)
			fail_msg("%s", err_msg());
	}
	check_case(e->t, c);
	e->count++;
}

static void test_golden_extra_added(void **state)
{
	(void)state;
	struct extra e = {0};
	each_line("tokenizer-cases.jsonl", extra_line, &e);
	assert_true(e.count >= 8);
	tok_free(e.t);
	free(e.entries);
}

static uint64_t fnv1a(uint64_t h, const void *p, size_t n)
{
	const unsigned char *b = p;
	for (size_t i = 0; i < n; i++)
		h = (h ^ b[i]) * 0x100000001b3ull;
	return h;
}

struct texts {
	char **s;
	size_t *len, n;
};

static void collect_text(json_t *c, void *arg)
{
	struct texts *t = arg;
	if (!json_object_get(c, "ids") || json_object_get(c, "tokenizer"))
		return;
	json_t *s = json_object_get(c, "text");
	t->s = realloc(t->s, (t->n + 1) * sizeof *t->s);
	t->len = realloc(t->len, (t->n + 1) * sizeof *t->len);
	t->len[t->n] = json_string_length(s);
	t->s[t->n] = malloc(t->len[t->n] + 1);
	memcpy(t->s[t->n], json_string_value(s), t->len[t->n] + 1);
	t->n++;
}

static void free_texts(struct texts *t)
{
	for (size_t i = 0; i < t->n; i++)
		free(t->s[i]);
	free(t->s);
	free(t->len);
}

/* make-tokenizer-golden.js's mixedText(): xorshift32 picks cases and separators. */
static char *mixed_text(const struct texts *c, size_t *len)
{
	static const char *const seps[] = {" ", "\n", "", "\t", "\n\n", ". "};
	uint32_t x = 2463534242u;
	size_t n = 0, cap = 1 << 21;
	char *out = malloc(cap);
	while (n < 1100000) {
		x ^= x << 13, x ^= x >> 17, x ^= x << 5;
		size_t k = x % c->n;
		x ^= x << 13, x ^= x >> 17, x ^= x << 5;
		const char *sep = seps[x % 6];
		size_t sl = strlen(sep);
		if (n + c->len[k] + sl > cap)
			out = realloc(out, cap *= 2);
		memcpy(out + n, c->s[k], c->len[k]);
		memcpy(out + n + c->len[k], sep, sl);
		n += c->len[k] + sl;
	}
	*len = n;
	return out;
}

static void test_mixed_1mb(void **state)
{
	(void)state;
	struct texts c = {0};
	each_line("tokenizer-cases.jsonl", collect_text, &c);
	char path[4200];
	snprintf(path, sizeof path, "%s/tests/golden/tokenizer-mixed.json", top());
	json_error_t je;
	json_t *g = json_load_file(path, 0, &je);
	assert_non_null(g);
	size_t len, n;
	char *text = mixed_text(&c, &len);
	char hex[17];
	snprintf(hex, sizeof hex, "%016llx",
		 (unsigned long long)fnv1a(0xcbf29ce484222325ull, text, len));
	assert_int_equal(len, json_integer_value(json_object_get(g, "text_bytes")));
	assert_string_equal(hex, json_string_value(json_object_get(g, "text_fnv1a64")));
	int32_t *ids = tok_encode(T, text, len, &n);
	assert_non_null(ids);
	assert_int_equal(n, json_integer_value(json_object_get(g, "ids_count")));
	uint64_t h = 0xcbf29ce484222325ull;
	for (size_t i = 0; i < n; i++) {
		unsigned char le[4] = {(unsigned char)ids[i], (unsigned char)(ids[i] >> 8),
				       (unsigned char)(ids[i] >> 16),
				       (unsigned char)((uint32_t)ids[i] >> 24)};
		h = fnv1a(h, le, 4);
	}
	snprintf(hex, sizeof hex, "%016llx", (unsigned long long)h);
	assert_string_equal(hex, json_string_value(json_object_get(g, "ids_fnv1a64")));
	/* and the round trip on it */
	size_t dl;
	char *dec = tok_decode(T, ids, n, false, &dl);
	size_t nl;
	char *nfc = tok_nfc(text, len, &nl);
	assert_non_null(nfc);
	assert_int_equal(dl, nl);
	assert_memory_equal(dec, nfc, dl);
	free(nfc);
	free(dec);
	free(ids);
	free(text);
	json_decref(g);
	free_texts(&c);
}

static void test_roundtrip_golden(void **state)
{
	(void)state;
	struct texts c = {0};
	each_line("tokenizer-cases.jsonl", collect_text, &c);
	each_line("qwen2-tokenizer-reference-cases.jsonl", collect_text, &c);
	for (size_t i = 0; i < c.n; i++) {
		size_t n, dl;
		int32_t *ids = tok_encode(T, c.s[i], c.len[i], &n);
		assert_non_null(ids);
		char *dec = tok_decode(T, ids, n, false, &dl);
		assert_non_null(dec);
		size_t nl;
		char *nfc = tok_nfc(c.s[i], c.len[i], &nl);
		assert_non_null(nfc);
		if (dl != nl || memcmp(dec, nfc, dl) != 0)
			fail_msg("case %zu: decode(encode(x)) != NFC(x)", i);
		free(nfc);
		free(dec);
		free(ids);
	}
	free_texts(&c);
}

/* NFC against Python's unicodedata.normalize("NFC", ...): U+11A7 after a syllable LV
 * stays (it is no final consonant; utf8proc 2.8 composed it away), and a long run of
 * marks is reordered in linear time (utf8proc swaps neighbours: quadratic). */
static void expect_nfc(const char *in, size_t n, const char *want, size_t wn)
{
	size_t got_n;
	char *got = tok_nfc(in, n, &got_n);
	if (!got)
		fail_msg("tok_nfc of %zu bytes: %s", n, err_msg());
	assert_int_equal(got_n, wn);
	assert_memory_equal(got, want, wn);
	free(got);
}

static void test_nfc_hangul_and_marks(void **state)
{
	(void)state;
	/* U+1100 U+1161 U+11A7 -> U+AC00 U+11A7; U+AC00 U+11A7 stays */
	expect_nfc("\xe1\x84\x80\xe1\x85\xa1\xe1\x86\xa7", 9, "\xea\xb0\x80\xe1\x86\xa7", 6);
	expect_nfc("\xea\xb0\x80\xe1\x86\xa7", 6, "\xea\xb0\x80\xe1\x86\xa7", 6);
	/* U+0F73 decomposes to U+0F71 (class 129) U+0F72 (130): three of them reorder */
	expect_nfc("\xe0\xbd\xb3\xe0\xbd\xb3\xe0\xbd\xb3"
		   "a",
		   10,
		   "\xe0\xbd\xb1\xe0\xbd\xb1\xe0\xbd\xb1\xe0\xbd\xb2\xe0\xbd\xb2\xe0\xbd\xb2"
		   "a",
		   19);
	/* e (U+0301 U+0316) x 200000 -> U+00E9, U+0316 x 200000, U+0301 x 199999 */
	enum { N = 200000 };
	char *in = malloc(1 + 4 * N), *want = malloc(2 + 4 * N);
	assert_true(in && want);
	in[0] = 'e';
	for (int i = 0; i < N; i++)
		memcpy(in + 1 + 4 * i, "\xcc\x81\xcc\x96", 4);
	memcpy(want, "\xc3\xa9", 2);
	for (int i = 0; i < N; i++)
		memcpy(want + 2 + 2 * i, "\xcc\x96", 2);
	for (int i = 0; i < N - 1; i++)
		memcpy(want + 2 + 2 * N + 2 * i, "\xcc\x81", 2);
	expect_nfc(in, 1 + 4 * N, want, 2 + 4 * N - 2);
	free(in);
	free(want);
}

/* Any bytes, valid UTF-8 or not, come back exactly when no NFC-changeable text is in
 * them: here ASCII, CJK, emoji pieces, and stray continuation/lead bytes. */
static void test_roundtrip_bytes(void **state)
{
	(void)state;
	static const char *const atoms[] = {"a",
					    "Z",
					    " ",
					    "  ",
					    "\n",
					    "\r\n",
					    "\t",
					    "'s",
					    "'LL",
					    "7",
					    "<|im_end|>",
					    "<think>",
					    "<|im_",
					    "\xe4\xb8\xad",
					    "\xf0\x9f\x98\x80",
					    "\xe2\x80\x8d",
					    "\x80",
					    "\xff",
					    "\xc3",
					    "\xe4\xb8",
					    "\xf0\x9f",
					    "\xed\xa0\x80",
					    "\xc0\xaf",
					    ".",
					    "!!",
					    "\xc2\xa0",
					    "\xe3\x80\x80",
					    "\xef\xbb\xbf",
					    "\xc2\x85",
					    "\x00",
					    "x\xf4\x90\x80\x80"};
	uint32_t x = 12345;
	int iters = sanitized ? 300 : 3000;
	char buf[512];
	for (int it = 0; it < iters; it++) {
		size_t len = 0;
		int k = 1 + it % 40;
		for (int i = 0; i < k; i++) {
			x ^= x << 13, x ^= x >> 17, x ^= x << 5;
			const char *a = atoms[x % (sizeof atoms / sizeof *atoms)];
			size_t al = *a ? strlen(a) : 1; /* "\x00" is one NUL byte */
			memcpy(buf + len, a, al);
			len += al;
		}
		size_t n, dl;
		int32_t *ids = tok_encode(T, buf, len, &n);
		assert_non_null(ids);
		char *dec = tok_decode(T, ids, n, false, &dl);
		assert_non_null(dec);
		assert_int_equal(dl, len);
		assert_memory_equal(dec, buf, len);
		free(dec);
		free(ids);
	}
}

/* Streaming decode of id sequences concatenates to the plain decode, and every chunk
 * handed out is whole UTF-8 when the plain decode is. */
static void stream_check(const int32_t *ids, size_t n, bool skip)
{
	size_t dl;
	char *plain = tok_decode(T, ids, n, skip, &dl);
	assert_non_null(plain);
	bool valid = utf8proc_decompose((const utf8proc_uint8_t *)plain, (utf8proc_ssize_t)dl, NULL,
					0, 0) >= 0;
	struct tok_stream *s = tok_stream_new(T, skip);
	assert_non_null(s);
	char *cat = malloc(dl + 16);
	size_t o = 0, len;
	for (size_t i = 0; i < n; i++) {
		const char *p = tok_stream_push(s, ids[i], &len);
		assert_non_null(p);
		assert_true(o + len <= dl);
		if (valid && len)
			assert_true(utf8proc_decompose((const utf8proc_uint8_t *)p,
						       (utf8proc_ssize_t)len, NULL, 0, 0) >= 0);
		memcpy(cat + o, p, len);
		o += len;
	}
	const char *p = tok_stream_flush(s, &len);
	assert_non_null(p);
	assert_true(o + len <= dl);
	memcpy(cat + o, p, len);
	o += len;
	assert_int_equal(o, dl);
	assert_memory_equal(cat, plain, dl);
	free(cat);
	free(plain);
	tok_stream_free(s);
}

static void test_stream(void **state)
{
	(void)state;
	struct texts c = {0};
	each_line("tokenizer-cases.jsonl", collect_text, &c);
	for (size_t i = 0; i < c.n; i++) {
		size_t n;
		int32_t *ids = tok_encode(T, c.s[i], c.len[i], &n);
		stream_check(ids, n, false);
		stream_check(ids, n, true);
		free(ids);
	}
	free_texts(&c);
	/* random ids, many of them byte tokens that split multibyte characters */
	uint32_t x = 777;
	int32_t ids[64];
	int vs = tok_vocab_size(T), iters = sanitized ? 200 : 2000;
	for (int it = 0; it < iters; it++) {
		size_t n = 1 + (size_t)it % 64;
		for (size_t i = 0; i < n; i++) {
			x ^= x << 13, x ^= x >> 17, x ^= x << 5;
			ids[i] = (x & 1) ? (int32_t)(x % 256) : (int32_t)((x >> 1) % (uint32_t)vs);
		}
		stream_check(ids, n, it & 1);
	}
	/* an out-of-range id is an error, and the stream goes on */
	struct tok_stream *s = tok_stream_new(T, false);
	size_t len;
	assert_null(tok_stream_push(s, vs, &len));
	assert_null(tok_stream_push(s, -1, &len));
	assert_non_null(tok_stream_push(s, 9707, &len));
	assert_int_equal(len, 5);
	tok_stream_free(s);
}

static void test_lookups(void **state)
{
	(void)state;
	assert_int_equal(tok_vocab_size(T), 151669);
	assert_int_equal(tok_id(T, "<|im_end|>"), 151645);
	assert_int_equal(tok_id(T, "<think>"), 151667);
	assert_int_equal(tok_id(T, "Hello"), 9707);
	assert_int_equal(tok_id(T, "\xc4\xa0world"), 1879); /* "Ġworld" */
	assert_int_equal(tok_id(T, "no such token here"), -1);
	assert_true(tok_is_special(T, 151645));
	assert_false(tok_is_special(T, 151667));
	assert_true(tok_is_added(T, 151667));
	assert_false(tok_is_added(T, 9707));
	assert_false(tok_is_special(T, -1));
	assert_false(tok_is_added(T, 151669));
	assert_string_equal(tok_eos_token(T), "<|im_end|>");
	assert_string_equal(tok_pad_token(T), "<|endoftext|>");
	assert_non_null(tok_chat_template(T));
	assert_non_null(strstr(tok_chat_template(T), "<|im_start|>"));
	size_t len;
	const char *p = tok_piece(T, 1879, &len);
	assert_int_equal(len, 6);
	assert_memory_equal(p, " world", 6);
	assert_null(tok_piece(T, 151669, &len));
	int32_t ids[] = {151644, 9707, 151667, 151645};
	char *d = tok_decode(T, ids, 4, true, &len);
	assert_string_equal(d, "Hello<think>");
	free(d);
	d = tok_decode(T, ids, 4, false, &len);
	assert_string_equal(d, "<|im_start|>Hello<think><|im_end|>");
	free(d);
	int32_t bad[] = {9707, 151669};
	assert_null(tok_decode(T, bad, 2, false, &len));
	assert_non_null(strstr(err_msg(), "151669"));
	size_t n;
	int32_t *e = tok_encode(T, "", 0, &n);
	assert_non_null(e);
	assert_int_equal(n, 0);
	free(e);
}

static int setup(void **state)
{
	(void)state;
	sanitized = getenv("QWENCHAT_SANITIZED") && !strcmp(getenv("QWENCHAT_SANITIZED"), "1");
	T = tok_load(tokdir);
	if (!T) {
		fprintf(stderr, "%s\n", err_msg());
		return -1;
	}
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	tok_free(T);
	return 0;
}

int main(void)
{
	tu_tokenizer_dir(tokdir, sizeof tokdir);
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_golden_cases),
		cmocka_unit_test(test_golden_extra_added),
		cmocka_unit_test(test_golden_literal),
		cmocka_unit_test(test_mixed_1mb),
		cmocka_unit_test(test_roundtrip_golden),
		cmocka_unit_test(test_roundtrip_bytes),
		cmocka_unit_test(test_nfc_hangul_and_marks),
		cmocka_unit_test(test_stream),
		cmocka_unit_test(test_lookups),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
