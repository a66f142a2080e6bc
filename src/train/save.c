/* save.c — writing a run's checkpoint and reading its weights and moments back. */
#include "src/train/save.h"
#include "src/base/err.h"
#include "src/base/fileio.h"
#include "src/train/checkpoint.h"
#include "src/train/dataset.h"
#include "src/train/modeldir.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define MASTER_STATE "train-state/master.safetensors"
#define OPTIMIZER    "train-state/optimizer.safetensors"

/* The trainer's tensors as safetensors entries: the weights, or for the moments two
 * per parameter, NAME.exp_avg and NAME.exp_avg_sq (torch's AdamW state names). */
static struct ckpt_tensor *tensors(struct eng_trainer *t, bool moments, char ***names, int *n)
{
	int np = eng_trainer_nparams(t), k = 0;
	struct ckpt_tensor *v = calloc((size_t)np * 2, sizeof *v);
	*names = calloc((size_t)np * 2, sizeof **names);
	if (!v || !*names) {
		free(v);
		free(*names);
		err_set("out of memory");
		return NULL;
	}
	for (int i = 0; i < np; i++) {
		const struct eng_param *p = eng_trainer_param(t, i);
		for (int j = 0; j < (moments ? 2 : 1); j++) {
			const char *suffix = moments ? (j ? ".exp_avg_sq" : ".exp_avg") : "";
			size_t len = strlen(p->name) + strlen(suffix) + 1;
			char *name = malloc(len);
			if (!name) {
				for (int q = 0; q < k; q++)
					free((*names)[q]);
				free(*names);
				free(v);
				err_set("out of memory");
				return NULL;
			}
			snprintf(name, len, "%s%s", p->name, suffix);
			(*names)[k] = name;
			v[k] = (struct ckpt_tensor){name, p->ndim, {p->shape[0], p->shape[1]},
						    moments ? (j ? p->v : p->m) : p->w};
			k++;
		}
	}
	*n = k;
	return v;
}

static void free_tensors(struct ckpt_tensor *v, char **names, int n)
{
	for (int i = 0; i < n; i++)
		free(names[i]);
	free(names);
	free(v);
}

/* One safetensors file of the checkpoint. */
static int put_st(struct ckpt_txn *x, const char *dir, const char *rel, struct eng_trainer *t,
		  bool moments, enum ckpt_dtype dt, const char *step)
{
	char **names;
	int n, rc = -1;
	struct ckpt_tensor *v = tensors(t, moments, &names, &n);
	if (!v)
		return -1;
	const char *meta[] = {"format", "pt", "step", step};
	char label[4200];
	snprintf(label, sizeof label, "%s/%s", dir, rel);
	int fd = ckpt_create(x, rel);
	if (fd >= 0) {
		rc = ckpt_st_write(fd, label, v, n, dt, meta, 2);
		if (ckpt_close(x, fd))
			rc = -1;
	}
	free_tensors(v, names, n);
	return rc;
}

/* The small files: config.json (its dtype the saved one), the run's state and log,
 * the curves, and the files given. */
static int put_texts(struct ckpt_txn *x, struct eng_trainer *t, const struct tstate *st,
		     const struct tlog *log, const struct save_file *files, int n_files)
{
	struct eng_config c = *eng_trainer_config(t);
	c.dtype = strcmp(st->o.save_dtype, "bf16") ? ENG_F32 : ENG_BF16;
	char *config = mdir_config_json(&c), *state = NULL, *svg = tlog_svg(log);
	if (config) { /* the state keeps the config's checksum (a resume checks it) */
		struct tstate s = *st;
		size_t len = strlen(config);
		dset_hash((const char *const *)&config, &len, 1, s.config_sha256);
		state = tstate_json(&s);
	}
	int rc = config && state && svg ? 0 : -1;
	if (rc == 0)
		rc = ckpt_put(x, "config.json", config, strlen(config)) ||
		     ckpt_put(x, "train-state/state.json", state, strlen(state)) ||
		     ckpt_put(x, "train-state/log.jsonl", log->text.p ? log->text.p : "",
			      log->text.n) ||
		     ckpt_put(x, "loss.svg", svg, strlen(svg));
	for (int i = 0; rc == 0 && i < n_files; i++)
		rc = ckpt_put(x, files[i].name, files[i].data, files[i].len);
	free(config);
	free(state);
	free(svg);
	return rc ? -1 : 0;
}

int save_check_targets(const char *dir, const struct save_file *files, int n_files)
{
	static const char *const fixed[] = {
		"config.json",           "model.safetensors", "loss.svg", "train-state/state.json",
		"train-state/log.jsonl", MASTER_STATE,        OPTIMIZER};
	int n_fixed = (int)(sizeof fixed / sizeof *fixed), rc = 0;
	for (int i = 0; rc == 0 && i < n_fixed + n_files; i++) {
		const char *name = i < n_fixed ? fixed[i] : files[i - n_fixed].name;
		char *path = fio_join(dir, name);
		rc = path ? ckpt_check_target(path) : err_set("out of memory");
		free(path);
	}
	return rc;
}

int save_checkpoint(const char *dir, struct eng_trainer *t, const struct tstate *st,
		    const struct tlog *log, const struct save_file *files, int n_files)
{
	if (eng_trainer_download(t))
		return -1;
	char step[32];
	snprintf(step, sizeof step, "%lld", (long long)st->step);
	bool bf16 = !strcmp(st->o.save_dtype, "bf16");
	struct ckpt_txn *x = ckpt_begin(dir);
	if (!x)
		return -1;
	if (put_st(x, dir, "model.safetensors", t, false, bf16 ? CKPT_BF16 : CKPT_F32, step) ||
	    (bf16 && put_st(x, dir, MASTER_STATE, t, false, CKPT_F32, step)) ||
	    put_st(x, dir, OPTIMIZER, t, true, CKPT_F32, step) ||
	    put_texts(x, t, st, log, files, n_files)) {
		ckpt_abort(x);
		return -1;
	}
	if (ckpt_commit(x))
		return -1;
	if (!bf16) { /* a master copy from an earlier bf16 save is stale now */
		char *m = fio_join(dir, MASTER_STATE);
		if (m)
			unlink(m);
		free(m);
	}
	return 0;
}

/* Whether n values read from tensor `name` of path are ones a run saves: finite (a
 * step that made any other is never saved), and not below 0 for a second moment. A
 * damaged file would otherwise poison the next step's update, which a finite loss lets
 * be saved over the checkpoint. 0, or -1 with err_set. */
static int check_values(const char *path, const char *name, const float *x, int64_t n,
			bool nonneg)
{
	for (int64_t i = 0; i < n; i++)
		if (!isfinite(x[i]) || (nonneg && x[i] < 0))
			return err_set("%s: tensor %s: element %lld is %g, which no run saves: the "
				       "checkpoint is damaged",
				       path, name, (long long)i, (double)x[i]);
	return 0;
}

/* Tensor `name` of the open file f (path) into dst, of p's shape, and checked. */
static int read_tensor(struct ckpt_st *f, const char *path, const char *name,
		       const struct eng_param *p, float *dst, bool nonneg)
{
	int64_t n = p->shape[0] * (p->ndim == 2 ? p->shape[1] : 1);
	if (ckpt_st_read(f, name, p->ndim, p->shape, dst))
		return -1;
	return check_values(path, name, dst, n, nonneg);
}

/* Reads the weights (or the moments) of every parameter from path, which must be of
 * `step`. */
static int read_st(const char *path, struct eng_trainer *t, bool moments, int64_t step)
{
	struct ckpt_st *f = ckpt_st_open(path);
	if (!f)
		return -1;
	const char *s = ckpt_st_meta(f, "step");
	int rc = 0;
	if (!s || strtoll(s, NULL, 10) != step || strspn(s, "0123456789") != strlen(s))
		rc = err_set("%s: not of step %lld, as train-state/state.json is (%s%s): the "
			     "checkpoint is inconsistent",
			     path, (long long)step, s ? "step " : "no step", s ? s : "");
	for (int i = 0; rc == 0 && i < eng_trainer_nparams(t); i++) {
		struct eng_param *p = eng_trainer_param(t, i);
		char name[512];
		if (!moments) {
			rc = read_tensor(f, path, p->name, p, p->w, false);
			continue;
		}
		snprintf(name, sizeof name, "%s.exp_avg", p->name);
		rc = read_tensor(f, path, name, p, p->m, false);
		snprintf(name, sizeof name, "%s.exp_avg_sq", p->name);
		if (rc == 0)
			rc = read_tensor(f, path, name, p, p->v, true);
	}
	ckpt_st_close(f);
	return rc;
}

int save_restore(const char *dir, struct eng_trainer *t, const struct tstate *st)
{
	char *w = fio_join(dir, st->master_in_state ? MASTER_STATE : "model.safetensors");
	char *m = fio_join(dir, OPTIMIZER);
	int rc = w && m ? 0 : err_set("out of memory");
	if (rc == 0)
		rc = read_st(w, t, false, st->step) || read_st(m, t, true, st->step) ||
				     eng_trainer_upload(t)
			     ? -1
			     : 0;
	free(w);
	free(m);
	return rc;
}
