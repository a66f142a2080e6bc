/* test_dataset.c — the training stream: files concatenated in order (text with its
 * end-of-text, *.u32 as they are), text that is not UTF-8 refused with its offset,
 * the cache written 0600, used again while the files are the same, remade when one
 * changes, and read alone for a resumed run; conversation streams (--sft): cut after
 * the last answer that fits a row, left out when none does, cached with their flags
 * for one --ctx, a damaged flags file refused. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "src/base/err.h"
#include "src/base/fileio.h"
#include "src/train/dataset.h"
#include "tests/unit/tinytok.h"
#include "tokenizer/tokenizer.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char dir[256];
static char *paths[128]; /* path()'s results, freed at the end */
static int n_paths;

static int setup(void **state)
{
	(void)state;
	snprintf(dir, sizeof dir, "/tmp/qwenchat-dataset.XXXXXX");
	return mkdtemp(dir) ? 0 : -1;
}

static int teardown(void **state)
{
	(void)state;
	for (int i = 0; i < n_paths; i++)
		free(paths[i]);
	char cmd[512];
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
	return system(cmd);
}

/* dir/name, kept until the end of the test program */
static char *path(const char *name)
{
	char *p = fio_join(dir, name);
	assert_non_null(p);
	assert_true(n_paths < 128);
	return paths[n_paths++] = p;
}

static void put(const char *name, const void *data, size_t n)
{
	assert_int_equal(fio_write_atomic(path(name), data, n, 0600, 0), 0);
}

static void test_stream_and_cache(void **state)
{
	(void)state;
	struct tok *tk = tt_tokenizer(false, NULL);
	assert_non_null(tk);
	put("a.txt", "ab", 2);
	const unsigned char ids[] = {7, 0, 0, 0, 3, 1, 0, 0}; /* 7, 259 */
	put("b.u32", ids, sizeof ids);
	char *files[] = {path("a.txt"), path("b.u32")};
	struct dset d;
	assert_int_equal(dset_load(&d, files, 2, tk, "sha256:x", TT_VOCAB, path("data"), NULL), 0);
	assert_false(d.cached);
	int32_t want[] = {TT_AB, TT_EOT, 7, 259};
	assert_int_equal(d.len, 4);
	assert_memory_equal(d.ids, want, sizeof want);
	dset_free(&d);
	struct stat st;
	assert_int_equal(stat(path("data.u32"), &st), 0);
	assert_int_equal(st.st_mode & 0777, 0600);
	assert_int_equal(st.st_size, 16);

	/* the same files: from the cache */
	assert_int_equal(dset_load(&d, files, 2, tk, "sha256:x", TT_VOCAB, path("data"), NULL), 0);
	assert_true(d.cached);
	assert_memory_equal(d.ids, want, sizeof want);
	dset_free(&d);
	/* another tokenizer, or another order: encoded again */
	assert_int_equal(dset_load(&d, files, 2, tk, "sha256:y", TT_VOCAB, path("data"), NULL), 0);
	assert_false(d.cached);
	dset_free(&d);
	char *swapped[] = {path("b.u32"), path("a.txt")};
	assert_int_equal(dset_load(&d, swapped, 2, tk, "sha256:y", TT_VOCAB, path("data"), NULL),
			 0);
	assert_false(d.cached);
	assert_int_equal(d.ids[0], 7);
	dset_free(&d);
	/* a file changed: encoded again */
	assert_int_equal(dset_load(&d, files, 2, tk, "sha256:y", TT_VOCAB, path("data"), NULL), 0);
	dset_free(&d);
	put("a.txt", "abab", 4);
	assert_int_equal(dset_load(&d, files, 2, tk, "sha256:y", TT_VOCAB, path("data"), NULL), 0);
	assert_false(d.cached);
	assert_int_equal(d.len, 5);
	dset_free(&d);
	/* the cache alone (a resumed run), its vocabulary checked */
	assert_int_equal(dset_load_cache(&d, TT_VOCAB, 0, path("data"), NULL), 0);
	assert_int_equal(d.len, 5);
	dset_free(&d);
	assert_int_equal(dset_load_cache(&d, 100, 0, path("data"), NULL), -1);
	tok_free(tk);
}

/* The whole text of file `name` (malloc'd). */
static char *slurp(const char *name)
{
	size_t n;
	char *t = fio_read_all(path(name), 1 << 20, &n);
	assert_non_null(t);
	return t;
}

static void test_cache_keys_and_want(void **state)
{
	(void)state;
	struct tok *tk = tt_tokenizer(false, NULL);
	put("k.txt", "ab", 2);
	char *files[] = {path("k.txt")};
	struct dset d;
	assert_int_equal(dset_load(&d, files, 1, tk, "h", TT_VOCAB, path("k"), NULL), 0);
	size_t len = d.len;
	char sum[72];
	memcpy(sum, d.sha256, sizeof sum);
	assert_memory_equal(sum, "sha256:", 7);
	dset_free(&d);
	/* the same size, the modification time put back: another file all the same */
	struct stat st;
	assert_int_equal(stat(path("k.txt"), &st), 0);
	put("k.txt", "ba", 2);
	struct timespec times[2] = {st.st_atim, st.st_mtim};
	assert_int_equal(utimensat(AT_FDCWD, path("k.txt"), times, 0), 0);
	assert_int_equal(dset_load(&d, files, 1, tk, "h", TT_VOCAB, path("k"), NULL), 0);
	assert_false(d.cached);
	assert_int_not_equal(d.len, len);
	dset_free(&d);

	/* a resumed run's stream: files that make another one are refused, the cache kept */
	char *json = slurp("k.json");
	struct dset_want trained = {(int64_t)len, sum};
	put("k.txt", "bb", 2);
	assert_int_equal(dset_load(&d, files, 1, tk, "h", TT_VOCAB, path("k"), &trained), -1);
	assert_non_null(strstr(err_msg(), "the run trained on"));
	char *after = slurp("k.json");
	assert_string_equal(after, json);
	free(after);
	assert_int_equal(dset_load_cache(&d, TT_VOCAB, 0, path("k"), &trained), -1);
	/* the same length, other ids */
	put("k.txt", "ab", 2);
	assert_int_equal(dset_load(&d, files, 1, tk, "h", TT_VOCAB, path("k"), &trained), 0);
	dset_free(&d);
	struct dset_want same_len = {(int64_t)len, "sha256:00"};
	assert_int_equal(dset_load(&d, files, 1, tk, "h", TT_VOCAB, path("k"), &same_len), -1);
	assert_non_null(strstr(err_msg(), "not those the run trained on"));
	/* a state written before the checksum was kept: the length alone */
	struct dset_want no_sum = {(int64_t)len, ""};
	assert_int_equal(dset_load(&d, files, 1, tk, "h", TT_VOCAB, path("k"), &no_sum), 0);
	assert_string_equal(d.sha256, sum);
	dset_free(&d);
	free(json);
	tok_free(tk);
}

static void test_refused(void **state)
{
	(void)state;
	struct tok *tk = tt_tokenizer(false, NULL);
	struct dset d;
	/* not UTF-8: the offset of the first bad byte */
	put("bad.txt", "abc\xff\xfe", 5);
	char *bad[] = {path("bad.txt")};
	assert_int_equal(dset_load(&d, bad, 1, tk, "h", TT_VOCAB, path("c1"), NULL), -1);
	assert_non_null(strstr(err_msg(), "bad.txt"));
	assert_non_null(strstr(err_msg(), "byte 3"));
	/* a sequence cut at the end of the file */
	put("cut.txt", "abc\xe2\x82", 5);
	char *cut[] = {path("cut.txt")};
	assert_int_equal(dset_load(&d, cut, 1, tk, "h", TT_VOCAB, path("c1"), NULL), -1);
	assert_non_null(strstr(err_msg(), "byte 3"));
	/* valid multi-byte text across the reader's 1 MiB chunks is fine */
	size_t n = (1 << 20) + 7;
	char *big = malloc(n);
	for (size_t i = 0; i + 3 <= n; i += 3)
		memcpy(big + i, "\xe2\x82\xac", 3); /* the euro sign */
	n = n / 3 * 3;
	put("big.txt", big, n);
	free(big);
	char *bigf[] = {path("big.txt")};
	assert_int_equal(dset_load(&d, bigf, 1, tk, "h", TT_VOCAB, path("c2"), NULL), 0);
	dset_free(&d);
	/* text without a tokenizer; an id past the vocabulary; a missing file */
	char *txt[] = {path("big.txt")};
	assert_int_equal(dset_load(&d, txt, 1, NULL, "h", TT_VOCAB, path("c3"), NULL), -1);
	assert_non_null(strstr(err_msg(), "no tokenizer"));
	const unsigned char hi[] = {0, 2, 0, 0}; /* 512 */
	put("hi.u32", hi, 4);
	char *hif[] = {path("hi.u32")};
	assert_int_equal(dset_load(&d, hif, 1, NULL, "h", TT_VOCAB, path("c3"), NULL), -1);
	assert_non_null(strstr(err_msg(), "hi.u32"));
	char *missing[] = {path("missing.txt")};
	assert_int_equal(dset_load(&d, missing, 1, tk, "h", TT_VOCAB, path("c3"), NULL), -1);
	assert_non_null(strstr(err_msg(), "missing.txt"));
	tok_free(tk);
}

/* A conversation reader that makes conversations from a file's bytes: each line is one,
 * a letter a token id (its code - 'a' + 1), upper case scored; a line "-" a conversation
 * without an answer. Counts its calls. */
static int reads;

static int fake_reader(void *user, const char *path, struct dset_convs *out)
{
	(void)user;
	reads++;
	size_t len;
	char *text = fio_read_all(path, 1 << 20, &len);
	if (!text)
		return -1;
	int rc = 0;
	for (char *line = strtok(text, "\n"); !rc && line; line = strtok(NULL, "\n")) {
		if (!strcmp(line, "-")) {
			out->no_answer++;
			continue;
		}
		size_t n = strlen(line);
		int32_t ids[64];
		unsigned char scored[64];
		for (size_t i = 0; i < n && i < 64; i++) {
			bool up = line[i] >= 'A' && line[i] <= 'Z';
			ids[i] = (up ? line[i] - 'A' : line[i] - 'a') + 1;
			scored[i] = up;
		}
		rc = dset_convs_add(out, ids, scored, n < 64 ? n : 64);
	}
	free(text);
	return rc;
}

static void test_conversations(void **state)
{
	(void)state;
	/* T = 4: a conversation takes at most 5 tokens */
	put("c.txt", "abCD\n"      /* fits */
		     "aBcDDeFF\n"  /* answers end at 2, 5 and 8: cut after 5 */
		     "abcdeFG\n"   /* the first answer ends at 7: left out */
		     "-\n"
		     "aBcc\n",     /* trailing context dropped: 2 tokens */
	    5 + 9 + 8 + 2 + 5);
	char *files[] = {path("c.txt")};
	struct dset d;
	reads = 0;
	assert_int_equal(
		dset_load_sft(&d, files, 1, fake_reader, NULL, "h", 30, 4, path("sft"), NULL), 0);
	assert_int_equal(reads, 1);
	assert_false(d.cached);
	assert_int_equal(d.sft.conversations, 3);
	assert_int_equal(d.sft.cut, 1);
	assert_int_equal(d.sft.left_out, 1);
	assert_int_equal(d.sft.no_answer, 1);
	assert_int_equal(d.sft.scored, 2 + 3 + 1);
	assert_int_equal(d.len, 4 + 5 + 2);
	const size_t seq[] = {0, 4, 9, 11};
	assert_memory_equal(d.seq, seq, sizeof seq);
	const int32_t ids[] = {1, 2, 3, 4, 1, 2, 3, 4, 4, 1, 2};
	assert_memory_equal(d.ids, ids, sizeof ids);
	const uint8_t S = DSET_SCORED, F = DSET_START;
	const uint8_t flags[] = {F, 0, S, S, F, S, 0, S, S, F, S};
	assert_memory_equal(d.flags, flags, sizeof flags);
	dset_free(&d);
	/* the cache: used for the same ctx, remade for another; a plain stream's is not one */
	assert_int_equal(
		dset_load_sft(&d, files, 1, fake_reader, NULL, "h", 30, 4, path("sft"), NULL), 0);
	assert_true(d.cached);
	assert_int_equal(reads, 1);
	assert_int_equal(d.sft.cut, 1);
	assert_int_equal(d.sft.no_answer, 1);
	assert_memory_equal(d.flags, flags, sizeof flags);
	dset_free(&d);
	assert_int_equal(dset_load_cache(&d, 30, 4, path("sft"), NULL), 0);
	assert_int_equal(d.sft.conversations, 3);
	dset_free(&d);
	assert_int_equal(dset_load_cache(&d, 30, 0, path("sft"), NULL), -1);
	assert_int_equal(dset_load_cache(&d, 30, 8, path("sft"), NULL), -1);
	assert_int_equal(
		dset_load_sft(&d, files, 1, fake_reader, NULL, "h", 30, 8, path("sft"), NULL), 0);
	assert_false(d.cached);
	assert_int_equal(d.sft.cut + d.sft.left_out, 0);
	dset_free(&d);
	/* a damaged flags file: an unknown bit, a conversation without a target, a length
	 * that is not the stream's */
	assert_int_equal(
		dset_load_sft(&d, files, 1, fake_reader, NULL, "h", 30, 4, path("sft"), NULL), 0);
	dset_free(&d);
	uint8_t bad[11];
	memcpy(bad, flags, sizeof bad);
	bad[3] |= 8;
	put("sft.sft", bad, sizeof bad);
	assert_int_equal(dset_load_cache(&d, 30, 4, path("sft"), NULL), -1);
	assert_non_null(strstr(err_msg(), "token 3: unknown flags"));
	memcpy(bad, flags, sizeof bad);
	bad[2] = bad[3] = 0;
	put("sft.sft", bad, sizeof bad);
	assert_int_equal(dset_load_cache(&d, 30, 4, path("sft"), NULL), -1);
	assert_non_null(strstr(err_msg(), "conversation 1: 4 tokens with 0 targets"));
	put("sft.sft", flags, 10);
	assert_int_equal(dset_load_cache(&d, 30, 4, path("sft"), NULL), -1);
	assert_non_null(strstr(err_msg(), "10 flags for 11 tokens"));
	/* an id past the vocabulary */
	assert_int_equal(
		dset_load_sft(&d, files, 1, fake_reader, NULL, "h2", 4, 4, path("sft"), NULL), -1);
	assert_non_null(strstr(err_msg(), "not below the model's vocab_size 4"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_stream_and_cache),
		cmocka_unit_test(test_cache_keys_and_want),
		cmocka_unit_test(test_refused),
		cmocka_unit_test(test_conversations),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
