/* test_hub.c — unit tests of the hub's pieces that need no server: repo id parsing
 * and the cache paths huggingface_hub uses. (Hash checks of downloads: tests/cli/hub.sh.) */
#include "src/base/err.h"
#include "src/hub/download.h"
#include "src/hub/ggufname.h"
#include "src/hub/hfcache.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

/* pick TAG NAMES... -> the first picked name, or NULL (none or ambiguous) */
static const char *pick(const char *tag, char *const *names, size_t n, int *count)
{
	const char **out = NULL;
	*count = ggufname_pick(names, n, tag, &out);
	const char *first = *count > 0 ? out[0] : NULL;
	free(out);
	return first;
}

/* REPO:TAG among a repository's files: the tag that ends a name wins, the shortest
 * such name (the plain quantization over Unsloth's UD- one); a tag found only inside
 * several names, or two names of the same length, is ambiguous. */
static void test_gguf_tags(void **state)
{
	(void)state;
	char *repo[] = {"Qwen3-8B-Q4_K.gguf",      "Qwen3-8B-Q4_K_M.gguf",     "Qwen3-8B-Q8_0.gguf",
			"Qwen3-8B-UD-Q4_K_M.gguf", "Qwen3-8B-UD-Q4_K_XL.gguf", "mmproj-Q8_0.gguf",
			"sub/Qwen3-8B-Q4_K_M.gguf"};
	size_t n = sizeof repo / sizeof *repo;
	int count;
	assert_string_equal(pick("Q4_K_M", repo, n, &count), "Qwen3-8B-Q4_K_M.gguf");
	assert_string_equal(pick("q4_k", repo, n, &count), "Qwen3-8B-Q4_K.gguf");
	assert_string_equal(pick("UD-Q4_K_M", repo, n, &count), "Qwen3-8B-UD-Q4_K_M.gguf");
	assert_string_equal(pick("Q4_K_XL", repo, n, &count), "Qwen3-8B-UD-Q4_K_XL.gguf");
	assert_string_equal(pick("Q8_0", repo, n, &count), "Qwen3-8B-Q8_0.gguf");
	assert_null(pick("8B", repo, n, &count)); /* inside five names */
	assert_int_equal(count, -1);
	assert_non_null(strstr(err_msg(), "the tag 8B names more than one .gguf file"));
	assert_non_null(strstr(err_msg(), "Qwen3-8B-UD-Q4_K_XL.gguf"));
	assert_null(pick("Q5_K_M", repo, n, &count));
	assert_int_equal(count, -1);
	assert_non_null(strstr(err_msg(), "no .gguf file for tag Q5_K_M"));
	/* a tag inside one name only, and model.Q8_0.gguf's dot */
	char *one[] = {"Qwen3-8B-Q4_K_M-imat.gguf", "model.Q8_0.gguf"};
	assert_string_equal(pick("Q4_K_M", one, 2, &count), "Qwen3-8B-Q4_K_M-imat.gguf");
	assert_string_equal(pick("Q8_0", one, 2, &count), "model.Q8_0.gguf");
	/* a split set counts once; its parts in order */
	char *split[] = {"BF16/Qwen3-8B-BF16-00001-of-00002.gguf",
			 "BF16/Qwen3-8B-BF16-00002-of-00002.gguf", "Qwen3-8B-Q8_0.gguf"};
	assert_string_equal(pick("BF16", split, 3, &count), split[0]);
	assert_int_equal(count, 2);
	/* two names of the same length ending with the tag */
	char *twin[] = {"a-Q8_0.gguf", "b-Q8_0.gguf"};
	assert_null(pick("Q8_0", twin, 2, &count));
	assert_int_equal(count, -1);
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

/* Retry-After: delta-seconds or an HTTP-date (RFC 9110 10.2.3), capped; anything else
 * is no value (-1), and the caller falls back to its own backoff. */
static void test_retry_after(void **state)
{
	(void)state;
	time_t now = 784111777; /* Sun, 06 Nov 1994 08:49:37 GMT */
	static const struct {
		const char *v;
		double want;
	} cases[] = {
		{"0", 0},
		{"7", 7},
		{"  12  ", 12},
		{"300", 300},
		{"301", DL_MAX_RETRY_AFTER},
		{"99999999999999999999999", -1}, /* overflows */
		{"Sun, 06 Nov 1994 08:49:47 GMT", 10},
		{"Sunday, 06-Nov-94 08:50:37 GMT", 60},
		{"Sun Nov  6 08:49:57 1994", 20},
		{"Sun, 06 Nov 1994 08:00:00 GMT", 0},   /* in the past */
		{"Mon, 07 Nov 1994 08:49:37 GMT", 300}, /* a day: capped */
		{"", -1},
		{"   ", -1},
		{"-5", -1},
		{"1.5", -1},
		{"12 seconds", -1},
		{"soon", -1},
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		double got = dl_parse_retry_after(cases[i].v, now);
		if (got != cases[i].want)
			fail_msg("Retry-After '%s': %g, want %g", cases[i].v, got, cases[i].want);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse_spec),
		cmocka_unit_test(test_gguf_tags),
		cmocka_unit_test(test_paths),
		cmocka_unit_test(test_retry_after),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
