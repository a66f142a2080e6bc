/* wrap.c — breaking --help's text at spaces to fit 80 columns. */
#include "src/cli/wrap.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

static int columns(const char *s, size_t n)
{
	int c = 0;
	for (size_t i = 0; i < n; i++)
		c += ((unsigned char)s[i] & 0xC0) != 0x80; /* UTF-8 continuation bytes add none */
	return c;
}

/* The end of the word at s[i..n): the next space outside brackets. */
static size_t word_end(const char *s, size_t i, size_t n)
{
	int depth = 0;
	for (; i < n && (s[i] != ' ' || depth > 0); i++)
		depth += s[i] == '[' ? 1 : s[i] == ']' && depth > 0 ? -1 : 0;
	return i;
}

/* Writes the words of s[0..n) from column col (nothing of the line written yet when
 * col == indent) while they fit, with the spaces between them as they are (a column
 * lined up by hand stays so); returns where the first word that does not fit starts
 * (n when all did). At least one word is written on an empty line. */
static size_t put_fitting(FILE *f, const char *s, size_t n, int col, int indent, int width)
{
	bool first = true;
	size_t i = 0, gap = 0;
	while (i < n && s[i] == ' ')
		i++;
	while (i < n) {
		size_t j = word_end(s, i, n);
		int w = columns(s + i, j - i);
		bool empty = first && col == indent;
		if (!empty && col + (int)gap + w > width)
			return i;
		fwrite(s + i - gap, 1, j - i + gap, f);
		col += (int)gap + w;
		first = false;
		for (i = j; i < n && s[i] == ' '; i++) {
		}
		gap = i - j;
	}
	return n;
}

void wrap_paragraph(FILE *f, const char *text, int col, int indent)
{
	char *s = strdup(text);
	if (!s) { /* out of memory: as written */
		fputs(text, f);
		return;
	}
	for (char *p = s; *p; p++)
		if (*p == '\n')
			*p = ' ';
	size_t n = strlen(s), i = put_fitting(f, s, n, col, indent, WRAP_WIDTH);
	while (i < n) {
		fprintf(f, "\n%*s", indent, "");
		i += put_fitting(f, s + i, n - i, indent, indent, WRAP_WIDTH);
	}
	free(s);
}

static int leading_spaces(const char *s, size_t n)
{
	int k = 0;
	while ((size_t)k < n && s[k] == ' ')
		k++;
	return k;
}

/* Writes the line carry + line[0..n) (carry first, then a space) indented by indent,
 * broken as wrap_lines says; what does not fit is left in carry. */
static void put_line(FILE *f, char **carry, const char *line, size_t n, int indent, int width)
{
	if (!*carry && indent + columns(line, n) <= width) { /* as written */
		fprintf(f, "%*s", indent, "");
		fwrite(line, 1, n, f);
		fputc('\n', f);
		return;
	}
	size_t cn = *carry ? strlen(*carry) : 0, tn = cn + (cn && n ? 1 : 0) + n;
	char *t = malloc(tn + 1);
	if (!t) { /* out of memory: the words as they are, the carry spent */
		fprintf(f, "%*s%s%s", indent, "", *carry ? *carry : "", *carry && n ? " " : "");
		fwrite(line, 1, n, f);
		fputc('\n', f);
		free(*carry);
		*carry = NULL;
		return;
	}
	memcpy(t, *carry ? *carry : "", cn);
	if (cn && n)
		t[cn] = ' ';
	memcpy(t + tn - n, line, n);
	t[tn] = '\0';
	free(*carry);
	*carry = NULL;
	fprintf(f, "%*s", indent, "");
	size_t i = put_fitting(f, t, tn, indent, indent, width);
	fputc('\n', f);
	if (i < tn)
		*carry = strdup(t + i); /* NULL when out of memory: the rest is lost */
	free(t);
}

void wrap_lines_width(FILE *f, const char *text, int hang, int width)
{
	char *carry = NULL; /* the words a broken line had left */
	int carry_indent = 0;
	for (const char *p = text; *p;) {
		const char *nl = strchr(p, '\n');
		size_t n = nl ? (size_t)(nl - p) : strlen(p);
		int lead = leading_spaces(p, n);
		bool blank = lead == (int)n;
		/* the rest of a broken line ends where its paragraph does */
		while (carry && (blank || lead != carry_indent))
			put_line(f, &carry, "", 0, carry_indent, width);
		if (blank) {
			fwrite(p, 1, n, f);
			fputc('\n', f);
		} else {
			bool continued = carry != NULL;
			put_line(f, &carry, p + lead, n - (size_t)lead, lead, width);
			if (!continued)
				carry_indent = lead + hang;
		}
		p += n + (nl != NULL);
	}
	while (carry)
		put_line(f, &carry, "", 0, carry_indent, width);
}

void wrap_lines(FILE *f, const char *text, int hang)
{
	wrap_lines_width(f, text, hang, WRAP_WIDTH);
}
