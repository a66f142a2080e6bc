/* sigbus.h — a model file that shrinks while it is mapped (truncated, rewritten in
 * place, a network file system gone) makes the next read of its weights raise SIGBUS.
 * This turns that into one line naming the file and exit status 1. */
#ifndef QWENCHAT_CLI_SIGBUS_H
#define QWENCHAT_CLI_SIGBUS_H

#include <stdbool.h>

/* Installs the handler and remembers the terminal's settings now, to restore them
 * when the full-screen UI was on screen. Call once, early. */
void sigbus_guard(void);

/* Whether the full-screen UI is up: its modes are then undone before the message.
 * While it is, a signal that would end the program without a word (SIGQUIT, SIGUSR1,
 * SIGALRM, a crash's SIGSEGV or SIGABRT...) first gives the terminal back the same
 * way, the program still dying of that signal. */
void sigbus_fullscreen(bool on);

/* What the message adds in parentheses (the chat's "the conversation was saved after
 * the last turn"; NULL: nothing). note must outlive the program's use of it. */
void sigbus_note(const char *note);

/* A function, async-signal-safe, that removes what the command was writing (a
 * temporary file, a new run's first files) before the program exits; NULL: none. */
void sigbus_cleanup(void (*fn)(void));

#endif
