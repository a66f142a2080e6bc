/* gguf.c — parses and validates GGUF files (versions 2 and 3, as llama.cpp's
 * docs/gguf and ggml's gguf.cpp define them): "GGUF", version, tensor and key/value
 * counts, the key/values, the tensor infos, padding to general.alignment, then the
 * tensor data, which is read in place from the mapping and never copied. */
#include "engine/gguf.h"
#include "engine/safetensors.h"
#include "src/base/err.h"
#include "src/base/fileio.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

_Static_assert(sizeof(size_t) == 8, "GGUF offsets and sizes are 64-bit");

#define DEFAULT_ALIGNMENT 32
#define MAX_KEY           65535 /* bytes of a key; real ones are a few dozen */

/* ggml's type numbers and names (ggml.h, ggml.c's type_traits): the names make
 * "unsupported" and "corrupt" distinguishable in messages. */
static const char *const ggml_names[] = {
	"F32",   "F16",        "Q4_0",       "Q4_1",       "Q4_2",     "Q4_3",     "Q5_0",
	"Q5_1",  "Q8_0",       "Q8_1",       "Q2_K",       "Q3_K",     "Q4_K",     "Q5_K",
	"Q6_K",  "Q8_K",       "IQ2_XXS",    "IQ2_XS",     "IQ3_XXS",  "IQ1_S",    "IQ4_NL",
	"IQ3_S", "IQ2_S",      "IQ4_XS",     "I8",         "I16",      "I32",      "I64",
	"F64",   "IQ1_M",      "BF16",       "Q4_0_4_4",   "Q4_0_4_8", "Q4_0_8_8", "TQ1_0",
	"TQ2_0", "IQ4_NL_4_4", "IQ4_NL_4_8", "IQ4_NL_8_8", "MXFP4",    "NVFP4",    "Q1_0",
	"Q2_0",
};

/* ggml's name of a tensor type ("Q4_K", "IQ2_XXS"), or NULL for a number ggml does
 * not define. */
static const char *gguf_type_name(int t)
{
	return t >= 0 && t < (int)(sizeof ggml_names / sizeof ggml_names[0]) ? ggml_names[t] : NULL;
}

/* The ggml types the engine computes with. */
static int dtype_of(int ggml_type, enum eng_dtype *out)
{
	static const struct {
		int ggml;
		enum eng_dtype dt;
	} map[] = {
		{0, ENG_F32},  {1, ENG_F16},   {30, ENG_BF16}, {8, ENG_Q8_0},    {2, ENG_Q4_0},
		{6, ENG_Q5_0}, {12, ENG_Q4_K}, {13, ENG_Q5_K}, {14, ENG_Q6_K},   {3, ENG_Q4_1},
		{7, ENG_Q5_1}, {10, ENG_Q2_K}, {11, ENG_Q3_K}, {20, ENG_IQ4_NL}, {23, ENG_IQ4_XS},
	};
	for (size_t i = 0; i < sizeof map / sizeof map[0]; i++)
		if (map[i].ggml == ggml_type) {
			*out = map[i].dt;
			return 0;
		}
	return -1;
}

/* Bytes of one value of a scalar type (strings: 0, variable). */
size_t gguf_scalar_size(enum eng_gguf_type t)
{
	static const size_t sz[] = {
		[ENG_GGUF_U8] = 1,  [ENG_GGUF_I8] = 1,  [ENG_GGUF_U16] = 2, [ENG_GGUF_I16] = 2,
		[ENG_GGUF_U32] = 4, [ENG_GGUF_I32] = 4, [ENG_GGUF_F32] = 4, [ENG_GGUF_BOOL] = 1,
		[ENG_GGUF_U64] = 8, [ENG_GGUF_I64] = 8, [ENG_GGUF_F64] = 8,
	};
	return (unsigned)t < sizeof sz / sizeof sz[0] ? sz[t] : 0;
}

/* A bounds-checked reader over the file's bytes. */
struct cur {
	const uint8_t *b;
	size_t size, pos;
	const char *name; /* the file, for messages */
};

static size_t left(const struct cur *c)
{
	return c->size - c->pos;
}

static int truncated(const struct cur *c, const char *what)
{
	return err_set("%s: file is truncated at byte %zu (%zu bytes) while reading %s", c->name,
		       c->pos, c->size, what);
}

static int rd_u32(struct cur *c, uint32_t *v, const char *what)
{
	if (left(c) < 4)
		return truncated(c, what);
	const uint8_t *p = c->b + c->pos;
	*v = (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
	c->pos += 4;
	return 0;
}

static int rd_u64(struct cur *c, uint64_t *v, const char *what)
{
	uint32_t lo, hi;
	if (left(c) < 8)
		return truncated(c, what);
	rd_u32(c, &lo, what);
	rd_u32(c, &hi, what);
	*v = (uint64_t)hi << 32 | lo;
	return 0;
}

/* A GGUF string: uint64 length, then the bytes. Points into the file. */
static int rd_str(struct cur *c, const uint8_t **s, uint64_t *len, const char *what)
{
	if (rd_u64(c, len, what))
		return -1;
	if (*len > left(c))
		return err_set("%s: %s: string length %llu at byte %zu runs past the end of the "
			       "file (%zu bytes)",
			       c->name, what, (unsigned long long)*len, c->pos - 8, c->size);
	*s = c->b + c->pos;
	c->pos += (size_t)*len;
	return 0;
}

/* Skips one value of type t (not an array), checking it fits. */
static int skip_value(struct cur *c, enum eng_gguf_type t, const char *key)
{
	if (t == ENG_GGUF_STRING) {
		const uint8_t *s;
		uint64_t n;
		return rd_str(c, &s, &n, key);
	}
	size_t n = gguf_scalar_size(t);
	if (left(c) < n)
		return truncated(c, key);
	c->pos += n;
	return 0;
}

static int check_type(const struct cur *c, uint32_t t, const char *key, const char *what)
{
	if (t > ENG_GGUF_F64)
		return err_set("%s: key %.200s: unknown %s %u", c->name, key, what, t);
	return 0;
}

/* An array: element type, count, elements. String arrays get a table of where each
 * element is, so that the tokenizer can index 150k tokens directly. */
static int read_array(struct cur *c, struct gguf_kv *kv)
{
	uint32_t et;
	if (rd_u32(c, &et, kv->key) || check_type(c, et, kv->key, "array element type") ||
	    rd_u64(c, &kv->n, kv->key))
		return -1;
	if (et == ENG_GGUF_ARRAY)
		return err_set("%s: key %.200s: arrays of arrays are not supported", c->name,
			       kv->key);
	kv->elem = (enum eng_gguf_type)et;
	/* every element takes at least its own size (a string at least its length) */
	size_t min = et == ENG_GGUF_STRING ? 8 : gguf_scalar_size(kv->elem);
	if (kv->n > left(c) / min)
		return err_set("%s: key %.200s: array of %llu elements does not fit in the "
			       "%zu bytes left in the file",
			       c->name, kv->key, (unsigned long long)kv->n, left(c));
	kv->data = c->b + c->pos;
	if (et != ENG_GGUF_STRING) {
		c->pos += (size_t)kv->n * min;
		return 0;
	}
	if (!(kv->strs = malloc((size_t)(kv->n ? kv->n : 1) * sizeof *kv->strs)))
		return err_set("out of memory");
	for (uint64_t i = 0; i < kv->n; i++) {
		kv->strs[i] = c->b + c->pos;
		if (skip_value(c, ENG_GGUF_STRING, kv->key))
			return -1;
	}
	return 0;
}

static int read_kv(struct cur *c, struct gguf_kv *kv, int64_t i)
{
	const uint8_t *k;
	uint64_t klen;
	uint32_t t;
	char what[48];
	snprintf(what, sizeof what, "the key of key/value %lld", (long long)i);
	if (rd_str(c, &k, &klen, what))
		return -1;
	if (klen == 0 || klen > MAX_KEY || memchr(k, 0, (size_t)klen))
		return err_set("%s: key/value %lld: the key is empty, longer than %d bytes or "
			       "holds a NUL",
			       c->name, (long long)i, MAX_KEY);
	if (!(kv->key = malloc((size_t)klen + 1)))
		return err_set("out of memory");
	memcpy(kv->key, k, (size_t)klen);
	kv->key[klen] = 0;
	if (rd_u32(c, &t, kv->key) || check_type(c, t, kv->key, "value type"))
		return -1;
	kv->type = kv->elem = (enum eng_gguf_type)t;
	kv->n = 1;
	if (t == ENG_GGUF_ARRAY)
		return read_array(c, kv);
	kv->data = c->b + c->pos;
	return skip_value(c, kv->type, kv->key);
}

static int by_key(const void *a, const void *b)
{
	return strcmp(((const struct gguf_kv *)a)->key, ((const struct gguf_kv *)b)->key);
}

static int by_name(const void *a, const void *b)
{
	return strcmp(((const struct gguf_tensor *)a)->name, ((const struct gguf_tensor *)b)->name);
}

static int by_offset(const void *a, const void *b)
{
	const struct gguf_tensor *x = *(const struct gguf_tensor *const *)a,
				 *y = *(const struct gguf_tensor *const *)b;
	if (x->offset != y->offset)
		return x->offset < y->offset ? -1 : 1;
	return x->nbytes < y->nbytes ? -1 : x->nbytes > y->nbytes;
}

static uint64_t le(const uint8_t *p, size_t n)
{
	uint64_t v = 0;
	for (size_t i = n; i-- > 0;)
		v = v << 8 | p[i];
	return v;
}

static int read_kvs(struct cur *c, struct eng_gguf *g)
{
	/* a key/value takes at least 8 + 1 + 4 + 1 bytes */
	if ((uint64_t)g->nkv > left(c) / 14)
		return err_set("%s: header: %lld key/values cannot fit in a file of %zu bytes",
			       c->name, (long long)g->nkv, c->size);
	if (!(g->kv = calloc((size_t)g->nkv + 1, sizeof *g->kv)))
		return err_set("out of memory");
	for (int64_t i = 0; i < g->nkv; i++)
		if (read_kv(c, &g->kv[i], i))
			return -1;
	qsort(g->kv, (size_t)g->nkv, sizeof *g->kv, by_key);
	for (int64_t i = 1; i < g->nkv; i++)
		if (!strcmp(g->kv[i].key, g->kv[i - 1].key))
			return err_set("%s: key %.200s is given twice", c->name, g->kv[i].key);
	/* general.alignment: where the data section and every tensor start */
	const struct gguf_kv *al = gguf_find(g, "general.alignment");
	g->alignment = DEFAULT_ALIGNMENT;
	if (al) {
		if (al->type != ENG_GGUF_U32)
			return err_set("%s: key general.alignment must be a uint32", c->name);
		uint32_t a = (uint32_t)le(al->data, 4);
		if (a == 0 || (a & (a - 1)))
			return err_set("%s: key general.alignment = %u is not a power of 2",
				       c->name, a);
		g->alignment = a;
	}
	return 0;
}

/* The shape: n_dims (at most 4), then ne[0..n_dims), every ne >= 0. */
static int read_shape(struct cur *c, struct gguf_tensor *t)
{
	uint32_t nd;
	if (rd_u32(c, &nd, t->name))
		return -1;
	if (nd < 1 || nd > GGUF_MAX_DIMS)
		return err_set("%s: tensor %s has %u dimensions (1 to %d)", c->name, t->name, nd,
			       GGUF_MAX_DIMS);
	t->ndim = (int)nd;
	for (int i = 0; i < GGUF_MAX_DIMS; i++) {
		uint64_t ne = 1;
		if (i < t->ndim && rd_u64(c, &ne, t->name))
			return -1;
		if (ne > (uint64_t)INT64_MAX)
			return err_set("%s: tensor %s: dimension %d is negative", c->name, t->name,
				       i);
		t->ne[i] = (int64_t)ne;
	}
	return 0;
}

/* The type, and the bytes the shape and type imply: rows of ne[0] weights, each
 * eng_row_bytes long. Every product is bounded by the file size before it is taken. */
static int tensor_size(struct cur *c, struct gguf_tensor *t, uint32_t type)
{
	t->ggml_type = (int)type;
	if (dtype_of(t->ggml_type, &t->dtype)) {
		const char *n = gguf_type_name(t->ggml_type);
		if (!n)
			return err_set("%s: tensor %s has unknown type %u", c->name, t->name, type);
		return err_set(
			"%s: tensor %s has type %s, which qwenchat does not support (F32, "
			"F16, BF16, Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, Q2_K, Q3_K, Q4_K, Q5_K, Q6_K, "
			"IQ4_NL, IQ4_XS)",
			c->name, t->name, n);
	}
	int blk = eng_dtype_block(t->dtype);
	if (t->ne[0] % blk)
		return err_set("%s: tensor %s: a row of %lld weights is not a whole number of %s "
			       "blocks of %d",
			       c->name, t->name, (long long)t->ne[0], eng_dtype_name(t->dtype),
			       blk);
	/* sizes are kept below the file size (< 2^56) before every multiplication */
	uint64_t blocks = (uint64_t)t->ne[0] / (uint64_t)blk;
	uint64_t bytes =
		blocks > c->size ? (uint64_t)c->size + 1 : blocks * eng_dtype_block_bytes(t->dtype);
	for (int i = 1; i < GGUF_MAX_DIMS && bytes <= c->size; i++) {
		if (t->ne[i] && bytes > c->size / (uint64_t)t->ne[i])
			bytes = (uint64_t)c->size + 1;
		else
			bytes *= (uint64_t)t->ne[i];
	}
	if (bytes > c->size)
		return err_set("%s: tensor %s: shape [%lld, %lld, %lld, %lld] of %s is larger than "
			       "the file",
			       c->name, t->name, (long long)t->ne[0], (long long)t->ne[1],
			       (long long)t->ne[2], (long long)t->ne[3], eng_dtype_name(t->dtype));
	t->nbytes = (size_t)bytes;
	return 0;
}

static int read_tensor_info(struct cur *c, struct gguf_tensor *t, int64_t i)
{
	const uint8_t *s;
	uint64_t len, off;
	uint32_t type;
	char what[48];
	snprintf(what, sizeof what, "the name of tensor %lld", (long long)i);
	if (rd_str(c, &s, &len, what))
		return -1;
	if (len == 0 || len >= GGUF_MAX_NAME || memchr(s, 0, (size_t)len))
		return err_set("%s: tensor %lld: the name is empty, %d bytes or longer, or holds "
			       "a NUL",
			       c->name, (long long)i, GGUF_MAX_NAME);
	memcpy(t->name, s, (size_t)len);
	t->name[len] = 0;
	if (read_shape(c, t) || rd_u32(c, &type, t->name) || tensor_size(c, t, type) ||
	    rd_u64(c, &off, t->name))
		return -1;
	t->offset = (size_t)off; /* relative to the data section until check_data */
	return 0;
}

/* Offsets are relative to the data section, which starts at the first multiple of
 * the alignment after the tensor infos; each must be aligned, inside the file and
 * apart from every other tensor. */
static int check_data(struct eng_gguf *g)
{
	const char *fn = g->name;
	struct gguf_tensor **order = malloc((size_t)(g->ntensors + 1) * sizeof *order);
	if (!order)
		return err_set("out of memory");
	int rc = 0;
	for (int64_t i = 0; i < g->ntensors && rc == 0; i++) {
		struct gguf_tensor *t = &g->tensors[i];
		order[i] = t;
		if (t->offset % g->alignment)
			rc = err_set("%s: tensor %s: offset %zu is not a multiple of the alignment "
				     "%zu",
				     fn, t->name, t->offset, g->alignment);
		else if (t->offset > g->size - g->data_start ||
			 t->nbytes > g->size - g->data_start - t->offset)
			rc = err_set("%s: tensor %s: its %zu bytes at data offset %zu run past the "
				     "end of the file (%zu bytes)",
				     fn, t->name, t->nbytes, t->offset, g->size);
		if (rc)
			break; /* an unchecked offset makes no pointer, even one never read */
		t->offset += g->data_start;
		t->data = g->bytes + t->offset;
	}
	if (rc == 0)
		qsort(order, (size_t)g->ntensors, sizeof *order, by_offset);
	for (int64_t i = 1; i < g->ntensors && rc == 0; i++)
		if (order[i]->offset < order[i - 1]->offset + order[i - 1]->nbytes)
			rc = err_set("%s: tensor %s overlaps tensor %s", fn, order[i]->name,
				     order[i - 1]->name);
	free(order);
	return rc;
}

static int read_tensors(struct cur *c, struct eng_gguf *g)
{
	/* a tensor info takes at least 8 + 1 + 4 + 8 + 4 + 8 bytes */
	if ((uint64_t)g->ntensors > left(c) / 33)
		return err_set("%s: header: %lld tensors cannot fit in a file of %zu bytes",
			       c->name, (long long)g->ntensors, c->size);
	if (!(g->tensors = calloc((size_t)g->ntensors + 1, sizeof *g->tensors)))
		return err_set("out of memory");
	for (int64_t i = 0; i < g->ntensors; i++)
		if (read_tensor_info(c, &g->tensors[i], i))
			return -1;
	size_t pad = (g->alignment - c->pos % g->alignment) % g->alignment;
	if (g->ntensors > 0 && pad > left(c))
		return truncated(c, "the padding before the tensor data");
	g->data_start = c->pos + (g->ntensors > 0 ? pad : 0);
	if (check_data(g))
		return -1;
	qsort(g->tensors, (size_t)g->ntensors, sizeof *g->tensors, by_name);
	for (int64_t i = 1; i < g->ntensors; i++)
		if (!strcmp(g->tensors[i].name, g->tensors[i - 1].name))
			return err_set("%s: tensor %s is given twice", c->name, g->tensors[i].name);
	return 0;
}

static int parse_header(struct eng_gguf *g)
{
	struct cur c = {g->bytes, g->size, 0, g->name};
	uint64_t nt, nkv;
	if (g->size < 4 || memcmp(g->bytes, "GGUF", 4) != 0)
		return err_set("%s: not a GGUF file (no \"GGUF\" magic at its start)", g->name);
	c.pos = 4;
	if (rd_u32(&c, &g->version, "the version"))
		return -1;
	if (g->version != 2 && g->version != 3)
		return err_set("%s: GGUF version %u is not supported (2 and 3 are%s)", g->name,
			       g->version,
			       (g->version & 0xffff) == 0 ? "; a big-endian file?" : "");
	if (rd_u64(&c, &nt, "the tensor count") || rd_u64(&c, &nkv, "the key/value count"))
		return -1;
	if (nt > (uint64_t)INT64_MAX / 2 || nkv > (uint64_t)INT64_MAX / 2)
		return err_set("%s: header: %llu tensors and %llu key/values are absurd", g->name,
			       (unsigned long long)nt, (unsigned long long)nkv);
	g->ntensors = (int64_t)nt;
	g->nkv = (int64_t)nkv;
	return read_kvs(&c, g) || read_tensors(&c, g) ? -1 : 0;
}

struct eng_gguf *gguf_parse(const void *bytes, size_t size, const char *name)
{
	struct eng_gguf *g = calloc(1, sizeof *g);
	if (!g || !(g->name = strdup(name))) {
		free(g);
		err_set("out of memory");
		return NULL;
	}
	g->bytes = bytes;
	g->size = size;
	if (parse_header(g) < 0) {
		gguf_free(g);
		return NULL;
	}
	return g;
}

struct eng_gguf *gguf_open(const char *path, const char *name)
{
	size_t size;
	void *map = st_map_file(path, name, 24, "not even a GGUF header", &size);
	if (!map)
		return NULL;
	struct eng_gguf *g = gguf_parse(map, size, name);
	if (!g) {
		munmap(map, size);
		return NULL;
	}
	g->map = map;
	return g;
}

void gguf_free(struct eng_gguf *g)
{
	if (!g)
		return;
	for (int64_t i = 0; g->kv && i < g->nkv; i++) {
		free(g->kv[i].key);
		free(g->kv[i].strs);
	}
	free(g->kv);
	free(g->tensors);
	if (g->map)
		munmap(g->map, g->size);
	free(g->name);
	free(g);
}

const struct gguf_kv *gguf_find(const struct eng_gguf *g, const char *key)
{
	struct gguf_kv k = {.key = (char *)key};
	return g->kv ? bsearch(&k, g->kv, (size_t)g->nkv, sizeof *g->kv, by_key) : NULL;
}

const struct gguf_tensor *gguf_tensor(const struct eng_gguf *g, const char *name)
{
	struct gguf_tensor k;
	if (strlen(name) >= GGUF_MAX_NAME || !g->tensors)
		return NULL;
	strcpy(k.name, name);
	return bsearch(&k, g->tensors, (size_t)g->ntensors, sizeof *g->tensors, by_name);
}

/* ---- the metadata API of engine.h ---- */

bool eng_is_gguf(const char *path)
{
	char magic[4];
	struct stat sb;
	/* not even opened unless a regular file: a FIFO's open would block */
	if (stat(path, &sb) != 0 || !S_ISREG(sb.st_mode))
		return false;
	int fd = fio_open_file(path, NULL);
	if (fd < 0) {
		err_clear();
		return false;
	}
	bool r = read(fd, magic, 4) == 4 && !memcmp(magic, "GGUF", 4);
	close(fd);
	return r;
}

struct eng_gguf *eng_gguf_open(const char *path)
{
	return gguf_open(path, path); /* errors name the file as the user gave it */
}

void eng_gguf_free(struct eng_gguf *g)
{
	gguf_free(g);
}

const char *eng_gguf_name(const struct eng_gguf *g)
{
	return g->name;
}

static bool is_int(enum eng_gguf_type t)
{
	return t <= ENG_GGUF_I32 || t == ENG_GGUF_BOOL || t == ENG_GGUF_U64 || t == ENG_GGUF_I64;
}

/* One integer of type t at p (every integer type, as int64; u64 above INT64_MAX fails). */
static int int_at(enum eng_gguf_type t, const uint8_t *p, int64_t *v)
{
	size_t n = gguf_scalar_size(t);
	uint64_t u = le(p, n);
	bool is_signed =
		t == ENG_GGUF_I8 || t == ENG_GGUF_I16 || t == ENG_GGUF_I32 || t == ENG_GGUF_I64;
	if (is_signed && n < 8 && (u >> (8 * n - 1)))
		u |= ~(uint64_t)0 << (8 * n); /* sign-extend */
	if (!is_signed && u > (uint64_t)INT64_MAX)
		return -1;
	*v = (int64_t)u;
	return 0;
}

static const char *type_name(enum eng_gguf_type t)
{
	static const char *const n[] = {"uint8",  "int8",    "uint16", "int16",  "uint32",
					"int32",  "float32", "bool",   "string", "array",
					"uint64", "int64",   "float64"};
	return (unsigned)t < sizeof n / sizeof n[0] ? n[t] : "?";
}

static int wrong_type(const struct eng_gguf *g, const struct gguf_kv *kv, const char *want)
{
	return err_set("%s: key %s is a%s %s, not %s", g->name, kv->key,
		       kv->type == ENG_GGUF_ARRAY || kv->type == ENG_GGUF_I8 ||
				       kv->type == ENG_GGUF_I16 || kv->type == ENG_GGUF_I32 ||
				       kv->type == ENG_GGUF_I64
			       ? "n"
			       : "",
		       type_name(kv->type), want);
}

int eng_gguf_str(const struct eng_gguf *g, const char *key, const char **s, size_t *len)
{
	const struct gguf_kv *kv = gguf_find(g, key);
	if (!kv)
		return 1;
	if (kv->type != ENG_GGUF_STRING)
		return wrong_type(g, kv, "a string");
	*len = (size_t)le(kv->data, 8);
	*s = (const char *)kv->data + 8;
	return 0;
}

int eng_gguf_int(const struct eng_gguf *g, const char *key, int64_t *v)
{
	const struct gguf_kv *kv = gguf_find(g, key);
	if (!kv)
		return 1;
	if (!is_int(kv->type))
		return wrong_type(g, kv, "an integer");
	if (int_at(kv->type, kv->data, v))
		return err_set("%s: key %s is too large", g->name, key);
	return 0;
}

int eng_gguf_float(const struct eng_gguf *g, const char *key, double *v)
{
	const struct gguf_kv *kv = gguf_find(g, key);
	if (!kv)
		return 1;
	if (kv->type == ENG_GGUF_F32) {
		uint32_t u = (uint32_t)le(kv->data, 4);
		float f;
		memcpy(&f, &u, 4);
		*v = f;
	} else if (kv->type == ENG_GGUF_F64) {
		uint64_t u = le(kv->data, 8);
		memcpy(v, &u, 8);
	} else {
		return wrong_type(g, kv, "a float");
	}
	return 0;
}

int eng_gguf_array(const struct eng_gguf *g, const char *key, enum eng_gguf_type *elem, uint64_t *n)
{
	const struct gguf_kv *kv = gguf_find(g, key);
	if (!kv)
		return 1;
	if (kv->type != ENG_GGUF_ARRAY)
		return wrong_type(g, kv, "an array");
	*elem = kv->elem;
	*n = kv->n;
	return 0;
}

const char *eng_gguf_array_str(const struct eng_gguf *g, const char *key, uint64_t i, size_t *len)
{
	const struct gguf_kv *kv = gguf_find(g, key);
	if (!kv || kv->type != ENG_GGUF_ARRAY || kv->elem != ENG_GGUF_STRING || i >= kv->n)
		return NULL;
	*len = (size_t)le(kv->strs[i], 8);
	return (const char *)kv->strs[i] + 8;
}

int eng_gguf_array_int(const struct eng_gguf *g, const char *key, uint64_t i, int64_t *v)
{
	const struct gguf_kv *kv = gguf_find(g, key);
	if (!kv || kv->type != ENG_GGUF_ARRAY || !is_int(kv->elem) || i >= kv->n)
		return -1;
	return int_at(kv->elem, kv->data + i * gguf_scalar_size(kv->elem), v);
}
