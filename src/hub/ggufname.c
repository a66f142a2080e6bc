/* ggufname.c — which GGUF file a name means: REPO:TAG in a repository's file list or
 * a snapshot, split parts, and ollama's manifests (registry.ollama.ai/library/NAME/TAG
 * is JSON whose model layer names the blob blobs/sha256-HEX). */
#include "src/hub/ggufname.h"
#include "src/base/err.h"
#include "src/base/fileio.h"
#include "src/base/jsonlimit.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

#include "engine/engine.h"

static bool tag_char(char c)
{
	return isalnum((unsigned char)c) || c == '_' || c == '-' || c == '.';
}

int ggufname_split_spec(const char *spec, char **repo_spec, char **tag)
{
	const char *colon = strchr(spec, ':'), *at = strchr(spec, '@');
	*repo_spec = *tag = NULL;
	if (!colon || (at && at < colon)) {
		/* no tag: a repo called *-GGUF is one all the same */
		size_t n = at ? (size_t)(at - spec) : strlen(spec);
		if (n < 5 || strncasecmp(spec + n - 5, "-GGUF", 5) || !strchr(spec, '/'))
			return 0;
		*repo_spec = strdup(spec);
		return *repo_spec ? 1 : err_set("out of memory");
	}
	size_t tl = at ? (size_t)(at - colon - 1) : strlen(colon + 1);
	for (size_t i = 0; i < tl; i++)
		if (!tag_char(colon[1 + i]))
			return err_set("%s: the tag is not made of letters, digits, '_', '-', '.'",
				       spec);
	if (tl == 0 || tl > 64)
		return err_set("%s: the tag after ':' is empty or too long", spec);
	size_t head = (size_t)(colon - spec), tail = at ? strlen(at) : 0;
	*repo_spec = malloc(head + tail + 1);
	*tag = strndup(colon + 1, tl);
	if (!*repo_spec || !*tag) {
		free(*repo_spec);
		free(*tag);
		return err_set("out of memory");
	}
	memcpy(*repo_spec, spec, head);
	memcpy(*repo_spec + head, at ? at : "", tail + 1);
	return 1;
}

/* The number of the five digits at s, or -1 when they are not five digits. */
static int digits5(const char *s)
{
	int v = 0;
	for (int i = 0; i < 5; i++) {
		if (s[i] < '0' || s[i] > '9')
			return -1;
		v = v * 10 + (s[i] - '0');
	}
	return v;
}

/* NAME-0000k-of-0000N.gguf: the prefix length, k and N; false for a single file. */
static bool split_part(const char *name, size_t *prefix, int *k, int *total)
{
	size_t n = strlen(name), w = strlen("-00001-of-00003.gguf");
	if (n < w)
		return false;
	/* every character checked: sscanf would take "-00001-of-0003/.gguf" too */
	const char *s = name + n - w;
	*k = digits5(s + 1);
	*total = digits5(s + 10);
	if (s[0] != '-' || strncmp(s + 6, "-of-", 4) || strcmp(s + 15, ".gguf") || *k < 1 ||
	    *k > *total)
		return false;
	*prefix = (size_t)(s - name);
	return true;
}

static bool is_gguf(const char *name)
{
	size_t n = strlen(name);
	return n > 5 && !strcasecmp(name + n - 5, ".gguf");
}

/* The tag between delimiters (anything but letters, digits and '_'), any case. */
static bool holds_tag(const char *name, const char *tag)
{
	const char *base = strrchr(name, '/');
	size_t t = strlen(tag);
	base = base ? base + 1 : name;
	if (!is_gguf(name) || strstr(base, "mmproj"))
		return false;
	for (const char *p = base; *p; p++) {
		if (strncasecmp(p, tag, t))
			continue;
		char before = p > base ? p[-1] : '-', after = p[t];
		if (!isalnum((unsigned char)before) && before != '_' &&
		    !isalnum((unsigned char)after) && after != '_')
			return true;
	}
	/* a folder named for the tag holds the parts of big models */
	size_t dl = (size_t)(base - name);
	return dl == t + 1 && !strncasecmp(name, tag, t);
}

/* Appends ", name" to the list of names a message gives, while it fits. */
static void list_name(char *list, size_t size, const char *name)
{
	size_t used = strlen(list);
	if (used + strlen(name) + 3 < size)
		snprintf(list + used, size - used, "%s%s", used ? ", " : "", name);
}

/* The length of name without ".gguf" and a split part's "-0000k-of-0000N". */
static size_t stem_len(const char *name)
{
	size_t prefix;
	int k, total;
	if (split_part(name, &prefix, &k, &total))
		return prefix;
	size_t n = strlen(name);
	return n > 5 ? n - 5 : 0;
}

/* Whether the tag ends the name's stem after a delimiter: the quantization a file is
 * named for (Qwen3-8B-Q4_K_M.gguf, model.Q8_0.gguf), not a tag inside it ("8B"). */
static bool ends_with_tag(const char *name, const char *tag)
{
	const char *base = strrchr(name, '/');
	base = base ? base + 1 : name;
	size_t n = stem_len(base), t = strlen(tag); /* the file's own name: not past a '/' */
	return holds_tag(name, tag) && n >= t && !strncasecmp(base + n - t, tag, t) &&
	       (n == t || base[n - t - 1] == '-' || base[n - t - 1] == '.');
}

/* Whether name is a split model's part after the first (its set counts once). */
static bool later_part(const char *name)
{
	size_t prefix;
	int k, total;
	return split_part(name, &prefix, &k, &total) && k > 1;
}

/* Whether the tag picks names[i] in this tier (see pick_file). */
static bool tag_matches(const char *name, const char *tag, bool tier1)
{
	return !later_part(name) && (tier1 ? ends_with_tag(name, tag) : holds_tag(name, tag));
}

/* The file the tag names: among those it ends (else those holding it anywhere), the
 * one with the shortest name (Qwen3-8B-Q4_K_M over Qwen3-8B-UD-Q4_K_M); n when none.
 * Two of that length, or two holding it only inside, are ambiguous: (size_t)-1, with
 * err_set listing them. */
static size_t pick_file(char *const *names, size_t n, const char *tag)
{
	size_t best = n, ties = 0, matches = 0;
	bool tier1 = false;
	for (size_t i = 0; i < n; i++)
		tier1 |= tag_matches(names[i], tag, true);
	for (size_t i = 0; i < n; i++) {
		if (!tag_matches(names[i], tag, tier1))
			continue;
		matches++;
		if (best == n || stem_len(names[i]) < stem_len(names[best]))
			best = i, ties = 0;
		else if (stem_len(names[i]) == stem_len(names[best]))
			ties++;
	}
	if (best == n || (tier1 ? !ties : matches == 1))
		return best;
	char list[512] = "";
	for (size_t i = 0; i < n; i++)
		if (tag_matches(names[i], tag, tier1))
			list_name(list, sizeof list, names[i]);
	err_set("the tag %s names more than one .gguf file (%s): give one of their names' "
		"ends as the tag",
		tag, list);
	return (size_t)-1;
}

int ggufname_pick(char *const *names, size_t n, const char *tag, const char ***out)
{
	size_t prefix, count = 1;
	int k, total;
	*out = NULL;
	size_t first = pick_file(names, n, tag);
	if (first == (size_t)-1)
		return -1;
	if (first == n) {
		char list[512] = "";
		for (size_t i = 0; i < n; i++)
			if (is_gguf(names[i]))
				list_name(list, sizeof list, names[i]);
		return err_set("no .gguf file for tag %s (there are: %s)", tag,
			       list[0] ? list : "none");
	}
	const char *f = names[first];
	bool split = split_part(f, &prefix, &k, &total);
	if (split)
		count = (size_t)total;
	const char **v = calloc(count, sizeof *v);
	if (!v)
		return err_set("out of memory");
	if (!split)
		v[0] = f;
	for (size_t i = 0; split && i < n; i++) {
		size_t p2;
		int k2, t2;
		if (split_part(names[i], &p2, &k2, &t2) && p2 == prefix && t2 == total &&
		    !strncmp(names[i], f, prefix))
			v[k2 - 1] = names[i];
	}
	for (size_t i = 0; i < count; i++)
		if (!v[i]) {
			free(v);
			return err_set("%.*s: part %zu of %d is missing", (int)prefix, f, i + 1,
				       total);
		}
	*out = v;
	return (int)count;
}

static int by_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The .gguf names under dir (and one level of folders), sorted. */
static char **list_gguf(const char *dir, const char *sub, char **v, size_t *n)
{
	char *path = sub ? fio_join(dir, sub) : strdup(dir);
	DIR *d = path ? opendir(path) : NULL;
	struct dirent *e;
	while (d && v && (e = readdir(d))) {
		if (e->d_name[0] == '.')
			continue;
		char *rel = sub ? fio_join(sub, e->d_name) : strdup(e->d_name);
		char *full = rel ? fio_join(dir, rel) : NULL;
		if (full && !sub && fio_is_dir(full)) {
			v = list_gguf(dir, rel, v, n);
		} else if (full && is_gguf(rel) && fio_is_file(full)) {
			char **g = realloc(v, (*n + 2) * sizeof *v);
			if (g) {
				g[(*n)++] = rel;
				rel = NULL;
			}
			v = g;
		}
		free(rel);
		free(full);
	}
	if (d)
		closedir(d);
	free(path);
	return v;
}

char *ggufname_in_dir(const char *dir, const char *tag)
{
	size_t n = 0;
	char **names = list_gguf(dir, NULL, calloc(1, sizeof(char *)), &n);
	const char **pick = NULL;
	char *path = NULL;
	if (!names) {
		err_set("out of memory");
		return NULL;
	}
	qsort(names, n, sizeof *names, by_str);
	if (ggufname_pick(names, n, tag, &pick) > 0)
		path = fio_join(dir, pick[0]);
	free(pick);
	for (size_t i = 0; i < n; i++)
		free(names[i]);
	free(names);
	return path;
}

/* llama.cpp's name of general.file_type ("Q4_K_M", "BF16"), or NULL. */
static const char *ggufname_file_type(long t)
{
	static const char *const names[] = {
		"F32",    "F16",    "Q4_0",    "Q4_1",   NULL,     NULL,      NULL,
		"Q8_0",   "Q5_0",   "Q5_1",    "Q2_K",   "Q3_K_S", "Q3_K_M",  "Q3_K_L",
		"Q4_K_S", "Q4_K_M", "Q5_K_S",  "Q5_K_M", "Q6_K",   "IQ2_XXS", "IQ2_XS",
		"Q2_K_S", "IQ3_XS", "IQ3_XXS", "IQ1_S",  "IQ4_NL", "IQ3_S",   "IQ3_M",
		"IQ2_S",  "IQ2_M",  "IQ4_XS",  "IQ1_M",  "BF16"};
	return t >= 0 && t < (long)(sizeof names / sizeof names[0]) ? names[t] : NULL;
}

/* path, once its links are resolved, lies inside root (resolved). */
static bool inside(const char *path, const char *root)
{
	char *rp = realpath(path, NULL), *rr = realpath(root, NULL);
	size_t n = rr ? strlen(rr) : 0;
	bool r = rp && rr && !strncmp(rp, rr, n) && (rp[n] == '/' || n == 1);
	free(rp);
	free(rr);
	return r;
}

/* Whether path is inside root/sub (blobs or manifests) where that folder is a link
 * (moved to another disk, as people do): a file may link within it, not out of it. */
static bool inside_linked(const char *path, const char *root, const char *sub)
{
	char *dir = fio_join(root, sub);
	struct stat st;
	bool r = dir && lstat(dir, &st) == 0 && S_ISLNK(st.st_mode) && inside(path, dir);
	free(dir);
	return r;
}

/* The manifest at root/rel, parsed. ollama's are ~1 KB: 64 KiB is plenty and bounds
 * the parse. NULL with err_set. */
static json_t *ollama_manifest(const char *spec, const char *root, const char *rel,
			       const char *mpath)
{
	static const struct jlim lim = {.max_depth = 16, .max_values = 4096};
	struct stat st;
	if (lstat(mpath, &st) != 0 && errno == ENOENT)
		return err_set("ollama:%s: no such model in %s (no %s; 'ollama pull %s' gets it)",
			       spec, root, rel, spec),
		       NULL;
	if (!inside(mpath, root) && !inside_linked(mpath, root, "manifests"))
		return err_set("%s: a link out of the ollama store (refused)", mpath), NULL;
	size_t len;
	char *text = jlim_read_file(mpath, 64 << 10, &lim, &len);
	if (!text)
		return NULL;
	json_error_t je;
	json_t *m = json_loadb(text, len, 0, &je);
	free(text);
	if (!m)
		err_set("%s: not valid JSON (line %d: %s)", mpath, je.line, je.text);
	return m;
}

/* The blob a model layer names: blobs/sha256-HEX inside the store, a regular file
 * of the layer's size. Its sha256 is not computed: ollama checked it when it pulled
 * the blob, and hashing gigabytes at every start would delay every start by seconds;
 * the size catches a truncated copy and the GGUF reader checks every offset. */
static char *ollama_blob(const char *spec, const char *root, const char *mpath, json_t *layer)
{
	const char *dg = json_string_value(json_object_get(layer, "digest"));
	json_t *size = json_object_get(layer, "size");
	bool ok = dg && !strncmp(dg, "sha256:", 7) && strlen(dg) == 7 + 64;
	for (size_t k = 7; ok && dg[k]; k++)
		ok = isxdigit((unsigned char)dg[k]) != 0;
	if (!ok)
		return err_set("%s: the model layer's digest is not sha256:HEX", mpath), NULL;
	if (!json_is_integer(size) || json_integer_value(size) < 0)
		return err_set("%s: the model layer's size is not a count of bytes", mpath), NULL;
	char b[128];
	snprintf(b, sizeof b, "blobs/sha256-%s", dg + 7);
	char *blob = fio_join(root, b);
	struct stat st;
	if (!blob)
		err_set("out of memory");
	else if (stat(blob, &st) != 0)
		err_set("ollama:%s: the manifest names %s, which is missing", spec, blob);
	else if (!S_ISREG(st.st_mode))
		err_set("ollama:%s: the manifest names %s, which is not a file", spec, blob);
	else if (!inside(blob, root) && !inside_linked(blob, root, "blobs"))
		err_set("%s: a link out of the ollama store (refused)", blob);
	else if (json_integer_value(size) != (json_int_t)st.st_size)
		err_set("%s: %lld bytes where the manifest says %lld (damaged or incomplete; "
			"'ollama pull %s' fetches it again)",
			blob, (long long)st.st_size, (long long)json_integer_value(size), spec);
	else
		return blob;
	free(blob);
	return NULL;
}

/* ollama's name [HOST/][NAMESPACE/]MODEL[:TAG] as the manifest's path under the
 * store, "manifests/HOST/NAMESPACE/MODEL/TAG" (registry.ollama.ai, library and latest
 * by default: "ollama pull hf.co/USER/REPO:Q4_K_M" files it under hf.co). 0, or -1
 * with err_set. */
static int ollama_rel(const char *spec, char *rel, size_t size)
{
	const char *name = spec;
	if (!strncmp(name, "https://", 8) || !strncmp(name, "http://", 7))
		name = strstr(name, "//") + 2;
	const char *slash = strrchr(name, '/'), *colon = strrchr(name, ':');
	if (colon && slash && colon < slash) /* HOST:PORT/..., no tag */
		colon = NULL;
	char tag[129] = "latest", *part[3] = {0};
	char buf[400];
	size_t nl = colon ? (size_t)(colon - name) : strlen(name);
	if (nl == 0 || nl >= sizeof buf ||
	    (colon && (!colon[1] || strlen(colon + 1) >= sizeof tag)))
		return err_set("ollama:%s: not [HOST/][NAMESPACE/]NAME[:TAG]", spec);
	if (colon)
		snprintf(tag, sizeof tag, "%s", colon + 1);
	memcpy(buf, name, nl);
	buf[nl] = 0;
	int n = 0;
	for (char *p = buf, *save = NULL; n <= 3 && (p = strtok_r(p, "/", &save)); p = NULL)
		part[n < 3 ? n : 2] = p, n++;
	if (n == 0 || n > 3 || buf[0] == '/' || buf[nl - 1] == '/' || strstr(buf, "//"))
		return err_set("ollama:%s: not [HOST/][NAMESPACE/]NAME[:TAG]", spec);
	const char *host = n == 3 ? part[0] : "registry.ollama.ai",
		   *ns = n >= 2 ? part[n - 2] : "library", *model = part[n - 1];
	for (const char *p = tag; *p; p++)
		if (!tag_char(*p))
			return err_set("ollama:%s: the tag has a character ollama does not use",
				       spec);
	for (const char *p = ns; *p; p++)
		if (!tag_char(*p) || *p == '.')
			return err_set(
				"ollama:%s: the namespace has a character ollama does not use",
				spec);
	for (const char *p = model; *p; p++)
		if (!tag_char(*p))
			return err_set("ollama:%s: the name has a character ollama does not use",
				       spec);
	for (const char *p = host; *p; p++)
		if (!tag_char(*p) && *p != ':')
			return err_set("ollama:%s: the host has a character ollama does not use",
				       spec);
	if (!strcmp(tag, "..") || !strcmp(tag, ".") || !strcmp(model, "..") ||
	    !strcmp(model, ".") || !strcmp(host, "..") || !strcmp(host, "."))
		return err_set("ollama:%s: not [HOST/][NAMESPACE/]NAME[:TAG]", spec);
	if (snprintf(rel, size, "manifests/%s/%s/%s/%s", host, ns, model, tag) >= (int)size)
		return err_set("ollama:%s: the name is too long", spec);
	return 0;
}

/* rel (manifests/HOST/NS/NAME/TAG) with each part that is missing under root as
 * written replaced by the one entry of its directory that equals it in any case:
 * ollama matches names so ("qwen3:Q4_K_M" finds a tag filed as q4_k_m, and the
 * reverse). A part with no such entry, or two, is left as it was. */
static void fold_case(const char *root, char *rel)
{
	char *dir = strdup(root);
	for (char *part = rel, *end; dir && part && *part; part = end ? end + 1 : NULL) {
		end = strchr(part, '/');
		if (end)
			*end = '\0';
		char *path = fio_join(dir, part);
		if (path && !fio_exists(path)) {
			DIR *d = opendir(dir);
			struct dirent *e;
			char match[256] = "";
			int n = 0;
			while (d && (e = readdir(d)))
				if (!strcasecmp(e->d_name, part) && n++ == 0)
					snprintf(match, sizeof match, "%s", e->d_name);
			if (n == 1 && strlen(match) == strlen(part)) {
				memcpy(part, match, strlen(part));
				free(path);
				path = fio_join(dir, part);
			}
			if (d)
				closedir(d);
		}
		free(dir);
		dir = path;
		if (end)
			*end = '/';
	}
	free(dir);
}

char *ggufname_ollama(const char *spec, const char *root)
{
	char rel[512];
	if (ollama_rel(spec, rel, sizeof rel))
		return NULL;
	fold_case(root, rel);
	char *mpath = fio_join(root, rel), *blob = NULL;
	json_t *m = mpath ? ollama_manifest(spec, root, rel, mpath) : NULL, *l;
	size_t i;
	json_array_foreach(json_object_get(m, "layers"), i, l)
	{
		const char *mt = json_string_value(json_object_get(l, "mediaType"));
		if (mt && !strcmp(mt, "application/vnd.ollama.image.model")) {
			blob = ollama_blob(spec, root, mpath, l);
			break;
		}
	}
	if (m && !blob && i == json_array_size(json_object_get(m, "layers")))
		err_set("%s: no layer of type application/vnd.ollama.image.model", mpath);
	json_decref(m);
	free(mpath);
	return blob;
}

/* A GGUF's general.architecture is qwen3; *type from general.file_type. */
static bool qwen3_gguf(const char *path, const char **type)
{
	struct eng_gguf *g = eng_gguf_open(path);
	const char *a;
	size_t n;
	int64_t ft;
	bool r = g && eng_gguf_str(g, "general.architecture", &a, &n) == 0 && n == 5 &&
		 !memcmp(a, "qwen3", 5);
	*type = g && eng_gguf_int(g, "general.file_type", &ft) == 0 ? ggufname_file_type((long)ft)
								    : NULL;
	eng_gguf_free(g);
	err_clear();
	return r;
}

static uint64_t size_of(const char *dir, const char *name)
{
	struct stat st;
	char *p = fio_join(dir, name);
	uint64_t r = p && stat(p, &st) == 0 ? (uint64_t)st.st_size : 0;
	free(p);
	return r;
}

/* The shortest end of names[i]'s stem (after a '-' or '.') that REPO:TAG resolves to
 * that file among names, malloc'd; NULL when none does. */
static char *tag_for(char *const *names, size_t n, size_t i)
{
	const char *name = names[i], *base = strrchr(name, '/');
	base = base ? base + 1 : name;
	size_t len = stem_len(base);
	for (size_t at = len; at-- > 0;) {
		if (base[at] != '-' && base[at] != '.')
			continue;
		char tag[65];
		size_t t = len - at - 1;
		bool ok = t > 0 && t < sizeof tag;
		for (size_t k = 0; ok && k < t; k++)
			ok = tag_char(base[at + 1 + k]);
		if (!ok)
			continue;
		snprintf(tag, sizeof tag, "%.*s", (int)t, base + at + 1);
		size_t got = pick_file(names, n, tag);
		if (got == i)
			return strdup(tag);
	}
	err_clear();
	return NULL;
}

int ggufname_files(const char *dir, struct ggufname_file **out, size_t *n)
{
	size_t nn = 0;
	char **names = list_gguf(dir, NULL, calloc(1, sizeof(char *)), &nn);
	*out = NULL;
	*n = 0;
	if (!names)
		return err_set("out of memory");
	qsort(names, nn, sizeof *names, by_str);
	int rc = 0;
	for (size_t i = 0; rc == 0 && i < nn; i++) {
		size_t prefix;
		int k, total;
		bool split = split_part(names[i], &prefix, &k, &total);
		const char *type;
		char *path = fio_join(dir, names[i]);
		if ((split && k != 1) || !path || !qwen3_gguf(path, &type)) {
			free(path);
			continue;
		}
		free(path);
		struct ggufname_file *g = realloc(*out, (*n + 1) * sizeof *g);
		if (!g) {
			rc = err_set("out of memory");
			break;
		}
		*out = g;
		struct ggufname_file *f = &g[(*n)++];
		f->name = strdup(names[i]);
		f->tag = tag_for(names, nn, i);
		f->type = type;
		f->bytes = 0;
		f->complete = 1;
		if (!f->name) {
			rc = err_set("out of memory");
			break;
		}
		/* the parts of a split file: the same prefix and count */
		int parts = 0;
		for (size_t j = 0; j < nn; j++) {
			size_t p2;
			int k2, t2;
			bool part = split && split_part(names[j], &p2, &k2, &t2) && p2 == prefix &&
				    t2 == total && !strncmp(names[j], names[i], prefix);
			if (j == i || part) {
				f->bytes += size_of(dir, names[j]);
				parts++;
			}
		}
		f->complete = !split || parts == total;
	}
	for (size_t i = 0; i < nn; i++)
		free(names[i]);
	free(names);
	return rc;
}

void ggufname_files_free(struct ggufname_file *f, size_t n)
{
	for (size_t i = 0; f && i < n; i++) {
		free(f[i].name);
		free(f[i].tag);
	}
	free(f);
}

bool ggufname_is_gguf(const char *path)
{
	size_t n = strlen(path);
	if (n >= 5 && !strcasecmp(path + n - 5, ".gguf"))
		return true;
	char magic[4] = {0};
	FILE *f = fopen(path, "rb");
	bool yes = f && fread(magic, 1, 4, f) == 4 && !memcmp(magic, "GGUF", 4);
	if (f)
		fclose(f);
	return yes;
}
