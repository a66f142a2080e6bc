/* tokens.c — a data file's token ids: .u32 files checked id by id, text encoded as one
 * plain-text document with end-of-text appended, JSON Lines as one such document a
 * record. */
#include "src/train/tokens.h"
#include "src/base/err.h"
#include "src/base/fileio.h"
#include "src/base/jsonlimit.h"
#include "src/base/utf8.h"
#include "tokenizer/tokenizer.h"

#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

bool tokens_is_u32(const char *path)
{
	return fio_has_ext(path, ".u32");
}

int32_t tokens_eot(const struct tok *tk)
{
	int id = tok_id(tk, "<|endoftext|>");
	if (id >= 0)
		return id;
	const char *eos = tok_eos_token(tk);
	if (eos && (id = tok_id(tk, eos)) >= 0)
		return id;
	return err_set("the tokenizer has no end-of-text token (no <|endoftext|>%s%s%s; "
		       "train-bpe --chat or --special '<|endoftext|>' makes one with it)",
		       eos ? ", and its eos_token \"" : ", no eos_token", eos ? eos : "",
		       eos ? "\" is not one of its tokens" : "");
}

/* The id at p (4 bytes, little-endian). */
static uint32_t id_at(const unsigned char *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* Checks len bytes of ids below vocab. */
static int check_u32(const unsigned char *p, size_t len, int vocab)
{
	if (len % 4)
		return err_set("%zu bytes are not a whole number of 4-byte token ids (byte offset "
			       "%zu starts a partial one)",
			       len, len - len % 4);
	for (size_t i = 0; i < len / 4; i++) {
		uint32_t v = id_at(p + 4 * i);
		if (v >= (uint32_t)vocab)
			return err_set("byte offset %zu: token id %lu is not below the model's "
				       "vocab_size %d",
				       4 * i, (unsigned long)v, vocab);
	}
	return 0;
}

int tokens_from_u32(const void *data, size_t len, int vocab, int32_t **ids, size_t *n)
{
	const unsigned char *p = data;
	*ids = NULL;
	*n = 0;
	if (check_u32(p, len, vocab))
		return -1;
	/* checked first, filled after: a bad file costs no allocation of its size */
	size_t count = len / 4;
	int32_t *v = malloc(count ? count * sizeof *v : 1);
	if (!v)
		return err_set("out of memory for %zu token ids", count);
	for (size_t i = 0; i < count; i++)
		v[i] = (int32_t)id_at(p + 4 * i);
	*ids = v;
	*n = count;
	return 0;
}

int tokens_from_text(struct tok *tk, int vocab, bool eot_after, const char *text, size_t len,
		     int32_t **ids, size_t *n)
{
	*ids = NULL;
	*n = 0;
	int32_t eot = eot_after ? tokens_eot(tk) : -1;
	if (eot_after && eot < 0)
		return -1;
	if (eot >= vocab)
		return err_set("the end-of-text token id %d is not below the model's vocab_size %d",
			       (int)eot, vocab);
	size_t clean_len = utf8_replaced_len(text, len);
	char *clean = NULL;
	if (clean_len) {
		if (len > (size_t)-1 / 3 || !(clean = malloc(clean_len)))
			return err_set("out of memory for %zu bytes of text", len);
		utf8_replace_ill_formed(text, len, clean);
		text = clean;
		len = clean_len;
	}
	/* all of it literal: special-token strings in data are text, as a user's typing is */
	struct tok_span all = {0, len};
	size_t k = 0;
	int32_t *v = tok_encode_literal(tk, text, len, &all, 1, &k);
	free(clean);
	if (!v)
		return -1;
	int32_t *grown = realloc(v, (k + 1) * sizeof *v);
	if (!grown) {
		free(v);
		return err_set("out of memory for %zu token ids", k + 1);
	}
	v = grown;
	if (eot_after)
		v[k++] = eot;
	for (size_t i = 0; i < k; i++)
		if (v[i] < 0 || v[i] >= vocab) {
			int32_t bad = v[i];
			free(v);
			return err_set("token %zu: the tokenizer gave id %d, not below the model's "
				       "vocab_size %d (the tokenizer is not this model's)",
				       i, (int)bad, vocab);
		}
	*ids = v;
	*n = k;
	return 0;
}

/* A record of JSON Lines (p[0..len), line `line`), parsed: *text is its "text"
 * string, which lives as long as the record. Its cost to parse is bounded first (a
 * line of nested brackets is not a reason to run out of memory); the other members,
 * a dataset's metadata, are parsed and left alone. NULL with err_set naming the line. */
static json_t *record(const char *p, size_t len, size_t line, const char **text, size_t *tlen)
{
	static const struct jlim lim = {.max_depth = 64, .max_values = 1 << 20};
	if (jlim_check(p, len, &lim, "the record")) {
		err_prefix("line %zu", line);
		return NULL;
	}
	json_error_t je;
	/* any value, so that a number or a string is named "not a JSON object"; integers
	 * as reals, so that metadata beyond int64 (a uint64 hash) is not a refusal */
	json_t *r = json_loadb(p, len, JSON_DECODE_ANY | JSON_DECODE_INT_AS_REAL, &je),
	       *t = json_object_get(r, "text");
	if (!r && strstr(je.text, "JSON_ALLOW_NUL")) /* text holds no NUL, as a text file */
		err_set("line %zu: a NUL character (\\u0000) at column %d", line, je.column);
	else if (!r)
		err_set("line %zu: not JSON: %s (column %d)", line, je.text, je.column);
	else if (!json_is_string(t))
		err_set("line %zu: %s (a line of a *.jsonl file is a {\"text\": ...} record, one "
			"document; conversations train with train --sft)",
			line,
			!json_is_object(r) ? "not a JSON object"
			: t                ? "\"text\" is not a string"
					   : "no \"text\" member");
	if (!json_is_string(t)) {
		json_decref(r);
		return NULL;
	}
	*text = json_string_value(t);
	*tlen = json_string_length(t);
	return r;
}

/* The line of JSON Lines at p (m bytes, its newline left off), without the byte-order
 * mark the first may start with; false when it is blank (a carriage return before the
 * newline is white space to the parser too). */
static bool content(const char **p, size_t *m, size_t line)
{
	if (line == 1 && *m >= 3 && !memcmp(*p, "\xef\xbb\xbf", 3)) { /* a mark, not text */
		*p += 3;
		*m -= 3;
	}
	size_t blank = 0;
	while (blank < *m && ((*p)[blank] == ' ' || (*p)[blank] == '\t' || (*p)[blank] == '\r'))
		blank++;
	return blank < *m;
}

/* Whether JSON text holds conversations, which a text file's reader would take for
 * their markup: its first value, or the first element of an array, is an object of
 * "messages", ShareGPT's "conversations", Alpaca's "instruction", or an OpenAI
 * message (an array of them). Only that value is parsed, within limits. */
static bool conversations(const char *text, size_t len)
{
	static const struct jlim lim = {.max_depth = 64, .max_values = 1 << 20};
	size_t pos = len >= 3 && !memcmp(text, "\xef\xbb\xbf", 3) ? 3 : 0;
	while (pos < len && (text[pos] == ' ' || text[pos] == '\t' || text[pos] == '\r' ||
			     text[pos] == '\n'))
		pos++;
	bool array = pos < len && text[pos] == '[';
	pos += array;
	size_t n = pos < len ? jlim_value_len(text + pos, len - pos) : 0;
	if (!n || jlim_check(text + pos, n, &lim, "json")) {
		err_clear();
		return false;
	}
	json_t *v = json_loadb(text + pos, n, JSON_DECODE_ANY | JSON_DECODE_INT_AS_REAL, NULL);
	bool yes = json_is_object(v) &&
		   (json_object_get(v, "messages") || json_object_get(v, "conversations") ||
		    json_object_get(v, "instruction") ||
		    (array && json_object_get(v, "role") && json_object_get(v, "content")));
	json_decref(v);
	return yes;
}

int tokens_from_jsonl(struct tok *tk, int vocab, bool eot_after, const char *text, size_t len,
		      int32_t **ids, size_t *n)
{
	int32_t *all = malloc(sizeof *all);
	size_t count = 0, cap = 1, line = 0;
	if (!all)
		return err_set("out of memory");
	for (size_t pos = 0; pos < len;) {
		const char *p = text + pos, *nl = memchr(p, '\n', len - pos), *t;
		size_t m = nl ? (size_t)(nl - p) : len - pos, tl, k;
		pos += m + (nl ? 1 : 0);
		if (!content(&p, &m, ++line))
			continue;
		int32_t *v = NULL;
		json_t *r = record(p, m, line, &t, &tl);
		int rc = r ? tokens_from_text(tk, vocab, eot_after, t, tl, &v, &k) : -1;
		if (r && rc)
			err_prefix("line %zu", line);
		json_decref(r);
		if (rc) {
			free(all);
			return -1;
		}
		if (count + k > cap) {
			size_t nc = cap * 2 > count + k ? cap * 2 : count + k;
			int32_t *g = realloc(all, nc * sizeof *g);
			if (!g) {
				free(v);
				free(all);
				return err_set("line %zu: out of memory for %zu token ids", line,
					       nc);
			}
			all = g;
			cap = nc;
		}
		memcpy(all + count, v, k * sizeof *v);
		count += k;
		free(v);
	}
	*ids = all;
	*n = count;
	return 0;
}

int tokens_jsonl_each(const char *path, int (*fn)(void *user, const char *text, size_t len),
		      void *user)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return err_set("%s: %s", path, strerror(errno));
	char *buf = NULL;
	size_t cap = 0, line = 0;
	ssize_t got;
	int rc = 0;
	while (!rc && (got = getline(&buf, &cap, f)) >= 0) {
		const char *p = buf, *t;
		size_t m = (size_t)got - (got > 0 && buf[got - 1] == '\n'), tl;
		if (!content(&p, &m, ++line))
			continue;
		json_t *r = record(p, m, line, &t, &tl);
		rc = r ? fn(user, t, tl) : -1;
		json_decref(r);
	}
	if (!rc && ferror(f))
		rc = err_set("line %zu: %s", line + 1, strerror(errno));
	free(buf);
	fclose(f);
	return rc ? err_prefix("%s", path) : 0;
}

/* The first record read: *user is set, and the reading stops there. */
static int first_record(void *user, const char *text, size_t len)
{
	(void)text;
	(void)len;
	*(bool *)user = true;
	return 1;
}

/* Whether a *.json file is JSON Lines of text records, as Dataset.to_json("x.json")
 * writes them: its first non-blank line is an object with a "text" string. Only a
 * regular file is looked at: a FIFO's first line would be gone for its reader. */
static bool json_file_is_records(const char *path)
{
	bool yes = false;
	if (fio_is_file(path))
		tokens_jsonl_each(path, first_record, &yes);
	err_clear();
	return yes;
}

bool tokens_is_jsonl(const char *path)
{
	return fio_has_ext(path, ".jsonl") || fio_has_ext(path, ".ndjson") ||
	       (fio_has_ext(path, ".json") && json_file_is_records(path));
}

int tokens_check_width(const int32_t *ids, size_t n)
{
	if (n < 64)
		return 0; /* too few to tell */
	bool low = false;
	for (size_t i = 0; i + 1 < n; i += 2) {
		if (ids[i + 1] != 0)
			return 0;
		low |= ids[i] != 0;
	}
	return low ? err_set("every second id is 0: the ids look like 8-byte integers (int64); "
			     "write them as 4-byte ones (numpy: ids.astype(\"<u4\").tofile(F))")
		   : 0;
}

int tokens_from_contents(const char *path, struct tok *tk, int vocab, bool eot_after,
			 const char *data, size_t len, int32_t **ids, size_t *n)
{
	bool jsonl = strcmp(path, "-") && tokens_is_jsonl(path);
	if (!jsonl && fio_has_ext(path, ".json") && conversations(data, len))
		return err_set("conversations (JSON of messages, ShareGPT or Alpaca records), not "
			       "text: train them with train --sft (or name the file *.txt to read "
			       "its JSON as text)");
	return jsonl ? tokens_from_jsonl(tk, vocab, eot_after, data, len, ids, n)
		     : tokens_from_text(tk, vocab, eot_after, data, len, ids, n);
}

/* The bytes p[0..len) of a *.u32 file, checked (check_u32), turned into the int32 ids
 * they hold where they lie. 0, or -1 with err_set. */
static int ids_in_place(unsigned char *p, size_t len, int vocab)
{
	if (check_u32(p, len, vocab))
		return -1;
	for (size_t i = 0; i < len / 4; i++) {
		int32_t v = (int32_t)id_at(p + 4 * i);
		memcpy(p + 4 * i, &v, sizeof v);
	}
	return 0;
}

int tokens_append_u32(const char *path, int vocab, int32_t **ids, size_t *n)
{
	int fd = fio_open_file(path, NULL);
	struct stat st;
	if (fd < 0)
		return -1;
	if (fstat(fd, &st) != 0) {
		int e = errno;
		close(fd);
		return err_set("%s: %s", path, strerror(e));
	}
	if ((uint64_t)st.st_size > TOKENS_MAX_FILE) {
		close(fd);
		return err_set("%s: %lld bytes, more than can be read", path,
			       (long long)st.st_size);
	}
	size_t len = (size_t)st.st_size, got = 0;
	/* grown to what the file holds (a large block moves without a copy), read in place */
	int32_t *g = realloc(*ids, (*n + len / 4 + 1) * sizeof *g);
	if (!g) {
		close(fd);
		return err_set("%s: out of memory for %zu token ids", path, *n + len / 4);
	}
	*ids = g;
	unsigned char *p = (unsigned char *)(g + *n);
	while (got < len) {
		ssize_t r = read(fd, p + got, len - got);
		if (r <= 0 && !(r < 0 && errno == EINTR)) {
			close(fd);
			return err_set("%s: %s", path,
				       r < 0 ? strerror(errno) : "shorter than when it was opened");
		}
		got += r > 0 ? (size_t)r : 0;
	}
	close(fd);
	if (ids_in_place(p, len, vocab))
		return err_prefix("%s", path);
	*n += len / 4;
	return 0;
}

int tokens_read_file(const char *path, struct tok *tk, int vocab, bool eot_after, int32_t **ids,
		     size_t *n)
{
	*ids = NULL;
	*n = 0;
	bool u32 = strcmp(path, "-") && tokens_is_u32(path);
	if (!u32 && !tk)
		return err_set("%s: a text file needs the model's tokenizer", path);
	size_t len = 0;
	char *data = fio_read_all(path, TOKENS_MAX_FILE, &len);
	if (!data)
		return -1; /* the message names path */
	if (u32) {
		/* the ids in the file's own buffer (malloc'd, so aligned for them): a stream of
		 * a third of the memory is not held twice */
		if (ids_in_place((unsigned char *)data, len, vocab)) {
			free(data);
			return err_prefix("%s", path);
		}
		*ids = (int32_t *)(void *)data;
		*n = len / 4;
		return 0;
	}
	int rc = tokens_from_contents(path, tk, vocab, eot_after, data, len, ids, n);
	free(data);
	return rc ? err_prefix("%s", path) : 0;
}
