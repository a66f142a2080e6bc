/* fileio_paths.c — paths: whether a file ends, names joined, directories made private
 * and removed, the part of a path that does not exist yet. */
#include "src/base/err.h"
#include "src/base/fileio.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

int fio_check_ends(const char *path)
{
	bool std = !strcmp(path, "-");
	struct stat st;
	if (std ? fstat(STDIN_FILENO, &st) != 0 : stat(path, &st) != 0)
		return 0;
	if (S_ISREG(st.st_mode) || S_ISFIFO(st.st_mode) || S_ISDIR(st.st_mode))
		return 0; /* a directory: its reader says so */
	struct stat null;
	if (S_ISCHR(st.st_mode) && stat("/dev/null", &null) == 0 && S_ISCHR(null.st_mode) &&
	    st.st_rdev == null.st_rdev)
		return 0; /* ends at once: empty */
	if (S_ISCHR(st.st_mode)) {
		int fd = std ? STDIN_FILENO
			     : open(path, O_RDONLY | O_NOCTTY | O_NONBLOCK | O_CLOEXEC);
		bool tty = fd >= 0 && isatty(fd);
		if (fd >= 0 && !std)
			close(fd);
		if (tty)
			return 0;
	}
	return err_set("%s: not a regular file, a pipe or a terminal (a device or a socket "
		       "has no end to read to)",
		       std ? "standard input" : path);
}

size_t fio_trimmed_len(const char *path)
{
	size_t n = strlen(path);
	while (n > 1 && path[n - 1] == '/')
		n--;
	return n;
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
	/* a loop of links is something there that cannot be read: the open that follows
	   says why (a directory not to be searched is nothing: a repo id is a relative
	   name too) */
	return stat(path, &st) == 0 || errno == ELOOP;
}

bool fio_has_ext(const char *path, const char *ext)
{
	size_t n = strlen(path), e = strlen(ext);
	return n >= e && !strcasecmp(path + n - e, ext);
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
	/* refused before anything is made: the directories of a name too long would be
	 * left for nothing */
	if (strlen(path) >= PATH_MAX)
		return err_set("%.64s...: %s", path, strerror(ENAMETOOLONG));
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

int fio_mkdirs_below(const char *base, const char *rel, mode_t mode)
{
	if (fio_mkdirs(base, mode))
		return -1;
	int dir = open(base, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dir < 0)
		return err_set("%s: cannot open: %s", base, strerror(errno));
	const char *p = rel;
	while (*p) {
		size_t n = strcspn(p, "/");
		char name[NAME_MAX + 1];
		if (n == 0 || n > NAME_MAX) { /* "a//b", or a name no folder has */
			p += n + (p[n] == '/');
			if (n == 0)
				continue;
			close(dir);
			return err_set("%s/%s: %s", base, rel, strerror(ENAMETOOLONG));
		}
		memcpy(name, p, n), name[n] = 0;
		if (mkdirat(dir, name, mode) && errno != EEXIST) {
			err_set("%s/%.*s: cannot create directory: %s", base, (int)(p - rel + n),
				rel, strerror(errno));
			close(dir);
			return -1;
		}
		int next = openat(dir, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (next < 0) {
			struct stat st;
			bool link = fstatat(dir, name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
				    S_ISLNK(st.st_mode);
			err_set("%s/%.*s: %s", base, (int)(p - rel + n), rel,
				link ? "a symbolic link (refused: it could lead anywhere)"
				     : strerror(errno));
			close(dir);
			return -1;
		}
		close(dir);
		dir = next;
		p += n + (p[n] == '/');
	}
	return dir;
}

int fio_private_dir(const char *path)
{
	if (fio_mkdirs(path, 0700))
		return -1;
	/* by descriptor: the directory checked is the one changed. A link the user made
	 * to a directory elsewhere is followed, but what it leads to must be theirs: in
	 * another user's directory that user could read, or replace, what is kept there
	 * (as ssh refuses such a ~/.ssh). A failed fchmod costs nothing the directory did
	 * not already lack. */
	int fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	struct stat st;
	if (fd < 0 || fstat(fd, &st) != 0) {
		err_set("%s: cannot open: %s", path, strerror(errno));
		if (fd >= 0)
			close(fd);
		return -1;
	}
	if (st.st_uid != geteuid()) {
		close(fd);
		return err_set("%s: belongs to another user (uid %ld; refused: they could read "
			       "or replace the files kept there)",
			       path, (long)st.st_uid);
	}
	if (st.st_mode & 077)
		(void)fchmod(fd, st.st_mode & 0700);
	close(fd);
	return 0;
}

/* path without its "." components and repeated or trailing slashes ("./runs//tok/"
 * is "runs/tok", the same directory) in out[cap]: its length, or 0 when it does not
 * fit. No allocation: a signal handler calls it (fio_rmdirs_upto). */
static size_t plain_path(const char *path, char *out, size_t cap)
{
	size_t n = 0;
	if (cap < 2)
		return 0;
	if (*path == '/')
		out[n++] = '/';
	for (const char *c = path + strspn(path, "/"); *c; c += strspn(c, "/")) {
		size_t k = strcspn(c, "/");
		if (!(k == 1 && *c == '.')) {
			size_t sep = n > 0 && out[n - 1] != '/';
			if (n + sep + k + 1 > cap)
				return 0;
			if (sep)
				out[n++] = '/';
			memcpy(out + n, c, k);
			n += k;
		}
		c += k;
	}
	if (n == 0) /* "." itself */
		out[n++] = '.';
	out[n] = '\0';
	return n;
}

/* Whether lstat tells whether p[0..n) (a plain path) is missing: not when a ".." in it
 * follows a name that is missing itself ("new/../keep" fails for want of new, whatever
 * keep is), so the part up to its last ".." must be there. */
static bool judgeable(char *p, size_t n)
{
	size_t last = 0; /* the end of the last ".." component */
	for (size_t i = 0; i < n; i += strspn(p + i, "/")) {
		size_t k = strcspn(p + i, "/");
		if (k > n - i)
			k = n - i;
		if (k == 2 && p[i] == '.' && p[i + 1] == '.')
			last = i + 2;
		i += k;
	}
	if (!last)
		return true;
	char c = p[last];
	p[last] = '\0';
	struct stat st;
	bool there = stat(p, &st) == 0;
	p[last] = c;
	return there;
}

char *fio_missing_top(const char *path)
{
	char p[PATH_MAX];
	struct stat st;
	size_t top = plain_path(path, p, sizeof p);
	if (!top || lstat(p, &st) == 0 || errno != ENOENT)
		return NULL;
	for (;;) { /* the parent of p[0..top) missing too: it is the top */
		size_t cut = top;
		while (cut > 0 && p[cut - 1] != '/')
			cut--;
		if (cut <= 1) /* a relative path's first name, or an absolute one's below / */
			break;
		if (!judgeable(p, cut - 1)) /* "new/..": the leaf alone, as a user's mkdir */
			break;
		p[cut - 1] = '\0';
		bool missing = lstat(p, &st) != 0 && errno == ENOENT;
		p[cut - 1] = '/';
		if (!missing)
			break;
		top = cut - 1;
	}
	return strndup(p, top);
}

void fio_rmdirs_upto(const char *path, const char *top)
{
	char buf[PATH_MAX];
	size_t n = plain_path(path, buf, sizeof buf), t = strlen(top);
	if (!n || t > n || strncmp(buf, top, t) != 0 || (n > t && buf[t] != '/'))
		return;
	/* a directory of the chain not made after all (mkdir failed there) is skipped */
	while ((rmdir(buf) == 0 || errno == ENOENT) && n > t) {
		while (buf[n - 1] != '/') /* buf[t] is a slash: it stops there at the latest */
			n--;
		buf[--n] = '\0';
	}
}
