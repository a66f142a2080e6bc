/* jsonprefix.h — whether bytes are the start of one JSON object (RFC 8259).
 *
 * A sampler that must write JSON asks, of every token it could draw next, whether the
 * text would still be the beginning of some JSON object: it copies the state (a few
 * bytes), feeds the token's bytes to the copy, and keeps the token only when that
 * succeeds. Strings must be well-formed UTF-8 (a character may be split between
 * tokens), as JSON text must be. */
#ifndef QWENCHAT_BASE_JSONPREFIX_H
#define QWENCHAT_BASE_JSONPREFIX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Objects and arrays nested deeper are refused, and so are longer runs of whitespace
 * between tokens: a model that drifts into whitespace (the common failure of JSON
 * modes) would otherwise fill its max_tokens with it, where indented JSON needs a
 * newline and two or four spaces a level. */
enum { JP_MAX_DEPTH = 64, JP_MAX_SPACE = 64 };

struct jp {
	uint8_t at;       /* where in the grammar: jsonprefix.c's enum jp_at */
	uint8_t next;     /* a literal's next byte index, a \u escape's hex digits due */
	uint8_t lit;      /* which literal: 0 true, 1 false, 2 null */
	uint8_t utf8;     /* continuation bytes due in a string */
	uint8_t lo, hi;   /* the range of the next continuation byte */
	uint8_t depth;    /* objects and arrays open */
	uint8_t space;    /* whitespace bytes in a row, outside strings */
	bool key;         /* the string being read is an object's key */
	uint64_t objects; /* bit d: the container at depth d + 1 is an object */
};

/* The state before any byte: one JSON object is expected. */
void jp_init(struct jp *p);

/* Reads n bytes on from p. False as soon as a byte cannot continue a JSON object;
 * p is then unspecified (feed a copy to try a token). */
bool jp_feed(struct jp *p, const char *s, size_t n);

/* The bytes so far are a whole JSON object (whitespace may follow it). */
bool jp_done(const struct jp *p);

/* Bytes a string may hold as they are: whole UTF-8 characters, none of them a quote,
 * a backslash or a control character. Fed to a state that jp_in_string finds between
 * two characters of a string, they leave it as it was: a sampler may pass such a
 * token there without feeding it (most of a vocabulary is words). */
bool jp_string_safe(const char *s, size_t n);
bool jp_in_string(const struct jp *p);

#endif
