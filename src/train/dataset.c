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
	free(d->flags);
	free(d->seq);
	memset(d, 0, sizeof *d);
}

static void dset_convs_free(struct dset_convs *c)
{
	free(c->ids);
	free(c->flags);
	memset(c, 0, sizeof *c);
}

/* Room for n more tokens. */
static int convs_reserve(struct dset_convs *c, size_t n)
{
	if (c->n + n <= c->cap)
		return 0;
	size_t cap = c->cap * 2 > c->n + n ? c->cap * 2 : c->n + n + 1024;
	int32_t *gi = realloc(c->ids, cap * sizeof *gi);
	if (gi)
		c->ids = gi;
	uint8_t *gf = gi ? realloc(c->flags, cap) : NULL;
	if (!gf)
		return err_set("out of memory for %zu tokens of conversations", cap);
	c->flags = gf;
	c->cap = cap;
	return 0;
}

int dset_convs_add(struct dset_convs *c, const int32_t *ids, const unsigned char *scored, size_t n)
{
	if (n == 0 || convs_reserve(c, n))
		return n ? -1 : 0;
	memcpy(c->ids + c->n, ids, n * sizeof *ids);
	for (size_t i = 0; i < n; i++)
		c->flags[c->n + i] =
			(uint8_t)((scored[i] ? DSET_SCORED : 0) | (i ? 0 : DSET_START));
	c->n += n;
	return 0;
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

/* The stream's checksum as the cache's JSON keeps it: its ids as they lie in the .u32
 * file, then its flags (--sft). */
static void stream_hash(const struct dset *d, char out[72])
{
	const char *parts[] = {(const char *)d->ids, (const char *)d->flags};
	size_t lens[] = {d->len * sizeof *d->ids, d->flags ? d->len : 0};
	dset_hash(parts, lens, 2, out);
}

/* Whether a text file is text: ill-formed UTF-8 sequences become U+FFFD when it is
 * encoded, as in the chat, but a file with a NUL byte, or whose ill-formed bytes are
 * more than 1% of it, is something else (UTF-16, a binary) and training on it would
 * be training on noise. */
static int check_text(const char *path)
{
	int fd = fio_open_file(path, NULL);
	if (fd < 0)
		return -1;
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
			rc = err_set(
				"%s: not UTF-8 text: a NUL byte near byte %zu (train reads UTF-8 "
				"text, or token ids in *.u32 files)",
				path,
				offset + (size_t)((char *)memchr(buf + have, 0, (size_t)r) - buf));
			break;
		}
		while (i < n) {
			size_t valid, bad;
			utf8_next_piece(buf + i, n - i, &valid, &bad);
			/* a sequence cut by the chunk's end is judged with the next chunk */
			if (i + valid == n ||
			    (r > 0 && i + valid + bad == n && n - i - valid < 4)) {
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
		rc = err_set(
			"%s: not UTF-8 text: %zu ill-formed bytes, the first at byte %zu (train "
			"reads UTF-8 text, or token ids in *.u32 files)",
			path, bad_bytes, first_bad);
	free(buf);
	close(fd);
	return rc;
}

/* The files as the cache describes them: absolute path, size, times, inode. */
static json_t *describe(char *const *files, int n)
{
	json_t *a = json_array();
	for (int i = 0; a && i < n; i++) {
		char *abs = fio_absolute(files[i]);
		struct stat st;
		if (!abs || stat(abs, &st) != 0) {
			err_set("%s: cannot open: %s", files[i], strerror(errno));
			free(abs);
			json_decref(a);
			return NULL;
		}
		/* the change time and the inode too: an edit whose modification time was put
		 * back, or another file of the same size and time put in its place, is new */
		long long ns = (long long)st.st_mtim.tv_sec * 1000000000LL + st.st_mtim.tv_nsec;
		long long cns = (long long)st.st_ctim.tv_sec * 1000000000LL + st.st_ctim.tv_nsec;
		json_array_append_new(a, json_pack("{s:s, s:I, s:I, s:I, s:I, s:I}", "path", abs,
						   "bytes", (json_int_t)st.st_size, "mtime_ns",
						   (json_int_t)ns, "ctime_ns", (json_int_t)cns,
						   "device", (json_int_t)st.st_dev, "inode",
						   (json_int_t)st.st_ino));
		free(abs);
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

/* The conversations of d's flags: each starts with DSET_START, holds 2 to ctx + 1
 * tokens and a target (a scored token after its first), and no other bit is set.
 * Fills d->seq and d->sft's conversations and scored. `what` names the stream. */
static int index_convs(struct dset *d, int ctx, const char *what)
{
	int64_t n = 0;
	for (size_t i = 0; i < d->len; i++) {
		if (d->flags[i] & ~(DSET_SCORED | DSET_START))
			return err_set("%s: token %zu: unknown flags 0x%x", what, i, d->flags[i]);
		n += d->flags[i] & DSET_START ? 1 : 0;
	}
	if (d->len && !(d->flags[0] & DSET_START))
		return err_set("%s: token 0 does not start a conversation", what);
	if (!(d->seq = malloc(((size_t)n + 1) * sizeof *d->seq)))
		return err_set("%s: out of memory for %lld conversations", what, (long long)n);
	int64_t k = 0, scored = 0;
	for (size_t i = 0; i < d->len; i++)
		if (d->flags[i] & DSET_START)
			d->seq[k++] = i;
	d->seq[n] = d->len;
	for (int64_t c = 0; c < n; c++) {
		size_t m = d->seq[c + 1] - d->seq[c], t = 0;
		for (size_t i = 1; i < m; i++)
			t += d->flags[d->seq[c] + i] & DSET_SCORED;
		if (m < 2 || m > (size_t)ctx + 1 || !t)
			return err_set(
				"%s: conversation %lld: %zu tokens with %zu targets (a row of "
				"--ctx %d takes 2 to %d tokens with a target)",
				what, (long long)c + 1, m, t, ctx, ctx + 1);
		scored += (int64_t)t;
	}
	d->sft.conversations = n;
	d->sft.scored = scored;
	return 0;
}

static int64_t int_of(json_t *o, const char *key)
{
	json_int_t v = json_integer_value(json_object_get(o, key));
	return v > 0 ? (int64_t)v : 0;
}

/* CACHE.sft: the flags of the d->len tokens. */
static int load_flags(struct dset *d, json_t *j, int ctx, const char *cache)
{
	char *path = join_ext(cache, ".sft");
	size_t len = 0;
	if (!path)
		return err_set("out of memory");
	d->flags = (uint8_t *)fio_read_file(path, d->len + 1, &len);
	int rc = !d->flags       ? -1
		 : len != d->len ? err_set("%s: %zu flags for %zu tokens", path, len, d->len)
				 : index_convs(d, ctx, path);
	free(path);
	json_t *counts = json_object_get(j, "sft_counts");
	d->sft.cut = int_of(counts, "cut");
	d->sft.left_out = int_of(counts, "left_out");
	d->sft.left_out_ctx = int_of(counts, "left_out_ctx");
	d->sft.no_answer = int_of(counts, "no_answer");
	return rc;
}

/* Whether d is the stream want describes (NULL: any). `what` names where d came from
 * for the message, which then says how it differs. */
static int check_want(const struct dset *d, const struct dset_want *want, const char *what,
		      const char *hint)
{
	if (!want)
		return 0;
	if ((int64_t)d->len != want->tokens)
		return err_set("%s %zu tokens, the run trained on %lld%s", what, d->len,
			       (long long)want->tokens, hint);
	if (want->sha256 && *want->sha256 && strcmp(want->sha256, d->sha256))
		return err_set("%s %zu tokens, but not those the run trained on%s", what, d->len,
			       hint);
	return 0;
}

int dset_load_cache(struct dset *d, int vocab, int sft_ctx, const char *cache,
		    const struct dset_want *want)
{
	memset(d, 0, sizeof *d);
	json_t *j = cache_meta(cache);
	char *u32 = join_ext(cache, ".u32");
	int rc = -1;
	json_t *tokens = json_object_get(j, "tokens"), *sft = json_object_get(j, "sft");
	bool same_kind = sft_ctx ? int_of(sft, "ctx") == sft_ctx : !sft;
	if (!u32)
		err_set("out of memory");
	else if (!j || json_integer_value(json_object_get(j, "vocab")) != vocab ||
		 !json_is_integer(tokens) || !same_kind)
		err_set("%s.json: missing or not the cache of this model's stream", cache);
	else if (!fio_is_file(u32)) /* a FIFO in its place would be waited on */
		err_set("%s: missing or not a regular file", u32);
	else if (tokens_read_file(u32, NULL, vocab, true, &d->ids, &d->len) == 0) {
		if (d->len != (size_t)json_integer_value(tokens))
			err_set("%s: %zu tokens, %s.json says %lld", u32, d->len, cache,
				(long long)json_integer_value(tokens));
		else
			rc = sft_ctx ? load_flags(d, j, sft_ctx, cache) : 0;
	}
	/* a stream changed on disk since it was written (a bad sector, an edit) is
	 * encoded again from its files rather than trained on */
	const char *sum = json_string_value(json_object_get(j, "sha256"));
	if (!rc) {
		stream_hash(d, d->sha256);
		if (sum && strcmp(sum, d->sha256))
			rc = err_set("%s: its ids are not those %s.json was written for", u32,
				     cache);
	}
	char what[PATH_MAX + 16];
	snprintf(what, sizeof what, "%s holds", u32 ? u32 : cache);
	if (!rc)
		rc = check_want(d, want, what, "");
	if (rc)
		dset_free(d);
	else
		d->cached = true;
	json_decref(j);
	free(u32);
	return rc;
}

const char *dset_changed(const char *cache, char *const *files, int n)
{
	json_t *old = cache_meta(cache), *src = json_object_get(old, "sources");
	const char *which = NULL;
	for (int i = 0; src && !which && i < n; i++) {
		json_t *now = describe(&files[i], 1); /* NULL: the file is gone */
		if (!now || !json_equal(json_array_get(now, 0), json_array_get(src, (size_t)i)))
			which = files[i];
		json_decref(now);
	}
	err_clear();
	json_decref(old);
	return which;
}

bool dset_tokenized(const char *cache)
{
	json_t *old = cache_meta(cache);
	const char *t = json_string_value(json_object_get(old, "tokenizer"));
	bool yes = t && strcmp(t, "none") != 0;
	err_clear();
	json_decref(old);
	return yes;
}

bool dset_same_tokenizer(const char *cache, const char *tok_hash)
{
	json_t *old = cache_meta(cache);
	const char *t = json_string_value(json_object_get(old, "tokenizer"));
	bool same = !t || !strcmp(t, "none") || (tok_hash && !strcmp(t, tok_hash));
	err_clear();
	json_decref(old);
	return same;
}

/* Writes the cache: the JSON removed first and written last, so that it never
 * describes a stream file that is not whole. */
static int write_cache(const struct dset *d, json_t *meta, const char *cache)
{
	char *u32 = join_ext(cache, ".u32"), *js = join_ext(cache, ".json"),
	     *fl = join_ext(cache, ".sft");
	int rc = -1;
	char *text = NULL;
	if (!u32 || !js || !fl) {
		err_set("out of memory");
		goto out;
	}
	struct stat st; /* a FIFO or a device there is the user's, not an old cache */
	if (lstat(js, &st) == 0 && !S_ISREG(st.st_mode) && !S_ISLNK(st.st_mode)) {
		err_set("%s: not a regular file (refused: only a file can be replaced)", js);
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
	if (d->flags && fio_write_atomic(fl, d->flags, d->len, 0600, FIO_NO_LINKS))
		goto out;
	json_object_set_new(meta, "tokens", json_integer((json_int_t)d->len));
	json_object_set_new(meta, "sha256", json_string(d->sha256));
	if (d->flags)
		json_object_set_new(meta, "sft_counts",
				    json_pack("{s:I, s:I, s:I, s:I, s:I, s:I}", "conversations",
					      (json_int_t)d->sft.conversations, "cut",
					      (json_int_t)d->sft.cut, "left_out",
					      (json_int_t)d->sft.left_out, "left_out_ctx",
					      (json_int_t)d->sft.left_out_ctx, "no_answer",
					      (json_int_t)d->sft.no_answer, "scored",
					      (json_int_t)d->sft.scored));
	if (!(text = json_dumps(meta, JSON_INDENT(2)))) {
		err_set("out of memory");
		goto out;
	}
	rc = fio_write_atomic(js, text, strlen(text), 0600, FIO_NO_LINKS);
out:
	free(text);
	free(js);
	free(fl);
	free(u32);
	return rc;
}

/* A stream just encoded from files[0..n): the one want describes (the cache is kept
 * as it was otherwise), then cached. */
static int keep_encoded(struct dset *d, char *const *files, int n, const struct dset_want *want,
			json_t *meta, const char *cache)
{
	stream_hash(d, d->sha256);
	char what[PATH_MAX + 64];
	if (n > 1)
		snprintf(what, sizeof what, "%s and %d more file%s now make", files[0], n - 1,
			 n > 2 ? "s" : "");
	else
		snprintf(what, sizeof what, "%s now makes", files[0]);
	if (check_want(d, want, what,
		       " (train-state holds no cache of the run's stream: resume with the files "
		       "as they were when the run started)"))
		return -1;
	return write_cache(d, meta, cache);
}

/* Whether the cache `old` was made from the inputs `meta` describes. */
static bool same_inputs(json_t *old, json_t *meta)
{
	json_t *a = json_object_get(old, "sft"), *b = json_object_get(meta, "sft");
	return old &&
	       json_equal(json_object_get(old, "sources"), json_object_get(meta, "sources")) &&
	       json_equal(json_object_get(old, "tokenizer"), json_object_get(meta, "tokenizer")) &&
	       (a || b ? a && b && json_equal(a, b) : true);
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
		if (tokens_is_u32(files[i])) { /* read into the stream itself */
			size_t before = d->len;
			if (tokens_append_u32(files[i], vocab, &d->ids, &d->len))
				return -1;
			cap = d->len;
			if (tokens_check_width(d->ids + before, d->len - before))
				return err_prefix("%s", files[i]);
			continue;
		}
		if (check_text(files[i]) || tokens_read_file(files[i], tk, vocab, true, &ids, &m))
			return -1;
		if (!d->ids) { /* the first file's ids become the stream, without a copy */
			d->ids = ids;
			d->len = cap = m;
			continue;
		}
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

/* Whether files[0..n) are still as src (describe) found them before they were read: a
 * file that grew or shrank meanwhile would be cached as what it no longer is. 0, or
 * -1 with err_set naming it. */
static int unchanged(char *const *files, int n, json_t *src)
{
	json_t *now = describe(files, n);
	if (!now)
		return -1;
	int rc = 0;
	for (int i = 0; i < n && rc == 0; i++)
		if (!json_equal(json_array_get(now, (size_t)i), json_array_get(src, (size_t)i)))
			rc = err_set(
				"%s: changed while it was read: run again once nothing writes it",
				files[i]);
	json_decref(now);
	return rc;
}

int dset_load(struct dset *d, char *const *files, int n, struct tok *tk, const char *tok_hash,
	      int vocab, const char *cache, const struct dset_want *want)
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
	} else if (same_inputs(old, meta) && dset_load_cache(d, vocab, 0, cache, want) == 0) {
		rc = 0;
	} else if (encode(d, files, n, tk, vocab) == 0 && unchanged(files, n, src) == 0 &&
		   keep_encoded(d, files, n, want, meta, cache) == 0) {
		rc = 0;
	}
	if (rc)
		dset_free(d);
	json_decref(old);
	json_decref(meta);
	return rc;
}

/* ---- conversations (--sft) ------------------------------------------------------------ */

/* How much of a conversation (flags f[0..n)) a row of T inputs trains on: up to the end
 * of its last answer within T + 1 tokens (the inputs and the target one further); 0
 * when its first answer ends past them. *cut: a later answer was dropped. Tokens
 * after the last answer are context for nothing and are dropped too. *first: where
 * the first answer ends (the tokens a row must hold for it). */
static size_t fit(const uint8_t *f, size_t n, int T, bool *cut, size_t *first)
{
	size_t best = 0, last = 0;
	*first = 0;
	for (size_t i = 2; i <= n; i++) /* token 0 is never a target */
		if ((f[i - 1] & DSET_SCORED) && (i == n || !(f[i] & DSET_SCORED))) {
			last = i;
			if (!*first)
				*first = i;
			if (i <= (size_t)T + 1)
				best = i;
		}
	*cut = best < last;
	return best;
}

/* The conversations of one file, fitted to rows of T and appended to all. */
static int add_file(struct dset *d, struct dset_convs *all, const struct dset_convs *f,
		    const char *path, int vocab, int T)
{
	d->sft.no_answer += f->no_answer;
	int64_t k = 0;
	for (size_t s = 0, e; s < f->n; s = e) {
		e = s + 1;
		while (e < f->n && !(f->flags[e] & DSET_START))
			e++;
		k++;
		for (size_t i = s; i < e; i++)
			if (f->ids[i] < 0 || f->ids[i] >= vocab)
				return err_set(
					"%s: conversation %lld: token id %d is not below the "
					"model's vocab_size %d",
					path, (long long)k, (int)f->ids[i], vocab);
		bool cut;
		size_t first, m = fit(f->flags + s, e - s, T, &cut, &first);
		if (!m) {
			int64_t need = (int64_t)first - 1;
			d->sft.left_out++;
			if (need > d->sft.left_out_ctx)
				d->sft.left_out_ctx = need;
			continue;
		}
		d->sft.cut += cut;
		if (convs_reserve(all, m))
			return -1;
		memcpy(all->ids + all->n, f->ids + s, m * sizeof *all->ids);
		memcpy(all->flags + all->n, f->flags + s, m);
		all->flags[all->n] |= DSET_START;
		all->n += m;
	}
	return 0;
}

static int encode_sft(struct dset *d, char *const *files, int n, dset_conv_reader rd, void *user,
		      int vocab, int T)
{
	struct dset_convs all = {0};
	int rc = 0;
	for (int i = 0; !rc && i < n; i++) {
		struct dset_convs f = {0};
		rc = rd(user, files[i], &f);
		if (!rc)
			rc = add_file(d, &all, &f, files[i], vocab, T);
		dset_convs_free(&f);
	}
	d->ids = all.ids;
	d->flags = all.flags;
	d->len = all.n;
	if (!rc && !d->ids && !(d->ids = malloc(sizeof *d->ids))) /* no conversation: still one */
		rc = err_set("out of memory");
	if (!rc && !d->flags && !(d->flags = malloc(1)))
		rc = err_set("out of memory");
	return rc ? -1 : index_convs(d, T, "the conversations");
}

int dset_read_sft(struct dset *d, char *const *files, int n, dset_conv_reader rd, void *user,
		  int vocab, int ctx)
{
	memset(d, 0, sizeof *d);
	if (encode_sft(d, files, n, rd, user, vocab, ctx) == 0)
		return 0;
	dset_free(d);
	return -1;
}

int dset_load_sft(struct dset *d, char *const *files, int n, dset_conv_reader rd, void *user,
		  const char *tok_hash, int vocab, int ctx, const char *cache,
		  const struct dset_want *want)
{
	memset(d, 0, sizeof *d);
	json_t *src = describe(files, n);
	if (!src)
		return -1;
	json_t *meta = json_pack("{s:i, s:i, s:s, s:o, s:{s:i}}", "format", 1, "vocab", vocab,
				 "tokenizer", tok_hash, "sources", src, "sft", "ctx", ctx);
	json_t *old = cache_meta(cache);
	int rc = -1;
	if (!meta)
		err_set("out of memory");
	else if (same_inputs(old, meta) && dset_load_cache(d, vocab, ctx, cache, want) == 0)
		rc = 0;
	else if (encode_sft(d, files, n, rd, user, vocab, ctx) == 0 &&
		 unchanged(files, n, src) == 0 && keep_encoded(d, files, n, want, meta, cache) == 0)
		rc = 0;
	if (rc)
		dset_free(d);
	json_decref(old);
	json_decref(meta);
	return rc;
}
