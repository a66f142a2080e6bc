/* sigbus.h — a model file that shrinks while it is mapped (truncated, rewritten in
 * place, a network file system gone) makes the next read of its weights raise SIGBUS.
 * This turns that into one line naming the file and exit status 1. */
#ifndef QWENCHAT_CLI_SIGBUS_H
#define QWENCHAT_CLI_SIGBUS_H

#include <stdbool.h>

/* Installs the handler and remembers the terminal's settings now, to restore them
 * when the full-screen UI was on screen. Call once, early. */
void sigbus_guard(void);

/* Whether the full-screen UI is up: its modes are then undone before the message. */
void sigbus_fullscreen(bool on);

#endif
