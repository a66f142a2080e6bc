/* test_hugemem.c — huge_zalloc's arrays: zeroed, 2 MB aligned, writable to their last
 * byte, freed; nothing for 0 bytes or a size that cannot be mapped. huge_reserve's
 * spans: 2 MB aligned, and a file mapped over one reads back (the weights' mapping). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "src/base/hugemem.h"

static void test_sizes(void **state)
{
	(void)state;
	const size_t sizes[] = {1, 4095, 4096, (2u << 20) - 1, (2u << 20) + 1, 5u << 20};
	for (size_t i = 0; i < sizeof sizes / sizeof *sizes; i++) {
		size_t n = sizes[i];
		unsigned char *p = huge_zalloc(n);
		assert_non_null(p);
		assert_int_equal((uintptr_t)p % (2u << 20), 0);
		for (size_t k = 0; k < n; k += 997) /* zero where it was never written */
			assert_int_equal(p[k], 0);
		assert_int_equal(p[n - 1], 0);
		memset(p, 0xa5, n); /* every byte writable */
		assert_int_equal(p[n - 1], 0xa5);
		huge_free(p, n);
	}
}

static void test_reserve_file(void **state)
{
	(void)state;
	char path[] = "/tmp/test_hugemem.XXXXXX";
	int fd = mkstemp(path);
	assert_true(fd >= 0);
	unlink(path);
	size_t n = (3u << 20) + 17; /* not a whole number of pages */
	unsigned char *data = malloc(n);
	assert_non_null(data);
	for (size_t i = 0; i < n; i++)
		data[i] = (unsigned char)(i * 31 + 7);
	assert_int_equal(write(fd, data, n), (ssize_t)n);
	unsigned char *at = huge_reserve(n, PROT_NONE);
	assert_non_null(at);
	assert_int_equal((uintptr_t)at % (2u << 20), 0);
	void *map = mmap(at, n, PROT_READ, MAP_PRIVATE | MAP_FIXED, fd, 0);
	assert_ptr_equal(map, at);
	assert_memory_equal(at, data, n);
	huge_free(at, n);
	close(fd);
	free(data);
	assert_null(huge_reserve(0, PROT_NONE));
	assert_null(huge_reserve(SIZE_MAX, PROT_NONE));
}

static void test_refusals(void **state)
{
	(void)state;
	assert_null(huge_zalloc(0));
	assert_null(huge_zalloc(SIZE_MAX));
	assert_null(huge_zalloc(SIZE_MAX - (1u << 20)));
	huge_free(NULL, 123); /* nothing to free */
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_sizes),
		cmocka_unit_test(test_reserve_file),
		cmocka_unit_test(test_refusals),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
