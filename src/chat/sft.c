/* sft.c — conversations read from files, rendered, tokenized and their answers marked
 * for supervised fine-tuning. */
#include "src/chat/sft.h"
#include "src/base/err.h"
#include "src/base/fileio.h"
#include "src/base/utf8.h"
#include "src/base/jsonlimit.h"
#include "src/base/jsontype.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A conversation file larger than this is refused before it is read: memory, not
 * this, is the limit. */
#define SFT_MAX_FILE ((size_t)-1 / 4)

/* Output of sft_encode as it grows. */
struct encoded {
	int32_t *ids;
	unsigned char *scored;
	size_t n, cap;
};

/* Tokenizes text[a, b) with the message spans in it literal, appending to e. *next is
 * the first message span that may overlap [a, b) (spans are sorted). */
static int encode_piece(struct tok *t, const char *text, size_t a, size_t b,
			const struct tmpl_spans *msg, size_t *next, bool scored, struct encoded *e)
{
	if (a == b)
		return 0;
	struct tok_span *lit = malloc((msg->n ? msg->n : 1) * sizeof *lit);
	if (!lit)
		return err_set("out of memory tokenizing the conversation");
	size_t k = 0;
	while (*next < msg->n && msg->v[*next].end <= a)
		(*next)++;
	for (size_t i = *next; i < msg->n && msg->v[i].start < b; i++) {
		size_t s = msg->v[i].start > a ? msg->v[i].start : a;
		size_t x = msg->v[i].end < b ? msg->v[i].end : b;
		lit[k++] = (struct tok_span){s - a, x - a};
	}
	size_t m = 0;
	int32_t *ids = tok_encode_literal(t, text + a, b - a, lit, k, &m);
	free(lit);
	if (!ids)
		return -1;
	if (e->n + m > e->cap) {
		size_t cap = e->cap * 2 > e->n + m ? e->cap * 2 : e->n + m + 64;
		int32_t *gi = realloc(e->ids, cap * sizeof *gi);
		if (gi)
			e->ids = gi;
		unsigned char *gs = gi ? realloc(e->scored, cap) : NULL;
		if (!gs) {
			free(ids);
			return err_set("out of memory for %zu tokens", cap);
		}
		e->scored = gs;
		e->cap = cap;
	}
	if (m) {
		memcpy(e->ids + e->n, ids, m * sizeof *ids);
		memset(e->scored + e->n, scored ? 1 : 0, m);
		e->n += m;
	}
	free(ids);
	return 0;
}

int sft_encode(struct tok *t, const struct chat *c, enum tmpl_variant v, int32_t **ids,
	       unsigned char **scored, size_t *n)
{
	*ids = NULL;
	*scored = NULL;
	*n = 0;
	struct tmpl_spans msg = {0}, ans = {0};
	size_t len;
	char *text = tmpl_render_answers(c, v, &len, &msg, &ans);
	struct encoded e = {0};
	int rc = text ? 0 : -1;
	size_t pos = 0, next = 0;
	/* context, answer, context, answer, ..., context: the answers' bounds are where
	 * generation starts and where <|im_end|> (a control token) ends it. Each assistant
	 * turn renders as one answer, in order: an untrained one is context. */
	size_t turn = 0;
	for (size_t i = 0; !rc && i <= ans.n; i++) {
		size_t start = i < ans.n ? ans.v[i].start : len;
		rc = encode_piece(t, text, pos, start, &msg, &next, false, &e);
		while (turn < c->n && c->turns[turn].role != CHAT_ASSISTANT)
			turn++;
		bool trained = turn >= c->n || !c->turns[turn++].untrained;
		if (!rc && i < ans.n)
			rc = encode_piece(t, text, start, ans.v[i].end, &msg, &next, trained, &e);
		if (i < ans.n)
			pos = ans.v[i].end;
	}
	free(text);
	free(msg.v);
	free(ans.v);
	if (rc) {
		free(e.ids);
		free(e.scored);
		return -1;
	}
	if (!e.ids) { /* nothing at all: still an allocation, as the API promises */
		e.ids = malloc(sizeof *e.ids);
		e.scored = malloc(1);
		if (!e.ids || !e.scored) {
			free(e.ids);
			free(e.scored);
			return err_set("out of memory");
		}
	}
	*ids = e.ids;
	*scored = e.scored;
	*n = e.n;
	return 0;
}

static bool is_space(char ch)
{
	return ch == ' ' || ch == '\t' || ch == '\n' || ch == '\r';
}

static size_t skip_space(const char *text, size_t len, size_t pos)
{
	while (pos < len && is_space(text[pos]))
		pos++;
	return pos;
}

/* Whether path holds JSON Lines: named *.jsonl or *.ndjson, or text[0..len) holds
 * another JSON value after its first one, which takes one line. */
static bool sft_is_json_lines(const char *path, const char *text, size_t len)
{
	if (fio_has_ext(path, ".jsonl") || fio_has_ext(path, ".ndjson"))
		return true;
	size_t end = jlim_value_len(text, len); /* the bytes the first value takes */
	size_t start = skip_space(text, len, 0);
	if (!end || (end > start && memchr(text + start, '\n', end - start)))
		return false; /* one value (a line of JSON Lines is one line): its parse
			         names the error, and where */
	return skip_space(text, len, end) < len;
}

typedef int conv_fn(void *user, const struct chat *c, const char *where);

/* The 1-based line and column of byte off of text. */
static void line_col(const char *text, size_t off, size_t *line, size_t *col)
{
	*line = 1, *col = 1;
	for (size_t i = 0; i < off; i++)
		if (text[i] == '\n')
			++*line, *col = 1;
		else
			++*col;
}

/* One JSON value p[0..n), a conversation or a record of one, checked, parsed and
 * given to fn. A parse error names the column of a line of JSON Lines (file NULL), or
 * the line and column in file, where p lies (a record of an array). */
static int one_value(const char *p, size_t n, const char *where, const char *file, conv_fn *fn,
		     void *user)
{
	if (jlim_check(p, n, &chat_json_limits, where))
		return -1;
	json_error_t je;
	json_t *v = json_loadb(p, n, JSON_DECODE_ANY, &je);
	if (!v && file) {
		size_t line, col;
		line_col(file, (size_t)(p - file), &line, &col);
		return err_set("%s: invalid JSON at line %zu, column %zu: %s", where,
			       line + (size_t)(je.line > 1 ? je.line - 1 : 0),
			       je.line > 1 ? (size_t)je.column : col - 1 + (size_t)je.column,
			       jsontype_error(&je));
	}
	if (!v) /* the column, not jansson's "line 1" of a one-line text */
		return err_set("%s: invalid JSON at column %d: %s", where, je.column,
			       jsontype_error(&je));
	struct chat *c = sft_chat_from_value(v, where); /* parsed once */
	json_decref(v);
	if (!c)
		return -1;
	int rc = fn(user, c, where);
	chat_free(c);
	return rc;
}

/* Each non-blank line of text as a conversation. */
static int read_lines(const char *path, const char *text, size_t len, conv_fn *fn, void *user)
{
	size_t line = 0;
	for (size_t pos = 0; pos < len;) {
		const char *p = text + pos, *nl = memchr(p, '\n', len - pos);
		size_t n = nl ? (size_t)(nl - p) : len - pos;
		pos += n + (nl ? 1 : 0);
		line++;
		size_t s = 0;
		while (s < n && is_space(p[s]))
			s++;
		if (s == n)
			continue;
		char where[4200];
		snprintf(where, sizeof where, "%s:%zu", path, line);
		int rc = one_value(p, n, where, NULL, fn, user);
		if (rc)
			return rc;
	}
	return 0;
}

/* Whether text is a JSON array of records ([{"instruction": ...}, ...], as
 * alpaca_data.json and ShareGPT dumps come) rather than of one conversation's
 * messages: its first element is an object naming messages, conversations or an
 * instruction. */
static bool is_records(const char *text, size_t len)
{
	size_t pos = skip_space(text, len, 0);
	if (pos == len || text[pos] != '[')
		return false;
	pos = skip_space(text, len, pos + 1);
	size_t n = jlim_value_len(text + pos, len - pos);
	if (!n || jlim_check(text + pos, n, &chat_json_limits, NULL)) {
		err_clear();
		return false;
	}
	json_t *first = json_loadb(text + pos, n, 0, NULL);
	bool yes = json_is_object(first) && !json_object_get(first, "role") &&
		   (json_object_get(first, "messages") || json_object_get(first, "conversations") ||
		    json_object_get(first, "instruction"));
	json_decref(first);
	return yes;
}

/* Each element of a JSON array of records as a conversation (where = "FILE: record
 * N"), each checked and parsed apart: a file of many records is not one large value. */
static int read_records(const char *path, const char *text, size_t len, conv_fn *fn, void *user)
{
	size_t pos = skip_space(text, len, 0) + 1; /* after the '[' */
	for (size_t i = 1;; i++) {
		char where[4200];
		snprintf(where, sizeof where, "%s: record %zu", path, i);
		size_t n = jlim_value_len(text + pos, len - pos);
		if (!n)
			return err_set("%s: the file ends inside it", where);
		int rc = one_value(text + pos, n, where, text, fn, user);
		if (rc)
			return rc;
		pos = skip_space(text, len, pos + n);
		size_t at = pos, line, col; /* where a refusal points (counted then only) */
		if (pos < len && text[pos] == ',') {
			pos = skip_space(text, len, pos + 1);
			if (pos == len || text[pos] != ']')
				continue;
			line_col(text, at, &line, &col);
			return err_set(
				"%s: a ',' and then the array's end (line %zu, column %zu): a "
				"trailing comma is not JSON",
				where, line, col);
		}
		if (pos < len && text[pos] == ']' && skip_space(text, len, pos + 1) == len)
			return 0;
		line_col(text, at, &line, &col);
		return err_set("%s: %s at line %zu, column %zu", where,
			       pos < len && text[pos] == ']' ? "text after the array's end"
							     : "',' or the array's end expected",
			       line, col);
	}
}

/* Whether path is read as plain text (named *.txt or *.md): its non-blank lines are
 * paragraphs, each asked and answered by the next. */
static bool sft_is_plain_text(const char *path)
{
	return fio_has_ext(path, ".txt") || fio_has_ext(path, ".md");
}

/* Whether text[0..len) is text: no NUL byte, and ill-formed UTF-8 (which becomes
 * U+FFFD) at most 1% of it; else it is something else (UTF-16, a binary) and training
 * on it would be training on noise. */
static int check_plain_text(const char *path, const char *text, size_t len)
{
	const char *nul = memchr(text, 0, len);
	if (nul)
		return err_set("%s: not UTF-8 text: a NUL byte at byte %zu", path,
			       (size_t)(nul - text));
	size_t bad_bytes = 0;
	for (size_t pos = 0; pos < len;) {
		size_t valid, bad;
		utf8_next_piece(text + pos, len - pos, &valid, &bad);
		pos += valid;
		if (pos < len) {
			bad_bytes += bad;
			pos += bad;
		}
	}
	if (bad_bytes * 100 > len)
		return err_set("%s: not UTF-8 text: %zu of its %zu bytes are not UTF-8", path,
			       bad_bytes, len);
	return 0;
}

/* The next non-blank line of text[*pos..len), without the white space around it:
 * [*a, *b), its number *line. false at the end. */
static bool next_paragraph(const char *text, size_t len, size_t *pos, size_t *line, size_t *a,
			   size_t *b)
{
	while (*pos < len) {
		const char *p = text + *pos, *nl = memchr(p, '\n', len - *pos);
		size_t n = nl ? (size_t)(nl - p) : len - *pos;
		*a = *pos;
		*b = *pos + n;
		*pos += n + (nl ? 1 : 0);
		++*line;
		while (*a < *b && is_space(text[*a]))
			++*a;
		while (*b > *a && is_space(text[*b - 1]))
			--*b;
		if (*a < *b)
			return true;
	}
	return false;
}

/* A text file as conversations: each non-blank line (a paragraph) asked, the next one
 * answered, so that every paragraph but the first is an answer once and a model
 * trained on them learns the text and where a turn ends. */
static int read_paragraphs(const char *path, const char *text, size_t len,
			   int (*fn)(void *user, const struct chat *c, const char *where),
			   void *user)
{
	if (check_plain_text(path, text, len))
		return -1;
	size_t pos = 0, line = 0, a, b, pa = 0, pb = 0;
	bool have_prev = false;
	int rc = 0;
	while (!rc && next_paragraph(text, len, &pos, &line, &a, &b)) {
		if (have_prev) {
			char where[4200];
			snprintf(where, sizeof where, "%s:%zu", path, line);
			char *q = strndup(text + pa, pb - pa), *ans = strndup(text + a, b - a);
			struct chat *c = q && ans ? chat_new() : NULL;
			if (!c || chat_add(c, CHAT_USER, q, NULL) ||
			    chat_add(c, CHAT_ASSISTANT, ans, NULL))
				rc = err_set("%s: out of memory", where);
			else
				rc = fn(user, c, where);
			chat_free(c);
			free(q);
			free(ans);
		}
		pa = a;
		pb = b;
		have_prev = true;
	}
	return rc;
}

int sft_read_text(const char *path, const char *text, size_t len,
		  int (*fn)(void *user, const struct chat *c, const char *where), void *user)
{
	if (len >= 3 && !memcmp(text, "\xef\xbb\xbf", 3)) { /* a byte-order mark, not text */
		text += 3;
		len -= 3;
	}
	if (sft_is_plain_text(path))
		return read_paragraphs(path, text, len, fn, user);
	if (sft_is_json_lines(path, text, len))
		return read_lines(path, text, len, fn, user);
	if (is_records(text, len))
		return read_records(path, text, len, fn, user);
	size_t first = skip_space(text, len, 0); /* [] holds no record, not an empty one */
	if (first < len && text[first] == '[') {
		size_t end = skip_space(text, len, first + 1);
		if (end < len && text[end] == ']' && skip_space(text, len, end + 1) == len)
			return 0;
	}
	struct chat *c = sft_chat_from_json(text, len, path);
	int rc = c ? fn(user, c, path) : -1;
	chat_free(c);
	return rc;
}

int sft_read_file(const char *path, int (*fn)(void *user, const struct chat *c, const char *where),
		  void *user)
{
	size_t len = 0;
	char *text = fio_read_all(path, SFT_MAX_FILE, &len);
	if (!text)
		return -1;
	int rc = sft_read_text(path, text, len, fn, user);
	free(text);
	return rc;
}
