/* save.c — writing a run's checkpoint and reading its weights and moments back. */
#include "src/train/save.h"
#include "src/base/err.h"
#include "src/base/fileio.h"
#include "src/train/checkpoint.h"
#include "src/train/dataset.h"
#include "src/train/modeldir.h"
#include "src/train/peft.h"

#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define MASTER_STATE "train-state/master.safetensors"
#define OPTIMIZER    "train-state/optimizer.safetensors"
/* LoRA: the adapters as PEFT writes them, which PeftModel.from_pretrained reads from
 * train-state/; also the adapters' master weights */
#define ADAPTER        "train-state/adapter_model.safetensors"
#define ADAPTER_CONFIG "train-state/adapter_config.json"

/* Which of the trainer's tensors a file holds. */
enum kind {
	MODEL,   /* the model's own tensors, LoRA's adapters merged into theirs */
	TRAINED, /* the trained ones' weights (all of them, or LoRA's adapters) */
	MOMENTS  /* the trained ones' moments */
};

/* ckpt_tensor.rows of a model's tensor: its rows with the adapter merged. */
struct merge {
	struct eng_trainer *t;
	int i;
};

static void merged_rows(void *ctx, int64_t r0, int64_t r1, float *out)
{
	const struct merge *m = ctx;
	eng_trainer_merged_rows(m->t, m->i, r0, r1, out);
}

/* A file's tensors as safetensors entries, with the names and merge contexts they
 * point to (free_tensors). */
struct entries {
	struct ckpt_tensor *v;
	char **names;
	struct merge *merges;
	int n;
};

static void free_tensors(struct entries *e)
{
	for (int i = 0; i < e->n; i++)
		free(e->names[i]);
	free(e->names);
	free(e->merges);
	free(e->v);
}

static bool in_file(const struct eng_param *p, enum kind kind)
{
	return kind == MODEL ? p->adapts < 0 : !p->frozen;
}

/* The trainer's tensors of one kind: the moments two per parameter, NAME.exp_avg and
 * NAME.exp_avg_sq (torch's AdamW state names). 0 or -1 (err_set). */
static int tensors(struct eng_trainer *t, enum kind kind, struct entries *e)
{
	int np = eng_trainer_nparams(t);
	bool moments = kind == MOMENTS;
	*e = (struct entries){calloc((size_t)np * 2, sizeof *e->v),
			      calloc((size_t)np * 2, sizeof *e->names),
			      calloc((size_t)np, sizeof *e->merges), 0};
	if (!e->v || !e->names || !e->merges) {
		free_tensors(e);
		return err_set("out of memory");
	}
	for (int i = 0; i < np; i++) {
		const struct eng_param *p = eng_trainer_param(t, i);
		e->merges[i] = (struct merge){t, i};
		for (int j = 0; in_file(p, kind) && j < (moments ? 2 : 1); j++) {
			const char *suffix = moments ? (j ? ".exp_avg_sq" : ".exp_avg") : "";
			size_t len = strlen(p->name) + strlen(suffix) + 1;
			char *name = malloc(len);
			if (!name) {
				free_tensors(e);
				return err_set("out of memory");
			}
			snprintf(name, len, "%s%s", p->name, suffix);
			e->names[e->n] = name;
			e->v[e->n++] = (struct ckpt_tensor){
				.name = name,
				.ndim = p->ndim,
				.shape = {p->shape[0], p->shape[1]},
				.data = moments ? (j ? p->v : p->m) : p->w,
				/* a frozen matrix an adapter changes: merged as it is written */
				.rows = kind == MODEL && p->frozen && p->ndim == 2 ? merged_rows
										   : NULL,
				.ctx = &e->merges[i]};
			if (e->v[e->n - 1].rows)
				e->v[e->n - 1].data = NULL;
		}
	}
	return 0;
}

/* One safetensors file of the checkpoint. */
static int put_st(struct ckpt_txn *x, const char *dir, const char *rel, struct eng_trainer *t,
		  enum kind kind, enum ckpt_dtype dt, const char *step)
{
	struct entries e;
	int rc = -1;
	if (tensors(t, kind, &e))
		return -1;
	const char *meta[] = {"format", "pt", "step", step};
	char label[4200];
	snprintf(label, sizeof label, "%s/%s", dir, rel);
	int fd = ckpt_create(x, rel);
	if (fd >= 0) {
		rc = ckpt_st_write(fd, label, e.v, e.n, dt, meta, 2);
		if (ckpt_close(x, fd))
			rc = -1;
	}
	free_tensors(&e);
	return rc;
}

/* PEFT's adapter_config.json of a LoRA run: what PeftModel.from_pretrained needs to
 * put the adapters on the base model (named as --init named it). */
static int put_adapter_config(struct ckpt_txn *x, const struct tstate_opts *o)
{
	unsigned mask = tstate_lora_targets(o);
	json_t *targets = json_array();
	for (int k = 0; targets && k < ENG_LORA_TARGETS; k++)
		if (mask >> k & 1)
			json_array_append_new(targets, json_string(eng_lora_target_name(
							       (enum eng_lora_target)k)));
	json_t *root = json_pack(
		"{s:s, s:s, s:s?, s:i, s:f, s:o, s:f, s:s, s:b, s:b, s:b, s:b, s:n}", "peft_type",
		"LORA", "task_type", "CAUSAL_LM", "base_model_name_or_path", o->init, "r", o->lora,
		"lora_alpha", o->lora_alpha > 0 ? o->lora_alpha : (double)o->lora, "target_modules",
		targets, "lora_dropout", 0.0, "bias", "none", "fan_in_fan_out", 0, "inference_mode",
		1, "use_rslora", 0, "use_dora", 0, "modules_to_save");
	char *text = root ? json_dumps(root, JSON_INDENT(2) | JSON_REAL_PRECISION(17)) : NULL;
	json_decref(root);
	int rc = text ? ckpt_put(x, ADAPTER_CONFIG, text, strlen(text)) : err_set("out of memory");
	free(text);
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
		"train-state/log.jsonl", MASTER_STATE,        OPTIMIZER,  ADAPTER,
		ADAPTER_CONFIG};
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
	bool bf16 = !strcmp(st->o.save_dtype, "bf16"), lora = st->o.lora > 0;
	struct ckpt_txn *x = ckpt_begin(dir);
	if (!x)
		return -1;
	/* the trained weights in F32 beside a BF16 model: LoRA's adapters always, the
	   masters of a run that trains every weight */
	const char *trained = lora ? ADAPTER : bf16 ? MASTER_STATE : NULL;
	if (put_st(x, dir, "model.safetensors", t, MODEL, bf16 ? CKPT_BF16 : CKPT_F32, step) ||
	    (trained && put_st(x, dir, trained, t, TRAINED, CKPT_F32, step)) ||
	    (lora && put_adapter_config(x, &st->o)) ||
	    put_st(x, dir, OPTIMIZER, t, MOMENTS, CKPT_F32, step) ||
	    put_texts(x, t, st, log, files, n_files)) {
		ckpt_abort(x);
		return -1;
	}
	if (ckpt_commit(x))
		return -1;
	if (lora || !bf16) { /* a master copy from an earlier bf16 save is stale now */
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

/* Reads the weights (or the moments) of every trained parameter from path, which must
 * be of `step`. */
static int read_st(const char *path, struct eng_trainer *t, bool moments, int64_t step)
{
	struct ckpt_st *f = ckpt_st_open(path);
	if (!f)
		return -1;
	const char *s = ckpt_st_meta(f, "step");
	int rc = 0;
	int want = 0;
	for (int i = 0; i < eng_trainer_nparams(t); i++)
		want += eng_trainer_param(t, i)->frozen ? 0 : moments ? 2 : 1;
	if (!s || strtoll(s, NULL, 10) != step || strspn(s, "0123456789") != strlen(s))
		rc = err_set("%s: not of step %lld, as train-state/state.json is (%s%s): the "
			     "checkpoint is inconsistent",
			     path, (long long)step, s ? "step " : "no step", s ? s : "");
	else if (ckpt_st_count(f) != want) /* another run's, of more matrices */
		rc = err_set("%s: %d tensors, where the run has %d: the checkpoint is "
			     "inconsistent",
			     path, ckpt_st_count(f), want);
	for (int i = 0; rc == 0 && i < eng_trainer_nparams(t); i++) {
		struct eng_param *p = eng_trainer_param(t, i);
		char name[512];
		if (p->frozen)
			continue;
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
	char *w = fio_join(dir, st->o.lora            ? ADAPTER
				: st->master_in_state ? MASTER_STATE
						      : "model.safetensors");
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

int save_lora_base(struct eng_trainer *t, struct tstate *st, bool resume)
{
	char digest[24];
	snprintf(digest, sizeof digest, "%016llx",
		 (unsigned long long)eng_trainer_frozen_digest(t));
	if (resume && strcmp(digest, st->base_digest))
		return err_set(
			"%s (--init): not the weights this LoRA run began from (their digest "
			"is %s, the run's %s): a LoRA run resumes on the model it adapts",
			st->o.init, digest, st->base_digest[0] ? st->base_digest : "missing");
	if (resume)
		return 0;
	memcpy(st->base_digest, digest, sizeof digest);
	eng_trainer_init_lora(t, (uint64_t)st->o.seed);
	char *path = st->o.lora_init ? peft_weights_path(st->o.lora_init) : NULL;
	int rc = st->o.lora_init && (!path || eng_trainer_load_adapters(t, path)) ? -1 : 0;
	free(path);
	return rc;
}
