/* history.c — the input history file, $XDG_STATE_HOME/qwenchat/history: what
 * readline's history list holds, kept across sessions. readline reads it; writing is
 * ours, because readline's writers follow a link at the file, and write_history and
 * history_truncate_file write through a temporary file with a predictable name
 * (history-PID.tmp) that a planted link aims. Each entry is a "#time" line and the
 * message (readline's format with timestamps, so that a message of several lines
 * comes back whole). Failures cost the history, never the chat: nothing is reported. */
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <readline/history.h>

#include "src/base/fileio.h"
#include "src/base/strbuf.h"
#include "ui/uistate.h"

/* The entries kept in the file. */
#define HISTORY_KEEP      1000
/* A larger file is not read back (it is not ours, or not a history). */
#define HISTORY_MAX_BYTES (64u << 20)

/* Whether a line of a message would read back as a stamp, "#" and a digit, behind
 * zero or more backslashes: such a line gets one backslash more in the file, and
 * loses one when read back (unescape), so every message comes back as sent. */
static bool stamp_like(const char *p)
{
	while (*p == '\\')
		p++;
	return p[0] == '#' && p[1] >= '0' && p[1] <= '9';
}

/* Appends one entry to b. */
static void put_entry(struct strbuf *b, const char *stamp, const char *line)
{
	if (stamp && stamp[0] == '#')
		sb_printf(b, "%s\n", stamp);
	else
		sb_printf(b, "#%lld\n", (long long)time(NULL));
	for (const char *p = line;;) {
		size_t n = strcspn(p, "\n");
		sb_printf(b, "%s%.*s\n", stamp_like(p) ? "\\" : "", (int)n, p);
		if (!p[n])
			break;
		p += n + 1;
	}
}

/* The entries as read from the file, their escaped lines as they were sent. */
static void unescape(void)
{
	for (int i = 0; i < history_length; i++) {
		HIST_ENTRY *h = history_get(history_base + i);
		if (!h || !strchr(h->line, '\\'))
			continue;
		struct strbuf b = {0};
		for (const char *p = h->line;;) {
			size_t n = strcspn(p, "\n");
			bool esc = p[0] == '\\' && stamp_like(p + 1);
			sb_printf(&b, "%.*s%s", (int)(n - esc), p + esc, p[n] ? "\n" : "");
			if (!p[n])
				break;
			p += n + 1;
		}
		if (!b.oom && strcmp(b.p ? b.p : "", h->line)) {
			HIST_ENTRY *old = replace_history_entry(i, b.p ? b.p : "", h->data);
			if (old)
				free_history_entry(old);
		}
		free(b.p);
	}
}

/* Replaces the file by the last 1,000 entries of readline's list (0600, a link there
 * replaced). */
static void in_history_save(const char *path)
{
	struct strbuf b = {0};
	int n = history_length;
	for (int i = n > HISTORY_KEEP ? n - HISTORY_KEEP : 0; i < n; i++) {
		HIST_ENTRY *h = history_get(history_base + i);
		if (h)
			put_entry(&b, h->timestamp, h->line);
	}
	if (!b.oom)
		(void)fio_write_atomic(path, b.p ? b.p : "", b.n, 0600, 0);
	free(b.p);
}

/* Whether fd is the chat's own history: a regular file of one name (a hard link would
 * carry every message to the file it shares). A mode open to others is made 0600. */
static bool own_file(int fd)
{
	struct stat st;
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_nlink != 1)
		return false;
	if (st.st_mode & 077)
		(void)fchmod(fd, 0600);
	return true;
}

void in_history_append(const char *path, const char *line)
{
	/* O_APPEND, as readline's append_history: another chat's entries stay; never
	 * through a link (O_NOFOLLOW: the exit's in_history_trim replaces one), never
	 * waiting on a FIFO (O_NONBLOCK), never into a file of two names (own_file) */
	int fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC,
		      0600);
	if (fd < 0)
		return;
	struct strbuf b = {0};
	put_entry(&b, NULL, line);
	if (own_file(fd) && !b.oom)
		(void)fio_write_fd(fd, b.p, b.n);
	close(fd);
	free(b.p);
}

/* Where the last `keep` entries of text[0..len) begin: at a "#digits" line. */
static size_t tail_start(const char *text, size_t len, int keep)
{
	int seen = 0;
	for (size_t i = len; i-- > 0;) {
		if (text[i] != '#' || (i > 0 && text[i - 1] != '\n'))
			continue;
		size_t j = i + 1;
		while (j < len && text[j] >= '0' && text[j] <= '9')
			j++;
		if (j > i + 1 && j < len && text[j] == '\n' && ++seen == keep)
			return i;
	}
	return 0;
}

void in_history_trim(const char *path)
{
	struct stat st;
	if (lstat(path, &st) != 0 || S_ISLNK(st.st_mode) ||
	    (S_ISREG(st.st_mode) && st.st_nlink != 1)) { /* none, or a link to replace */
		in_history_save(path);
		return;
	}
	if (!S_ISREG(st.st_mode))
		return;
	size_t len;
	char *text = fio_read_file(path, HISTORY_MAX_BYTES, &len);
	if (!text)
		return;
	size_t start = tail_start(text, len, HISTORY_KEEP);
	if (start > 0)
		(void)fio_write_atomic(path, text + start, len - start, 0600, 0);
	free(text);
}

void in_history_load(const char *path)
{
	/* A message of several lines comes back whole: each entry starts with a "#time"
	 * line in the file (readline stamps entries only with a comment character) and
	 * the lines up to the next stamp are the entry. */
	history_comment_char = '#';
	history_write_timestamps = 1;
	history_multiline_entries = 1;
	/* Only a regular file of one name is read: open() would wait forever on a FIFO;
	 * a link, soft or hard, is not followed, and the exit's in_history_trim replaces
	 * it. */
	int fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	bool own = fd >= 0 && own_file(fd);
	if (fd >= 0)
		close(fd);
	if (!own)
		return;
	FILE *f = fopen(path, "r");
	int first = f ? fgetc(f) : EOF;
	if (f)
		fclose(f);
	history_multiline_entries = first == '#' || first == EOF;
	int rc = read_history(path);
	if (rc == 0 && history_multiline_entries)
		unescape();
	if (rc == 0 && !history_multiline_entries) {
		/* a file from before the stamps: a line per entry, stamped and written anew */
		int n = history_length;
		char **lines = calloc((size_t)n + 1, sizeof *lines);
		for (int i = 0; lines && i < n; i++)
			lines[i] = strdup(history_get(history_base + i)->line);
		clear_history();
		for (int i = 0; lines && i < n; i++)
			if (lines[i])
				add_history(lines[i]);
		in_history_save(path);
		for (int i = 0; lines && i < n; i++)
			free(lines[i]);
		free(lines);
	}
	history_multiline_entries = 1;
}
