/* nfc.c — NFC with Unicode 9.0's character repertoire (nfc.h). utf8proc normalizes
 * each run of characters Unicode 9.0 has; a character it lacks is copied as it is and
 * ends the run. That is NFC under 9.0's tables because such a character is, to them,
 * a starter (combining class 0) without a decomposition that composes with nothing:
 * canonical reordering stops at it and it blocks every composition across it; and
 * Unicode's stability policy keeps the classes, decompositions and compositions of
 * the characters 9.0 has as they were. */
#include "tokenizer/nfc.h"
#include "tokenizer/unicode9.h"
#include "src/base/err.h"
#include "src/base/strbuf.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <utf8proc.h>

static bool assigned9(int32_t c)
{
	size_t lo = 0, hi = sizeof unicode9_assigned / sizeof unicode9_assigned[0];
	while (lo < hi) { /* the number of entries <= c */
		size_t mid = lo + (hi - lo) / 2;
		if (unicode9_assigned[mid] <= (uint32_t)c)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo % 2 == 1;
}

/* Appends utf8proc's NFC of s[0..n) to b. */
static int nfc_run(struct strbuf *b, const char *s, size_t n)
{
	if (!n)
		return 0;
	utf8proc_uint8_t *dst;
	utf8proc_ssize_t m = utf8proc_map((const utf8proc_uint8_t *)s, (utf8proc_ssize_t)n, &dst,
					  UTF8PROC_STABLE | UTF8PROC_COMPOSE);
	if (m < 0)
		return err_set("tokenizer: NFC: %s", utf8proc_errmsg(m));
	sb_put(b, (const char *)dst, (size_t)m);
	free(dst);
	return 0;
}

char *tok_nfc(const char *s, size_t n, size_t *out_n)
{
	struct strbuf b = {0};
	size_t run = 0; /* start of the run of characters 9.0 has */
	for (size_t i = 0; i < n;) {
		utf8proc_int32_t c;
		utf8proc_ssize_t k = utf8proc_iterate((const utf8proc_uint8_t *)s + i,
						      (utf8proc_ssize_t)(n - i), &c);
		if (k < 0) {
			free(b.p);
			err_set("tokenizer: NFC: %s", utf8proc_errmsg(k));
			return NULL;
		}
		if (c >= 0x300 && !assigned9(c)) {
			if (nfc_run(&b, s + run, i - run)) {
				free(b.p);
				return NULL;
			}
			sb_put(&b, s + i, (size_t)k);
			run = i + (size_t)k;
		}
		i += (size_t)k;
	}
	if (nfc_run(&b, s + run, n - run) || b.oom) {
		if (b.oom)
			err_set("tokenizer: NFC: out of memory");
		free(b.p);
		return NULL;
	}
	sb_put(&b, "", 0);
	*out_n = b.n;
	if (!b.p && !(b.p = calloc(1, 1))) {
		err_set("tokenizer: NFC: out of memory");
		return NULL;
	}
	return b.p;
}
