/* markdown.c — light Markdown in the answers, drawn rather than shown: **bold**,
 * *italic*, ***both***, `inline code` (``with ` inside``), "# headings" and "- list
 * items". Code blocks are the view's (VL_CODE) and untouched. The markers are not
 * drawn; a display line that starts in the middle of a logical line (word wrap)
 * takes the attributes the line's text before it left open, so a bold phrase cut by
 * the wrap stays bold. */
#include <curses.h>
#include <string.h>

#include "ui/markdown.h"
#include "ui/uistate.h"

/* The length of the run of backticks at s[0..n). */
static size_t ticks(const char *s, size_t n)
{
	size_t k = 0;
	while (k < n && s[k] == '`')
		k++;
	return k;
}

/* Whether s[0..n) holds a run of exactly len backticks (a code span's end). */
static bool has_run(const char *s, size_t n, size_t len)
{
	for (size_t i = 0; i < n;) {
		size_t k = ticks(s + i, n - i);
		if (k == len)
			return true;
		i += k ? k : 1;
	}
	return false;
}

/* A code span, as CommonMark reads one: a run of N backticks opens it when a run of
 * exactly N follows on the line, and that run closes it; other runs are text, inside
 * a span ("``a ` b``") and out of one (a lone "`"). */
static size_t code_marker(const char *s, size_t n, const char *line, struct md_state *st,
			  bool apply)
{
	if (s > line && s[-1] == '`')
		return 0; /* inside a run of text backticks */
	size_t k = ticks(s, n);
	if (st->code ? k != st->code_len : !has_run(s + k, n - k, k))
		return 0;
	if (apply) {
		st->code = !st->code;
		st->code_len = k;
	}
	return k;
}

/* Whether a marker of k asterisks at s opens an emphasis: a non-space follows it, and
 * it starts the line or follows a space or "(". */
static bool opens_at(const char *s, size_t n, const char *line, size_t k)
{
	return n > k && s[k] != ' ' && (s == line || s[-1] == ' ' || s[-1] == '(');
}

/* Whether a marker at s closes an open emphasis: it follows a non-space. */
static bool closes_at(const char *s, const char *line)
{
	return s > line && s[-1] != ' ';
}

size_t md_marker(const char *s, size_t n, const char *line, struct md_state *st, bool apply)
{
	if (s[0] == '`')
		return code_marker(s, n, line, st, apply);
	if (st->code)
		return 0;
	/* ***bold italic***: both at once, opening as *italic* opens and closing what
	 * both left open */
	if (n >= 3 && s[0] == '*' && s[1] == '*' && s[2] == '*') {
		bool opens = !st->bold && !st->italic && opens_at(s, n, line, 3);
		bool closes = st->bold && st->italic && closes_at(s, line);
		if (opens || closes) {
			if (apply)
				st->bold = st->italic = opens;
			return 3;
		}
	}
	if (n >= 2 && s[0] == '*' && s[1] == '*') {
		if (apply)
			st->bold = !st->bold;
		return 2;
	}
	/* *italic*: opens before a non-space, closes after one ("2 * 3" is not) */
	if (s[0] == '*') {
		bool opens = opens_at(s, n, line, 1);
		bool closes = st->italic && closes_at(s, line);
		if (opens || closes) {
			if (apply)
				st->italic = !st->italic;
			return 1;
		}
	}
	return 0;
}

static attr_t attrs(const struct md_state *st, attr_t base)
{
	if (st->code)
		return draw_pair(C_MD_CODE);
	return base | (st->bold ? A_BOLD : 0) | (st->italic ? A_ITALIC : 0);
}

size_t md_line_kind(const char *line, size_t n, bool *heading, bool *item)
{
	size_t i = 0;
	*heading = *item = false;
	while (i < n && line[i] == '#' && i < 6)
		i++;
	if (i > 0 && i < n && line[i] == ' ') {
		*heading = true;
		return i + 1;
	}
	i = strspn(line, " ");
	if (i + 1 < n && (line[i] == '-' || line[i] == '*' || line[i] == '+') &&
	    line[i + 1] == ' ') {
		*item = true;
		return i + 2;
	}
	return 0;
}

int md_put(struct ui *u, int y, int x, const char *line, const char *end, const char *s, size_t n,
	   int cols, attr_t base)
{
	size_t line_n = (size_t)(s - line) + n;
	bool heading, item;
	size_t hide = md_line_kind(line, line_n, &heading, &item);
	if (heading)
		base |= A_BOLD;
	struct md_state st = {0};
	for (const char *p = line + hide; p < s;) { /* the state the wrap left open */
		size_t m = md_marker(p, (size_t)(end - p), line, &st, true);
		p += m ? m : 1;
	}
	int used = 0;
	move(y, x);
	if (s == line && hide) { /* the marker itself: nothing, or a bullet */
		if (item) {
			size_t indent = strspn(line, " ");
			attrset(base);
			used += draw_put(y, x, line, indent, cols);
			used += draw_put(y, x + used, ui_glyph(u, "\xe2\x80\xa2 ", "- "),
					 u->ascii ? 2 : 4, cols - used);
		}
		/* an item indented past the row: the row holds only part of it */
		s += hide < n ? hide : n;
		n -= hide < n ? hide : n;
	}
	while (n > 0 && used < cols) {
		/* a '*' at the row's end opens italic by what follows on the next row */
		size_t look = (size_t)(end - s), m = md_marker(s, look, line, &st, false);
		if (m) {
			md_marker(s, look, line, &st, true);
			s += m;
			n -= m;
			continue;
		}
		size_t run = 1; /* up to the next marker */
		while (run < n && s[run] != '`' && s[run] != '*')
			run++;
		attrset(attrs(&st, base));
		/* a run of no width (a zero-width space, a lone accent) still goes by */
		used += draw_put_at(y, x + used, used, s, run, cols - used);
		s += run;
		n -= run;
	}
	attrset(A_NORMAL);
	return used;
}
