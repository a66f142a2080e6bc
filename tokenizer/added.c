/* added.c — splitting text on added tokens (see added.h). */
#include "tokenizer/added.h"

#include <stdlib.h>
#include <string.h>
#include <utf8proc.h>

#include "src/base/array.h"
#include "src/base/err.h"
#include "tokenizer/pretok.h"

static int cmp_len_desc(const void *x, const void *y)
{
	const struct added_tok *a = x, *b = y;
	if (a->len != b->len)
		return a->len > b->len ? -1 : 1;
	return a->id < b->id ? -1 : a->id > b->id;
}

void added_prepare(struct added_set *a)
{
	/* longest first, so the first token matching at a position is the longest (a
	 * tokenizer without added tokens has no array: qsort must not see NULL) */
	if (a->n)
		qsort(a->t, a->n, sizeof *a->t, cmp_len_desc);
	memset(a->first, 0, sizeof a->first);
	memset(a->any, 0, sizeof a->any);
	for (size_t i = 0; i < a->n; i++) {
		a->first[a->t[i].normalized][(unsigned char)a->t[i].content[0]] = true;
		a->any[a->t[i].normalized] = true;
	}
}

void added_clear(struct added_set *a)
{
	for (size_t i = 0; i < a->n; i++)
		free(a->t[i].content);
	free(a->t);
	memset(a, 0, sizeof *a);
}

static int seg_push(struct added_segs *o, size_t start, size_t end, int32_t id)
{
	if (arr_reserve(&o->v, &o->cap, o->n + 1, sizeof *o->v))
		return -1;
	o->v[o->n++] = (struct added_seg){start, end, id};
	return 0;
}

/* Rust's char::is_whitespace (White_Space); the same set as the pre-tokenizer's \s. */
static bool is_space(int32_t c)
{
	return (c >= 9 && c <= 13) || c == 32 || c == 0x85 || c == 0xA0 || c == 0x1680 ||
	       (c >= 0x2000 && c <= 0x200A) || c == 0x2028 || c == 0x2029 || c == 0x202F ||
	       c == 0x205F || c == 0x3000;
}

/* Rust regex \w: Alphabetic, marks, decimal digits, connector punctuation and the
 * joiners. Alphabetic is approximated by letters, letter numbers and the circled and
 * squared letters (utf8proc has no Other_Alphabetic; it only adds marks, already in). */
static bool is_word(int32_t c)
{
	if (c == '_' || c == 0x200C || c == 0x200D)
		return true;
	if ((c >= 0x24B6 && c <= 0x24E9) || (c >= 0x1F130 && c <= 0x1F149) ||
	    (c >= 0x1F150 && c <= 0x1F169) || (c >= 0x1F170 && c <= 0x1F189))
		return true;
	switch (pretok_category(c)) {
	case UTF8PROC_CATEGORY_LU:
	case UTF8PROC_CATEGORY_LL:
	case UTF8PROC_CATEGORY_LT:
	case UTF8PROC_CATEGORY_LM:
	case UTF8PROC_CATEGORY_LO:
	case UTF8PROC_CATEGORY_MN:
	case UTF8PROC_CATEGORY_MC:
	case UTF8PROC_CATEGORY_ME:
	case UTF8PROC_CATEGORY_ND:
	case UTF8PROC_CATEGORY_NL:
	case UTF8PROC_CATEGORY_PC: return true;
	default: return false;
	}
}

/* The character ending at s[end) (its start in *at), or -1 when the bytes before end
 * are not a valid character (invalid input counts as neither space nor word). */
static int32_t char_before(const char *s, size_t end, size_t *at)
{
	size_t i = end - 1;
	while (i > 0 && end - i < 4 && ((unsigned char)s[i] & 0xC0) == 0x80)
		i--;
	utf8proc_int32_t c;
	if (utf8proc_iterate((const utf8proc_uint8_t *)s + i, (utf8proc_ssize_t)(end - i), &c) !=
	    (utf8proc_ssize_t)(end - i))
		return -1;
	*at = i;
	return c;
}

static int32_t char_at(const char *s, size_t pos, size_t n, size_t *len)
{
	utf8proc_int32_t c;
	utf8proc_ssize_t k = utf8proc_iterate((const utf8proc_uint8_t *)s + pos,
					      (utf8proc_ssize_t)(n - pos > 4 ? 4 : n - pos), &c);
	if (k <= 0)
		return -1;
	*len = (size_t)k;
	return c;
}

/* The leftmost-longest match of the group at or after pos; NULL when none. */
static const struct added_tok *find(const struct added_set *a, bool norm, const char *s, size_t n,
				    size_t pos, size_t *at)
{
	const bool *first = a->first[norm];
	for (size_t i = pos; i < n; i++) {
		if (!first[(unsigned char)s[i]])
			continue;
		for (size_t k = 0; k < a->n; k++) {
			const struct added_tok *t = &a->t[k];
			if (t->normalized == norm && t->len <= n - i && t->content[0] == s[i] &&
			    memcmp(t->content, s + i, t->len) == 0) {
				*at = i;
				return t;
			}
		}
	}
	return NULL;
}

bool added_literal_overlaps(const struct added_literal *lit, size_t start, size_t stop)
{
	if (!lit)
		return false;
	if (lit->all)
		return true;
	/* The first span that ends after start (sorted and apart, their ends are sorted
	 * too): a conversation of thousands of messages has as many spans, searched for
	 * each special token and each segment. */
	size_t lo = 0, hi = lit->n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (lit->span[mid].end <= start)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < lit->n && lit->span[lo].start < stop;
}

int added_split(const struct added_set *a, bool normalized, const char *s, size_t n,
		const struct added_literal *lit, struct added_segs *out)
{
	size_t start_offset = 0, pos = 0, at, k;
	const struct added_tok *t;
	while (a->any[normalized] && (t = find(a, normalized, s, n, pos, &at)) != NULL) {
		size_t start = at, stop = at + t->len;
		pos = stop; /* the next match is searched after this one, kept or not */
		if (t->special && added_literal_overlaps(lit, start, stop))
			continue;
		if (t->single_word) {
			int32_t b = start > 0 ? char_before(s, start, &k) : -1;
			int32_t c = stop < n ? char_at(s, stop, n, &k) : -1;
			if ((b >= 0 && is_word(b)) || (c >= 0 && is_word(c)))
				continue;
		}
		if (t->lstrip) {
			size_t ns = start;
			int32_t c;
			while (ns > 0 && (c = char_before(s, ns, &k)) >= 0 && is_space(c))
				ns = k;
			start = ns > start_offset ? ns : start_offset;
		}
		if (t->rstrip) {
			int32_t c;
			while (stop < n && (c = char_at(s, stop, n, &k)) >= 0 && is_space(c))
				stop += k;
		}
		if (start_offset < start && seg_push(out, start_offset, start, -1))
			return -1;
		if (seg_push(out, start, stop, t->id))
			return -1;
		start_offset = stop;
	}
	if (start_offset < n && seg_push(out, start_offset, n, -1))
		return -1;
	return 0;
}
