/* jsonlimit.c — nesting and value counts of a JSON text in one pass over its bytes,
 * strings skipped (jsonlimit.h). */
#include "src/base/jsonlimit.h"

#include <stdbool.h>
#include <stdlib.h>

#include "src/base/err.h"
#include "src/base/fileio.h"

/* Where the scan is in the top-level object, for the member callback. */
struct top {
	bool object;       /* the text is an object */
	bool want_key;     /* the next string at depth 1 is a key */
	size_t key, key_n; /* the key being read or last read (offset, length) */
	size_t value;      /* offset of its value, or 0 before the ':' */
};

static int member_end(const struct jlim *l, const char *s, struct top *t, size_t at)
{
	if (!l->member || !t->value)
		return 0;
	int rc = l->member(l->user, s + t->key, t->key_n, at - t->value);
	t->value = 0;
	return rc;
}

/* The index of the quote that closes the string whose text starts at s[i], or n. */
static size_t string_end(const char *s, size_t n, size_t i)
{
	for (; i < n; i++) {
		if (s[i] == '\\')
			i++; /* the escaped character, a quote too */
		else if (s[i] == '"')
			return i;
	}
	return n;
}

static int too_deep(const struct jlim *l, const char *name)
{
	return err_set("%s%sJSON nested deeper than %d levels", name ? name : "", name ? ": " : "",
		       l->max_depth);
}

int jlim_check(const char *s, size_t n, const struct jlim *l, const char *name)
{
	int depth = 0, rc;
	size_t values = 0;
	bool want_value = true;
	struct top t = {0};
	for (size_t i = 0; i < n; i++) {
		char c = s[i];
		switch (c) {
		case ' ':
		case '\t':
		case '\n':
		case '\r': continue;
		case '"': {
			size_t end = string_end(s, n, i + 1);
			if (depth == 1 && t.want_key) {
				t.key = i + 1;
				t.key_n = end - t.key;
				t.want_key = false;
			}
			i = end;
			break;
		}
		case '[':
		case '{':
			if (++depth > l->max_depth)
				return too_deep(l, name);
			if (depth == 1 && c == '{')
				t.object = t.want_key = true;
			break;
		case ']':
		case '}':
			if (depth == 1 && t.object && (rc = member_end(l, s, &t, i)))
				return rc;
			depth--;
			want_value = false;
			continue;
		case ':':
			if (depth == 1 && t.object)
				t.value = i + 1;
			want_value = true;
			continue;
		case ',':
			if (depth == 1 && t.object) {
				if ((rc = member_end(l, s, &t, i)))
					return rc;
				t.want_key = true;
			}
			want_value = true;
			continue;
		default:
			if (!want_value)
				continue; /* the rest of a number or literal */
		}
		/* a value (or key) starts here */
		want_value = c == '[' || c == '{';
		if (++values > l->max_values)
			return err_set("%s%smore than %zu JSON values", name ? name : "",
				       name ? ": " : "", l->max_values);
	}
	return 0;
}

size_t jlim_value_len(const char *s, size_t n)
{
	size_t i = 0;
	while (i < n && (s[i] == ' ' || s[i] == '\t' || s[i] == '\n' || s[i] == '\r'))
		i++;
	int depth = 0;
	for (; i < n; i++) {
		char c = s[i];
		if (c == '"') {
			if ((i = string_end(s, n, i + 1)) == n)
				return 0;
			if (depth == 0)
				return i + 1;
		} else if (c == '[' || c == '{') {
			depth++;
		} else if (c == ']' || c == '}') {
			if (depth == 0) /* a scalar's end, or a close with nothing open */
				return i;
			if (--depth == 0)
				return i + 1;
		} else if (depth == 0 &&
			   (c == ',' || c == ' ' || c == '\t' || c == '\n' || c == '\r')) {
			return i; /* the end of a number or literal */
		}
	}
	return 0;
}

char *jlim_read_file(const char *path, size_t max_bytes, const struct jlim *l, size_t *len)
{
	size_t n;
	char *text = fio_read_file(path, max_bytes, &n);
	if (text && jlim_check(text, n, l, path)) {
		free(text);
		return NULL;
	}
	if (text && len)
		*len = n;
	return text;
}
