/* train_report.c — the reports of a training run printed on stderr (plain lines, a
 * live line or the live panel), and the signals that stop the run. */
#include "src/cli/train_report.h"
#include "src/base/clock.h"
#include "src/base/proc.h"
#include "src/base/term.h"
#include "src/base/units.h"
#include "src/cli/cli.h"
#include "src/train/batch.h"
#include "src/cli/sigbus.h"
#include "src/train/panel.h"
#if HAVE_TUI
#include "ui/live.h"
#define HAVE_PANEL 1
#else
/* Without the terminal UI there is no terminfo, so no panel: no area ever opens. */
struct live;
#define HAVE_PANEL            0
#define live_open(fd, term)   ((void)(fd), (void)(term), (struct live *)NULL)
#define live_columns(l)       ((void)(l), 80)
#define live_draw(l, text)    ((void)(l), (void)(text))
#define live_print(l, msg)    ((void)(l), (void)(msg))
#define live_close(l)         ((void)(l))
#define live_signal_note(msg) ((void)(msg), false)
#define live_signal_cursor(v) ((void)(v))
#define live_signal_lost()    ((void)0)
#endif

#include <langinfo.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

enum mode {
	PLAIN_LINES, /* a line a step */
	LIVE_LINE,   /* one line rewritten in place */
	PANEL,       /* the panel, redrawn in place */
};

/* Redraws of the panel at most this often: a small model takes thousands of steps a
 * second, more than a terminal can show or an eye follow. */
#define PANEL_INTERVAL 0.1

struct train_report {
	enum mode mode;
	bool live; /* LIVE_LINE: the line is showing */
	const char *dir;
	const struct tstate_opts *o;
	const struct train_model *model; /* its remarks come with the plan */
	double started;                  /* clock_now() at the start, for the elapsed time */
	struct live *area;               /* PANEL: where it is drawn */
	double drawn;                    /* PANEL: when it was last drawn */
	bool pending;                    /* PANEL: steps not drawn yet */
	bool stop_told;                  /* the stop asked for was said above the panel */
	bool planned;                    /* the plan was said: notices are no longer held */
	struct panel panel;
	/* this process's steps, for the closing line */
	int64_t first_step, last_step;
	double step_seconds, last_loss, last_val;
	int64_t last_val_step;
	int64_t positions, targets; /* of the steps above: fewer targets with --sft */
};

static volatile sig_atomic_t g_stop, g_stepping;
/* What a signal that stops at once says: the last whole checkpoint. Two buffers, the
 * one in use switched once the other is written, so a handler never reads half. */
static char g_at_once[2][4352];
static volatile sig_atomic_t g_at_once_used, g_at_once_none;
/* ... and when the first save was being put in place: said instead of "nothing" */
static char g_first_save[4352];
/* What a new run stopped before its first checkpoint leaves behind. */
static const struct rundir_leftovers *g_leftovers;
/* The trainer's remarks come through a callback without a user pointer. */
static struct train_report *g_report;

/* g_at_once for a checkpoint of step `saved` in dir (-1: none yet). */
static void set_at_once(const char *dir, int64_t saved)
{
	int next = !g_at_once_used;
	if (saved < 0) {
		snprintf(g_at_once[next], sizeof g_at_once[next],
			 "qwenchat: stopped at once: nothing was saved in %s yet\n", dir);
		snprintf(g_first_save, sizeof g_first_save,
			 "qwenchat: stopped at once while the first checkpoint was put in place "
			 "in %s: it is whole, and the next --resume settles it\n",
			 dir);
	} else
		snprintf(g_at_once[next], sizeof g_at_once[next],
			 "qwenchat: stopped at once: %s holds the checkpoint of step %lld (a save "
			 "cut short is settled by the next --resume)\n",
			 dir, (long long)saved);
	g_at_once_used = next;
	/* after the switch: a handler between the two says the first save is whole, as
	 * it is, never that nothing was saved */
	g_at_once_none = saved < 0;
}

struct train_report *train_report_new(const char *dir, const struct tstate_opts *o,
				      const struct train_model *model, bool panel, const char *term,
				      int64_t saved)
{
	struct train_report *r = calloc(1, sizeof *r);
	if (!r)
		return NULL;
	*r = (struct train_report){.dir = dir, .o = o, .model = model, .started = clock_now()};
	/* setlocale(LC_ALL, "") ran in main: a locale without UTF-8 gets ASCII bars */
	panel_init(&r->panel, strcmp(nl_langinfo(CODESET), "UTF-8") != 0);
	bool tty = isatty(STDERR_FILENO) && term && *term && strcmp(term, "dumb");
	if (tty && panel && HAVE_PANEL)
		r->area = live_open(STDERR_FILENO, term);
	/* an unknown terminal may not take the live line's escape sequences either */
	r->mode = r->area ? PANEL : tty && (!panel || !HAVE_PANEL) ? LIVE_LINE : PLAIN_LINES;
	g_report = r;
	set_at_once(dir, saved);
	if (saved >= 0) /* a resumed run: the checkpoint it started from */
		panel_saved(&r->panel, saved, -1);
	return r;
}

/* ---- messages -------------------------------------------------------------------------- */

/* Ends the live line before a line of its own. */
static void settle(struct train_report *r)
{
	if (r->live)
		fputs("\r\033[K", stderr);
	r->live = false;
}

/* A message that stays: above the panel, or on a line of its own. */
static void say(struct train_report *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void say(struct train_report *r, const char *fmt, ...)
{
	char msg[2048];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	if (r->area) {
		live_print(r->area, msg);
	} else {
		settle(r);
		fputs(msg, stderr);
	}
}

static void on_notice(void *user, const char *msg)
{
	struct train_report *r = user;
	if (!r->planned) { /* held with the options' until the run is known to start */
		cli_notice(msg);
		return;
	}
	say(r, "qwenchat: %s\n", msg);
}

static void on_engine_notice(const char *msg)
{
	if (g_report)
		on_notice(g_report, msg);
	else
		cli_notice(msg);
}

/* What --sft made of one stream's files. */
static void print_conv_stream(const char *what, const struct dset_sft *c, int64_t tokens,
			      bool cached, int ctx)
{
	fprintf(stderr, "%s: %lld conversation%s%s, %lld tokens, %lld of them the assistant's",
		what, (long long)c->conversations, c->conversations == 1 ? "" : "s",
		cached ? " (cached)" : "", (long long)tokens, (long long)c->scored);
	if (c->cut)
		fprintf(stderr, "; %lld cut after the last answer within --ctx %d",
			(long long)c->cut, ctx);
	if (c->left_out)
		fprintf(stderr, "; %lld left out (the first answer ends past --ctx %d",
			(long long)c->left_out, ctx);
	if (c->left_out && c->left_out_ctx > ctx) /* 0 in a cache written before it was kept */
		fprintf(stderr, ": --ctx %lld would keep %s", (long long)c->left_out_ctx,
			c->left_out == 1 ? "it" : "them all");
	if (c->left_out)
		fputc(')', stderr);
	if (c->no_answer)
		fprintf(stderr, "; %lld left out (no assistant answer to train on)",
			(long long)c->no_answer);
}

static void print_convs(const struct train_report *r, const struct loop_plan *lp)
{
	print_conv_stream("data", &lp->train_sft, lp->train_tokens, lp->train_cached, r->o->ctx);
	if (lp->train_rows)
		fprintf(stderr,
			"\nrows: packed, %lld row%s of --ctx %d (%.2f conversations a row): "
			"%.1f%% of the positions are padding",
			(long long)lp->train_rows, lp->train_rows == 1 ? "" : "s", r->o->ctx,
			(double)lp->train_sft.conversations / (double)lp->train_rows,
			100 * lp->train_padding);
	else
		fprintf(stderr,
			"\nrows: one conversation each, padded to --ctx %d: %.1f%% of the "
			"positions are padding",
			r->o->ctx, 100 * lp->train_padding);
	if (lp->val_tokens || lp->val_sft.conversations) {
		fputc('\n', stderr);
		print_conv_stream("validation", &lp->val_sft, lp->val_tokens, lp->val_cached,
				  r->o->ctx);
	}
}

/* The plan and the trainer come before the first step: nothing is live yet. */
/* The rows an evaluation reads under --eval-tokens: its first ones, or all of them
 * when the cap is past the validation set's end (a conversation a row with --sft;
 * packed, fewer). */
static void say_eval_rows(const struct train_report *r, const struct loop_plan *lp)
{
	const struct tstate_opts *o = r->o;
	int64_t cap = tstate_eval_rows(o),
		rows = o->sft ? lp->val_sft.conversations
			      : batch_windows((size_t)lp->val_tokens, o->ctx);
	if (cap >= rows)
		fprintf(stderr, "\nevaluation: all %lld %s%s (--eval-tokens %lld covers them)",
			(long long)rows, o->sft ? "conversation" : "row", rows == 1 ? "" : "s",
			(long long)o->eval_tokens);
	else if (o->pack)
		fprintf(stderr,
			"\nevaluation: at most the first %lld rows of %d tokens (--eval-tokens "
			"%lld)",
			(long long)cap, o->ctx, (long long)o->eval_tokens);
	else
		fprintf(stderr,
			"\nevaluation: the first %lld of %lld rows of %d tokens (--eval-tokens "
			"%lld)",
			(long long)cap, (long long)rows, o->ctx, (long long)o->eval_tokens);
}

static void on_plan(void *user, const struct loop_plan *lp)
{
	struct train_report *r = user;
	const struct eng_train_plan *pl = &lp->plan;
	char w[32], g[32], m[32], act[32], sc[32], tot[32], av[32], data[32];
	settle(r);
	r->planned = true;
	cli_notices_flush(); /* the options and the data are good: what was noted on them */
	for (int i = 0; i < r->model->n_remarks; i++)
		cli_notice(r->model->remarks[i]);
	if (lp->sft)
		print_convs(r, lp);
	else
		fprintf(stderr, "data: %lld training tokens%s", (long long)lp->train_tokens,
			lp->train_cached ? " (cached)" : "");
	if (lp->val_tokens && !lp->sft)
		fprintf(stderr, ", %lld validation tokens%s", (long long)lp->val_tokens,
			lp->val_cached ? " (cached)" : "");
	if ((lp->val_tokens || lp->val_sft.conversations) && tstate_eval_rows(r->o) > 0)
		say_eval_rows(r, lp);
	fprintf(stderr,
		"\nmemory plan (%s): weights %s, gradients %s, AdamW moments %s, "
		"activations %s (%d x %d tokens%s%s), scratch %s, token streams %s: total %s",
		pl->device ? "GPU" : "host", units_ibytes((double)pl->weights, w, sizeof w),
		units_ibytes((double)pl->grads, g, sizeof g),
		units_ibytes((double)pl->moments, m, sizeof m),
		units_ibytes((double)pl->activations, act, sizeof act), r->o->batch, r->o->ctx,
		pl->recompute ? ", one layer: recomputed" : "",
		pl->recompute_probs ? ", attention probabilities recomputed" : "",
		units_ibytes((double)pl->scratch, sc, sizeof sc),
		units_ibytes((double)lp->data_bytes, data, sizeof data),
		units_ibytes((double)(pl->total + lp->data_bytes), tot, sizeof tot));
	if (lp->available)
		fprintf(stderr, " of %s available",
			units_ibytes((double)lp->available, av, sizeof av));
	fputc('\n', stderr);
	if (lp->recompute_added)
		cli_notice("the plan fits only with --recompute: turned on");
}

static void on_ready(void *user, struct eng_trainer *t)
{
	struct train_report *r = user;
	const struct tstate_opts *o = r->o;
	struct eng_train_plan pl;
	eng_trainer_get_plan(t, &pl);
	settle(r);
	/* on a GPU, which attention runs: the tiled one where asked for and the device has it */
	const char *be = eng_trainer_backend(t), *kern = eng_trainer_kernels(t);
	char att[48] = "";
	if (strcmp(be, "cpu") && kern)
		snprintf(att, sizeof att, ", %s attention", kern);
	char lora[96] = "";
	if (o->lora)
		snprintf(lora, sizeof lora, " (LoRA rank %d, alpha %.15g, of a %.3gM model)",
			 o->lora, o->lora_alpha > 0 ? o->lora_alpha : o->lora, pl.frozen / 1e6);
	fprintf(stderr,
		"training %.3gM parameters%s on %s (%s products%s), %lld step%s of %d x %d x %d "
		"tokens\n"
		"lr %.15g -> %.15g (warm-up %lld, cosine to step %lld), AdamW beta1 %.15g beta2 "
		"%.15g eps %.15g weight decay %.15g, clip %.15g, seed %lld%s%s\n",
		pl.params / 1e6, lora, be, eng_trainer_exact(t) ? "fp32" : "bf16", att,
		(long long)o->steps, o->steps == 1 ? "" : "s", o->accum, o->batch, o->ctx, o->lr,
		o->min_lr, (long long)o->warmup, (long long)o->cosine_steps, o->beta1, o->beta2,
		o->eps, o->weight_decay, o->clip, (long long)o->seed,
		o->sequential ? ", sequential" : "",
		o->sft ? ", on the assistant's tokens (--sft)" : "");
}

/* ---- steps -------------------------------------------------------------------------------- */

static void draw_panel(struct train_report *r)
{
	struct strbuf b = {0};
	panel_render(&r->panel, live_columns(r->area), &b);
	if (!b.oom)
		live_draw(r->area, b.p);
	free(b.p);
	r->drawn = clock_now();
	r->pending = false;
}

/* Leaves the panel on screen as it last was, the cursor below it: what is printed
 * next goes there. */
static void end_panel(struct train_report *r)
{
	if (!r->area)
		return;
	if (r->pending)
		draw_panel(r);
	live_close(r->area);
	r->area = NULL;
	r->mode = PLAIN_LINES;
}

/* The signal handler's note, written over the panel's last line, goes at the next draw:
 * the message is said again above the panel, where it stays. */
static void tell_stop(struct train_report *r)
{
	if (g_stop && !r->stop_told) {
		say(r, "qwenchat: stopping after this step and saving it (again to stop at "
		       "once)\n");
		r->stop_told = true;
	}
}

static void step_panel(struct train_report *r, const struct loop_status *s)
{
	panel_step(&r->panel, s, clock_now() - r->started);
	r->pending = true;
	tell_stop(r);
	if (s->step == s->steps || g_stop || clock_now() - r->drawn >= PANEL_INTERVAL)
		draw_panel(r);
}

/* What the steps of this process came to, under the last save's line. */
static void tally(struct train_report *r, const struct loop_status *s)
{
	if (!r->first_step)
		r->first_step = s->step;
	r->last_step = s->step;
	r->step_seconds += s->step_seconds;
	r->positions += s->step_positions;
	r->targets += s->step_tokens;
	r->last_loss = s->loss;
	r->last_val = s->val_loss;
	r->last_val_step = s->val_step;
}

static void say_tally(struct train_report *r)
{
	char t[32], val[48] = "";
	if (!r->first_step)
		return;
	if (!isnan(r->last_val) && r->last_val_step == r->last_step)
		snprintf(val, sizeof val, ", val_loss %.4f", r->last_val);
	else if (!isnan(r->last_val)) /* a stop kept the last step's from running */
		snprintf(val, sizeof val, ", val_loss %.4f (step %lld)", r->last_val,
			 (long long)r->last_val_step);
	if (r->step_seconds < 1) /* a few small steps: "0.00 s" beside a rate reads oddly */
		snprintf(t, sizeof t, "%.1f ms", r->step_seconds * 1e3);
	else if (r->step_seconds < 60)
		snprintf(t, sizeof t, "%.2f s", r->step_seconds);
	else
		units_duration(r->step_seconds, t, sizeof t);
	char targets[64] = ""; /* --sft: the prompts are computed, not trained on */
	if (r->positions != r->targets)
		snprintf(targets, sizeof targets, " (%lld of them targets)", (long long)r->targets);
	char which[48];
	if (r->first_step == r->last_step)
		snprintf(which, sizeof which, "step %lld", (long long)r->last_step);
	else
		snprintf(which, sizeof which, "steps %lld-%lld", (long long)r->first_step,
			 (long long)r->last_step);
	say(r, "trained %s in %s: %lld tokens%s at %.0f tok/s; loss %.4f%s\n", which, t,
	    (long long)r->positions, targets,
	    r->step_seconds > 0 ? (double)r->positions / r->step_seconds : 0.0, r->last_loss, val);
}

/* stderr that no longer takes writes (a closed pipe: SIGPIPE is ignored, see
 * catch_stop) ends the run as a hangup does, the step under way saved: the progress
 * has nowhere to go, and nothing of the run must be lost with it. */
static void output_lost(void)
{
	if (!ferror(stderr))
		return;
	clearerr(stderr);
	if (!g_stop)
		g_stop = SIGPIPE;
}

/* The columns of the terminal on stderr, asked at every step (it may be resized). */
static int stderr_columns(void)
{
	int c = term_columns(STDERR_FILENO);
	return c > 0 ? c : 80;
}

static void on_step(void *user, const struct loop_status *s)
{
	struct train_report *r = user;
	char eta[32], f[8][64];
	tally(r, s);
	if (r->mode == PANEL) {
		step_panel(r, s);
		return;
	}
	units_duration(s->eta_seconds, eta, sizeof eta);
	int n = 0;
	snprintf(f[n++], sizeof f[0], "step %lld/%lld", (long long)s->step, (long long)s->steps);
	snprintf(f[n++], sizeof f[0], "  loss %.4f", s->loss);
	if (!isnan(s->val_loss))
		snprintf(f[n++], sizeof f[0], "  val %.4f", s->val_loss);
	snprintf(f[n++], sizeof f[0], "  lr %.3e", s->lr);
	snprintf(f[n++], sizeof f[0], "  norm %.3f", s->grad_norm);
	snprintf(f[n++], sizeof f[0], "  %.0f tok/s", s->tokens_per_second);
	snprintf(f[n++], sizeof f[0], "  %.1f%% of matmul peak", 100 * s->peak_share);
	snprintf(f[n++], sizeof f[0], "  ETA %s", eta);
	/* The live line keeps to the terminal's width, whole fields from the first: one
	 * that wraps leaves a row behind at every step, as \r\033[K clears only the last. */
	int room = r->mode == LIVE_LINE ? stderr_columns() - 1 : INT_MAX, used = 0;
	if (r->mode == LIVE_LINE)
		fputs("\r\033[K", stderr);
	for (int i = 0; i < n && (i == 0 || used + (int)strlen(f[i]) <= room); i++) {
		fputs(f[i], stderr);
		used += (int)strlen(f[i]);
	}
	if (r->mode != LIVE_LINE)
		fputc('\n', stderr);
	r->live = r->mode == LIVE_LINE;
	fflush(stderr);
	output_lost();
}

static void on_eval(void *user, const struct loop_status *s)
{
	struct train_report *r = user;
	r->last_val = s->val_loss;
	r->last_val_step = s->step;
	panel_eval(&r->panel, s->step, s->val_loss);
	say(r, "step %lld: val_loss %.4f, val_ppl %.4g\n", (long long)s->step, s->val_loss,
	    exp(s->val_loss));
	if (r->area)
		draw_panel(r);
}

static void on_evaluating(void *user, int64_t step, bool running)
{
	struct train_report *r = user;
	panel_evaluating(&r->panel, running ? step : -1);
	if (r->area && running) {
		draw_panel(r); /* now: the evaluation may take long */
	} else if (r->area) {
		r->pending = true;
		tell_stop(r); /* a stop abandons it */
	}
}

static void on_saved(void *user, int64_t step, double seconds)
{
	struct train_report *r = user;
	panel_saved(&r->panel, step, seconds);
	if (step == r->o->steps)
		panel_finished(&r->panel, clock_now() - r->started);
	set_at_once(r->dir, step);
	r->pending = true;
	/* the run's last save: the panel stays above the line that says so */
	if (step == r->o->steps || g_stop)
		end_panel(r);
	say(r, "saved %s at step %lld (%.1f s)\n", r->dir, (long long)step, seconds);
	if (step == r->o->steps || g_stop)
		say_tally(r);
	if (r->area)
		draw_panel(r);
}

/* The steps begin: from now on a first signal saves (before, there is nothing to). */
static void on_begin(void *user)
{
	(void)user;
	g_stepping = 1;
}

struct loop_report train_report_callbacks(struct train_report *r)
{
	return (struct loop_report){.user = r,
				    .notice = on_notice,
				    .engine_notice = on_engine_notice,
				    .plan = on_plan,
				    .ready = on_ready,
				    .begin = on_begin,
				    .step = on_step,
				    .eval = on_eval,
				    .evaluating = on_evaluating,
				    .saved = on_saved};
}

void train_report_end(struct train_report *r)
{
	if (!r)
		return;
	end_panel(r);
	settle(r);
	g_report = NULL;
	free(r);
}

/* ---- signals ------------------------------------------------------------------------------- */

/* The first SIGINT, SIGTERM or SIGHUP asks the loop to save after the step under way; a second
 * one, or one before the first step (reading the data, loading the model), ends the
 * program at once (the checkpoint on disk is whole either way: a save goes into place
 * only once its files are all written and marked so, and one cut short before that is
 * removed here or by the next start). A SIGHUP never counts as the second: a closed
 * terminal sends one from the kernel and one from the shell, which would cut the save
 * the first one asked for. */
static void on_signal(int sig)
{
	static const char msg[] = "qwenchat: stopping after this step and saving it "
				  "(again to stop at once)";
	if (g_stop && g_stepping && sig == SIGHUP)
		return;
	if (g_stop || !g_stepping) {
		/* a new run without a checkpoint yet (else it keeps all) */
		bool kept = g_leftovers && rundir_leftovers_remove(g_leftovers);
		rundir_lock_drop(); /* a run kept, or a resumed one: its directory a model's */
		live_signal_cursor(true);
		/* said once the report knows the run's directory, steps begun or not */
		const char *m = kept && g_at_once_none ? g_first_save : g_at_once[g_at_once_used];
		ssize_t w = write(STDERR_FILENO, m, strlen(m));
		(void)w;
		signal(sig, SIG_DFL);
		raise(sig);
		return;
	}
	g_stop = sig;
	if (!live_signal_note(msg)) {
		ssize_t w = write(STDERR_FILENO, "\n", 1);
		w = write(STDERR_FILENO, msg, sizeof msg - 1);
		w = write(STDERR_FILENO, "\n", 1);
		(void)w;
	}
}

static void catch_suspend(void);

/* Ctrl-Z: the cursor shown for the shell, the program stopped (the default action,
 * raised again unblocked); once continued, the panel is drawn afresh below what the
 * shell wrote. */
static void on_suspend(int sig)
{
	sigset_t set;
	live_signal_cursor(true);
	signal(sig, SIG_DFL);
	sigemptyset(&set);
	sigaddset(&set, sig);
	sigprocmask(SIG_UNBLOCK, &set, NULL);
	raise(sig);
	catch_suspend();
	live_signal_lost();
	live_signal_cursor(false);
}

static void catch_suspend(void)
{
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_suspend;
	sa.sa_flags = SA_RESTART;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGTSTP, &sa, NULL);
}

/* SIGINT, SIGTERM and SIGHUP (a closed terminal, a dropped ssh session) save and stop;
 * one the run was started with ignored stays ignored, as the shell asks of a
 * background job (SIGINT) and nohup of its command (SIGHUP). */
static void catch_stop(void)
{
	struct sigaction old[PROC_N_STOPS];
	proc_catch_stops(on_signal, SA_RESTART, old);
	signal(SIGPIPE, SIG_IGN); /* a write to a closed pipe fails instead: output_lost */
}

/* A SIGBUS (a model or data file truncated under the run) ends it at once: a new
 * run's first files go, as for a second signal. */
static void remove_leftovers(void)
{
	if (g_leftovers)
		rundir_leftovers_remove(g_leftovers);
	rundir_lock_drop();
	live_signal_cursor(true); /* the cursor and the echo back: _exit runs no atexit */
}

void train_catch_signals_new(const struct rundir_leftovers *l)
{
	g_leftovers = l;
	sigbus_cleanup(remove_leftovers);
	catch_stop();
}

const volatile sig_atomic_t *train_catch_signals(void)
{
	struct sigaction old;
	sigbus_cleanup(remove_leftovers);
	catch_stop();
	/* a shell without job control has Ctrl-Z ignored: so it stays */
	if (g_report && g_report->area && sigaction(SIGTSTP, NULL, &old) == 0 &&
	    old.sa_handler == SIG_DFL)
		catch_suspend();
	return &g_stop;
}

int train_stop_signal(void)
{
	return (int)g_stop;
}
