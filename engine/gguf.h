/* gguf.h — GGUF files (llama.cpp's format, versions 2 and 3): memory-mapping, parsing
 * and validating the header, the metadata key/values and the tensor infos. Internal
 * to the engine (model_gguf.c binds the tensors, engine.h's eng_gguf_* expose the
 * metadata); also the fuzz target's entry. */
#ifndef QWENCHAT_GGUF_H
#define QWENCHAT_GGUF_H

#include "engine/engine.h"

#include <stddef.h>
#include <stdint.h>

#define GGUF_MAX_DIMS 4  /* ggml's GGML_MAX_DIMS */
#define GGUF_MAX_NAME 64 /* ggml's GGML_MAX_NAME: names are shorter */

/* One metadata value. Scalars and arrays of numbers point into the file; strings
 * are a uint64 length and that many bytes (not NUL-terminated). */
struct gguf_kv {
	char *key;               /* NUL-terminated copy */
	enum eng_gguf_type type; /* ENG_GGUF_ARRAY for arrays */
	enum eng_gguf_type elem; /* arrays: the element type; else == type */
	uint64_t n;              /* arrays: element count; 1 otherwise */
	const uint8_t *data;     /* the value (arrays: the first element) */
	const uint8_t **strs;    /* string arrays: where each element's length is */
};

struct gguf_tensor {
	char name[GGUF_MAX_NAME];
	int ggml_type; /* the number in the file */
	enum eng_dtype dtype;
	int ndim;
	int64_t ne[GGUF_MAX_DIMS]; /* ne[0] is the row length (ggml order) */
	size_t offset;             /* from the start of the file */
	size_t nbytes;
	const void *data; /* inside the file's bytes; never copied */
};

struct eng_gguf {
	char *name; /* used in messages (e.g. "model-q4_k_m.gguf") */
	const uint8_t *bytes;
	size_t size;
	void *map; /* mmap base, NULL when parsed from caller memory */
	uint32_t version;
	size_t alignment, data_start;
	int64_t nkv, ntensors;
	struct gguf_kv *kv;          /* in file order */
	struct gguf_tensor *tensors; /* sorted by name */
};

/* Maps `path` read-only and parses it; messages say `name`. NULL on error (err_set). */
struct eng_gguf *gguf_open(const char *path, const char *name);

/* Parses a whole file already in memory (not copied: `bytes` must outlive the
 * result). Checks the magic, version, every count, length, type and offset (tensors
 * inside the file, aligned, not overlapping). NULL on error (err_set). */
struct eng_gguf *gguf_parse(const void *bytes, size_t size, const char *name);

void gguf_free(struct eng_gguf *g);

/* The key/value or the tensor called `name`, or NULL. */
const struct gguf_kv *gguf_find(const struct eng_gguf *g, const char *key);
const struct gguf_tensor *gguf_tensor(const struct eng_gguf *g, const char *name);

/* Bytes of one value of a number or bool type; 0 for a string or an array. */
size_t gguf_scalar_size(enum eng_gguf_type t);

#endif
