/* loop.c — the training loop: setup (streams, plan, trainer, weights), the steps,
 * evaluations, the log, and the checkpoints. */
#include "src/train/loop.h"
#include "src/base/clock.h"
#include "src/base/err.h"
#include "src/base/fileio.h"
#include "src/base/proc.h"
#include "src/base/units.h"
#include "src/train/batch.h"
#include "src/train/checkpoint.h"
#include "src/train/dataset.h"
#include "src/train/rundir.h"
#include "src/train/schedule.h"
#include "src/train/trainlog.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

struct run {
	const char *dir;
	char *state_dir, *log_path;
	struct tstate *st;
	struct loop_model *m;
	const struct loop_report *r;
	struct dset train, val;
	struct batch_convs train_c, val_c; /* --sft: the streams' conversations */
	struct batch_pack train_p, val_p;  /* --pack: their rows */
	struct eng_trainer *t;
	struct tlog log;
	int log_fd;
	int32_t *in, *tg, *pos; /* (batch, ctx); pos only with --pack */
	struct sched sched;
	double val_loss, ema;
	int64_t val_step;                  /* the step val_loss is of */
	double eval_seconds, save_seconds; /* the last evaluation's and save's; 0: none yet */
	int64_t saved; /* the step of the checkpoint in dir; -1: none yet */
	bool recompute_probs; /* the plan makes the attention probabilities again */
};

__attribute__((format(printf, 2, 3))) static void notice(const struct run *u, const char *fmt, ...)
{
	char msg[1024];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	if (u->r->notice)
		u->r->notice(u->r->user, msg);
}

/* ---- data ------------------------------------------------------------------------------ */

/* The data must be regular files, read twice (checked, then encoded) and described
 * by size and time in the cache: a FIFO would block the first read and be empty at
 * the second. An empty file is a mistake worth naming (a text file would otherwise
 * train on its end-of-text token alone). */
static int check_files(char *const *files, int n, const char *flag)
{
	for (int i = 0; i < n; i++) {
		struct stat st;
		if (stat(files[i], &st) != 0)
			return err_set("%s: cannot open: %s", files[i], strerror(errno));
		if (S_ISDIR(st.st_mode))
			return err_set("%s: %s: is a directory, not a file (give its files, "
				       "e.g. %s/*.txt)",
				       flag, files[i], files[i]);
		if (!S_ISREG(st.st_mode))
			return err_set(
				"%s: %s: not a regular file (a FIFO, a device or a socket is "
				"refused)",
				flag, files[i]);
		if (st.st_size == 0)
			return err_set("%s: %s: the file is empty", flag, files[i]);
	}
	return 0;
}

static int load_stream(struct run *u, struct dset *d, char *const *files, int n, const char *cache,
		       bool resume, const struct dset_want *want, const char *flag)
{
	const struct tstate_opts *o = &u->st->o;
	char *path = fio_join(u->state_dir, cache);
	int rc = -1, vocab = u->m->cfg.vocab_size, T = o->ctx;
	if (!path)
		return err_set("out of memory");
	if (o->sft && !u->m->read_convs) {
		free(path);
		return err_set("--sft: conversations need the model's tokenizer");
	}
	/* a resumed run trains on its cache; without one, on the files encoded again when
	 * they make the stream it trained on (want) */
	char cache_why[ERR_MAX] = "";
	if (resume && (rc = dset_load_cache(d, vocab, o->sft ? T : 0, path, want)))
		snprintf(cache_why, sizeof cache_why, "%s", err_msg());
	/* a checkpoint ships its tokenizer: one replaced since would not be the stream's */
	if (!rc && u->m->tk && !dset_same_tokenizer(path, u->m->tok_hash)) {
		dset_free(d);
		free(path);
		return err_set("%s: the tokenizer files are not those the run encoded its data "
			       "with (train-state/%s.json): put them back, or start a new run",
			       u->dir, cache);
	}
	const char *changed = !rc ? dset_changed(path, files, n) : NULL;
	struct stat gone;
	if (changed && stat(changed, &gone) != 0 && errno == ENOENT)
		notice(u,
		       "%s is gone since the run read it: it goes on with the stream it started "
		       "with (train-state/%s.u32)",
		       changed, cache);
	else if (changed)
		notice(u,
		       "%s changed since the run read it: it goes on with the stream it started "
		       "with (train-state/%s.u32); a new run reads the file as it is",
		       changed, cache);
	if (rc && check_files(files, n, flag) != 0) {
		if (cache_why[0]) { /* both ways to the stream are closed: say so */
			char files_why[ERR_MAX];
			snprintf(files_why, sizeof files_why, "%s", err_msg());
			err_set("%s; and the stream the run cached cannot stand in for it: %s",
				files_why, cache_why);
		}
	} else if (rc)
		rc = o->sft ? dset_load_sft(d, files, n, u->m->read_convs, u->m->read_convs_user,
					    u->m->tok_hash, vocab, T, path, want)
			    : dset_load(d, files, n, u->m->tk, u->m->tok_hash, vocab, path, want);
	free(path);
	if (rc)
		return -1;
	if (o->sft && d->sft.conversations < 1 && !d->sft.no_answer && !d->sft.left_out)
		return err_set("%s: no conversation in its files (JSON Lines hold one a line; a "
			       "text file makes one of each line and the next, so it needs two "
			       "non-blank lines or more)",
			       flag);
	if (o->sft && d->sft.conversations < 1) {
		char keep[64] = ""; /* what the printed counts say too */
		if (d->sft.left_out && d->sft.left_out_ctx > T)
			snprintf(keep, sizeof keep, " (--ctx %lld would keep %s)",
				 (long long)d->sft.left_out_ctx,
				 d->sft.left_out == 1 ? "it" : "them all");
		return err_set("%s: no conversation to %s: %lld without an assistant answer to "
			       "train on, "
			       "%lld whose first answer ends past --ctx %d%s",
			       flag, strcmp(flag, "--val") ? "train on" : "evaluate",
			       (long long)d->sft.no_answer, (long long)d->sft.left_out, T, keep);
	}
	if (!o->sft && batch_windows(d->len, T) < 1)
		return err_set("%s: %zu token%s, fewer than one window needs: --ctx %d takes %d "
			       "(the inputs and the targets one token further)",
			       flag, d->len, d->len == 1 ? "" : "s", T, T + 1);
	return 0;
}

static struct batch_convs convs_of(const struct dset *d)
{
	return (struct batch_convs){d->ids, d->flags, d->seq, d->sft.conversations};
}

static int load_data(struct run *u, bool resume)
{
	const struct tstate_opts *o = &u->st->o;
	struct dset_want trained = {u->st->data_tokens, u->st->data_sha256};
	if (load_stream(u, &u->train, o->data, o->n_data, "data", resume, resume ? &trained : NULL,
			"--data"))
		return -1;
	u->st->data_tokens = (int64_t)u->train.len;
	memcpy(u->st->data_sha256, u->train.sha256, sizeof u->st->data_sha256);
	if (o->n_val && load_stream(u, &u->val, o->val, o->n_val, "val", resume, NULL, "--val"))
		return -1;
	u->train_c = convs_of(&u->train);
	u->val_c = convs_of(&u->val);
	if (o->pack && (batch_pack_make(&u->train_p, &u->train_c, o->ctx) ||
			(o->n_val && batch_pack_make(&u->val_p, &u->val_c, o->ctx))))
		return -1;
	return 0;
}

/* ---- the trainer --------------------------------------------------------------------- */

/* Whether the tiled attention is asked for: not for packed rows, which always take the
 * materialised one (the tiles mask causally only), so that the run and its state name
 * the attention its steps ran with. */
static bool tiles(const struct run *u)
{
	return u->m->cuda_tiled_attention && !u->st->o.pack;
}

/* The engine's options for this run, with what the backward makes again. */
static struct eng_train_options train_options(const struct run *u, bool recompute, bool probs)
{
	const struct tstate_opts *o = &u->st->o;
	return (struct eng_train_options){.backend = eng_backend_kind(o->backend),
					  .threads = o->threads,
					  .batch = o->batch,
					  .ctx = o->ctx,
					  .exact = o->exact,
					  .recompute = recompute,
					  .cuda_module = u->m->cuda_module,
					  .cpu_isa = u->m->cpu_isa,
					  .cuda_tiled_attention = tiles(u),
					  .recompute_probs = probs,
					  .lora_rank = o->lora,
					  .lora_alpha = o->lora_alpha > 0 ? o->lora_alpha : o->lora,
					  .lora_targets = tstate_lora_targets(o)};
}

/* The plan that fits in the host's memory beside the data: the attention
 * probabilities made again in the backward (within 2% of the time of keeping them, for
 * B x heads x T x T floats a layer less); else every layer's forward but one too (a
 * third more time: --recompute, turned on). Where neither fits, the first, reported. */
static int fit_plan(struct run *u, struct loop_plan *lp)
{
	struct tstate_opts *o = &u->st->o;
	const bool tries[2][2] = {{o->recompute, true}, {true, true}};
	struct eng_train_plan p;
	for (int i = 0; i < 2; i++) {
		struct eng_train_options to = train_options(u, tries[i][0], tries[i][1]);
		if (eng_train_plan(&u->m->cfg, &to, &p))
			return -1;
		size_t host = p.device ? 0 : p.total;
		bool fits = !lp->available || host + lp->data_bytes <= lp->available;
		if (i == 0 || fits)
			lp->plan = p;
		if (fits)
			break;
	}
	lp->recompute_added = lp->plan.recompute && !o->recompute;
	o->recompute = lp->plan.recompute;
	u->recompute_probs = lp->plan.recompute_probs;
	return 0;
}

/* The plan, checked against the host's memory (a GPU's is the trainer's to check). */
static int check_plan(struct run *u)
{
	struct tstate_opts *o = &u->st->o;
	size_t per_token = sizeof(int32_t) + (o->sft ? 1 : 0);
	int64_t convs = u->train.sft.conversations + u->val.sft.conversations;
	char why[PATH_MAX + 64];
	struct loop_plan lp = {.data_bytes = (u->train.len + u->val.len) * per_token +
					     (size_t)convs * sizeof(size_t),
			       .available = proc_mem_available(why, sizeof why),
			       .train_tokens = (int64_t)u->train.len,
			       .val_tokens = (int64_t)u->val.len,
			       .train_cached = u->train.cached,
			       .val_cached = u->val.cached,
			       .sft = o->sft,
			       .train_sft = u->train.sft,
			       .val_sft = u->val.sft};
	if (o->pack) /* rows of several conversations */
		lp.train_padding = 1 - (double)u->train_p.real / ((double)u->train_p.rows * o->ctx);
	else if (o->sft) /* each conversation a row of ctx positions, m - 1 of them real */
		lp.train_padding = 1 - (double)(u->train.len - (size_t)u->train.sft.conversations) /
					       ((double)u->train.sft.conversations * o->ctx);
	lp.train_rows = o->pack ? u->train_p.rows : 0;
	if (fit_plan(u, &lp))
		return -1;
	size_t host = lp.plan.device ? 0 : lp.plan.total;
	if (u->r->plan)
		u->r->plan(u->r->user, &lp);
	if (lp.available && host + lp.data_bytes > lp.available) {
		char need[32], have[32], state[32];
		size_t fixed = lp.plan.weights + lp.plan.grads + lp.plan.moments;
		units_ibytes((double)(host + lp.data_bytes), need, sizeof need);
		units_ibytes((double)lp.available, have, sizeof have);
		if (fixed > lp.available)
			return err_set(
				"the memory plan needs %s and %s is available (%s): "
				"the weights, gradients and moments alone take %s, a smaller "
				"model is needed",
				need, have, why, units_ibytes((double)fixed, state, sizeof state));
		return err_set("the memory plan needs %s and %s is available (%s): "
			       "lower --batch or --ctx%s",
			       need, have, why,
			       o->recompute ? "" : " (--recompute does not suffice)");
	}
	return 0;
}

static int make_trainer(struct run *u)
{
	struct tstate_opts *o = &u->st->o;
	struct eng_train_options to = train_options(u, o->recompute, u->recompute_probs);
	u->t = eng_trainer_new(&u->m->cfg, &to, u->r->engine_notice);
	if (!u->t && !o->recompute) {
		/* on a GPU the device's memory decides: try the smaller plan once */
		char first[1024];
		snprintf(first, sizeof first, "%s", err_msg());
		to.recompute = true;
		if ((u->t = eng_trainer_new(&u->m->cfg, &to, u->r->engine_notice))) {
			o->recompute = true;
			notice(u,
			       "the plan above could not be had (%s); with --recompute it could: "
			       "turned on",
			       first);
		} else {
			err_set("%s", first);
		}
	}
	if (!u->t)
		return -1;
	size_t n = (size_t)o->batch * (size_t)o->ctx;
	if (!(u->in = malloc(n * sizeof *u->in)) || !(u->tg = malloc(n * sizeof *u->tg)) ||
	    (o->pack && !(u->pos = malloc(n * sizeof *u->pos))))
		return err_set("out of memory for a batch of %zu tokens", n);
	const char *here = eng_trainer_backend(u->t);
	if (u->st->ran_on[0] && strcmp(u->st->ran_on, here)) /* "auto" found another */
		notice(u,
		       "the run's steps ran on %s and go on on %s: not bit for bit as they would "
		       "have",
		       u->st->ran_on, here);
	const char *kernels = eng_trainer_kernels(u->t);
	if (!strcmp(u->st->ran_on, here) && u->st->kernels[0] && kernels &&
	    strcmp(u->st->kernels, kernels)) /* another CPU, QWENCHAT_CPU_ISA or _CUDA_TRAIN_ATTN */
		notice(u,
		       "the run's steps ran with the %s kernels and go on with %s: not bit for "
		       "bit as they would have",
		       u->st->kernels, kernels);
	snprintf(u->st->ran_on, sizeof u->st->ran_on, "%s", here);
	snprintf(u->st->kernels, sizeof u->st->kernels, "%s", kernels ? kernels : "");
	if (u->r->ready)
		u->r->ready(u->r->user, u->t);
	eng_trainer_peak_gflops(u->t); /* measured now, not inside the first step's time */
	return 0;
}

/* ---- the log ----------------------------------------------------------------------------- */

/* Starts DIR/train-log.jsonl from the records of the checkpoint (resume) or empty. */
static int open_log(struct run *u, bool resume)
{
	if (resume) {
		char *path = fio_join(u->state_dir, "log.jsonl");
		size_t len = 0;
		char *text = path ? fio_read_file(path, (size_t)1 << 32, &len) : NULL;
		int rc = text ? tlog_parse(&u->log, text, len, path) : -1;
		free(text);
		/* the checkpoint's log holds each of its steps once, in order */
		size_t k = 0;
		while (!rc && k < u->log.n_train && u->log.train[k].step == (int64_t)k + 1)
			k++;
		if (!rc && (k != u->log.n_train || (int64_t)k != u->st->step))
			rc = err_set("%s: damaged: %zu step records (%zu in order from step 1) for "
				     "a checkpoint at step %lld",
				     path, u->log.n_train, k, (long long)u->st->step);
		free(path);
		if (rc)
			return -1;
	}
	if (!(u->log_path = fio_join(u->dir, "train-log.jsonl")))
		return err_set("out of memory");
	if (fio_write_atomic(u->log_path, u->log.text.p ? u->log.text.p : "", u->log.text.n, 0600,
			     FIO_NO_LINKS))
		return -1;
	u->log_fd = open(u->log_path, O_WRONLY | O_APPEND | O_NOFOLLOW | O_CLOEXEC);
	if (u->log_fd < 0)
		return err_set("%s: cannot open: %s", u->log_path, strerror(errno));
	for (size_t i = 0; i < u->log.n_val; i++) {
		u->val_loss = u->log.val[i].value;
		u->val_step = u->log.val[i].step;
	}
	return 0;
}

/* The record just added to the log, appended to the file; a write that fails (a full
 * disk) takes back what it wrote, so that the file keeps whole lines. */
static int append_log(struct run *u)
{
	const char *p = u->log.text.p + u->log.last;
	size_t n = u->log.text.n - u->log.last;
	off_t end = lseek(u->log_fd, 0, SEEK_END);
	while (n > 0) {
		ssize_t w = write(u->log_fd, p, n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0) {
			int e = w < 0 ? errno : ENOSPC;
			if (end >= 0 && ftruncate(u->log_fd, end) != 0)
				return err_set(
					"%s: write failed: %s (and a partial line is left: %s)",
					u->log_path, strerror(e), strerror(errno));
			return err_set("%s: write failed: %s", u->log_path, strerror(e));
		}
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

/* ---- steps ---------------------------------------------------------------------------- */

static int save(struct run *u)
{
	double t0 = clock_now();
	bool was = u->st->master_in_state;
	u->st->master_in_state = !strcmp(u->st->o.save_dtype, "bf16");
	if (save_checkpoint(u->dir, u->t, u->st, &u->log, u->m->files, u->m->n_files)) {
		u->st->master_in_state = was;
		return -1;
	}
	u->saved = u->st->step;
	u->save_seconds = clock_now() - t0;
	if (u->r->saved)
		u->r->saved(u->r->user, u->st->step, u->save_seconds);
	return 0;
}

/* The rows an evaluation scores: the validation stream cut in consecutive windows of ctx
 * (--sft: its conversations in order, a row each), the first ceil(eval_tokens / ctx) of
 * them when --eval-tokens caps it: the same rows at every evaluation, so the curve
 * compares. */
static int64_t eval_rows(const struct run *u)
{
	const struct tstate_opts *o = &u->st->o;
	int64_t w = o->pack ? u->val_p.rows : o->sft ? u->val_c.n : batch_windows(u->val.len, o->ctx);
	int64_t cap = tstate_eval_rows(o);
	return cap > 0 && cap < w ? cap : w;
}

/* Their mean cross-entropy; 1 where a stop abandoned it. */
static int evaluate(struct run *u, double *loss, const volatile sig_atomic_t *stop)
{
	const struct tstate_opts *o = &u->st->o;
	int64_t w = eval_rows(u);
	double sum = 0;
	int64_t count = 0;
	for (int64_t first = 0; first < w; first += o->batch) {
		if (stop && *stop)
			return 1; /* abandoned: a long evaluation must not hold up Ctrl-C's save */
		double s = 0; /* the trainer adds to these */
		int64_t c = 0;
		if (o->pack)
			batch_pack_eval(&u->val_c, &u->val_p, first, o->batch, o->ctx, u->in, u->tg,
					u->pos);
		else if (o->sft)
			batch_conv_eval(&u->val_c, first, o->batch, o->ctx, u->in, u->tg);
		else
			batch_eval(u->val.ids, u->val.len, o->ctx, first, o->batch, u->in, u->tg);
		for (int64_t b = w - first; b < o->batch; b++) /* rows past the cap: not scored */
			for (int i = 0; i < o->ctx; i++)
				u->tg[b * o->ctx + i] = -1;
		if (eng_trainer_eval(u->t, u->in, u->tg, u->pos, &s, &c))
			return -1;
		sum += s;
		count += c;
	}
	*loss = count ? sum / (double)count : NAN;
	return 0;
}

/* A micro-batch's rows into u->in and u->tg; *real counts the positions that are not
 * padding. */
static void draw(struct run *u, int micro, int64_t *real)
{
	struct tstate *st = u->st;
	const struct tstate_opts *o = &st->o;
	if (o->pack && o->sequential)
		batch_pack_sequential(&u->train_c, &u->train_p, st->step, o->accum, micro, o->batch,
				      o->ctx, u->in, u->tg, u->pos, real);
	else if (o->pack)
		batch_pack_random(&st->rng, &u->train_c, &u->train_p, o->batch, o->ctx, u->in,
				  u->tg, u->pos, real);
	else if (o->sft && o->sequential)
		batch_conv_sequential(&u->train_c, st->step, o->accum, micro, o->batch, o->ctx,
				      u->in, u->tg, real);
	else if (o->sft)
		batch_conv_random(&st->rng, &u->train_c, o->batch, o->ctx, u->in, u->tg, real);
	else if (o->sequential)
		batch_sequential(u->train.ids, u->train.len, st->step, o->accum, micro, o->batch,
				 o->ctx, u->in, u->tg);
	else
		batch_random(&st->rng, u->train.ids, u->train.len, o->batch, o->ctx, u->in, u->tg);
	if (!o->sft)
		*real += (int64_t)o->batch * o->ctx;
}

/* What a run stopped by a non-finite value leaves: the last checkpoint, or none. */
static const char *kept_note(const struct run *u, char *buf, size_t size)
{
	if (u->saved >= 0)
		snprintf(buf, size, "the checkpoint of step %lld is kept", (long long)u->saved);
	else
		snprintf(buf, size, "no checkpoint was saved yet");
	return buf;
}

/* One optimizer step: the micro-batches' gradients, their mean, clipping, AdamW;
 * *flops: the model FLOPs of its micro-batches. */
static int one_step(struct run *u, double *loss, double *norm, double *lr, int64_t *real,
		    double *flops)
{
	struct tstate *st = u->st;
	const struct tstate_opts *o = &st->o;
	double sum = 0;
	int64_t count = 0;
	if (eng_trainer_zero_grad(u->t))
		return -1;
	for (int a = 0; a < o->accum; a++) {
		double s = 0; /* the trainer adds to these */
		int64_t c = 0;
		draw(u, a, real);
		if (eng_trainer_micro(u->t, u->in, u->tg, u->pos, &s, &c))
			return -1;
		*flops += eng_trainer_step_flops(u->t, u->pos);
		sum += s;
		count += c;
	}
	if (count == 0)
		return err_set("step %lld: no target was scored", (long long)st->step + 1);
	if (eng_trainer_finish_grads(u->t, 1.0 / (double)count, o->clip, norm))
		return -1;
	*loss = sum / (double)count;
	if (!isfinite(*loss) || !isfinite(*norm)) {
		char kept[160];
		return err_set("step %lld: the loss is %g and the gradient norm %g: stopped "
			       "without saving this step (%s; a lower --lr, a --warmup or "
			       "--clip may help)",
			       (long long)st->step + 1, *loss, *norm,
			       kept_note(u, kept, sizeof kept));
	}
	*lr = sched_lr(&u->sched, st->step);
	struct eng_adamw h = {*lr, o->beta1, o->beta2, o->eps, o->weight_decay};
	if (eng_trainer_adamw(u->t, &h, st->step + 1))
		return -1;
	st->tokens += count;
	return 0;
}

/* Seconds until the run ends: the steps left at the recent step time, and the
 * evaluations and saves still due (this step's too) at the last one's time. Before the
 * first evaluation its time is that of its rows' forward passes: a third of a
 * step's products (forward, and twice that backward) for each of a step's rows. */
static double eta(const struct run *u)
{
	const struct tstate_opts *o = &u->st->o;
	int64_t now = u->st->step, done = now - 1; /* this step's evaluation and save are due */
	double t = u->ema * (double)(o->steps - now);
	if (o->n_val > 0) {
		double one = u->eval_seconds > 0
				     ? u->eval_seconds
				     : u->ema * (double)eval_rows(u) /
					       (3.0 * (double)o->batch * (double)o->accum);
		t += one * (double)sched_due_after(done, o->steps, o->eval_every);
	}
	return t + u->save_seconds * (double)sched_due_after(done, o->steps, o->save_every);
}

static void status(struct run *u, struct loop_status *s, double loss, double norm,
		   double lr, double seconds, int64_t real, double flops)
{
	const struct tstate_opts *o = &u->st->o;
	double tokens = (double)real;
	double rate = seconds > 0 ? flops / seconds / 1e9 : 0;
	*s = (struct loop_status){
		.step = u->st->step,
		.steps = o->steps,
		.loss = loss,
		.grad_norm = norm,
		.lr = lr,
		.val_loss = u->val_loss,
		.val_step = u->val_step,
		.step_seconds = seconds,
		.tokens_per_second = seconds > 0 ? tokens / seconds : 0,
		.peak_share = eng_trainer_peak_share(u->t, rate),
		.eta_seconds = eta(u),
		.tokens = u->st->tokens,
	};
}

/* DIR/loss.svg, drawn from the log so far. A link there is replaced, never written
 * through, as each checkpoint replaces it: refusing it would end the run on its first
 * evaluation, with the steps since the last checkpoint lost. */
static int draw_curves(struct run *u)
{
	char *svg = tlog_svg(&u->log), *path = fio_join(u->dir, "loss.svg");
	int rc = svg && path ? fio_write_atomic(path, svg, strlen(svg), 0600, 0)
			     : err_set("out of memory");
	free(svg);
	free(path);
	return rc;
}

/* An evaluation, logged and drawn, and reported with s; none when a stop comes first. */
static int eval_and_log(struct run *u, struct loop_status *s, const volatile sig_atomic_t *stop)
{
	double val = 0, t0 = clock_now();
	if (u->r->evaluating)
		u->r->evaluating(u->r->user, u->st->step, true);
	int ev = evaluate(u, &val, stop);
	if (u->r->evaluating)
		u->r->evaluating(u->r->user, u->st->step, false);
	if (ev)
		return ev < 0 ? -1 : 0;
	u->eval_seconds = clock_now() - t0;
	if (!isfinite(val)) {
		char kept[160];
		return err_set("step %lld: the validation loss is %g: stopped (%s)",
			       (long long)u->st->step, val, kept_note(u, kept, sizeof kept));
	}
	u->val_loss = val;
	u->val_step = u->st->step;
	if (tlog_add_eval(&u->log, u->st->step, val) || append_log(u))
		return -1;
	s->val_loss = val;
	s->val_step = u->st->step;
	if (u->r->eval)
		u->r->eval(u->r->user, s);
	return draw_curves(u);
}

/* Whether step was due an evaluation under the run's options (tstate_eval_due). Step 0
 * is asked about only of a --steps 0 run (the loss a fine-tune starts from) and of its
 * checkpoint, the only one at step 0, when resumed to any --steps. */
static bool eval_due(const struct run *u, int64_t step)
{
	return tstate_eval_due(&u->st->o, step);
}

/* Whether the log holds the evaluation after `step` steps. */
static bool evaluated(const struct tlog *l, int64_t step)
{
	return l->n_val && l->val[l->n_val - 1].step == step;
}

/* Whether the checkpoint's step was due an evaluation that a stop kept from running
 * (its log has no record of it), under the options it was saved with or the resumed
 * ones; a resumed run runs it first, so that its log is an uninterrupted run's. Read
 * apart from open_log, before any data is. */
static int eval_missing(const struct run *u, bool *missing)
{
	*missing = false;
	if (!eval_due(u, u->st->step) && !u->st->eval_was_due)
		return 0;
	char *path = fio_join(u->state_dir, "log.jsonl");
	size_t len = 0;
	char *text = path ? fio_read_file(path, (size_t)1 << 32, &len) : NULL;
	struct tlog l;
	tlog_init(&l);
	int rc = text ? tlog_parse(&l, text, len, path) : -1;
	*missing = !rc && !evaluated(&l, u->st->step);
	tlog_free(&l);
	free(text);
	free(path);
	return rc;
}

/* The steps from st->step to the run's end, evaluating and saving on schedule; a
 * pending stop ends the loop after the step under way, saved (at the last step too
 * when it kept the last evaluation from running). */
static int steps(struct run *u, const volatile sig_atomic_t *stop)
{
	struct tstate *st = u->st;
	const struct tstate_opts *o = &st->o;
	while (st->step < o->steps) {
		double t0 = clock_now(), loss = 0, norm = 0, lr = 0, flops = 0;
		int64_t real = 0, before = st->tokens;
		if (one_step(u, &loss, &norm, &lr, &real, &flops))
			return -1;
		double sec = clock_now() - t0;
		st->step++;
		st->seconds += sec;
		u->ema = u->ema > 0 ? 0.9 * u->ema + 0.1 * sec : sec;
		struct tlog_step rec = {st->step, loss, norm, lr, st->tokens, sec};
		if (tlog_add_step(&u->log, &rec) || append_log(u))
			return -1;
		struct loop_status s;
		status(u, &s, loss, norm, lr, sec, real, flops);
		s.step_tokens = st->tokens - before;
		s.step_positions = real;
		if (u->r->step)
			u->r->step(u->r->user, &s);
		bool last = st->step == o->steps, stopping = stop && *stop;
		if (eval_due(u, st->step) && !stopping) {
			if (eval_and_log(u, &s, stop))
				return -1;
			stopping = stop && *stop;
		}
		bool saved = st->step % o->save_every == 0 || last || stopping;
		if (saved && save(u))
			return -1;
		/* looked at again: one that came during the save stops on the step it holds */
		bool done = last && (!eval_due(u, st->step) || evaluated(&u->log, st->step));
		if (!done && stop && *stop) {
			if (!saved && save(u))
				return -1;
			return LOOP_STOPPED;
		}
	}
	return 0;
}

/* The evaluation a stop kept from running at the checkpoint's step, run before the
 * next step (and saved with the checkpoint where no step follows). */
static int late_eval(struct run *u, const volatile sig_atomic_t *stop)
{
	struct loop_status s = {.step = u->st->step, .steps = u->st->o.steps, .val_loss = NAN};
	if (eval_and_log(u, &s, stop))
		return -1;
	if (!evaluated(&u->log, u->st->step))
		return LOOP_STOPPED; /* stopped again, before it finished */
	return u->st->step >= u->st->o.steps ? save(u) : 0;
}

/* A run of --steps 0: the initial weights evaluated on --val (the loss a fine-tune starts
 * from) and saved. A stop during the evaluation abandons it, as a step's, and saves:
 * the resumed run runs it first (see eval_missing). */
static int zero_steps(struct run *u, const volatile sig_atomic_t *stop)
{
	bool due = eval_due(u, 0);
	if (due && u->r->begin)
		u->r->begin(u->r->user); /* from here a first signal saves: see steps() */
	struct loop_status s = {.step = 0, .steps = 0, .val_loss = NAN};
	if ((due && eval_and_log(u, &s, stop)) || save(u))
		return -1;
	return due && !evaluated(&u->log, 0) ? LOOP_STOPPED : 0;
}

/* The weights: the model's (LoRA's frozen ones) and the checkpoint's, or drawn. */
static int setup_weights(struct run *u, bool resume)
{
	if (u->m->init && eng_trainer_load(u->t, u->m->init))
		return -1;
	if (u->st->o.lora && save_lora_base(u->t, u->st, resume))
		return -1;
	if (resume)
		return save_restore(u->dir, u->t, u->st);
	if (!u->m->init)
		eng_trainer_init_normal(u->t, (uint64_t)u->st->o.seed, 0.02);
	return eng_trainer_upload(u->t);
}

int loop_run(const char *dir, struct tstate *st, bool resume, struct loop_model *m,
	     const struct loop_report *r, const volatile sig_atomic_t *stop)
{
	struct run u = {.dir = dir, .st = st, .m = m, .r = r, .log_fd = -1, .val_loss = NAN,
			.saved = resume ? st->step : -1};
	const struct tstate_opts *o = &st->o;
	int rc = -1;
	tlog_init(&u.log);
	u.sched = (struct sched){o->lr, o->min_lr, o->warmup, o->cosine_steps};
	if (!(u.state_dir = fio_join(dir, "train-state"))) {
		err_set("out of memory");
		goto out;
	}
	if (!resume && (rundir_check_new(dir) || fio_mkdirs(u.state_dir, 0700)))
		goto out;
	if (resume && ckpt_recover(dir) < 0)
		goto out;
	bool unevaluated = false;
	if (resume && eval_missing(&u, &unevaluated))
		goto out;
	if (resume && st->step >= o->steps && !unevaluated) { /* before any data is read */
		notice(&u,
		       "%s is at step %lld already: --steps %lld leaves nothing to do (a larger "
		       "--steps trains on)",
		       dir, (long long)st->step, (long long)o->steps);
		rc = 0;
		goto out;
	}
	if (!resume)
		batch_rng_seed(&st->rng, (uint64_t)o->seed);
	if (save_check_targets(dir, m->files, m->n_files) || load_data(&u, resume) ||
	    check_plan(&u) || make_trainer(&u) || setup_weights(&u, resume) || open_log(&u, resume))
		goto out;
	if (m->init) { /* its weights are the trainer's now: give the mapping back */
		eng_model_free(m->init);
		m->init = NULL;
	}
	if (!resume && st->step >= o->steps) { /* --steps 0: the initial weights as a checkpoint */
		rc = zero_steps(&u, stop);
		goto out;
	}
	if (r->begin)
		r->begin(r->user);
	rc = unevaluated ? late_eval(&u, stop) : 0;
	if (!rc && st->step < o->steps)
		rc = steps(&u, stop);
out:
	if (u.log_fd >= 0)
		close(u.log_fd);
	eng_trainer_free(u.t);
	dset_free(&u.train);
	dset_free(&u.val);
	batch_pack_free(&u.train_p);
	batch_pack_free(&u.val_p);
	tlog_free(&u.log);
	free(u.in);
	free(u.tg);
	free(u.pos);
	free(u.log_path);
	free(u.state_dir);
	return rc;
}
