/* pooling.c — how an embedding model pools its hidden states into one vector, as its
 * files say: sentence-transformers' modules.json and its Pooling module's config.json
 * in a directory, {arch}.pooling_type in a GGUF file (llama.cpp's converter writes the
 * one from the other). */
#include "src/hub/loader.h"

#include <jansson.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "src/base/err.h"
#include "src/base/fileio.h"
#include "src/hub/loader_impl.h"

#define POOLING_KEY "qwen3.pooling_type"

const char *loader_pooling_name(enum loader_pooling p)
{
	static const char *const names[] = {"none", "mean", "cls", "last", "rank"};
	return (unsigned)p < sizeof names / sizeof *names ? names[p] : "?";
}

/* The Pooling module's config.json: its one pooling_mode_* that is true, or its
 * "pooling_mode" string. */
static int mode_of(json_t *c, const char *file, enum loader_pooling *out)
{
	static const struct {
		const char *key, *mode;
		enum loader_pooling p;
	} modes[] = {
		{"pooling_mode_lasttoken", "lasttoken", LOADER_POOL_LAST},
		{"pooling_mode_mean_tokens", "mean", LOADER_POOL_MEAN},
		{"pooling_mode_cls_token", "cls", LOADER_POOL_CLS},
		{"pooling_mode_max_tokens", "max", LOADER_POOL_OTHER},
		{"pooling_mode_mean_sqrt_len_tokens", "mean_sqrt_len_tokens", LOADER_POOL_OTHER},
		{"pooling_mode_weightedmean_tokens", "weightedmean", LOADER_POOL_OTHER},
	};
	const char *s = json_string_value(json_object_get(c, "pooling_mode"));
	int found = 0; /* the modes said, each once (by its flag, its name or both) */
	for (size_t k = 0; k < sizeof modes / sizeof *modes; k++)
		if (json_is_true(json_object_get(c, modes[k].key)) ||
		    (s && !strcmp(s, modes[k].mode))) {
			*out = modes[k].p;
			found++;
		}
	if (found != 1)
		return err_set("%s: %s pooling mode (one pooling_mode_* true)", file,
			       found ? "more than one" : "no");
	return 0;
}

/* A directory: the Pooling module of modules.json, if any. */
static int dir_pooling(const char *dir, enum loader_pooling *out)
{
	char *p = fio_join(dir, "modules.json");
	bool absent = p && !fio_exists(p);
	free(p);
	if (absent)
		return 0;
	json_t *mods = loader_load_json(dir, "modules.json", false), *m;
	if (!mods)
		return -1;
	int rc = json_is_array(mods) ? 0 : err_set("%s/modules.json: not an array of modules", dir);
	size_t i;
	json_array_foreach(mods, i, m)
	{
		const char *type = json_string_value(json_object_get(m, "type"));
		const char *path = json_string_value(json_object_get(m, "path"));
		size_t n = type ? strlen(type) : 0;
		if (n < 7 || strcmp(type + n - 7, "Pooling"))
			continue;
		char name[300], file[600];
		if (!path || strstr(path, "..") || path[0] == '/' ||
		    (size_t)snprintf(name, sizeof name, "%s/config.json", path) >= sizeof name) {
			rc = err_set("%s/modules.json: [%zu].path: not a folder of the model", dir,
				     i);
			break;
		}
		json_t *c = loader_load_json(dir, name, false);
		snprintf(file, sizeof file, "%s/%s", dir, name);
		rc = c ? mode_of(c, file, out) : -1;
		json_decref(c);
		break;
	}
	json_decref(mods);
	return rc;
}

int loader_pooling(const char *path, enum loader_pooling *out)
{
	*out = LOADER_POOL_NONE;
	if (fio_is_dir(path))
		return dir_pooling(path, out);
	struct eng_gguf *g = eng_gguf_open(path);
	if (!g)
		return -1;
	int64_t v = 0;
	int r = eng_gguf_int(g, POOLING_KEY, &v);
	if (r == 0 && (v < LOADER_POOL_NONE || v > LOADER_POOL_RANK))
		r = err_set("%s: key " POOLING_KEY " is %lld (0 to 4, llama.cpp's)", path,
			    (long long)v);
	else if (r == 0)
		*out = (enum loader_pooling)v;
	eng_gguf_free(g);
	return r < 0 ? -1 : 0;
}

int loader_pooling_key(const char *dir, struct eng_gguf_out *o)
{
	enum loader_pooling p = LOADER_POOL_NONE;
	if (dir_pooling(dir, &p))
		return -1;
	if (p == LOADER_POOL_NONE)
		return 0;
	if (p == LOADER_POOL_OTHER)
		return err_set("%s: a pooling mode llama.cpp's GGUF files cannot say (mean, cls "
			       "or lasttoken)",
			       dir);
	return eng_gguf_out_u32(o, POOLING_KEY, (uint32_t)p);
}

int loader_check_last_pooling(const char *path)
{
	enum loader_pooling p = LOADER_POOL_NONE;
	if (loader_pooling(path, &p))
		return -1;
	if (p == LOADER_POOL_NONE || p == LOADER_POOL_LAST)
		return 0;
	return err_set("%s: the model pools by %s (%s), and embeddings here are last-token "
		       "pooling (Qwen3-Embedding's)",
		       path,
		       p == LOADER_POOL_OTHER ? "a sentence-transformers mode"
					      : loader_pooling_name(p),
		       fio_is_dir(path) ? "its modules.json" : POOLING_KEY);
}
