/* plain.c — the line-mode chat: a prompt, the answer streamed to stdout, slash
 * commands; Ctrl-C stops an answer (keeping what was written). */
#include "src/app/plain.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "src/base/err.h"
#include "src/base/proc.h"
#include "src/base/term.h"

/* Rows of the help (slash_help): the key, a tab, what it does. */
static const char plain_keys[] =
	"keys:\n"
	"Ctrl-C\tstop the answer (the partial answer is kept); at the prompt, quit\n"
	"Ctrl-D\ton an empty line: quit, as /quit does\n"
	"//TEXT\ta line starting with // sends a message starting with /\n";

static struct app *running;               /* the app whose turn SIGINT stops */
static volatile sig_atomic_t stop_signal; /* SIGTERM, SIGHUP or SIGINT between turns */

/* fn for sig, unless sig is ignored (proc_catch); the action to put back in *old. */
static void take_signal(int sig, void (*fn)(int), struct sigaction *old)
{
	struct sigaction sa = {0};
	sa.sa_handler = fn;
	sigemptyset(&sa.sa_mask);
	proc_catch(sig, &sa, old);
}

static void on_sigint(int sig)
{
	(void)sig;
	if (running)
		app_cancel(running);
}

/* SIGTERM and SIGHUP end the chat as Ctrl-C ends an answer: the turn stops, its
 * partial answer is kept and saved, then plain_main returns 128 + the signal. So does
 * SIGINT between turns (Ctrl-C at the prompt), with the conversation's lock let go. */
static void on_stop(int sig)
{
	stop_signal = sig;
	if (running)
		app_cancel(running);
}

int plain_stop_signal(void)
{
	return stop_signal;
}

char *plain_getline(const char *prompt, const char *prefill, bool *failed)
{
	if (prefill)
		printf("(your last message was: %s)\n", prefill);
	if (prompt && isatty(STDIN_FILENO)) {
		fputs(prompt, stdout);
		fflush(stdout);
	}
	char *line = NULL;
	size_t cap = 0;
	ssize_t n;
	/* A C string ends at a NUL, so a line holding one would be sent cut short
	 * without a word: it is refused, visibly, and the next line read. */
	while ((n = getline(&line, &cap, stdin)) >= 0 && memchr(line, 0, (size_t)n))
		fprintf(stderr, "qwenchat: the line holds a NUL byte; not sent\n");
	if (n < 0) {
		/* a read error is no end of input: said, and the chat's exit status is 1 */
		if (ferror(stdin) && errno != EINTR) {
			fprintf(stderr, "qwenchat: standard input: read error: %s\n",
				strerror(errno));
			*failed = true;
		}
		free(line);
		return NULL;
	}
	if (n && line[n - 1] == '\n')
		line[--n] = 0;
	if (n && line[n - 1] == '\r') /* a CRLF file reads as its LF form */
		line[n - 1] = 0;
	return line;
}

struct plain_out {
	bool tty, show_reasoning;
	int last; /* -1 nothing yet, else the sess_part written last */
	struct app *a;
	bool told; /* the turn's notices (turns dropped) are out */
};

/* Older turns left the context: said when more of them than before went, once per
 * turn (the start of the context stays put for several turns). */
static void tell_dropped(struct plain_out *o)
{
	if (o->told)
		return;
	o->told = true;
	struct app_figures f;
	app_figures(o->a, &f);
	if (!f.dropped_more) /* said again only when more went */
		return;
	if (f.dropped == 1)
		fprintf(stderr, "qwenchat: the oldest turn no longer fits the context: the model "
				"no longer sees it (it stays in the saved conversation)\n");
	else if (f.dropped)
		fprintf(stderr,
			"qwenchat: the %d oldest turns no longer fit the context: the model no "
			"longer sees them (they stay in the saved conversation)\n",
			f.dropped);
}

static int emit(void *u, enum sess_part part, const char *text, size_t len)
{
	struct plain_out *o = u;
	tell_dropped(o);
	if (part == SESS_REASONING && !o->show_reasoning)
		return 0;
	if ((int)part != o->last) {
		if (part == SESS_REASONING)
			fputs(o->tty ? "\033[2mthinking: " : "thinking: ", stdout);
		else if (o->last == SESS_REASONING)
			fputs(o->tty ? "\033[0m\n\n" : "\n\n", stdout);
		o->last = part;
	}
	/* The model's text may hold escape sequences: on a terminal they are shown,
	 * not obeyed; a pipe gets the bytes as they are. */
	if (o->tty)
		term_write_safe(stdout, text, len);
	else
		fwrite(text, 1, len, stdout);
	fflush(stdout);
	/* nobody reads the answer (a closed pipe, a full disk): it stops here, kept, and
	 * the chat ends; main says the write failed */
	return ferror(stdout) ? 1 : 0;
}

/* One line of a loaded conversation or a message, made safe for a terminal. */
static void print_safe(FILE *f, const char *prefix, const char *text, const char *suffix)
{
	fputs(prefix, f);
	term_write_safe(f, text, strlen(text));
	fputs(suffix, f);
}

bool plain_unsaved(struct app *a)
{
	struct app_figures f;
	app_figures(a, &f);
	/* the conversation is saved; that file is not: said again at the end (the line
	   that said it first may be far above, or on the UI's screen, gone) as the reason
	   for the exit status */
	const char *why = app_save_failed(a);
	if (*why)
		print_safe(stderr, "qwenchat: the last /save wrote nothing (exit status 1): ",
			   strncmp(why, "/save: ", 7) ? why : why + 7, "\n");
	if (f.save_error[0])
		print_safe(stderr, "qwenchat: the conversation's last changes are not saved (",
			   f.save_error, ")\n");
	return f.save_error[0] || *app_save_failed(a);
}

/* One turn; a message refused as too long for the context comes back in *prefill,
 * to be trimmed. */
static void turn(struct app *a, char **prefill)
{
	struct plain_out o = {isatty(STDOUT_FILENO), app_show_reasoning(a), -1, a, false};
	struct sigaction old;
	running = a;
	take_signal(SIGINT, on_sigint, &old);
	int rc = app_turn(a, emit, &o);
	sigaction(SIGINT, &old, NULL);
	running = NULL;
	if (o.tty && o.last == SESS_REASONING)
		fputs("\033[0m", stdout);
	fputs("\n", stdout);
	fflush(stdout);
	struct app_figures f;
	app_figures(a, &f);
	if (rc)
		print_safe(stderr, "qwenchat: ", err_msg(), "\n");
	else if (app_replaces_last(a)) /* stopped while the prompt was prefilled */
		fprintf(stderr, "qwenchat: stopped before the answer began; your next message "
				"replaces this one\n");
	else if (f.turn.stop == SESS_STOP_CANCEL)
		fprintf(stderr, "qwenchat: stopped; the partial answer is kept\n");
	else if (f.turn.stop == SESS_STOP_CTX)
		fprintf(stderr,
			"qwenchat: context full (%d tokens): the answer stops here; the next "
			"message leaves the oldest turns out to make room (--ctx: a larger "
			"context)\n",
			f.ctx_max);
	else if (f.turn.stop == SESS_STOP_MAX && app_remote_url(a)) /* its context, or -n */
		fprintf(stderr,
			"qwenchat: the server ended the answer at a length limit (%d token%s)\n",
			f.turn.generated, f.turn.generated == 1 ? "" : "s");
	char *back = rc ? app_take_refused(a) : NULL;
	if (back) {
		/* the error says what is long: the message, or the system prompt */
		fprintf(stderr, "qwenchat: the message is back in the input line\n");
		free(*prefill);
		*prefill = back;
	}
	tell_dropped(&o);
	if (f.save_error[0])
		print_safe(stderr, "qwenchat: ", f.save_error, "\n");
}

/* Runs a slash command; returns 1 to quit. *prefill gets /edit's text. */
static int command(struct app *a, const char *line, char **prefill)
{
	struct app_result r;
	app_command(a, line, &r);
	if (r.actions & APP_DO_HELP) {
		char *h = slash_help(plain_keys);
		fputs(h ? h : "", stdout);
		free(h);
	}
	if (r.actions & APP_DO_DEBUG)
		fputs("the debug pane needs the terminal UI; /stats shows the figures\n", stdout);
	if ((r.actions & APP_DO_COPY) && !isatty(STDOUT_FILENO)) {
		r.actions &= ~(unsigned)APP_DO_COPY;
		r.error = true;
		snprintf(r.msg, sizeof r.msg,
			 "/copy: the output is not a terminal: nothing copied");
	}
	if (r.msg[0])
		print_safe(r.error ? stderr : stdout, r.error ? "qwenchat: " : "", r.msg, "\n");
	fflush(stdout);
	if (r.actions & APP_DO_EDIT) {
		free(*prefill);
		*prefill = r.edit;
	} else {
		free(r.edit);
	}
	if (r.actions & APP_DO_COPY) {
		char *seq = term_osc52(r.copy, strlen(r.copy));
		if (seq)
			fputs(seq, stdout);
		fflush(stdout);
		free(seq);
	}
	free(r.copy);
	if (r.actions & APP_DO_GENERATE)
		turn(a, prefill);
	return (r.actions & APP_DO_QUIT) != 0;
}

int plain_main(struct app *a, plain_read_fn read_line)
{
	const struct chat *c = app_chat(a);
	/* A loaded conversation is a file anyone could have written: printed safe. */
	for (size_t i = 0; i < c->n; i++) {
		const struct chat_turn *t = &c->turns[i];
		printf("%s: ", chat_role_name(t->role));
		print_safe(stdout, "", t->content, "\n");
		for (size_t j = 0; j < t->n_calls; j++) {
			print_safe(stdout, "tool call: ", t->calls[j].name, " ");
			print_safe(stdout, "", t->calls[j].arguments, "\n");
		}
	}
	if (c->n && app_prefill(a) < 0)
		print_safe(stderr, "qwenchat: ", err_msg(), "\n");
	/* No SA_RESTART: a read waiting for the next line returns, and the loop ends. */
	struct sigaction old_term, old_hup, old_int;
	take_signal(SIGTERM, on_stop, &old_term);
	take_signal(SIGHUP, on_stop, &old_hup);
	take_signal(SIGINT, on_stop, &old_int); /* a turn has its own while it runs */
	char *prefill = NULL;
	bool input_failed = false;
	for (;;) {
		char *line = stop_signal ? NULL : read_line("> ", prefill, &input_failed);
		free(prefill);
		prefill = NULL;
		if (!line || stop_signal) {
			free(line);
			break;
		}
		int quit = 0;
		if (slash_is_command(line)) {
			quit = command(a, line, &prefill);
		} else if (line[strspn(line, " \t")]) {
			if (app_add_user(a, slash_unescape(line)))
				print_safe(stderr, "qwenchat: ", err_msg(), "\n");
			else
				turn(a, &prefill);
		}
		free(line);
		if (quit || stop_signal || ferror(stdout)) /* see emit */
			break;
	}
	free(prefill);
	sigaction(SIGTERM, &old_term, NULL);
	sigaction(SIGHUP, &old_hup, NULL);
	sigaction(SIGINT, &old_int, NULL);
	if (stop_signal)
		return 128 + stop_signal;
	return plain_unsaved(a) || input_failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
