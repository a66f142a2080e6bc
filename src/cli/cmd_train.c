/* cmd_train.c — `qwenchat train`: the command line of a training run. It resolves the
 * model to start from (or builds a config from the shape flags), the tokenizer and the
 * files every checkpoint carries, checks the flags of a resumed run against the saved
 * ones, and runs the loop (src/train/loop.c) with its reports printed by
 * train_report.c. */
#include "src/base/err.h"
#include "src/base/fileio.h"
#include "src/base/proc.h"
#include "src/base/utf8.h"
#include "src/cli/cli.h"
#include "src/cli/commands.h"
#include "src/cli/env.h"
#include "src/cli/train_model.h"
#include "src/cli/train_opts.h"
#include "src/cli/train_report.h"
#include "src/hub/hub.h"
#include "src/train/checkpoint.h"
#include "src/train/loop.h"
#include "src/train/peft.h"
#include "src/train/rundir.h"
#include "src/train/schedule.h"
#include "src/train/tokens.h"

#include <errno.h>
#include <limits.h>
#include <sys/stat.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ---- options (the table: train_opts.c) ------------------------------------------- */

struct args {
	struct tstate_opts o;
	bool given[64]; /* by tstate field */
	char *out, *resume; /* without trailing slashes ("run/" would follow a link at run) */
	bool no_panel;
};

static int dir_arg(char **dst, const char *arg, const char *flag)
{
	if (!*arg)
		return cli_usage("train", "--%s: an empty name (give a directory)", flag);
	free(*dst);
	if (!(*dst = strndup(arg, fio_trimmed_len(arg)))) {
		cli_error("out of memory");
		return EXIT_RUNTIME;
	}
	return 0;
}

static int train_opt(void *user, int key, const char *arg)
{
	struct args *a = user;
	switch (key) {
	case OPT_OUT: return dir_arg(&a->out, arg, "out");
	case OPT_RESUME: return dir_arg(&a->resume, arg, "resume");
	case OPT_NO_PANEL: a->no_panel = true; return 0;
	}
	const char *name = "";
	for (const struct cli_opt *o = train_opts; o->name; o++)
		if (o->key == key)
			name = o->name;
	const char *field = key == OPT_NO_TIE ? "tie" : name;
	if (!arg)
		arg = key == OPT_NO_TIE ? "false" : "true";
	int i = tstate_field(field);
	if (i < 0)
		return cli_unhandled(&train_cmd, key);
	if ((key == OPT_TIE || key == OPT_NO_TIE) && a->given[i] && a->o.tie != (key == OPT_TIE))
		return cli_usage("train", "--tie and --no-tie: give one"), -1;
	if (tstate_set(&a->o, i, arg))
		return cli_usage("train", "%s", err_msg()), -1;
	a->given[i] = true;
	return 0;
}

/* argv with "--data A B C" written "--data A --data B --data C" (and --val alike),
 * so that getopt sees one value per option. NULL when out of memory. *bare: the
 * --data or --val followed by an option instead of a file ("--val --steps 4" would
 * read a file named --steps), else NULL. */
static char **expand_lists(int argc, char **argv, int *out_argc, const char **bare)
{
	*bare = NULL;
	char **v = malloc(((size_t)argc * 2 + 1) * sizeof *v);
	int n = 0;
	if (!v)
		return NULL;
	const char *list = NULL;
	for (int i = 0; i < argc; i++) {
		const char *s = argv[i];
		if (i > 0 && list && s[0] != '-') {
			v[n++] = (char *)list;
			v[n++] = argv[i];
			continue;
		}
		list = NULL;
		v[n++] = argv[i];
		if (!strcmp(s, "--data") || !strcmp(s, "--val")) {
			if (i + 1 < argc && argv[i + 1][0] == '-' && argv[i + 1][1] && !*bare)
				*bare = s;
			if (i + 1 < argc)
				v[n++] = argv[++i];
			list = s;
		} else if (!strncmp(s, "--data=", 7) || !strncmp(s, "--val=", 6)) {
			list = s[2] == 'd' ? "--data" : "--val";
		}
	}
	v[n] = NULL;
	*out_argc = n;
	return v;
}

/* ---- checks of a new run's flags and of a resumed run's ---------------------------- */

static bool given(const struct args *a, const char *name)
{
	return a->given[tstate_field(name)];
}

/* Paths as absolute ones: the saved options name the same files from any directory,
 * and a resumed run's flags compare with them. A link keeps its own name (a link.u32
 * to a blob is still ids). A path that does not resolve stays as it is (reading it
 * reports the error), and so does an --init that names no file or directory (a repo
 * id or a tag). */
static int absolute_paths(struct tstate_opts *o)
{
	char **lists[] = {o->data, o->val, &o->tokenizer, &o->init, &o->lora_init};
	int counts[] = {o->n_data, o->n_val, o->tokenizer ? 1 : 0,
			o->init && fio_exists(o->init) ? 1 : 0, o->lora_init ? 1 : 0};
	static const char *const flags[] = {"--data", "--val", "--tokenizer", "--init",
					    "--lora-init"};
	for (int l = 0; l < 5; l++)
		for (int i = 0; i < counts[l]; i++) {
			char *c = fio_absolute(lists[l][i]);
			if (c) {
				free(lists[l][i]);
				lists[l][i] = c;
			} else if (errno == ENOMEM) {
				return cli_error("out of memory"), EXIT_RUNTIME;
			}
		}
	/* state.json saves them as JSON strings, which hold UTF-8 alone: a path of other
	 * bytes would be dropped from it and the run could never be resumed */
	for (int l = 0; l < 5; l++) {
		int n = l < 2 ? counts[l] : lists[l][0] ? 1 : 0;
		for (int i = 0; i < n; i++) {
			size_t len = strlen(lists[l][i]), valid, bad;
			utf8_next_piece(lists[l][i], len, &valid, &bad);
			if (valid < len)
				return cli_usage(
					"train",
					"%s: the path %s is not valid UTF-8, which the run's "
					"state.json cannot hold: rename it",
					flags[l], lists[l][i]);
		}
	}
	return 0;
}

/* The thread count --threads N gives here (0: every CPU; no more than the CPUs online,
 * said), which a run saves so that a resume compares with and repeats it. */
static int threads_used(int threads)
{
	return threads > 0 ? cli_threads_cap(threads, NULL) : proc_online_cpus();
}

/* A warm-up as long as the run or longer: lr is never reached, which is said. */
static void warmup_notice(const struct tstate_opts *o)
{
	if (o->steps <= 0 || o->warmup < o->steps || o->lr <= 0)
		return;
	struct sched sc = {o->lr, o->min_lr, o->warmup, o->cosine_steps};
	char msg[200];
	snprintf(msg, sizeof msg,
		 "--warmup %lld outlasts --steps %lld: the learning rate rises to %.3g at most, "
		 "below --lr %g",
		 (long long)o->warmup, (long long)o->steps, sched_lr(&sc, o->steps - 1), o->lr);
	cli_notice(msg);
}

/* The flags of a new run, together: 0 or EXIT_USAGE (printed). */
static int check_new(struct args *a)
{
	static const char *const shape[] = {"layers",   "hidden-size", "heads",	     "kv-heads",
					    "head-dim", "intermediate-size", "tie", "rope-theta",
					    "vocab-size"};
	struct tstate_opts *o = &a->o;
	if (!a->out)
		return cli_usage("train", "--out DIR is required (or --resume DIR)");
	if (!o->n_data)
		return cli_usage("train", "--data FILE... is required");
	for (size_t i = 0; i < sizeof shape / sizeof shape[0]; i++) {
		if (o->init && given(a, shape[i]))
			return cli_usage("train",
					 "--%s is for a model from scratch: --init takes "
					 "the shape of its model",
					 !strcmp(shape[i], "tie") && !o->tie ? "no-tie" : shape[i]);
	}
	if (!o->init) {
		if (!o->layers || !o->hidden || !o->heads)
			return cli_usage("train", "a model from scratch needs --layers, --hidden-size "
						  "and --heads (or start from --init MODEL)");
		if (!o->tokenizer && !o->vocab)
			return cli_usage("train", "a model from scratch needs --tokenizer DIR (or "
						  "--vocab-size N for *.u32 data)");
		if (o->tokenizer && o->vocab)
			return cli_usage("train", "--vocab-size comes from --tokenizer: give one");
		if (o->sft && !o->tokenizer)
			return cli_usage("train", "--sft renders conversations with a tokenizer: give "
						  "--tokenizer DIR");
	}
	for (int i = 0; o->sft && i < o->n_data + o->n_val; i++) {
		const char *f = i < o->n_data ? o->data[i] : o->val[i - o->n_data];
		if (tokens_is_u32(f))
			return cli_usage("train",
					 "%s: --sft reads conversations, not token ids (*.u32)", f);
	}
	if (o->pack && !o->sft)
		return cli_usage("train", "--pack packs conversations: it needs --sft (text "
					  "windows have no padding to save)");
	if (o->lora_init &&
	    (given(a, "lora") || given(a, "lora-alpha") || given(a, "lora-targets")))
		return cli_usage("train", "--lora-init takes the rank, alpha and targets of its "
					  "adapter_config.json: give no --lora, --lora-alpha or "
					  "--lora-targets");
	if (o->lora_init && peft_read_config(o->lora_init, o)) {
		cli_error("%s", err_msg());
		return EXIT_RUNTIME;
	}
	if (o->lora && !o->init)
		return cli_usage("train", "%s adapts a model's weights: give --init MODEL",
				 o->lora_init ? "--lora-init" : "--lora");
	if (o->lora && (tstate_lora_canonical(o) || o->lora_alpha < 0))
		return cli_usage("train", "%s", err_msg());
	if (o->lora && o->lora_alpha == 0) /* saved as the value it takes: a resume compares */
		o->lora_alpha = o->lora;
	if (o->lora && !strcmp(o->backend, "cuda"))
		return cli_usage("train", "--lora runs on the CPU backend: --backend cpu or auto");
	if (!o->lora && (given(a, "lora-alpha") || given(a, "lora-targets")))
		return cli_usage("train",
				 "--lora-alpha and --lora-targets are LoRA's: give --lora R");
	if (o->min_lr < 0)
		o->min_lr = o->lr / 10;
	if (o->min_lr > o->lr) {
		char msg[160];
		snprintf(msg, sizeof msg,
			 "--min-lr %g is above --lr %g: the learning rate rises after the warm-up",
			 o->min_lr, o->lr);
		cli_notice(msg);
	}
	if ((o->cosine_follows = o->cosine_steps < 0))
		o->cosine_steps = tstate_cosine_default(o);
	if (o->warmup > o->cosine_steps)
		return cli_usage("train", "--warmup %lld is past --cosine-steps %lld", (long long)o->warmup,
				 (long long)o->cosine_steps);
	warmup_notice(o);
	return absolute_paths(o);
}

/* A resumed run given another --steps, whose --cosine-steps was left to default to
 * --steps: it takes the cosine of a run started with the new --steps when that changes
 * no learning rate of the steps taken so far (every one of them was in the warm-up, at
 * most at its end, where the cosine starts at lr whatever its length; or lr is min_lr),
 * so that 2 steps and a resume to 4 repeat 4 steps in one run. Otherwise the steps
 * taken followed the saved cosine, and it stays: steps past its end run at min_lr,
 * which is said. */
static void follow_steps(struct tstate_opts *o, int64_t taken, int64_t saved_steps)
{
	int64_t end = tstate_cosine_default(o);
	if (o->cosine_follows && end != o->cosine_steps &&
	    (taken <= o->warmup + 1 || o->lr == o->min_lr)) {
		o->cosine_steps = end;
		return;
	}
	char msg[320];
	if (o->steps <= o->warmup) {
		warmup_notice(o);
		return;
	}
	if (!o->cosine_follows) /* the --cosine-steps given at the start: as asked */
		return;
	if (o->steps < saved_steps && o->steps < o->cosine_steps && o->lr != o->min_lr) {
		struct sched sc = {o->lr, o->min_lr, o->warmup, o->cosine_steps};
		snprintf(msg, sizeof msg,
			 "--steps %lld ends the run before its cosine does (at step %lld): the "
			 "last step runs at lr %.3g, not min_lr %g (a default cosine follows "
			 "--steps only while every step taken was in the warm-up)",
			 (long long)o->steps, (long long)o->cosine_steps,
			 sched_lr(&sc, o->steps - 1), o->min_lr);
		cli_notice(msg);
		return;
	}
	if (o->steps <= o->cosine_steps || o->lr == o->min_lr)
		return;
	snprintf(msg, sizeof msg,
		 "--steps %lld: the steps after %lld, where the run's cosine ends, run at min_lr "
		 "%g (a default cosine follows --steps only while every step taken was in the "
		 "warm-up)",
		 (long long)o->steps, (long long)o->cosine_steps, o->min_lr);
	cli_notice(msg);
}

/* An --init given to a resume as the repo id or tag the run resolved (saved is the
 * path it resolved to) stands for the same model: taken as the saved path, so that it
 * agrees. Resolved from the cache alone, never downloaded. 0, or -1 (printed). */
static int same_init(struct tstate_opts *given, const struct tstate_opts *saved)
{
	if (!given->init || !saved->init || !strcmp(given->init, saved->init) ||
	    fio_exists(given->init))
		return 0;
	struct hub_env hub;
	cli_env_hub(&hub);
	hub.offline = true;
	hub.no_progress = true;
	char *path = hub_resolve(&hub, given->init);
	if (path && !strcmp(path, saved->init)) {
		free(given->init);
		if (!(given->init = strdup(saved->init))) {
			free(path);
			cli_error("out of memory");
			return -1;
		}
	}
	free(path);
	return 0;
}

/* A run without held-out text has no val cache of its own: what DIR/train-state/
 * holds under that name is left by a resume that added --val and stopped before its
 * first checkpoint (refused, interrupted), perhaps of other files. The resume that adds
 * --val encodes its files afresh rather than evaluate that stream. 0, or -1 (err_set). */
static int forget_val_cache(const char *dir)
{
	static const char *const names[] = {"train-state/val.json", "train-state/val.u32",
					    "train-state/val.sft"};
	for (size_t k = 0; k < sizeof names / sizeof *names; k++) { /* the JSON first */
		char *p = fio_join(dir, names[k]);
		if (!p)
			return err_set("out of memory");
		int rc = unlink(p) && errno != ENOENT ? err_set("%s: %s", p, strerror(errno)) : 0;
		free(p);
		if (rc)
			return -1;
	}
	return 0;
}

/* The saved run's options with the flags given now: those that change what is computed
 * must agree. 0, EXIT_USAGE (printed) or EXIT_RUNTIME (printed). */
static int merge_resume(struct args *a, struct tstate *st, const char *state_path)
{
	if (a->out && strcmp(a->out, a->resume))
		return cli_usage("train", "--resume %s continues that directory: --out %s is "
					  "another",
				 a->resume, a->out);
	int bad = absolute_paths(&a->o);
	if (bad)
		return bad;
	st->eval_was_due = tstate_eval_due(&st->o, st->step); /* before the flags merge */
	int64_t saved_steps = st->o.steps;
	int cpus = proc_online_cpus();
	if (st->o.threads == 0) /* saved as "every CPU" before the count was saved */
		st->o.threads = cpus;
	if (given(a, "threads")) /* compared as the count it gives here */
		a->o.threads = threads_used(a->o.threads);
	else if (st->o.threads > cpus) {
		char msg[200];
		snprintf(msg, sizeof msg,
			 "the run's %d threads are more than the %d CPUs online: it goes on with "
			 "%d, but not bit for bit as it would have",
			 st->o.threads, cpus, cpus);
		cli_notice(msg);
		st->o.threads = cpus;
	}
	if (same_init(&a->o, &st->o))
		return EXIT_RUNTIME;
	/* LoRA's options as a new run saves them: alpha R where it was left, the targets
	 * as one spelling of their set, so that "q,v" and "v_proj,q_proj" are the same */
	if (st->o.lora && st->o.lora_alpha == 0)
		st->o.lora_alpha = st->o.lora;
	if ((st->o.lora && tstate_lora_canonical(&st->o)) ||
	    (given(a, "lora-targets") && tstate_lora_canonical(&a->o)))
		return cli_usage("train", "%s", err_msg());
	for (int i = 0; i < tstate_field_count(); i++) {
		/* a shape the run left to its model: the model's config.json answers (run) */
		if (!a->given[i] || tstate_equal(&st->o, &a->o, i) || tstate_unset(&st->o, i))
			continue;
		/* held-out text may join a run that had none: evaluating draws nothing from
		 * the run's random state, so its steps stay those of a run without it */
		if (!strcmp(tstate_field_name(i), "val") && st->o.n_val == 0) {
			if (forget_val_cache(a->resume) || tstate_copy(&st->o, &a->o, i)) {
				cli_error("%s", err_msg());
				return EXIT_RUNTIME;
			}
			continue;
		}
		char now[256], then[256];
		tstate_format(&a->o, i, now, sizeof now);
		tstate_format(&st->o, i, then, sizeof then);
		if (!tstate_may_change(i) && !strcmp(tstate_field_name(i), "tie"))
			return cli_usage("train", "--resume: %s conflicts with the run's %s (%s)",
					 now, then, state_path);
		if (!tstate_may_change(i))
			return cli_usage("train", "--resume: --%s %s conflicts with the run's %s "
						  "(%s)",
					 tstate_field_name(i), now, then, state_path);
		if (tstate_copy(&st->o, &a->o, i)) {
			cli_error("%s", err_msg());
			return EXIT_RUNTIME;
		}
		/* where the steps go on is compared with ran_on once the trainer is made
		 * (loop.c); a state without ran_on has only the option to go by */
		if (!strcmp(tstate_field_name(i), "threads") ||
		    (!strcmp(tstate_field_name(i), "backend") && !st->ran_on[0]))
			cli_notice("--resume with another --threads or --backend: the run goes on, "
				   "but not bit for bit as it would have");
	}
	if (st->o.steps < st->step)
		return cli_usage("train",
				 "--resume: --steps %lld is below the run's step %lld (it "
				 "goes on from there: give a larger --steps)",
				 (long long)st->o.steps, (long long)st->step);
	/* an explicit --cosine-steps (the saved one, or it would conflict above) stays */
	if (a->given[tstate_field("steps")] && !a->given[tstate_field("cosine-steps")])
		follow_steps(&st->o, st->step, saved_steps);
	if (st->o.warmup > st->o.cosine_steps)
		return cli_usage("train", "--warmup is past --cosine-steps");
	return 0;
}

/* The saved state of DIR (a save cut short finished first). */
static int read_state(const char *dir, struct tstate *st, char **path)
{
	if (ckpt_recover(dir) < 0)
		return -1;
	*path = fio_join(dir, "train-state/state.json");
	if (!*path)
		return err_set("out of memory");
	if (!fio_exists(*path))
		return err_set("%s: no training run to resume (%s is missing)", dir, *path);
	size_t len;
	char *text = fio_read_file(*path, 64u << 20, &len);
	int rc = text ? tstate_parse(st, text, len, *path) : -1;
	free(text);
	return rc;
}

/* ---- the command --------------------------------------------------------------------- */

/* The first shape flag of o (those given: above 0, or --no-tie) that config.json (c)
 * does not have: "--kv-heads 4" in flag, "num_key_value_heads 2" in key; false when
 * all agree. */
static bool shape_differs(const struct tstate_opts *o, const struct eng_config *c, char *flag,
			  char *key, size_t n)
{
	const struct {
		const char *flag, *key;
		double given, has;
	} shape[] = {
		{"layers", "num_hidden_layers", o->layers, c->num_layers},
		{"hidden-size", "hidden_size", o->hidden, c->hidden_size},
		{"heads", "num_attention_heads", o->heads, c->num_heads},
		{"kv-heads", "num_key_value_heads", o->kv_heads, c->num_kv_heads},
		{"head-dim", "head_dim", o->head_dim, c->head_dim},
		{"intermediate-size", "intermediate_size", o->intermediate, c->intermediate_size},
		{"vocab-size", "vocab_size", o->vocab, c->vocab_size},
		{"rope-theta", "rope_theta", o->rope_theta, c->rope_theta},
	};
	for (size_t i = 0; i < sizeof shape / sizeof shape[0]; i++)
		/* as floats: config.json holds rope_theta as the shortest decimal of its float
		 * (1000000.125 is written 1000000.1, the same float) */
		if (shape[i].given > 0 && (float)shape[i].given != (float)shape[i].has) {
			snprintf(flag, n, "--%s %.17g", shape[i].flag, shape[i].given);
			snprintf(key, n, "%s %.17g", shape[i].key, shape[i].has);
			return true;
		}
	if (o->tie >= 0 && o->tie != c->tie_word_embeddings) {
		snprintf(flag, n, "%s", o->tie ? "--tie" : "--no-tie");
		snprintf(key, n, "tie_word_embeddings %s",
			 c->tie_word_embeddings ? "true" : "false");
		return true;
	}
	return false;
}

/* Whether dir/config.json is the one the checkpoint wrote (its checksum in the state;
 * "" in states older than it: not known). 0, or EXIT_RUNTIME (err_set). */
static int config_unchanged(const char *dir, const struct tstate *st)
{
	if (!st->config_sha256[0])
		return 0;
	char *path = fio_join(dir, "config.json"), sum[72];
	size_t len = 0;
	char *text = path ? fio_read_file(path, 1 << 20, &len) : NULL;
	if (text)
		dset_hash((const char *const *)&text, &len, 1, sum);
	int rc = !text ? -1
		 : strcmp(sum, st->config_sha256)
			 ? err_set("%s: changed since the checkpoint at step %lld wrote it: put "
				   "it back as it was, or train a new run from this one "
				   "(--init %s)",
				   path, (long long)st->step, dir)
			 : 0;
	free(path);
	free(text);
	return rc ? EXIT_RUNTIME : 0;
}

/* A resumed run's config.json against its saved options (the shape a run from scratch
 * was given, and a window the model takes: one of the two was edited since), and
 * against the shape flags given now that the run left to its model (asked; NULL for
 * none). 0, EXIT_USAGE or EXIT_RUNTIME (err_set). */
static int check_resumed_config(const char *dir, const struct tstate_opts *o,
				const struct tstate_opts *asked, const struct eng_config *c)
{
	char flag[96], key[96];
	if (asked && shape_differs(asked, c, flag, key, sizeof flag)) {
		err_set("--resume: %s conflicts with the run's model (%s/config.json: %s)", flag,
			dir, key);
		return EXIT_USAGE;
	}
	if (!o->init && shape_differs(o, c, flag, key, sizeof flag)) {
		err_set("%s/config.json: %s, but the run was started with %s", dir, key, flag);
		return EXIT_RUNTIME;
	}
	if (o->ctx > eng_max_context(c)) {
		err_set("%s/config.json: %s %d is below the run's --ctx %d", dir,
			eng_max_context_source(c), eng_max_context(c), o->ctx);
		return EXIT_RUNTIME;
	}
	return 0;
}

/* A resumed LoRA run's frozen weights: --init's model again, of the run's shape (the
 * digest of its weights is checked once they are read). 0 or -1 (err_set). */
static int frozen_model(const char *init, struct train_model *p)
{
	char why[1024];
	if (!(p->m.init = eng_model_open(init))) {
		snprintf(why, sizeof why, "%s", err_msg());
		return err_set("the LoRA run's frozen weights (--init %s): %s", init, why);
	}
	const struct eng_config *a = eng_model_config(p->m.init), *b = &p->m.cfg;
	if (a->vocab_size != b->vocab_size || a->hidden_size != b->hidden_size ||
	    a->num_layers != b->num_layers || a->num_heads != b->num_heads ||
	    a->num_kv_heads != b->num_kv_heads || a->head_dim != b->head_dim ||
	    a->intermediate_size != b->intermediate_size ||
	    a->tie_word_embeddings != b->tie_word_embeddings)
		return err_set(
			"the LoRA run's frozen weights (--init %s): a model of another shape "
			"than the run's config.json: a LoRA run resumes on the model it adapts",
			init);
	return 0;
}

/* Trains the run st in dir, new or resumed (asked: the shape flags given to a resumed
 * run that its model answers, NULL for none). An exit status, the error printed. */
static int run(struct tstate *st, const char *dir, bool resume, const struct tstate_opts *asked,
	       bool panel)
{
	struct train_model p = {0};
	struct eng_options eo = {0};
	st->o.threads = threads_used(st->o.threads);
	if (cli_env_engine(&eo)) {
		cli_error("%s", err_msg());
		return EXIT_USAGE;
	}
	p.m.cuda_module = eo.cuda_module;
	p.m.cpu_isa = eo.cpu_isa;
	if (cli_env_train_attention(&p.m.cuda_tiled_attention)) {
		cli_error("%s", err_msg());
		return EXIT_USAGE;
	}
	int bad = 0;
	if (!resume)
		bad = train_model_new(&st->o, &p) ? EXIT_RUNTIME : 0;
	else if (train_model_resume(dir, &p))
		bad = EXIT_RUNTIME;
	else if (!(bad = check_resumed_config(dir, &st->o, asked, &p.m.cfg)))
		bad = config_unchanged(dir, st);
	if (!bad && resume && st->o.lora && frozen_model(st->o.init, &p))
		bad = EXIT_RUNTIME;
	if (bad) {
		cli_error("%s", err_msg());
		train_model_free(&p);
		return p.usage ? EXIT_USAGE : bad;
	}
	if (p.init_path) { /* saved resolved: a repo id may name another snapshot later */
		free(st->o.init);
		st->o.init = strdup(p.init_path);
	}
	struct train_report *tr =
		train_report_new(dir, &st->o, &p, panel, cli_env_term(), resume ? st->step : -1);
	if (!tr) {
		cli_error("out of memory");
		train_model_free(&p);
		return EXIT_RUNTIME;
	}
	struct loop_report rep = train_report_callbacks(tr);
	int r = loop_run(dir, st, resume, &p.m, &rep, train_catch_signals());
	train_report_end(tr);
	train_model_free(&p);
	if (r < 0) {
		cli_error("%s", err_msg());
		return EXIT_RUNTIME;
	}
	if (r == LOOP_STOPPED) {
		/* a --val this resume added is saved with its first checkpoint, which a stop
		 * before one never wrote: the hint gives it again (again is no conflict) */
		fprintf(stderr, "stopped at step %lld: continue with 'qwenchat train --resume %s",
			(long long)st->step, dir);
		for (int i = 0; resume && asked && i < asked->n_val; i++)
			fprintf(stderr, "%s%s", i ? " " : " --val ", asked->val[i]);
		fputs("'\n", stderr);
		return 128 + train_stop_signal();
	}
	return EXIT_OK;
}

int cmd_train(int argc, char **argv)
{
	struct args a = {0};
	struct tstate st = {0};
	int ac, rc, lock = -1;
	const char *bare;
	char **av = expand_lists(argc, argv, &ac, &bare), *state_path = NULL;
	if (!av || tstate_opts_default(&a.o)) {
		free(av);
		cli_error("out of memory");
		return EXIT_RUNTIME;
	}
	if (bare) {
		free(av);
		tstate_opts_free(&a.o);
		return cli_usage("train",
				 "%s needs a file before the next option (a file whose "
				 "name starts with '-' is written ./-NAME)",
				 bare);
	}
	struct cli_common com;
	rc = cli_parse(&train_cmd, ac, av, &com, train_opt, &a, NULL);
	cli_notices_hold(); /* until the run is known to start (the plan), or an error */
	if (rc) {
		rc = rc == CLI_DONE ? EXIT_OK : rc;
	} else if (a.resume) {
		if ((lock = rundir_lock(a.resume, false)) < 0 ||
		    read_state(a.resume, &st, &state_path)) {
			cli_error("%s", err_msg());
			rc = EXIT_RUNTIME;
		} else if (!(rc = merge_resume(&a, &st, state_path))) {
			rc = run(&st, a.resume, true, &a.o, !a.no_panel);
		}
	} else if (!(rc = check_new(&a))) {
		char *top = fio_missing_top(a.out); /* what a failed run removes again */
		struct rundir_leftovers left = {0};
		if ((lock = rundir_lock(a.out, true)) < 0 || rundir_check_new(a.out) ||
		    rundir_leftovers_init(&left, a.out, top)) {
			cli_error("%s", err_msg());
			rc = EXIT_RUNTIME;
		} else {
			train_catch_signals_new(&left);
			st.o = a.o;
			memset(&a.o, 0, sizeof a.o);
			rc = run(&st, a.out, false, NULL, !a.no_panel);
		}
		if (rc && lock >= 0) { /* what a run that never saved made goes again */
			rundir_abandon(a.out, lock, top);
			lock = -1;
		} else if (rc && top) { /* directories made before the lock was refused */
			fio_rmdirs_upto(a.out, top);
		}
		train_catch_signals_new(NULL);
		rundir_leftovers_free(&left);
		free(top);
	}
	if (lock >= 0)
		rundir_unlock(a.resume ? a.resume : a.out, lock);
	free(a.out);
	free(a.resume);
	tstate_opts_free(&st.o);
	tstate_opts_free(&a.o);
	free(state_path);
	free(av);
	cli_notices_flush(); /* none held past an error; any left are a success's */
	return rc;
}
