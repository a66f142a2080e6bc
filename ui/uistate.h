/* uistate.h — the UI's state shared by its files (ui.c, input.c, draw.c, debug.c,
 * markdown.c). */
#ifndef QWENCHAT_UI_STATE_H
#define QWENCHAT_UI_STATE_H

#include <curses.h>
#include <stdbool.h>
#include <stddef.h>

#include "src/app/app.h"
#include "ui/view.h"

enum { DEBUG_OFF, DEBUG_ATTENTION, DEBUG_MEMORY, DEBUG_PROBS, DEBUG_MODES };

struct ui {
	struct app *a;
	struct view v;
	int stream_block; /* view block being generated, -1 when none */
	int debug;        /* DEBUG_* */
	int att_layer, att_head;
	int prob_scroll;   /* probabilities view: rows scrolled up from the newest */
	bool confirm_quit; /* Ctrl-C on an empty line: asking */
	bool quit, dirty;
	bool told_dropped; /* this turn's "older turns left the context" is shown */
	bool ascii;        /* the locale is not UTF-8: ASCII borders and marks */
	char hint[512];    /* a passing message in the key hint line */
	char save_said[256]; /* the autosave failure told in the conversation, "" if none */
	unsigned waits_told; /* the busy server's waits told (app_figures.waits) */
	char *restore;     /* text to put back into the input line */
	struct app_figures fig;
	size_t last_nlines; /* layout size at the last frame (scroll anchoring) */
	char *history_path;

	/* Key input (input.c). */
	unsigned char kb[256]; /* bytes read, not yet decoded */
	size_t klen;
	bool pasting;
	bool paste_cut;    /* the last paste was ended by IN_PASTE_IDLE, its end not seen */
	bool paste_resumed; /* this paste is the bytes that came after such a stall */
	double paste_seen; /* when the paste's last bytes came (clock_now) */
	char *paste; /* bracketed paste being collected */
	size_t paste_n, paste_cap;
	unsigned char rq[64]; /* bytes queued for readline's getc */
	size_t rq_head, rq_len;
};

/* A mark drawn by the UI: the UTF-8 one, or its ASCII stand-in when the locale is
 * not UTF-8 (curses would show the bytes as ~T~B). */
static inline const char *ui_glyph(const struct ui *u, const char *utf8, const char *ascii)
{
	return u->ascii ? ascii : utf8;
}

/* Colour pairs (draw.c sets them up). */
enum {
	C_USER = 1,
	C_ASSIST,
	C_REASON,
	C_CODE,
	C_SYSTEM,
	C_ERROR,
	C_NOTICE,
	C_STATUS,
	C_WARN,
	C_MD_CODE
};

/* draw.c: at most cols columns of s[0..n) at (y, x), control characters as '?', but
 * a carriage return takes no column (models write CRLF line ends, and the view breaks
 * lines at the LF) and a tab reaches the next stop; returns the columns used. s
 * starts a line of text: its tab stops count from x. */
int draw_put(int y, int x, const char *s, size_t n, int cols);
/* The same for text that starts col columns into its line of text. */
int draw_put_at(int y, int x, int col, const char *s, size_t n, int cols);

/* markdown.c: the display line s[0..n) of the answer line [line, end), with light
 * Markdown drawn (bold, italic, inline code, headings, list bullets), its markers
 * read as the layout reads them, with the whole line after them in sight; base is
 * the line's own attribute. Returns the columns used. */
int md_put(struct ui *u, int y, int x, const char *line, const char *end, const char *s, size_t n,
	   int cols, attr_t base);

/* ui.c */
void ui_submit(struct ui *u, char *line);
void ui_cancel_or_quit(struct ui *u);
void ui_set_debug(struct ui *u, int mode);

/* input.c */
void in_init(struct ui *u);
void in_done(struct ui *u);
/* history.c: the input history file. */
/* Reads it into readline's list (multi-line entries kept whole; an older file with a
 * line per entry is converted); anything but a regular file there is not read. */
void in_history_load(const char *path);
/* Appends one entry (0600; not through a link, not to a FIFO). */
void in_history_append(const char *path, const char *line);
/* At exit: the file cut to its last 1,000 entries, or, where there is none (or a
 * link), written from readline's list. */
void in_history_trim(const char *path);
/* Readline completion of slash commands (also for the plain mode). */
void in_completion(void);
/* Edits of recalled history lines undone when a line is sent (also for the plain
 * mode), so the history stays as sent. */
void in_history_keep(void);
/* Left, Right, Backspace and Delete by grapheme cluster (a flag, an emoji with its
 * skin tone, a letter and its accents), not by code point; bytes past ASCII typed as
 * text in every locale, never taken for Meta keys. */
void in_editing_keys(void);
/* Decodes u->kb; flush: the bytes so far are all there is (a lone Esc is Esc). */
void in_process(struct ui *u, bool flush);
/* A bracketed paste whose end marker has not come after IN_PASTE_IDLE seconds without
 * a byte (a terminal or a link lost it) is ended: its text waits in the input line,
 * unsent. The bytes that come next are taken for the rest of it (a slow link), up to
 * its end marker or another such quiet second; then the keys are keys again. */
#define IN_PASTE_IDLE 1.0
void in_paste_idle(struct ui *u);

/* draw.c */
/* Colours unless the terminal has none or no_color (NO_COLOR) asks for none. */
void draw_init(bool no_color);
/* A colour pair's attribute; without colours A_REVERSE for the status bar, else none. */
attr_t draw_pair(int pair);
void draw_frame(struct ui *u);

/* debug.c */
void debug_draw(struct ui *u, int y, int x, int h, int w);

#endif
