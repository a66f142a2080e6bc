/* jsonschema_match.c — a byte-at-a-time recognizer of the beginning of a value that a
 * compiled schema allows (see jsonschema.h): RFC 8259's grammar as a state, a stack of
 * the open objects and arrays with their schemas, a UTF-8 check of the strings' bytes
 * (RFC 3629's table of well-formed sequences), and fixed texts (enum values, listed
 * keys) matched against their sorted list. */
#include "src/base/jsonschema_impl.h"

#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

enum js_at {
	AT_VALUE,     /* a value of p->node: whitespace, or its first byte */
	AT_ARR_FIRST, /* after '[': a value or ']' */
	AT_OBJ_FIRST, /* after '{': a key or '}' */
	AT_KEY,       /* after an object's ',': a key */
	AT_COLON,     /* after a key: ':' */
	AT_AFTER,     /* after a value: ',' or the bracket that closes its container */
	AT_DONE,      /* the value is whole: whitespace only */
	AT_STR,       /* in a string */
	AT_ESC,       /* after a backslash in a string */
	AT_HEX,       /* in a \uXXXX escape */
	AT_PAIR_BS,   /* after a high surrogate's escape: the low one's backslash */
	AT_PAIR_U,    /* ... its 'u' */
	AT_LIT,       /* in true, false or null */
	AT_MATCH,     /* in a fixed text: an enum value or a listed key */
	AT_N_MINUS,   /* number: after '-' */
	AT_N_ZERO,    /* ... after a leading 0 */
	AT_N_INT,     /* ... in the integer part's digits */
	AT_N_DOT,     /* ... after '.' */
	AT_N_FRAC,    /* ... in the fraction's digits */
	AT_N_E,       /* ... after 'e' or 'E' */
	AT_N_ESIGN,   /* ... after the exponent's sign */
	AT_N_EXP,     /* ... in the exponent's digits */
};

static const char *const literals[3] = {"true", "false", "null"};

void js_init(struct js_state *s, const struct js_schema *sc)
{
	struct js_path *p = &s->path[0];
	memset(p, 0, offsetof(struct js_path, frame));
	p->sc = sc, p->at = AT_VALUE, p->node = (uint16_t)sc->root;
	s->n = 1;
	if (sc->bare && sc->node[sc->root].lits.n) /* js_choice: the texts from their start */
		p->at = AT_MATCH, p->first = 0, p->last = (uint16_t)sc->node[sc->root].lits.n;
	else if (sc->bare) /* js_regex_text: a string's characters from its first byte */
		p->at = AT_STR, js_regex_start(p->rx);
}

static void path_copy(struct js_path *dst, const struct js_path *src)
{
	memcpy(dst, src, offsetof(struct js_path, frame) + src->depth * sizeof src->frame[0]);
}

void js_copy(struct js_state *dst, const struct js_state *src)
{
	dst->n = src->n;
	for (int i = 0; i < src->n; i++)
		path_copy(&dst->path[i], &src->path[i]);
}

static const struct js_node *node(const struct js_path *p, int i)
{
	return &p->sc->node[i];
}

static struct js_frame *top(struct js_path *p)
{
	return &p->frame[p->depth - 1];
}

static bool is_space(unsigned char c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

static bool is_digit(unsigned char c)
{
	return c >= '0' && c <= '9';
}

static int hex_value(unsigned char c)
{
	return is_digit(c)              ? c - '0'
	       : (c >= 'a' && c <= 'f') ? c - 'a' + 10
	       : (c >= 'A' && c <= 'F') ? c - 'A' + 10
					: -1;
}

/* A value ended: what follows it. */
static bool value_end(struct js_path *p)
{
	p->at = p->depth ? AT_AFTER : AT_DONE;
	return true;
}

static bool open_container(struct js_path *p, bool object)
{
	if (p->depth >= JS_MAX_DEPTH)
		return false;
	p->frame[p->depth++] = (struct js_frame){.node = p->node, .object = object};
	p->at = object ? AT_OBJ_FIRST : AT_ARR_FIRST;
	return true;
}

/* The texts the fixed text being read is one of: the object's listed keys, or the
 * value's enum. */
static const struct js_words *words(const struct js_path *p)
{
	return p->key ? &node(p, p->frame[p->depth - 1].node)->keys : &node(p, p->node)->lits;
}

/* Starts matching a fixed text; c is its first byte. */
static bool match_byte(struct js_path *p, unsigned char c);
static bool start_match(struct js_path *p, bool key, unsigned char c)
{
	p->key = key, p->at = AT_MATCH, p->pos = 0;
	p->first = 0, p->last = (uint16_t)words(p)->n;
	return match_byte(p, c);
}

/* A key, its first byte c (the quote). */
static bool key_start(struct js_path *p, unsigned char c)
{
	const struct js_node *nd = node(p, top(p)->node);
	if (c != '"')
		return false;
	if (nd->keys.n)
		return start_match(p, true, c);
	if (nd->extra < 0)
		return false; /* {} only */
	p->key = true, p->chars = 0, p->at = AT_STR;
	return true;
}

static bool num_byte(struct js_path *p, unsigned char c);
static bool value_start(struct js_state *s, struct js_path *p, unsigned char c);

/* The first byte c of a value of an anyOf or oneOf: each alternative that takes it
 * goes on as a path of its own, p the first, the others new paths of s (as many as
 * there is room for). */
static bool branch_start(struct js_state *s, struct js_path *p, unsigned char c)
{
	const struct js_node *nd = node(p, p->node);
	struct js_path base;
	path_copy(&base, p);
	bool taken = false;
	for (int k = 0; k < nd->n_branches; k++) {
		if (!js_starts(node(p, nd->branches[k]), c))
			continue;
		if (taken && s->n == JS_MAX_PATHS)
			break;
		/* a new path is counted before it is read: the paths its own alternatives
		 * make come after it, and none come when it fails */
		struct js_path *q = taken ? &s->path[s->n++] : p;
		path_copy(q, &base);
		q->node = nd->branches[k];
		if (value_start(s, q, c))
			taken = true;
		else if (q != p)
			s->n--;
	}
	if (!taken) /* p as it was: unspecified, but whole */
		path_copy(p, &base);
	return taken;
}

/* The first byte of a value of p->node: the alternatives of an anyOf that take it,
 * or what the byte begins. */
static bool value_start(struct js_state *s, struct js_path *p, unsigned char c)
{
	const struct js_node *nd = node(p, p->node);
	if (nd->n_branches)
		return branch_start(s, p, c);
	if (nd->lits.n)
		return start_match(p, false, c);
	bool number = nd->types & (JS_T_NUMBER | JS_T_INTEGER);
	switch (c) {
	case '{': return (nd->types & JS_T_OBJECT) && open_container(p, true);
	case '[': return (nd->types & JS_T_ARRAY) && open_container(p, false);
	case '"':
		p->key = false, p->chars = 0, p->text_len = 0, p->at = AT_STR;
		js_regex_start(p->rx);
		return nd->types & JS_T_STRING;
	case '-': p->at = AT_N_MINUS, p->text_len = 0; return number && num_byte(p, c);
	case '0': p->at = AT_N_ZERO, p->text_len = 0; return number && num_byte(p, c);
	case 't': p->lit = 0, p->next = 1, p->at = AT_LIT; return nd->types & JS_T_BOOLEAN;
	case 'f': p->lit = 1, p->next = 1, p->at = AT_LIT; return nd->types & JS_T_BOOLEAN;
	case 'n': p->lit = 2, p->next = 1, p->at = AT_LIT; return nd->types & JS_T_NULL;
	default:
		p->at = AT_N_INT, p->text_len = 0;
		return number && c >= '1' && c <= '9' && num_byte(p, c);
	}
}

/* One more character in a string: within its maxLength. */
static bool add_char(struct js_path *p)
{
	if (!p->key && p->chars >= node(p, p->node)->max_len)
		return false;
	p->chars++;
	return true;
}

/* A byte of a formatted string past its opening quote. */
static bool format_byte(struct js_path *p, const struct js_node *nd, unsigned char c)
{
	bool whole;
	if (c == '"') {
		js_format_prefix(nd->format, p->text, p->text_len, &whole);
		return whole && p->chars >= nd->min_len && value_end(p);
	}
	if (c < 0x20 || c >= 0x80 || c == '\\' || p->text_len == JS_MAX_TEXT)
		return false;
	p->text[p->text_len++] = (char)c;
	return js_format_prefix(nd->format, p->text, p->text_len, &whole) && add_char(p);
}

/* ---- a pattern's strings: each character, or the ones it may still be ---------- */

/* The string's schema: none for a free key. */
static const struct js_node *str_node(const struct js_path *p)
{
	return p->key ? NULL : node(p, p->node);
}

/* The character a one-letter escape (\n, \", ...) stands for, or UINT32_MAX where the
 * letter makes no escape. */
static uint32_t escaped(unsigned char c)
{
	switch (c) {
	case '"':
	case '\\':
	case '/': return c;
	case 'b': return '\b';
	case 'f': return '\f';
	case 'n': return '\n';
	case 'r': return '\r';
	case 't': return '\t';
	default: return UINT32_MAX;
	}
}

/* A string's byte past the opening quote. */
static bool string_byte(struct js_path *p, unsigned char c)
{
	const struct js_node *nd = str_node(p);
	if (p->utf8) { /* a continuation byte, within the range its lead allows */
		if (c < p->lo || c > p->hi)
			return false;
		p->utf8--;
		p->lo = 0x80, p->hi = 0xBF;
		p->cp = p->cp << 6 | (c & 0x3F);
		return js_rx_utf8(p, nd);
	}
	if (nd && nd->format) /* its characters: plain ASCII, as the format has them */
		return format_byte(p, nd, c);
	if (c < 0x80 && p->sc && p->sc->bare) /* js_regex_text: its bytes, no escapes */
		return add_char(p) && js_rx_char(p, nd, c, c, true);
	if (c == '"') {
		if (nd && (p->chars < nd->min_len || (nd->rx && !js_regex_ends(nd->rx, p->rx))))
			return false;
		if (!p->key)
			return value_end(p);
		p->node = (uint16_t)node(p, top(p)->node)->extra;
		p->at = AT_COLON;
		return true;
	}
	if (c == '\\') {
		p->at = AT_ESC;
		return add_char(p) && js_rx_char(p, nd, 0, 0x10FFFF, false);
	}
	if (c < 0x20)
		return false; /* control characters must be escaped */
	if (c < 0x80)
		return add_char(p) && js_rx_char(p, nd, c, c, true);
	p->lo = 0x80, p->hi = 0xBF;
	if (c >= 0xC2 && c <= 0xDF)
		p->utf8 = 1, p->cp = c & 0x1F;
	else if (c >= 0xE0 && c <= 0xEF)
		p->utf8 = 2, p->cp = c & 0x0F, p->lo = c == 0xE0 ? 0xA0 : 0x80,
		p->hi = c == 0xED ? 0x9F : 0xBF;
	else if (c >= 0xF0 && c <= 0xF4)
		p->utf8 = 3, p->cp = c & 0x07, p->lo = c == 0xF0 ? 0x90 : 0x80,
		p->hi = c == 0xF4 ? 0x8F : 0xBF;
	else
		return false; /* a continuation byte without a lead, or no UTF-8 at all */
	return add_char(p) && js_rx_utf8(p, nd);
}

/* A \uXXXX escape's hex digit: a surrogate must come as a high and a low pair, one
 * character, as decoders of JSON text require. The first two digits tell a surrogate:
 * it is refused there, not at a last digit that no choice could make right. */
static bool hex_byte(struct js_path *p, unsigned char c)
{
	int h = hex_value(c);
	if (h < 0 || (p->low && p->next == 4 && h != 0xD))
		return false;
	p->code = (uint16_t)(p->code << 4 | h);
	if (--p->next == 2) {
		bool low = p->code >= 0xDC && p->code <= 0xDF;
		if (low != p->low) /* a low one alone, or a high one without it */
			return false;
	}
	if (!p->next) /* a pair's first half waits for its second */
		p->at = p->code >= 0xD800 && p->code <= 0xDBFF ? AT_PAIR_BS : AT_STR;
	return js_rx_hex(p, str_node(p));
}

/* ---- numbers with bounds -------------------------------------------------------
 * The text so far is kept; a byte is taken when some number it begins lies within the
 * bounds, and the number may end when its value does (as strtod reads it, as
 * Python's json and jsonschema read and compare it). */

/* An interval of the line, each end open or closed. */
struct span {
	long double lo, hi;
	bool lo_open, hi_open;
};

static bool meet(struct span a, struct span b)
{
	long double lo = a.lo > b.lo ? a.lo : b.lo, hi = a.hi < b.hi ? a.hi : b.hi;
	bool lo_open = (a.lo == lo && a.lo_open) || (b.lo == lo && b.lo_open);
	bool hi_open = (a.hi == hi && a.hi_open) || (b.hi == hi && b.hi_open);
	return lo < hi || (lo == hi && !lo_open && !hi_open);
}

/* meet(a, b), and where step is not 0, a multiple of it in both (integers: closed
 * ends, or infinite ones). */
static bool meet_step(struct span a, struct span b, double step)
{
	if (!meet(a, b) || !step)
		return meet(a, b);
	long double lo = a.lo > b.lo ? a.lo : b.lo, hi = a.hi < b.hi ? a.hi : b.hi;
	return ceill(lo / step) * step <= hi;
}

/* Magnitudes m (a prefix's digits' numbers, m >= 0) as the values they are with the
 * sign: a negative number's (-hi, -lo] when m is in [lo, hi). */
static struct span signed_span(struct span m, bool neg)
{
	return neg ? (struct span){-m.hi, -m.lo, m.hi_open, m.lo_open} : m;
}

/* The numbers nd's bounds let through. A decimal counts as the double it rounds to:
 * the reals that round onto an exclusive bound, or past an inclusive one, are out
 * (a tie taken as out: never a number that cannot end). */
static struct span wanted(const struct js_node *nd)
{
	struct span w = {nd->lo, nd->hi, nd->lo_open, nd->hi_open};
	if (!(nd->types & JS_T_NUMBER))
		return w; /* whole bounds, compared exactly */
	if (isfinite(nd->lo)) {
		double side = nextafter(nd->lo, nd->lo_open ? INFINITY : -INFINITY);
		w.lo = ((long double)nd->lo + side) / 2, w.lo_open = true;
	}
	if (isfinite(nd->hi)) {
		double side = nextafter(nd->hi, nd->hi_open ? -INFINITY : INFINITY);
		w.hi = ((long double)nd->hi + side) / 2, w.hi_open = true;
	}
	return w;
}

/* Whether some number the text p->text begins lies within nd's bounds. Its integer
 * digits v go on as v·10^j + r; after the point, x goes on up to x + 10^-digits. */
static bool num_reachable(const struct js_path *p, const struct js_node *nd)
{
	struct span want = wanted(nd);
	bool neg = p->text[0] == '-', whole = !(nd->types & JS_T_NUMBER);
	const char *d = p->text + neg, *dot = memchr(d, '.', (size_t)(p->text_len - neg));
	size_t n = (size_t)(p->text_len - neg);
	if (n == 0) /* "-": any magnitude */
		return meet_step(signed_span((struct span){0, INFINITY, false, true}, true), want,
				 nd->step);
	char text[JS_MAX_NUMBER + 1];
	memcpy(text, d, n), text[n] = 0;
	long double v = strtold(text, NULL);
	if (dot) { /* x .. x + 10^-(digits after the point) */
		long double step = powl(10, -(long double)(n - (size_t)(dot - d) - 1));
		return meet(signed_span((struct span){v, v + step, false, true}, neg), want);
	}
	if (d[0] == '0') /* 0 (and 0.x for a number) */
		return meet_step(signed_span((struct span){0, whole ? 0 : 1, false, !whole}, neg),
				 want, nd->step);
	long double far = fmaxl(fabsl((long double)nd->lo), fabsl((long double)nd->hi));
	for (long double scale = 1; v * scale <= far || scale == 1; scale *= 10) {
		struct span m = {v * scale, (v + 1) * scale, false, true};
		if (whole) /* the integers in it */
			m.hi -= 1, m.hi_open = false;
		if (meet_step(signed_span(m, neg), want, nd->step))
			return true;
		if (scale > 1e30L)
			break;
	}
	return false;
}

/* Whether the number p->text is within nd's bounds. */
static bool num_in_range(const struct js_path *p, const struct js_node *nd)
{
	char text[JS_MAX_NUMBER + 1];
	memcpy(text, p->text, p->text_len), text[p->text_len] = 0;
	double v = strtod(text, NULL);
	return (nd->lo_open ? v > nd->lo : v >= nd->lo) &&
	       (nd->hi_open ? v < nd->hi : v <= nd->hi) && (!nd->step || fmod(v, nd->step) == 0);
}

/* A byte c of a number goes into its text: when its bounds allow what it begins. */
static bool num_byte(struct js_path *p, unsigned char c)
{
	const struct js_node *nd = node(p, p->node);
	if (!nd->bounded)
		return true;
	if (p->text_len == JS_MAX_NUMBER)
		return false;
	p->text[p->text_len++] = (char)c;
	if (p->text_len == JS_MAX_NUMBER) /* no room left: it must end here */
		return num_in_range(p, nd);
	return num_reachable(p, nd);
}

/* A number's byte: its next character, or the first byte after it (read as what
 * follows a value). */
static bool number_byte(struct js_path *p, unsigned char c)
{
	const struct js_node *nd = node(p, p->node);
	bool digit = is_digit(c), e = c == 'e' || c == 'E';
	bool real = nd->types & JS_T_NUMBER; /* else digits only */
	switch (p->at) {
	case AT_N_MINUS: p->at = c == '0' ? AT_N_ZERO : AT_N_INT; return digit && num_byte(p, c);
	case AT_N_DOT: p->at = AT_N_FRAC; return digit && num_byte(p, c);
	case AT_N_E:
		p->at = c == '+' || c == '-' ? AT_N_ESIGN : AT_N_EXP;
		return digit || c == '+' || c == '-';
	case AT_N_ESIGN: p->at = AT_N_EXP; return digit;
	case AT_N_ZERO:
	case AT_N_INT:
	case AT_N_FRAC:
		if (digit && p->at != AT_N_ZERO)
			return num_byte(p, c);
		if (real && c == '.' && p->at != AT_N_FRAC) {
			p->at = AT_N_DOT;
			return num_byte(p, c);
		}
		if (real && e && !nd->bounded) { /* bounds are kept on plain decimals */
			p->at = AT_N_E;
			return true;
		}
		break;
	default: /* AT_N_EXP */
		if (digit)
			return true;
	}
	if (nd->bounded && !num_in_range(p, nd))
		return false; /* it may not end here */
	value_end(p); /* the number ended before c */
	return false;
}

/* The text in first..last that is p->pos bytes long, whole, or -1: they all begin
 * with the same p->pos bytes, so it sorts first. */
static int whole_at(const struct js_path *p, const struct js_words *w)
{
	return p->first < p->last && w->len[p->first] == p->pos ? p->first : -1;
}

/* Text i's byte at pos, or -1 past its end: along first..last these rise. */
static int byte_at(const struct js_words *w, int i, uint32_t pos)
{
	return w->len[i] > pos ? (unsigned char)w->s[i][pos] : -1;
}

/* The first of lo..hi whose byte at pos is c or above (a binary search: an enum may
 * hold a thousand texts, and every token of the vocabulary is tried against them). */
static int lower_bound(const struct js_words *w, int lo, int hi, uint32_t pos, int c)
{
	while (lo < hi) {
		int mid = lo + (hi - lo) / 2;
		if (byte_at(w, mid, pos) < c)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* Whether the fixed texts read are each written once in their container: an
 * object's keys, or the values of an array with uniqueItems (top(p)->used). */
static bool once(const struct js_path *p)
{
	return p->key || (p->depth && !p->frame[p->depth - 1].object &&
			  node(p, p->frame[p->depth - 1].node)->unique);
}

/* An enum value i ended: marked as written where each is written once. */
static bool lit_end(struct js_path *p, int i)
{
	if (once(p))
		top(p)->used |= (uint64_t)1 << i;
	return value_end(p);
}

/* A byte of a fixed text: the texts that go on with it are kept. A key is whole at
 * its closing quote; an enum value when no longer one goes on (only numbers begin
 * others: 1 and 10), else at the first byte past it. */
static bool match_byte(struct js_path *p, unsigned char c)
{
	const struct js_words *w = words(p);
	int first = lower_bound(w, p->first, p->last, p->pos, c);
	int last = lower_bound(w, first, p->last, p->pos, c + 1);
	bool track = once(p), unused = false; /* one not written yet (at most 64 texts) */
	for (int i = first; track && i < last && !unused; i++)
		unused = !(top(p)->used >> i & 1);
	if (last == first || (track && !unused)) {
		int whole = p->key ? -1 : whole_at(p, w);
		if (whole < 0 || (track && top(p)->used >> whole & 1))
			return false;
		lit_end(p, whole); /* a number that c follows */
		return false;
	}
	p->first = (uint16_t)first, p->last = (uint16_t)last, p->pos++;
	int whole = whole_at(p, w);
	if (whole < 0 || (!p->key && last - first > 1))
		return true;
	if (!p->key)
		return lit_end(p, whole);
	top(p)->used |= (uint64_t)1 << whole;
	p->node = node(p, top(p)->node)->prop[whole];
	p->at = AT_COLON;
	return true;
}

/* The schema of an array's value k (0 the first). */
static uint16_t item_node(const struct js_node *nd, uint32_t k)
{
	return (uint16_t)(k < (uint32_t)nd->n_prefix ? nd->prefix[k] : nd->items);
}

/* A structural byte (not in a string, number, literal or fixed text). */
static bool structure(struct js_state *s, struct js_path *p, unsigned char c)
{
	struct js_frame *f = p->depth ? top(p) : NULL;
	const struct js_node *nd = f ? node(p, f->node) : NULL;
	switch (p->at) {
	case AT_VALUE: return value_start(s, p, c);
	case AT_ARR_FIRST:
		if (c == ']' && nd->min_items == 0)
			return p->depth--, value_end(p);
		if (nd->max_items == 0)
			return false;
		f->count = 1, p->node = item_node(nd, 0);
		return value_start(s, p, c);
	case AT_OBJ_FIRST:
		if (c == '}' && nd->required == 0)
			return p->depth--, value_end(p);
		/* fall through */
	case AT_KEY: return key_start(p, c);
	case AT_COLON: p->at = AT_VALUE; return c == ':';
	case AT_AFTER:
		if (c == ',' && f->object) {
			p->at = AT_KEY;
			return !nd->keys.n || __builtin_popcountll(f->used) < nd->keys.n;
		}
		if (c == ',') {
			p->at = AT_VALUE, p->node = item_node(nd, f->count);
			return f->count++ < nd->max_items;
		}
		if (c != (f->object ? '}' : ']'))
			return false;
		if (f->object ? (f->used & nd->required) != nd->required : f->count < nd->min_items)
			return false;
		return p->depth--, value_end(p);
	default: return false; /* AT_DONE: whitespace only */
	}
}

static bool step(struct js_state *s, struct js_path *p, unsigned char c)
{
	switch (p->at) {
	case AT_STR: return string_byte(p, c);
	case AT_ESC:
		if (c == 'u') {
			p->next = 4, p->code = 0, p->low = false, p->at = AT_HEX;
			return true;
		}
		p->at = AT_STR;
		return escaped(c) != UINT32_MAX &&
		       js_rx_char(p, str_node(p), escaped(c), escaped(c), true);
	case AT_HEX: return hex_byte(p, c);
	case AT_PAIR_BS: p->at = AT_PAIR_U; return c == '\\';
	case AT_PAIR_U: p->next = 4, p->code = 0, p->low = true, p->at = AT_HEX; return c == 'u';
	case AT_LIT:
		if (c != (unsigned char)literals[p->lit][p->next])
			return false;
		if (!literals[p->lit][++p->next])
			return value_end(p);
		return true;
	case AT_MATCH:
		if (match_byte(p, c))
			return true;
		return p->at != AT_MATCH && step(s, p, c); /* an enum's number ended: c follows */
	case AT_N_MINUS:
	case AT_N_ZERO:
	case AT_N_INT:
	case AT_N_DOT:
	case AT_N_FRAC:
	case AT_N_E:
	case AT_N_ESIGN:
	case AT_N_EXP:
		if (number_byte(p, c))
			return true;
		if (p->at != AT_AFTER && p->at != AT_DONE)
			return false;
		return step(s, p, c); /* the number ended: c follows it */
	default: break;
	}
	if (p->sc->bare) /* a choice: nothing around it, whitespace neither */
		return false;
	if (is_space(c))
		return ++p->space <= JS_MAX_SPACE;
	p->space = 0;
	return structure(s, p, c);
}

/* Whether two paths read on alike: the same place in the grammar and the same open
 * containers, and, where a value is being read, the same one at its start (a path
 * inside a value's text is not compared: it is told apart soon, or ends). */
static bool same_path(const struct js_path *a, const struct js_path *b)
{
	if (a->at != b->at || a->depth != b->depth || a->space != b->space)
		return false;
	for (int i = 0; i < a->depth; i++) {
		const struct js_frame *x = &a->frame[i], *y = &b->frame[i];
		if (x->node != y->node || x->object != y->object || x->count != y->count ||
		    x->used != y->used)
			return false;
	}
	switch (a->at) {
	case AT_AFTER:
	case AT_DONE:
	case AT_KEY:
	case AT_OBJ_FIRST:
	case AT_ARR_FIRST: return true;
	case AT_VALUE:
	case AT_COLON: return a->node == b->node;
	default: return false;
	}
}

/* The paths still alive (alive[i]) and the ones made since (from `made` on), each
 * once. */
static void keep_paths(struct js_state *s, const bool *alive, int made)
{
	int n = 0;
	for (int i = 0; i < s->n; i++) {
		if (i < made && !alive[i])
			continue;
		bool seen = false;
		for (int j = 0; j < n && !seen; j++)
			seen = same_path(&s->path[j], &s->path[i]);
		if (!seen && n != i)
			path_copy(&s->path[n], &s->path[i]);
		n += !seen;
	}
	s->n = n;
}

bool js_feed(struct js_state *s, const char *bytes, size_t n)
{
	size_t i = 0;
	/* one reading, the common case, needs no bookkeeping (a sampler feeds every
	 * token of the vocabulary) until an anyOf's alternatives begin alike */
	while (i < n && s->n == 1)
		if (!step(s, &s->path[0], (unsigned char)bytes[i++]))
			return s->n = 0, false;
	for (; i < n; i++) {
		bool alive[JS_MAX_PATHS];
		int made = s->n, live = 0;
		for (int k = 0; k < made; k++)
			live += alive[k] = step(s, &s->path[k], (unsigned char)bytes[i]);
		if (made > 1 || s->n > made || !live)
			keep_paths(s, alive, made);
		if (!s->n)
			return false;
	}
	return true;
}

static bool path_done(const struct js_path *p)
{
	if (p->depth)
		return false;
	switch (p->at) {
	case AT_DONE: return true; /* a number's bounds were checked as it ended */
	case AT_N_ZERO:
	case AT_N_INT:
	case AT_N_FRAC: return !node(p, p->node)->bounded || num_in_range(p, node(p, p->node));
	case AT_N_EXP: return true;
	case AT_MATCH: return !p->key && whole_at(p, words(p)) >= 0;
	case AT_STR: /* js_regex_text's, which no quote closes */
		return p->sc->bare && !p->utf8 && js_regex_ends(node(p, p->node)->rx, p->rx);
	default: return false;
	}
}

bool js_done(const struct js_state *s)
{
	for (int i = 0; i < s->n; i++)
		if (path_done(&s->path[i]))
			return true;
	return false;
}

bool js_closed(const struct js_state *s)
{
	for (int i = 0; i < s->n; i++)
		if (s->path[i].at != AT_DONE)
			return false;
	return s->n > 0;
}

size_t js_string_chars(const char *s, size_t n)
{
	struct js_path t; /* a free key's string: no schema read, no frame */
	memset(&t, 0, offsetof(struct js_path, frame));
	t.at = AT_STR, t.key = true;
	for (size_t i = 0; i < n; i++)
		if (s[i] == '"' || s[i] == '\\' || !string_byte(&t, (unsigned char)s[i]))
			return 0;
	return t.utf8 ? 0 : t.chars;
}

/* The characters the string being read may still take, between two of them: 0 when
 * it is not so (in an escape or a character, a fixed text, no string). */
static uint32_t path_room(const struct js_path *p)
{
	if (p->at != AT_STR || p->utf8)
		return 0;
	const struct js_node *nd = str_node(p);
	if (nd && (nd->format || nd->rx))
		return 0;
	return nd ? nd->max_len - p->chars : UINT32_MAX;
}

uint32_t js_string_room(const struct js_state *s)
{
	uint32_t room = UINT32_MAX;
	for (int i = 0; i < s->n; i++) {
		uint32_t r = path_room(&s->path[i]);
		room = r < room ? r : room;
	}
	return s->n ? room : 0;
}
