/* live.c — lines redrawn in place below a terminal's output, through terminfo.
 *
 * Between draws the cursor rests, hidden, at the start of the last line drawn. A draw
 * goes back up to the first line, clears the screen from there down and writes the
 * new lines; a message is written from that first line, and the lines again below
 * it, so messages scroll up and the lines stay at the bottom of the output. */
#include "ui/live.h"
#include "src/base/strbuf.h"
#include "src/base/term.h"

#include <curses.h>
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <term.h>
#include <termios.h>
#include <unistd.h>
#include <utf8proc.h>

enum { LIVE_MAX_LINES = 16 };

struct live {
	int fd;
	/* terminfo strings (NULL: the terminal lacks it) */
	const char *cr, *cuu1, *cuu, *el, *ed, *civis, *cnorm;
	bool last_column_wraps;    /* automatic margins without the newline glitch: writing the
				 * last column wraps at once, so lines stop one short */
	bool hidden;               /* the cursor, since the first draw */
	char *text;                /* the lines on screen, to draw again below a message */
	int n;                     /* lines on screen */
	int width[LIVE_MAX_LINES]; /* their columns */
};

/* What signal handlers use, written out when the area opens: they may call write()
 * and nothing that formats or allocates. */
static struct {
	volatile sig_atomic_t drawn, lost, cols;
	int fd;
	char note[64], show[64], hide[64]; /* to the line's start, cleared; cursor on, off */
	size_t note_n, show_n, hide_n;
} sig;

/* Keys typed while the lines show would be echoed into them, and an echoed Enter moves
 * the cursor off the line the next draw starts from, leaving a stale copy behind: the
 * terminal's echo is off while the area is open, where the program's input is the
 * same terminal and the program is in its foreground (a background program that sets
 * the terminal is stopped, and the shell's modes are not its to change). The calls are
 * async-signal-safe: Ctrl-Z and a stopping signal give the echo back from handlers. */
static struct {
	bool input;                /* stdin is the area's terminal */
	struct termios saved;      /* the modes to give back */
	volatile sig_atomic_t off; /* echo turned off by us */
} tty_echo;

static void echo_quiet(void)
{
	struct termios t;
	if (!tty_echo.input || tty_echo.off || tcgetpgrp(STDIN_FILENO) != getpgrp() ||
	    tcgetattr(STDIN_FILENO, &t) != 0)
		return;
	tty_echo.saved = t;
	t.c_lflag &= ~(tcflag_t)(ECHO | ECHONL);
	if (tcsetattr(STDIN_FILENO, TCSANOW, &t) == 0)
		tty_echo.off = 1;
}

/* Also at exit (atexit), whatever path ends the program. SIGTTOU held: a program put
 * in the background meanwhile still gives the echo back instead of stopping. */
static void echo_restore(void)
{
	if (!tty_echo.off)
		return;
	sigset_t ttou, old;
	sigemptyset(&ttou);
	sigaddset(&ttou, SIGTTOU);
	sigprocmask(SIG_BLOCK, &ttou, &old);
	tcsetattr(STDIN_FILENO, TCSANOW, &tty_echo.saved);
	sigprocmask(SIG_SETMASK, &old, NULL);
	tty_echo.off = 0;
}

static bool same_terminal(int a, int b)
{
	struct stat sa, sb;
	return isatty(a) && isatty(b) && fstat(a, &sa) == 0 && fstat(b, &sb) == 0 &&
	       sa.st_rdev == sb.st_rdev;
}

static void write_all(int fd, const char *p, size_t n)
{
	while (n > 0) {
		ssize_t w = write(fd, p, n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return; /* a terminal gone: nothing to tell it */
		p += w;
		n -= (size_t)w;
	}
}

/* ---- terminfo -------------------------------------------------------------------------- */

static const char *cap(const char *name)
{
	const char *s = tigetstr(name);
	return s && s != (const char *)-1 && *s ? s : NULL;
}

/* tputs writes through a function of one character: this is where it goes. */
static struct strbuf *sink;

static int sink_putc(int c)
{
	char ch = (char)c;
	sb_put(sink, &ch, 1);
	return c;
}

static void put_cap(struct strbuf *b, const char *s)
{
	if (!s)
		return;
	sink = b;
	tputs(s, 1, sink_putc);
	sink = NULL;
}

/* A capability's bytes into a signal handler's buffer. */
static size_t keep(char *dst, size_t cap_n, const char *a, const char *b)
{
	struct strbuf s = {0};
	put_cap(&s, a);
	put_cap(&s, b);
	size_t n = !s.oom && s.n <= cap_n ? s.n : 0;
	if (n)
		memcpy(dst, s.p, n);
	free(s.p);
	return n;
}

struct live *live_open(int fd, const char *term)
{
	int err = 0;
	if (!isatty(fd) || !term || !*term || setupterm((char *)term, fd, &err) != OK)
		return NULL;
	struct live *l = calloc(1, sizeof *l);
	if (!l || tigetflag("hc") > 0 || !(l->cuu1 = cap("cuu1")) || !(l->el = cap("el")) ||
	    !(l->ed = cap("ed"))) {
		free(l);
		del_curterm(cur_term);
		return NULL;
	}
	l->fd = fd;
	l->cr = cap("cr") ? cap("cr") : "\r";
	l->cuu = cap("cuu");
	l->civis = cap("civis");
	l->cnorm = cap("cnorm");
	l->last_column_wraps = tigetflag("am") > 0 && tigetflag("xenl") <= 0;
	sig.fd = fd;
	sig.note_n = keep(sig.note, sizeof sig.note, l->cr, l->el);
	sig.show_n = keep(sig.show, sizeof sig.show, l->cnorm, NULL);
	sig.hide_n = keep(sig.hide, sizeof sig.hide, l->civis, NULL);
	sig.cols = 80;
	sig.lost = 0;
	static bool registered;
	tty_echo.input = same_terminal(STDIN_FILENO, fd);
	if (tty_echo.input && !registered)
		registered = atexit(echo_restore) == 0;
	if (registered)
		echo_quiet();
	return l;
}

int live_columns(struct live *l)
{
	struct winsize ws;
	int c = ioctl(l->fd, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0 ? ws.ws_col : tigetnum("cols");
	if (c <= 0)
		c = 80;
	if (l->last_column_wraps && c > 1)
		c--;
	sig.cols = c;
	return c;
}

/* The rows the lines may take: one less than the terminal's. Lines past its rows would
 * scroll the screen at every redraw; lines on all of them are cleared from the top
 * row, which tmux (scroll-on-clear) takes for a cleared screen and keeps in its
 * history, a copy at every redraw. */
static int live_rows(struct live *l)
{
	struct winsize ws;
	int r = ioctl(l->fd, TIOCGWINSZ, &ws) == 0 && ws.ws_row > 0 ? ws.ws_row : tigetnum("lines");
	return r > 2 ? r - 1 : 1;
}

/* ---- drawing ------------------------------------------------------------------------------ */

/* From where the cursor rests back to the first line drawn, the screen cleared from
 * there down. A line the terminal has since narrowed under takes more rows, when it
 * rewraps its lines as tmux and most terminals do. */
static void to_top(struct live *l, struct strbuf *b, int cols)
{
	put_cap(b, l->cr);
	if (sig.lost) { /* what is above now is the shell's, not ours */
		sig.lost = 0;
		l->n = 0;
	}
	int up = 0;
	for (int i = 0; i + 1 < l->n; i++)
		up += l->width[i] > cols ? (l->width[i] + cols - 1) / cols : 1;
	if (up > 1 && l->cuu)
		put_cap(b, tiparm(l->cuu, up));
	else
		for (int i = 0; i < up; i++)
			put_cap(b, l->cuu1);
	put_cap(b, l->ed);
}

/* The lines of text, each cut at the width, as many as the rows hold (the first), the
 * cursor left at the start of the last. */
static void put_lines(struct live *l, struct strbuf *b, const char *text, int cols)
{
	int rows = live_rows(l);
	l->n = 0;
	for (const char *s = text; s && l->n < LIVE_MAX_LINES && l->n < rows;) {
		const char *end = strchr(s, '\n');
		size_t len = end ? (size_t)(end - s) : strlen(s), i = 0;
		int w = 0;
		while (i < len) {
			utf8proc_int32_t cp;
			utf8proc_ssize_t k = utf8proc_iterate((const utf8proc_uint8_t *)s + i,
							      (utf8proc_ssize_t)(len - i), &cp);
			int cw = k > 0 ? utf8proc_charwidth(cp) : 1;
			if (k < 1 || w + cw > cols)
				break;
			i += (size_t)k;
			w += cw;
		}
		if (l->n > 0) {
			put_cap(b, l->cr);
			sb_put(b, "\n", 1);
		}
		sb_put(b, s, i);
		l->width[l->n++] = w;
		s = end ? end + 1 : NULL;
	}
	put_cap(b, l->cr);
}

static void flush_out(struct live *l, struct strbuf *b)
{
	if (!b->oom)
		write_all(l->fd, b->p, b->n);
	free(b->p);
}

void live_draw(struct live *l, const char *text)
{
	struct strbuf b = {0};
	int cols = live_columns(l);
	free(l->text);
	l->text = strdup(text); /* NULL when out of memory: a message then loses the lines */
	if (!l->hidden) {
		put_cap(&b, l->civis);
		l->hidden = true;
	}
	to_top(l, &b, cols);
	put_lines(l, &b, text, cols);
	flush_out(l, &b);
	sig.drawn = 1;
}

void live_print(struct live *l, const char *msg)
{
	struct strbuf b = {0};
	int cols = live_columns(l);
	if (l->n > 0)
		to_top(l, &b, cols);
	term_safe(&b, msg, strlen(msg));
	if (l->n > 0)
		put_lines(l, &b, l->text, cols);
	flush_out(l, &b);
}

void live_close(struct live *l)
{
	if (!l)
		return;
	struct strbuf b = {0};
	sig.drawn = 0;
	if (l->n > 0) {
		put_cap(&b, l->cr);
		sb_put(&b, "\n", 1);
	}
	if (l->hidden)
		put_cap(&b, l->cnorm);
	flush_out(l, &b);
	tty_echo.input = false; /* first: a Ctrl-Z from here on does not take it again */
	echo_restore();
	free(l->text);
	free(l);
	del_curterm(cur_term);
}

/* ---- from signal handlers ------------------------------------------------------------- */

bool live_signal_note(const char *msg)
{
	if (!sig.drawn)
		return false;
	size_t n = 0;
	while (msg[n] && n + 1 < (size_t)sig.cols)
		n++;
	write_all(sig.fd, sig.note, sig.note_n);
	write_all(sig.fd, msg, n);
	return true;
}

void live_signal_cursor(bool visible)
{
	if (visible)
		echo_restore();
	else
		echo_quiet();
	if (!sig.drawn)
		return;
	if (visible) {
		write_all(sig.fd, "\r\n", 2);
		write_all(sig.fd, sig.show, sig.show_n);
	} else {
		write_all(sig.fd, sig.hide, sig.hide_n);
	}
}

void live_signal_lost(void)
{
	sig.lost = 1;
}
