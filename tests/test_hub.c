/* test_hub.c — unit tests of the hub's pieces that need no server: SHA-256 and
 * SHA-1 against the FIPS 180 example vectors (SHA-256 with and without the CPU's SHA
 * instructions) and git's blob ids, repo id parsing,
 * and the cache paths huggingface_hub uses. */
#include "src/err.h"
#include "src/hfcache.h"
#include "src/sha.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

/* accel: 1 keeps what sha256_init chose (the SHA instructions where the CPU has
 * them), 0 forces the plain C compression. */
static int accel = 1;

static void sha256_of(const char *s, size_t n, size_t chunk, char out[65])
{
	struct sha256 h;
	sha256_init(&h);
	if (!accel)
		h.accel = 0;
	for (size_t i = 0; i < n; i += chunk)
		sha256_update(&h, s + i, n - i < chunk ? n - i : chunk);
	sha256_hex(&h, out);
}

/* FIPS 180-2 appendix B examples and the empty string. */
static void test_sha256(void **state)
{
	(void)state;
	char out[65];
	const char *two = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
	sha256_of("abc", 3, 3, out);
	assert_string_equal(out, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
	sha256_of("", 0, 1, out);
	assert_string_equal(out, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
	for (size_t chunk = 1; chunk <= 64; chunk += 7) {
		sha256_of(two, strlen(two), chunk, out);
		assert_string_equal(out,
			"248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
	}
	char *million = malloc(1000000);
	assert_non_null(million);
	memset(million, 'a', 1000000);
	sha256_of(million, 1000000, 4096, out);
	assert_string_equal(out, "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
	free(million);
}

static void test_sha256_plain(void **state)
{
	accel = 0;
	test_sha256(state);
	accel = 1;
}

/* Both compressions agree on every length around the block and padding edges. */
static void test_sha256_paths_agree(void **state)
{
	(void)state;
	char buf[300], a[65], b[65];
	uint32_t x = 12345;
	for (size_t i = 0; i < sizeof buf; i++) {
		x = x * 1103515245u + 12345u;
		buf[i] = (char)(x >> 16);
	}
	for (size_t n = 0; n <= sizeof buf; n++) {
		accel = 1;
		sha256_of(buf, n, 13, a);
		accel = 0;
		sha256_of(buf, n, 64, b);
		assert_string_equal(a, b);
	}
	accel = 1;
}

static void test_sha1(void **state)
{
	(void)state;
	char out[41];
	struct sha1 h;
	sha1_init(&h);
	sha1_update(&h, "abc", 3);
	sha1_hex(&h, out);
	assert_string_equal(out, "a9993e364706816aba3e25717850c26c9cd0d89d");
	/* `printf 'hello\n' | git hash-object --stdin` */
	sha1_init(&h);
	sha1_update(&h, "blob 6\0hello\n", 13);
	sha1_hex(&h, out);
	assert_string_equal(out, "ce013625030ba8dba906f756967f9e9ca394464a");
}

static void test_parse_spec(void **state)
{
	(void)state;
	char *id, *rev;
	assert_int_equal(hfc_parse_spec("Qwen/Qwen3-0.6B", &id, &rev), 1);
	assert_string_equal(id, "Qwen/Qwen3-0.6B");
	assert_string_equal(rev, "main");
	free(id);
	free(rev);
	assert_int_equal(hfc_parse_spec("Qwen/Qwen3-0.6B@refs/pr/1", &id, &rev), 1);
	assert_string_equal(rev, "refs/pr/1");
	free(id);
	free(rev);
	/* Paths are not repo ids. */
	assert_int_equal(hfc_parse_spec("./models/x", &id, &rev), 0);
	assert_int_equal(hfc_parse_spec("/abs/dir", &id, &rev), 0);
	assert_int_equal(hfc_parse_spec("a/b/c", &id, &rev), 0);
	assert_int_equal(hfc_parse_spec("plain", &id, &rev), 0);
	/* Malformed names and revisions are refused before any path is built. */
	assert_int_equal(hfc_parse_spec("Org/bad--name", &id, &rev), -1);
	assert_int_equal(hfc_parse_spec("Org/..", &id, &rev), -1);
	assert_int_equal(hfc_parse_spec("Org/na me", &id, &rev), -1);
	assert_int_equal(hfc_parse_spec("Org/Name@../../etc", &id, &rev), -1);
	assert_int_equal(hfc_parse_spec("Org/Name@", &id, &rev), -1);
}

static void test_paths(void **state)
{
	(void)state;
	char *d = hfc_repo_dir("/c", "Qwen/Qwen3-0.6B");
	assert_string_equal(d, "/c/models--Qwen--Qwen3-0.6B");
	char *s = hfc_snapshot(d, "0123456789abcdef0123456789abcdef01234567");
	assert_string_equal(s, "/c/models--Qwen--Qwen3-0.6B/snapshots/"
			    "0123456789abcdef0123456789abcdef01234567");
	char *c = hfc_read_ref(d, "0123456789abcdef0123456789abcdef01234567");
	assert_string_equal(c, "0123456789abcdef0123456789abcdef01234567");
	assert_null(hfc_read_ref("/nonexistent-dir", "main"));
	free(c);
	free(s);
	free(d);
	assert_true(hfc_valid_file("model-00001-of-00002.safetensors"));
	assert_false(hfc_valid_file("../x.safetensors"));
	assert_false(hfc_valid_file("/etc/passwd"));
	assert_false(hfc_valid_file(".hidden"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_sha256),
		cmocka_unit_test(test_sha256_plain),
		cmocka_unit_test(test_sha256_paths_agree),
		cmocka_unit_test(test_sha1),
		cmocka_unit_test(test_parse_spec),
		cmocka_unit_test(test_paths),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
