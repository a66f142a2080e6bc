/* fileio.c — whole-file reads and write-then-rename file updates. */
#include "src/base/fileio.h"
#include "src/base/err.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

char *fio_read_all(const char *path, size_t max_bytes, size_t *len)
{
	int is_stdin = strcmp(path, "-") == 0;
	FILE *f = is_stdin ? stdin : fopen(path, "rb");
	if (!f) {
		err_set("%s: cannot open: %s", path, strerror(errno));
		return NULL;
	}
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
	if (!is_stdin)
		fclose(f);
	if (!buf)
		return NULL;
	buf[n] = '\0';
	if (len)
		*len = n;
	return buf;
}

int fio_write_atomic(const char *path, const void *data, size_t len)
{
	size_t tlen = strlen(path) + 32;
	char *tmp = malloc(tlen);
	if (!tmp)
		return err_set("%s: out of memory", path);
	snprintf(tmp, tlen, "%s.tmp.%ld", path, (long)getpid());
	int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd < 0) {
		err_set("%s: cannot create: %s", tmp, strerror(errno));
		free(tmp);
		return -1;
	}
	const char *p = data;
	size_t left = len;
	while (left > 0) {
		ssize_t w = write(fd, p, left);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0) {
			err_set("%s: write failed: %s", path, strerror(errno));
			close(fd);
			unlink(tmp);
			free(tmp);
			return -1;
		}
		p += w;
		left -= (size_t)w;
	}
	if (fsync(fd) != 0 || close(fd) != 0) {
		err_set("%s: write failed: %s", path, strerror(errno));
		unlink(tmp);
		free(tmp);
		return -1;
	}
	if (rename(tmp, path) != 0) {
		err_set("%s: cannot replace: %s", path, strerror(errno));
		unlink(tmp);
		free(tmp);
		return -1;
	}
	free(tmp);
	return 0;
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
