/* safetensors.c — parses and validates safetensors files (8-byte little-endian
 * header length, JSON header, raw tensor data) and maps them without copying. */
#include "engine/safetensors.h"
#include "src/base/err.h"
#include "src/base/fileio.h"
#include "src/base/hugemem.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

/* Real headers are a few hundred KiB even for the largest shards. */
#define MAX_HEADER (100u << 20)

/* dtypes the format defines that we do not compute with: named in the message
 * so that "unsupported" and "corrupt" are told apart */
static const char *const other_dtypes[] = {
	"BOOL", "U8",  "I8",      "I16",     "U16",     "I32",     "U32",     "I64",
	"U64",  "F64", "F8_E5M2", "F8_E4M3", "F8_E8M0", "F6_E2M3", "F6_E3M2", "F4",
};

static int parse_dtype(const char *fname, const char *tname, json_t *v, enum eng_dtype *out)
{
	const char *s = json_string_value(v);
	if (!s)
		return err_set("%s: tensor %s: dtype is missing or not a string", fname, tname);
	if (!strcmp(s, "BF16"))
		*out = ENG_BF16;
	else if (!strcmp(s, "F16"))
		*out = ENG_F16;
	else if (!strcmp(s, "F32"))
		*out = ENG_F32;
	else {
		for (size_t i = 0; i < sizeof other_dtypes / sizeof other_dtypes[0]; i++)
			if (!strcmp(s, other_dtypes[i]))
				return err_set("%s: tensor %s: dtype %s is not supported "
					       "(BF16, F16, F32)",
					       fname, tname, s);
		return err_set("%s: tensor %s: unknown dtype \"%.32s\"", fname, tname, s);
	}
	return 0;
}

/* shape: array of non-negative integers; the element count must fit the file. */
static int parse_shape(const char *fname, struct st_tensor *t, json_t *v, size_t limit,
		       uint64_t *numel)
{
	if (!json_is_array(v))
		return err_set("%s: tensor %s: shape is missing or not an array", fname, t->name);
	if (json_array_size(v) > ST_MAX_DIMS)
		return err_set("%s: tensor %s: shape has %zu dimensions (at most %d)", fname,
			       t->name, json_array_size(v), ST_MAX_DIMS);
	t->ndim = (int)json_array_size(v);
	*numel = 1;
	for (int i = 0; i < t->ndim; i++) {
		json_t *d = json_array_get(v, (size_t)i);
		if (!json_is_integer(d) || json_integer_value(d) < 0)
			return err_set("%s: tensor %s: shape[%d] is not a non-negative integer",
				       fname, t->name, i);
		t->shape[i] = json_integer_value(d);
		if (t->shape[i] > (int64_t)limit ||
		    (t->shape[i] && *numel > (uint64_t)limit / (uint64_t)t->shape[i]))
			return err_set("%s: tensor %s: shape is larger than the file", fname,
				       t->name);
		*numel *= (uint64_t)t->shape[i];
	}
	return 0;
}

/* data_offsets [begin, end): relative to the data section, sized by the shape,
 * inside the file, aligned for the dtype (so the backends can read it in place). */
static int parse_offsets(const char *fname, struct st_tensor *t, json_t *v, size_t data_start,
			 size_t data_size, uint64_t numel)
{
	json_t *b = json_array_get(v, 0), *e = json_array_get(v, 1);
	if (!json_is_array(v) || json_array_size(v) != 2 || !json_is_integer(b) ||
	    !json_is_integer(e) || json_integer_value(b) < 0 || json_integer_value(e) < 0)
		return err_set("%s: tensor %s: data_offsets must be [begin, end] integers", fname,
			       t->name);
	uint64_t begin = (uint64_t)json_integer_value(b), end = (uint64_t)json_integer_value(e);
	if (begin > end)
		return err_set("%s: tensor %s: data_offsets [%llu, %llu] end before they begin",
			       fname, t->name, (unsigned long long)begin, (unsigned long long)end);
	if (end > data_size)
		return err_set("%s: tensor %s: data_offsets [%llu, %llu] go beyond the end of "
			       "the data (%zu bytes)",
			       fname, t->name, (unsigned long long)begin, (unsigned long long)end,
			       data_size);
	size_t es = eng_dtype_size(t->dtype);
	if (end - begin != numel * es)
		return err_set("%s: tensor %s: data_offsets [%llu, %llu] hold %llu bytes, its "
			       "shape and dtype need %llu",
			       fname, t->name, (unsigned long long)begin, (unsigned long long)end,
			       (unsigned long long)(end - begin), (unsigned long long)(numel * es));
	if ((data_start + begin) % es)
		return err_set("%s: tensor %s: data at file offset %llu is not aligned to %zu "
			       "bytes",
			       fname, t->name, (unsigned long long)(data_start + begin), es);
	t->offset = data_start + (size_t)begin;
	t->nbytes = (size_t)(end - begin);
	return 0;
}

static int by_offset(const void *a, const void *b)
{
	const struct st_tensor *x = a, *y = b;
	if (x->offset != y->offset)
		return x->offset < y->offset ? -1 : 1;
	return x->nbytes < y->nbytes ? -1 : x->nbytes > y->nbytes;
}

static int by_name(const void *a, const void *b)
{
	return strcmp(((const struct st_tensor *)a)->name, ((const struct st_tensor *)b)->name);
}

/* The format requires the data section to be covered exactly: no overlap, no hole. */
static int check_layout(struct st_file *f, size_t data_start)
{
	size_t pos = data_start;
	const char *prev = NULL;
	qsort(f->tensors, (size_t)f->ntensors, sizeof *f->tensors, by_offset);
	for (int i = 0; i < f->ntensors; i++) {
		const struct st_tensor *t = &f->tensors[i];
		if (t->offset < pos)
			return err_set("%s: tensor %s: data_offsets overlap those of tensor %s",
				       f->name, t->name, prev);
		if (t->offset > pos)
			return err_set("%s: tensor %s: data_offsets leave a hole of %zu bytes "
				       "before it",
				       f->name, t->name, t->offset - pos);
		pos = t->offset + t->nbytes;
		prev = t->name;
	}
	if (pos != f->size)
		return err_set("%s: %zu byte%s after the last tensor belong%s to no tensor",
			       f->name, f->size - pos, f->size - pos == 1 ? "" : "s",
			       f->size - pos == 1 ? "s" : "");
	return 0;
}

static int parse_entry(struct st_file *f, const char *key, json_t *v, size_t data_start)
{
	struct st_tensor *t = &f->tensors[f->ntensors];
	uint64_t numel = 0;
	if (!*key)
		return err_set("%s: a tensor has an empty name", f->name);
	if (!json_is_object(v))
		return err_set("%s: tensor %.200s: entry is not an object", f->name, key);
	if (!(t->name = strdup(key)))
		return err_set("out of memory");
	f->ntensors++;
	if (parse_dtype(f->name, t->name, json_object_get(v, "dtype"), &t->dtype) ||
	    parse_shape(f->name, t, json_object_get(v, "shape"), f->size, &numel) ||
	    parse_offsets(f->name, t, json_object_get(v, "data_offsets"), data_start,
			  f->size - data_start, numel))
		return -1;
	t->data = f->bytes + t->offset;
	return 0;
}

static int parse_header(struct st_file *f)
{
	if (f->size < 8)
		return err_set("%s: file is truncated: %zu bytes, not even the 8-byte header "
			       "length",
			       f->name, f->size);
	uint64_t n = 0;
	for (int i = 7; i >= 0; i--)
		n = n << 8 | f->bytes[i];
	if (n > f->size - 8)
		return err_set("%s: header length %llu is beyond the end of the file (%zu bytes)",
			       f->name, (unsigned long long)n, f->size);
	if (n < 2 || n > MAX_HEADER)
		return err_set("%s: header length %llu is implausible", f->name,
			       (unsigned long long)n);
	json_error_t je;
	json_t *root =
		json_loadb((const char *)f->bytes + 8, (size_t)n, JSON_REJECT_DUPLICATES, &je);
	if (!root)
		return err_set("%s: header: invalid JSON at column %d: %s", f->name, je.column,
			       je.text);
	int rc = -1;
	const char *key;
	json_t *v;
	if (!json_is_object(root)) {
		err_set("%s: header is not a JSON object", f->name);
		goto out;
	}
	if (!(f->tensors = calloc(json_object_size(root) + 1, sizeof *f->tensors))) {
		err_set("out of memory");
		goto out;
	}
	json_object_foreach(root, key, v)
	{
		if (!strcmp(key, "__metadata__")) {
			if (!json_is_object(v)) {
				err_set("%s: header: __metadata__ is not an object", f->name);
				goto out;
			}
			continue;
		}
		if (parse_entry(f, key, v, 8 + (size_t)n) < 0)
			goto out;
	}
	if (check_layout(f, 8 + (size_t)n) < 0)
		goto out;
	qsort(f->tensors, (size_t)f->ntensors, sizeof *f->tensors, by_name);
	rc = 0;
out:
	json_decref(root);
	return rc;
}

struct st_file *st_parse(const void *bytes, size_t size, const char *name)
{
	struct st_file *f = calloc(1, sizeof *f);
	if (!f || !(f->name = strdup(name))) {
		free(f);
		err_set("out of memory");
		return NULL;
	}
	f->bytes = bytes;
	f->size = size;
	if (parse_header(f) < 0) {
		st_free(f);
		return NULL;
	}
	return f;
}

/* Maps `size` bytes of fd read-only at a 2 MB-aligned address and asks for huge
 * pages there. Decoding reads every weight once per token, and on 4 KB pages it
 * stalls at every page (a TLB miss, the hardware prefetcher starting over). With
 * the mapping aligned and MADV_HUGEPAGE, a file that is not yet in the page cache is
 * read into 2 MB folios and mapped 2 MB at a time (Linux 6.x on a filesystem with
 * large folios, such as ext4 or xfs); pages already cached stay as they are. Both
 * steps are hints: where either fails the plain mapping is used. */
static void *st_map_weights(int fd, size_t size)
{
#ifdef MADV_HUGEPAGE
	char *at = huge_reserve(size, PROT_NONE);
	if (at) {
		void *map = mmap(at, size, PROT_READ, MAP_PRIVATE | MAP_FIXED, fd, 0);
		if (map != MAP_FAILED) {
			madvise(map, size, MADV_HUGEPAGE);
			return map;
		}
		huge_free(at, size);
	}
#endif
	return mmap(NULL, size, PROT_READ, MAP_PRIVATE, fd, 0);
}

void *st_map_file(const char *path, const char *name, size_t min_size, const char *too_short,
		  size_t *size)
{
	int fd = fio_open_file(path, name); /* a FIFO here would block the open */
	struct stat sb;
	if (fd < 0)
		return NULL;
	if (fstat(fd, &sb) != 0) {
		err_set("%s: %s", name, strerror(errno));
		close(fd);
		return NULL;
	}
	*size = (size_t)sb.st_size;
	if (*size < min_size) {
		close(fd);
		err_set("%s: file is truncated: %zu bytes, %s", name, *size, too_short);
		return NULL;
	}
	/* MAP_PRIVATE + PROT_READ: the weights are read in place, shared with the
	 * page cache, and never written back */
	void *map = st_map_weights(fd, *size);
	close(fd);
	if (map == MAP_FAILED) {
		err_set("%s: mmap: %s", name, strerror(errno));
		return NULL;
	}
	return map;
}

struct st_file *st_open(const char *path, const char *name)
{
	size_t size;
	void *map = st_map_file(path, name, 8, "not even the 8-byte header length", &size);
	if (!map)
		return NULL;
	struct st_file *f = st_parse(map, size, name);
	if (!f) {
		munmap(map, size);
		return NULL;
	}
	f->map = map;
	return f;
}

void st_free(struct st_file *f)
{
	if (!f)
		return;
	for (int i = 0; i < f->ntensors; i++)
		free(f->tensors[i].name);
	free(f->tensors);
	if (f->map)
		munmap(f->map, f->size);
	free(f->name);
	free(f);
}

const struct st_tensor *st_find(const struct st_file *f, const char *name)
{
	struct st_tensor key = {.name = (char *)name};
	return bsearch(&key, f->tensors, (size_t)f->ntensors, sizeof *f->tensors, by_name);
}
