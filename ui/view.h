/* view.h — the screen model of the chat: the conversation as blocks of text, and
 * their layout into display lines of a given width (word wrap with the display
 * widths of utf8proc, so CJK and emoji take two columns). No curses here. */
#ifndef QWENCHAT_UI_VIEW_H
#define QWENCHAT_UI_VIEW_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "src/chat/chat.h"

enum vb_kind { VB_USER, VB_ASSISTANT, VB_SYSTEM, VB_TOOL, VB_NOTICE, VB_ERROR };

struct vb_text {
	char *s;
	size_t n, cap;
};


/* How a display line is drawn. */
enum vl_style {
	VL_BLANK,
	VL_USER_HEAD,
	VL_USER,
	VL_ASSIST_HEAD,
	VL_ASSIST,
	VL_REASON_HEAD,
	VL_REASON,
	VL_CODE,
	VL_SYSTEM_HEAD,
	VL_SYSTEM,
	VL_NOTICE,
	VL_ERROR,
};

struct vline {
	enum vl_style style;
	const char *s; /* into the block's text (or a static label) */
	int len;       /* bytes */
	int block;     /* index of the block, -1 for spacing */
	int indent;    /* columns before the text (a wrapped row of the help) */
};

/* Display lines, in order. */
struct vlines {
	struct vline *v;
	size_t n, cap;
};

struct vblock {
	enum vb_kind kind;
	struct vb_text reasoning, content;
	bool collapsed; /* reasoning folded to one line */
	bool streaming; /* being generated */
	bool gone;      /* no longer in the model's context (dropped to fit it) */
	/* The block's lines at its last layout and what they were laid out from: a
	 * block unchanged since is not laid out again, or every key press in a long
	 * conversation would wrap all of it. width 0: not laid out. */
	struct vlines laid;
	struct {
		int width;
		bool gone, folded;
		const char *reasoning, *content;
		size_t reasoning_n, content_n;
	} laid_from;
};

struct view {
	struct vblock *b;
	size_t n, cap;
	int scroll;          /* lines scrolled up from the bottom; 0 follows new text */
	bool show_reasoning; /* false: every reasoning block collapsed (/think hide) */
	struct vlines lines; /* the last layout */
};

/* Marks the first `turns` turns (a message and what follows it up to the next
 * message) as no longer in the model's context, and the rest as in it. */
void view_mark_gone(struct view *v, int turns);

void view_init(struct view *v);
void view_free(struct view *v);
/* Appends a block; text may be NULL. Returns its index or -1 (out of memory). */
int view_add(struct view *v, enum vb_kind kind, const char *reasoning, const char *content);
/* view_add, the block put at index `at` (<= n) instead: the blocks from there move one
 * on. Returns `at` or -1 (out of memory). */
int view_insert(struct view *v, size_t at, enum vb_kind kind, const char *content);
/* Appends streamed text to block i. */
int view_append(struct view *v, int i, bool reasoning, const char *s, size_t n);
/* Removes the blocks from index n on. */
void view_cut(struct view *v, size_t n);
/* Removes block i; the blocks after it move one back. */
void view_remove(struct view *v, size_t i);
/* Rebuilds the blocks from a conversation. */
void view_from_chat(struct view *v, const struct chat *c);
/* Folds every reasoning block when one shows, else unfolds them all and shows
 * reasoning again (Tab). Returns whether the reasoning now shows. */
bool view_toggle_reasoning(struct view *v);
/* /think show|hide: every reasoning block, and the answers to come, shown or folded. */
void view_show_reasoning(struct view *v, bool show);

/* Lays out every block for `width` columns into v->lines. */
int view_layout(struct view *v, int width);

/* Tab stops: every VIEW_TAB columns from the start of a display line. */
#define VIEW_TAB 8

/* Display width of the UTF-8 bytes s[0..n) starting a line (a tab up to the next
 * stop, other control characters 1, invalid bytes 1 each, as they are drawn). */
int view_width(const char *s, size_t n);
/* Bytes of s[0..n) that fit in `cols` columns at the start of a line. */
size_t view_fit(const char *s, size_t n, int cols);
/* The columns code point cp takes: the C library's wcwidth, by which ncurses draws
 * (utf8proc's tables differ: Devanagari vowel signs, the I Ching hexagrams); -1 for
 * one that is not drawn (a C1 control, a bidi override or isolate), which the
 * drawing shows as '?'. */
int view_cp_width(int32_t cp);
/* The same from column col of a line (where its tabs stop); *used (may be NULL)
 * gets the columns they take. */
size_t view_fit_at(const char *s, size_t n, int col, int cols, int *used);

#endif
