/* markdown.h — the markers of the light Markdown in the answers, recognised alike by
 * the layout (view.c: they take no column, so a line wraps at what is drawn) and by
 * the drawing (markdown.c: they change the attributes). No curses here. */
#ifndef QWENCHAT_UI_MARKDOWN_H
#define QWENCHAT_UI_MARKDOWN_H

#include <stdbool.h>
#include <stddef.h>

/* What the markers of a logical line so far left open. */
struct md_state {
	bool bold, italic, code;
	size_t code_len; /* the backticks that opened the code span */
};

/* The length of the marker at s (n bytes left of the logical line starting at line)
 * that changes the state, or 0; apply: change st. */
size_t md_marker(const char *s, size_t n, const char *line, struct md_state *st, bool apply);

/* How the logical line line[0..n) starts: "# " headings (bold, the marker hidden),
 * "- ", "* " or "+ " items (drawn as a bullet of the same width); returns the bytes
 * of the marker (0: none). */
size_t md_line_kind(const char *line, size_t n, bool *heading, bool *item);

#endif
