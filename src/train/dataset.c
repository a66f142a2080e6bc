/* dataset.c — the training stream and its cache. */
#include "src/train/dataset.h"
#include "src/base/err.h"
#include "src/base/fileio.h"
#include "src/base/utf8.h"
#include "src/train/tokens.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <limits.h>
#include <nettle/sha2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

void dset_free(struct dset *d)
{
	free(d->ids);
	memset(d, 0, sizeof *d);
}

void dset_hash(const char *const *texts, const size_t *lens, int n, char out[72])
{
	struct sha256_ctx c;
	uint8_t d[SHA256_DIGEST_SIZE];
	sha256_init(&c);
	for (int i = 0; i < n; i++)
		sha256_update(&c, lens[i], (const uint8_t *)texts[i]);
	sha256_digest(&c, sizeof d, d);
	char *p = out + sprintf(out, "sha256:");
	for (size_t i = 0; i < sizeof d; i++)
		p += sprintf(p, "%02x", d[i]);
}

/* Whether a text file is text: ill-formed UTF-8 sequences become U+FFFD when it is
 * encoded, as in the chat, but a file with a NUL byte, or whose ill-formed bytes are
 * more than 1% of it, is something else (UTF-16, a binary) and training on it would
 * be training on noise. */
static int check_text(const char *path)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return err_set("%s: cannot open: %s", path, strerror(errno));
	enum { CHUNK = 1 << 20 };
	char *buf = malloc(CHUNK);
	size_t have = 0, offset = 0, bad_bytes = 0, first_bad = (size_t)-1;
	int rc = buf ? 0 : err_set("%s: out of memory", path);
	for (;;) {
		ssize_t r = buf ? read(fd, buf + have, CHUNK - have) : 0;
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			rc = err_set("%s: read error: %s", path, strerror(errno));
			break;
		}
		size_t n = have + (size_t)r, i = 0;
		if (memchr(buf + have, 0, (size_t)r)) {
			rc = err_set("%s: not UTF-8 text: a NUL byte near byte %zu (train reads UTF-8 "
				     "text, or token ids in *.u32 files)",
				     path, offset + (size_t)((char *)memchr(buf + have, 0, (size_t)r) - buf));
			break;
		}
		while (i < n) {
			size_t valid, bad;
			utf8_next_piece(buf + i, n - i, &valid, &bad);
			/* a sequence cut by the chunk's end is judged with the next chunk */
			if (i + valid == n || (r > 0 && i + valid + bad == n && n - i - valid < 4)) {
				i += valid;
				break;
			}
			if (first_bad == (size_t)-1)
				first_bad = offset + i + valid;
			bad_bytes += bad;
			i += valid + bad;
		}
		if (r == 0) {
			bad_bytes += n - i;
			break;
		}
		memmove(buf, buf + i, n - i);
		offset += i;
		have = n - i;
	}
	if (!rc && bad_bytes * 100 > offset + have)
		rc = err_set("%s: not UTF-8 text: %zu ill-formed bytes, the first at byte %zu (train "
			     "reads UTF-8 text, or token ids in *.u32 files)",
			     path, bad_bytes, first_bad);
	free(buf);
	close(fd);
	return rc;
}

/* The files as the cache describes them: absolute path, size, modification time. */
static json_t *describe(char *const *files, int n)
{
	json_t *a = json_array();
	for (int i = 0; a && i < n; i++) {
		char abs[PATH_MAX];
		struct stat st;
		if (!realpath(files[i], abs) || stat(abs, &st) != 0) {
			err_set("%s: cannot open: %s", files[i], strerror(errno));
			json_decref(a);
			return NULL;
		}
		long long ns = (long long)st.st_mtim.tv_sec * 1000000000LL + st.st_mtim.tv_nsec;
		json_array_append_new(a, json_pack("{s:s, s:I, s:I}", "path", abs, "bytes",
						   (json_int_t)st.st_size, "mtime_ns", (json_int_t)ns));
	}
	if (!a)
		err_set("out of memory");
	return a;
}

static char *join_ext(const char *cache, const char *ext)
{
	size_t n = strlen(cache) + strlen(ext) + 1;
	char *p = malloc(n);
	if (p)
		snprintf(p, n, "%s%s", cache, ext);
	return p;
}

/* The cache's JSON, or NULL when there is none or it does not parse. */
static json_t *cache_meta(const char *cache)
{
	char *path = join_ext(cache, ".json");
	size_t len;
	char *text = path && fio_is_file(path) ? fio_read_all(path, 64u << 20, &len) : NULL;
	json_t *j = text ? json_loadb(text, len, 0, NULL) : NULL;
	free(text);
	free(path);
	return j;
}

int dset_load_cache(struct dset *d, int vocab, const char *cache)
{
	memset(d, 0, sizeof *d);
	json_t *j = cache_meta(cache);
	char *u32 = join_ext(cache, ".u32");
	int rc = -1;
	json_t *tokens = json_object_get(j, "tokens");
	if (!u32)
		err_set("out of memory");
	else if (!j || json_integer_value(json_object_get(j, "vocab")) != vocab ||
		 !json_is_integer(tokens))
		err_set("%s.json: missing or not the cache of this model's stream", cache);
	else if (tokens_read_file(u32, NULL, vocab, &d->ids, &d->len) == 0) {
		if (d->len != (size_t)json_integer_value(tokens))
			err_set("%s: %zu tokens, %s.json says %lld", u32, d->len, cache,
				(long long)json_integer_value(tokens));
		else
			rc = 0;
	}
	if (rc)
		dset_free(d);
	else
		d->cached = true;
	json_decref(j);
	free(u32);
	return rc;
}

/* Writes the cache: the JSON removed first and written last, so that it never
 * describes a stream file that is not whole. */
static int write_cache(const struct dset *d, json_t *meta, const char *cache)
{
	char *u32 = join_ext(cache, ".u32"), *js = join_ext(cache, ".json");
	int rc = -1;
	char *text = NULL;
	if (!u32 || !js) {
		err_set("out of memory");
		goto out;
	}
	if (unlink(js) != 0 && errno != ENOENT) {
		err_set("%s: cannot remove: %s", js, strerror(errno));
		goto out;
	}
#if __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
#error "the cache is written as little-endian ids: byte-swap here"
#endif
	if (fio_write_atomic(u32, d->ids, d->len * sizeof *d->ids, 0600, FIO_NO_LINKS))
		goto out;
	json_object_set_new(meta, "tokens", json_integer((json_int_t)d->len));
	if (!(text = json_dumps(meta, JSON_INDENT(2)))) {
		err_set("out of memory");
		goto out;
	}
	rc = fio_write_atomic(js, text, strlen(text), 0600, FIO_NO_LINKS);
out:
	free(text);
	free(js);
	free(u32);
	return rc;
}

/* The files read and concatenated. */
static int encode(struct dset *d, char *const *files, int n, struct tok *tk, int vocab)
{
	size_t cap = 0;
	for (int i = 0; i < n; i++) {
		int32_t *ids;
		size_t m;
		if (!tokens_is_u32(files[i]) && !tk)
			return err_set("%s: a text file, and the model has no tokenizer (give "
				       "token ids in *.u32 files, or --tokenizer DIR)",
				       files[i]);
		if ((!tokens_is_u32(files[i]) && check_text(files[i])) ||
		    tokens_read_file(files[i], tk, vocab, &ids, &m))
			return -1;
		if (d->len + m > cap) {
			size_t nc = cap * 2 > d->len + m ? cap * 2 : d->len + m;
			int32_t *g = realloc(d->ids, (nc ? nc : 1) * sizeof *g);
			if (!g) {
				free(ids);
				return err_set("%s: out of memory for %zu tokens", files[i], nc);
			}
			d->ids = g;
			cap = nc;
		}
		if (m)
			memcpy(d->ids + d->len, ids, m * sizeof *ids);
		d->len += m;
		free(ids);
	}
	return 0;
}

int dset_load(struct dset *d, char *const *files, int n, struct tok *tk,
	      const char *tok_hash, int vocab, const char *cache)
{
	memset(d, 0, sizeof *d);
	json_t *src = describe(files, n);
	if (!src)
		return -1;
	json_t *meta = json_pack("{s:i, s:i, s:s, s:o}", "format", 1, "vocab", vocab, "tokenizer",
				 tk ? tok_hash : "none", "sources", src);
	json_t *old = cache_meta(cache);
	int rc = -1;
	if (!meta) {
		err_set("out of memory");
	} else if (old && json_equal(json_object_get(old, "sources"), src) &&
		   json_equal(json_object_get(old, "tokenizer"), json_object_get(meta, "tokenizer")) &&
		   dset_load_cache(d, vocab, cache) == 0) {
		rc = 0;
	} else if (encode(d, files, n, tk, vocab) == 0 && write_cache(d, meta, cache) == 0) {
		rc = 0;
	}
	if (rc)
		dset_free(d);
	json_decref(old);
	json_decref(meta);
	return rc;
}
