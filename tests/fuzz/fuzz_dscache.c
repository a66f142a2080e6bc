/* fuzz_dscache.c — train-state/data.json is untrusted: a rerun reads it to decide
 * whether the cached stream (data.u32, data.sft) stands for its files. The input is
 * that JSON, for a plain cache and for one of conversations (--sft) of a fixed stream
 * of one *.u32 file; "@SOURCES@" in it stands for the sources array the cache of that
 * file holds, so that the fuzzer reaches the reuse. Asserted: dset_load_cache takes it
 * exactly when it gives the vocab, the tokens, the kind (plain, or sft with this ctx)
 * and a sha256 that is absent or the stream's, and then returns the stream on disk
 * with counts that are not negative; a want it does not meet is refused; dset_load and
 * dset_load_sft return the files' stream whatever the JSON says, reuse the cache only
 * when it describes those files, and leave a cache that loads and describes them; a
 * want the files do not meet leaves the JSON as it was; dset_changed names the file
 * exactly when the sources differ; a stream not tokenized has the same tokenizer as
 * any. */
#include <jansson.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "src/base/err.h"
#include "src/base/fileio.h"
#include "src/train/dataset.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

enum { VOCAB = 50, CTX = 4, N = 8 };
static const int32_t g_ids[N] = {1, 2, 3, 4, 5, 6, 7, 8};
/* two conversations of 4 tokens, each with targets after its first token */
static const unsigned char g_scored[N] = {0, 0, 1, 1, 0, 1, 1, 1};

static char g_dir[64], *g_src, *g_plain, *g_sft;
static char *g_files[1];
static char g_plain_hash[72], g_sft_hash[72];
static json_t *g_sources; /* the sources array the caches hold */
static char *g_sources_text;

static int read_convs(void *user, const char *path, struct dset_convs *out)
{
	(void)user;
	(void)path;
	return dset_convs_add(out, g_ids, g_scored, 4) ||
	       dset_convs_add(out, g_ids + 4, g_scored + 4, 4);
}

static char *ext(const char *base, const char *e)
{
	char *p = malloc(strlen(base) + strlen(e) + 1);
	if (!p)
		abort();
	return strcat(strcpy(p, base), e);
}

static void cleanup(void)
{
	const char *bases[] = {g_plain, g_sft};
	const char *exts[] = {".json", ".u32", ".sft"};
	for (int b = 0; b < 2; b++)
		for (int e = 0; e < 3; e++) {
			char *p = ext(bases[b], exts[e]);
			unlink(p);
			free(p);
		}
	unlink(g_src);
	rmdir(g_dir);
}

/* The directory, the file, both caches as the code writes them, their hashes. */
static void setup(void)
{
	/* in memory where there is a tmpfs: the cache writer syncs every file */
	snprintf(g_dir, sizeof g_dir, "/dev/shm/fuzz_dscache.XXXXXX");
	if (!mkdtemp(g_dir)) {
		snprintf(g_dir, sizeof g_dir, "/tmp/fuzz_dscache.XXXXXX");
		if (!mkdtemp(g_dir))
			abort();
	}
	g_src = fio_join(g_dir, "src.u32");
	g_plain = fio_join(g_dir, "data");
	g_sft = fio_join(g_dir, "sft");
	if (!g_src || !g_plain || !g_sft || fio_write_atomic(g_src, g_ids, sizeof g_ids, 0600, 0))
		abort();
	atexit(cleanup);
	g_files[0] = g_src;
	struct dset d;
	if (dset_load(&d, g_files, 1, NULL, "none", VOCAB, g_plain, NULL))
		abort();
	memcpy(g_plain_hash, d.sha256, sizeof g_plain_hash);
	dset_free(&d);
	if (dset_load_sft(&d, g_files, 1, read_convs, NULL, "sha256:t", VOCAB, CTX, g_sft, NULL))
		abort();
	memcpy(g_sft_hash, d.sha256, sizeof g_sft_hash);
	dset_free(&d);
	char *js = ext(g_plain, ".json");
	json_t *j = json_load_file(js, 0, NULL);
	g_sources = json_incref(json_object_get(j, "sources"));
	g_sources_text = json_dumps(g_sources, JSON_COMPACT);
	if (!g_sources_text)
		abort();
	json_decref(j);
	free(js);
}

/* The input with each "@SOURCES@" replaced (malloc'd, *len bytes). */
static char *substitute(const char *p, size_t n, size_t *len)
{
	static const char mark[] = "@SOURCES@";
	size_t m = sizeof mark - 1, s = strlen(g_sources_text);
	char *out = malloc(n / m * s + n + 1), *o = out;
	if (!out)
		abort();
	for (size_t i = 0; i < n;)
		if (i + m <= n && !memcmp(p + i, mark, m)) {
			o = (char *)memcpy(o, g_sources_text, s) + s;
			i += m;
		} else {
			*o++ = p[i++];
		}
	*len = (size_t)(o - out);
	return out;
}

static void put(const char *base, const char *text, size_t n)
{
	char *p = ext(base, ".json");
	FILE *f = fopen(p, "wb");
	if (!f || (n && fwrite(text, 1, n, f) != n) || fclose(f))
		abort();
	free(p);
}

/* Whether the JSON at base.json is still text[0..n). */
static bool unchanged(const char *base, const char *text, size_t n)
{
	char *p = ext(base, ".json");
	size_t len;
	char *now = fio_read_all(p, n + 1, &len);
	bool same = now && len == n && !memcmp(now, text, n);
	free(now);
	free(p);
	return same;
}

static bool is_int(json_t *j, const char *key, json_int_t v)
{
	json_t *x = json_object_get(j, key);
	return json_is_integer(x) && json_integer_value(x) == v;
}

/* What dset_load_cache must accept: ctx 0 is a plain stream. */
static bool acceptable(json_t *j, int ctx, const char *hash)
{
	json_t *sft = json_object_get(j, "sft"), *sum = json_object_get(j, "sha256");
	bool kind = ctx ? is_int(sft, "ctx", ctx) : !sft;
	return json_is_object(j) && is_int(j, "vocab", VOCAB) && is_int(j, "tokens", N) && kind &&
	       (!json_is_string(sum) || !strcmp(json_string_value(sum), hash));
}

/* What a cache of conversations says of those left out or cut (a plain one: none). */
static int64_t count_of(json_t *j, int ctx, const char *key)
{
	if (!ctx)
		return 0;
	json_int_t v = json_integer_value(json_object_get(json_object_get(j, "sft_counts"), key));
	return v > 0 ? (int64_t)v : 0;
}

/* The stream as loaded: the fixed ids, flags and hash. */
static void check_stream(const struct dset *d, int ctx)
{
	if (d->len != N || memcmp(d->ids, g_ids, sizeof g_ids) ||
	    strcmp(d->sha256, ctx ? g_sft_hash : g_plain_hash))
		abort();
	if (!ctx) {
		if (d->flags)
			abort();
		return;
	}
	for (int i = 0; i < N; i++)
		if (!d->flags || (d->flags[i] & DSET_SCORED) != g_scored[i] ||
		    !(d->flags[i] & DSET_START) != (i % 4 != 0))
			abort();
	if (d->sft.conversations != 2 || d->sft.scored != 5 || !d->seq || d->seq[1] != 4 ||
	    d->seq[2] != N)
		abort();
}

static void check_cache(json_t *j, int ctx)
{
	const char *base = ctx ? g_sft : g_plain, *hash = ctx ? g_sft_hash : g_plain_hash;
	struct dset d;
	bool ok = dset_load_cache(&d, VOCAB, ctx, base, NULL) == 0;
	if (ok != acceptable(j, ctx, hash))
		abort();
	if (ok) {
		check_stream(&d, ctx);
		if (!d.cached || d.sft.cut != count_of(j, ctx, "cut") ||
		    d.sft.left_out != count_of(j, ctx, "left_out") ||
		    d.sft.left_out_ctx != count_of(j, ctx, "left_out_ctx") ||
		    d.sft.no_answer != count_of(j, ctx, "no_answer"))
			abort();
		dset_free(&d);
	}
	struct dset_want same = {N, hash}, more = {N + 1, NULL};
	if ((dset_load_cache(&d, VOCAB, ctx, base, &same) == 0) != ok)
		abort();
	dset_free(&d);
	if (dset_load_cache(&d, VOCAB, ctx, base, &more) == 0)
		abort();
}

/* The metadata readers beside dset_load_cache. */
static void check_readers(json_t *j, const char *base)
{
	const char *tk = json_string_value(json_object_get(j, "tokenizer"));
	bool tokenized = dset_tokenized(base);
	if (tokenized != (tk && strcmp(tk, "none")))
		abort();
	if (!tokenized &&
	    (!dset_same_tokenizer(base, "sha256:x") || !dset_same_tokenizer(base, NULL)))
		abort();
	json_t *src = json_object_get(j, "sources");
	bool differs = src && !json_equal(json_array_get(src, 0), json_array_get(g_sources, 0));
	if (dset_changed(base, g_files, 1) != (differs ? g_files[0] : NULL))
		abort();
}

/* The JSON the code keeps or writes after a load: one that loads and describes the
 * file. */
static void check_after(int ctx)
{
	const char *base = ctx ? g_sft : g_plain;
	struct dset d;
	if (dset_load_cache(&d, VOCAB, ctx, base, NULL))
		abort();
	check_stream(&d, ctx);
	dset_free(&d);
	if (dset_changed(base, g_files, 1))
		abort();
}

static int load(struct dset *d, int ctx, const struct dset_want *want)
{
	return ctx ? dset_load_sft(d, g_files, 1, read_convs, NULL, "sha256:t", VOCAB, CTX, g_sft,
				   want)
		   : dset_load(d, g_files, 1, NULL, "none", VOCAB, g_plain, want);
}

static void check_load(json_t *j, const char *text, size_t n, int ctx)
{
	const char *base = ctx ? g_sft : g_plain, *hash = ctx ? g_sft_hash : g_plain_hash;
	struct dset d;
	struct dset_want other = {N, "sha256:0"};
	if (load(&d, ctx, &other) == 0 || !unchanged(base, text, n))
		abort();
	json_t *tk = json_object_get(j, "tokenizer"), *sft = json_object_get(j, "sft");
	bool reuse = acceptable(j, ctx, hash) &&
		     json_equal(json_object_get(j, "sources"), g_sources) && json_is_string(tk) &&
		     !strcmp(json_string_value(tk), ctx ? "sha256:t" : "none") &&
		     (!ctx || json_object_size(sft) == 1);
	if (load(&d, ctx, NULL))
		abort();
	check_stream(&d, ctx);
	if (d.cached != reuse)
		abort();
	dset_free(&d);
	check_after(ctx);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (!g_sources)
		setup();
	size_t n;
	char *text = substitute((const char *)data, size, &n);
	json_t *j = json_loadb(text, n, 0, NULL);
	for (int ctx = 0; ctx <= CTX; ctx += CTX) {
		const char *base = ctx ? g_sft : g_plain;
		put(base, text, n);
		check_cache(j, ctx);
		check_readers(j, base);
		check_load(j, text, n, ctx);
	}
	json_decref(j);
	free(text);
	return 0;
}
