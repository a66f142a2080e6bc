/* ui.h — the terminal front ends of the chat: the ncurses UI and, for --plain on
 * a terminal, the line mode with readline. Only src/cli/main.c calls these. */
#ifndef QWENCHAT_UI_H
#define QWENCHAT_UI_H

#include "src/app/app.h"

#include <stdbool.h>
#include <stddef.h>

/* What the environment asks of the full-screen chat (the command line reads it). */
struct ui_options {
	bool no_color; /* NO_COLOR is set: no colours, attributes only */
};

/* Whether the terminal of type term ($TERM, NULL when unset) on stdout can hold the
 * full-screen chat: its terminfo entry must move the cursor anywhere. When not, why
 * gets the reason ("TERM=dumb cannot move the cursor") and the caller goes on in the
 * line mode. */
bool ui_term_usable(const char *term, char *why, size_t n);

/* Runs the full-screen chat until the user leaves; notices (may be empty) are
 * shown first. Returns an exit status. */
int ui_main(struct app *a, const char *notices, const struct ui_options *o);

/* The plain line mode (src/app/plain.c) with readline editing and the history file. */
int ui_plain(struct app *a);

#endif
