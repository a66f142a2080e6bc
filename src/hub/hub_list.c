/* hub_list.c — `qwenchat list`: the Qwen3 snapshots and GGUF files in the Hugging Face
 * cache, with their refs, sizes and whether they are complete. */
#include "src/hub/hub.h"
#include "src/base/err.h"
#include "src/base/fileio.h"
#include "src/base/strbuf.h"
#include "src/hub/ggufname.h"
#include "src/hub/hfcache.h"

#include <dirent.h>
#include <jansson.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static bool is_qwen3(const char *snap)
{
	size_t len;
	char *text = hfc_read_config(snap, &len);
	json_t *root = text ? json_loadb(text, len, 0, NULL) : NULL;
	free(text);
	err_clear();
	const char *type = json_string_value(json_object_get(root, "model_type"));
	bool r = type && !strcmp(type, "qwen3");
	json_decref(root);
	return r;
}

/* The refs under refs/SUB (branches and tags, and refs/pr/1 or feat/x a level or two
 * down) naming commit, appended to out comma-separated. */
static void add_refs(const char *repo_dir, const char *sub, const char *commit, struct strbuf *out,
		     int depth)
{
	char *rel = sub ? fio_join("refs", sub) : strdup("refs");
	char *dir = rel ? fio_join(repo_dir, rel) : NULL;
	DIR *d = dir ? opendir(dir) : NULL;
	struct dirent *e;
	while (d && (e = readdir(d))) {
		if (e->d_name[0] == '.')
			continue;
		char *name = sub ? fio_join(sub, e->d_name) : strdup(e->d_name);
		char *path = name && dir ? fio_join(dir, e->d_name) : NULL;
		if (path && fio_is_dir(path)) {
			if (depth < 2)
				add_refs(repo_dir, name, commit, out, depth + 1);
		} else if (name) {
			char *c = hfc_read_ref(repo_dir, name);
			if (c && !strcmp(c, commit))
				sb_printf(out, "%s%s", out->n ? "," : "", name);
			free(c);
		}
		free(name);
		free(path);
	}
	if (d)
		closedir(d);
	free(dir);
	free(rel);
}

/* The refs naming commit, comma-separated ("" when none); NULL when out of memory. */
static char *refs_naming(const char *repo_dir, const char *commit)
{
	struct strbuf b = {0};
	add_refs(repo_dir, NULL, commit, &b, 0);
	if (b.oom) {
		free(b.p);
		return NULL;
	}
	return b.p ? b.p : strdup("");
}

/* Bytes of the files in a snapshot (links followed; one level of folders). */
static uint64_t tree_bytes(const char *dir, int depth)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	uint64_t sum = 0;
	while (d && (e = readdir(d))) {
		if (e->d_name[0] == '.')
			continue;
		char *p = fio_join(dir, e->d_name);
		struct stat st;
		if (p && stat(p, &st) == 0) {
			if (S_ISREG(st.st_mode))
				sum += (uint64_t)st.st_size;
			else if (S_ISDIR(st.st_mode) && depth < 1)
				sum += tree_bytes(p, depth + 1);
		}
		free(p);
	}
	if (d)
		closedir(d);
	return sum;
}

/* Appends one entry: the snapshot (file NULL) or one GGUF file of it. */
static int add_entry(struct hub_entry **out, size_t *n, const char *name, const char *sep,
		     const char *repo_dir, const char *commit, const struct ggufname_file *file,
		     uint64_t bytes, int complete)
{
	struct hub_entry *grown = realloc(*out, (*n + 1) * sizeof **out);
	if (!grown)
		return err_set("out of memory");
	*out = grown;
	struct hub_entry *h = &grown[(*n)++];
	memset(h, 0, sizeof *h);
	size_t ol = (size_t)(sep - name);
	h->repo_id = malloc(strlen(name) + 1);
	if (h->repo_id)
		sprintf(h->repo_id, "%.*s/%s", (int)ol, name, sep + 2);
	h->commit = strdup(commit);
	h->refs = refs_naming(repo_dir, commit);
	h->bytes = bytes;
	h->complete = complete;
	h->file = file ? strdup(file->name) : NULL;
	h->type = file ? file->type : NULL;
	h->tag = file && file->tag ? strdup(file->tag) : NULL;
	if (!h->repo_id || !h->commit || !h->refs || (file && !h->file) ||
	    (file && file->tag && !h->tag))
		return err_set("out of memory");
	return 0;
}

/* Appends the Qwen3 snapshots of one models--Org--Name folder: a model directory, or
 * each Qwen3 GGUF file it holds. */
static int list_repo(const char *root, const char *folder, struct hub_entry **out, size_t *n)
{
	const char *name = folder + strlen("models--"), *sep = strstr(name, "--");
	if (!sep)
		return 0;
	char *repo_dir = fio_join(root, folder);
	char *snaps = repo_dir ? fio_join(repo_dir, "snapshots") : NULL;
	DIR *d = snaps ? opendir(snaps) : NULL;
	struct dirent *e;
	int rc = 0;
	while (d && rc == 0 && (e = readdir(d))) {
		if (e->d_name[0] == '.')
			continue;
		char *snap = fio_join(snaps, e->d_name);
		struct ggufname_file *files = NULL;
		size_t nf = 0;
		if (snap && fio_is_dir(snap) && is_qwen3(snap))
			rc = add_entry(out, n, name, sep, repo_dir, e->d_name, NULL,
				       tree_bytes(snap, 0), hfc_model_complete(snap));
		else if (snap && fio_is_dir(snap) && ggufname_files(snap, &files, &nf) == 0)
			for (size_t i = 0; rc == 0 && i < nf; i++)
				rc = add_entry(out, n, name, sep, repo_dir, e->d_name, &files[i],
					       files[i].bytes, files[i].complete);
		ggufname_files_free(files, nf);
		free(snap);
	}
	if (d)
		closedir(d);
	free(snaps);
	free(repo_dir);
	return rc;
}

static int cmp_entry(const void *a, const void *b)
{
	const struct hub_entry *x = a, *y = b;
	int c = strcmp(x->repo_id ? x->repo_id : "", y->repo_id ? y->repo_id : "");
	return c ? c : strcmp(x->commit ? x->commit : "", y->commit ? y->commit : "");
}

int hub_list(const struct hub_env *env, struct hub_entry **out, size_t *n)
{
	*out = NULL;
	*n = 0;
	char *root = hfc_root(env);
	if (!root)
		return -1;
	DIR *d = opendir(root);
	struct dirent *e;
	int rc = 0;
	while (d && rc == 0 && (e = readdir(d)))
		if (!strncmp(e->d_name, "models--", 8))
			rc = list_repo(root, e->d_name, out, n);
	if (d)
		closedir(d);
	free(root);
	if (rc) {
		hub_list_free(*out, *n);
		*out = NULL;
		*n = 0;
		return -1;
	}
	if (*n > 1)
		qsort(*out, *n, sizeof **out, cmp_entry);
	return 0;
}

void hub_list_free(struct hub_entry *e, size_t n)
{
	for (size_t i = 0; e && i < n; i++) {
		free(e[i].repo_id);
		free(e[i].commit);
		free(e[i].refs);
		free(e[i].file);
		free(e[i].tag);
	}
	free(e);
}
