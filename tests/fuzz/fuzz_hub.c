/* fuzz_hub.c — what -m names and what a Hugging Face cache or an ollama store holds
 * are untrusted: the first byte picks which reader gets the rest.
 *   0  a -m spec: hfc_parse_spec and ggufname_split_spec
 *   1  a repository's file list (lines) and a tag: ggufname_pick, whose picks must be
 *      among the names
 *   2  a model.safetensors.index.json: hfc_index_shards, whose names must be valid
 *      file names of a snapshot
 *   3  an ollama manifest, at library/m/latest of a store: ggufname_ollama, whose
 *      blob must lie inside the store
 * Files go into one directory made at the first call. */
#include <stdint.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <ftw.h>
#include <sys/stat.h>
#include <unistd.h>

#include "src/base/err.h"
#include "src/hub/ggufname.h"
#include "src/hub/hfcache.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char dir[] = "/tmp/qwenchat-fuzz-hub.XXXXXX";

static int remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st, (void)flag, (void)ftw;
	remove(path);
	return 0;
}

/* At exit (libFuzzer's -max_total_time ends with exit): dir and what the runs left. */
static void remove_dir(void)
{
	nftw(dir, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
}

static char *text_of(const uint8_t *p, size_t n)
{
	char *s = malloc(n + 1);
	if (!s)
		abort();
	memcpy(s, p, n);
	s[n] = 0;
	return s;
}

static void write_file(const char *path, const uint8_t *p, size_t n)
{
	FILE *f = fopen(path, "wb");
	if (!f || fwrite(p, 1, n, f) != n)
		abort();
	fclose(f);
}

static void spec(const uint8_t *p, size_t n)
{
	char *s = text_of(p, n), *repo = NULL, *rev = NULL, *tag = NULL;
	if (hfc_parse_spec(s, &repo, &rev) == 1 && (!repo || !*repo || !rev || !*rev))
		abort();
	free(repo);
	free(rev);
	repo = NULL;
	if (ggufname_split_spec(s, &repo, &tag) >= 0) {
		free(repo);
		free(tag);
	}
	free(s);
	err_clear();
}

static void pick(const uint8_t *p, size_t n)
{
	char *s = text_of(p, n), *names[64];
	size_t k = 0;
	char *tag = strtok(s, "\n");
	for (char *t; k < 64 && (t = strtok(NULL, "\n"));)
		names[k++] = t;
	const char **out = NULL;
	int got = tag ? ggufname_pick(names, k, tag, &out) : 0;
	for (int i = 0; i < got; i++) {
		bool found = false;
		for (size_t j = 0; j < k && !found; j++)
			found = out[i] == names[j];
		if (!found)
			abort();
	}
	free(out);
	free(s);
	err_clear();
}

static void index_json(const uint8_t *p, size_t n)
{
	char path[64];
	snprintf(path, sizeof path, "%s/model.safetensors.index.json", dir);
	write_file(path, p, n);
	size_t count = 0;
	char **names = hfc_index_shards(path, &count);
	for (size_t i = 0; names && i < count; i++)
		if (!hfc_valid_file(names[i]))
			abort();
	if (names)
		hfc_free_names(names, count);
	err_clear();
}

static void ollama(const uint8_t *p, size_t n)
{
	char path[128];
	snprintf(path, sizeof path, "%s/manifests/registry.ollama.ai/library/m/latest", dir);
	write_file(path, p, n);
	char *blob = ggufname_ollama("m", dir);
	if (blob && strncmp(blob, dir, strlen(dir)))
		abort();
	free(blob);
	err_clear();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static bool ready; /* not dir's last letter: mkdtemp may end the name in X */
	if (!ready) {
		char m[128];
		if (!mkdtemp(dir))
			abort();
		ready = true;
		atexit(remove_dir);
		snprintf(m, sizeof m, "%s/manifests/registry.ollama.ai/library/m", dir);
		for (char *s = m + strlen(dir) + 1; (s = strchr(s, '/')); s++) {
			*s = 0;
			mkdir(m, 0700);
			*s = '/';
		}
		mkdir(m, 0700);
		snprintf(m, sizeof m, "%s/blobs", dir);
		mkdir(m, 0700);
	}
	if (size < 1)
		return 0;
	switch (data[0] % 4) {
	case 0: spec(data + 1, size - 1); break;
	case 1: pick(data + 1, size - 1); break;
	case 2: index_json(data + 1, size - 1); break;
	default: ollama(data + 1, size - 1); break;
	}
	return 0;
}
