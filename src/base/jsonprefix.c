/* jsonprefix.c — a byte-at-a-time recognizer of one JSON object's beginning (see
 * jsonprefix.h): RFC 8259's grammar as a state, a stack of object/array bits, and a
 * UTF-8 check of the strings' bytes (RFC 3629's table of well-formed sequences). */
#include "src/base/jsonprefix.h"

enum jp_at {
	JP_START,     /* before the object: whitespace or '{' */
	JP_VALUE,     /* after ':' or an array's ',': a value */
	JP_ARR_FIRST, /* after '[': a value or ']' */
	JP_OBJ_FIRST, /* after '{': a key or '}' */
	JP_KEY,       /* after an object's ',': a key */
	JP_COLON,     /* after a key: ':' */
	JP_AFTER,     /* after a value: ',' or the bracket that closes its container */
	JP_DONE,      /* the object is closed: whitespace only */
	JP_STR,       /* in a string */
	JP_ESC,       /* after a backslash in a string */
	JP_HEX,       /* in a \uXXXX escape */
	JP_LIT,       /* in true, false or null */
	JP_N_MINUS,   /* number: after '-' */
	JP_N_ZERO,    /* ... after a leading 0 */
	JP_N_INT,     /* ... in the integer part's digits */
	JP_N_DOT,     /* ... after '.' */
	JP_N_FRAC,    /* ... in the fraction's digits */
	JP_N_E,       /* ... after 'e' or 'E' */
	JP_N_ESIGN,   /* ... after the exponent's sign */
	JP_N_EXP,     /* ... in the exponent's digits */
};

static const char *const literals[3] = {"true", "false", "null"};

void jp_init(struct jp *p)
{
	*p = (struct jp){.at = JP_START};
}

bool jp_done(const struct jp *p)
{
	return p->at == JP_DONE;
}

static bool is_space(unsigned char c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

static bool is_digit(unsigned char c)
{
	return c >= '0' && c <= '9';
}

static bool is_hex(unsigned char c)
{
	return is_digit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

static bool open_container(struct jp *p, bool object)
{
	if (p->depth >= JP_MAX_DEPTH)
		return false;
	if (object)
		p->objects |= (uint64_t)1 << p->depth;
	else
		p->objects &= ~((uint64_t)1 << p->depth);
	p->depth++;
	p->at = object ? JP_OBJ_FIRST : JP_ARR_FIRST;
	return true;
}

/* c closes the innermost container when it is its bracket. */
static bool close_container(struct jp *p, unsigned char c)
{
	bool object = p->objects >> (p->depth - 1) & 1;
	if (c != (object ? '}' : ']'))
		return false;
	p->depth--;
	p->at = p->depth ? JP_AFTER : JP_DONE;
	return true;
}

static bool value_start(struct jp *p, unsigned char c)
{
	switch (c) {
	case '{': return open_container(p, true);
	case '[': return open_container(p, false);
	case '"': p->key = false, p->at = JP_STR; return true;
	case '-': p->at = JP_N_MINUS; return true;
	case '0': p->at = JP_N_ZERO; return true;
	case 't': p->lit = 0, p->next = 1, p->at = JP_LIT; return true;
	case 'f': p->lit = 1, p->next = 1, p->at = JP_LIT; return true;
	case 'n': p->lit = 2, p->next = 1, p->at = JP_LIT; return true;
	default:
		if (c >= '1' && c <= '9') {
			p->at = JP_N_INT;
			return true;
		}
		return false;
	}
}

/* A string's byte past the opening quote. */
static bool string_byte(struct jp *p, unsigned char c)
{
	if (p->utf8) { /* a continuation byte, within the range its lead allows */
		if (c < p->lo || c > p->hi)
			return false;
		p->utf8--;
		p->lo = 0x80, p->hi = 0xBF;
		return true;
	}
	if (c == '"') {
		p->at = p->key ? JP_COLON : JP_AFTER;
		return true;
	}
	if (c == '\\') {
		p->at = JP_ESC;
		return true;
	}
	if (c < 0x20)
		return false; /* control characters must be escaped */
	if (c < 0x80)
		return true;
	p->lo = 0x80, p->hi = 0xBF;
	if (c >= 0xC2 && c <= 0xDF)
		p->utf8 = 1;
	else if (c >= 0xE0 && c <= 0xEF)
		p->utf8 = 2, p->lo = c == 0xE0 ? 0xA0 : 0x80, p->hi = c == 0xED ? 0x9F : 0xBF;
	else if (c >= 0xF0 && c <= 0xF4)
		p->utf8 = 3, p->lo = c == 0xF0 ? 0x90 : 0x80, p->hi = c == 0xF4 ? 0x8F : 0xBF;
	else
		return false; /* a continuation byte without a lead, or no UTF-8 at all */
	return true;
}

/* A number's byte: its next character, or the first byte after it (read as what
 * follows a value). */
static bool number_byte(struct jp *p, unsigned char c)
{
	bool digit = is_digit(c), e = c == 'e' || c == 'E';
	switch (p->at) {
	case JP_N_MINUS: p->at = c == '0' ? JP_N_ZERO : JP_N_INT; return digit;
	case JP_N_DOT: p->at = JP_N_FRAC; return digit;
	case JP_N_E:
		p->at = c == '+' || c == '-' ? JP_N_ESIGN : JP_N_EXP;
		return digit || c == '+' || c == '-';
	case JP_N_ESIGN: p->at = JP_N_EXP; return digit;
	case JP_N_ZERO:
	case JP_N_INT:
	case JP_N_FRAC:
		if (digit && p->at != JP_N_ZERO)
			return true;
		if (c == '.' && p->at != JP_N_FRAC) {
			p->at = JP_N_DOT;
			return true;
		}
		if (e) {
			p->at = JP_N_E;
			return true;
		}
		break;
	default: /* JP_N_EXP */
		if (digit)
			return true;
	}
	p->at = JP_AFTER; /* the number ended before c */
	return false;
}

static bool step(struct jp *p, unsigned char c)
{
	switch (p->at) {
	case JP_STR: return string_byte(p, c);
	case JP_ESC:
		if (c == 'u') {
			p->next = 4, p->at = JP_HEX;
			return true;
		}
		p->at = JP_STR;
		return c == '"' || c == '\\' || c == '/' || c == 'b' || c == 'f' || c == 'n' ||
		       c == 'r' || c == 't';
	case JP_HEX:
		if (!is_hex(c))
			return false;
		if (--p->next == 0)
			p->at = JP_STR;
		return true;
	case JP_LIT:
		if (c != (unsigned char)literals[p->lit][p->next])
			return false;
		if (!literals[p->lit][++p->next])
			p->at = JP_AFTER;
		return true;
	case JP_N_MINUS:
	case JP_N_ZERO:
	case JP_N_INT:
	case JP_N_DOT:
	case JP_N_FRAC:
	case JP_N_E:
	case JP_N_ESIGN:
	case JP_N_EXP:
		if (number_byte(p, c))
			return true;
		if (p->at != JP_AFTER)
			return false;
		return step(p, c); /* the number ended: c follows it */
	default: break;
	}
	if (is_space(c))
		return ++p->space <= JP_MAX_SPACE;
	p->space = 0;
	switch (p->at) {
	case JP_START: return c == '{' && open_container(p, true);
	case JP_VALUE: return value_start(p, c);
	case JP_ARR_FIRST: return c == ']' ? close_container(p, c) : value_start(p, c);
	case JP_OBJ_FIRST:
		if (c == '}')
			return close_container(p, c);
		/* fall through */
	case JP_KEY: /* a key */ p->key = true, p->at = JP_STR; return c == '"';
	case JP_COLON: p->at = JP_VALUE; return c == ':';
	case JP_AFTER:
		if (c == ',') {
			p->at = p->objects >> (p->depth - 1) & 1 ? JP_KEY : JP_VALUE;
			return true;
		}
		return close_container(p, c);
	default: return false; /* JP_DONE: whitespace only */
	}
}

bool jp_string_safe(const char *s, size_t n)
{
	struct jp t = {.at = JP_STR};
	for (size_t i = 0; i < n; i++)
		if (s[i] == '"' || s[i] == '\\' || !string_byte(&t, (unsigned char)s[i]))
			return false;
	return t.utf8 == 0;
}

bool jp_in_string(const struct jp *p)
{
	return p->at == JP_STR && p->utf8 == 0;
}

bool jp_feed(struct jp *p, const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (!step(p, (unsigned char)s[i]))
			return false;
	return true;
}
