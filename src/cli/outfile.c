/* outfile.c — whether a command may replace the file it was told to write: never one of
 * the files its model is read from. */
#include "src/cli/outfile.h"
#include "src/base/err.h"
#include "src/base/fileio.h"

#include <dirent.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* 1 when the two describe one file. */
static bool same_file(const struct stat *a, const struct stat *b)
{
	return a->st_dev == b->st_dev && a->st_ino == b->st_ino;
}

/* Whether path (or the file a link there names) is out, as lstat'ed (lo) and, when
 * it names one, stat'ed (so). */
static bool is_out(const char *path, const struct stat *lo, const struct stat *so)
{
	struct stat pl, ps;
	return (lstat(path, &pl) == 0 && (same_file(&pl, lo) || (so && same_file(&pl, so)))) ||
	       (stat(path, &ps) == 0 && (same_file(&ps, lo) || (so && same_file(&ps, so))));
}

/* Whether the directory entry is one of a model's files: its .json and .safetensors
 * files, or, for a GGUF model, its file and every part of a split one (`stem`: the
 * name before "-00001-of-0000N.gguf", or the whole name). */
static bool model_file(const char *name, const char *gguf_stem)
{
	size_t n = strlen(name);
	if (gguf_stem)
		return !strncmp(name, gguf_stem, strlen(gguf_stem)) && n > 5 &&
		       !strcmp(name + n - 5, ".gguf");
	return (n > 5 && !strcmp(name + n - 5, ".json")) ||
	       (n > 12 && !strcmp(name + n - 12, ".safetensors"));
}

int cli_check_out(const char *out, const char *model, bool gguf)
{
	struct stat lo, so;
	if (lstat(out, &lo) != 0)
		return errno == ENOENT ? 0 : err_set("%s: %s", out, strerror(errno));
	if (!S_ISREG(lo.st_mode) && !S_ISLNK(lo.st_mode))
		return err_set("%s: not a regular file (refused: only a file is replaced)", out);
	bool sok = stat(out, &so) == 0;
	char *dir = strdup(model), *stem = NULL;
	char *slash = gguf && dir ? strrchr(dir, '/') : NULL;
	if (gguf && dir && !slash)
		strcpy(dir, ".");
	else if (slash)
		slash[slash == dir] = 0; /* "/x.gguf": "/" */
	if (gguf && dir) {               /* NAME-00001-of-00003.gguf: every NAME-*.gguf */
		const char *base = model + strlen(model);
		while (base > model && base[-1] != '/')
			base--;
		stem = strdup(base);
		char *part = stem ? strstr(stem, "-00001-of-") : NULL;
		if (part)
			*part = 0;
	}
	DIR *d = dir ? opendir(dir) : NULL;
	struct dirent *e;
	int rc = 0;
	/* the GGUF itself, whatever its name says (an ollama blob is sha256-...) */
	if (gguf && is_out(model, &lo, sok ? &so : NULL))
		rc = err_set(
			"%s: is the model's file (refused: writing it would destroy the model)",
			out);
	while (rc == 0 && d && (e = readdir(d))) {
		if (!model_file(e->d_name, stem))
			continue;
		char *p = fio_join(dir, e->d_name);
		if (p && is_out(p, &lo, sok ? &so : NULL))
			rc = err_set("%s: is the model's %s (refused: writing it would destroy the "
				     "model)",
				     out, e->d_name);
		free(p);
	}
	if (d)
		closedir(d);
	free(dir);
	free(stem);
	return rc;
}
