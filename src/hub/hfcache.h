/* hfcache.h — the Hugging Face hub cache layout, shared with huggingface_hub and the
 * Python tools: ROOT/models--Org--Name/{refs/REV, blobs/ETAG, snapshots/COMMIT/FILE
 * -> ../../blobs/ETAG}, partial downloads in blobs/ETAG.incomplete, locks in
 * ROOT/.locks/models--Org--Name/ETAG.lock. */
#ifndef QWENCHAT_HFCACHE_H
#define QWENCHAT_HFCACHE_H

#include <stdbool.h>
#include <stddef.h>

#include "src/hub/hub.h"

/* Splits "Org/Name[@REV]" into a malloc'd repo id and revision ("main" when absent; a
 * commit in capitals lowercased).
 * 1 when spec is a well-formed repo id, 0 when it is not one (nothing allocated),
 * -1 when it looks like one but the name or revision is malformed (err_set). */
int hfc_parse_spec(const char *spec, char **repo_id, char **rev);

/* The cache root: HF_HUB_CACHE, HF_HOME/hub, XDG_CACHE_HOME/huggingface/hub or
 * ~/.cache/huggingface/hub, the first that env sets. Malloc'd. */
char *hfc_root(const struct hub_env *env);

/* ROOT/models--Org--Name (malloc'd). */
char *hfc_repo_dir(const char *root, const char *repo_id);

/* Whether s is a commit id: 40 lowercase hex digits (what the cache's paths are
 * made of, so nothing else may name a snapshot). */
bool hfc_is_commit(const char *s);

/* The commit a revision names: REV itself when it is a 40-hex commit, else the
 * content of refs/REV when that is a commit. Malloc'd; NULL when unknown (no err). */
char *hfc_read_ref(const char *repo_dir, const char *rev);

/* Records refs/REV = commit (atomically). 0 or -1 (err_set). */
int hfc_write_ref(const char *repo_dir, const char *rev, const char *commit);

/* REPO_DIR/snapshots/COMMIT (malloc'd). */
char *hfc_snapshot(const char *repo_dir, const char *commit);

/* Points snapshots/COMMIT/FILE at blobs/ETAG with a relative symlink, replacing
 * any old link atomically. 0 or -1 (err_set). */
int hfc_link(const char *repo_dir, const char *commit, const char *file, const char *etag);

/* Records that FILE does not exist at COMMIT (an empty .no_exist/COMMIT/FILE, as
 * huggingface_hub does, so that it does not ask again); best effort. */
void hfc_mark_absent(const char *repo_dir, const char *commit, const char *file);


/* The ".locks" lock file for a blob (never opened through a symbolic link), taken
 * exclusively: when another process is downloading the same blob, says so on stderr
 * ("LABEL: waiting for another download ...") and waits. Returns an fd to pass to
 * hfc_unlock, or -1 (err_set). */
int hfc_lock(const char *root, const char *repo_id, const char *etag, const char *label);
void hfc_unlock(int fd);

/* True when name is a safe file name inside a repository snapshot:
 * plain characters, no "..", no leading "/", at most one level of folders. */
bool hfc_valid_file(const char *name);

/* Whether DIR/name is a file (a link to one counts). */
bool hfc_has_file(const char *dir, const char *name);

/* The shard files a model.safetensors.index.json names (its weight_map's values),
 * malloc'd, unique; free with hfc_free_names. NULL and err_set when the index is
 * unreadable or names an unsafe file. */
char **hfc_index_shards(const char *index_path, size_t *count);
void hfc_free_names(char **names, size_t n);

/* True when dir holds what a model directory needs: config.json, tokenizer.json and
 * the weights (one file, or every shard its index names), links resolving. */
bool hfc_model_complete(const char *dir);
/* The first file of those that dir lacks (malloc'd), or NULL when it is complete: a
 * model directory's (hfc_model_complete), or the tokenizer's alone (!weights). */
char *hfc_model_missing(const char *dir, bool weights);

/* SNAP/config.json's text, malloc'd (a Qwen3's is 1 KB; the caps bound what jansson
 * builds); NULL with err_set. */
char *hfc_read_config(const char *snap, size_t *len);

/* True when file, which a repository may lack, is settled in the snapshot of commit:
 * there, or recorded absent in repo_dir/.no_exist/COMMIT/ as huggingface_hub records
 * a 404 (and the download here does too). */
bool hfc_optional_settled(const char *repo_dir, const char *commit, const char *file);

#endif
