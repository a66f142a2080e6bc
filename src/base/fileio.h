/* fileio.h — whole-file reads and crash-safe writes. */
#ifndef QWENCHAT_FILEIO_H
#define QWENCHAT_FILEIO_H

#include <stddef.h>
#include <sys/types.h>

/* Reads the whole file (or stdin when path is "-") into a NUL-terminated buffer.
 * Refuses files larger than max_bytes. Returns NULL with err_set on failure. */
char *fio_read_all(const char *path, size_t max_bytes, size_t *len);

/* Writes data to path through "path.tmp.PID" + fsync + rename, so a reader sees
 * either the old file or the new one, never a partial one. 0 or -1 (err_set). */
int fio_write_atomic(const char *path, const void *data, size_t len);

/* Joins a directory and a file name into a malloc'd path. */
char *fio_join(const char *dir, const char *name);

/* Creates path and its missing parents (like mkdir -p) with `mode`; 0, or -1 with
 * err_set (also when path exists but is not a directory). */
int fio_mkdirs(const char *path, mode_t mode);

/* 1 when path names an existing regular file, 0 otherwise. */
int fio_is_file(const char *path);

/* 1 when path names an existing directory, 0 otherwise. */
int fio_is_dir(const char *path);

#endif
