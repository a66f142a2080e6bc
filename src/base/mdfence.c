/* mdfence.c — fenced code blocks (see mdfence.h). */
#include "src/base/mdfence.h"

#include <stdlib.h>
#include <string.h>

/* The run of c at s[0..n) after at most three spaces: its length (0 if none); *end
 * gets the offset past it. */
static size_t fence_run(const char *s, size_t n, char c, size_t *end)
{
	size_t i = 0;
	while (i < n && i < 3 && s[i] == ' ')
		i++;
	size_t k = i;
	while (k < n && s[k] == c)
		k++;
	*end = k;
	return k - i;
}

bool md_fence_open(const char *s, size_t n, struct md_fence *f)
{
	for (int t = 0; t < 2; t++) {
		char c = t ? '~' : '`';
		size_t end, len = fence_run(s, n, c, &end);
		if (len < 3)
			continue;
		if (c == '`' && memchr(s + end, '`', n - end))
			return false; /* "``` a ` b": inline code, not a fence */
		f->ch = c;
		f->len = len;
		return true;
	}
	return false;
}

bool md_fence_close(const char *s, size_t n, const struct md_fence *f)
{
	size_t end, len = fence_run(s, n, f->ch, &end);
	if (len < f->len)
		return false;
	while (end < n && (s[end] == ' ' || s[end] == '\t'))
		end++;
	return end == n;
}

char *md_code_block(const char *text, long n)
{
	struct md_fence f;
	bool in = false;
	long k = 0;
	const char *body = NULL;
	for (const char *s = text;;) {
		const char *nl = strchr(s, '\n');
		size_t len = nl ? (size_t)(nl - s) : strlen(s);
		if (!in && md_fence_open(s, len, &f)) {
			in = true;
			body = nl ? nl + 1 : s + len;
		} else if (in && md_fence_close(s, len, &f)) {
			if (++k == n) /* each line with its newline */
				return strndup(body, (size_t)(s - body));
			in = false;
		}
		if (!nl)
			break;
		s = nl + 1;
	}
	/* an unclosed block runs to the end of the text */
	return in && ++k == n ? strdup(body) : NULL;
}
