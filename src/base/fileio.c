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
	/* a FIFO waits for its writer here, as cat's does (`mkfifo p; cmd p & gen > p`);
	 * where that must not happen (the chat's /load), the caller refuses one first */
	int fd = open(path, O_RDONLY | O_NOCTTY | O_CLOEXEC);
	struct stat st;
	if (fd < 0 || fstat(fd, &st) != 0) {
		err_set("%s: cannot open: %s", path, strerror(errno));
		if (fd >= 0)
			close(fd);
		return NULL;
	}
	FILE *f = NULL;
	if (S_ISDIR(st.st_mode))
		err_set("%s: is a directory, not a file", path);
	else if (!(f = fdopen(fd, "rb")))
		err_set("%s: cannot open: %s", path, strerror(errno));
	if (!f) {
		close(fd);
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

/* The random end of a temporary name: mkostemp's 6 characters or our 16 hex digits,
 * letters and digits only (a file of the user's such as "x.tmp.2024.final" is not
 * one). */
static bool random_suffix(const char *s)
{
	size_t n = 0;
	while ((s[n] >= '0' && s[n] <= '9') || (s[n] >= 'a' && s[n] <= 'z') ||
	       (s[n] >= 'A' && s[n] <= 'Z'))
		n++;
	return !s[n] && (n == 6 || n == 16);
}

/* The part of a file's name its temporary files start with: a name near NAME_MAX
 * leaves no room for ".tmp.PID.RANDOM", so only its first bytes are kept. */
#define TEMP_STEM_MAX (NAME_MAX - 40)

/* The start of base's temporary names, ".STEM.tmp.", into prefix (NAME_MAX + 8 bytes). */
static void temp_prefix(char *prefix, const char *base)
{
	snprintf(prefix, NAME_MAX + 8, ".%.*s.tmp.", (int)strnlen(base, TEMP_STEM_MAX), base);
}

/* Whether entry n of the open directory d is PREFIX<pid>.<RANDOM> that a writer killed
 * outright (SIGKILL, the OOM killer) left: a regular file of this user whose PID no
 * longer runs (lstat in *st). */
static bool stale_temp(DIR *d, const char *n, const char *prefix, struct stat *st)
{
	size_t pl = strlen(prefix);
	char *end;
	if (strncmp(n, prefix, pl))
		return false;
	long pid = strtol(n + pl, &end, 10);
	return end != n + pl && pid > 0 && *end == '.' && random_suffix(end + 1) &&
	       !fstatat(dirfd(d), n, st, AT_SYMLINK_NOFOLLOW) && S_ISREG(st->st_mode) &&
	       st->st_uid == getuid() && kill((pid_t)pid, 0) != 0 && errno == ESRCH;
}

/* The stale temporary files PREFIX<pid>.<RANDOM> in the open directory d (named dir
 * for removed), which it closes, are removed. */
static void sweep(DIR *d, const char *dir, const char *prefix, fio_removed_fn *removed, void *user)
{
	for (struct dirent *e; (e = readdir(d));) {
		struct stat st;
		if (stale_temp(d, e->d_name, prefix, &st) &&
		    unlinkat(dirfd(d), e->d_name, 0) == 0 && removed)
			removed(user, dir, e->d_name, (uint64_t)st.st_size);
	}
	closedir(d);
}

/* Creates a new temporary file beside target, in its directory opened as dir, never
 * following a link and never reusing a name (O_CREAT|O_EXCL|O_NOFOLLOW on a random
 * name): a link planted at a predictable name cannot aim the write. The name,
 * .STEM.tmp.PID.RANDOM, goes into tmp (tmpsz bytes); those a killed writer left are
 * removed first (removed, may be NULL, hears of each). */
static int create_temp(int dir, const char *target, const char *base, mode_t mode, char *tmp,
		       size_t tmpsz, fio_removed_fn *removed, void *user)
{
	char prefix[NAME_MAX + 8], shown[4200];
	temp_prefix(prefix, base);
	/* the same directory read apart (fdopendir takes what it is given) */
	int again = openat(dir, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	DIR *d = again >= 0 ? fdopendir(again) : NULL;
	if (d)
		sweep(d, parent_dir(target, shown, sizeof shown) ? "." : shown, prefix, removed,
		      user);
	else if (again >= 0)
		close(again);
	for (int tries = 0; tries < 100; tries++) {
		uint64_t r = 0;
		if (getrandom(&r, sizeof r, 0) != (ssize_t)sizeof r)
			r = (uint64_t)getpid() * 2654435761u + (uint64_t)tries * 40503u +
			    (uint64_t)clock();
		if (snprintf(tmp, tmpsz, "%s%ld.%016llx", prefix, (long)getpid(),
			     (unsigned long long)r) >= (int)tmpsz)
			return err_set("%s: name too long", target);
		int fd = openat(dir, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
				mode);
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

/* path's last component, or NULL when it names a directory ("dir/", ".", ".."). */
static const char *file_name(const char *path)
{
	const char *slash = strrchr(path, '/'), *base = slash ? slash + 1 : path;
	return *base && strcmp(base, ".") && strcmp(base, "..") ? base : NULL;
}

/* The directory holding path, opened: every later step acts on it, whatever a link
 * in path's directories is turned to meanwhile. *base: path's last component. */
static int open_dir_of(const char *path, const char **base)
{
	char dir[4200];
	if (!(*base = file_name(path)))
		return err_set("%s: names a directory, not a file", path);
	if (parent_dir(path, dir, sizeof dir))
		return err_set("%s: name too long", path);
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	return fd >= 0 ? fd
		       : err_set("%s: cannot create a file beside it: %s", path, strerror(errno));
}

/* Whether the opened directory is the system's: on the file system of /dev, /dev/pts,
 * /proc or /sys (/dev/shm is a tmpfs of its own, a place for files like /tmp). Where
 * such a root shares the file system of / (no mount of its own), only the root
 * directory itself counts. Undecidable: the system's. */
static bool system_dir(int dir)
{
	static const char *const roots[] = {"/dev", "/dev/pts", "/proc", "/sys"};
	struct stat d, r, top;
	if (fstat(dir, &d) != 0 || stat("/", &top) != 0)
		return true;
	for (size_t i = 0; i < sizeof roots / sizeof *roots; i++)
		if (stat(roots[i], &r) == 0 && r.st_dev == d.st_dev &&
		    (r.st_dev != top.st_dev || r.st_ino == d.st_ino))
			return true;
	return false;
}

bool fio_in_system_dir(const char *path)
{
	const char *base;
	int dir = open_dir_of(path, &base);
	bool sys = dir < 0 || system_dir(dir);
	if (dir >= 0)
		close(dir);
	err_clear();
	return sys;
}

/* The descriptor of this process that base in dir names, or -1: an entry of
 * /proc/self/fd, or a link to one (/dev/stdout, /dev/fd/1). */
static int descriptor_named(int dir, const char *base)
{
	struct stat d, fdd;
	char to[256], *end;
	long n = -1;
	if (fstat(dir, &d) == 0 && stat("/proc/self/fd", &fdd) == 0 && d.st_dev == fdd.st_dev &&
	    d.st_ino == fdd.st_ino) {
		n = strtol(base, &end, 10);
		return *base >= '0' && *base <= '9' && !*end && n <= INT_MAX ? (int)n : -1;
	}
	ssize_t len = readlinkat(dir, base, to, sizeof to - 1);
	if (len <= 0)
		return -1;
	to[len] = '\0';
	char self[64];
	snprintf(self, sizeof self, "/proc/%ld/fd/", (long)getpid());
	const char *forms[] = {"/proc/self/fd/", "/dev/fd/", self};
	for (size_t i = 0; i < sizeof forms / sizeof *forms; i++) {
		size_t k = strlen(forms[i]);
		if (!strncmp(to, forms[i], k) && to[k] >= '0' && to[k] <= '9') {
			n = strtol(to + k, &end, 10);
			return !*end && n <= INT_MAX ? (int)n : -1;
		}
	}
	return -1;
}

/* What a name in the system's directories leads to, opened to write (see
 * fio_open_through). */
static int open_through_at(int dir, const char *base, const char *target)
{
	int n = descriptor_named(dir, base);
	if (n >= 0) { /* the descriptor itself, as the shell opened it */
		int fl = fcntl(n, F_GETFL);
		if (fl < 0)
			return err_set("%s: descriptor %d is not open", target, n);
		if ((fl & O_ACCMODE) == O_RDONLY)
			return err_set("%s: descriptor %d is open for reading only", target, n);
		int fd = fcntl(n, F_DUPFD_CLOEXEC, 0);
		return fd >= 0 ? fd : err_set("%s: %s", target, strerror(errno));
	}
	/* O_NONBLOCK: a FIFO without a reader fails (ENXIO) instead of waiting forever */
	int fd = openat(dir, base, O_WRONLY | O_NOCTTY | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0)
		return errno == ENXIO ? err_set("%s: nothing reads this pipe", target)
		       : errno == ENOENT
			       ? err_set("%s: no such file (only what is there is written in "
					 "this directory)",
					 target)
			       : err_set("%s: cannot open: %s", target, strerror(errno));
	struct stat st;
	if (fstat(fd, &st) != 0 || !(S_ISCHR(st.st_mode) || S_ISFIFO(st.st_mode))) {
		bool reg = S_ISREG(st.st_mode);
		close(fd);
		/* a file here is the kernel's (/proc/sys, /sys) */
		return reg ? err_set("%s: a file of the system's (refused: only a terminal, a "
				     "pipe or a descriptor is written here)",
				     target)
			   : err_set("%s: not a terminal, a pipe or a descriptor (refused)",
				     target);
	}
	int fl = fcntl(fd, F_GETFL);
	if (fl >= 0)
		fcntl(fd, F_SETFL, fl & ~O_NONBLOCK);
	return fd;
}

int fio_open_through(const char *target)
{
	const char *base;
	int dir = open_dir_of(target, &base);
	if (dir < 0)
		return -1;
	int fd = open_through_at(dir, base, target);
	close(dir);
	return fd;
}

static int write_through(int dir, const char *base, const char *target, const void *data,
			 size_t len)
{
	int fd = open_through_at(dir, base, target);
	if (fd < 0)
		return -1;
	int rc = fio_write_fd(fd, data, len)
			 ? err_set("%s: write failed: %s", target, strerror(errno))
			 : 0;
	if (close(fd) != 0 && rc == 0)
		rc = err_set("%s: write failed: %s", target, strerror(errno));
	return rc;
}

/* The temporary file of r, for path (base in the opened directory dir): what is at
 * path now must be a regular file or nothing (a link there is replaced, never
 * followed: a link planted where a user saves must not aim the write, and the new
 * file takes `mode`, not the mode of whatever the link points to). */
static int begin_at(struct fio_replace *r, int dir, const char *base, const char *path, mode_t mode,
		    fio_removed_fn *removed, void *user)
{
	struct stat st;
	bool exists = fstatat(dir, base, &st, AT_SYMLINK_NOFOLLOW) == 0 && !S_ISLNK(st.st_mode);
	r->dir = dir, r->fd = -1, r->path = path, r->base = base;
	if (exists && !S_ISREG(st.st_mode))
		return err_set("%s: not a regular file (refused: only a file can be replaced)",
			       path);
	/* The new file has `mode` whatever the old one had: a file the program writes is
	 * private, also where a copy made world-writable (0666) or readable was there;
	 * another user's file lends nothing either, nor anyone set-id bits. */
	r->fd = create_temp(dir, path, base, mode, r->tmp, sizeof r->tmp, removed, user);
	if (r->fd < 0)
		return -1;
	return r->fd;
}

int fio_replace_begin(struct fio_replace *r, const char *path, mode_t mode, fio_removed_fn *removed,
		      void *user)
{
	const char *base;
	int dir = open_dir_of(path, &base);
	r->dir = r->fd = -1;
	if (dir < 0)
		return -1;
	if (system_dir(dir)) {
		close(dir);
		return err_set("%s: in the system's directories (refused: only a file of ours is "
			       "replaced)",
			       path);
	}
	if (begin_at(r, dir, base, path, mode, removed, user) < 0) {
		close(dir);
		return r->dir = -1;
	}
	return r->fd;
}

int fio_replace_commit(struct fio_replace *r)
{
	int rc = fsync(r->fd) != 0 ? err_set("%s: write failed: %s", r->path, strerror(errno)) : 0;
	if (close(r->fd) != 0 && rc == 0)
		rc = err_set("%s: write failed: %s", r->path, strerror(errno));
	r->fd = -1;
	if (rc == 0 && renameat(r->dir, r->tmp, r->dir, r->base) != 0)
		rc = err_set("%s: cannot replace: %s", r->path, strerror(errno));
	if (rc)
		unlinkat(r->dir, r->tmp, 0);
	else
		(void)fsync(r->dir); /* best effort: the rename is in place for every reader */
	close(r->dir);
	r->dir = -1;
	return rc;
}

void fio_replace_abort(struct fio_replace *r)
{
	if (r->fd >= 0)
		close(r->fd);
	if (r->dir >= 0) {
		unlinkat(r->dir, r->tmp, 0);
		close(r->dir);
	}
	r->dir = r->fd = -1;
}

/* Writes and renames with the signals that end a program held back, so that a
 * Ctrl-C, a SIGTERM or a closed terminal comes after the rename (or after the temp
 * file is removed), never between: no half-written temp file is left behind. The
 * directory dir stays the caller's. */
static int replace(int dir, const char *base, const char *target, const void *data, size_t len,
		   mode_t mode)
{
	struct fio_replace r;
	int again = dup(dir); /* fio_replace_commit closes its own */
	if (again < 0)
		return err_set("%s: %s", target, strerror(errno));
	if (begin_at(&r, again, base, target, mode, NULL, NULL) < 0) {
		close(again);
		return -1;
	}
	if (fio_write_fd(r.fd, data, len) != 0) {
		err_set("%s: write failed: %s", target, strerror(errno));
		fio_replace_abort(&r);
		return -1;
	}
	return fio_replace_commit(&r);
}

int fio_write_atomic(const char *path, const void *data, size_t len, mode_t mode, unsigned flags)
{
	struct stat st;
	const char *base;
	int dir = open_dir_of(path, &base), rc;
	if (dir < 0)
		return -1;
	if ((flags & FIO_NO_LINKS) && fstatat(dir, base, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
	    S_ISLNK(st.st_mode)) {
		rc = err_set("%s: is a symbolic link (refused: nothing here should be one)", path);
	} else if (system_dir(dir)) { /* a pipe may block: signals are not held for it */
		rc = write_through(dir, base, path, data, len);
	} else {
		sigset_t hold, old;
		sigemptyset(&hold);
		sigaddset(&hold, SIGINT);
		sigaddset(&hold, SIGTERM);
		sigaddset(&hold, SIGHUP);
		sigaddset(&hold, SIGQUIT);
		pthread_sigmask(SIG_BLOCK, &hold, &old);
		rc = replace(dir, base, path, data, len, mode);
		pthread_sigmask(SIG_SETMASK, &old, NULL);
	}
	close(dir);
	return rc;
}

int fio_foreign_entry(const char *dir, const char *const *known, size_t n, char *name, size_t size)
{
	DIR *d = opendir(dir);
	if (!d)
		return err_set("%s: cannot read: %s", dir, strerror(errno));
	name[0] = '\0';
	for (struct dirent *e; !name[0] && (e = readdir(d));) {
		bool ours = !strcmp(e->d_name, ".") || !strcmp(e->d_name, "..");
		for (size_t i = 0; i < n; i++)
			ours = ours || !strcmp(e->d_name, known[i]);
		/* what a writer of a known file left when it was killed is no one else's:
		 * removed, as the next write of that file would */
		for (size_t i = 0; !ours && i < n; i++) {
			char prefix[NAME_MAX + 8];
			struct stat st;
			temp_prefix(prefix, known[i]);
			ours = stale_temp(d, e->d_name, prefix, &st) &&
			       unlinkat(dirfd(d), e->d_name, 0) == 0;
		}
		if (!ours)
			snprintf(name, size, "%s", e->d_name);
	}
	closedir(d);
	return 0;
}

int fio_try_lock(const char *path)
{
	char lock[4200];
	if (snprintf(lock, sizeof lock, "%s.lock", path) >= (int)sizeof lock)
		return err_set("%s: name too long", path);
	/* The lock holder may remove the file before it lets go (a run that saved nothing): a
	 * lock taken on a file no longer at the name is retaken on the new one. */
	for (int tries = 0; tries < 100; tries++) {
		int fd = open(lock, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
		if (fd < 0 && errno == ELOOP)
			return err_set(
				"%s: is a symbolic link (refused: nothing here should be one)",
				lock);
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

bool fio_locked(const char *path)
{
	char lock[4200];
	if (snprintf(lock, sizeof lock, "%s.lock", path) >= (int)sizeof lock)
		return false;
	/* O_NONBLOCK: a FIFO by that name (a model directory is anyone's) would block
	 * the open until a writer came; only a regular file is a lock */
	int fd = open(lock, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0)
		return false;
	struct stat st;
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
		close(fd);
		return false;
	}
	bool held = flock(fd, LOCK_EX | LOCK_NB) != 0 && errno == EWOULDBLOCK;
	close(fd); /* and with it a lock taken here */
	return held;
}

bool fio_same_file(const char *a, const char *b)
{
	struct stat sa, sb;
	return a && b && !stat(a, &sa) && !stat(b, &sb) && sa.st_dev == sb.st_dev &&
	       sa.st_ino == sb.st_ino;
}

char *fio_absolute(const char *path)
{
	char dir[PATH_MAX], abs[PATH_MAX];
	const char *base = file_name(path);
	if (!base)
		return realpath(path, abs) ? strdup(abs) : NULL;
	if (parent_dir(path, dir, sizeof dir) || !realpath(dir, abs))
		return NULL;
	return fio_join(abs, base);
}
