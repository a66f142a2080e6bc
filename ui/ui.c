/* ui.c — the full-screen chat's main loop: keys in, the worker's text drained,
 * one frame drawn; what a submitted line does; the plain mode's readline reader. */
#include "src/base/term.h"
#include "ui/ui.h"

#include <curses.h>
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <langinfo.h>
#include <string.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>

#include <readline/history.h>
#include <readline/readline.h>

#include "src/base/err.h"
#include "src/base/clock.h"
#include "src/base/fileio.h"
#include "src/app/plain.h"
#include "ui/uistate.h"

/* last: its macros (lines, columns, ...) would rename the view's fields */
#include <term.h>

/* Rows of the help (slash_help): the key, a tab, what it does. */
static const char keys_help[] =
	"keys:\n"
	"Enter\tsend\n"
	"Alt-Enter\ta new line in the message (a paste stays one message)\n"
	"Esc or Ctrl-C\tstop the answer (the partial answer is kept)\n"
	"Ctrl-C\tclear the line (Ctrl-Y brings it back); on an empty line, ask to quit\n"
	"Ctrl-D\ton an empty line: quit\n"
	"Ctrl-L\tdraw the screen again\n"
	"Tab\ton an empty line: fold or show the reasoning; else complete commands\n"
	"PageUp/PageDown, wheel\tscroll\n"
	"F2\tthe debug pane: off, attention, memory, token probabilities\n"
	"Left/Right, Up/Down\tin the pane, with an empty line: the layer and the head (or "
	"scroll the probabilities)\n"
	"Up/Down, Ctrl-R\thistory, its search, and readline's other Emacs keys\n"
	"//TEXT\ta line starting with // sends a message starting with /\n";

static volatile sig_atomic_t got_winch;

static void on_winch(int sig)
{
	(void)sig;
	got_winch = 1;
}

/* SIGTERM, SIGHUP or SIGINT (sent from outside: in the UI Ctrl-C is a key): leave as
 * Ctrl-D would, the answer under way stopped and kept. */
static volatile sig_atomic_t got_stop;

static void on_stop(int sig)
{
	got_stop = sig;
}

/* SIGTSTP (kill -TSTP: in the UI Ctrl-Z is a key): the screen is left as on exit
 * (our modes too, which ncurses' own handler would leave on) before stopping. */
static volatile sig_atomic_t got_tstp;

static void on_tstp(int sig)
{
	(void)sig;
	got_tstp = 1;
}

/* The modes the UI sets on the terminal besides ncurses': bracketed paste and SGR
 * mouse reports (the wheel scrolls). */
#define UI_MODES_ON  "\033[?2004h\033[?1000h\033[?1006h"
#define UI_MODES_OFF "\033[?1006l\033[?1000l\033[?2004l"

static void ui_notice(struct ui *u, bool error, const char *msg)
{
	if (!msg || !*msg)
		return;
	size_t n = strlen(msg);
	while (n && msg[n - 1] == '\n')
		n--;
	char *s = strndup(msg, n);
	if (s)
		view_add(&u->v, error ? VB_ERROR : VB_NOTICE, NULL, s);
	free(s);
	u->v.scroll = 0;
	u->dirty = true;
}

void ui_set_debug(struct ui *u, int mode)
{
	u->debug = mode;
	/* The engine records attention only while it is shown. */
	app_set_capture(u->a, mode == DEBUG_ATTENTION);
	app_set_probs(u->a, mode == DEBUG_PROBS); /* from the next answer on */
	u->prob_scroll = 0;
	u->dirty = true;
}

void ui_cancel_or_quit(struct ui *u)
{
	if (app_busy(u->a)) {
		app_cancel(u->a);
		snprintf(u->hint, sizeof u->hint, "stopping...");
	} else if (u->confirm_quit) {
		u->quit = true;
	}
	u->confirm_quit = false;
	u->dirty = true;
}

static void start_turn(struct ui *u)
{
	if (app_start(u->a, false)) {
		ui_notice(u, true, err_msg());
		return;
	}
	u->stream_block = view_add(&u->v, VB_ASSISTANT, NULL, NULL);
	if (u->stream_block >= 0)
		u->v.b[u->stream_block].streaming = true;
	u->v.scroll = 0;
	u->hint[0] = 0;
}

static void command(struct ui *u, char *line)
{
	struct app_result r;
	app_command(u->a, line, &r);
	if (r.actions & APP_DO_REPAINT)
		clearok(curscr, TRUE);
	if (r.error) { /* nothing typed is lost: the line comes back to be fixed */
		u->restore = strdup(line);
		ui_notice(u, true, r.msg);
		return;
	}
	if (r.actions & APP_DO_RELOAD)
		view_from_chat(&u->v, app_chat(u->a));
	if (r.actions & APP_DO_REASONING)
		view_show_reasoning(&u->v, app_show_reasoning(u->a));
	if (r.actions & APP_DO_HELP) {
		char *h = slash_help(keys_help);
		ui_notice(u, false, h);
		free(h);
	}
	if (r.actions & APP_DO_DEBUG)
		ui_set_debug(u, r.debug < 0 ? (u->debug ? DEBUG_OFF : DEBUG_ATTENTION) : r.debug);
	ui_notice(u, false, r.msg);
	if (r.actions & APP_DO_EDIT) {
		free(u->restore);
		u->restore = r.edit;
	} else {
		free(r.edit);
	}
	if (r.actions & APP_DO_COPY) { /* straight to the terminal: curses draws nothing */
		char *seq = term_osc52(r.copy, strlen(r.copy));
		if (seq) {
			fputs(seq, stdout);
			fflush(stdout);
		}
		free(seq);
	}
	free(r.copy);
	if (r.actions & APP_DO_QUIT)
		u->quit = true;
	if (r.actions & APP_DO_GENERATE)
		start_turn(u);
}

void ui_submit(struct ui *u, char *line)
{
	u->hint[0] = 0;
	if (slash_is_command(line)) {
		command(u, line);
	} else if (!line[strspn(line, " \t\n")]) {
		/* an empty line sends nothing */
	} else if (app_busy(u->a)) {
		u->restore = strdup(line);
		ui_notice(
			u, true,
			app_busy_prefilling(u->a)
				? "the conversation is being prefilled: send it again in a "
				  "moment (Esc stops it); your text is kept"
				: "an answer is being generated: Esc stops it; your text is kept");
	} else {
		const struct chat *c = app_chat(u->a);
		/* An unanswered message of this run (stopped while prefilling) is replaced. */
		bool replace = app_replaces_last(u->a);
		if (app_add_user(u->a, slash_unescape(line))) {
			u->restore = strdup(line);
			ui_notice(u, true, err_msg());
		} else {
			if (replace)
				view_from_chat(&u->v, c);
			else
				view_add(&u->v, VB_USER, NULL, slash_unescape(line));
			start_turn(u);
		}
	}
	free(line);
}

static void piece(void *p, enum sess_part part, const char *s, size_t n)
{
	struct ui *u = p;
	view_append(&u->v, u->stream_block, part == SESS_REASONING, s, n);
	u->dirty = true;
}

/* A notice of the turn under way, said before its answer, whose block the turn's
 * start made (after everything when there is none). */
static void notice_before_answer(struct ui *u, const char *m)
{
	int at = u->stream_block;
	if (at >= 0 && (size_t)at < u->v.n && view_insert(&u->v, (size_t)at, VB_NOTICE, m) == at)
		u->stream_block++, u->dirty = true;
	else
		ui_notice(u, false, m);
}

/* Older turns left the model's context: marked once per turn, as soon as the turn's
 * figures show it (before the answer), the turns staying on screen and saved; said
 * when more went than the last time (the context's start stays put for a while). */
static void tell_dropped(struct ui *u)
{
	if (u->told_dropped || !u->fig.dropped)
		return;
	u->told_dropped = true;
	view_mark_gone(&u->v, u->fig.dropped);
	if (!u->fig.dropped_more) /* said again only when more went */
		return;
	char m[160];
	if (u->fig.dropped == 1)
		snprintf(m, sizeof m,
			 "the oldest turn no longer fits the context: the model no "
			 "longer sees it (marked above)");
	else
		snprintf(m, sizeof m,
			 "the %d oldest turns no longer fit the context: the model no longer "
			 "sees them (marked above)",
			 u->fig.dropped);
	notice_before_answer(u, m);
}

/* A wait for a busy server (remote): told in the conversation, a line each, as
 * `run` tells it; the status bar shows it while it lasts. */
static void tell_waits(struct ui *u)
{
	if (u->fig.waits == u->waits_told)
		return;
	u->waits_told = u->fig.waits;
	if (u->fig.waiting[0])
		notice_before_answer(u, u->fig.waiting);
}

/* An autosave failure: told whole in the conversation, once until a save works
 * again (the status bar keeps a short mark while it lasts). */
static void tell_unsaved(struct ui *u)
{
	const char *e = u->fig.save_error;
	if (e[0] && strcmp(e, u->save_said))
		ui_notice(u, true, e);
	snprintf(u->save_said, sizeof u->save_said, "%s", e);
}

/* A message refused as too long for the context, taken back out of the
 * conversation: into the input line, to be trimmed, unless something is being typed
 * there (Up then finds it in the history). Frees text. */
static void put_back(struct ui *u, char *text)
{
	bool typed = rl_end > 0;
	if (!typed) {
		rl_replace_line(text, 0);
		rl_point = rl_end;
	}
	ui_notice(u, false,
		  typed ? "the message is taken back: Up brings it into the input line"
			: "the message is back in the input line");
	free(text);
}

/* The refused message's block and what follows it, out of the view: the notices
 * before it stay (a rebuild from the conversation would lose them). */
static void cut_refused(struct ui *u)
{
	size_t i = u->v.n;
	while (i > 0 && u->v.b[i - 1].kind != VB_USER)
		i--;
	if (i > 0)
		view_cut(&u->v, i - 1);
	else
		view_from_chat(&u->v, app_chat(u->a));
}

static void finish_turn(struct ui *u, int rc, const char *err)
{
	if (!rc) { /* turns that left the context: said before the answer, still known */
		app_figures(u->a, &u->fig);
		tell_dropped(u);
	}
	if (u->stream_block >= 0 && (size_t)u->stream_block < u->v.n) {
		struct vblock *b = &u->v.b[u->stream_block];
		b->streaming = false;
		/* Stopped before the first token: no answer was added. Notices may
		 * follow the block (a message sent while the prompt was prefilled). */
		if (!b->reasoning.n && !b->content.n && app_chat(u->a)->n &&
		    app_chat(u->a)->turns[app_chat(u->a)->n - 1].role == CHAT_USER)
			view_remove(&u->v, (size_t)u->stream_block);
	}
	u->stream_block = -1;
	u->hint[0] = 0;
	char *back = rc ? app_take_refused(u->a) : NULL;
	if (back) /* the conversation lost the message; the notices follow */
		cut_refused(u);
	app_figures(u->a, &u->fig);
	tell_unsaved(u);
	tell_waits(u); /* before the turn's error: the waits came first */
	if (rc) {
		ui_notice(u, true, err);
		if (back)
			put_back(u, back);
	} else if (app_replaces_last(u->a)) { /* stopped while the prompt was prefilled */
		ui_notice(u, false,
			  "stopped before the answer began: your next message replaces this one");
	} else if (u->fig.turn.stop == SESS_STOP_CANCEL) {
		ui_notice(u, false, "stopped: the partial answer is kept");
	} else if (u->fig.turn.stop == SESS_STOP_CTX) {
		ui_notice(u, false,
			  "context full: the answer stops here; the next message leaves "
			  "the oldest turns out to make room (--ctx: a larger context)");
	} else if (u->fig.turn.stop == SESS_STOP_MAX) {
		char m[96];
		/* a server says "length" for its own limits too, not -n alone */
		snprintf(m, sizeof m,
			 app_remote_url(u->a) ? "the server ended the answer at a length limit (%d "
						"tokens)"
					      : "the answer stops at %d tokens, the -n limit",
			 u->fig.turn.generated);
		ui_notice(u, false, m);
	}
	tell_dropped(u);
	u->told_dropped = false; /* the next turn's own */
}

static void resize(void)
{
	struct winsize ws;
	if (!ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) && ws.ws_row && ws.ws_col)
		resizeterm(ws.ws_row, ws.ws_col);
	clear();
}

/* Stops as SIGTSTP would, the terminal given back meanwhile; on SIGCONT the screen
 * and the modes come back (and the size, which may have changed), unless a signal
 * to leave came meanwhile: continued in the background, the UI leaves without
 * touching the terminal, which its shell has (that would stop it again, SIGTTOU). */
static bool screen_away;

static void suspend(void)
{
	fputs(UI_MODES_OFF, stdout);
	fflush(stdout);
	endwin();
	struct sigaction dfl = {0}, ours;
	dfl.sa_handler = SIG_DFL;
	sigemptyset(&dfl.sa_mask);
	sigaction(SIGTSTP, &dfl, &ours);
	raise(SIGTSTP); /* stopped here until SIGCONT */
	sigaction(SIGTSTP, &ours, NULL);
	if (got_stop) { /* killed while stopped (kill %1: SIGTERM, then SIGCONT) */
		screen_away = true;
		return;
	}
	resize();
	refresh(); /* back in the program's mode: raw, the alternate screen */
	fputs(UI_MODES_ON, stdout);
	fflush(stdout);
}

/* One pass: input, the worker's text, a frame when something changed. */
static void step(struct ui *u, double *last_fig)
{
	bool busy = app_busy(u->a);
	struct pollfd pfd = {STDIN_FILENO, POLLIN, 0};
	int timeout = u->klen ? 25 : busy ? 30 : 500;
	int pr = poll(&pfd, 1, timeout);
	if (pr > 0 && (pfd.revents & (POLLIN | POLLHUP))) {
		ssize_t n = read(STDIN_FILENO, u->kb + u->klen, sizeof u->kb - u->klen);
		if (n > 0) {
			u->klen += (size_t)n;
			in_process(u, false);
		} else if (n == 0 || (errno != EINTR && errno != EAGAIN)) {
			u->quit = true; /* the terminal is gone */
		}
	} else if (pr == 0 && u->klen) {
		in_process(u, true); /* a lone Esc */
	}
	if (pr == 0)
		in_paste_idle(u);
	if (got_stop)
		u->quit = true;
	if (got_tstp && !u->quit) {
		got_tstp = 0;
		suspend();
		u->dirty = true;
		if (screen_away) {
			u->quit = true;
			return; /* no frame on the shell's terminal */
		}
	}
	if (got_winch) {
		got_winch = 0;
		resize();
		u->dirty = true;
	}
	if (busy) {
		int rc = 0;
		char err[512];
		if (app_drain(u->a, piece, u, &rc, err, sizeof err)) {
			finish_turn(u, rc, err);
			busy = false; /* its figures told the turn's news already */
		}
	}
	double t = clock_now();
	if (t - *last_fig > (busy ? 0.1 : 0.5)) {
		app_figures(u->a, &u->fig);
		tell_unsaved(u);
		tell_waits(u);
		if (busy)
			tell_dropped(u);
		*last_fig = t;
		u->dirty = true;
	}
	if (u->dirty) {
		draw_frame(u);
		u->dirty = false;
	}
}

bool ui_term_usable(const char *term, char *why, size_t n)
{
	int err = 0;
	if (!term) {
		snprintf(why, n, "TERM is not set");
		return false;
	}
	/* initscr() would exit the program on a type without an entry, and draw a blank
	 * screen on one that cannot address the cursor (dumb, Emacs's shell buffers) */
	if (setupterm((char *)term, STDOUT_FILENO, &err) != OK) {
		snprintf(why, n, "TERM=%.60s has no terminfo entry", term);
		return false;
	}
	const char *cup = tigetstr("cup");
	bool ok = cup && cup != (const char *)-1 && *cup && tigetflag("hc") <= 0;
	del_curterm(cur_term);
	if (!ok)
		snprintf(why, n, "TERM=%.60s cannot move the cursor", term);
	return ok;
}

int ui_main(struct app *a, const char *notices, const struct ui_options *o)
{
	struct ui u;
	memset(&u, 0, sizeof u);
	u.a = a;
	u.stream_block = -1;
	view_init(&u.v);
	view_from_chat(&u.v, app_chat(a));
	ui_notice(&u, false, notices);
	/* setlocale(LC_ALL, "") ran in main: a locale without UTF-8 gets ASCII marks */
	u.ascii = strcmp(nl_langinfo(CODESET), "UTF-8") != 0;
	if (u.ascii)
		ui_notice(&u, true,
			  "the locale is not UTF-8: borders are drawn in ASCII and text beyond "
			  "ASCII may not show; set LANG=C.UTF-8 or another UTF-8 locale");
	ui_notice(&u, false, "Type a message and press Enter; /help lists commands and keys.");
	/* Our SIGWINCH handler before initscr: ncurses then leaves resizing to us. */
	struct sigaction sa = {0};
	sa.sa_handler = on_winch;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGWINCH, &sa, NULL);
	sa.sa_handler = on_stop;
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	sigaction(SIGINT, &sa, NULL); /* before initscr: else ncurses' ends the program */
	/* ours, not ncurses' (which leaves the modes below on while stopped); one that
	   is ignored stays so */
	struct sigaction old_tstp;
	sigaction(SIGTSTP, NULL, &old_tstp);
	bool own_tstp = !(old_tstp.sa_flags & SA_SIGINFO) && old_tstp.sa_handler == SIG_DFL;
	if (own_tstp) {
		sa.sa_handler = on_tstp;
		sigaction(SIGTSTP, &sa, NULL);
	}
	if (!initscr()) {
		fprintf(stderr, "qwenchat: cannot initialise the terminal\n");
		return EXIT_FAILURE;
	}
	raw();
	noecho();
	nonl();
	keypad(stdscr, FALSE);
	draw_init(o->no_color);
	fputs(UI_MODES_ON, stdout);
	fflush(stdout);
	in_init(&u);
	app_figures(a, &u.fig);
	u.waits_told = u.fig.waits; /* those while opening are among the notices */
	/* a resumed conversation, or a system prompt alone, is prefilled at once (as the
	   plain mode does), so that the context figure counts it from the start */
	bool resumed = chat_count(app_chat(a)) > 0;
	if ((resumed || chat_system(app_chat(a))) && app_start(a, true) == 0)
		snprintf(u.hint, sizeof u.hint, "prefilling the %s...",
			 resumed ? "resumed conversation" : "system prompt");
	u.dirty = true;
	double last_fig = 0;
	while (!u.quit)
		step(&u, &last_fig);
	if (app_busy(a)) { /* leaving mid-answer: stop it; the partial answer is saved */
		app_cancel(a);
		int rc;
		char err[8];
		while (!app_drain(a, piece, &u, &rc, err, sizeof err))
			usleep(10000);
	}
	in_done(&u);
	if (!screen_away) {
		fputs(UI_MODES_OFF, stdout);
		fflush(stdout);
		endwin();
	}
	if (own_tstp)
		sigaction(SIGTSTP, &old_tstp, NULL);
	view_free(&u.v);
	free(u.restore);
	if (fio_is_file(app_session_path(a))) {
		/* another chat may have saved since: --resume then opens that one */
		char *last = app_last_session(app_state_dir(a));
		bool ours = last && !strcmp(last, app_session_path(a));
		free(last);
		printf("conversation saved in %s (%s)\n", app_session_path(a),
		       ours ? "qwenchat --resume reopens it"
			    : "another chat saved since, so --resume opens that one; /load reopens "
			      "this");
	}
	if (got_stop)
		return 128 + got_stop;
	return plain_unsaved(a) ? EXIT_FAILURE : EXIT_SUCCESS;
}

/* ---- plain mode with readline ------------------------------------------- */

static const char *prefill_text;

static int put_prefill(void)
{
	if (prefill_text)
		rl_insert_text(prefill_text);
	prefill_text = NULL;
	return 0;
}

/* readline's reader, but one that gives up when SIGTERM or SIGHUP arrives (readline
 * itself retries an interrupted read). */
static int stop_aware_getc(FILE *f)
{
	for (;;) {
		unsigned char c;
		if (plain_stop_signal()) /* one that came while readline was between reads */
			return EOF;
		ssize_t n = read(fileno(f), &c, 1);
		if (n == 1)
			return c;
		if (n == 0 || errno != EINTR || plain_stop_signal())
			return EOF;
	}
}

static const char *plain_history; /* the history file of the plain mode, or NULL */

static char *rl_reader(const char *prompt, const char *prefill, bool *failed)
{
	(void)failed; /* readline says no more than end of input */
	prefill_text = prefill;
	rl_startup_hook = put_prefill;
	char *line = readline(prompt);
	if (line && *line && !plain_stop_signal()) { /* a line cut by a signal is not sent */
		add_history(line);
		if (plain_history)
			in_history_append(plain_history, line);
	}
	return line;
}

int ui_plain(struct app *a)
{
	if (!isatty(STDIN_FILENO))
		return plain_main(a, plain_getline);
	char *hist = fio_join(app_state_dir(a), "history");
	rl_readline_name = "qwenchat";
	rl_catch_signals = 0; /* plain_main handles SIGTERM and SIGHUP */
	rl_getc_function = stop_aware_getc;
	in_completion();
	in_history_keep();
	in_editing_keys();
	using_history();
	if (hist)
		in_history_load(hist);
	plain_history = hist;
	int rc = plain_main(a, rl_reader);
	plain_history = NULL;
	if (hist)
		in_history_trim(hist);
	free(hist);
	return rc;
}
