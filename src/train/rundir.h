/* rundir.h — a training run's directory: the lock that keeps one run at a time in it,
 * whether a new run may start there, and the removal of what a new run that failed
 * before its first checkpoint wrote (also from a signal handler). */
#ifndef QWENCHAT_RUNDIR_H
#define QWENCHAT_RUNDIR_H

#include <stdbool.h>

/* Whether dir may take a new run: missing, empty, or holding only what a run that
 * never saved left (train-state/ with the data caches, train-log.jsonl, loss.svg).
 * A checkpoint there (finished first if a save was interrupted) is refused with "holds
 * a run at step N". 0 or -1 (err_set). */
int rundir_check_new(const char *dir);

/* One run at a time in dir: an exclusive lock on dir/.train.lock, held until the
 * returned descriptor is closed (the process ends). dir is created (0700) when
 * missing and create is set; with create, a dir holding files of something else than
 * a run is refused before the lock file is made. A symbolic link at dir or at
 * dir/train-state is refused. The descriptor, or -1 with err_set (also when another
 * process holds the lock: "another qwenchat train is using it"). */
int rundir_lock(const char *dir, bool create);

/* Lets go of rundir_lock's lock on dir, its lock file removed: a finished run's
 * directory is a model like any other (and a --resume of a directory that is not a
 * run leaves nothing in it). */
void rundir_unlock(const char *dir, int lock);

/* Removes the lock file this process holds, while the name is still that file
 * (async-signal-safe: for a signal that ends the program at once; the lock itself
 * goes with the process). Harmless when called again. */
void rundir_lock_drop(void);

/* After a new run failed before its first checkpoint: removes what it wrote (the
 * streams' caches, the log), train-state/ when nothing else is in it, then the lock
 * file (letting go of lock) and, when the run created dir (top: the outermost
 * directory it made, fio_missing_top's; NULL: none), dir and its parents up to top
 * while nothing else is there; otherwise only lets go of lock. A checkpoint there,
 * whole or being written, keeps everything. */
void rundir_abandon(const char *dir, int lock, const char *top);

/* rundir_abandon's paths, made beforehand for a signal handler. */
enum { RUNDIR_UNSAVED = 8 };
struct rundir_leftovers {
	char *state, *lock, *dir;      /* dir: NULL when it was there before */
	char *top;                     /* the outermost directory made for dir */
	char *saved[2];                /* a checkpoint's marks: state.json, the one being written */
	char *scratch;                 /* room for a path in saved[1], for the handler */
	char *unsaved[RUNDIR_UNSAVED]; /* the caches and the log */
};
int rundir_leftovers_init(struct rundir_leftovers *l, const char *dir, const char *top);
void rundir_leftovers_free(struct rundir_leftovers *l);

/* rundir_abandon's removals, with calls safe in a signal handler (lstat, unlink,
 * rmdir): for a new run a signal ends before its first checkpoint. An unfinished
 * first save is removed too; nothing is once there is a checkpoint, or a whole one
 * being put in place. The lock goes with the process. Whether a checkpoint is kept. */
bool rundir_leftovers_remove(const struct rundir_leftovers *l);

#endif
