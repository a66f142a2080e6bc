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

/* Canonical ordering of a run of non-starters x[0..m) with their combining classes
 * cc: a stable sort by class. utf8proc orders by swapping neighbours, as many steps as
 * the run has inversions: a run of 40k alternating marks took 14 s. */
static void order_marks(int32_t *x, uint8_t *cc, size_t m, int32_t *tx, uint8_t *tc)
{
	if (m <= 16) { /* insertion: the usual run is a mark or two */
		for (size_t i = 1; i < m; i++)
			for (size_t j = i; j > 0 && cc[j - 1] > cc[j]; j--) {
				int32_t t = x[j];
				uint8_t c = cc[j];
				x[j] = x[j - 1], cc[j] = cc[j - 1];
				x[j - 1] = t, cc[j - 1] = c;
			}
		return;
	}
	size_t start[257] = {0}; /* a counting sort, stable */
	for (size_t i = 0; i < m; i++)
		start[cc[i] + 1]++;
	for (int c = 1; c < 257; c++)
		start[c] += start[c - 1];
	for (size_t i = 0; i < m; i++) {
		size_t k = start[cc[i]]++;
		tx[k] = x[i], tc[k] = cc[i];
	}
	memcpy(x, tx, m * sizeof *x);
	memcpy(cc, tc, m);
}

/* s[0..n) decomposed canonically, character by character as utf8proc_map does
 * before it orders the marks: malloc'd code points (*m of them), NULL with err_set. */
static int32_t *decompose(const char *s, size_t n, size_t *m)
{
	size_t cap = n + 16, len = 0; /* most characters are one code point or fewer bytes */
	int32_t *x = malloc(cap * sizeof *x);
	bool oom = !x;
	for (size_t i = 0; !oom && i < n;) {
		if ((unsigned char)s[i] < 0x80 && len < cap) { /* itself */
			x[len++] = (unsigned char)s[i++];
			continue;
		}
		utf8proc_int32_t c, part[8];
		int bound = 0;
		utf8proc_ssize_t k = utf8proc_iterate((const utf8proc_uint8_t *)s + i,
						      (utf8proc_ssize_t)(n - i), &c);
		utf8proc_ssize_t d =
			k < 0 ? k
			      : utf8proc_decompose_char(c, part, 8,
							UTF8PROC_STABLE | UTF8PROC_COMPOSE, &bound);
		if (d < 0 || d > 8) {
			free(x);
			err_set("tokenizer: NFC: %s",
				d < 0 ? utf8proc_errmsg(d) : "too long a decomposition");
			return NULL;
		}
		if (len + (size_t)d >= cap) { /* utf8proc_reencode wants a spare one */
			int32_t *g = realloc(x, (cap *= 2) * sizeof *x);
			if (!g) {
				oom = true;
				break;
			}
			x = g;
		}
		memcpy(x + len, part, (size_t)d * sizeof *x);
		len += (size_t)d;
		i += (size_t)k;
	}
	if (oom) {
		free(x);
		err_set("tokenizer: NFC: out of memory");
		return NULL;
	}
	*m = len;
	return x;
}

/* Appends the NFC of s[0..n) to b: utf8proc's canonical decomposition, the marks
 * ordered here, then utf8proc's composition (utf8proc_map's steps, its ordering
 * aside). */
static int nfc_run(struct strbuf *b, const char *s, size_t n)
{
	size_t ascii = 0, m;
	while (ascii < n && (unsigned char)s[ascii] < 0x80)
		ascii++;
	if (ascii == n) { /* NFC leaves ASCII as it is */
		sb_put(b, s, n);
		return 0;
	}
	int32_t *x = decompose(s, n, &m), *tx = NULL;
	uint8_t *cc = x ? malloc(m + 1) : NULL, *tc = NULL;
	bool oom = x && !cc;
	for (size_t i = 0; cc && i < m; i++)
		cc[i] = x[i] < 0x300 ? 0 : (uint8_t)utf8proc_get_property(x[i])->combining_class;
	for (size_t i = 0, j; cc && i<m; i = j> i ? j : i + 1) { /* runs of non-starters */
		for (j = i; j < m && cc[j];)
			j++;
		if (j - i > 16 && !tx && (!(tx = malloc(m * sizeof *tx)) || !(tc = malloc(m)))) {
			oom = true;
			break;
		}
		if (j - i > 1)
			order_marks(x + i, cc + i, j - i, tx, tc);
	}
	free(cc);
	free(tx);
	free(tc);
	if (oom || !x) {
		free(x);
		return x ? err_set("tokenizer: NFC: out of memory") : -1;
	}
	/* composes, and writes the UTF-8 over x (4 bytes or fewer a character) */
	utf8proc_ssize_t len =
		utf8proc_reencode(x, (utf8proc_ssize_t)m, UTF8PROC_STABLE | UTF8PROC_COMPOSE);
	if (len >= 0)
		sb_put(b, (const char *)x, (size_t)len);
	free(x);
	return len < 0 ? err_set("tokenizer: NFC: %s", utf8proc_errmsg(len)) : 0;
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
		/* U+11A7 too: utf8proc 2.8 composes a syllable LV with it as if it were a
		   final consonant, and the character is lost (Unicode's finals begin at
		   U+11A8); a starter that composes with nothing, it ends the run as well */
		if (c >= 0x300 && (!assigned9(c) || c == 0x11A7)) {
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
