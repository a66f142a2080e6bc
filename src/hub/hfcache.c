/* hfcache.c — paths, refs, snapshot links and locks of the Hugging Face hub cache,
 * laid out exactly as huggingface_hub does so both tools share one copy of a model. */
#include "src/hub/hfcache.h"
#include "src/base/err.h"
#include "src/base/fileio.h"
#include "src/base/jsonlimit.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

static char *cat(const char *a, const char *b, const char *c)
{
	size_t n = strlen(a) + strlen(b) + strlen(c) + 1;
	char *s = malloc(n);
	if (s)
		snprintf(s, n, "%s%s%s", a, b, c);
	else
		err_set("out of memory");
	return s;
}

/* Hub names: letters, digits, '-', '_', '.', not starting or ending with '-' or '.',
 * no "--" (the cache folder's separator) or "..", at most 96 characters. */
static int valid_part(const char *s, size_t n)
{
	if (n == 0 || n > 96 || s[0] == '-' || s[0] == '.' || s[n - 1] == '-' || s[n - 1] == '.')
		return 0;
	for (size_t i = 0; i < n; i++) {
		char c = s[i];
		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
		      c == '-' || c == '_' || c == '.'))
			return 0;
		if (i > 0 && (c == '-' || c == '.') && s[i - 1] == c)
			return 0;
	}
	return 1;
}

/* Revisions are branch or tag names or commits; they become paths under refs/. */
static int valid_rev(const char *s)
{
	size_t n = strlen(s);
	if (n == 0 || n > 200 || s[0] == '/' || s[n - 1] == '/' || s[0] == '.' || strstr(s, "..") ||
	    strstr(s, "//") || strstr(s, "/."))
		return 0;
	for (const char *p = s; *p; p++)
		if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
		      (*p >= '0' && *p <= '9') || strchr("-_./", *p)))
			return 0;
	return 1;
}

int hfc_parse_spec(const char *spec, char **repo_id, char **rev)
{
	const char *at = strchr(spec, '@');
	size_t idlen = at ? (size_t)(at - spec) : strlen(spec);
	const char *slash = memchr(spec, '/', idlen);
	/* Paths (./x, /x, a/b/c, ~/x) are not repo ids: exactly one slash inside. */
	if (!slash || slash == spec || memchr(slash + 1, '/', idlen - (size_t)(slash - spec) - 1) ||
	    spec[0] == '.' || spec[0] == '~')
		return 0;
	if (!valid_part(spec, (size_t)(slash - spec)) ||
	    !valid_part(slash + 1, idlen - (size_t)(slash - spec) - 1)) {
		err_set("%s: not a directory, and not a valid Hugging Face repo id (Org/Name)",
			spec);
		return -1;
	}
	const char *r = at ? at + 1 : "main";
	if (!valid_rev(r)) {
		err_set("%s: '%s' is not a valid revision", spec, r);
		return -1;
	}
	*repo_id = strndup(spec, idlen);
	*rev = strdup(r);
	if (!*repo_id || !*rev) {
		free(*repo_id);
		free(*rev);
		err_set("out of memory");
		return -1;
	}
	/* 40 hex digits in capitals are the commit too (git and the Hub read them so),
	 * pinned as hfc_is_commit's lowercase form is, not taken for a branch's name */
	bool hex = strlen(*rev) == 40;
	for (const char *p = *rev; hex && *p; p++)
		hex = isxdigit((unsigned char)*p);
	for (char *p = *rev; hex && *p; p++)
		*p = (char)tolower((unsigned char)*p);
	return 1;
}

char *hfc_root(const struct hub_env *env)
{
	const char *v;
	if ((v = env->hub_cache) && *v)
		return strdup(v);
	if ((v = env->hf_home) && *v)
		return cat(v, "/hub", "");
	if ((v = env->xdg_cache_home) && *v)
		return cat(v, "/huggingface/hub", "");
	if ((v = env->home) && *v)
		return cat(v, "/.cache/huggingface/hub", "");
	err_set("cannot find the Hugging Face cache: set HF_HUB_CACHE or HOME");
	return NULL;
}

char *hfc_repo_dir(const char *root, const char *repo_id)
{
	const char *slash = strchr(repo_id, '/');
	size_t n = strlen(root) + strlen(repo_id) + 16;
	char *s = malloc(n);
	if (!s || !slash) {
		free(s);
		err_set("%s: not a repo id", repo_id);
		return NULL;
	}
	snprintf(s, n, "%s/models--%.*s--%s", root, (int)(slash - repo_id), repo_id, slash + 1);
	return s;
}

bool hfc_is_commit(const char *s)
{
	if (strlen(s) != 40)
		return false;
	for (; *s; s++)
		if (!((*s >= '0' && *s <= '9') || (*s >= 'a' && *s <= 'f')))
			return false;
	return true;
}

char *hfc_read_ref(const char *repo_dir, const char *rev)
{
	if (hfc_is_commit(rev))
		return strdup(rev);
	char *path = cat(repo_dir, "/refs/", rev);
	size_t len;
	char *s = path ? fio_read_file(path, 256, &len) : NULL;
	free(path);
	err_clear();
	if (!s)
		return NULL;
	while (len > 0 && (s[len - 1] == '\n' || s[len - 1] == ' ' || s[len - 1] == '\r'))
		s[--len] = '\0';
	if (!hfc_is_commit(s)) {
		free(s);
		return NULL;
	}
	return s;
}

/* The folder of repo_dir/top[/commit]/file opened (made when missing), no link
 * among the folders below repo_dir followed: in a cache others may write, a link
 * planted at snapshots/COMMIT would have the files named for it made elsewhere. *name
 * is the file's last component. A descriptor, or -1 (err_set). */
static int open_below(const char *repo_dir, const char *top, const char *commit, const char *file,
		      const char **name)
{
	const char *slash = strrchr(file, '/');
	*name = slash ? slash + 1 : file;
	char rel[1024];
	int n = snprintf(rel, sizeof rel, "%s%s%s%s%.*s", top, commit ? "/" : "",
			 commit ? commit : "", slash ? "/" : "", slash ? (int)(slash - file) : 0,
			 file);
	if (n < 0 || (size_t)n >= sizeof rel)
		return err_set("%s: name too long", file);
	return fio_mkdirs_below(repo_dir, rel, 0755);
}

int hfc_write_ref(const char *repo_dir, const char *rev, const char *commit)
{
	if (!strcmp(rev, commit))
		return 0;
	const char *name;
	int dir = open_below(repo_dir, "refs", NULL, rev, &name);
	if (dir < 0)
		return -1;
	close(dir);
	char *path = cat(repo_dir, "/refs/", rev);
	int rc = !path || fio_write_atomic(path, commit, strlen(commit), 0644, FIO_NO_LINKS);
	free(path);
	return rc ? -1 : 0;
}

char *hfc_snapshot(const char *repo_dir, const char *commit)
{
	if (!hfc_is_commit(commit)) { /* a path made of it stays inside the cache */
		err_set("%s: '%.64s' is not a commit", repo_dir, commit);
		return NULL;
	}
	return cat(repo_dir, "/snapshots/", commit);
}

int hfc_link(const char *repo_dir, const char *commit, const char *file, const char *etag)
{
	char target[512] = "../../";
	/* One "../" more for each folder in the file's name. */
	for (const char *p = file; *p; p++)
		if (*p == '/' && strlen(target) + 3 < sizeof target)
			strcat(target, "../");
	if (strlen(target) + strlen(etag) + 8 >= sizeof target)
		return err_set("%s: name too long", file);
	strcat(target, "blobs/");
	strcat(target, etag);
	char *snap = hfc_snapshot(repo_dir, commit); /* (a commit, checked) */
	const char *name;
	int dir = snap ? open_below(repo_dir, "snapshots", commit, file, &name) : -1;
	free(snap);
	if (dir < 0)
		return -1;
	/* the link is made aside, then renamed over whatever has the name */
	char tmp[256];
	snprintf(tmp, sizeof tmp, "%.200s.tmp.%ld", name, (long)getpid());
	unlinkat(dir, tmp, 0);
	int rc = 0;
	if (symlinkat(target, dir, tmp) || renameat(dir, tmp, dir, name)) {
		rc = err_set("%s/snapshots/%s/%s: cannot link to the blob: %s", repo_dir, commit,
			     file, strerror(errno));
		unlinkat(dir, tmp, 0);
	}
	close(dir);
	return rc;
}

static char *absent_path(const char *repo_dir, const char *commit, const char *file)
{
	size_t n = strlen(repo_dir) + strlen(commit) + strlen(file) + 16;
	char *s = hfc_is_commit(commit) ? malloc(n) : NULL;
	if (s)
		snprintf(s, n, "%s/.no_exist/%s/%s", repo_dir, commit, file);
	return s;
}

bool hfc_optional_settled(const char *repo_dir, const char *commit, const char *file)
{
	char *snap = hfc_snapshot(repo_dir, commit), *absent = absent_path(repo_dir, commit, file);
	bool settled = (snap && hfc_has_file(snap, file)) || (absent && fio_exists(absent));
	free(snap);
	free(absent);
	err_clear();
	return settled;
}

void hfc_mark_absent(const char *repo_dir, const char *commit, const char *file)
{
	const char *name;
	int dir =
		hfc_is_commit(commit) ? open_below(repo_dir, ".no_exist", commit, file, &name) : -1;
	if (dir >= 0) {
		int fd = openat(dir, name, O_WRONLY | O_CREAT | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC,
				0644);
		if (fd >= 0)
			close(fd);
		close(dir);
	}
	err_clear();
}

int hfc_lock(const char *root, const char *repo_id, const char *etag, const char *label)
{
	char *repo = hfc_repo_dir("", repo_id); /* "/models--Org--Name" */
	char *dir = repo ? cat(root, "/.locks", repo) : NULL;
	char *path = dir ? cat(dir, "/", etag) : NULL;
	char *lock = path ? cat(path, ".lock", "") : NULL;
	char *rel = repo ? cat(".locks", repo, "") : NULL;
	int fd = -1;
	/* .locks and its folder as the repository's own folders are: a link planted
	 * there is refused, or the locks would be made wherever it leads */
	int dfd = lock && rel ? fio_mkdirs_below(root, rel, 0755) : -1;
	free(rel);
	if (dfd >= 0) {
		char name[80];
		snprintf(name, sizeof name, "%s.lock", etag);
		fd = openat(dfd, name, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0644);
		int e = errno;
		close(dfd);
		errno = e;
		if (fd < 0) {
			err_set("%s: cannot create: %s", lock,
				errno == ELOOP ? "it is a symbolic link (refused)"
					       : strerror(errno));
		} else if (flock(fd, LOCK_EX | LOCK_NB) && errno == EWOULDBLOCK) {
			/* another download of the same file: say so, then wait for it */
			fprintf(stderr, "%s: waiting for another download of it to finish (%s)\n",
				label, lock);
			if (flock(fd, LOCK_EX)) {
				err_set("%s: cannot lock: %s", lock, strerror(errno));
				close(fd);
				fd = -1;
			}
		}
	}
	free(lock);
	free(path);
	free(dir);
	free(repo);
	return fd;
}

void hfc_unlock(int fd)
{
	if (fd >= 0)
		close(fd);
}

bool hfc_valid_file(const char *name)
{
	size_t n = strlen(name);
	int slashes = 0;
	if (n == 0 || n > 200 || name[0] == '/' || name[0] == '.' || strstr(name, "..") ||
	    strstr(name, "/.") || name[n - 1] == '/')
		return false;
	for (const char *p = name; *p; p++) {
		if (*p == '/')
			slashes++;
		else if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
			   (*p >= '0' && *p <= '9') || strchr("-_.+", *p)))
			return false;
	}
	return slashes <= 1;
}

/* ---- what a snapshot holds ---- */

#define MAX_SHARDS 4096

bool hfc_has_file(const char *dir, const char *name)
{
	char *p = fio_join(dir, name);
	bool r = p && fio_is_file(p);
	free(p);
	return r;
}

char **hfc_index_shards(const char *index_path, size_t *count)
{
	/* the limits the engine reads the index with */
	static const struct jlim lim = {.max_depth = 32, .max_values = 1 << 19};
	json_error_t je;
	size_t len;
	char *text = jlim_read_file(index_path, 64u << 20, &lim, &len);
	if (!text)
		return NULL;
	json_t *root = json_loadb(text, len, 0, &je);
	json_t *map = root ? json_object_get(root, "weight_map") : NULL;
	char **names = NULL;
	size_t n = 0;
	*count = 0;
	free(text);
	if (!root) {
		err_set("%s: not valid JSON: %s (line %d)", index_path, je.text, je.line);
		return NULL;
	}
	if (!json_is_object(map) || json_object_size(map) == 0) {
		err_set("%s: weight_map: missing or empty", index_path);
		goto fail;
	}
	const char *key;
	json_t *v;
	json_object_foreach(map, key, v)
	{
		const char *f = json_string_value(v);
		size_t fl = f ? strlen(f) : 0;
		if (!f || !hfc_valid_file(f) || strchr(f, '/') || fl < 13 ||
		    strcmp(f + fl - 12, ".safetensors")) {
			err_set("%s: weight_map.%s: not a safetensors file name", index_path, key);
			goto fail;
		}
		size_t i = 0;
		while (i < n && strcmp(names[i], f))
			i++;
		if (i < n)
			continue;
		if (n == MAX_SHARDS) {
			err_set("%s: weight_map: more than %d shards", index_path, MAX_SHARDS);
			goto fail;
		}
		char **grown = realloc(names, (n + 1) * sizeof *names);
		if (!grown || !(grown[n] = strdup(f))) {
			names = grown ? grown : names;
			err_set("out of memory");
			goto fail;
		}
		names = grown;
		n++;
	}
	json_decref(root);
	*count = n;
	return names ? names : calloc(1, sizeof *names);
fail:
	for (size_t i = 0; i < n; i++)
		free(names[i]);
	free(names);
	json_decref(root);
	return NULL;
}

void hfc_free_names(char **names, size_t n)
{
	for (size_t i = 0; names && i < n; i++)
		free(names[i]);
	free(names);
}

char *hfc_model_missing(const char *dir, bool weights)
{
	static const char *const needed[] = {"config.json", "tokenizer.json"};
	for (size_t i = weights ? 0 : 1; i < 2; i++) /* the tokenizer alone: its file */
		if (!hfc_has_file(dir, needed[i]))
			return strdup(needed[i]);
	if (!weights || hfc_has_file(dir, "model.safetensors"))
		return NULL;
	char *index = fio_join(dir, "model.safetensors.index.json");
	size_t n = 0;
	char **shards = index && fio_is_file(index) ? hfc_index_shards(index, &n) : NULL;
	char *missing = shards ? NULL : strdup("model.safetensors");
	for (size_t i = 0; shards && !missing && i < n; i++)
		if (!hfc_has_file(dir, shards[i]))
			missing = strdup(shards[i]);
	hfc_free_names(shards, n);
	free(index);
	err_clear();
	return missing;
}

bool hfc_model_complete(const char *dir)
{
	char *missing = hfc_model_missing(dir, true);
	free(missing);
	return !missing;
}

char *hfc_read_config(const char *snap, size_t *len)
{
	static const struct jlim lim = {.max_depth = 32, .max_values = 1 << 16};
	char *path = fio_join(snap, "config.json");
	char *text = path ? jlim_read_file(path, 16u << 20, &lim, len) : NULL;
	free(path);
	return text;
}
