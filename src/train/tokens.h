/* tokens.h — the token ids of a data file, as perplexity and training read them: a
 * UTF-8 text file is one document (encoded as plain text, end-of-text appended), a
 * JSON Lines file (tokens_is_jsonl) holds {"text": ...} records, a document each, and
 * a "*.u32" file is little-endian uint32 ids taken as they are. */
#ifndef QWENCHAT_TOKENS_H
#define QWENCHAT_TOKENS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct tok;

/* The largest file tokens_read_file reads (bytes): memory, not this, is the limit. */
#define TOKENS_MAX_FILE ((size_t)-1 / 4)

/* True when path names a token-id file (its name ends in ".u32", in any case). */
bool tokens_is_u32(const char *path);

/* True when path names JSON Lines of text records: ".jsonl" or ".ndjson" in any case,
 * or a regular file named ".json" whose first non-blank line is such a record. */
bool tokens_is_jsonl(const char *path);

/* The id that ends a document: <|endoftext|> (Qwen's and GPT-2's separator, which
 * the Qwen3 chat models keep as their pad token), else tokenizer_config.json's
 * eos_token when it is one of tk's tokens. -1 with err_set when tk has neither. */
int32_t tokens_eot(const struct tok *tk);

/* Token ids of data[0..len): consecutive little-endian uint32, each < vocab. *ids is
 * malloc'd (never NULL on success, even for 0 ids). 0, or -1 with err_set naming the
 * byte offset of the first bad id, or of the partial id at the end when len is not a
 * multiple of 4. */
int tokens_from_u32(const void *data, size_t len, int vocab, int32_t **ids, size_t *n);

/* Token ids of text[0..len) as one document: ill-formed UTF-8 becomes U+FFFD (as in
 * the chat), special-token strings in it are text (tok_encode_literal: a
 * "<|im_start|>" in the data is those characters, not the control token), then,
 * when eot_after, tokens_eot (perplexity --no-eot scores a text's own tokens alone,
 * with a tokenizer that may have no such token). Every id must be < vocab (the
 * model's embedding rows). tk is not const: encoding caches pieces in it. *ids
 * malloc'd. 0 or -1 (err_set). */
int tokens_from_text(struct tok *tk, int vocab, bool eot_after, const char *text, size_t len,
		     int32_t **ids, size_t *n);

/* The documents of JSON Lines text (a Hugging Face dataset's Dataset.to_json()): each
 * non-blank line (a UTF-8 byte-order mark before the first, a carriage return at its
 * end and blank lines left out) an object whose "text" string is one document,
 * tokens_from_text of each in turn; the other members are ignored. 0, or -1 with
 * err_set naming the line that is not such a record. */
int tokens_from_jsonl(struct tok *tk, int vocab, bool eot_after, const char *text, size_t len,
		      int32_t **ids, size_t *n);

/* Calls fn with the "text" of each record of the JSON Lines file at path, read a line
 * at a time (memory grows with the longest line, not with the file), until fn
 * returns non-zero. 0, or -1 with err_set starting with path (and the line). */
int tokens_jsonl_each(const char *path, int (*fn)(void *user, const char *text, size_t len),
		      void *user);

/* 0, or -1 with err_set when ids (n of them, read from a *.u32 file) look like 8-byte
 * integers read 4 bytes at a time: at least 64 of them, every second one 0 and some
 * other not (a little-endian int64 id is its value and a 0). */
int tokens_check_width(const int32_t *ids, size_t n);

/* The ids of a text file's contents data[0..len) as tokens_read_file reads them (path,
 * "-" for stdin, says which form: JSON Lines, or a *.json of conversations refused).
 * 0, or -1 with err_set (the caller names the file). */
int tokens_from_contents(const char *path, struct tok *tk, int vocab, bool eot_after,
			 const char *data, size_t len, int32_t **ids, size_t *n);

/* Appends the ids of the *.u32 file at path (a regular file) to *ids, of *n, growing
 * the block to hold them and reading the file into it: a stream of several files never
 * holds one of them twice. 0, or -1 with err_set starting with path (*ids may have
 * moved and grown; *n is as it was). */
int tokens_append_u32(const char *path, int vocab, int32_t **ids, size_t *n);

/* Reads path ("-": stdin, as text) and gives its ids: tokens_from_u32 when
 * tokens_is_u32(path); when tokens_is_jsonl(path), tokens_from_text of each non-blank
 * line's "text" (other members ignored; a line that is not such a record is an error
 * naming it); else tokens_from_text of the file (tk may be NULL for a .u32 file). 0,
 * or -1 with err_set starting with path. */
int tokens_read_file(const char *path, struct tok *tk, int vocab, bool eot_after, int32_t **ids,
		     size_t *n);

#endif
