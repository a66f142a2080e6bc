/* hub.c — model resolution: a directory, a complete snapshot in the Hugging Face
 * cache, or a download of the files a model needs into that cache. */
#include "src/hub/hub.h"
#include "engine/engine.h"
#include "src/hub/download.h"
#include "src/base/err.h"
#include "src/base/clock.h"
#include "src/base/term.h"
#include "src/base/units.h"
#include "src/base/fileio.h"
#include "src/base/jsonlimit.h"
#include "src/hub/ggufname.h"
#include "src/hub/hfcache.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>

#define DEFAULT_MODEL    "Qwen/Qwen3-0.6B"
#define DEFAULT_ENDPOINT "https://huggingface.co"
#define ATTEMPTS         5 /* tries per file; QWENCHAT_DOWNLOAD_ATTEMPTS overrides */

const char *hub_default_model(const struct hub_env *env)
{
	const char *m = env->default_model;
	return m && *m ? m : DEFAULT_MODEL;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* ---- progress on stderr: a bar on a terminal, a line every 10 s otherwise ---- */

struct progress {
	bool tty;
	bool open; /* a bar is on screen without its newline */
	char label[128];
	double last; /* monotonic seconds of the last line */
};

static void show_progress(void *ud, const char *label, uint64_t done, uint64_t total, double rate,
			  int final)
{
	struct progress *p = ud;
	double t = clock_now();
	if (strcmp(p->label, label)) {
		snprintf(p->label, sizeof p->label, "%s", label);
		p->last = t;
	}
	if (!final && !p->tty && t - p->last < 10)
		return;
	p->last = t;
	char d[32], tot[32], r[32], eta[32] = "--:--";
	units_bytes((double)done, d, sizeof d);
	units_bytes((double)total, tot, sizeof tot);
	units_bytes(rate, r, sizeof r);
	int pct = total ? (int)(100.0 * (double)done / (double)total) : 100;
	if (rate > 0 && total > done) {
		long s = (long)((double)(total - done) / rate);
		snprintf(eta, sizeof eta, "%ld:%02ld:%02ld", s / 3600, s / 60 % 60, s % 60);
	}
	if (p->tty) {
		char bar[21];
		int fill = pct / 5;
		for (int i = 0; i < 20; i++)
			bar[i] = i < fill ? '#' : '.';
		bar[20] = '\0';
		fprintf(stderr, "\r\033[K%-28.28s %3d%% [%s] %s / %s  %s/s  ETA %s%s", label, pct,
			bar, d, tot, r, final ? "0:00:00" : eta, final ? "\n" : "");
		p->open = !final;
	} else if (final) {
		fprintf(stderr, "%s: %s done (%s/s)\n", label, tot, r);
	} else {
		fprintf(stderr, "%s: %s of %s (%d%%), %s/s, ETA %s\n", label, d, tot, pct, r, eta);
	}
	fflush(stderr);
}

/* Ends a bar cut short, so that the next message starts on its own line. */
static void progress_break(struct progress *p)
{
	if (p->open)
		fputc('\n', stderr);
	p->open = false;
}

/* ---- downloading a snapshot ---- */

struct fetch {
	const struct hub_env *env;
	struct dl *dl;
	struct progress *prog;
	const char *endpoint, *root, *repo_id, *repo_dir, *rev;
	char commit[41]; /* set by the first answer; later requests pin it */
	int fetched;     /* files downloaded (the others were in the cache) */
};

/* ENDPOINT/Org/Name/resolve/REV/FILE with the revision's slashes escaped. */
static char *file_url(const struct fetch *f, const char *file)
{
	const char *rev = f->commit[0] ? f->commit : f->rev;
	size_t n = strlen(f->endpoint) + strlen(f->repo_id) + 3 * strlen(rev) + strlen(file) + 16;
	char *u = malloc(n);
	if (!u)
		return NULL;
	int k = snprintf(u, n, "%s/%s/resolve/", f->endpoint, f->repo_id);
	for (const char *p = rev; *p; p++)
		k += *p == '/' ? snprintf(u + k, n - (size_t)k, "%%2F")
			       : snprintf(u + k, n - (size_t)k, "%c", *p);
	snprintf(u + k, n - (size_t)k, "/%s", file);
	return u;
}

static int enough_space(const char *dir, const char *file, uint64_t need)
{
	struct statvfs sv;
	if (statvfs(dir, &sv) == 0 && (uint64_t)sv.f_bavail * sv.f_frsize < need) {
		char a[32], b[32];
		units_bytes((double)need, a, sizeof a);
		units_bytes((double)sv.f_bavail * (double)sv.f_frsize, b, sizeof b);
		return err_set("%s: not enough disk space in %s: need %s, %s free", file, dir, a,
			       b);
	}
	return 0;
}

/* Whether name in dir is a regular file (a link, which the download refuses to write
 * through, is not), its size then in *size. */
static bool regular_file(int dir, const char *name, uint64_t *size)
{
	struct stat st;
	if (fstatat(dir, name, &st, AT_SYMLINK_NOFOLLOW) || !S_ISREG(st.st_mode))
		return false;
	*size = (uint64_t)st.st_size;
	return true;
}

/* Whether blobs (open as dir) holds the blob named etag whole: a regular file of the
 * size the Hub gave. */
static bool blob_whole(int dir, const char *etag, uint64_t size)
{
	uint64_t n;
	return regular_file(dir, etag, &n) && n == size;
}

/* After a failure that may pass (a broken connection, 429, 5xx, a body cut
 * short): says why on stderr and waits before the next try, as long as the server
 * asked (Retry-After, at most DL_MAX_RETRY_AFTER s) or else 1, 2, 4 ... 30 s.
 * False when the tries are used up (QWENCHAT_DOWNLOAD_ATTEMPTS, default 5). */
static bool retry_wait(struct fetch *f, int attempt)
{
	int attempts =
		f->env->attempts >= 1 && f->env->attempts <= 100 ? f->env->attempts : ATTEMPTS;
	if (attempt >= attempts) {
		err_prefix("after %d tries", attempts);
		return false;
	}
	double wait = dl_retry_after(f->dl);
	if (wait <= 0)
		wait = attempt < 6 ? (double)(1 << (attempt - 1)) : 30;
	progress_break(f->prog);
	/* one line as the program's errors are: the reason may quote the server's text */
	struct strbuf why = {0};
	term_safe_line(&why, err_msg(), strlen(err_msg()));
	fprintf(stderr, "qwenchat: %s; retrying in %.0f s (try %d of %d)\n",
		why.p && !why.oom ? why.p : "", wait, attempt + 1, attempts);
	free(why.p);
	struct timespec ts = {(time_t)wait, (long)((wait - (double)(time_t)wait) * 1e9)};
	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
	return true;
}

/* Downloads blobs/ETAG through blobs/ETAG.incomplete, retrying broken transfers
 * (each retry resumes where the last one stopped), every name taken in blobs, the
 * folder open as dir. Called with the blob's lock held. */
static int fetch_blob(struct fetch *f, const char *url, const char *file, const struct dl_meta *m,
		      int dir)
{
	char part[sizeof m->etag + 16];
	snprintf(part, sizeof part, "%s.incomplete", m->etag);
	char *blobs = fio_join(f->repo_dir, "blobs"), *path = blobs ? fio_join(blobs, part) : NULL;
	if (!path) {
		free(blobs);
		return err_set("out of memory");
	}
	uint64_t have = 0; /* bytes of the partial file an earlier run left */
	(void)regular_file(dir, part, &have);
	int rc = enough_space(blobs, file, m->size > have ? m->size - have : 0);
	if (rc == 0 && have > 0 && have < m->size) {
		char h[32];
		units_bytes((double)have, h, sizeof h);
		fprintf(stderr, "%s: resuming after %s\n", file, h);
	}
	for (int attempt = 1; rc == 0; attempt++) {
		int r = dl_get(f->dl, url, dir, part, path, file, m);
		if (r == DL_OK)
			break;
		if (r != DL_RETRY || !retry_wait(f, attempt))
			rc = -1;
	}
	if (rc == 0 && renameat(dir, part, dir, m->etag))
		rc = err_set("%s: cannot rename to %s: %s", path, m->etag, strerror(errno));
	if (rc == 0)
		(void)fsync(dir); /* best effort: the blob is whole either way */
	free(path);
	free(blobs);
	return rc;
}

/* Puts one file of the snapshot in place. 0 done, 1 absent (optional only), -1 error. */
static int fetch_file(struct fetch *f, const char *file, bool optional)
{
	struct dl_meta m;
	char *url = file_url(f, file);
	int rc = -1, lock = -1, dir = -1;
	if (!url)
		return err_set("out of memory");
	int r;
	for (int attempt = 1; (r = dl_head(f->dl, url, file, &m)) == DL_RETRY; attempt++)
		if (!retry_wait(f, attempt))
			break;
	if (r == DL_ABSENT) {
		if (f->commit[0])
			hfc_mark_absent(f->repo_dir, f->commit, file);
		rc = optional ? 1
			      : err_set("%s: not found at revision %s (HTTP 404)", file,
					f->commit[0] ? f->commit : f->rev);
		goto out;
	}
	if (r != DL_OK)
		goto out;
	if (!f->commit[0] && hfc_is_commit(f->rev) && strcmp(f->rev, m.commit)) {
		/* a pinned commit: another one is not what was asked for */
		err_set("%s: the Hub answered for commit %s, not %s", file, m.commit, f->rev);
		goto out;
	}
	if (!f->commit[0])
		memcpy(f->commit, m.commit, sizeof f->commit);
	else if (strcmp(f->commit, m.commit)) {
		err_set("%s: the Hub answered for commit %s, not %s", file, m.commit, f->commit);
		goto out;
	}
	/* blobs, open from the cache's root with no link on the way (ROOT/models--O--N
	 * /blobs), is where the blob goes however its folders are renamed meanwhile */
	const char *folder = strrchr(f->repo_dir, '/');
	char rel[512];
	snprintf(rel, sizeof rel, "%s/blobs", folder ? folder + 1 : f->repo_dir);
	dir = fio_mkdirs_below(f->root, rel, 0755);
	if (dir < 0)
		goto out;
	if (!blob_whole(dir, m.etag, m.size)) {
		if ((lock = hfc_lock(f->root, f->repo_id, m.etag, file)) < 0)
			goto out;
		/* Another process may have finished it while we waited for the lock. */
		if (!blob_whole(dir, m.etag, m.size)) {
			if (fetch_blob(f, url, file, &m, dir))
				goto out;
			f->fetched++;
		}
	}
	rc = hfc_link(f->repo_dir, f->commit, file, m.etag);
out:
	hfc_unlock(lock);
	if (dir >= 0)
		close(dir);
	free(url);
	return rc;
}

/* A model the loader refuses (a Qwen3-MoE, a Llama, a config.json that is not one)
 * is refused as soon as its config.json is in, with the loader's message: before
 * gigabytes of weights move for nothing. */
static int check_config(const struct fetch *f)
{
	char *snap = hfc_snapshot(f->repo_dir, f->commit);
	size_t len;
	char *text = snap ? hfc_read_config(snap, &len) : NULL;
	struct eng_config cfg;
	int rc = text ? eng_config_parse(text, len, "config.json", &cfg) : -1;
	free(text);
	free(snap);
	return rc;
}

/* The weights: a single file, or an index and the shards it names. */
static int fetch_weights(struct fetch *f)
{
	int r = fetch_file(f, "model.safetensors", true);
	if (r <= 0)
		return r;
	r = fetch_file(f, "model.safetensors.index.json", true);
	if (r < 0)
		return r;
	if (r == 1)
		return err_set("neither model.safetensors nor model.safetensors.index.json "
			       "is in the repository");
	char *snap = hfc_snapshot(f->repo_dir, f->commit);
	char *index = snap ? fio_join(snap, "model.safetensors.index.json") : NULL;
	size_t n = 0;
	char **shards = index ? hfc_index_shards(index, &n) : NULL;
	r = shards ? 0 : -1;
	for (size_t i = 0; r == 0 && i < n; i++)
		r = fetch_file(f, shards[i], false) ? -1 : 0;
	hfc_free_names(shards, n);
	free(index);
	free(snap);
	return r;
}

/* A GGUF repository: the file list from the Hub's API (which also pins the commit),
 * then the file(s) the tag means. */
static int fetch_gguf(struct fetch *f, const char *tag)
{
	/* a bound on what jansson builds from the answer (a repository of ~100k files) */
	static const struct jlim lim = {.max_depth = 32, .max_values = 1 << 19};
	char *rev = file_url(f, ""), *url = NULL, *text = NULL;
	size_t len, n = 0;
	int rc = -1;
	/* ENDPOINT/api/models/Org/Name/revision/REV: {"sha": ..., "siblings": [...]} */
	size_t cap = strlen(f->endpoint) + strlen(f->repo_id) + (rev ? strlen(rev) : 0) + 32;
	if (rev && (url = malloc(cap)))
		snprintf(url, cap, "%s/api/models/%s/revision/%s", f->endpoint, f->repo_id,
			 /* past ENDPOINT/Org/Name/resolve/ (the endpoint may hold "/resolve/") */
			 rev + strlen(f->endpoint) + 1 + strlen(f->repo_id) + strlen("/resolve/"));
	if (url && url[strlen(url) - 1] == '/')
		url[strlen(url) - 1] = 0;
	free(rev);
	int r = DL_FAIL;
	/* tried again after 429, 5xx or a broken connection, as each file is */
	for (int attempt = 1;
	     url && (r = dl_get_text(f->dl, url, f->repo_id, 64u << 20, &text, &len)) == DL_RETRY;
	     attempt++)
		if (!retry_wait(f, attempt))
			break;
	if (!url || r != DL_OK) {
		free(url);
		return url ? -1 : err_set("out of memory");
	}
	char what[600];
	snprintf(what, sizeof what, "%s: the Hub's file list (%s)", f->repo_id, url);
	free(url);
	if (jlim_check(text, len, &lim, what)) {
		free(text);
		return -1;
	}
	json_t *root = json_loadb(text, len, 0, NULL), *sib = json_object_get(root, "siblings"), *e;
	const char *sha = json_string_value(json_object_get(root, "sha"));
	char **names = calloc(json_array_size(sib) + 1, sizeof *names);
	const char **pick = NULL;
	size_t i;
	if (!sha || !hfc_is_commit(sha) || !json_is_array(sib) || !names) {
		err_set("%s: the Hub's file list is not {\"sha\", \"siblings\"}", f->repo_id);
		goto out;
	}
	if (hfc_is_commit(f->rev) && strcmp(f->rev, sha)) {
		err_set("%s: the Hub's file list is for commit %s, not %s", f->repo_id, sha,
			f->rev);
		goto out;
	}
	memcpy(f->commit, sha, 41);
	json_array_foreach(sib, i, e)
	{
		const char *name = json_string_value(json_object_get(e, "rfilename"));
		if (name && hfc_valid_file(name))
			names[n++] = (char *)name;
	}
	qsort(names, n, sizeof *names, cmp_str);
	int count = ggufname_pick(names, n, tag, &pick);
	rc = count > 0 ? 0 : err_prefix("%s", f->repo_id);
	for (int k = 0; rc == 0 && k < count; k++)
		rc = fetch_file(f, pick[k], false) ? -1 : 0;
out:
	free(pick);
	free(names);
	json_decref(root);
	free(text);
	return rc;
}

/* A model repository's files besides its weights; a repository may lack the optional
 * ones (the download records a 404 in .no_exist, as huggingface_hub does). The chat
 * template is in tokenizer_config.json or, as transformers 4.47 on saves it, in
 * chat_template.jinja: that one is fetched where there is one, but a cache without
 * it, or without a record of its absence (hf download leaves none), is not
 * incomplete, or every model downloaded by other tools would ask the Hub again. */
static const struct {
	const char *name;
	bool optional;
	bool settles; /* optional: the cache is incomplete until it is there or known absent */
} files[] = {
	{"config.json", false, true},         {"generation_config.json", true, true},
	{"tokenizer.json", false, true},      {"tokenizer_config.json", true, true},
	{"chat_template.jinja", true, false},
};

/* Whether a file of files[] is one the tokenizer alone (template, tokenize) needs. */
static bool tokenizer_file(const char *name)
{
	return !strncmp(name, "tokenizer", 9) || !strcmp(name, "chat_template.jinja");
}

/* Downloads the snapshot's config and tokenizer files and, when weights is set, the
 * weights; for a GGUF repository (tag set), the GGUF file(s) of that tag alone.
 * Returns the snapshot directory (malloc'd) or NULL. */
static char *download(const struct hub_env *env, const char *repo_id, const char *rev,
		      const char *root, const char *repo_dir, bool weights, const char *tag)
{
	struct progress prog = {
		.tty = isatty(STDERR_FILENO) && !env->no_progress,
	};
	struct hub_token token;
	if (hub_token(env, &token))
		return NULL;
	const char *ep = env->endpoint;
	char *endpoint = strdup(ep && *ep ? ep : DEFAULT_ENDPOINT);
	struct fetch f = {.env = env,
			  .root = root,
			  .repo_id = repo_id,
			  .repo_dir = repo_dir,
			  .rev = rev,
			  .prog = &prog};
	char *snap = NULL;
	f.dl = endpoint ? dl_new(token.value, token.source, show_progress, &prog) : NULL;
	if (f.dl) {
		size_t el = strlen(endpoint);
		while (el > 0 && endpoint[el - 1] == '/')
			endpoint[--el] = '\0';
		f.endpoint = endpoint;
		int rc = tag ? fetch_gguf(&f, tag) : 0;
		for (size_t i = 0; !tag && rc == 0 && i < sizeof files / sizeof files[0]; i++) {
			if (weights || tokenizer_file(files[i].name))
				rc = fetch_file(&f, files[i].name, files[i].optional) < 0 ? -1 : 0;
			if (rc == 0 && weights && !strcmp(files[i].name, "config.json"))
				rc = check_config(&f);
		}
		if (rc == 0 && weights && !tag)
			rc = fetch_weights(&f);
		/* The ref moves only once the snapshot is whole. */
		if (rc == 0 && hfc_write_ref(repo_dir, rev, f.commit) == 0)
			snap = hfc_snapshot(repo_dir, f.commit);
		if (snap && !f.fetched) /* a pull of what the cache already holds */
			fprintf(stderr, "%s@%s: up to date (commit %.12s)\n", repo_id, rev,
				f.commit);
		if (!snap)
			err_prefix("%s@%s", repo_id, rev);
		progress_break(&prog);
	}
	dl_free(f.dl);
	free(endpoint);
	hub_token_free(&token);
	return snap;
}

/* A complete snapshot: a model directory, its tokenizer, or the GGUF of a tag (then
 * the file's path replaces the directory's). */
static bool snapshot_has(char **snap, bool weights, const char *tag)
{
	if (!tag) {
		char *missing = hfc_model_missing(*snap, weights);
		free(missing);
		return !missing;
	}
	char *file = ggufname_in_dir(*snap, tag);
	err_clear();
	if (!file)
		return false;
	free(*snap);
	*snap = file;
	return true;
}

/* Why the cache cannot serve repo_id@rev offline: not there, no file of the tag (the
 * files there are named), or files missing. */
static void offline_miss(const char *repo_id, const char *rev, const char *root,
			 const char *repo_dir, const char *commit, const char *tag, bool weights)
{
	char *snap = commit ? hfc_snapshot(repo_dir, commit) : NULL;
	char *file = snap && tag ? ggufname_in_dir(snap, tag) : NULL;
	char *missing = snap && !tag ? hfc_model_missing(snap, weights) : NULL;
	if (snap && tag && !file)
		err_prefix("%s@%s (in the Hugging Face cache %s; HF_HUB_OFFLINE is set)", repo_id,
			   rev, root);
	else if (missing && !fio_is_dir(snap) && strcmp(rev, commit))
		err_set("%s@%s: incomplete in the Hugging Face cache (refs/%s names commit %s, "
			"whose snapshot %s is missing), and HF_HUB_OFFLINE is set",
			repo_id, rev, rev, commit, snap);
	else if (missing && !fio_is_dir(snap))
		err_set("%s@%s: not in the Hugging Face cache (no snapshot %s), and "
			"HF_HUB_OFFLINE is set",
			repo_id, rev, snap);
	else if (missing)
		err_set("%s@%s: incomplete in the Hugging Face cache (%s: no %s there), and "
			"HF_HUB_OFFLINE is set",
			repo_id, rev, snap, missing);
	else
		err_set("%s@%s: %s the Hugging Face cache (%s), and HF_HUB_OFFLINE is set", repo_id,
			rev, commit ? "incomplete in" : "not in", root);
	free(missing);
	free(file);
	free(snap);
}

/* Whether the optional files of the snapshot (the tokenizer's alone unless weights)
 * are settled: a download of some files (hf download --include) lacks the chat
 * template of tokenizer_config.json, which the chat would miss. */
static bool optional_settled(const char *repo_dir, const char *commit, bool weights)
{
	for (size_t i = 0; i < sizeof files / sizeof files[0]; i++)
		if (files[i].optional && files[i].settles &&
		    (weights || tokenizer_file(files[i].name)) &&
		    !hfc_optional_settled(repo_dir, commit, files[i].name))
			return false;
	return true;
}

static char *resolve_repo(const struct hub_env *env, const char *repo_id, const char *rev,
			  bool pull, bool weights, const char *tag)
{
	char *root = hfc_root(env);
	char *repo_dir = root ? hfc_repo_dir(root, repo_id) : NULL;
	char *commit = repo_dir ? hfc_read_ref(repo_dir, rev) : NULL;
	char *snap = commit ? hfc_snapshot(repo_dir, commit) : NULL;
	bool offline = env->offline;
	char *partial = NULL; /* whole but for optional files: what is used if they cannot come */
	if (snap && !snapshot_has(&snap, weights, tag)) {
		free(snap);
		snap = NULL;
	} else if (snap && !tag && !offline && !optional_settled(repo_dir, commit, weights)) {
		partial = snap;
		snap = NULL;
	}
	if (repo_dir && !(snap && (offline || !pull))) {
		free(snap);
		snap = NULL;
		if (offline)
			offline_miss(repo_id, rev, root, repo_dir, commit, tag, weights);
		else
			snap = download(env, repo_id, rev, root, repo_dir, weights, tag);
		if (snap && tag && !snapshot_has(&snap, weights, tag)) {
			free(snap);
			snap = NULL;
			err_prefix("%s@%s", repo_id, rev);
		}
	}
	if (!snap && partial && !pull) { /* the network failed: the cache as it is */
		struct strbuf why = {0};
		term_safe_line(&why, err_msg(), strlen(err_msg()));
		fprintf(stderr,
			"qwenchat: %s; using the cached snapshot, which lacks some optional "
			"files\n",
			why.p && !why.oom ? why.p : "");
		free(why.p);
		err_clear();
		snap = partial;
		partial = NULL;
	}
	free(partial);
	free(commit);
	free(repo_dir);
	free(root);
	return snap;
}

/* spec without the Hub's address in front: "hf.co/Org/Name:TAG" as ollama users write
 * it, "https://huggingface.co/Org/Name" as a browser shows it. */
static const char *without_hub_address(const char *spec)
{
	static const char *const prefixes[] = {"https://huggingface.co/", "http://huggingface.co/",
					       "huggingface.co/", "https://hf.co/", "hf.co/"};
	for (size_t i = 0; i < sizeof prefixes / sizeof prefixes[0]; i++)
		if (!strncmp(spec, prefixes[i], strlen(prefixes[i])))
			return spec + strlen(prefixes[i]);
	return spec;
}

static char *resolve_spec(const struct hub_env *env, const char *given, bool pull, bool weights)
{
	char *id, *rev, *repo_spec = NULL, *tag = NULL;
	const char *spec = without_hub_address(given);
	/* Org/Name:TAG (or Org/Name-GGUF): the GGUF file of that quantization */
	int g = ggufname_split_spec(spec, &repo_spec, &tag);
	if (g < 0)
		return NULL;
	if (g == 1 && !tag && !(tag = strdup(GGUFNAME_DEFAULT_TAG))) {
		free(repo_spec);
		err_set("out of memory");
		return NULL;
	}
	int r = hfc_parse_spec(g ? repo_spec : spec, &id, &rev);
	if (r == 0)
		err_set("%s: no such model directory or file, and not a Hugging Face repo id "
			"(Org/Name[:TAG])",
			given);
	char *dir = r == 1 ? resolve_repo(env, id, rev, pull, weights, tag) : NULL;
	if (r == 1) {
		free(id);
		free(rev);
	}
	free(repo_spec);
	free(tag);
	return dir;
}

/* $OLLAMA_MODELS, else ~/.ollama/models. */
static char *ollama_root(const struct hub_env *env)
{
	if (env->ollama_models && *env->ollama_models)
		return strdup(env->ollama_models);
	return fio_join(env->home && *env->home ? env->home : ".", ".ollama/models");
}

/* A config.json in dir that is something else than a file: said (-1, err_set) as what
 * it is, not as a directory without one. 0 when there is none (or a directory). */
static int bad_config(const char *dir)
{
	char *p = fio_join(dir, "config.json");
	struct stat st;
	int rc = 0;
	if (!p)
		rc = err_set("out of memory");
	else if (stat(p, &st) != 0)
		/* a directory that cannot be searched is not one without a config.json */
		rc = errno != ENOENT && errno != ENOTDIR ? err_set("%s: %s", p, strerror(errno))
							 : 0;
	else if (!S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode))
		rc = err_set("%s: not a regular file (a FIFO, a device or a socket is refused)", p);
	free(p);
	return rc;
}

static char *resolve(const struct hub_env *env, const char *model, bool weights)
{
	if (!model || !*model)
		model = hub_default_model(env);
	if (!strncmp(model, "ollama:", 7)) {
		char *root = ollama_root(env);
		char *blob = root ? ggufname_ollama(model + 7, root) : NULL;
		free(root);
		return blob;
	}
	/* a FIFO, a device or a socket is refused before anything opens it */
	struct stat st;
	if (stat(model, &st) != 0 && errno == ELOOP)
		return err_set("%s: %s", model, strerror(errno)), NULL;
	if (fio_exists(model) && !fio_is_dir(model) && !fio_is_file(model))
		return err_set("%s: not a directory or a regular file (a FIFO, a device or a "
			       "socket is refused)",
			       model),
		       NULL;
	/* a model directory, or a GGUF (checked when it is opened); any other file or
	 * directory gets one message, whatever the command would have opened first (the
	 * tokenizer commands name the file they could do with alone too) */
	if (fio_is_dir(model) || fio_is_file(model)) {
		bool ok = fio_is_dir(model)
				  ? hfc_has_file(model, "config.json") ||
					    (!weights && hfc_has_file(model, "tokenizer.json"))
				  : ggufname_is_gguf(model);
		if (!ok && !fio_is_dir(model)) {
			/* a file of a model directory: the directory is what to name */
			err_set("%s is a file, not a .gguf file: name the model's directory, a "
				".gguf file or a repo id",
				model);
			return NULL;
		}
		if (!ok) {
			/* train's first checkpoint puts config.json in place last */
			char *txn = fio_join(model, ".checkpoint.new");
			char *mark = txn ? fio_join(txn, "COMPLETE") : NULL;
			char *lock = fio_join(model, ".train"); /* fio_locked adds ".lock" */
			bool saving = txn && fio_is_dir(txn), whole = mark && fio_is_file(mark);
			bool running = lock && fio_locked(lock);
			free(lock);
			free(mark);
			free(txn);
			if (running && !saving)
				err_set("%s: no config.json yet: a training run is using it "
					"and has not saved its first checkpoint (it saves "
					"every --save-every steps, at the end, and when "
					"stopped)",
					model);
			else if (saving && whole)
				err_set("%s: no config.json yet: a training run is putting its "
					"first checkpoint in place, or was stopped while it did "
					"(the "
					"next 'qwenchat train --resume %s' puts it in place first)",
					model, model);
			else if (saving)
				err_set("%s: no config.json yet: a training run is writing its "
					"first checkpoint there (one stopped before it was whole "
					"saved nothing)",
					model);
			else if (!bad_config(model))
				err_set("%s is not a model directory (no config.json%s), a .gguf "
					"file or a repo id",
					model, weights ? "" : " or tokenizer.json");
			return NULL;
		}
		char *d = strdup(model);
		if (!d)
			err_set("out of memory");
		return d;
	}
	/* a name ending in .gguf, without a :TAG, is a file's (no repo is named so): a
	 * missing one is said missing, not looked for on the Hub */
	size_t n = strlen(model);
	if (n > 5 && !strcasecmp(model + n - 5, ".gguf") && !strchr(model, ':'))
		return err_set("%s: no such file", model), NULL;
	char *dir = resolve_spec(env, model, false, weights);
	/* "runs/nope" read as a repo id, where runs/ is a directory here: a mistyped path
	   more likely, which the message says too */
	const char *slash = strrchr(model, '/');
	char *parent =
		!dir && slash && slash > model ? strndup(model, (size_t)(slash - model)) : NULL;
	if (parent && fio_is_dir(parent)) {
		char why[2048];
		snprintf(why, sizeof why, "%s", err_msg());
		err_set("%s (and %s has no file or directory %s)", why, parent, slash + 1);
	}
	free(parent);
	return dir;
}

char *hub_resolve(const struct hub_env *env, const char *model)
{
	return resolve(env, model, true);
}

char *hub_resolve_tokenizer(const struct hub_env *env, const char *model)
{
	return resolve(env, model, false);
}

int hub_check_spec(const char *given)
{
	const char *spec = without_hub_address(given);
	if (strstr(spec, "://"))
		return err_set("%s: not the Hugging Face Hub's address (https://huggingface.co/"
			       "Org/Name)",
			       given);
	char *id, *rev, *repo_spec = NULL, *tag = NULL;
	int g = ggufname_split_spec(spec, &repo_spec, &tag);
	int r = g < 0 ? -1 : hfc_parse_spec(g ? repo_spec : spec, &id, &rev);
	if (r == 1) {
		free(id);
		free(rev);
	}
	free(repo_spec);
	free(tag);
	if (r == 0)
		return err_set("%s: not a Hugging Face repo id (Org/Name, Org/Name@REVISION or "
			       "Org/Name:TAG)",
			       given);
	return r == 1 ? 0 : -1;
}

char *hub_pull(const struct hub_env *env, const char *spec)
{
	return resolve_spec(env, spec, true, true);
}
