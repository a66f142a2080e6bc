/* ggufname.h — GGUF files by name: the file of a repository that `REPO:TAG` means
 * (llama.cpp's -hf convention), split parts, the quantization a file announces, and
 * models ollama has pulled (its manifests and blobs). */
#ifndef QWENCHAT_GGUFNAME_H
#define QWENCHAT_GGUFNAME_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The tag a repo without one gets: llama.cpp's default. */
#define GGUFNAME_DEFAULT_TAG "Q4_K_M"

/* Splits "Org/Name:TAG[@REV]" into "Org/Name[@REV]" (malloc'd) and TAG (malloc'd,
 * NULL when there is none: then a repo whose name ends in -GGUF gets the default tag).
 * 1 when the spec names a GGUF repo, 0 when not, -1 on a malformed tag (err_set). */
int ggufname_split_spec(const char *spec, char **repo_spec, char **tag);

/* The files `tag` means among `names` (repository paths, sorted): of the .gguf files
 * whose name ends with the tag after '-' or '.' (any case; "Q4_K" does not match
 * "Q4_K_M"; a split part's suffix aside), else of those holding it between
 * delimiters anywhere, the one with the shortest name (Qwen3-8B-Q4_K_M.gguf over
 * Qwen3-8B-UD-Q4_K_M.gguf); when it is a part NAME-0000k-of-0000N.gguf, every part in
 * order. Returns the count and the names in *out (pointers into names, malloc'd
 * array); -1 when none (err_set lists the .gguf files there are), when two files tie
 * (err_set lists them), on error. */
int ggufname_pick(char *const *names, size_t n, const char *tag, const char ***out);

/* The same among the files of a snapshot directory (one level of folders): the path
 * of the first file, malloc'd, when every part is there; NULL otherwise (err_set). */
char *ggufname_in_dir(const char *dir, const char *tag);

/* The Qwen3 GGUF files of a snapshot directory (single files and first parts). */
struct ggufname_file {
	char *name;       /* relative to the directory */
	char *tag;        /* the shortest TAG with which REPO:TAG is this file, or NULL */
	const char *type; /* llama.cpp's name of general.file_type ("Q4_K_M"), or NULL */
	uint64_t bytes;   /* all parts */
	int complete;     /* every part is there */
};
int ggufname_files(const char *dir, struct ggufname_file **out, size_t *n);
void ggufname_files_free(struct ggufname_file *f, size_t n);

/* Whether the file at path is meant as a GGUF: its name ends in .gguf (any case),
 * or it starts with the GGUF magic (an ollama blob has no such name). */
bool ggufname_is_gguf(const char *path);

/* An ollama model: [HOST/][NAMESPACE/]NAME[:TAG] (registry.ollama.ai, library and
 * latest by default; "hf.co/user/repo:Q4_K_M" as ollama pulls from Hugging Face) under
 * ROOT (OLLAMA_MODELS, else ~/.ollama/models): the blob its manifest's model layer
 * names, malloc'd. NULL with err_set (what was looked for) when not found. */
char *ggufname_ollama(const char *spec, const char *root);

#endif
