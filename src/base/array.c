/* array.c — capacity doubling with overflow checks. */
#include "src/base/array.h"
#include "src/base/err.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int arr_reserve(void *ptr, size_t *cap, size_t need, size_t elem)
{
	if (need <= *cap)
		return 0;
	size_t n = *cap ? *cap : 16;
	while (n < need) {
		if (n > SIZE_MAX / 2)
			return err_set("out of memory (an array of %zu elements)", need);
		n *= 2;
	}
	if (elem && n > SIZE_MAX / elem)
		return err_set("out of memory (an array of %zu elements)", need);
	void *old; /* ptr is a T **: copy the pointer rather than alias it as void ** */
	memcpy(&old, ptr, sizeof old);
	void *grown = realloc(old, n * elem);
	if (!grown)
		return err_set("out of memory (an array of %zu elements)", need);
	memcpy(ptr, &grown, sizeof grown);
	*cap = n;
	return 0;
}
