/* fileio.h — whole-file reads and crash-safe writes. */
#ifndef QWENCHAT_FILEIO_H
#define QWENCHAT_FILEIO_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* Reads the whole file (or stdin when path is "-") into a NUL-terminated buffer.
 * Refuses files larger than max_bytes. Returns NULL with err_set on failure. */
char *fio_read_all(const char *path, size_t max_bytes, size_t *len);

/* Opens path for reading only when it is a regular file (links are followed): a FIFO,
 * a device or a directory in place of a model file is refused at once, where open()
 * or read() would wait forever for a writer or read a device. The descriptor
 * (O_CLOEXEC), or -1 with err_set("NAME: ...") (NAME: path when NULL). */
int fio_open_file(const char *path, const char *name);

/* fio_read_all for files that must be regular ones (fio_open_file): the files of a
 * model, caches and stores. A file larger than max_bytes is refused before it is
 * read. NULL with err_set naming path. */
char *fio_read_file(const char *path, size_t max_bytes, size_t *len);

/* Flags of fio_write_atomic. */
enum {
	FIO_NO_LINKS = 1 << 0, /* refuse a symbolic link at path instead of writing through it */
};

/* Writes data[0..len) to fd whole, through short writes and EINTR. 0, or -1 with
 * errno set (no err_set: the caller names the file). */
int fio_write_fd(int fd, const void *data, size_t len);

/* Replaces path's contents so that a reader sees the old file or the new one, never
 * a partial one: the data goes into a new temporary file beside it (a random name
 * created with O_EXCL|O_NOFOLLOW, so no planted link can aim the write), is synced,
 * then renamed over path. path's directory is opened once and every step acts on it,
 * so a link in its path turned elsewhere meanwhile moves nothing. A symbolic link at
 * path is replaced by the new file, never written through (FIO_NO_LINKS: refused).
 * Anything else but a regular file at path is refused. The file gets `mode` (less
 * the umask), whatever the mode of one it replaces. A path in the system's
 * directories (fio_in_system_dir: /dev/stdout, /dev/null) is written through
 * fio_open_through instead. Signals that end the program wait until the file is in
 * place or the temporary file is gone. 0 or -1 (err_set). */
int fio_write_atomic(const char *path, const void *data, size_t len, mode_t mode, unsigned flags);

/* Whether path's directory is the system's: on the file system of /dev, /dev/pts,
 * /proc or /sys (not /dev/shm, a tmpfs of its own), or undecidable. Names there are
 * never replaced by a file of ours. */
bool fio_in_system_dir(const char *path);

/* A name in the system's directories stands for what it leads to, opened to write: a
 * descriptor of this process (/dev/stdout, /dev/fd/N, /proc/self/fd/N) duplicated as
 * the shell opened it (refused when open for reading only); a terminal, another
 * character device or a pipe (refused when nothing reads it). A file there (the
 * kernel's: /proc/sys, /sys), a block device, a directory or a missing name is
 * refused. The descriptor, or -1 (err_set). */
int fio_open_through(const char *path);

/* Told of each temporary file a writer killed outright (SIGKILL, the OOM killer) left
 * beside a file being replaced, once it is removed: a regular file of this user named
 * .NAME.tmp.PID.RANDOM whose PID no longer runs. */
typedef void fio_removed_fn(void *user, const char *dir, const char *name, uint64_t bytes);

/* A file written in pieces that appears whole or not at all, as fio_write_atomic's:
 * fio_replace_begin opens path's directory once, checks what is at path as
 * fio_write_atomic does (a name in the system's directories is refused here: see
 * fio_open_through) and creates the temporary file, whose descriptor it returns (or
 * -1, err_set); the caller writes into r->fd, then either fio_replace_commit (sync,
 * rename over path; 0 or -1 with err_set, the temporary file removed) or
 * fio_replace_abort (removed). Signals are the caller's to hold or catch. removed (may
 * be NULL) hears of the stale temporary files removed first. */
struct fio_replace {
	int dir, fd;
	const char *path, *base;
	char tmp[NAME_MAX + 1];
};
int fio_replace_begin(struct fio_replace *r, const char *path, mode_t mode, fio_removed_fn *removed,
		      void *user);
int fio_replace_commit(struct fio_replace *r);
void fio_replace_abort(struct fio_replace *r);

/* The first entry of dir whose name is none of known[0..n) ("." and ".." aside) into
 * name (size bytes), or "" when every entry is known: what a command that writes into
 * a directory of its own would put over something else's. The temporary files a
 * writer of a known file left when it was killed are removed first (as the next write
 * of that file would). 0, or -1 with err_set when dir cannot be read. */
int fio_foreign_entry(const char *dir, const char *const *known, size_t n, char *name, size_t size);

/* fsync of a directory, so that the renames into it survive a power loss: 0, or -1
 * with err_set naming dir. */
int fio_sync_dir(const char *dir);

/* Takes an exclusive lock (flock) on PATH.lock, created 0600 and never through a
 * link, without waiting. Returns the descriptor that holds the lock (close it to
 * let go), FIO_LOCKED when another process holds it, or -1 (err_set). */
enum { FIO_LOCKED = -2 };
int fio_try_lock(const char *path);
/* Whether PATH.lock exists and another open file (another process's fio_try_lock, or
 * this one's) holds its lock; nothing is created. */
bool fio_locked(const char *path);
/* Whether a and b name the same existing file (device and inode). */
bool fio_same_file(const char *a, const char *b);

/* path as an absolute one whose last component is the name given: its directory
 * resolved (realpath), a link at the name itself kept as a link, so that what the name
 * says (a *.u32 suffix) still holds. malloc'd; NULL when the directory does not
 * resolve (errno set) or out of memory. */
char *fio_absolute(const char *path);

/* The length of path without its trailing slashes ("/" keeps its one): "link/" names the
 * directory a link points to, the bare name the link itself. */
size_t fio_trimmed_len(const char *path);

/* Joins a directory and a file name into a malloc'd path. */
char *fio_join(const char *dir, const char *name);

/* Creates path and its missing parents (like mkdir -p) with `mode`; 0, or -1 with
 * err_set (also when path exists but is not a directory). */
int fio_mkdirs(const char *path, mode_t mode);
/* base/rel opened as a directory (O_DIRECTORY, to close), base made as fio_mkdirs
 * makes it and each folder of rel below it made when missing; a symbolic link among
 * rel's folders is refused, never followed ("PATH: a symbolic link (refused)"), where
 * links at base or above it are the user's own. Where others may write (a shared
 * cache), what is put in such a folder then goes where its name says. The descriptor,
 * or -1 with err_set. */
int fio_mkdirs_below(const char *base, const char *rel, mode_t mode);
/* fio_mkdirs(path, 0700), and path itself (or the directory a link there leads to)
 * made 0700 when others could read or enter it (a directory of private files made by
 * an older version, or by hand); refused when another user owns it. 0, or -1 with
 * err_set. */
int fio_private_dir(const char *path);

/* The outermost of the directories fio_mkdirs(path) would create (malloc'd, without
 * "." components and repeated slashes), or NULL when path exists (or memory ran out).
 * A path with a ".." component gives itself: its prefixes are no chain of new
 * directories. */
char *fio_missing_top(const char *path);

/* Removes path, then its parents up to and including top (fio_missing_top's), each
 * only while empty: what fio_mkdirs made for something that failed. Calls only
 * async-signal-safe functions. */
void fio_rmdirs_upto(const char *path, const char *top);

/* 1 when anything is at path (links followed), a loop of links too: an optional file
 * that is there but is not a regular one is an error to report, not a file to skip.
 * A link to nothing is nothing. */
int fio_exists(const char *path);

/* Whether path's name ends with ext (".jsonl"), in any case (DATA.JSONL). */
bool fio_has_ext(const char *path, const char *ext);

/* 0 when path ("-": standard input) is something with an end to read to: a regular
 * file, a pipe, a terminal (text typed until Ctrl-D) or /dev/null; -1 with err_set
 * for another device (/dev/zero, /dev/urandom: read until memory runs out) or a
 * socket. A path
 * that cannot be looked at passes: opening it says why. */
int fio_check_ends(const char *path);

/* 1 when path names an existing regular file, 0 otherwise. */
int fio_is_file(const char *path);

/* 1 when path names an existing directory, 0 otherwise. */
int fio_is_dir(const char *path);

#endif
