/* hub.h — turning a -m argument into a model directory: an existing directory,
 * the Hugging Face cache, or a download from the Hub (src/hub/download.c) into that
 * cache (src/hub/hfcache.c). Downloads report their progress on stderr: the one place
 * where library code prints, because a download of gigabytes must not be silent. */
#ifndef QWENCHAT_HUB_H
#define QWENCHAT_HUB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* What the Hub code follows, as huggingface_hub does: the values of its environment
 * variables (the command line reads them: src/cli/env.c). NULL or 0 means unset. */
struct hub_env {
	const char *hub_cache;      /* HF_HUB_CACHE (or the older HUGGINGFACE_HUB_CACHE) */
	const char *hf_home;        /* HF_HOME: the cache is $HF_HOME/hub */
	const char *xdg_cache_home; /* XDG_CACHE_HOME: $XDG_CACHE_HOME/huggingface/hub */
	const char *home;           /* HOME: ~/.cache/huggingface/hub */
	const char *endpoint;       /* HF_ENDPOINT (default https://huggingface.co) */
	const char *token;          /* HF_TOKEN */
	const char *token_legacy;   /* HUGGING_FACE_HUB_TOKEN: read when HF_TOKEN is unset */
	const char *token_path;     /* HF_TOKEN_PATH (default $HF_HOME/token) */
	bool offline;               /* HF_HUB_OFFLINE: never connect */
	bool no_progress;           /* HF_HUB_DISABLE_PROGRESS_BARS */
	int attempts;               /* QWENCHAT_DOWNLOAD_ATTEMPTS: tries per file (0: 5) */
	const char *default_model;  /* QWENCHAT_MODEL: the model when -m is absent */
	const char *ollama_models;  /* OLLAMA_MODELS: ollama's store (default ~/.ollama/models) */
};

/* Resolves MODEL (a directory, or a repo id "Org/Name[@rev]"; NULL means
 * env->default_model, else "Qwen/Qwen3-0.6B") to a malloc'd directory path.
 * A repo id complete in the cache is used without any network access; otherwise
 * the missing files are downloaded from the endpoint (never when offline).
 * NULL on error (err_set says what was tried). */
char *hub_resolve(const struct hub_env *env, const char *model);

/* Like hub_resolve, for commands that need only the tokenizer (tokenize,
 * detokenize, template): a repo id needs only tokenizer.json in the cache, and a
 * download fetches the config and tokenizer files without the weights. */
char *hub_resolve_tokenizer(const struct hub_env *env, const char *model);

/* The model used when -m is absent: env->default_model, else "Qwen/Qwen3-0.6B". */
const char *hub_default_model(const struct hub_env *env);

/* Like hub_resolve for a repo id, but always asks the Hub which commit the
 * revision names now and downloads what the cache lacks (offline: only checks the
 * cache). Returns the snapshot directory, malloc'd; NULL on error. */
char *hub_pull(const struct hub_env *env, const char *spec);
/* 0 when spec is written as a repo hub_pull takes (Org/Name, @REVISION, :TAG, the Hub's
 * address before it); -1 and a message saying what is wrong with it otherwise. Nothing
 * is looked up. */
int hub_check_spec(const char *spec);

/* One Qwen3 snapshot in the cache. */
struct hub_entry {
	char *repo_id;    /* "Org/Name" */
	char *commit;     /* 40 hex digits */
	char *refs;       /* refs naming this commit, comma-separated ("" when none) */
	uint64_t bytes;   /* size of the files the snapshot holds */
	int complete;     /* 1 when it has everything a model directory needs */
	char *file;       /* a GGUF file of the snapshot (its path there), or NULL */
	const char *type; /* the GGUF's general.file_type ("Q4_K_M"), or NULL */
	char *tag;        /* the tag that names the file (REPO:TAG), or NULL */
};

/* The snapshots in the cache whose config.json says model_type "qwen3", and the
 * GGUF files whose general.architecture is "qwen3" (one entry each), sorted by
 * repo id. 0 (with *out possibly NULL when *n is 0) or -1 (err_set). */
int hub_list(const struct hub_env *env, struct hub_entry **out, size_t *n);
void hub_list_free(struct hub_entry *e, size_t n);

/* The access token as huggingface_hub finds it: env->token (HF_TOKEN), else
 * env->token_legacy (HUGGING_FACE_HUB_TOKEN), else the file `huggingface-cli login`
 * writes ($HF_TOKEN_PATH, $HF_HOME/token, $XDG_CACHE_HOME/huggingface/token or
 * ~/.cache/huggingface/token); cleaned as its _clean_token does (\r and \n removed,
 * white space stripped at both ends), a token that cleans to nothing being none. */
struct hub_token {
	char *value;  /* malloc'd; NULL when there is none */
	char *source; /* where it came from, for messages: "HF_TOKEN", the file's path */
};
/* Fills t (both NULL when there is no token). 0, or -1 when out of memory. Free
 * with hub_token_free. */
int hub_token(const struct hub_env *env, struct hub_token *t);
void hub_token_free(struct hub_token *t);

#endif
