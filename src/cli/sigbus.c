/* sigbus.c — SIGBUS from a mapped file that shrank: the file is found in
 * /proc/self/maps by the faulting address, with async-signal-safe calls only. */
#include "src/cli/sigbus.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <termios.h>
#include <unistd.h>

static struct termios saved_tty;
static bool have_tty;
static volatile sig_atomic_t fullscreen; /* the UI's screen is up */
static const char *volatile g_note;
static void (*volatile g_cleanup)(void);
static atomic_flag speaking = ATOMIC_FLAG_INIT; /* a thread is in on_sigbus */

static void put(const char *s)
{
	size_t n = strlen(s);
	while (n > 0) {
		ssize_t w = write(STDERR_FILENO, s, n);
		if (w <= 0)
			return;
		s += w;
		n -= (size_t)w;
	}
}

static uintptr_t hex(const char **p)
{
	uintptr_t v = 0;
	for (;; ++*p) {
		char c = **p;
		int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
		if (d < 0)
			return v;
		v = v * 16 + (uintptr_t)d;
	}
}

/* The path of the mapping holding addr into out (a line of /proc/self/maps is
 * "START-END PERMS OFFSET DEV INODE PATH"); false when not found. */
static bool mapped_file(uintptr_t addr, char *out, size_t size)
{
	int fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	char buf[8192], line[4608];
	size_t ll = 0;
	bool found = false;
	ssize_t n;
	while (!found && (n = read(fd, buf, sizeof buf)) > 0)
		for (ssize_t i = 0; i < n && !found; i++) {
			if (buf[i] != '\n') {
				if (ll < sizeof line - 1)
					line[ll++] = buf[i];
				continue;
			}
			line[ll] = '\0';
			ll = 0;
			const char *p = line;
			uintptr_t lo = hex(&p);
			p++;
			uintptr_t hi = hex(&p);
			const char *path = strchr(line, '/');
			if (addr >= lo && addr < hi && path) {
				size_t k = strlen(path) < size - 1 ? strlen(path) : size - 1;
				memcpy(out, path, k);
				out[k] = '\0';
				found = true;
			}
		}
	close(fd);
	return found;
}

/* With the full-screen UI up, its modes (mouse, bracketed paste, the hidden cursor,
 * the alternate screen) left and the terminal's saved settings restored, with
 * async-signal-safe calls only. Not from the background (a UI stopped, its terminal
 * already given back, then killed and continued): the terminal is the shell's, and
 * tcsetattr there would stop the process again (SIGTTOU) instead of letting it die. */
static void give_terminal_back(void)
{
	if (!have_tty || !fullscreen || tcgetpgrp(STDIN_FILENO) != getpgrp())
		return;
	static const char reset[] =
		"\033[?1006l\033[?1000l\033[?2004l\033[0m\033[?25h\033[?1049l\r\n";
	if (write(STDOUT_FILENO, reset, sizeof reset - 1) < 0) {
		/* nothing to do about it */
	}
	tcsetattr(STDIN_FILENO, TCSANOW, &saved_tty);
}

static void on_sigbus(int sig, siginfo_t *si, void *ctx)
{
	(void)sig, (void)ctx;
	/* Threads reading the shrunk file fault together: one speaks and exits, the others
	 * wait for that exit instead of writing a second "qwenchat: " into its line. */
	if (atomic_flag_test_and_set(&speaking))
		for (;;)
			pause();
	char path[4096];
	give_terminal_back(); /* before speaking */
	void (*cleanup)(void) = g_cleanup;
	if (cleanup)
		cleanup();
	const char *note = g_note;
	put("qwenchat: ");
	if (mapped_file((uintptr_t)si->si_addr, path, sizeof path)) {
		put(path);
		put(": the file shrank while in use (truncated or replaced in place); stopping");
	} else {
		put("a mapped file shrank while in use (SIGBUS); stopping");
	}
	if (note) {
		put(" (");
		put(note);
		put(")");
	}
	put("\n");
	_exit(1);
}

void sigbus_guard(void)
{
	have_tty = isatty(STDIN_FILENO) && tcgetattr(STDIN_FILENO, &saved_tty) == 0;
	struct sigaction sa = {0};
	sa.sa_sigaction = on_sigbus;
	sa.sa_flags = SA_SIGINFO;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGBUS, &sa, NULL);
}

/* The signals whose default action ends the program (and that no one handles here):
 * with the UI's screen up, the terminal is given back before the program dies of
 * them, as it would be on a clean exit; the status stays death by that signal. */
static const int fatal_signals[] = {SIGQUIT, SIGILL,  SIGTRAP,   SIGABRT, SIGFPE,  SIGSEGV, SIGUSR1,
				    SIGUSR2, SIGALRM, SIGVTALRM, SIGPROF, SIGXCPU, SIGSYS};
#define N_FATAL (sizeof fatal_signals / sizeof fatal_signals[0])
static struct sigaction fatal_old[N_FATAL];
static bool fatal_held[N_FATAL];

static void on_fatal(int sig)
{
	int saved = errno;
	give_terminal_back();
	/* Die of it: sent again with the default action, it is delivered when the
	 * handler returns (a fault comes again from the same instruction). */
	signal(sig, SIG_DFL);
	raise(sig);
	errno = saved;
}

void sigbus_fullscreen(bool on)
{
	fullscreen = on;
	for (size_t i = 0; i < N_FATAL; i++) {
		if (on && !fatal_held[i]) {
			struct sigaction sa = {0}, old;
			if (sigaction(fatal_signals[i], NULL, &old) != 0 ||
			    (old.sa_flags & SA_SIGINFO) || old.sa_handler != SIG_DFL)
				continue; /* ignored or handled by someone: left so */
			sa.sa_handler = on_fatal;
			sigemptyset(&sa.sa_mask);
			if (sigaction(fatal_signals[i], &sa, &fatal_old[i]) == 0)
				fatal_held[i] = true;
		} else if (!on && fatal_held[i]) {
			sigaction(fatal_signals[i], &fatal_old[i], NULL);
			fatal_held[i] = false;
		}
	}
}

void sigbus_note(const char *note)
{
	g_note = note;
}

void sigbus_cleanup(void (*fn)(void))
{
	g_cleanup = fn;
}
