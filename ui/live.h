/* live.h — a few lines kept below a terminal's scrolling output and redrawn in place
 * (the panel of `qwenchat train`), with the messages that must stay printed above
 * them. The cursor moves and the clearing come from the terminal's terminfo entry;
 * the caller decides what the lines say. Only src/cli/ calls these. */
#ifndef QWENCHAT_LIVE_H
#define QWENCHAT_LIVE_H

#include <stdbool.h>

struct live;

/* A live area on the terminal fd, whose type term names ($TERM): NULL when fd is no
 * terminal, term has no terminfo entry, or the terminal cannot redraw in place (it
 * lacks moving the cursor up or clearing to the end of the line or of the screen, as
 * TERM=dumb does). Nothing is drawn yet. One area at a time. Where stdin is the same
 * terminal and the program is in its foreground, the terminal's echo is off until
 * live_close (or exit), so that typed keys do not land in the lines. */
struct live *live_open(int fd, const char *term);

/* The columns a line may take: the terminal's width, asked again at every call (so a
 * resized terminal gets lines of its new width). */
int live_columns(struct live *l);

/* Replaces the lines on screen by text's (lines separated by '\n'); a line wider than
 * the terminal is cut at its width. The first draw hides the cursor. */
void live_draw(struct live *l, const char *text);

/* Prints msg (lines ending in '\n'; control characters are shown, not obeyed) where
 * the lines are, and draws them again below it. */
void live_print(struct live *l, const char *msg);

/* Leaves the lines on screen with the cursor, visible again, on the line below them.
 * Frees l (NULL is a no-op). */
void live_close(struct live *l);

/* For signal handlers: async-signal-safe, about the area open now, if any, once it
 * has drawn. */
/* Writes msg (ASCII) over the last line until the next draw; false when no area is
 * showing (then the caller says it its own way). */
bool live_signal_note(const char *msg);
/* The cursor shown and the echo given back (before the program stops or dies; the
 * cursor is then put on a line of its own below the area) or hidden and off again
 * (after it was continued, if in the foreground). */
void live_signal_cursor(bool visible);
/* The program was stopped and continued: the shell wrote below the area meanwhile, so
 * the next draw starts afresh where the cursor is. */
void live_signal_lost(void);

#endif
