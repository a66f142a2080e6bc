/* checkpoint.c — safetensors from and to fp32 arrays, and the write-aside-then-rename
 * transaction that replaces a checkpoint's files together. */
#include "src/train/checkpoint.h"
#include "engine/train.h"
#include "src/base/err.h"
#include "src/base/fileio.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---- safetensors ------------------------------------------------------------ */

uint16_t ckpt_bf16(float x)
{
	uint32_t u;
	memcpy(&u, &x, sizeof u);
	if ((u & 0x7fffffffu) > 0x7f800000u)
		return (uint16_t)((u >> 16) | 0x40); /* quiet the NaN, keep its sign */
	u += 0x7fffu + ((u >> 16) & 1);
	return (uint16_t)(u >> 16);
}

static int64_t numel(const struct ckpt_tensor *t)
{
	return t->ndim == 1 ? t->shape[0] : t->shape[0] * t->shape[1];
}

/* The header: {"__metadata__": {...}, NAME: {dtype, shape, data_offsets}, ...}, padded
 * with spaces to a multiple of 8 bytes so that the data stays aligned. */
static char *make_header(const struct ckpt_tensor *t, int n, enum ckpt_dtype dt,
			 const char *const *meta, int n_meta, size_t *len)
{
	json_t *root = json_object(), *md = json_object();
	size_t es = dt == CKPT_F32 ? 4 : 2;
	uint64_t off = 0;
	bool ok = root && md && !json_object_set_new(root, "__metadata__", md);
	for (int i = 0; ok && i < n_meta; i++)
		ok = !json_object_set_new(md, meta[2 * i], json_string(meta[2 * i + 1]));
	for (int i = 0; ok && i < n; i++) {
		uint64_t nb = (uint64_t)numel(&t[i]) * es;
		json_t *shape = t[i].ndim == 1 ? json_pack("[I]", (json_int_t)t[i].shape[0])
					       : json_pack("[II]", (json_int_t)t[i].shape[0],
							   (json_int_t)t[i].shape[1]);
		json_t *e = json_pack("{s:s, s:o, s:[I,I]}", "dtype", dt == CKPT_F32 ? "F32" : "BF16",
				      "shape", shape, "data_offsets", (json_int_t)off,
				      (json_int_t)(off + nb));
		ok = e && !json_object_set_new(root, t[i].name, e);
		off += nb;
	}
	char *text = ok ? json_dumps(root, JSON_COMPACT) : NULL;
	json_decref(root);
	if (!text)
		return NULL;
	size_t n0 = strlen(text), padded = (n0 + 7) & ~(size_t)7;
	char *h = malloc(padded + 1);
	if (h) {
		memcpy(h, text, n0);
		memset(h + n0, ' ', padded - n0);
		h[padded] = '\0';
		*len = padded;
	}
	free(text);
	return h;
}

/* n values to fd in dtype dt. 0 or -1 (errno). */
static int write_values(int fd, const float *x, int64_t n, enum ckpt_dtype dt)
{
	if (dt == CKPT_F32) /* safetensors is little-endian, as every machine qwenchat runs on */
		return fio_write_fd(fd, x, (size_t)n * sizeof(float));
	enum { CHUNK = 1 << 18 };
	uint16_t *buf = malloc(CHUNK * sizeof *buf);
	int rc = buf ? 0 : -1;
	for (int64_t j = 0; rc == 0 && j < n; j += CHUNK) {
		int64_t k = n - j < CHUNK ? n - j : CHUNK;
		for (int64_t q = 0; q < k; q++)
			buf[q] = ckpt_bf16(x[j + q]);
		rc = fio_write_fd(fd, buf, (size_t)k * sizeof *buf);
	}
	free(buf);
	return rc;
}

/* A tensor made by its rows callback, about 1M values at a time. */
static int write_rows(int fd, const struct ckpt_tensor *t, enum ckpt_dtype dt)
{
	int64_t rows = t->ndim == 1 ? 1 : t->shape[0], cols = numel(t) / (rows ? rows : 1);
	int64_t step = cols > 0 && cols < (1 << 20) ? (1 << 20) / cols : 1;
	float *buf = malloc((size_t)(step * cols) * sizeof *buf + 1);
	int rc = buf ? 0 : (errno = ENOMEM, -1);
	for (int64_t r0 = 0; rc == 0 && r0 < rows; r0 += step) {
		int64_t r1 = r0 + step < rows ? r0 + step : rows;
		t->rows(t->ctx, r0, r1, buf);
		rc = write_values(fd, buf, (r1 - r0) * cols, dt);
	}
	free(buf);
	return rc;
}

int ckpt_st_write(int fd, const char *name, const struct ckpt_tensor *t, int n, enum ckpt_dtype dt,
		  const char *const *meta, int n_meta)
{
	size_t hlen;
	char *h = make_header(t, n, dt, meta, n_meta, &hlen);
	if (!h)
		return err_set("%s: out of memory for the header", name);
	unsigned char len8[8];
	for (int i = 0; i < 8; i++)
		len8[i] = (unsigned char)((uint64_t)hlen >> (8 * i));
	int rc = fio_write_fd(fd, len8, 8) || fio_write_fd(fd, h, hlen) ? -1 : 0;
	free(h);
	for (int i = 0; rc == 0 && i < n; i++)
		rc = t[i].data ? write_values(fd, t[i].data, numel(&t[i]), dt)
			       : write_rows(fd, &t[i], dt);
	if (rc)
		return err_set("%s: write failed: %s", name, strerror(errno));
	return 0;
}

struct ckpt_st {
	char *path;
	int fd;
	uint64_t size, data_start;
	json_t *header;
};

void ckpt_st_close(struct ckpt_st *f)
{
	if (!f)
		return;
	if (f->fd >= 0)
		close(f->fd);
	json_decref(f->header);
	free(f->path);
	free(f);
}

static int pread_all(int fd, void *dst, size_t len, uint64_t off)
{
	char *p = dst;
	while (len > 0) {
		ssize_t r = pread(fd, p, len > (1u << 30) ? (1u << 30) : len, (off_t)off);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return -1;
		p += r;
		len -= (size_t)r;
		off += (uint64_t)r;
	}
	return 0;
}

/* A safetensors header is the JSON of the tensor list: 100 MB holds millions. */
enum { MAX_HEADER = 100 << 20 };

struct ckpt_st *ckpt_st_open(const char *path)
{
	struct ckpt_st *f = calloc(1, sizeof *f);
	if (!f || !(f->path = strdup(path))) {
		free(f);
		err_set("out of memory");
		return NULL;
	}
	/* a FIFO planted in the run's directory is refused, not waited on */
	f->fd = fio_open_file(path, NULL);
	struct stat st;
	unsigned char len8[8];
	char *text = NULL;
	if (f->fd < 0)
		goto fail;
	if (fstat(f->fd, &st) != 0) {
		err_set("%s: cannot open: %s", path, strerror(errno));
		goto fail;
	}
	f->size = (uint64_t)st.st_size;
	uint64_t hlen = 0;
	if (!S_ISREG(st.st_mode) || f->size < 8 || pread_all(f->fd, len8, 8, 0)) {
		err_set("%s: not a safetensors file (shorter than its 8-byte header length)", path);
		goto fail;
	}
	for (int i = 7; i >= 0; i--)
		hlen = hlen << 8 | len8[i];
	if (hlen > MAX_HEADER || hlen > f->size - 8) {
		err_set("%s: header length %llu is beyond the file's %llu bytes", path,
			(unsigned long long)hlen, (unsigned long long)f->size);
		goto fail;
	}
	if (!(text = malloc((size_t)hlen + 1)) || pread_all(f->fd, text, (size_t)hlen, 8)) {
		err_set("%s: cannot read the header", path);
		goto fail;
	}
	json_error_t je;
	f->header = json_loadb(text, (size_t)hlen, JSON_REJECT_DUPLICATES, &je);
	if (!json_is_object(f->header)) {
		err_set("%s: header: not a JSON object (%s)", path, f->header ? "" : je.text);
		goto fail;
	}
	f->data_start = 8 + hlen;
	free(text);
	text = NULL;
	/* the layout every loader checks (no hole, no overlap, nothing after the last
	 * tensor): a checkpoint that `logits` would refuse does not resume either */
	if (eng_safetensors_check(path))
		goto fail;
	return f;
fail:
	free(text);
	ckpt_st_close(f);
	return NULL;
}

const char *ckpt_st_meta(const struct ckpt_st *f, const char *key)
{
	return json_string_value(json_object_get(json_object_get(f->header, "__metadata__"), key));
}

int ckpt_st_count(const struct ckpt_st *f)
{
	return (int)json_object_size(f->header) -
	       (json_object_get(f->header, "__metadata__") ? 1 : 0);
}

int ckpt_st_read(struct ckpt_st *f, const char *name, int ndim, const int64_t shape[2],
		 float *dst)
{
	json_t *e = json_object_get(f->header, name);
	if (!e)
		return err_set("%s: tensor %s is missing", f->path, name);
	const char *dtype = json_string_value(json_object_get(e, "dtype"));
	if (!dtype || strcmp(dtype, "F32"))
		return err_set("%s: tensor %s: dtype %s, expected F32", f->path, name,
			       dtype ? dtype : "(none)");
	json_t *sh = json_object_get(e, "shape");
	bool ok = json_is_array(sh) && (int)json_array_size(sh) == ndim;
	for (int i = 0; ok && i < ndim; i++)
		ok = json_is_integer(json_array_get(sh, (size_t)i)) &&
		     json_integer_value(json_array_get(sh, (size_t)i)) == shape[i];
	if (!ok)
		return ndim == 1 ? err_set("%s: tensor %s: shape is not [%lld]", f->path, name,
					   (long long)shape[0])
				 : err_set("%s: tensor %s: shape is not [%lld, %lld]", f->path,
					   name, (long long)shape[0], (long long)shape[1]);
	uint64_t n = (uint64_t)shape[0] * (uint64_t)(ndim == 2 ? shape[1] : 1);
	json_t *off = json_object_get(e, "data_offsets");
	json_t *b = json_array_get(off, 0), *en = json_array_get(off, 1);
	if (!json_is_integer(b) || !json_is_integer(en) || json_integer_value(b) < 0 ||
	    (uint64_t)json_integer_value(en) != (uint64_t)json_integer_value(b) + 4 * n ||
	    f->data_start + (uint64_t)json_integer_value(en) > f->size)
		return err_set("%s: tensor %s: data_offsets are not %llu bytes inside the file",
			       f->path, name, (unsigned long long)(4 * n));
	if (pread_all(f->fd, dst, (size_t)(4 * n), f->data_start + (uint64_t)json_integer_value(b)))
		return err_set("%s: tensor %s: read error: %s", f->path, name, strerror(errno));
	return 0;
}

/* ---- the transaction ----------------------------------------------------------- */

#define TXN_DIR  ".checkpoint.new"
#define TXN_MARK "COMPLETE"

enum { MAX_FILES = 64 }; /* under 100: ckpt_discard_unmarked's names */

struct ckpt_txn {
	char *dir;  /* DIR */
	char *tmp;  /* DIR/.checkpoint.new */
	int tmpfd;  /* open on tmp */
	int n;      /* files so far: f0 .. f(n-1) */
	char *rel[MAX_FILES];
	int fd[MAX_FILES]; /* open until ckpt_close; -1 after */
};

/* A destination the mark may name: NAME or train-state/NAME, NAME without a slash,
 * not "." or "..": whatever the mark says, a rename stays inside DIR. */
static bool rel_ok(const char *rel)
{
	const char *s = rel;
	if (!strncmp(s, "train-state/", 12))
		s += 12;
	return *s && strcmp(s, ".") && strcmp(s, "..") && !strchr(s, '/') && strlen(rel) < 200;
}

/* Removes the regular files of the temporary directory (never following a link) and
 * the directory. */
static int remove_tmp(const char *tmp)
{
	int dfd = open(tmp, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (dfd < 0)
		return errno == ENOENT ? 0 : err_set("%s: cannot open: %s", tmp, strerror(errno));
	DIR *d = fdopendir(dfd);
	if (!d) {
		close(dfd);
		return err_set("%s: cannot read: %s", tmp, strerror(errno));
	}
	struct dirent *e;
	while ((e = readdir(d)))
		if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
			unlinkat(dfd, e->d_name, 0);
	closedir(d);
	if (rmdir(tmp) != 0)
		return err_set("%s: cannot remove: %s", tmp, strerror(errno));
	return 0;
}

/* A name write_mark gives a new file inside the transaction's directory: "f" and
 * digits, so that the source of a rename cannot leave that directory. */
static bool temp_name_ok(const char *name)
{
	if (name[0] != 'f' || !name[1])
		return false;
	for (const char *p = name + 1; *p; p++)
		if (*p < '0' || *p > '9')
			return false;
	return true;
}

/* Renames every file the mark lists into place (those already moved are missing from
 * tmp and skipped), syncs DIR and DIR/train-state, removes tmp. */
static int apply_mark(const char *dir, const char *tmp, const char *mark)
{
	char *state = fio_join(dir, "train-state");
	int rc = state ? 0 : err_set("out of memory");
	for (const char *line = mark; rc == 0 && *line;) {
		const char *nl = strchr(line, '\n');
		size_t len = nl ? (size_t)(nl - line) : strlen(line);
		char buf[256], src[4200], dst[4200];
		const char *sp = memchr(line, ' ', len);
		if (len >= sizeof buf || !sp) {
			rc = err_set("%s/%s: malformed line", tmp, TXN_MARK);
			break;
		}
		memcpy(buf, line, len);
		buf[len] = '\0';
		buf[sp - line] = '\0';
		const char *rel = buf + (sp - line) + 1;
		if (!rel_ok(rel) || !temp_name_ok(buf)) {
			rc = err_set("%s/%s: '%s %s' is not a checkpoint file", tmp, TXN_MARK, buf,
				     rel);
			break;
		}
		snprintf(src, sizeof src, "%s/%s", tmp, buf);
		snprintf(dst, sizeof dst, "%s/%s", dir, rel);
		struct stat st;
		if (lstat(src, &st) == 0 && !S_ISREG(st.st_mode))
			rc = err_set("%s: not a regular file (refused: a checkpoint file is one)",
				     src);
		else if (!strncmp(rel, "train-state/", 12) && fio_mkdirs(state, 0700))
			rc = -1;
		else if (rename(src, dst) != 0 && errno != ENOENT)
			rc = err_set("%s: cannot put the new checkpoint file in place: %s", dst,
				     strerror(errno));
		line += len + (nl ? 1 : 0);
	}
	if (rc == 0 && (fio_sync_dir(dir) || (fio_is_dir(state) && fio_sync_dir(state))))
		rc = -1;
	free(state);
	return rc == 0 ? remove_tmp(tmp) : rc;
}

int ckpt_recover(const char *dir)
{
	char *tmp = fio_join(dir, TXN_DIR), *mark = tmp ? fio_join(tmp, TXN_MARK) : NULL;
	int rc = 0;
	struct stat st;
	if (!mark) {
		rc = err_set("out of memory");
	} else if (lstat(tmp, &st) != 0) {
		rc = 0; /* nothing left over */
	} else if (!S_ISDIR(st.st_mode)) {
		rc = err_set("%s: not a directory (refused: only a checkpoint in progress may be "
			     "there)",
			     tmp);
	} else if (fio_is_file(mark)) {
		size_t len;
		char *text = fio_read_file(mark, 1 << 20, &len);
		rc = !text ? -1 : apply_mark(dir, tmp, text) ? -1 : 1;
		free(text);
	} else {
		rc = remove_tmp(tmp);
	}
	free(mark);
	free(tmp);
	return rc;
}

/* dst = a then b, with calls a signal handler may make (no snprintf). */
static void cat2(char *dst, const char *a, const char *b)
{
	size_t n = strlen(a);
	memcpy(dst, a, n);
	strcpy(dst + n, b);
}

int ckpt_discard_unmarked(const char *tmp, char *buf)
{
	struct stat st;
	if (lstat(tmp, &st) != 0 || !S_ISDIR(st.st_mode))
		return 0; /* none, or not a save's (ckpt_recover refuses it): left alone */
	cat2(buf, tmp, "/" TXN_MARK);
	if (lstat(buf, &st) == 0)
		return 1;
	char name[8] = "/f";
	for (int i = 0; i < MAX_FILES; i++) {
		/* "/f" and the digits of i: write_mark's names */
		int k = 2;
		if (i >= 10)
			name[k++] = (char)('0' + i / 10);
		name[k++] = (char)('0' + i % 10);
		name[k] = '\0';
		cat2(buf, tmp, name);
		unlink(buf);
	}
	cat2(buf, tmp, "/" TXN_MARK ".part");
	unlink(buf);
	rmdir(tmp); /* fails where something else is there, which ckpt_recover removes */
	return 0;
}

struct ckpt_txn *ckpt_begin(const char *dir)
{
	if (ckpt_recover(dir) < 0)
		return NULL;
	struct ckpt_txn *x = calloc(1, sizeof *x);
	if (!x || !(x->dir = strdup(dir)) || !(x->tmp = fio_join(dir, TXN_DIR))) {
		err_set("out of memory");
		goto fail;
	}
	if (mkdir(x->tmp, 0700) != 0) {
		err_set("%s: cannot create: %s", x->tmp, strerror(errno));
		goto fail;
	}
	x->tmpfd = open(x->tmp, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (x->tmpfd < 0) {
		err_set("%s: cannot open: %s", x->tmp, strerror(errno));
		rmdir(x->tmp);
		goto fail;
	}
	return x;
fail:
	if (x) {
		free(x->tmp);
		free(x->dir);
	}
	free(x);
	return NULL;
}

int ckpt_create(struct ckpt_txn *x, const char *rel)
{
	if (x->n == MAX_FILES || !rel_ok(rel))
		return err_set("%s: not a checkpoint file name", rel);
	char name[16];
	snprintf(name, sizeof name, "f%d", x->n);
	int fd = openat(x->tmpfd, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0)
		return err_set("%s/%s (for %s): cannot create: %s", x->tmp, name, rel, strerror(errno));
	if (!(x->rel[x->n] = strdup(rel))) {
		close(fd);
		return err_set("out of memory");
	}
	x->fd[x->n++] = fd;
	return fd;
}

int ckpt_close(struct ckpt_txn *x, int fd)
{
	for (int i = 0; i < x->n; i++) {
		if (x->fd[i] != fd)
			continue;
		x->fd[i] = -1;
		int rc = fsync(fd) == 0 ? 0 : -1;
		if (close(fd) != 0)
			rc = -1;
		return rc ? err_set("%s/%s: write failed: %s", x->dir, x->rel[i], strerror(errno))
			  : 0;
	}
	return err_set("ckpt_close: not a file of this checkpoint");
}

int ckpt_put(struct ckpt_txn *x, const char *rel, const void *data, size_t len)
{
	int fd = ckpt_create(x, rel);
	if (fd < 0)
		return -1;
	if (fio_write_fd(fd, data, len)) {
		int e = errno;
		ckpt_close(x, fd);
		return err_set("%s/%s: write failed: %s", x->dir, rel, strerror(e));
	}
	return ckpt_close(x, fd);
}

static void txn_free(struct ckpt_txn *x)
{
	for (int i = 0; i < x->n; i++) {
		if (x->fd[i] >= 0)
			close(x->fd[i]);
		free(x->rel[i]);
	}
	if (x->tmpfd >= 0)
		close(x->tmpfd);
	free(x->tmp);
	free(x->dir);
	free(x);
}

void ckpt_abort(struct ckpt_txn *x)
{
	if (!x)
		return;
	for (int i = 0; i < x->n; i++)
		if (x->fd[i] >= 0) {
			close(x->fd[i]);
			x->fd[i] = -1;
		}
	remove_tmp(x->tmp);
	txn_free(x);
}

/* The mark: "fK REL" per line, written to a file of its own, synced, and renamed to
 * its name, so that it exists whole or not at all. */
static int write_mark(struct ckpt_txn *x, char **text)
{
	size_t cap = 64, len = 0;
	for (int i = 0; i < x->n; i++)
		cap += strlen(x->rel[i]) + 16;
	char *m = malloc(cap);
	if (!m)
		return err_set("out of memory");
	/* config.json last: a directory is a model once it is there, so a reader of a first
	   checkpoint finds none or a whole one (later ones only swap files alike) */
	for (int pass = 0; pass < 2; pass++)
		for (int i = 0; i < x->n; i++)
			if ((strcmp(x->rel[i], "config.json") == 0) == (pass == 1))
				len += (size_t)snprintf(m + len, cap - len, "f%d %s\n", i,
							x->rel[i]);
	*text = m;
	int fd = openat(x->tmpfd, TXN_MARK ".part", O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
			0600);
	if (fd < 0)
		return err_set("%s: cannot create the mark: %s", x->tmp, strerror(errno));
	int rc = fio_write_fd(fd, m, len) || fsync(fd) ? -1 : 0;
	if (close(fd) != 0)
		rc = -1;
	if (rc == 0 && renameat(x->tmpfd, TXN_MARK ".part", x->tmpfd, TXN_MARK) != 0)
		rc = -1;
	if (rc == 0 && fsync(x->tmpfd) != 0 && errno != EINVAL)
		rc = -1;
	return rc ? err_set("%s/%s: write failed: %s", x->tmp, TXN_MARK, strerror(errno)) : 0;
}

/* Whether the renames can all happen: each directory a file goes to (dir, and
 * dir/train-state where it is) is on the staging directory's file system and
 * writable, and no file's place is taken by a directory (which a rename does not
 * replace). Found out only once the renames began, a failure would leave the files
 * put in place so far beside the old others until the next start finishes them. */
static int renames_possible(const struct ckpt_txn *x)
{
	char *state = fio_join(x->dir, "train-state");
	const char *dirs[] = {x->dir, state};
	struct stat tmp, d;
	int rc = state ? 0 : err_set("out of memory");
	if (rc == 0 && stat(x->tmp, &tmp) != 0)
		rc = err_set("%s: %s", x->tmp, strerror(errno));
	for (int i = 0; rc == 0 && i < 2; i++) {
		if (stat(dirs[i], &d) != 0) /* train-state/: made beside the staging one */
			continue;
		if (d.st_dev != tmp.st_dev)
			rc = err_set("%s: on another file system than %s: a checkpoint cannot be "
				     "renamed into it",
				     dirs[i], x->tmp);
		else if (access(dirs[i], W_OK | X_OK) != 0)
			rc = err_set("%s: cannot put the new checkpoint in it: %s", dirs[i],
				     strerror(errno));
	}
	for (int i = 0; rc == 0 && i < x->n; i++) {
		char *dst = fio_join(x->dir, x->rel[i]);
		if (!dst)
			rc = err_set("out of memory");
		else
			rc = ckpt_check_target(dst);
		free(dst);
	}
	free(state);
	return rc;
}

int ckpt_check_target(const char *path)
{
	struct stat st;
	if (lstat(path, &st) != 0 || S_ISREG(st.st_mode) || S_ISLNK(st.st_mode))
		return 0;
	return err_set("%s: %s, where the checkpoint's file goes", path,
		       S_ISDIR(st.st_mode) ? "is a directory"
					   : "not a regular file (a FIFO, a device or a socket)");
}

int ckpt_commit(struct ckpt_txn *x)
{
	for (int i = 0; i < x->n; i++)
		if (x->fd[i] >= 0 && ckpt_close(x, x->fd[i])) {
			ckpt_abort(x);
			return -1;
		}
	char *mark = NULL;
	if (renames_possible(x) || write_mark(x, &mark)) {
		free(mark);
		ckpt_abort(x);
		return -1;
	}
	/* From here on the set is complete on disk: an error below leaves the mark, and
	 * the next start (ckpt_recover) finishes the renames. */
	int rc = apply_mark(x->dir, x->tmp, mark);
	free(mark);
	txn_free(x);
	return rc;
}
