/* jscan.h — a strict pull scanner over one JSON text, for the big parts of tokenizer.json.
 *
 * jansson builds a tree with an allocation per value; for the 11 MB Qwen3
 * tokenizer.json (151k vocab entries, 151k merges) its parse and free alone took
 * more CPU than our whole load does, far more than a start-up may spend;
 * so model.vocab and model.merges are read with this scanner straight into the
 * tokenizer's tables, and only the small objects go to jansson as byte spans
 * (jscan_skip). */
#ifndef QWENCHAT_JSCAN_H
#define QWENCHAT_JSCAN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct jscan {
	const char *s; /* the whole text */
	size_t len, pos;
	char *buf; /* the last string read (unescaped, NUL-terminated) */
	size_t buf_len, buf_cap;
	const char *file;  /* for messages */
	const char *field; /* the field being read, for messages */
};

/* Sets up a scanner over s[0..len); file and field name where errors are. */
void jscan_init(struct jscan *j, const char *s, size_t len, const char *file);
void jscan_done(struct jscan *j);
/* Skips whitespace; returns the next byte without consuming it (0 at end). */
int jscan_peek(struct jscan *j);
/* Consumes the byte c (after whitespace), else -1 with an error. */
int jscan_expect(struct jscan *j, int c);
/* After '{' or '[' was read (or an element): true when another element follows
 * (consuming a ',' when not first), false at the closing byte (consumed). -1 on error. */
int jscan_more(struct jscan *j, int close, bool first);
/* Reads a string into j->buf (j->buf_len bytes; may hold NUL), checking UTF-8. */
int jscan_string(struct jscan *j);
/* Reads an integer in [lo, hi]. */
int jscan_int(struct jscan *j, int64_t lo, int64_t hi, int64_t *out);
/* Skips one value of any kind (nesting limited), checking its syntax; *start and
 * *end get its byte span. */
int jscan_skip(struct jscan *j, size_t *start, size_t *end);
/* Records "FILE: FIELD: WHAT at byte N" and returns -1. */
int jscan_error(struct jscan *j, const char *what);

#endif
