/* wrap.h — text for a terminal of 80 columns: --help's paragraphs and usage lines
 * (and info's lines, at the terminal's width) broken at spaces. Widths count
 * characters (the text has no wide ones). */
#ifndef QWENCHAT_WRAP_H
#define QWENCHAT_WRAP_H

#include <stdio.h>

enum { WRAP_WIDTH = 80 };

/* Writes text as one paragraph ('\n' is a space) to f, the cursor at column col,
 * broken at spaces so that no line passes WRAP_WIDTH; the lines after the first
 * start with indent spaces. A word wider than a line stays whole. */
void wrap_paragraph(FILE *f, const char *text, int col, int indent);

/* Writes text (lines ending in '\n', wrapped by hand) to f as it is, but for a line
 * wider than WRAP_WIDTH: it is broken at its last space that fits, and what is left
 * goes on to the start of the next line when that one is indented by the line's
 * indentation plus hang (the same paragraph), else on a line of its own indented so.
 * Spaces between '[' and ']' (a usage line's optional parts) are not broken at. */
void wrap_lines(FILE *f, const char *text, int hang);
/* wrap_lines for a line width of width columns (a terminal's). */
void wrap_lines_width(FILE *f, const char *text, int hang, int width);

#endif
