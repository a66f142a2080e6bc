/* jsonschema_impl.h — the compiled schema, shared by jsonschema.c (which builds it)
 * and jsonschema_match.c (which reads text against it). */
#ifndef QWENCHAT_BASE_JSONSCHEMA_IMPL_H
#define QWENCHAT_BASE_JSONSCHEMA_IMPL_H

#include "src/base/jsonschema.h"

enum js_type {
	JS_T_OBJECT = 1,
	JS_T_ARRAY = 2,
	JS_T_STRING = 4,
	JS_T_NUMBER = 8,
	JS_T_INTEGER = 16, /* digits only: no fraction, no exponent */
	JS_T_BOOLEAN = 32,
	JS_T_NULL = 64,
	JS_T_ALL = 127,
};

/* Byte strings sorted by memcmp, a shorter one before those it begins: the ones that
 * begin with given bytes are then next to each other (first..last). */
struct js_words {
	int n;
	char **s;
	uint32_t *len;
};

struct js_node {
	uint8_t types;        /* enum js_type bits: what a value may be, lits aside */
	bool compiled;        /* (while compiling: a $ref may reach it before) */
	int n_branches;       /* anyOf/oneOf: the alternatives */
	uint16_t *branches;
	bool one_of;          /* ... of a oneOf: a value matches one of them only */
	struct js_words lits; /* enum/const: the values as jansson writes them */
	/* object: listed keys ("\"name\"" as written) and their values' schemas ... */
	struct js_words keys;
	uint16_t *prop; /* (keys.n) by the keys' sorted order */
	uint64_t required;
	int32_t extra; /* ... or, none listed: any key, values of this, or -1: no key */
	int32_t items; /* array: its values' schema (past the prefix's) */
	int n_prefix;  /* ... and the first ones' (prefixItems) */
	uint16_t *prefix;
	uint32_t min_items, max_items;
	bool unique;               /* uniqueItems: its values (of an enum) each once */
	uint32_t min_len, max_len; /* string: characters */
	uint8_t format;            /* string: enum js_format, or 0 */
	struct js_regex *rx;       /* string: its pattern, or NULL */
	bool bounded;              /* number: minimum, maximum or the exclusive ones given */
	double lo, hi;             /* ... the bounds (+-inf when absent; whole for integers) */
	bool lo_open, hi_open;     /* ... exclusive ones */
	double step;               /* integer: multipleOf (a whole number), or 0 */
	uint8_t start[32];         /* the bytes a value may begin with (a bit each) */
};

struct js_schema {
	struct js_node *node;
	int n, cap;
	int root;
	bool bare; /* js_choice: the root's lits are the texts themselves, unquoted */
};

/* Sorts w, sets the lengths and keeps one of each text (an enum's values, choices).
 * 0, or -1 (err_set). */
int js_words_set(struct js_words *w);

/* The string formats followed (jsonschema_format.c). */
enum js_format {
	JS_F_DATE = 1,
	JS_F_TIME,
	JS_F_DATE_TIME,
	JS_F_UUID,
	JS_F_EMAIL,
	JS_F_IPV4,
	JS_N_FORMATS
};

/* The format's number for its name, or 0 when it is not followed. */
int js_format_id(const char *name);

/* Whether s[0..len) begins a string of the format (plain ASCII, no escapes); *whole
 * when it is one. */
bool js_format_prefix(int format, const char *s, size_t len, bool *whole);

/* A pattern (jsonschema_regex.c), read a character at a time: the state is a set
 * of its positions (uint64_t[2]), begun by js_regex_start. */
struct js_regex;

/* The pattern's len bytes compiled, or NULL with *why saying what is not supported. */
struct js_regex *js_regex_compile(const char *pattern, size_t len, const char **why);
void js_regex_free(struct js_regex *rx);

/* Some string it matches has need to room characters. */
bool js_regex_fits(const struct js_regex *rx, uint32_t need, uint32_t room);
void js_regex_start(uint64_t set[2]);

/* Some character in [lo, hi] may come next, with an end of the pattern need to room
 * characters after it. */
bool js_regex_may(const struct js_regex *rx, const uint64_t set[2], uint32_t lo, uint32_t hi,
		  uint32_t need, uint32_t room);

/* The set moved over character c, with need and room as above: false when nothing
 * takes it. */
bool js_regex_step(const struct js_regex *rx, uint64_t set[2], uint32_t c, uint32_t need,
		   uint32_t room);

/* The ranges of characters its classes hold, every position's: what a character
 * read may be tried against. */
int js_regex_ranges(const struct js_regex *rx);

/* The string may end here. */
bool js_regex_ends(const struct js_regex *rx, const uint64_t set[2]);

/* A string's character in [lo, hi] (whole: the one read, lo == hi), where nd (NULL
 * for a free key) keeps a pattern: p->rx moved over it, or some such character
 * possible, with a rest that ends the pattern within nd's minLength and maxLength
 * (p->chars counts the character). */
bool js_rx_char(struct js_path *p, const struct js_node *nd, uint32_t lo, uint32_t hi, bool whole);

/* js_rx_char of a UTF-8 character read as far as p->cp (p->utf8 bytes due, the next
 * within p->lo..p->hi), and of a \u escape's digits so far (p->next due; p->cp holds
 * a surrogate pair's first half). */
bool js_rx_utf8(struct js_path *p, const struct js_node *nd);
bool js_rx_hex(struct js_path *p, const struct js_node *nd);

/* Node i's start bytes, from its types, values and alternatives (those first); a
 * oneOf whose alternatives may match one value together is refused. state[i]: 0 not
 * yet, 1 under way (an alternative that leads back to it is refused), 2 done. 0, or
 * -1 with err_set. */
int js_starts_of(struct js_schema *sc, int i, uint8_t *state);

static inline bool js_starts(const struct js_node *nd, unsigned char c)
{
	return nd->start[c >> 3] >> (c & 7) & 1;
}

#endif
