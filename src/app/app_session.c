/* app_session.c — the conversation's file in the state directory: a new one named and
 * locked, --resume's last one, the autosave after every change and /clear's move to a
 * new file. */
#include "src/app/app.h"
#include "src/app/app_state.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "src/base/err.h"
#include "src/base/fileio.h"

/* The file holding the path of the last session, for --resume. */
static char *last_file(const struct app *a)
{
	return fio_join(a->state_dir, "last-session");
}

/* sessions/DATE-TIME-PID.json, with -2, -3, ... when this process made one this
 * second already (/clear twice). */
static int new_session_path(struct app *a)
{
	char stamp[64], name[128], *dir = fio_join(a->state_dir, "sessions");
	time_t t = time(NULL);
	struct tm tm;
	localtime_r(&t, &tm);
	strftime(stamp, sizeof stamp, "%Y%m%d-%H%M%S", &tm);
	if (!dir || fio_private_dir(dir)) {
		free(dir);
		return -1;
	}
	a->session_path = NULL;
	for (int k = 1; k < 1000 && !a->session_path; k++) {
		if (k == 1)
			snprintf(name, sizeof name, "%s-%ld.json", stamp, (long)getpid());
		else
			snprintf(name, sizeof name, "%s-%ld-%d.json", stamp, (long)getpid(), k);
		char *p = fio_join(dir, name);
		if (!p)
			break;
		if (fio_exists(p))
			free(p);
		else
			a->session_path = p;
	}
	free(dir);
	return a->session_path ? 0 : err_set("cannot name a new conversation file");
}

/* Lets go of a conversation file's lock held on fd (the lock file goes only while
 * held: no other process uses it then). */
void app_release_lock(const char *path, int fd)
{
	if (fd >= 0 && path) {
		char lock[4200];
		snprintf(lock, sizeof lock, "%s.lock", path);
		unlink(lock);
		close(fd);
	}
}

/* A new conversation's file, locked as a resumed one is (see app_resume_last). */
int app_new_session_file(struct app *a)
{
	if (new_session_path(a))
		return -1;
	a->lock_fd = fio_try_lock(a->session_path);
	return a->lock_fd < 0 ? -1 : 0;
}

int app_resume_last(struct app *a, void (*notice)(const char *))
{
	char *path = app_last_session(a->state_dir);
	if (!path) {
		char *lf = last_file(a);
		err_prefix(lf && !fio_exists(lf) ? "--resume: no previous session" : "--resume");
		free(lf);
		return -1;
	}
	struct chat *c = chat_load(path);
	if (!c) {
		err_prefix("--resume");
		free(path);
		return -1;
	}
	chat_free(a->chat);
	a->chat = c;
	char msg[8500];
	a->lock_fd = fio_try_lock(path);
	if (a->lock_fd == FIO_LOCKED) {
		/* Another qwenchat has this conversation open: two writers would overwrite
		 * each other's turns, so this one goes on in a copy and both are kept. */
		if (new_session_path(a) || (a->lock_fd = fio_try_lock(a->session_path)) < 0) {
			free(path);
			return -1;
		}
		snprintf(msg, sizeof msg,
			 "%s is open in another qwenchat; resumed its %zu messages into a copy, %s",
			 path, chat_count(c), a->session_path);
		free(path);
	} else if (a->lock_fd < 0) {
		free(path);
		return -1;
	} else {
		a->session_path = path;
		snprintf(msg, sizeof msg, "resumed %zu message%s from %s", chat_count(c),
			 chat_count(c) == 1 ? "" : "s", path);
	}
	/* a chat killed while it answered leaves the question without its answer */
	if (c->n && c->turns[c->n - 1].role == CHAT_USER)
		snprintf(msg + strlen(msg), sizeof msg - strlen(msg),
			 "; the last message has no answer: /retry answers it");
	if (notice)
		notice(msg);
	return 0;
}

int app_new_session(struct app *a, char **left)
{
	*left = NULL;
	/* a conversation is never let go unsaved: what the last autosave could not write
	 * is written now, or the switch is refused unless /save wrote it as it is (a
	 * session pointer that cannot be written loses nothing: the file is whole) */
	pthread_mutex_lock(&a->lock);
	bool unsaved = a->fig.save_error[0] != 0;
	pthread_mutex_unlock(&a->lock);
	bool copy = a->saved_copy;
	if (unsaved && app_autosave(a) && a->session_unsaved && !copy) {
		char why[ERR_MAX];
		snprintf(why, sizeof why, "%s", err_msg());
		return err_set("the conversation is not saved (%s): /save it to a file "
			       "elsewhere first",
			       why);
	}
	if (!a->session_path || !fio_is_file(a->session_path))
		return 0; /* nothing saved yet: the file can go on */
	char *old = a->session_path;
	int old_fd = a->lock_fd;
	a->session_path = NULL, a->lock_fd = -1; /* app_new_session_file may fail before either */
	if (app_new_session_file(a)) {
		free(a->session_path);
		a->session_path = old, a->lock_fd = old_fd;
		return -1;
	}
	app_release_lock(old, old_fd);
	*left = old;
	return 0;
}

const char *app_save_failed(const struct app *a)
{
	return a->save_failed;
}

int app_autosave(struct app *a)
{
	int rc = app_held_record(a);
	if (!rc)
		rc = chat_save(a->chat, a->session_path, false);
	a->session_unsaved = rc != 0;
	a->saved_copy = false; /* called when the conversation changed (or to retry) */
	char *lf = last_file(a);
	if (!rc)
		rc = lf ? fio_write_atomic(lf, a->session_path, strlen(a->session_path), 0600, 0)
			: -1;
	free(lf);
	pthread_mutex_lock(&a->lock);
	if (rc)
		snprintf(a->fig.save_error, sizeof a->fig.save_error, "autosave failed: %s",
			 err_msg());
	else
		a->fig.save_error[0] = 0;
	pthread_mutex_unlock(&a->lock);
	return rc;
}
