/* input.c — keys: raw terminal bytes decoded into our keys (Esc, Ctrl-C, PageUp,
 * F2, mouse wheel, bracketed paste, Alt-Enter) and GNU readline's callback interface
 * for everything else; readline never touches the terminal or signals. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <readline/history.h>
#include <readline/readline.h>
#include <utf8proc.h>

#include "src/base/clock.h"
#include "src/base/fileio.h"
#include "src/app/slash.h"
#include "ui/uistate.h"

static struct ui *cur; /* readline's callbacks carry no user pointer */

static int rl_getc_queue(FILE *f)
{
	(void)f;
	if (!cur->rq_len)
		return '\n'; /* never reached: bytes are only fed with rq filled */
	int c = cur->rq[cur->rq_head];
	cur->rq_head = (cur->rq_head + 1) % sizeof cur->rq;
	cur->rq_len--;
	return c;
}

static int rl_input_ready(void)
{
	return cur->rq_len > 0;
}
static void rl_redisplay_flag(void)
{
	cur->dirty = true;
}

static void on_line(char *line)
{
	if (!line) { /* Ctrl-D on an empty line */
		cur->quit = true;
		return;
	}
	if (line[strspn(line, " \t\n")]) {
		add_history(line);
		if (cur->history_path)
			in_history_append(cur->history_path, line);
	}
	ui_submit(cur, line);
}

static char *name_gen(const char *text, int state)
{
	return slash_complete_name(text, state);
}
static char *arg_gen(const char *text, int state)
{
	return slash_complete_arg(rl_line_buffer, text, state);
}

/* Slash command names, their choice arguments, file names for /save and /load;
 * nothing for ordinary text. */
static char **complete(const char *text, int start, int end)
{
	(void)end;
	if (start == 0 && text[0] == '/') {
		rl_attempted_completion_over = 1;
		return rl_completion_matches(text, name_gen);
	}
	if (slash_is_command(rl_line_buffer)) {
		if (slash_wants_file(rl_line_buffer))
			return NULL; /* readline's file name completion */
		rl_attempted_completion_over = 1;
		return rl_completion_matches(text, arg_gen);
	}
	rl_attempted_completion_over = 1;
	return NULL;
}

/* Several matches: listed in the hint line instead of on the terminal. */
static void show_matches(char **m, int n, int maxlen)
{
	(void)maxlen;
	size_t k = 0;
	cur->hint[0] = 0;
	for (int i = 1; i <= n && k + 2 < sizeof cur->hint; i++)
		k += (size_t)snprintf(cur->hint + k, sizeof cur->hint - k, "%s ", m[i]);
	cur->dirty = true;
}

void in_completion(void)
{
	rl_attempted_completion_function = complete;
}

/* ---- editing by what a reader calls a character ----------------------------------
 * Readline moves by code point: Left or Backspace split a flag (two regional
 * indicators) or an emoji and its skin tone. These move by extended grapheme
 * cluster (utf8proc's rules, Unicode's UAX #29), as a terminal draws them. */

/* The first grapheme boundary of s[0..len) after byte at (dir > 0), or the last one
 * before it (dir < 0); 0 and len are boundaries. */
static int grapheme_edge(const char *s, int len, int at, int dir)
{
	int before = 0;
	utf8proc_int32_t last = -1, state = 0;
	for (int i = 0; i < len;) {
		utf8proc_int32_t cp;
		utf8proc_ssize_t k = utf8proc_iterate((const utf8proc_uint8_t *)s + i,
						      (utf8proc_ssize_t)(len - i), &cp);
		if (k <= 0) /* a byte that is not UTF-8: a character of its own */
			k = 1, cp = 0xFFFD;
		if (last < 0 || utf8proc_grapheme_break_stateful(last, cp, &state)) {
			if (dir > 0 && i > at)
				return i;
			if (i < at)
				before = i;
		}
		last = cp;
		i += (int)k;
	}
	return dir > 0 ? len : before;
}

static int forward_grapheme(int count, int key)
{
	(void)key;
	for (; count > 0 && rl_point < rl_end; count--)
		rl_point = grapheme_edge(rl_line_buffer, rl_end, rl_point, 1);
	return 0;
}

static int backward_grapheme(int count, int key)
{
	(void)key;
	for (; count > 0 && rl_point > 0; count--)
		rl_point = grapheme_edge(rl_line_buffer, rl_end, rl_point, -1);
	return 0;
}

static int rubout_grapheme(int count, int key)
{
	(void)key;
	int start = rl_point;
	for (; count > 0 && start > 0; count--)
		start = grapheme_edge(rl_line_buffer, rl_end, start, -1);
	if (start == rl_point)
		return rl_ding();
	rl_delete_text(start, rl_point);
	rl_point = start;
	return 0;
}

static int delete_grapheme(int count, int key)
{
	(void)key;
	int end = rl_point;
	for (; count > 0 && end < rl_end; count--)
		end = grapheme_edge(rl_line_buffer, rl_end, end, 1);
	if (end == rl_point)
		return rl_ding();
	rl_delete_text(rl_point, end);
	return 0;
}

void in_editing_keys(void)
{
	/* readline reads the inputrc when it first starts: after that, so that a line
	 * there (Debian's binds \e[3~ to delete-char) does not undo these */
	rl_initialize();
	static const char *const left[] = {"\033[D", "\033OD", "\002"};
	static const char *const right[] = {"\033[C", "\033OC", "\006"};
	for (size_t i = 0; i < sizeof left / sizeof *left; i++) {
		rl_bind_keyseq(left[i], backward_grapheme);
		rl_bind_keyseq(right[i], forward_grapheme);
	}
	/* else readline binds the terminal's erase character (^? here) to its own
	 * rubout each time it prepares the terminal, over ours */
	rl_variable_bind("bind-tty-special-chars", "off");
	/* Under LANG=C readline reads a byte past ASCII as Meta and a key: typed "é"
	 * ran commands and was lost. Such bytes are text (UTF-8 locales do this). */
	rl_variable_bind("input-meta", "on");
	rl_variable_bind("convert-meta", "off");
	rl_variable_bind("output-meta", "on");
	rl_bind_keyseq("\177", rubout_grapheme);
	rl_bind_keyseq("\010", rubout_grapheme);
	rl_bind_keyseq("\033[3~", delete_grapheme);
}

void in_history_keep(void)
{
	/* Readline keeps the edits made to a recalled line in the history entry once one
	 * moves away from it; the history is what was sent, so they are undone when a
	 * line is accepted. */
	rl_variable_bind("revert-all-at-newline", "on");
}

void in_init(struct ui *u)
{
	cur = u;
	rl_catch_signals = 0;
	rl_catch_sigwinch = 0;
	rl_change_environment = 0;
	rl_prep_term_function = NULL;
	rl_deprep_term_function = NULL;
	rl_getc_function = rl_getc_queue;
	rl_input_available_hook = rl_input_ready;
	rl_redisplay_function = rl_redisplay_flag;
	rl_attempted_completion_function = complete;
	rl_completion_display_matches_hook = show_matches;
	/* a file name with a space completes inside double quotes, as /save and /load
	   read it ("/save "my notes.json""); the next Tab goes on inside them */
	rl_completer_quote_characters = "\"";
	rl_filename_quote_characters = " \t";
	/* Readline writes only bells and listings; neither may reach the screen. */
	rl_outstream = fopen("/dev/null", "w");
	rl_readline_name = "qwenchat";
	in_history_keep();
	in_editing_keys();
	using_history();
	u->history_path = fio_join(app_state_dir(u->a), "history");
	if (u->history_path)
		in_history_load(u->history_path);
	rl_callback_handler_install("", on_line);
}

void in_done(struct ui *u)
{
	rl_callback_handler_remove();
	if (u->history_path)
		in_history_trim(u->history_path);
	free(u->history_path);
	u->history_path = NULL;
	if (rl_outstream && rl_outstream != stdout)
		fclose(rl_outstream);
	rl_outstream = NULL;
	free(u->paste);
}

/* The bytes read are queued whole (as many as the queue holds) before readline reads
 * them: a key's escape sequence is then there at once, and readline takes the ESC
 * that ends a Ctrl-R search as the start of that key (an arrow ends the search and
 * moves), not as the search's end followed by "[C" typed in. */
static void feed(struct ui *u, const unsigned char *s, size_t n)
{
	for (size_t i = 0; i < n;) {
		for (; i < n && u->rq_len < sizeof u->rq; i++) {
			u->rq[(u->rq_head + u->rq_len) % sizeof u->rq] = s[i];
			u->rq_len++;
		}
		while (u->rq_len)
			rl_callback_read_char();
	}
	if (u->restore) { /* a line handed back (busy, bad command, /edit) */
		rl_replace_line(u->restore, 0);
		rl_point = rl_end;
		free(u->restore);
		u->restore = NULL;
	}
	u->dirty = true;
}

static void paste_end(struct ui *u)
{
	/* One message: newlines stay in the line; \r\n and \r become \n. */
	char *s = u->paste ? u->paste : "";
	size_t j = 0;
	for (size_t i = 0; i < u->paste_n; i++) {
		if (s[i] == '\r' && i + 1 < u->paste_n && s[i + 1] == '\n')
			continue;
		s[j++] = s[i] == '\r' ? '\n' : s[i];
	}
	while (j && s[j - 1] == '\n')
		j--;
	if (u->paste) {
		s[j] = 0;
		rl_insert_text(s);
	}
	u->paste_n = 0;
	u->pasting = false;
	u->paste_resumed = false;
	u->dirty = true;
}

static void paste_add(struct ui *u, const unsigned char *s, size_t n)
{
	if (u->paste_n + n + 1 > u->paste_cap) {
		size_t cap = (u->paste_n + n + 1) * 2;
		char *p = realloc(u->paste, cap);
		if (!p)
			return;
		u->paste = p;
		u->paste_cap = cap;
	}
	memcpy(u->paste + u->paste_n, s, n);
	u->paste_n += n;
}

void in_paste_idle(struct ui *u)
{
	cur = u;
	if (!u->pasting || clock_now() - u->paste_seen < IN_PASTE_IDLE)
		return;
	bool resumed = u->paste_resumed;
	if (resumed)
		u->klen = 0; /* at most the start of an end marker that never finished */
	paste_end(u);
	/* A link that stalled may still bring the rest, even the rest of the end marker
	 * kept in kb: in_process takes the next bytes for it, once. */
	u->paste_cut = !resumed;
	snprintf(u->hint, sizeof u->hint, "a paste that never ended: its text is in the line");
}

static void consume(struct ui *u, size_t n)
{
	memmove(u->kb, u->kb + n, u->klen - n);
	u->klen -= n;
}

/* Length of the escape sequence at kb (CSI or SS3), 0 when incomplete. */
static size_t seq_len(const unsigned char *k, size_t n)
{
	if (n < 3)
		return 0;
	if (k[1] == 'O')
		return 3;
	for (size_t i = 2; i < n; i++)
		if (k[i] >= 0x40 && k[i] <= 0x7e)
			return i + 1;
	return 0;
}

static void scroll_by(struct ui *u, int lines)
{
	u->v.scroll += lines;
	if (u->v.scroll < 0)
		u->v.scroll = 0;
	u->dirty = true;
}

/* A mouse report's button b: the wheel (64 up, 65 down) scrolls; others do nothing. */
static void wheel(struct ui *u, int b)
{
	if (b == 64)
		scroll_by(u, 3);
	else if (b == 65)
		scroll_by(u, -3);
}

/* Handles one escape sequence; false when it is readline's. */
static bool special_seq(struct ui *u, const char *s, size_t n)
{
	/* a page: three quarters of the conversation's rows, so that a few lines of the
	 * last view stay in sight to read on from */
	int page = (LINES - 3) * 3 / 4 > 10 ? (LINES - 3) * 3 / 4 : 10;
	if (n == 6 && !memcmp(s, "\033[200~", 6)) {
		u->pasting = true;
		u->paste_cut = false;
		u->paste_n = 0;
		u->paste_seen = clock_now();
		return true;
	}
	if (n == 4 && !memcmp(s, "\033[5~", 4)) {
		scroll_by(u, page);
		return true;
	}
	if (n == 4 && !memcmp(s, "\033[6~", 4)) {
		scroll_by(u, -page);
		return true;
	}
	if ((n == 3 && !memcmp(s, "\033OQ", 3)) || (n == 5 && !memcmp(s, "\033[12~", 5))) {
		ui_set_debug(u, (u->debug + 1) % DEBUG_MODES);
		return true;
	}
	if (n > 3 && s[2] == '<') { /* SGR mouse: \e[<b;x;yM */
		wheel(u, atoi(s + 3));
		return true;
	}
	/* Up/Down scroll the probabilities while the input line is empty. */
	if (u->debug == DEBUG_PROBS && rl_end == 0 && n == 3 && (s[2] == 'A' || s[2] == 'B')) {
		u->prob_scroll += s[2] == 'A' ? 1 : (u->prob_scroll > 0 ? -1 : 0);
		u->dirty = true;
		return true;
	}
	/* Arrows steer the attention pane while the input line is empty. */
	if (u->debug == DEBUG_ATTENTION && rl_end == 0 && n == 3) {
		switch (s[2]) {
		case 'C': u->att_layer++; break;
		case 'D': u->att_layer = u->att_layer > 0 ? u->att_layer - 1 : 0; break;
		case 'A': u->att_head = u->att_head > 0 ? u->att_head - 1 : 0; break;
		case 'B': u->att_head++; break;
		default: return false;
		}
		u->dirty = true;
		return true;
	}
	return false;
}

/* What readline's keymap binds the keys k[0..n) to, its kind in *type (ISFUNC,
 * ISKMAP, ISMACR); NULL when nothing (or a sequence too long to ask about). */
static rl_command_func_t *binding(const unsigned char *k, size_t n, int *type)
{
	char seq[32];
	if (n >= sizeof seq)
		return NULL;
	memcpy(seq, k, n);
	seq[n] = 0;
	return rl_function_of_keyseq(seq, rl_get_keymap(), type);
}

/* Whether readline has a command for the escape sequence k[0..n): one it lacks (F5,
 * a Ctrl-arrow without an inputrc line) would be typed in as its last bytes ("~"). */
static bool readline_binds(const unsigned char *k, size_t n)
{
	int type = -1;
	rl_command_func_t *f = binding(k, n, &type);
	return f && ((type == ISFUNC && f != rl_insert) || type == ISMACR);
}

/* Whether readline binds byte c to a keymap: the first key of a sequence (Ctrl-X). */
static bool prefix_key(unsigned char c)
{
	int type = -1;
	return c && binding(&c, 1, &type) && type == ISKMAP;
}

/* \e[M and three bytes: button + 32, column + 32, row + 32 (terminals without SGR
 * reports); the wheel scrolls, the rest is dropped. Returns the bytes consumed. */
static size_t x10_mouse(struct ui *u, bool flush)
{
	if (u->klen < 6)
		return flush ? u->klen : 0;
	wheel(u, u->kb[3] - 32);
	return 6;
}

/* One key (or sequence) at kb; returns bytes consumed, 0 to wait for more. */
static size_t key(struct ui *u, bool flush)
{
	unsigned char *k = u->kb;
	if (k[0] == 0x1b) {
		if (u->klen == 1 || k[1] == 0x1b) {
			if (u->klen == 1 && !flush)
				return 0;
			if (RL_ISSTATE(
				    RL_STATE_ISEARCH)) { /* Esc ends a Ctrl-R search, the match kept */
				feed(u, k, 1);
				return 1;
			}
			if (RL_ISSTATE(RL_STATE_NSEARCH)) { /* and leaves Alt-P's, as Ctrl-G does */
				feed(u, (const unsigned char *)"\007", 1);
				return 1;
			}
			if (app_busy(u->a))
				ui_cancel_or_quit(u); /* Esc: stops an answer */
			u->confirm_quit = false;
			u->dirty = true;
			return 1;
		}
		if (k[1] == '[' || k[1] == 'O') {
			size_t n = seq_len(k, u->klen);
			if (!n)
				return flush ? u->klen : 0;
			if (n == 3 && k[1] == '[' &&
			    k[2] == 'M') /* X10 mouse: three bytes follow */
				return x10_mouse(u, flush);
			if (!special_seq(u, (const char *)k, n) && readline_binds(k, n))
				feed(u, k, n);
			return n;
		}
		if (k[1] == '\r' || k[1] == '\n') { /* Alt-Enter: a new line in the message */
			rl_insert_text("\n");
			u->dirty = true;
			return 2;
		}
		feed(u, k, 2); /* Alt-key: readline's meta bindings */
		return 2;
	}
	if (k[0] == 3) { /* Ctrl-C */
		if (app_busy(u->a) || u->confirm_quit || rl_end == 0) {
			if (!app_busy(u->a) && rl_end == 0 && !u->confirm_quit) {
				u->confirm_quit = true;
				u->dirty = true;
			} else {
				ui_cancel_or_quit(u);
			}
		} else { /* into the kill ring, undoable: Ctrl-Y brings a line cleared by mistake back */
			rl_kill_full_line(1, 0);
			u->dirty = true;
		}
		return 1;
	}
	if (u->confirm_quit) { /* "Quit?": any other key says no, and is not typed */
		u->confirm_quit = false;
		u->dirty = true;
		size_t n = k[0] >= 0xf0 ? 4 : k[0] >= 0xe0 ? 3 : k[0] >= 0xc0 ? 2 : 1;
		return n < u->klen ? n : u->klen;
	}
	if (k[0] != '\t' && u->hint[0]) { /* completion candidates go once typing goes on */
		u->hint[0] = 0;
		u->dirty = true;
	}
	if (k[0] == 0x0c) { /* Ctrl-L: all of the screen drawn again, whatever wrote on it */
		clearok(curscr, TRUE);
		u->dirty = true;
		return 1;
	}
	if (k[0] == '\t' && rl_end == 0) {
		if (view_toggle_reasoning(&u->v)) /* shown again after /think hide too */
			app_set_show_reasoning(u->a, true);
		u->dirty = true;
		return 1;
	}
	if (k[0] == '\n')
		k[0] = '\r';
	/* A sequence begun inside a Ctrl-R search (Ctrl-X, then Esc) crashes readline's
	 * callback search: the search ends first, its match kept, as Esc ends it. */
	if (RL_ISSTATE(RL_STATE_ISEARCH) && prefix_key(k[0]))
		feed(u, (const unsigned char *)"\033", 1);
	feed(u, k, 1);
	return 1;
}

/* The length of the longest tail of k[0..n) that begins a paste marker (the two share
 * their first four bytes). */
static size_t marker_start(const unsigned char *k, size_t n)
{
	for (size_t m = n < 5 ? n : 5; m > 0; m--)
		if (!memcmp(k + n - m, "\033[201~", m) || !memcmp(k + n - m, "\033[200~", m))
			return m;
	return 0;
}

/* Where a paste's text ends in kb: at its end marker, or for the rest of a stalled
 * paste also at the start of a new paste; NULL when neither is there yet. */
static unsigned char *paste_stop(struct ui *u, bool *is_end)
{
	unsigned char *e = memmem(u->kb, u->klen, "\033[201~", 6), *b = NULL;
	if (u->paste_resumed)
		b = memmem(u->kb, u->klen, "\033[200~", 6);
	*is_end = !b || (e && e < b);
	return *is_end ? e : b;
}

void in_process(struct ui *u, bool flush)
{
	cur = u;
	if (u->paste_cut && !u->pasting && u->klen) {
		/* The first bytes after a paste ended by a stall: its rest (whose line
		 * breaks must not send the first part), unless a new paste begins. */
		u->paste_cut = false;
		size_t n = u->klen < 6 ? u->klen : 6;
		if (memcmp(u->kb, "\033[200~", n) || !memcmp(u->kb, "\033[201~", n)) {
			u->pasting = u->paste_resumed = true;
			u->paste_n = 0;
			u->paste_seen = clock_now();
		}
	}
	if (u->pasting && !flush)
		u->paste_seen = clock_now();
	while (u->klen) {
		if (u->pasting) {
			bool is_end;
			unsigned char *e = paste_stop(u, &is_end);
			if (e) {
				paste_add(u, u->kb, (size_t)(e - u->kb));
				consume(u, (size_t)(e - u->kb) + (is_end ? 6 : 0));
				if (u->paste_resumed && is_end)
					u->hint[0] = 0; /* it did end */
				paste_end(u);
				continue;
			}
			/* Keep a tail that may be the start of a marker, the rest of which a
			 * slow link may bring later. */
			size_t keep = marker_start(u->kb, u->klen);
			paste_add(u, u->kb, u->klen - keep);
			consume(u, u->klen - keep);
			return;
		}
		size_t n = key(u, flush);
		if (!n)
			return;
		consume(u, n);
	}
}
