/* safetensors.h — safetensors files: memory-mapping, header parsing and validation.
 * Internal to the engine (model.c binds the tensors); also the fuzz target's entry. */
#ifndef QWENCHAT_SAFETENSORS_H
#define QWENCHAT_SAFETENSORS_H

#include "engine/engine.h"

#include <stddef.h>
#include <stdint.h>

#define ST_MAX_DIMS 8

struct st_tensor {
	char *name;
	enum eng_dtype dtype;
	int ndim;
	int64_t shape[ST_MAX_DIMS];
	const void *data; /* inside the file's bytes; never copied */
	size_t offset;    /* from the start of the file */
	size_t nbytes;
};

struct st_file {
	char *name;           /* used in messages (e.g. "model.safetensors") */
	const uint8_t *bytes; /* the whole file */
	size_t size;
	void *map; /* mmap base, NULL when parsed from caller memory */
	int ntensors;
	struct st_tensor *tensors; /* sorted by name */
};

/* Maps `path` read-only and parses it; messages say `name`. NULL on error (err_set). */
struct st_file *st_open(const char *path, const char *name);

/* Parses a whole file already in memory (not copied: `bytes` must outlive the
 * result). Checks the header length, the JSON, every dtype, shape and offset
 * (within the file, aligned, no overlap, no hole). NULL on error (err_set). */
struct st_file *st_parse(const void *bytes, size_t size, const char *name);

void st_free(struct st_file *f);

/* Opens path (called `name` in messages), refuses anything but a regular file of at
 * least min_size bytes ("file is truncated: N bytes, TOO_SHORT") and maps it read-only
 * for weights read in place (2 MB-aligned, huge pages asked for); *size gets its size.
 * NULL with err_set. */
void *st_map_file(const char *path, const char *name, size_t min_size, const char *too_short,
		  size_t *size);

/* The tensor called `name`, or NULL. */
const struct st_tensor *st_find(const struct st_file *f, const char *name);

#endif
