/* test_safetensors.c — safetensors header parsing and validation on in-memory files. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "engine/safetensors.h"
#include "src/base/err.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* A file: 8-byte little-endian length, the header (padded with spaces to a
 * multiple of 8 unless pad is false), then data_len bytes 0, 1, 2, ... */
static uint8_t *make(const char *header, size_t data_len, bool pad, size_t *size)
{
	size_t n = strlen(header), hn = pad ? (n + 7) / 8 * 8 : n;
	uint8_t *b = malloc(8 + hn + data_len + 1);
	assert_non_null(b);
	for (int i = 0; i < 8; i++)
		b[i] = (uint8_t)((uint64_t)hn >> (8 * i));
	memcpy(b + 8, header, n);
	memset(b + 8 + n, ' ', hn - n);
	for (size_t i = 0; i < data_len; i++)
		b[8 + hn + i] = (uint8_t)i;
	*size = 8 + hn + data_len;
	return b;
}

/* Parsing fails and the message names the file and contains `what`. */
static void refused(const char *header, size_t data_len, bool pad, const char *what)
{
	size_t size;
	uint8_t *b = make(header, data_len, pad, &size);
	struct st_file *f = st_parse(b, size, "w.safetensors");
	if (f)
		fail_msg("accepted: %s", header);
	const char *msg = err_msg();
	if (!strstr(msg, "w.safetensors") || !strstr(msg, what))
		fail_msg("message '%s' should name w.safetensors and '%s'", msg, what);
	free(b);
}

static void test_valid(void **state)
{
	(void)state;
	size_t size;
	uint8_t *b = make("{\"__metadata__\":{\"format\":\"pt\"},"
			  "\"b\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[12,20]},"
			  "\"a\":{\"dtype\":\"BF16\",\"shape\":[2,3],\"data_offsets\":[0,12]},"
			  "\"c\":{\"dtype\":\"F16\",\"shape\":[0,5],\"data_offsets\":[20,20]},"
			  "\"s\":{\"dtype\":\"F16\",\"shape\":[],\"data_offsets\":[20,22]}}",
			  22, true, &size);
	struct st_file *f = st_parse(b, size, "ok.safetensors");
	assert_non_null(f);
	assert_int_equal(f->ntensors, 4);
	const struct st_tensor *a = st_find(f, "a"), *bt = st_find(f, "b");
	assert_non_null(a);
	assert_non_null(bt);
	assert_null(st_find(f, "__metadata__"));
	assert_null(st_find(f, "z"));
	assert_int_equal(a->dtype, ENG_BF16);
	assert_int_equal(a->ndim, 2);
	assert_int_equal(a->shape[0], 2);
	assert_int_equal(a->shape[1], 3);
	assert_int_equal(a->nbytes, 12);
	assert_ptr_equal(a->data, b + size - 22);
	assert_int_equal(bt->dtype, ENG_F32);
	assert_ptr_equal(bt->data, b + size - 10);
	assert_int_equal(((const uint8_t *)bt->data)[0], 12);
	assert_int_equal(st_find(f, "c")->nbytes, 0);
	assert_int_equal(st_find(f, "s")->ndim, 0);
	st_free(f);
	st_free(NULL);
	free(b);
}

static void test_truncated(void **state)
{
	(void)state;
	uint8_t b[8] = {16, 0, 0, 0, 0, 0, 0, 0};
	for (size_t n = 0; n < 8; n++) {
		assert_null(st_parse(b, n, "w.safetensors"));
		assert_non_null(strstr(err_msg(), "truncated"));
	}
	/* the header length says more than the file holds */
	assert_null(st_parse(b, 8, "w.safetensors"));
	assert_non_null(strstr(err_msg(), "beyond the end of the file"));
	uint8_t huge[16] = {0, 0, 0, 0, 0, 0, 0, 0x80, '{', '}'};
	assert_null(st_parse(huge, sizeof huge, "w.safetensors"));
	assert_non_null(strstr(err_msg(), "header length"));
	/* data cut short: the last tensor's offsets run past the end */
	refused("{\"a\":{\"dtype\":\"BF16\",\"shape\":[8],\"data_offsets\":[0,16]}}", 10, true,
		"beyond the end");
}

static void test_header_json(void **state)
{
	(void)state;
	refused("{\"a\":", 0, true, "invalid JSON");
	refused("[1,2,3]", 0, true, "not a JSON object");
	refused("{\"a\":1}", 0, true, "tensor a");
	refused("{\"a\":{\"dtype\":\"BF16\",\"shape\":[1],\"data_offsets\":[0,2]},"
		"\"a\":{\"dtype\":\"BF16\",\"shape\":[1],\"data_offsets\":[2,4]}}",
		4, true, "invalid JSON");
	refused("{\"__metadata__\":3}", 0, true, "__metadata__");
	refused("{\"\":{\"dtype\":\"BF16\",\"shape\":[1],\"data_offsets\":[0,2]}}", 2, true,
		"empty name");
	/* bytes after the JSON that are not padding */
	refused("{}xx", 0, false, "invalid JSON");
	size_t size;
	uint8_t *b = make("{}", 0, true, &size);
	b[9] = 0; /* NUL inside the header */
	assert_null(st_parse(b, size, "w.safetensors"));
	free(b);
}

static void test_dtype(void **state)
{
	(void)state;
	refused("{\"a\":{\"dtype\":\"Q9\",\"shape\":[1],\"data_offsets\":[0,2]}}", 2, true,
		"unknown dtype");
	refused("{\"a\":{\"dtype\":\"I64\",\"shape\":[1],\"data_offsets\":[0,8]}}", 8, true,
		"dtype I64 is not supported");
	refused("{\"a\":{\"dtype\":7,\"shape\":[1],\"data_offsets\":[0,2]}}", 2, true, "dtype");
	refused("{\"a\":{\"shape\":[1],\"data_offsets\":[0,2]}}", 2, true, "dtype");
}

static void test_shape(void **state)
{
	(void)state;
	refused("{\"a\":{\"dtype\":\"BF16\",\"shape\":[-1],\"data_offsets\":[0,2]}}", 2, true,
		"shape[0]");
	refused("{\"a\":{\"dtype\":\"BF16\",\"shape\":3,\"data_offsets\":[0,6]}}", 6, true,
		"shape");
	refused("{\"a\":{\"dtype\":\"BF16\",\"shape\":[1.5],\"data_offsets\":[0,2]}}", 2, true,
		"shape[0]");
	refused("{\"a\":{\"dtype\":\"BF16\",\"shape\":[1,1,1,1,1,1,1,1,1],"
		"\"data_offsets\":[0,2]}}",
		2, true, "dimensions");
	/* element counts that would overflow 64 bits */
	refused("{\"a\":{\"dtype\":\"F32\",\"shape\":[4611686018427387904,4],"
		"\"data_offsets\":[0,0]}}",
		0, true, "larger than the file");
	refused("{\"a\":{\"dtype\":\"F32\",\"shape\":[65536,65536,65536,65536],"
		"\"data_offsets\":[0,0]}}",
		0, true, "larger than the file");
	/* shape and offsets disagree */
	refused("{\"a\":{\"dtype\":\"BF16\",\"shape\":[3],\"data_offsets\":[0,4]}}", 4, true,
		"need 6");
}

static void test_offsets(void **state)
{
	(void)state;
	refused("{\"a\":{\"dtype\":\"BF16\",\"shape\":[2],\"data_offsets\":[0,4,8]}}", 4, true,
		"data_offsets");
	refused("{\"a\":{\"dtype\":\"BF16\",\"shape\":[2],\"data_offsets\":[-4,0]}}", 4, true,
		"data_offsets");
	refused("{\"a\":{\"dtype\":\"BF16\",\"shape\":[2],\"data_offsets\":[4,0]}}", 4, true,
		"end before");
	refused("{\"a\":{\"dtype\":\"BF16\",\"shape\":[2],\"data_offsets\":[100,104]}}", 4, true,
		"beyond the end");
	refused("{\"a\":{\"dtype\":\"BF16\",\"shape\":[2],"
		"\"data_offsets\":[18446744073709551612,18446744073709551616]}}",
		4, true, "invalid JSON"); /* jansson refuses integers beyond int64 */
	refused("{\"a\":{\"dtype\":\"BF16\",\"shape\":[2],"
		"\"data_offsets\":[9223372036854775800,9223372036854775804]}}",
		4, true, "beyond the end");
	refused("{\"a\":{\"dtype\":\"BF16\",\"shape\":[2],\"data_offsets\":[0,4]},"
		"\"b\":{\"dtype\":\"BF16\",\"shape\":[2],\"data_offsets\":[2,6]}}",
		6, true, "overlap");
	refused("{\"a\":{\"dtype\":\"BF16\",\"shape\":[2],\"data_offsets\":[0,4]},"
		"\"b\":{\"dtype\":\"BF16\",\"shape\":[2],\"data_offsets\":[0,4]}}",
		4, true, "overlap");
	refused("{\"a\":{\"dtype\":\"BF16\",\"shape\":[2],\"data_offsets\":[0,4]},"
		"\"b\":{\"dtype\":\"BF16\",\"shape\":[2],\"data_offsets\":[6,10]}}",
		10, true, "hole");
	refused("{\"a\":{\"dtype\":\"BF16\",\"shape\":[2],\"data_offsets\":[0,4]}}", 6, true,
		"after the last tensor");
	refused("{\"a\":{\"dtype\":\"BF16\",\"shape\":[1],\"data_offsets\":[0,2]}}", 2, false,
		"aligned");
	refused("{\"a\":{\"dtype\":\"F16\",\"shape\":[1],\"data_offsets\":[0,2]},"
		"\"b\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[2,6]}}",
		6, true, "aligned");
}

static void test_open(void **state)
{
	(void)state;
	assert_null(st_open("/nonexistent/x.safetensors", "x.safetensors"));
	assert_non_null(strstr(err_msg(), "x.safetensors"));
	assert_null(st_open("/", "root"));
	char path[] = "/tmp/qwenchat-st-XXXXXX";
	int fd = mkstemp(path);
	assert_true(fd >= 0);
	size_t size;
	uint8_t *b = make("{\"t\":{\"dtype\":\"BF16\",\"shape\":[2],\"data_offsets\":[0,4]}}", 4,
			  true, &size);
	assert_int_equal(write(fd, b, size), (ssize_t)size);
	close(fd);
	struct st_file *f = st_open(path, "t.safetensors");
	assert_non_null(f);
	const struct st_tensor *t = st_find(f, "t");
	assert_non_null(t);
	assert_memory_equal(t->data, b + size - 4, 4);
	st_free(f);
	assert_int_equal(truncate(path, 5), 0);
	assert_null(st_open(path, "t.safetensors"));
	assert_non_null(strstr(err_msg(), "t.safetensors: file is truncated"));
	unlink(path);
	free(b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_valid),       cmocka_unit_test(test_truncated),
		cmocka_unit_test(test_header_json), cmocka_unit_test(test_dtype),
		cmocka_unit_test(test_shape),       cmocka_unit_test(test_offsets),
		cmocka_unit_test(test_open),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
