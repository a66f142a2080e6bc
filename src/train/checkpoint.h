/* checkpoint.h — the files of a training checkpoint: safetensors written from fp32
 * arrays (F32, or BF16 rounded to nearest even) and read back into them, and the
 * transaction that puts a whole set of files into a directory at once: everything is
 * written into DIR/.checkpoint.new first, synced, marked complete, and only then
 * renamed into place, so that a crash or a full disk while writing leaves the previous
 * checkpoint whole, and a crash during the renames is finished by the next start. */
#ifndef QWENCHAT_CHECKPOINT_H
#define QWENCHAT_CHECKPOINT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* ---- safetensors ------------------------------------------------------------ */

/* One tensor to write, from fp32 values: data, or made by rows (data NULL) a block of
 * whole rows at a time, [r0, r1) into out. */
struct ckpt_tensor {
	const char *name;
	int ndim;         /* 1 or 2 */
	int64_t shape[2]; /* shape[1] unused when ndim is 1 */
	const float *data;
	void (*rows)(void *ctx, int64_t r0, int64_t r1, float *out);
	void *ctx;
};

enum ckpt_dtype { CKPT_F32, CKPT_BF16 };

/* fp32 to bf16, rounded to nearest even (a NaN stays a quiet NaN). */
uint16_t ckpt_bf16(float x);

/* Writes a safetensors file to fd: the tensors in the order given, in dtype dt, with
 * the header's __metadata__ holding the string pairs meta[0..2*n_meta) (key, value,
 * ...). `name` is the file in messages. 0 or -1 (err_set: a write error, e.g. the disk
 * full). */
int ckpt_st_write(int fd, const char *name, const struct ckpt_tensor *t, int n, enum ckpt_dtype dt,
		  const char *const *meta, int n_meta);

/* A safetensors file opened for reading fp32 tensors back. */
struct ckpt_st;
/* Opens and checks the header (its length, JSON, every dtype, shape and offset within
 * the file). NULL on error (err_set names the file and the field). */
struct ckpt_st *ckpt_st_open(const char *path);
void ckpt_st_close(struct ckpt_st *f);
/* The value of a __metadata__ key, or NULL. */
const char *ckpt_st_meta(const struct ckpt_st *f, const char *key);
/* The tensors the file holds. */
int ckpt_st_count(const struct ckpt_st *f);
/* Reads tensor `name`, which must be F32 with this shape, into dst. 0 or -1 (err_set:
 * missing, another dtype or shape, a read error). */
int ckpt_st_read(struct ckpt_st *f, const char *name, int ndim, const int64_t shape[2],
		 float *dst);

/* ---- writing a set of files at once ----------------------------------------------- */

struct ckpt_txn;

/* Starts a checkpoint of DIR (which exists): a new DIR/.checkpoint.new, after
 * ckpt_recover has dealt with one left by an earlier save. NULL on error. */
struct ckpt_txn *ckpt_begin(const char *dir);
/* A new file of the transaction, to become DIR/rel (rel: a name, or
 * "train-state/NAME"); an fd open for writing (0600, created, never through a link).
 * Close it with ckpt_close. -1 on error. */
int ckpt_create(struct ckpt_txn *x, const char *rel);
/* Syncs and closes an fd from ckpt_create: 0 or -1 (err_set naming rel). */
int ckpt_close(struct ckpt_txn *x, int fd);
/* A whole file from memory: ckpt_create, write, ckpt_close. */
int ckpt_put(struct ckpt_txn *x, const char *rel, const void *data, size_t len);
/* Puts every file into place: writes the mark that the set is complete, renames each
 * file over DIR/rel (a link there is replaced, never followed), syncs the
 * directories, removes the temporary directory. Frees x. 0 or -1 (err_set; before the
 * mark nothing of DIR changed). */
int ckpt_commit(struct ckpt_txn *x);
/* 0 when a checkpoint's file may be renamed over path: nothing there, a regular file
 * or a link (replaced, never followed); else -1 with err_set (a directory, a FIFO, a
 * device: the rename would replace what the user put there). */
int ckpt_check_target(const char *path);
/* Removes what the transaction wrote; DIR is as it was. Frees x (NULL allowed). */
void ckpt_abort(struct ckpt_txn *x);

/* What an interrupted save left in DIR/.checkpoint.new: a complete set (its mark
 * written) is put into place, an incomplete one removed. 1 when a set was finished, 0
 * when there was nothing to do or only leftovers to remove, -1 on error. */
int ckpt_recover(const char *dir);

/* For a signal handler: tmp is DIR/.checkpoint.new and buf has room for strlen(tmp) +
 * 16 bytes. A set whose mark is written is kept: 1 (ckpt_recover puts it in place).
 * Else 0, the files of an unfinished one removed by name, without reading the
 * directory (async-signal-safe calls only), and tmp with them unless something else
 * is in it (left to ckpt_recover); a tmp that is not a directory is left alone. */
int ckpt_discard_unmarked(const char *tmp, char *buf);

#endif
