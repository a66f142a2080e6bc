/* rundir.c — a training run's directory: one run at a time (the lock), what a new
 * run may start in, and what a new run that failed before its first checkpoint
 * leaves to remove. */
#include "src/train/rundir.h"
#include "src/base/err.h"
#include "src/base/fileio.h"
#include "src/train/checkpoint.h"
#include "src/train/trainstate.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define LOCK_NAME ".train" /* fio_try_lock adds ".lock" */

/* What a run that never saved leaves in its directory (see rundir_check_new), and in
 * its train-state/: the streams' caches. */
static const char *const g_ours[] = {"train-state", "train-log.jsonl", "loss.svg",
				     LOCK_NAME ".lock", ".checkpoint.new"};
static const char *const g_caches[] = {"data.u32", "data.json", "data.sft",
				       "val.u32",  "val.json",  "val.sft"};
#define N_CACHES (sizeof g_caches / sizeof *g_caches)
/* ... and beside train-state/, written after the caches: the log and the curves */
static const char *const g_late[] = {"train-log.jsonl", "loss.svg"};
#define N_LATE (sizeof g_late / sizeof *g_late)
_Static_assert(N_CACHES + N_LATE == RUNDIR_UNSAVED, "rundir_leftovers holds both");

/* The first entry of dir that no run that never saved would have left, in other ("" if
 * none): a name not of g_ours, a file in train-state/ not of g_caches, or the log and
 * the curve without the cache a run writes before them (train-state/data.json); a
 * failed new run removes those, so they must be its own. 0 or -1 (err_set). */
static int foreign_entry(const char *dir, char *other, size_t size)
{
	char *state = fio_join(dir, "train-state"), *meta = fio_join(dir, "train-state/data.json");
	struct stat st;
	int rc = state && meta ? fio_foreign_entry(dir, g_ours, sizeof g_ours / sizeof *g_ours,
						   other, size)
			       : err_set("out of memory");
	if (rc == 0 && !other[0] && lstat(state, &st) == 0 && S_ISDIR(st.st_mode)) {
		char name[256];
		rc = fio_foreign_entry(state, g_caches, N_CACHES, name, sizeof name);
		if (rc == 0 && name[0])
			snprintf(other, size, "train-state/%s", name);
	}
	for (size_t i = 0; rc == 0 && !other[0] && i < N_LATE && lstat(meta, &st) != 0; i++) {
		char *p = fio_join(dir, g_late[i]);
		if (!p)
			rc = err_set("out of memory");
		else if (lstat(p, &st) == 0)
			snprintf(other, size, "%s", g_late[i]);
		free(p);
	}
	free(state);
	free(meta);
	return rc;
}

static int refuse_foreign(const char *dir)
{
	char other[300];
	if (foreign_entry(dir, other, sizeof other))
		return -1;
	return other[0] ? err_set("%s: not empty (it holds %s) and not a training run's "
				  "directory: choose a new or empty --out",
				  dir, other)
			: 0;
}

/* Whether dir holds a run's checkpoint (or one being saved): told apart after the lock. */
static bool holds_run(const char *dir)
{
	char *state = fio_join(dir, "train-state/state.json"),
	     *txn = fio_join(dir, ".checkpoint.new");
	struct stat st;
	bool yes = state && txn && (lstat(state, &st) == 0 || lstat(txn, &st) == 0);
	free(state);
	free(txn);
	return yes;
}

/* DIR and DIR/train-state (lstat in st) must be directories of their own: a link there
 * would aim the run's files at another place. 0, or -1 with err_set (link_hint says
 * what to do about a link). */
static int need_dir(const char *path, const struct stat *st, const char *link_hint)
{
	if (S_ISLNK(st->st_mode)) {
		char to[PATH_MAX];
		ssize_t n = readlink(path, to, sizeof to - 1);
		to[n > 0 ? n : 0] = '\0';
		return err_set("%s: is a symbolic link%s%s%s (refused: %s)", path,
			       n > 0 ? " (to " : "", to, n > 0 ? ")" : "", link_hint);
	}
	return S_ISDIR(st->st_mode) ? 0 : err_set("%s: exists and is not a directory", path);
}

/* Whether another process holds dir's lock, tested without creating the file. */
static bool locked_by_other(const char *dir)
{
	char *path = fio_join(dir, LOCK_NAME); /* fio_locked adds ".lock" */
	bool held = path && fio_locked(path);
	free(path);
	return held;
}

static int locked_error(const char *dir)
{
	return err_set("%s: another 'qwenchat train' is using it (it holds %s/%s.lock)", dir, dir,
		       LOCK_NAME);
}

/* The lock file this process holds and its descriptor, for rundir_lock_drop (a signal
 * handler's). */
static char g_held[PATH_MAX];
static volatile int g_held_fd = -1;

void rundir_lock_drop(void)
{
	/* only while the name is still our file: once it is gone, another run may have
	   made and locked a new one there */
	struct stat ours, there;
	int fd = g_held_fd;
	if (fd >= 0 && g_held[0] && fstat(fd, &ours) == 0 && lstat(g_held, &there) == 0 &&
	    ours.st_dev == there.st_dev && ours.st_ino == there.st_ino)
		unlink(g_held);
}

int rundir_lock(const char *dir, bool create)
{
	struct stat st;
	if (lstat(dir, &st) != 0) {
		if (errno != ENOENT || !create)
			return err_set("%s: %s", dir, strerror(errno));
		if (fio_mkdirs(dir, 0700))
			return -1;
	} else if (need_dir(dir, &st, "name the directory itself")) {
		return -1;
	} else if (create && !holds_run(dir) && refuse_foreign(dir)) {
		/* before a lock file lands there; a run starting there holds files of its own
		 * (a cache being written) that another run says is why */
		return locked_by_other(dir) ? locked_error(dir) : -1;
	}
	char *path = fio_join(dir, LOCK_NAME), *lock = fio_join(dir, LOCK_NAME ".lock"),
	     *state = fio_join(dir, "train-state");
	bool had = lock && lstat(lock, &st) == 0;
	int fd = path && lock && state ? fio_try_lock(path) : err_set("out of memory");
	if (fd == FIO_LOCKED)
		locked_error(dir);
	if (fd >= 0 && lstat(state, &st) == 0 &&
	    need_dir(state, &st, "nothing here should be one")) {
		if (!had) /* the refused directory is left as it was */
			unlink(lock);
		close(fd);
		fd = -1;
	}
	if (fd >= 0 && strlen(lock) < sizeof g_held) {
		memcpy(g_held, lock, strlen(lock) + 1);
		g_held_fd = fd;
	}
	free(path);
	free(lock);
	free(state);
	return fd == FIO_LOCKED ? -1 : fd;
}

void rundir_unlock(const char *dir, int lock)
{
	/* the model the run leaves is a directory like any other, without it; a process
	 * that opened the file meanwhile finds it gone and locks a new one (fio_try_lock) */
	char *path = fio_join(dir, LOCK_NAME ".lock");
	g_held_fd = -1; /* a signal from here on leaves the name to this unlink */
	if (path)
		unlink(path); /* before the close: see rundir_abandon */
	free(path);
	close(lock);
}

void rundir_abandon(const char *dir, int lock, const char *top)
{
	struct rundir_leftovers l;
	if (rundir_leftovers_init(&l, dir, top) == 0) {
		rundir_leftovers_remove(&l);
		rundir_leftovers_free(&l);
	}
	rundir_lock_drop(); /* where a checkpoint stays, or train-state did */
	g_held_fd = -1;
	/* after the lock file is gone: a process that opened it meanwhile finds it gone
	 * and locks the new one (fio_try_lock) */
	close(lock);
}

int rundir_leftovers_init(struct rundir_leftovers *l, const char *dir, const char *top)
{
	*l = (struct rundir_leftovers){.state = fio_join(dir, "train-state"),
				       .lock = fio_join(dir, LOCK_NAME ".lock"),
				       .dir = top ? strdup(dir) : NULL,
				       .top = top ? strdup(top) : NULL};
	bool ok = l->state && l->lock && (l->dir || !top) && (l->top || !top) &&
		  (l->saved[0] = fio_join(dir, "train-state/state.json")) &&
		  (l->saved[1] = fio_join(dir, ".checkpoint.new")) &&
		  (l->scratch = malloc(strlen(l->saved[1]) + 16));
	for (int i = 0; ok && i < RUNDIR_UNSAVED; i++)
		ok = (l->unsaved[i] = i < (int)N_CACHES
					      ? fio_join(l->state, g_caches[i])
					      : fio_join(dir, g_late[i - N_CACHES])) != NULL;
	if (ok)
		return 0;
	rundir_leftovers_free(l);
	return err_set("out of memory");
}

void rundir_leftovers_free(struct rundir_leftovers *l)
{
	free(l->state);
	free(l->lock);
	free(l->dir);
	free(l->top);
	for (int i = 0; i < 2; i++)
		free(l->saved[i]);
	free(l->scratch);
	for (int i = 0; i < RUNDIR_UNSAVED; i++)
		free(l->unsaved[i]);
	*l = (struct rundir_leftovers){0};
}

bool rundir_leftovers_remove(const struct rundir_leftovers *l)
{
	struct stat st;
	if (!l->state || lstat(l->saved[0], &st) == 0 ||
	    ckpt_discard_unmarked(l->saved[1], l->scratch))
		return true; /* a checkpoint, or a whole one being put in place */
	for (int i = 0; i < RUNDIR_UNSAVED; i++)
		unlink(l->unsaved[i]);
	if (rmdir(l->state) != 0 && errno != ENOENT)
		return false;
	unlink(l->lock);
	if (l->dir)
		fio_rmdirs_upto(l->dir, l->top);
	return false;
}

int rundir_check_new(const char *dir)
{
	struct stat st;
	if (lstat(dir, &st) != 0)
		return errno == ENOENT ? 0 : err_set("%s: %s", dir, strerror(errno));
	if (!S_ISDIR(st.st_mode))
		return err_set("%s: exists and is not a directory", dir);
	if (ckpt_recover(dir) < 0)
		return -1;
	char *state = fio_join(dir, "train-state/state.json");
	if (!state)
		return err_set("out of memory");
	if (fio_is_file(state)) {
		size_t len;
		char *text = fio_read_file(state, 1 << 20, &len);
		struct tstate s;
		int ok = text && tstate_parse(&s, text, len, state) == 0;
		free(text);
		free(state);
		if (!ok) /* the reason (which file, which field) follows */
			return err_prefix("%s: holds a training run whose state cannot be read "
					  "(choose another --out)",
					  dir);
		long long step = s.step;
		tstate_opts_free(&s.o);
		return err_set("%s: holds a training run (at step %lld): continue it with "
			       "'qwenchat train --resume %s', or choose another --out",
			       dir, step, dir);
	}
	free(state);
	return refuse_foreign(dir);
}
