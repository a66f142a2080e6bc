/* draw.c — renders the UI state to the terminal, once per frame: the chat view,
 * the debug pane, the status bar, the input area and the key hint. */
#include <curses.h>
#include <utf8proc.h>
#include <stdio.h>
#include <string.h>

#include <readline/readline.h>

#include "src/base/units.h"
#include "ui/uistate.h"


/* Colours are on: the terminal has them and NO_COLOR does not ask for none. */
static bool colors;

void draw_init(bool no_color)
{
	colors = has_colors() && !no_color;
	if (!colors)
		return;
	start_color();
	use_default_colors();
	init_pair(C_USER, COLOR_CYAN, -1);
	init_pair(C_ASSIST, COLOR_GREEN, -1);
	init_pair(C_REASON, -1, -1);
	init_pair(C_CODE, COLOR_YELLOW, -1);
	init_pair(C_MD_CODE, COLOR_YELLOW, -1);
	init_pair(C_SYSTEM, COLOR_MAGENTA, -1);
	init_pair(C_ERROR, COLOR_RED, -1);
	init_pair(C_NOTICE, COLOR_BLUE, -1);
	init_pair(C_STATUS, COLOR_BLACK, COLOR_WHITE);
	init_pair(C_WARN, COLOR_WHITE, COLOR_RED);
}

attr_t draw_pair(int pair)
{
	if (colors)
		return COLOR_PAIR(pair);
	/* without colours the status bar stands out in reverse video (and a warning on
	 * it in bold, out of it) */
	return pair == C_STATUS ? A_REVERSE : A_NORMAL;
}

/* The code point at s[0..n): its bytes (1 for a byte that is not UTF-8, cp -1). */
static size_t next_cp(const char *s, size_t n, int32_t *cp)
{
	utf8proc_int32_t c;
	utf8proc_ssize_t k = utf8proc_iterate((const utf8proc_uint8_t *)s, (utf8proc_ssize_t)n, &c);
	*cp = k > 0 ? c : -1;
	return k > 0 ? (size_t)k : 1;
}

/* Draws s[0..n) (no control characters), each character with the marks of no width
 * that follow it in one cell: drawn apart, a mark after a wide character that ends
 * at the row's end came after the cursor had left the row, and was lost. A character
 * the terminal would not draw takes the column the layout gave it, as '?'. */
static void put_chars(const char *s, size_t n)
{
	for (size_t i = 0; i < n;) {
		int32_t cp;
		size_t k = next_cp(s + i, n - i, &cp);
		int w = cp < 0 ? -1 : view_cp_width(cp);
		if (w < 0) {
			addch('?');
			i += k;
			continue;
		}
		if (w == 0) { /* a mark with no character before it here: as it comes */
			addnstr(s + i, (int)k);
			i += k;
			continue;
		}
		wchar_t wc[CCHARW_MAX + 1];
		int m = 0;
		wc[m++] = (wchar_t)cp;
		for (i += k; i < n; i += k) {
			int32_t mark;
			k = next_cp(s + i, n - i, &mark);
			if (mark < 0 || view_cp_width(mark) != 0)
				break;
			if (m < CCHARW_MAX) /* the cell's room; the rest are not drawn */
				wc[m++] = (wchar_t)mark;
		}
		wc[m] = 0;
		cchar_t cell;
		if (setcchar(&cell, wc, A_NORMAL, 0, NULL) == OK)
			add_wch(&cell); /* with the attributes and colours attrset gave */
	}
}

int draw_put_at(int y, int x, int col, const char *s, size_t n, int cols)
{
	move(y, x);
	int used = 0;
	while (n > 0 && used < cols) {
		size_t run = 0;
		while (run < n && ((unsigned char)s[run] >= 0x20 && s[run] != 0x7f))
			run++;
		if (run) {
			int w;
			size_t fit = view_fit_at(s, run, col + used, cols - used, &w);
			if (!fit)
				break;
			put_chars(s, fit);
			used += w;
			if (fit < run)
				break;
			s += run;
			n -= run;
		} else if (s[0] == '\t') { /* blanks up to the next stop, as the layout counts */
			int w = VIEW_TAB - (col + used) % VIEW_TAB;
			for (int i = 0; i < w && used < cols; i++, used++)
				addch(' ');
			s++;
			n--;
		} else {
			if (s[0] != '\r') {
				addch('?');
				used++;
			}
			s++;
			n--;
		}
	}
	return used;
}

int draw_put(int y, int x, const char *s, size_t n, int cols)
{
	return draw_put_at(y, x, 0, s, n, cols);
}

static attr_t style_attr(enum vl_style st)
{
	switch (st) {
	case VL_USER_HEAD: return draw_pair(C_USER) | A_BOLD;
	case VL_USER: return draw_pair(C_USER);
	case VL_ASSIST_HEAD: return draw_pair(C_ASSIST) | A_BOLD;
	case VL_REASON_HEAD: return A_DIM | A_ITALIC;
	case VL_REASON: return A_DIM;
	case VL_CODE: return draw_pair(C_CODE);
	case VL_SYSTEM_HEAD: return draw_pair(C_SYSTEM) | A_BOLD;
	case VL_SYSTEM: return draw_pair(C_SYSTEM);
	case VL_ERROR: return draw_pair(C_ERROR) | A_BOLD;
	case VL_NOTICE: return draw_pair(C_NOTICE);
	default: return A_NORMAL;
	}
}

static void draw_chat(struct ui *u, int y0, int x0, int h, int w)
{
	struct view *v = &u->v;
	view_layout(v, w - 2);
	int total = (int)v->lines.n;
	/* Scrolled up: stay on the same text while lines arrive below. */
	if (v->scroll > 0 && (size_t)total > u->last_nlines && u->last_nlines)
		v->scroll += total - (int)u->last_nlines;
	u->last_nlines = (size_t)total;
	if (v->scroll > total - h)
		v->scroll = total - h > 0 ? total - h : 0;
	int top = total - h - v->scroll;
	if (top < 0)
		top = 0;
	for (int r = 0; r < h; r++) {
		move(y0 + r, x0);
		for (int c = 0; c < w; c++)
			addch(' ');
		int i = top + r;
		if (i >= total)
			continue;
		const struct vline *l = &v->lines.v[i];
		bool head = l->style == VL_USER_HEAD || l->style == VL_ASSIST_HEAD ||
			    l->style == VL_SYSTEM_HEAD;
		attr_t gone = l->block >= 0 && v->b[l->block].gone ? A_DIM : 0;
		attrset(style_attr(l->style) | gone);
		if (l->style == VL_CODE)
			draw_put(y0 + r, x0, ui_glyph(u, "\xe2\x94\x82", "|"), u->ascii ? 1 : 3,
				 1);         /* a bar sets code apart */
		if (l->style == VL_ASSIST) { /* light Markdown, from the line's start */
			const struct vb_text *t = &v->b[l->block].content;
			const char *line = l->s, *end = l->s + l->len;
			while (line > t->s && line[-1] != '\n')
				line--;
			while (end < t->s + t->n && *end != '\n')
				end++;
			md_put(u, y0 + r, x0 + 2 + l->indent, line, end, l->s, (size_t)l->len,
			       w - 2 - l->indent, style_attr(l->style) | gone);
		} else {
			draw_put(y0 + r, x0 + (head ? 0 : 2) + l->indent, l->s, (size_t)l->len,
				 w - 2 - l->indent);
		}
		attrset(A_NORMAL);
	}
	if (v->scroll > 0) {
		char more[48];
		int n = snprintf(more, sizeof more, " \xe2\x86\x93 %d more lines ", v->scroll);
		attrset(A_REVERSE);
		draw_put(y0 + h - 1, x0 + w - view_width(more, (size_t)n) - 1, more, (size_t)n, w);
		attrset(A_NORMAL);
	}
}

/* Which of n items, each width[i] columns joined by 3 ("a | b"), with ends columns
 * around them, are shown in room columns: the least useful (lowest keep[i]) left out,
 * whole, first; those of keep 100 always stay (draw_put() cuts them). */
static void fit_items(const int *width, const int *keep, int n, int ends, int room, bool *shown)
{
	int total = ends - 3;
	for (int i = 0; i < n; i++) {
		shown[i] = true;
		total += width[i] + 3;
	}
	while (total > room) {
		int drop = -1;
		for (int i = 0; i < n; i++)
			if (shown[i] && keep[i] < 100 && (drop < 0 || keep[i] < keep[drop]))
				drop = i;
		if (drop < 0)
			break;
		shown[drop] = false;
		total -= width[drop] + 3;
	}
}

/* One field of the status bar: its text and how much it matters when the bar is
 * too narrow for all (lower goes first). */
struct field {
	char text[96];
	int keep;
};

/* The status bar's mark of an autosave failure (the conversation has its text). */
#define UNSAVED   " autosave failed "
#define UNSAVED_W ((int)sizeof UNSAVED - 1)

/* The status bar: fields in a fixed order; when they do not fit the width, the
 * least useful are left out first (RSS, prefill speed, TTFT, GPU memory, backend,
 * weight type, thinking), so that an 80-column terminal still shows the model, the
 * context and the decode speed. */
static void draw_status(struct ui *u, int y, int w)
{
	const struct app_figures *f = &u->fig;
	struct field fl[11];
	int nf = 0;
	char a[16], b[16];
#define FIELD(KEEP, ...)                                                \
	do {                                                            \
		snprintf(fl[nf].text, sizeof fl[nf].text, __VA_ARGS__); \
		fl[nf++].keep = (KEEP);                                 \
	} while (0)
	FIELD(90, "%s", app_model_name(u->a));
	FIELD(40, "%s", app_backend(u->a));
	if (f->mem.weight_type[0]) /* "Q4_K GGUF": what the weights are stored as */
		FIELD(45, "%s", f->mem.weight_type);
	FIELD(60, "think %s", app_thinking(u->a) ? "on" : "off");
	if (f->no_counts && f->ctx_max) /* a remote server that sends no usage */
		FIELD(100, "ctx ?/%d", f->ctx_max);
	else if (f->no_counts)
		FIELD(100, "ctx ?");
	else if (f->ctx_max) /* a remote server may not say its context */
		FIELD(100, "ctx %d/%d", f->ctx_used, f->ctx_max);
	else
		FIELD(100, "ctx %d", f->ctx_used);
	if (f->busy && f->prefilling)
		FIELD(95, "%s", f->waiting[0] ? "server busy: waiting" : "prefilling...");
	if (f->turn.prefilled || f->turn.generated) { /* no figure before the first turn */
		if (!f->no_counts)
			FIELD(20, "prefill %.0f t/s", f->turn.prefill_tps);
		if (f->turn.generated > 1) /* a speed needs two tokens' times */
			FIELD(80, "decode %.1f t/s", f->turn.decode_tps);
		else
			FIELD(80, "decode - t/s");
		FIELD(30, "TTFT %.2fs", f->turn.ttft);
	}
	if (f->mem.device_total) {
		units_ibytes((double)(f->mem.device_total - f->mem.device_free), a, sizeof a);
		units_ibytes((double)f->mem.device_total, b, sizeof b);
		FIELD(35, "GPU %s/%s", a, b);
	}
	FIELD(15, "RSS %s", units_ibytes((double)f->mem.host_rss, a, sizeof a));
#undef FIELD
	/* " a | b | c ": a blank at each end; room for the mark of an autosave failure
	 * at the right end */
	bool shown[11];
	int width[11], keep[11];
	for (int i = 0; i < nf; i++)
		width[i] = view_width(fl[i].text, strlen(fl[i].text)), keep[i] = fl[i].keep;
	fit_items(width, keep, nf, 2, f->save_error[0] ? w - UNSAVED_W : w, shown);
	char s[512];
	int n = 0;
	for (int i = 0; i < nf && n < (int)sizeof s; i++)
		if (shown[i])
			n += snprintf(s + n, sizeof s - (size_t)n, "%s%s", n ? " | " : " ",
				      fl[i].text);
	if (n < (int)sizeof s - 1)
		s[n++] = ' ', s[n] = 0;
	attrset(draw_pair(C_STATUS));
	move(y, 0);
	for (int i = 0; i < w; i++)
		addch(' ');
	draw_put(y, 0, s, strlen(s), w);
	if (f->save_error[0]) { /* an autosave failure stays in sight; its text is above */
		attrset(draw_pair(C_WARN) | A_BOLD);
		draw_put(y, UNSAVED_W < w ? w - UNSAVED_W : 0, UNSAVED, UNSAVED_W, w);
	}
	attrset(A_NORMAL);
}

/* The input area: "> " then the line, wrapped at w - 3 columns of display width (a CJK
 * character or an emoji takes two). Walks its rows, finding the cursor's (crow, ccol;
 * may be NULL) and, with draw, drawing rows first .. first + h - 1 from y0; returns
 * the number of rows. */
static int input_walk(int w, bool draw, int y0, int first, int h, int *crow, int *ccol)
{
	const char *buf = rl_line_buffer ? rl_line_buffer : "";
	size_t len = strlen(buf), point = rl_point < 0 ? 0 : (size_t)rl_point, i = 0;
	int row = 0;
	for (;;) {
		size_t nl = i;
		while (nl < len && buf[nl] != '\n')
			nl++;
		size_t s = i;
		do {
			size_t fit = view_fit(buf + s, nl - s, w - 2 > 1 ? w - 3 : 1);
			if (!fit && s < nl)
				fit = 1;
			if (crow && point >= s &&
			    (point < s + fit || (point == s + fit && (s + fit == nl)))) {
				*crow = row;
				*ccol = 2 + view_width(buf + s, point - s);
			}
			if (draw && row >= first && row - first < h) {
				move(y0 + row - first, 0);
				clrtoeol();
				attrset(A_BOLD);
				draw_put(y0 + row - first, 0, row == 0 ? "> " : "  ", 2, 2);
				attrset(A_NORMAL);
				draw_put(y0 + row - first, 2, buf + s, fit, w - 3);
			}
			s += fit;
			row++;
		} while (s < nl);
		if (nl >= len)
			break;
		i = nl + 1;
	}
	return row;
}

/* The input's last h rows up to the cursor's, and the cursor placed. */
static void draw_input(int y0, int h, int w)
{
	int crow = 0, ccol = 2;
	input_walk(w, false, 0, 0, 0, &crow, &ccol);
	int first = crow - h + 1 > 0 ? crow - h + 1 : 0;
	input_walk(w, true, y0, first, h, NULL, NULL);
	move(y0 + crow - first, ccol < w ? ccol : w - 1);
}

static int input_rows(int w)
{
	return input_walk(w, false, 0, 0, 0, NULL, NULL);
}

/* The key hint's items, and how much each matters when the line is too narrow for
 * all (lower goes first; 100 stays): /help lists the rest. */
struct hint_item {
	const char *text;
	int keep;
};
static const struct hint_item hint_idle[] = {{"Enter send", 100},       {"Alt-Enter newline", 50},
					     {"Tab fold thinking", 30}, {"PgUp/PgDn", 40},
					     {"F2 debug", 20},          {"/help", 100},
					     {"Ctrl-D quit", 60},       {NULL, 0}};
static const struct hint_item hint_busy[] = {{"Esc or Ctrl-C: stop the answer (it is kept)", 100},
					     {"PgUp/PgDn scroll", 40},
					     {"F2 debug", 20},
					     {NULL, 0}};

/* The items joined by " | " into out, the least useful left out, whole, until they
 * fit w columns. */
static void key_hint(const struct hint_item *it, int w, char *out, size_t sz)
{
	bool shown[8];
	int n = 0, width[8], keep[8];
	for (; it[n].text && n < 8; n++)
		width[n] = (int)strlen(it[n].text), keep[n] = it[n].keep;
	fit_items(width, keep, n, 0, w, shown);
	size_t k = 0;
	out[0] = 0;
	for (int i = 0; i < n && k < sz; i++)
		if (shown[i])
			k += (size_t)snprintf(out + k, sz - k, "%s%s", k ? " | " : "", it[i].text);
}

static void draw_hint(struct ui *u, int y, int w)
{
	/* readline's incremental search says what it looks for in its prompt, which the
	 * input line does not show: "(reverse-i-search)`text': " goes here */
	bool search = RL_ISSTATE(RL_STATE_ISEARCH | RL_STATE_NSEARCH) && rl_display_prompt;
	char keys[160];
	key_hint(app_busy(u->a) ? hint_busy : hint_idle, w, keys, sizeof keys);
	const char *s = u->confirm_quit
				? "Quit? Press Ctrl-C again to leave, any other key to stay."
			: search     ? rl_display_prompt
			: u->hint[0] ? u->hint
				     : keys;
	move(y, 0);
	clrtoeol();
	attrset(u->confirm_quit ? (draw_pair(C_ERROR) | A_BOLD) : A_DIM);
	size_t n = strlen(s);
	if (u->hint[0] && view_width(s, n) > w && w > 1) {
		/* completion candidates that do not fit: an ellipsis says there are more */
		draw_put(y, 0, s, view_fit(s, n, w - 1), w - 1);
		addstr(ui_glyph(u, "\xe2\x80\xa6", ">"));
	} else {
		draw_put(y, 0, s, n, w);
	}
	attrset(A_NORMAL);
}

void draw_frame(struct ui *u)
{
	int rows = LINES, cols = COLS;
	if (rows < 5 || cols < 20) {
		erase();
		/* as much as fits of the longest that does */
		const char *m = cols >= 16 ? "window too small" : cols >= 9 ? "too small" : "small";
		draw_put(0, 0, m, strlen(m), cols);
		refresh();
		return;
	}
	int in_h = input_rows(cols);
	int max_in = rows / 4 > 1 ? rows / 4 : 1;
	if (in_h > max_in)
		in_h = max_in;
	int chat_h = rows - in_h - 2;
	/* The debug pane: beside the chat on wide screens, below it otherwise, down to two
	 * lines (its title and one more) on a short window. */
	if (u->debug && cols >= 120) {
		int pw = cols * 2 / 5;
		draw_chat(u, 0, 0, chat_h, cols - pw - 1);
		for (int r = 0; r < chat_h; r++)
			mvaddstr(r, cols - pw - 1, ui_glyph(u, "\xe2\x94\x82", "|"));
		debug_draw(u, 0, cols - pw, chat_h, pw);
	} else if (u->debug && chat_h >= 4) {
		int ph = chat_h / 2 > 12 ? 12 : chat_h / 2;
		draw_chat(u, 0, 0, chat_h - ph, cols);
		debug_draw(u, chat_h - ph, 0, ph, cols);
	} else {
		draw_chat(u, 0, 0, chat_h, cols);
	}
	draw_status(u, chat_h, cols);
	draw_hint(u, rows - 1, cols);
	draw_input(chat_h + 1, in_h, cols);
	refresh();
}
