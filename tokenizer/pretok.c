/* pretok.c — the Qwen2 pre-tokenizer regex as a scanner over character classes (see pretok.h). */
#include "tokenizer/pretok.h"

#include <stdbool.h>
#include <stdint.h>
#include <utf8proc.h>

#include "tokenizer/unicode16.h"

const char pretok_qwen2_regex[] =
	"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}"
	"| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";

/* Character classes the regex distinguishes. NL (\r, \n) is also whitespace. */
enum { C_O, C_L, C_N, C_WS, C_NL };

/* ASCII classes: letters, digits, the White_Space controls; 0x1C-0x1F are not \s. */
static const unsigned char ascii_cls[128] = {
	['\t'] = C_WS, ['\n'] = C_NL, ['\v'] = C_WS, ['\f'] = C_WS, ['\r'] = C_NL, [' '] = C_WS,
	['0'] = C_N,   ['1'] = C_N,   ['2'] = C_N,   ['3'] = C_N,   ['4'] = C_N,   ['5'] = C_N,
	['6'] = C_N,   ['7'] = C_N,   ['8'] = C_N,   ['9'] = C_N,
#define L2(a, b) [a] = C_L, [b] = C_L
	L2('A', 'a'),  L2('B', 'b'),  L2('C', 'c'),  L2('D', 'd'),  L2('E', 'e'),  L2('F', 'f'),
	L2('G', 'g'),  L2('H', 'h'),  L2('I', 'i'),  L2('J', 'j'),  L2('K', 'k'),  L2('L', 'l'),
	L2('M', 'm'),  L2('N', 'n'),  L2('O', 'o'),  L2('P', 'p'),  L2('Q', 'q'),  L2('R', 'r'),
	L2('S', 's'),  L2('T', 't'),  L2('U', 'u'),  L2('V', 'v'),  L2('W', 'w'),  L2('X', 'x'),
	L2('Y', 'y'),  L2('Z', 'z'),
#undef L2
};

int pretok_category(int32_t c)
{
	int cat = utf8proc_category(c);
	if (cat != UTF8PROC_CATEGORY_CN || c < (int32_t)unicode16_runs[0].first)
		return cat;
	size_t lo = 0, hi = sizeof unicode16_runs / sizeof unicode16_runs[0];
	while (lo < hi) { /* the first run ending at or after c */
		size_t mid = lo + (hi - lo) / 2;
		if (unicode16_runs[mid].last < (uint32_t)c)
			lo = mid + 1;
		else
			hi = mid;
	}
	bool in = lo < sizeof unicode16_runs / sizeof unicode16_runs[0] &&
		  unicode16_runs[lo].first <= (uint32_t)c;
	return in ? unicode16_runs[lo].category : cat;
}

static int cls_cp(int32_t c)
{
	switch (c) {
	case 0x85:
	case 0xA0:
	case 0x1680:
	case 0x2028:
	case 0x2029:
	case 0x202F:
	case 0x205F:
	case 0x3000: return C_WS;
	}
	if (c >= 0x2000 && c <= 0x200A)
		return C_WS;
	switch (pretok_category(c)) {
	case UTF8PROC_CATEGORY_LU:
	case UTF8PROC_CATEGORY_LL:
	case UTF8PROC_CATEGORY_LT:
	case UTF8PROC_CATEGORY_LM:
	case UTF8PROC_CATEGORY_LO: return C_L;
	case UTF8PROC_CATEGORY_ND:
	case UTF8PROC_CATEGORY_NL:
	case UTF8PROC_CATEGORY_NO: return C_N;
	default: return C_O;
	}
}

/* Class of the character at s[i] (i < len); *next gets the offset after it. Malformed
 * or truncated sequences count as one byte of class O, so nothing past len is read. */
static inline int cls_at(const unsigned char *s, size_t len, size_t i, size_t *next)
{
	unsigned b = s[i];
	if (b < 0x80) {
		*next = i + 1;
		return ascii_cls[b];
	}
	size_t n = b >= 0xF0 ? 4 : b >= 0xE0 ? 3 : b >= 0xC0 ? 2 : 1;
	if (n == 1 || n > len - i) {
		*next = i + 1;
		return C_O;
	}
	int32_t c = n == 2   ? (int32_t)(b & 0x1F)
		    : n == 3 ? (int32_t)(b & 0x0F)
			     : (int32_t)(b & 0x07);
	for (size_t k = 1; k < n; k++) {
		if ((s[i + k] & 0xC0) != 0x80) {
			*next = i + 1;
			return C_O;
		}
		c = c << 6 | (s[i + k] & 0x3F);
	}
	*next = i + n;
	return cls_cp(c);
}

/* End of a run of characters of class `want`, starting at i. */
static size_t run_of(const unsigned char *s, size_t len, size_t i, int want)
{
	while (i < len) {
		if (s[i] < 0x80) {
			if (ascii_cls[s[i]] != want)
				break;
			i++;
			continue;
		}
		size_t nx;
		if (cls_at(s, len, i, &nx) != want)
			break;
		i = nx;
	}
	return i;
}

/* (?i:'s|'t|'re|'ve|'m|'ll|'d) at s[pos] == '\''; returns the end or 0. U+017F (long s)
 * case-folds to 's', so Oniguruma's case-insensitive match accepts it too. */
static size_t contraction(const unsigned char *s, size_t len, size_t pos)
{
	if (pos + 1 >= len)
		return 0;
	unsigned a = s[pos + 1] | 0x20; /* ASCII lower case; harmless for other bytes */
	if (s[pos + 1] < 0x80 && (a == 's' || a == 't' || a == 'm' || a == 'd'))
		return pos + 2;
	if (s[pos + 1] == 0xC5 && pos + 2 < len && s[pos + 2] == 0xBF)
		return pos + 3;
	if (s[pos + 1] >= 0x80 || pos + 2 >= len || s[pos + 2] >= 0x80)
		return 0;
	unsigned b = s[pos + 2] | 0x20;
	if ((a == 'r' && b == 'e') || (a == 'v' && b == 'e') || (a == 'l' && b == 'l'))
		return pos + 3;
	return 0;
}

/* The whitespace alternatives \s*[\r\n]+ | \s+(?!\S) | \s+ at a whitespace character. */
static size_t whitespace(const unsigned char *s, size_t len, size_t pos)
{
	size_t i = pos, last = pos, after_nl = 0;
	while (i < len) {
		size_t nx;
		int c = cls_at(s, len, i, &nx);
		if (c != C_WS && c != C_NL)
			break;
		if (c == C_NL)
			after_nl = nx;
		last = i;
		i = nx;
	}
	/* \s* backtracks to the last CR/LF of the run; [\r\n]+ takes just it. */
	if (after_nl)
		return after_nl;
	/* \s+(?!\S): the whole run at end of text, else all but its last character. */
	if (i == len || last == pos)
		return i;
	return last;
}

size_t pretok_next(const char *text, size_t len, size_t pos)
{
	const unsigned char *s = (const unsigned char *)text;
	size_t n1, n2;
	if (s[pos] == '\'') {
		size_t e = contraction(s, len, pos);
		if (e)
			return e;
	}
	int c0 = cls_at(s, len, pos, &n1);
	if (c0 == C_L)
		return run_of(s, len, n1, C_L);
	if (c0 == C_N)
		return n1;
	int c1 = n1 < len ? cls_at(s, len, n1, &n2) : -1;
	/* [^\r\n\p{L}\p{N}]?\p{L}+ with one leading non-letter. */
	if (c0 != C_NL && c1 == C_L)
		return run_of(s, len, n2, C_L);
	/* ' ?[^\s\p{L}\p{N}]+[\r\n]*' */
	if (c0 == C_O)
		return run_of(s, len, run_of(s, len, n1, C_O), C_NL);
	if (s[pos] == ' ' && c1 == C_O)
		return run_of(s, len, run_of(s, len, n2, C_O), C_NL);
	return whitespace(s, len, pos);
}
