/* jsonschema.h — whether bytes are the start of a JSON value that a JSON Schema allows.
 *
 * A sampler that must write JSON asks, of every token it could draw next, whether the
 * text would still be the beginning of some value the schema accepts: it copies the
 * state (js_copy: the header and the open containers), feeds the token's bytes to the
 * copy, and keeps the token only when that succeeds. JSON mode is the schema
 * {"type": "object"} (js_object). Strings must be well-formed UTF-8 (a character may
 * be split between tokens) and their \u escapes whole characters, as jansson and
 * Python read them.
 *
 * The schema is compiled first (js_compile). What is followed: type (one or a list),
 * enum, const, properties, required, additionalProperties, items, prefixItems (a
 * tuple's values, as pydantic writes tuple[int, str]), uniqueItems (of an enum's
 * values: set[Literal[...]]), minItems, maxItems,
 * minLength, maxLength, pattern (jsonschema_regex.c: the syntax ECMA-262 and Python
 * read alike; with minLength up to 128 and maxLength, not with a format), minimum,
 * maximum, exclusiveMinimum, exclusiveMaximum, multipleOf (of integers, by a whole
 * number), format (date, time, date-time, uuid, email and ipv4), anyOf, oneOf whose
 * alternatives a value cannot match together (they begin with different characters,
 * or they are objects that a required property with different string constants tells
 * apart, as pydantic's discriminated unions are), allOf of one schema, and $ref to a
 * place in the same document ("#/$defs/Name", recursion too). Annotations (title,
 * description, default, examples, discriminator, ...) are ignored. Any other keyword
 * is an error: an answer the schema would refuse is never written.
 *
 * Alternatives that begin alike (pydantic's Union of two models: two objects) are read
 * side by side: the state holds one path per reading still possible, up to
 * JS_MAX_PATHS (an anyOf with more alternatives that begin alike is refused; nested
 * ones past that many readings keep the first); a path the bytes rule out is dropped,
 * and paths that come to the same place are kept once.
 *
 * Two choices make the language smaller than the schema's, never larger: an object
 * whose schema lists properties gets those keys only (each once, in any order; the
 * required ones before it closes), as strict structured outputs have them; a value
 * of an enum or const is written as jansson writes it compactly; and a number with
 * bounds is written without an exponent, in at most JS_MAX_NUMBER characters. */
#ifndef QWENCHAT_BASE_JSONSCHEMA_H
#define QWENCHAT_BASE_JSONSCHEMA_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Objects and arrays nested deeper are refused, and so are longer runs of whitespace
 * between tokens: a model that drifts into whitespace (the common failure of JSON
 * modes) would otherwise fill its max_tokens with it, where indented JSON needs a
 * newline and two or four spaces a level. An object lists at most JS_MAX_PROPERTIES
 * properties (a bit each records that its key was written). */
enum {
	JS_MAX_DEPTH = 64,
	JS_MAX_SPACE = 64,
	JS_MAX_PROPERTIES = 64,
	JS_MAX_NUMBER = 24,    /* the characters of a number with bounds */
	JS_MAX_TEXT = 40,      /* ... and of a kept text: that number or a formatted string */
	JS_MAX_PATHS = 16,     /* readings kept side by side (more: the first ones) */
	JS_RX_MAX = 128,       /* a pattern's positions: characters to match, written out */
	JS_RX_LENS = 256,      /* ... the lengths of a rest each knows (minLength: half) */
	JS_MAX_PATTERNS = 256, /* patterns in one schema (each takes some 8 KB) */
};

struct js_schema;

/* The schema v compiled, or NULL (err_set: "where: what", where being `name` and the
 * path of keywords down to the one at fault, "schema.properties.age.minimum"). */
struct js_schema *js_compile(json_t *v, const char *name);

/* The JSON Schema in file `path` compiled, its JSON in *json (to json_decref), or
 * NULL (err_set naming the file and the line or keyword: "PATH: schema.minimum: ..."). */
struct js_schema *js_load(const char *path, json_t **json);

/* {"type": "object"}: any JSON object (JSON mode). */
struct js_schema *js_object(void);

/* The text is one of choices, a non-empty array of strings, exactly: no quotes, no
 * whitespace around it (vLLM's guided_choice). NULL with err_set ("where: what", where
 * being `name`, "name[2]" for a choice at fault). */
struct js_schema *js_choice(json_t *choices, const char *name);

/* The text matches the pattern, a regular expression as a schema's "pattern" reads
 * them (jsonschema_regex.c), whole: as Python's re.fullmatch (vLLM's guided_regex;
 * a ^ first and a $ last are taken as said). NULL with err_set ("name: what"). */
struct js_schema *js_regex_text(const char *pattern, size_t len, const char *name);

void js_free(struct js_schema *sc);

/* An open object or array. */
struct js_frame {
	uint16_t node;  /* its schema */
	bool object;    /* an object, else an array */
	uint32_t count; /* an array's values begun so far */
	uint64_t used;  /* an object's listed keys written so far (bit: sorted index), or
			 * an array's enum values, where each may come once */
};

/* One reading of the bytes so far. */
struct js_path {
	const struct js_schema *sc;
	uint8_t at;           /* where in the grammar: jsonschema_match.c's enum js_at */
	uint8_t next;         /* a literal's next byte index, a \u escape's hex digits due */
	uint8_t lit;          /* which literal: 0 true, 1 false, 2 null */
	uint8_t utf8;         /* continuation bytes due in a string */
	uint8_t lo, hi;       /* the range of the next continuation byte */
	uint8_t space;        /* whitespace bytes in a row, outside strings */
	uint8_t depth;        /* objects and arrays open */
	bool key;             /* what is read is a key (free, or matched: listed ones) */
	bool low;             /* the \u escape read is a surrogate pair's second half */
	uint16_t node;        /* the schema of the value being read */
	uint16_t code;        /* a \u escape's value so far */
	uint16_t first, last; /* enum values or keys still matching: sorted indices */
	uint32_t pos;         /* ... their bytes matched so far */
	uint32_t chars;       /* characters in the string so far */
	uint32_t cp;          /* a pattern's string: the character begun (its bits so far) */
	uint64_t rx[2];       /* ... and the pattern's positions (jsonschema_regex.c) */
	uint8_t text_len;     /* a number with bounds or a formatted string: its text */
	char text[JS_MAX_TEXT];
	struct js_frame frame[JS_MAX_DEPTH];
};

/* What has been read: the readings of it still possible (one, unless alternatives of
 * an anyOf begin alike). */
struct js_state {
	int n;
	struct js_path path[JS_MAX_PATHS];
};

/* The state before any byte: one value of sc is expected. */
void js_init(struct js_state *p, const struct js_schema *sc);

/* *dst = *src, the live paths and their open containers' frames only. */
void js_copy(struct js_state *dst, const struct js_state *src);

/* Reads n bytes on from p. False as soon as a byte cannot continue a value of the
 * schema; p is then unspecified (feed a copy to try a token). */
bool js_feed(struct js_state *p, const char *s, size_t n);

/* The bytes so far are a whole value, by some reading (whitespace may follow it; a
 * number may also go on). */
bool js_done(const struct js_state *p);

/* ... and closed, by every reading: nothing but whitespace may follow (an object, an
 * array, a string, a literal; a number once a byte past it came). */
bool js_closed(const struct js_state *p);

/* The characters in bytes a string may hold as they are (whole UTF-8 characters, none
 * of them a quote, a backslash or a control character), or 0 when it may not. Fed to
 * a state between two characters of a string with no fixed values, such bytes leave
 * it as it was but for the count: a sampler may pass a token of at most
 * js_string_room characters there without feeding it (most of a vocabulary is
 * words). */
size_t js_string_chars(const char *s, size_t n);
uint32_t js_string_room(const struct js_state *p);

#endif
