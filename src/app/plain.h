/* plain.h — the chat without curses (--plain, or when stdin/stdout is not a
 * terminal): lines in, streamed text out, the same slash commands as the UI. */
#ifndef QWENCHAT_PLAIN_H
#define QWENCHAT_PLAIN_H

#include "src/app/app.h"

/* Reads one line without its newline (malloc'd), or NULL at end of input, or after a
 * read error (said on stderr, and *failed set). prefill (may be NULL) is text to
 * start the line with, when the reader can (/edit). */
typedef char *(*plain_read_fn)(const char *prompt, const char *prefill, bool *failed);

/* The getline reader: no editing, prefill is printed instead. */
char *plain_getline(const char *prompt, const char *prefill, bool *failed);

/* Runs the conversation until end of input, /quit, SIGTERM or SIGHUP (an answer
 * under way stops and is kept, as with Ctrl-C). Returns an exit status: 128 + the
 * signal after one of those. */
int plain_main(struct app *a, plain_read_fn read_line);

/* SIGTERM or SIGHUP when plain_main received one, else 0: for a line reader that
 * must give up waiting (readline retries reads a signal interrupts). */
int plain_stop_signal(void);

/* When the last autosave failed, or the last /save wrote nothing: says so on stderr (a
 * chat that ends must not lose a turn without a word) and returns true, for an exit
 * status of 1. */
bool plain_unsaved(struct app *a);

#endif
