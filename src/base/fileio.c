/* fileio.c — whole-file reads and write-then-rename file updates. */
#include "src/base/fileio.h"
#include "src/base/err.h"

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/file.h>
#include <sys/random.h>
#include <time.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Reads f to its end into a NUL-terminated buffer of at most max_bytes. */
static char *read_stream(FILE *f, const char *path, size_t max_bytes, size_t *len)
{
	size_t cap = 4096, n = 0;
	char *buf = malloc(cap + 1);
	if (!buf)
		err_set("%s: out of memory", path);
	while (buf) {
		if (n == cap) {
			if (cap >= max_bytes) {
				err_set("%s: file is larger than %zu bytes", path, max_bytes);
				free(buf);
				buf = NULL;
				break;
			}
			cap = cap * 2 > max_bytes ? max_bytes : cap * 2;
			char *grown = realloc(buf, cap + 1);
			if (!grown) {
				err_set("%s: out of memory", path);
				free(buf);
				buf = NULL;
				break;
			}
			buf = grown;
		}
		size_t got = fread(buf + n, 1, cap - n, f);
		n += got;
		if (got == 0) {
			if (ferror(f)) {
				err_set("%s: read error: %s", path, strerror(errno));
				free(buf);
				buf = NULL;
			}
			break;
		}
	}
	if (!buf)
		return NULL;
	buf[n] = '\0';
	if (len)
		*len = n;
	return buf;
}

char *fio_read_all(const char *path, size_t max_bytes, size_t *len)
{
	if (strcmp(path, "-") == 0)
		return read_stream(stdin, path, max_bytes, len);
	FILE *f = fopen(path, "rb");
	if (!f) {
		err_set("%s: cannot open: %s", path, strerror(errno));
		return NULL;
	}
	char *buf = read_stream(f, path, max_bytes, len);
	fclose(f);
	return buf;
}

int fio_open_file(const char *path, const char *name)
{
	if (!name)
		name = path;
	/* O_NONBLOCK: opening a FIFO for reading would wait for a writer */
	int fd = open(path, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
	struct stat st;
	if (fd < 0 || fstat(fd, &st) != 0) {
		int e = errno;
		if (fd >= 0)
			close(fd);
		return err_set("%s: %s", name, strerror(e));
	}
	if (!S_ISREG(st.st_mode)) {
		close(fd);
		return err_set("%s: %s", name,
			       S_ISDIR(st.st_mode) ? "is a directory, not a file"
						   : "not a regular file (a FIFO, a device or a "
						     "socket is refused)");
	}
	int fl = fcntl(fd, F_GETFL);
	if (fl < 0 || fcntl(fd, F_SETFL, fl & ~O_NONBLOCK) != 0) {
		int e = errno;
		close(fd);
		return err_set("%s: %s", name, strerror(e));
	}
	return fd;
}

char *fio_read_file(const char *path, size_t max_bytes, size_t *len)
{
	int fd = fio_open_file(path, NULL);
	if (fd < 0)
		return NULL;
	struct stat st;
	if (fstat(fd, &st) == 0 && (uint64_t)st.st_size > max_bytes) {
		close(fd);
		err_set("%s: file is larger than %zu bytes", path, max_bytes);
		return NULL;
	}
	FILE *f = fdopen(fd, "rb");
	if (!f) {
		close(fd);
		err_set("%s: out of memory", path);
		return NULL;
	}
	char *buf = read_stream(f, path, max_bytes, len);
	fclose(f);
	return buf;
}

/* The directory holding path, as written: ".", "/" or path up to its last slash. 0,
 * or -1 when it does not fit in dir[size]. */
static int parent_dir(const char *path, char *dir, size_t size)
{
	const char *slash = strrchr(path, '/');
	int n = !slash          ? snprintf(dir, size, ".")
		: slash == path ? snprintf(dir, size, "/")
				: snprintf(dir, size, "%.*s", (int)(slash - path), path);
	return n >= 0 && (size_t)n < size ? 0 : -1;
}

void fio_remove_stale_temps(const char *path, const char *prefix, fio_removed_fn *removed,
			    void *user)
{
	char dir[4200];
	if (parent_dir(path, dir, sizeof dir))
		return;
	size_t pl = strlen(prefix);
	DIR *d = opendir(dir);
	if (!d)
		return;
	for (struct dirent *e; (e = readdir(d));) {
		const char *n = e->d_name;
		char *end;
		if (strncmp(n, prefix, pl))
			continue;
		long pid = strtol(n + pl, &end, 10);
		struct stat st;
		if (end == n + pl || pid <= 0 || *end != '.' || !end[1] ||
		    fstatat(dirfd(d), n, &st, AT_SYMLINK_NOFOLLOW) || !S_ISREG(st.st_mode) ||
		    st.st_uid != getuid() || kill((pid_t)pid, 0) == 0 || errno != ESRCH)
			continue;
		if (unlinkat(dirfd(d), n, 0) == 0 && removed)
			removed(user, dir, n, (uint64_t)st.st_size);
	}
	closedir(d);
}

/* Creates a new temporary file beside target, never following a link and never
 * reusing a name (O_CREAT|O_EXCL|O_NOFOLLOW on a random name): a link planted at a
 * predictable name cannot aim the write. The name, .BASE.tmp.PID.RANDOM, goes into
 * tmp (tmpsz bytes); those a killed writer left are removed first. */
static int create_temp(const char *target, mode_t mode, char *tmp, size_t tmpsz)
{
	const char *slash = strrchr(target, '/');
	int dl = slash ? (int)(slash - target) + 1 : 0;
	const char *base = slash ? slash + 1 : target;
	char prefix[NAME_MAX + 8];
	if (snprintf(prefix, sizeof prefix, ".%s.tmp.", base) < (int)sizeof prefix)
		fio_remove_stale_temps(target, prefix, NULL, NULL);
	for (int tries = 0; tries < 100; tries++) {
		uint64_t r = 0;
		if (getrandom(&r, sizeof r, 0) != (ssize_t)sizeof r)
			r = (uint64_t)getpid() * 2654435761u + (uint64_t)tries * 40503u +
			    (uint64_t)clock();
		if (snprintf(tmp, tmpsz, "%.*s.%s.tmp.%ld.%016llx", dl, target, base,
			     (long)getpid(), (unsigned long long)r) >= (int)tmpsz)
			return err_set("%s: name too long", target);
		int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode);
		if (fd >= 0 || errno != EEXIST)
			return fd >= 0 ? fd
				       : err_set("%s: cannot create a file beside it: %s", target,
						 strerror(errno));
	}
	return err_set("%s: cannot find a free temporary name", target);
}

int fio_write_fd(int fd, const void *data, size_t len)
{
	const char *p = data;
	while (len > 0) {
		ssize_t w = write(fd, p, len);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return -1;
		p += w;
		len -= (size_t)w;
	}
	return 0;
}

int fio_sync_dir(const char *dir)
{
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return err_set("%s: cannot open: %s", dir, strerror(errno));
	int rc = fsync(fd) == 0 || errno == EINVAL ? 0
						   : err_set("%s: fsync: %s", dir, strerror(errno));
	close(fd);
	return rc;
}

/* Syncs the directory holding path, best effort: the file's contents are synced
 * already, and the rename is in place for every reader whether or not this fails. */
static void sync_parent(const char *path)
{
	char dir[4200];
	if (parent_dir(path, dir, sizeof dir) == 0)
		(void)fio_sync_dir(dir);
}

/* Writes and renames with the signals that end a program held back, so that a
 * Ctrl-C, a SIGTERM or a closed terminal comes after the rename (or after the temp
 * file is removed), never between: no half-written temp file is left behind. */
/* Whether the absolute path is root or below it. */
static bool under(const char *path, const char *root)
{
	size_t n = strlen(root);
	return !strncmp(path, root, n) && (path[n] == '\0' || path[n] == '/');
}

bool fio_in_system_dir(const char *path)
{
	char dir[4200], real[PATH_MAX];
	if (parent_dir(path, dir, sizeof dir) || !realpath(dir, real))
		return false;
	/* /dev/shm is a place for files like /tmp */
	return under(real, "/dev") ? !under(real, "/dev/shm")
				   : under(real, "/proc") || under(real, "/sys");
}

/* A name in /dev or /proc (/dev/stdout, /dev/null, /proc/self/fd/3) stands for what
 * it leads to: a terminal, a pipe, the file standard output was sent to. It is
 * written through, appending (a shell's "> f" has emptied f, ">> f" asks for the end),
 * since renaming a file over it would replace the system's own entry. */
/* Whether path's directory is a process's descriptor table, /proc/PID/fd. */
static bool in_fd_dir(const char *path)
{
	char dir[4200], real[PATH_MAX];
	if (parent_dir(path, dir, sizeof dir) || !realpath(dir, real) || strncmp(real, "/proc/", 6))
		return false;
	const char *p = real + 6;
	if (*p < '0' || *p > '9')
		return false;
	while (*p >= '0' && *p <= '9')
		p++;
	return !strcmp(p, "/fd");
}

/* Whether path names an open descriptor (/proc/self/fd/1, /dev/fd/1, or a link to one
 * such as /dev/stdout): the file behind it is one the user's shell opened. */
static bool names_descriptor(const char *path)
{
	char to[PATH_MAX];
	ssize_t n = readlink(path, to, sizeof to - 1);
	if (in_fd_dir(path))
		return true;
	if (n <= 0 || to[0] != '/')
		return false;
	to[n] = '\0';
	return in_fd_dir(to);
}

int fio_open_through(const char *target)
{
	struct stat st;
	if (stat(target, &st) != 0)
		return err_set("%s: %s (only what is there is written in this directory)", target,
			       strerror(errno));
	if (!S_ISCHR(st.st_mode) && !S_ISFIFO(st.st_mode) && !S_ISSOCK(st.st_mode) &&
	    !S_ISREG(st.st_mode))
		return err_set("%s: not a file, a terminal or a pipe (refused)", target);
	/* a file here is the kernel's (/proc/sys, /sys) unless a descriptor leads to it */
	if (S_ISREG(st.st_mode) && !names_descriptor(target))
		return err_set("%s: a file of the system's (refused: only a terminal, a pipe or "
			       "standard output is written here)",
			       target);
	int fd = open(target, O_WRONLY | O_APPEND | O_NOCTTY | O_CLOEXEC);
	return fd >= 0 ? fd : err_set("%s: cannot open: %s", target, strerror(errno));
}

static int write_through(const char *target, const void *data, size_t len)
{
	int fd = fio_open_through(target);
	if (fd < 0)
		return -1;
	int rc = fio_write_fd(fd, data, len)
			 ? err_set("%s: write failed: %s", target, strerror(errno))
			 : 0;
	if (close(fd) != 0 && rc == 0)
		rc = err_set("%s: write failed: %s", target, strerror(errno));
	return rc;
}

static int replace(const char *target, const void *data, size_t len, mode_t mode)
{
	/* lstat: a link at target is replaced by the new file, its target never written
	 * (a link planted where a user saves must not aim the write), and the new file
	 * takes `mode`, not the mode of whatever the link points to */
	struct stat st;
	bool link = lstat(target, &st) == 0 && S_ISLNK(st.st_mode);
	bool exists = !link && lstat(target, &st) == 0;
	if (exists && !S_ISREG(st.st_mode))
		return err_set("%s: not a regular file (refused: only a file can be replaced)",
			       target);
	char tmp[4200];
	int fd = create_temp(target, exists ? (st.st_mode & 07777) : mode, tmp, sizeof tmp);
	if (fd < 0)
		return -1;
	/* An existing file keeps its mode: a transcript made private stays private. */
	if (exists && fchmod(fd, st.st_mode & 07777) != 0) {
		close(fd);
		unlink(tmp);
		return err_set("%s: cannot set the mode: %s", target, strerror(errno));
	}
	int rc = 0;
	if (fio_write_fd(fd, data, len) != 0 || fsync(fd) != 0)
		rc = err_set("%s: write failed: %s", target, strerror(errno));
	if (close(fd) != 0 && rc == 0)
		rc = err_set("%s: write failed: %s", target, strerror(errno));
	if (rc == 0 && rename(tmp, target) != 0)
		rc = err_set("%s: cannot replace: %s", target, strerror(errno));
	if (rc)
		unlink(tmp);
	else
		sync_parent(target);
	return rc;
}

int fio_write_atomic(const char *path, const void *data, size_t len, mode_t mode, unsigned flags)
{
	struct stat st;
	if ((flags & FIO_NO_LINKS) && lstat(path, &st) == 0 && S_ISLNK(st.st_mode))
		return err_set("%s: is a symbolic link (refused: nothing here should be one)",
			       path);
	if (fio_in_system_dir(path)) /* a pipe may block: signals are not held for it */
		return write_through(path, data, len);
	sigset_t hold, old;
	sigemptyset(&hold);
	sigaddset(&hold, SIGINT);
	sigaddset(&hold, SIGTERM);
	sigaddset(&hold, SIGHUP);
	sigaddset(&hold, SIGQUIT);
	pthread_sigmask(SIG_BLOCK, &hold, &old);
	int rc = replace(path, data, len, mode);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	return rc;
}

int fio_try_lock(const char *path)
{
	char lock[4200];
	if (snprintf(lock, sizeof lock, "%s.lock", path) >= (int)sizeof lock)
		return err_set("%s: name too long", path);
	/* The lock holder may remove the file before it lets go (fio_unlock_remove): a
	 * lock taken on a file no longer at the name is retaken on the new one. */
	for (int tries = 0; tries < 100; tries++) {
		int fd = open(lock, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
		if (fd < 0)
			return err_set("%s: cannot create: %s", lock, strerror(errno));
		if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
			int e = errno;
			close(fd);
			if (e == EWOULDBLOCK)
				return FIO_LOCKED;
			return err_set("%s: cannot lock: %s", lock, strerror(e));
		}
		struct stat held, named;
		if (fstat(fd, &held) == 0 && lstat(lock, &named) == 0 &&
		    held.st_dev == named.st_dev && held.st_ino == named.st_ino)
			return fd;
		close(fd);
	}
	return err_set("%s: removed again and again while being locked", lock);
}

void fio_unlock_remove(const char *path, int fd)
{
	char lock[4200];
	if (snprintf(lock, sizeof lock, "%s.lock", path) < (int)sizeof lock)
		unlink(lock);
	close(fd);
}

char *fio_absolute(const char *path)
{
	char dir[PATH_MAX], abs[PATH_MAX];
	const char *slash = strrchr(path, '/'), *base = slash ? slash + 1 : path;
	if (!*base || !strcmp(base, ".") || !strcmp(base, ".."))
		return realpath(path, abs) ? strdup(abs) : NULL;
	if (parent_dir(path, dir, sizeof dir) || !realpath(dir, abs))
		return NULL;
	return fio_join(abs, base);
}

char *fio_join(const char *dir, const char *name)
{
	size_t n = strlen(dir) + strlen(name) + 2;
	char *p = malloc(n);
	if (p)
		snprintf(p, n, "%s%s%s", dir, (dir[0] && dir[strlen(dir) - 1] != '/') ? "/" : "",
			 name);
	return p;
}

int fio_exists(const char *path)
{
	struct stat st;
	return stat(path, &st) == 0;
}

int fio_is_file(const char *path)
{
	struct stat st;
	return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

int fio_is_dir(const char *path)
{
	struct stat st;
	return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

int fio_mkdirs(const char *path, mode_t mode)
{
	char *p = strdup(path);
	if (!p)
		return err_set("out of memory");
	for (char *q = p + 1;; q++) {
		if (*q != '/' && *q != '\0')
			continue;
		char c = *q;
		*q = '\0';
		if (mkdir(p, mode) && errno != EEXIST) {
			err_set("%s: cannot create directory: %s", p, strerror(errno));
			free(p);
			return -1;
		}
		*q = c;
		if (!c)
			break;
	}
	free(p);
	if (!fio_is_dir(path))
		return err_set("%s: not a directory", path);
	return 0;
}
