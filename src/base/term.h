/* term.h — text from untrusted sources (a conversation file, the model's output, a
 * file name) made safe to print on a terminal: no escape sequence in it can retitle,
 * clear or write the clipboard of the terminal that shows it. And the terminal's
 * width. */
#ifndef QWENCHAT_TERM_H
#define QWENCHAT_TERM_H

#include <stddef.h>
#include <stdio.h>

#include "src/base/strbuf.h"

/* Appends s[0..n) to b with every control character made visible: the C0 controls
 * but newline and tab in caret notation (ESC is "^[", BEL "^G"), DEL as "^?", the
 * C1 controls U+0080..U+009F and bytes that are not UTF-8 as U+FFFD. Everything
 * else is copied as it is. */
void term_safe(struct strbuf *b, const char *s, size_t n);

/* term_safe for what must stay one line (an error, a table row): a newline too is
 * shown as ^J. */
void term_safe_line(struct strbuf *b, const char *s, size_t n);

/* The columns of the terminal fd is, asked now (it may have been resized); 0 when fd
 * is no terminal or does not say. */
int term_columns(int fd);

/* Writes s[0..n) to f as term_safe makes it. 0, or EOF on a write error. */
int term_write_safe(FILE *f, const char *s, size_t n);

/* The OSC 52 sequence that asks the terminal to put s[0..n) on its clipboard
 * (ESC ] 52 ; c ; base64 BEL), which xterm, kitty, iTerm2, WezTerm, Windows
 * Terminal and tmux (set-clipboard) take. Malloc'd, NUL-terminated; NULL when out
 * of memory. */
char *term_osc52(const char *s, size_t n);

#endif
