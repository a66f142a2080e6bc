/* jsonschema_regex.c — a string schema's "pattern", as an automaton that reads the
 * string's characters one at a time (see jsonschema.h).
 *
 * The pattern is parsed into a tree (alternation, concatenation, *, ?, and the classes
 * of characters at its leaves; + and {m,n} are written out as copies), and the tree
 * into its position automaton (Glushkov's): a state is the set of leaves that the
 * last character may have matched, 0 standing for "no character yet"; a character
 * moves to the leaves that may follow one of them and whose class holds it. Each
 * position knows the lengths of the rest that lead from it to an end (lens[], up to
 * JS_RX_LENS - 1), so a leaf is entered only where a rest of a length within minLength
 * and maxLength follows: a begun string is never stuck. (Past that many characters
 * nothing is lost: a path to an end longer than it holds a loop of at most JS_RX_MAX
 * positions that can be cut out, so a rest from JS_RX_MAX on has a shorter one within
 * the window too.)
 *
 * The syntax is the part that ECMA-262 (the schema's) and Python's re (jsonschema's)
 * read alike, and the classes are the characters both put in them (\d is [0-9], \w
 * [A-Za-z0-9_], \s the white space both call so, and what they leave out ASCII only):
 * the strings written match under either. A pattern matches anywhere in the string
 * unless ^ and $ anchor it (only at its two ends).
 *
 * Its last part reads the string (for jsonschema_match.c) a character at a time, and
 * a character begun as the range of those it may still be: a UTF-8 lead byte, or a
 * \u escape's first digits, is refused as soon as no character it begins could
 * match. */
#include "src/base/jsonschema_impl.h"

#include <stdlib.h>
#include <string.h>
#include <utf8proc.h>

#define RX_MAX_NODES  4096
#define RX_MAX_RANGES 8192
#define RX_UNICODE    0x10FFFF

enum rx_kind { RX_EMPTY, RX_LEAF, RX_CAT, RX_ALT, RX_STAR, RX_OPT };

struct rx_node {
	uint8_t kind;
	int a, b;         /* children (RX_CAT, RX_ALT: two; RX_STAR, RX_OPT: a) */
	int first, count; /* RX_LEAF: its class, ranges[first .. first + count) */
};

struct rx_range {
	uint32_t lo, hi;
};

struct js_regex {
	int n; /* positions: 0 (the start) and the leaves 1 .. n - 1 */
	uint64_t follow[JS_RX_MAX][2];
	uint64_t accept[2];                     /* positions the string may end after */
	uint64_t lens[JS_RX_MAX][JS_RX_LENS / 64]; /* each one's lengths of a rest to an end */
	int first[JS_RX_MAX], count[JS_RX_MAX]; /* each leaf's class */
	struct rx_range *ranges;
};

/* The parser's state: the pattern's code points and the tree being built. */
struct rx_parse {
	const int32_t *cp;
	size_t n, at;
	struct rx_node *node;
	int n_nodes;
	struct rx_range *ranges;
	int n_ranges;
	bool top_alt; /* a | outside any group */
	const char *why;
};

static int fail(struct rx_parse *p, const char *why)
{
	if (!p->why)
		p->why = why;
	return -1;
}

static int new_node(struct rx_parse *p, int kind, int a, int b)
{
	if (p->why)
		return -1;
	if (p->n_nodes == RX_MAX_NODES)
		return fail(p, "too large once its repetitions are written out");
	p->node[p->n_nodes] = (struct rx_node){(uint8_t)kind, a, b, 0, 0};
	return p->n_nodes++;
}

static void add_range(struct rx_parse *p, uint32_t lo, uint32_t hi)
{
	if (p->n_ranges == RX_MAX_RANGES)
		fail(p, "too many ranges in its classes");
	else
		p->ranges[p->n_ranges++] = (struct rx_range){lo, hi};
}

/* The ranges since `first` without the surrogates, which UTF-8 text never holds: a
 * class of them alone would take no character and still look as if it could. */
static void drop_surrogates(struct rx_parse *p, int first)
{
	int end = p->n_ranges;
	for (int i = first; i < end; i++) { /* the pieces kept go after them, in order */
		struct rx_range r = p->ranges[i];
		if (r.lo < 0xD800)
			add_range(p, r.lo, r.hi < 0xD7FF ? r.hi : 0xD7FF);
		if (r.hi > 0xDFFF)
			add_range(p, r.lo > 0xE000 ? r.lo : 0xE000, r.hi);
	}
	memmove(p->ranges + first, p->ranges + end,
		(size_t)(p->n_ranges - end) * sizeof *p->ranges);
	p->n_ranges = first + (p->n_ranges - end);
}

/* A leaf of the ranges added since `first`, or -1 when they hold no character. */
static int leaf(struct rx_parse *p, int first)
{
	drop_surrogates(p, first);
	if (p->n_ranges == first)
		return fail(p, "a class that matches no character (of UTF-8 text)");
	int i = new_node(p, RX_LEAF, -1, -1);
	if (i >= 0)
		p->node[i].first = first, p->node[i].count = p->n_ranges - first;
	return i;
}

static bool peek(const struct rx_parse *p, int32_t c)
{
	return p->at < p->n && p->cp[p->at] == c;
}

/* ---- classes --------------------------------------------------------------------- */

/* \d \w \s and their complements (those: ASCII only, where ECMA-262 and Python differ
 * past it). */
static bool shorthand(struct rx_parse *p, int32_t c)
{
	static const struct rx_range space[] = {
		{0x09, 0x0D},     {0x20, 0x20},     {0xA0, 0xA0},
		{0x1680, 0x1680}, {0x2000, 0x200A}, {0x2028, 0x2029},
		{0x202F, 0x202F}, {0x205F, 0x205F}, {0x3000, 0x3000}};
	switch (c) {
	case 'd': add_range(p, '0', '9'); return true;
	case 'D': add_range(p, 0, '0' - 1), add_range(p, '9' + 1, 0x7F); return true;
	case 'w':
		add_range(p, '0', '9'), add_range(p, 'A', 'Z'), add_range(p, '_', '_');
		add_range(p, 'a', 'z');
		return true;
	case 'W':
		add_range(p, 0, '0' - 1), add_range(p, '9' + 1, 'A' - 1),
			add_range(p, 'Z' + 1, '^');
		add_range(p, '`', '`'), add_range(p, 'z' + 1, 0x7F);
		return true;
	case 's':
		for (size_t i = 0; i < sizeof space / sizeof *space; i++)
			add_range(p, space[i].lo, space[i].hi);
		return true;
	case 'S':
		add_range(p, 0, 0x08), add_range(p, 0x0E, 0x1B), add_range(p, 0x21, 0x7F);
		return true;
	default: return false;
	}
}

static int hex_digits(struct rx_parse *p, int k)
{
	int v = 0;
	for (int i = 0; i < k; i++, p->at++) {
		int32_t c = p->at < p->n ? p->cp[p->at] : -1;
		int h = c >= '0' && c <= '9'   ? c - '0'
			: c >= 'a' && c <= 'f' ? c - 'a' + 10
			: c >= 'A' && c <= 'F' ? c - 'A' + 10
					       : -1;
		if (h < 0)
			return fail(p, "\\x needs two hex digits and \\u four");
		v = v << 4 | h;
	}
	return v;
}

/* The character an escape (past its backslash) stands for, -2 for a class shorthand
 * (its ranges added), or -1 (p->why set). */
static int32_t escape(struct rx_parse *p, bool in_class)
{
	if (p->at == p->n)
		return fail(p, "a backslash at its end");
	int32_t c = p->cp[p->at++];
	if (shorthand(p, c))
		return -2;
	switch (c) {
	case 'n': return '\n';
	case 'r': return '\r';
	case 't': return '\t';
	case 'f': return '\f';
	case 'v': return '\v';
	case 'x': return hex_digits(p, 2);
	case 'u': return hex_digits(p, 4);
	case '0':
		if (p->at < p->n && p->cp[p->at] >= '0' && p->cp[p->at] <= '9')
			return fail(p, "octal escapes are not supported");
		return 0;
	case 'b':
		if (in_class)
			return '\b';
		return fail(p, "\\b (a word boundary) is not supported");
	default:
		if ((c >= '0' && c <= '9') || ((c | 32) >= 'a' && (c | 32) <= 'z'))
			return fail(p, "this escape (a back-reference, a boundary or a letter "
				       "ECMA-262 and Python read apart) is not supported");
		return c; /* \. \- \/ \\ ...: the character itself */
	}
}

static int cmp_range(const void *x, const void *y)
{
	const struct rx_range *a = x, *b = y;
	return a->lo < b->lo ? -1 : a->lo > b->lo;
}

/* The ranges since `first` sorted and merged, or replaced by their complement (within
 * ASCII when a shorthand was among them). */
static void settle(struct rx_parse *p, int first, bool negate, bool ascii)
{
	if (negate && ascii) /* \x1c-\x1f: Python's \s, not ECMA-262's: in neither reading */
		add_range(p, 0x1C, 0x1F);
	struct rx_range *r = p->ranges + first;
	int n = p->n_ranges - first, m = 0;
	qsort(r, (size_t)n, sizeof *r, cmp_range);
	for (int i = 0; i < n; i++)
		if (m && r[i].lo <= r[m - 1].hi + 1)
			r[m - 1].hi = r[i].hi > r[m - 1].hi ? r[i].hi : r[m - 1].hi;
		else
			r[m++] = r[i];
	p->n_ranges = first + m;
	if (!negate)
		return;
	struct rx_range held[RX_MAX_RANGES / 8];
	if (m > (int)(sizeof held / sizeof *held))
		return (void)fail(p, "too many ranges in a negated class");
	memcpy(held, r, (size_t)m * sizeof *r);
	p->n_ranges = first;
	uint32_t next = 0, top = ascii ? 0x7F : RX_UNICODE;
	for (int i = 0; i < m && next <= top; i++) {
		if (held[i].lo > next)
			add_range(p, next, held[i].lo - 1 < top ? held[i].lo - 1 : top);
		next = held[i].hi + 1;
	}
	if (next <= top)
		add_range(p, next, top);
}

/* One member of a class: a character, or a shorthand (-2). */
static int32_t class_char(struct rx_parse *p)
{
	int32_t c = p->cp[p->at++];
	return c == '\\' ? escape(p, true) : c;
}

/* A class past its '[': the leaf, or -1. */
static int parse_class(struct rx_parse *p)
{
	int first = p->n_ranges;
	bool negate = peek(p, '^'), shorthands = false;
	p->at += negate;
	if (peek(p, ']'))
		return fail(p, "an empty class ([] or [^]) is not supported");
	while (!p->why && p->at < p->n && !peek(p, ']')) {
		int32_t lo = class_char(p);
		if (lo == -2) {
			shorthands = true;
			continue;
		}
		if (lo < 0)
			return -1;
		int32_t hi = lo;
		if (peek(p, '-') && p->at + 1 < p->n && p->cp[p->at + 1] != ']') {
			p->at++;
			if ((hi = class_char(p)) < 0)
				return fail(p, "a range must end in a character");
			if (hi < lo)
				return fail(p, "a range out of order in a class");
		}
		add_range(p, (uint32_t)lo, (uint32_t)hi);
	}
	if (!peek(p, ']'))
		return fail(p, "a class without its ']'");
	p->at++;
	settle(p, first, negate, shorthands);
	return leaf(p, first);
}

/* ---- the tree --------------------------------------------------------------------- */

static int parse_alt(struct rx_parse *p, int depth);

/* A copy of subtree i: leaves are positions, so a repetition needs its own. */
static int clone(struct rx_parse *p, int i)
{
	if (i < 0)
		return -1;
	struct rx_node x = p->node[i];
	int a = x.a >= 0 ? clone(p, x.a) : -1, b = x.b >= 0 ? clone(p, x.b) : -1;
	int j = new_node(p, x.kind, a, b);
	if (j >= 0)
		p->node[j].first = x.first, p->node[j].count = x.count;
	return j;
}

static int number(struct rx_parse *p)
{
	long v = -1;
	while (p->at < p->n && p->cp[p->at] >= '0' && p->cp[p->at] <= '9') {
		v = (v < 0 ? 0 : v) * 10 + (p->cp[p->at++] - '0');
		if (v > 1000)
			return fail(p, "a repetition count above 1000");
	}
	return (int)v;
}

/* x{m,n} (n -1: no bound) written out: m copies, then n - m optional ones nested, or a
 * star. */
static int repeat(struct rx_parse *p, int x, int m, int n)
{
	int tail = -1;
	if (n < 0)
		tail = new_node(p, RX_STAR, clone(p, x), -1);
	else
		for (int k = m; k < n && !p->why; k++)
			tail = new_node(p, RX_OPT,
					tail < 0 ? clone(p, x)
						 : new_node(p, RX_CAT, clone(p, x), tail),
					-1);
	int r = tail < 0 ? new_node(p, RX_EMPTY, -1, -1) : tail;
	for (int k = 0; k < m && !p->why; k++)
		r = new_node(p, RX_CAT, clone(p, x), r);
	return r;
}

/* An atom's quantifier, if any, applied to it. */
static int quantify(struct rx_parse *p, int x)
{
	if (p->at == p->n)
		return x;
	int32_t c = p->cp[p->at];
	int m, n;
	if (c == '*' || c == '+' || c == '?') {
		p->at++;
		m = c == '+', n = c == '?' ? 1 : -1;
	} else if (c == '{') {
		p->at++;
		if ((m = number(p)) < 0)
			return fail(p,
				    "a { that is not a repetition {m}, {m,} or {m,n} (write \\{)");
		n = m;
		if (peek(p, ',')) {
			p->at++;
			n = number(p);
			if (p->why)
				return -1;
		}
		if (!peek(p, '}') || (n >= 0 && n < m))
			return fail(p, "a repetition {m,n} must end in } with m <= n");
		p->at++;
	} else {
		return x;
	}
	p->at += peek(p, '?'); /* lazy: the same strings */
	if (peek(p, '*') || peek(p, '+') || peek(p, '?') || peek(p, '{'))
		return fail(p, "a quantifier after a quantifier");
	if (c == '*')
		return new_node(p, RX_STAR, x, -1);
	if (c == '?')
		return new_node(p, RX_OPT, x, -1);
	return repeat(p, x, m, n);
}

static int parse_atom(struct rx_parse *p, int depth)
{
	int32_t c = p->cp[p->at++];
	int first = p->n_ranges;
	switch (c) {
	case '(': {
		if (peek(p, '?')) { /* (?:...) only: the rest ECMA-262 and Python read apart */
			if (p->at + 1 >= p->n || p->cp[p->at + 1] != ':')
				return fail(p,
					    "lookarounds, named groups and flags ((?=, (?<name>, "
					    "(?i ...) are not supported");
			p->at += 2;
		}
		int x = parse_alt(p, depth + 1);
		if (!peek(p, ')'))
			return fail(p, "a ( without its )");
		p->at++;
		return x;
	}
	case '[': return parse_class(p);
	case '.':
		add_range(p, 0, 9), add_range(p, 11, 12), add_range(p, 14, 0x2027);
		add_range(p, 0x202A, RX_UNICODE);
		return leaf(p, first);
	case '\\': {
		int32_t e = escape(p, false);
		if (e == -1)
			return -1;
		if (e >= 0)
			add_range(p, (uint32_t)e, (uint32_t)e);
		return leaf(p, first);
	}
	case '^':
	case '$': return fail(p, "^ and $ only at its two ends are supported");
	case ')': return fail(p, "a ) without its (");
	case '*':
	case '+':
	case '?':
	case '{': return fail(p, "a quantifier with nothing before it");
	default: add_range(p, (uint32_t)c, (uint32_t)c); return leaf(p, first);
	}
}

/* Pieces up to '|', ')' or the end. */
static int parse_seq(struct rx_parse *p, int depth)
{
	int r = new_node(p, RX_EMPTY, -1, -1);
	while (!p->why && p->at < p->n && !peek(p, '|') && !peek(p, ')')) {
		int x = quantify(p, parse_atom(p, depth));
		r = p->node[r].kind == RX_EMPTY ? x : new_node(p, RX_CAT, r, x);
	}
	return p->why ? -1 : r;
}

static int parse_alt(struct rx_parse *p, int depth)
{
	if (depth > 64)
		return fail(p, "groups nested deeper than 64");
	int r = parse_seq(p, depth);
	while (!p->why && peek(p, '|')) {
		p->at++;
		p->top_alt |= depth == 0;
		r = new_node(p, RX_ALT, r, parse_seq(p, depth));
	}
	return r;
}

/* ---- the automaton ---------------------------------------------------------------- */

static void set_add(uint64_t *s, int i)
{
	s[i >> 6] |= 1ull << (i & 63);
}

static bool set_has(const uint64_t *s, int i)
{
	return s[i >> 6] >> (i & 63) & 1;
}

static void set_or(uint64_t *d, const uint64_t *s)
{
	d[0] |= s[0], d[1] |= s[1];
}

static bool set_meets(const uint64_t *a, const uint64_t *b)
{
	return (a[0] & b[0]) || (a[1] & b[1]);
}

/* The first position of s from `from` on, or -1. */
static int next_bit(const uint64_t *s, int from)
{
	for (int w = from >> 6; w < 2; w++) {
		uint64_t m = s[w];
		if (w == from >> 6)
			m &= ~0ull << (from & 63);
		if (m)
			return w * 64 + __builtin_ctzll(m);
	}
	return -1;
}

/* What the subtree at i may begin and end with, and whether it may be empty; the
 * follow sets of its leaves filled in. */
struct rx_ends {
	uint64_t first[2], last[2];
	bool empty;
};

static int glushkov(struct js_regex *rx, const struct rx_node *node, int i, struct rx_ends *e)
{
	memset(e, 0, sizeof *e);
	const struct rx_node *x = &node[i];
	struct rx_ends a, b;
	switch (x->kind) {
	case RX_EMPTY: e->empty = true; return 0;
	case RX_LEAF:
		if (rx->n == JS_RX_MAX)
			return -1;
		rx->first[rx->n] = x->first, rx->count[rx->n] = x->count;
		set_add(e->first, rx->n), set_add(e->last, rx->n);
		rx->n++;
		return 0;
	case RX_CAT:
		if (glushkov(rx, node, x->a, &a) || glushkov(rx, node, x->b, &b))
			return -1;
		for (int p = next_bit(a.last, 0); p >= 0; p = next_bit(a.last, p + 1))
			set_or(rx->follow[p], b.first);
		*e = (struct rx_ends){
			{a.first[0], a.first[1]}, {b.last[0], b.last[1]}, a.empty && b.empty};
		if (a.empty)
			set_or(e->first, b.first);
		if (b.empty)
			set_or(e->last, a.last);
		return 0;
	case RX_ALT:
		if (glushkov(rx, node, x->a, &a) || glushkov(rx, node, x->b, &b))
			return -1;
		*e = a;
		set_or(e->first, b.first), set_or(e->last, b.last);
		e->empty = a.empty || b.empty;
		return 0;
	default: /* RX_STAR, RX_OPT */
		if (glushkov(rx, node, x->a, e))
			return -1;
		if (x->kind == RX_STAR)
			for (int p = next_bit(e->last, 0); p >= 0; p = next_bit(e->last, p + 1))
				set_or(rx->follow[p], e->first);
		e->empty = true;
		return 0;
	}
}

/* lens[p]: bit k set where k more characters lead from position p to an end: at[]
 * holds the positions k characters from one, for k = 0, 1, ... */
static void lengths(struct js_regex *rx)
{
	uint64_t at[2] = {rx->accept[0], rx->accept[1]};
	memset(rx->lens, 0, sizeof rx->lens);
	for (int k = 0; k < JS_RX_LENS; k++) {
		uint64_t before[2] = {0, 0};
		for (int p = 0; p < rx->n; p++) {
			if (set_has(at, p))
				rx->lens[p][k >> 6] |= 1ull << (k & 63);
			if (set_meets(rx->follow[p], at))
				set_add(before, p);
		}
		at[0] = before[0], at[1] = before[1];
	}
}

/* Position p has a rest to an end of need to room characters. */
static bool fits(const struct js_regex *rx, int p, uint32_t need, uint32_t room)
{
	uint32_t hi = room < JS_RX_LENS - 1 ? room : JS_RX_LENS - 1;
	for (uint32_t w = need >> 6; need <= hi && w <= hi >> 6; w++) {
		uint64_t m = rx->lens[p][w]; /* its bits from need to hi */
		if (w == need >> 6)
			m &= ~0ull << (need & 63);
		if (w == hi >> 6 && (hi & 63) != 63)
			m &= (2ull << (hi & 63)) - 1;
		if (m)
			return true;
	}
	return false;
}

/* The tree of the pattern, anchored or not at each end: an end left open takes any
 * characters (a leaf of every character, starred). */
static int tree(struct rx_parse *p, const int32_t *cp, size_t n)
{
	bool head = n && cp[0] == '^', tail = false;
	size_t end = n;
	if (end > head && cp[end - 1] == '$') {
		size_t bs = 0; /* backslashes before it: an odd count escapes it */
		while (end - 1 - bs > 0 && cp[end - 2 - bs] == '\\')
			bs++;
		tail = bs % 2 == 0;
		end -= tail;
	}
	p->cp = cp, p->at = head, p->n = end;
	int r = parse_alt(p, 0);
	if (r >= 0 && p->at != p->n)
		r = fail(p, "a ) without its (");
	if (r >= 0 && (head || tail) && p->top_alt)
		return fail(p, "^ or $ beside a | at the top is read apart by its readers "
			       "(write ^(a|b)$)");
	for (int side = 0; side < 2 && r >= 0; side++) {
		if (side ? tail : head)
			continue;
		int first = p->n_ranges;
		add_range(p, 0, RX_UNICODE);
		int any = new_node(p, RX_STAR, leaf(p, first), -1);
		r = side ? new_node(p, RX_CAT, r, any) : new_node(p, RX_CAT, any, r);
	}
	return p->why ? -1 : r;
}

struct js_regex *js_regex_compile(const char *pattern, size_t len, const char **why)
{
	struct rx_parse p = {0};
	int32_t *cp = malloc((len + 1) * sizeof *cp);
	p.node = malloc(RX_MAX_NODES * sizeof *p.node);
	p.ranges = malloc(RX_MAX_RANGES * sizeof *p.ranges);
	struct js_regex *rx = calloc(1, sizeof *rx);
	size_t n = 0;
	if (!cp || !p.node || !p.ranges || !rx) {
		p.why = "out of memory";
		goto out;
	}
	for (size_t i = 0; i < len;) {
		utf8proc_int32_t c;
		utf8proc_ssize_t k = utf8proc_iterate((const uint8_t *)pattern + i,
						      (utf8proc_ssize_t)(len - i), &c);
		if (k <= 0 || c == 0) {
			p.why = "not UTF-8 text";
			goto out;
		}
		cp[n++] = c, i += (size_t)k;
	}
	int root = tree(&p, cp, n);
	struct rx_ends e;
	rx->n = 1; /* position 0: the start */
	if (root < 0)
		goto out;
	if (glushkov(rx, p.node, root, &e)) {
		p.why = "more than 127 characters to match once its repetitions are written out";
		goto out;
	}
	memcpy(rx->follow[0], e.first, sizeof e.first);
	memcpy(rx->accept, e.last, sizeof e.last);
	if (e.empty)
		set_add(rx->accept, 0);
	lengths(rx);
	rx->ranges = malloc((size_t)(p.n_ranges ? p.n_ranges : 1) * sizeof *rx->ranges);
	if (!rx->ranges)
		p.why = "out of memory";
	else
		memcpy(rx->ranges, p.ranges, (size_t)p.n_ranges * sizeof *rx->ranges);
out:
	free(cp);
	free(p.node);
	free(p.ranges);
	if (p.why) {
		*why = p.why;
		js_regex_free(rx);
		return NULL;
	}
	return rx;
}

void js_regex_free(struct js_regex *rx)
{
	if (rx) {
		free(rx->ranges);
		free(rx);
	}
}

bool js_regex_fits(const struct js_regex *rx, uint32_t need, uint32_t room)
{
	return fits(rx, 0, need, room);
}

void js_regex_start(uint64_t set[2])
{
	set[0] = 1, set[1] = 0;
}

/* Leaf q's class meets [lo, hi]. */
static bool meets(const struct js_regex *rx, int q, uint32_t lo, uint32_t hi)
{
	const struct rx_range *r = rx->ranges + rx->first[q];
	for (int i = 0; i < rx->count[q]; i++)
		if (r[i].lo <= hi && r[i].hi >= lo)
			return true;
	return false;
}

/* The leaves after the set that [lo, hi] meets, with a rest of need to room
 * characters after them. */
static void next_of(const struct js_regex *rx, const uint64_t set[2], uint32_t lo, uint32_t hi,
		    uint32_t need, uint32_t room, uint64_t to[2])
{
	uint64_t next[2] = {0, 0};
	for (int p = next_bit(set, 0); p >= 0; p = next_bit(set, p + 1))
		set_or(next, rx->follow[p]);
	to[0] = to[1] = 0;
	for (int q = next_bit(next, 0); q >= 0; q = next_bit(next, q + 1))
		if (meets(rx, q, lo, hi) && fits(rx, q, need, room))
			set_add(to, q);
}

bool js_regex_may(const struct js_regex *rx, const uint64_t set[2], uint32_t lo, uint32_t hi,
		  uint32_t need, uint32_t room)
{
	uint64_t to[2];
	next_of(rx, set, lo, hi, need, room, to);
	return to[0] || to[1];
}

bool js_regex_step(const struct js_regex *rx, uint64_t set[2], uint32_t c, uint32_t need,
		   uint32_t room)
{
	next_of(rx, set, c, c, need, room, set);
	return set[0] || set[1];
}

bool js_regex_ends(const struct js_regex *rx, const uint64_t set[2])
{
	return set_meets(set, rx->accept);
}

int js_regex_ranges(const struct js_regex *rx)
{
	int sum = 0;
	for (int i = 1; i < rx->n; i++)
		sum += rx->count[i];
	return sum;
}

/* ---- the string being read: its characters as they come -------------------------- */

/* A character in [lo, hi] (whole: the one read, lo == hi) where a pattern is kept. */
bool js_rx_char(struct js_path *p, const struct js_node *nd, uint32_t lo, uint32_t hi, bool whole)
{
	if (!nd || !nd->rx)
		return true;
	/* the rest after it (add_char counted it) within minLength and maxLength */
	uint32_t need = nd->min_len > p->chars ? nd->min_len - p->chars : 0,
		 room = nd->max_len - p->chars;
	return whole ? js_regex_step(nd->rx, p->rx, lo, need, room)
		     : js_regex_may(nd->rx, p->rx, lo, hi, need, room);
}

/* A UTF-8 character read as far as p->cp, p->utf8 bytes due (the next in lo..hi). */
bool js_rx_utf8(struct js_path *p, const struct js_node *nd)
{
	int r = p->utf8;
	if (!r)
		return js_rx_char(p, nd, p->cp, p->cp, true);
	uint32_t base = p->cp << 6 * r, rest = (1u << 6 * (r - 1)) - 1;
	return js_rx_char(p, nd, base | (uint32_t)(p->lo & 0x3F) << 6 * (r - 1),
			  base | (uint32_t)(p->hi & 0x3F) << 6 * (r - 1) | rest, false);
}

/* A \u escape's digits so far (p->next due): the characters they may still be, a
 * surrogate pair's among them. */
bool js_rx_hex(struct js_path *p, const struct js_node *nd)
{
	if (!nd || !nd->rx)
		return true;
	int r = p->next;
	uint32_t lo = (uint32_t)p->code << 4 * r, hi = lo | ((1u << 4 * r) - 1);
	if (p->low) { /* the pair's second half: p->cp holds the first */
		uint32_t base = 0x10000 + ((p->cp - 0xD800) << 10) - 0xDC00;
		lo = lo < 0xDC00 ? 0xDC00 : lo, hi = hi > 0xDFFF ? 0xDFFF : hi;
		return js_rx_char(p, nd, base + lo, base + hi, r == 0);
	}
	if (r == 0 && !(lo >= 0xD800 && lo <= 0xDBFF))
		return js_rx_char(p, nd, lo, lo, true);
	if (r == 0) /* a pair's first half: the character waits for the second */
		p->cp = lo;
	bool ok = false;
	if (lo <= 0xD7FF)
		ok = js_rx_char(p, nd, lo, hi < 0xD7FF ? hi : 0xD7FF, false);
	if (!ok && hi >= 0xE000)
		ok = js_rx_char(p, nd, lo > 0xE000 ? lo : 0xE000, hi, false);
	if (!ok && lo <= 0xDBFF && hi >= 0xD800) {
		uint32_t a = lo > 0xD800 ? lo : 0xD800, b = hi < 0xDBFF ? hi : 0xDBFF;
		ok = js_rx_char(p, nd, 0x10000 + ((a - 0xD800) << 10),
				0x10000 + ((b - 0xD800) << 10) + 0x3FF, false);
	}
	return ok;
}
