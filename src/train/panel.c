/* panel.c — the training panel's figures (the model) and their layout as lines of text
 * (the view). */
#include "src/train/panel.h"
#include "src/base/units.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

/* ---- the model --------------------------------------------------------------------- */

static void curve_init(struct panel_curve *c)
{
	c->n = 0;
	c->per = 1;
}

static void curve_add(struct panel_curve *c, double v)
{
	if (c->n == 0 || c->count[c->n - 1] >= c->per) {
		if (c->n == PANEL_BUCKETS) { /* full: halve the resolution */
			for (int i = 0; i < PANEL_BUCKETS / 2; i++) {
				c->sum[i] = c->sum[2 * i] + c->sum[2 * i + 1];
				c->count[i] = c->count[2 * i] + c->count[2 * i + 1];
			}
			c->n = PANEL_BUCKETS / 2;
			c->per *= 2;
		}
		c->sum[c->n] = 0;
		c->count[c->n] = 0;
		c->n++;
	}
	c->sum[c->n - 1] += v;
	c->count[c->n - 1]++;
}

void panel_init(struct panel *p, bool ascii)
{
	p->ascii = ascii;
	p->have_step = false;
	p->elapsed = 0;
	curve_init(&p->loss);
	curve_init(&p->lr);
	p->saved_step = -1;
	p->saved_seconds = 0;
	p->eval_step = -1;
	p->eval_loss = NAN;
	p->evaluating = -1;
}

void panel_step(struct panel *p, const struct loop_status *s, double elapsed)
{
	p->last = *s;
	p->have_step = true;
	p->elapsed = elapsed;
	curve_add(&p->loss, s->loss);
	curve_add(&p->lr, s->lr);
}

void panel_eval(struct panel *p, int64_t step, double val_loss)
{
	p->eval_step = step;
	p->eval_loss = val_loss;
	p->last.val_loss = val_loss; /* shown beside the loss from now on */
}

void panel_evaluating(struct panel *p, int64_t step)
{
	p->evaluating = step;
}

void panel_saved(struct panel *p, int64_t step, double seconds)
{
	p->saved_step = step;
	p->saved_seconds = seconds;
}

void panel_finished(struct panel *p, double elapsed)
{
	p->elapsed = elapsed;
	p->last.eta_seconds = 0;
}

/* ---- the view ------------------------------------------------------------------------ */

/* The lines being written: every piece goes through put_text or put_glyphs, which stop
 * at the width, so no line can come out wider. */
struct view {
	struct strbuf *b;
	int width;
	int used;  /* columns of the current line */
	int lines; /* lines begun */
	bool ascii;
};

static void next_line(struct view *v)
{
	sb_put(v->b, "\n", 1);
	v->used = 0;
	v->lines++;
}

/* ASCII text, cut where the line ends. */
static void put_text(struct view *v, const char *s)
{
	size_t n = strlen(s), room = (size_t)(v->width - v->used);
	if (n > room)
		n = room;
	sb_put(v->b, s, n);
	v->used += (int)n;
}

/* count copies of a character one column wide (UTF-8 or ASCII). */
static void put_glyphs(struct view *v, const char *g, int count)
{
	for (; count > 0 && v->used < v->width; count--, v->used++)
		sb_puts(v->b, g);
}

enum { FIELD = 96 }; /* the longest field, with its NUL */

/* Fields separated by two spaces, on at most max_lines lines: a field that does not fit
 * where the line is goes to the next one, and past the last one it is left out. */
static void flow(struct view *v, char fields[][FIELD], int n, int max_lines)
{
	int first = v->lines;
	for (int i = 0; i < n; i++) {
		int len = (int)strlen(fields[i]);
		if (v->used > 0 && v->used + 2 + len > v->width) {
			if (v->lines - first + 1 >= max_lines)
				return;
			next_line(v);
		}
		if (v->used > 0)
			put_text(v, "  ");
		put_text(v, fields[i]);
	}
}

/* "step S/N [████▍    ]  P%": the bar takes what the numbers leave. The share is
 * rounded down, so that 100.0% means done. */
static void progress_line(struct view *v, const struct loop_status *s)
{
	static const char *const eighths[8] = {"", "▏", "▎", "▍", "▌", "▋", "▊", "▉"};
	double frac = s->steps > 0 ? (double)s->step / (double)s->steps : 1;
	frac = frac < 0 ? 0 : frac > 1 ? 1 : frac;
	char head[64], tail[16];
	snprintf(head, sizeof head, "step %lld/%lld", (long long)s->step, (long long)s->steps);
	snprintf(tail, sizeof tail, "%5.1f%%", floor(1000 * frac) / 10);
	int bar = v->width - (int)strlen(head) - (int)strlen(tail) - 4; /* " [", "] " */
	put_text(v, head);
	put_text(v, " ");
	if (bar >= 4) {
		int fill = (int)(frac * bar * 8), full = fill / 8, part = fill % 8;
		put_text(v, "[");
		put_glyphs(v, v->ascii ? "#" : "█", full);
		if (part && !v->ascii)
			put_glyphs(v, eighths[part], 1);
		put_glyphs(v, " ", bar - full - (part && !v->ascii ? 1 : 0));
		put_text(v, "] ");
	}
	put_text(v, tail);
}

/* The curve in the columns left on the line: one column a bucket while there are
 * fewer buckets than columns, else each column the mean of its share of them; eight
 * heights from the least shown (or zero, for a rate whose changes are small beside
 * its size) to the greatest. */
static void sparkline(struct view *v, const struct panel_curve *c, bool from_zero)
{
	static const char *const blocks[8] = {"▁", "▂", "▃", "▄", "▅", "▆", "▇", "█"};
	static const char *const ascii[8] = {"_", ".", "-", "~", "=", "+", "*", "#"};
	double mean[PANEL_BUCKETS], lo = INFINITY, hi = -INFINITY;
	int k = v->width - v->used;
	k = c->n < k ? c->n : k;
	for (int j = 0; j < k; j++) {
		double sum = 0;
		int64_t count = 0;
		for (int i = j * c->n / k; i < (j + 1) * c->n / k; i++) {
			sum += c->sum[i];
			count += c->count[i];
		}
		mean[j] = count ? sum / (double)count : 0;
		lo = mean[j] < lo ? mean[j] : lo;
		hi = mean[j] > hi ? mean[j] : hi;
	}
	if (from_zero && lo > 0)
		lo = 0;
	for (int j = 0; j < k; j++) {
		/* a flat curve (a constant rate) sits in the middle, not on the floor */
		int h = hi > lo ? (int)lround((mean[j] - lo) / (hi - lo) * 7) : 3;
		put_glyphs(v, (v->ascii ? ascii : blocks)[h], 1);
	}
}

/* The loss and the learning rate, each with its curve (the rate's from zero); the
 * curves start in the same column. */
static void curve_lines(struct view *v, const struct panel *p)
{
	const struct loop_status *s = &p->last;
	char loss[64], lr[32];
	int n = snprintf(loss, sizeof loss, "loss %.4f", s->loss);
	if (!isnan(s->val_loss))
		snprintf(loss + n, sizeof loss - (size_t)n, "  val %.4f", s->val_loss);
	snprintf(lr, sizeof lr, "lr %.2e", s->lr);
	int col = (int)(strlen(loss) > strlen(lr) ? strlen(loss) : strlen(lr)) + 2;
	const char *label[2] = {loss, lr};
	const struct panel_curve *curve[2] = {&p->loss, &p->lr};
	for (int i = 0; i < 2; i++) {
		if (i)
			next_line(v);
		put_text(v, label[i]);
		if (v->width - col < 4) /* too narrow for a curve worth the name */
			continue;
		put_glyphs(v, " ", col - v->used);
		sparkline(v, curve[i], i == 1);
	}
}

static void rate_lines(struct view *v, const struct panel *p)
{
	const struct loop_status *s = &p->last;
	char f[5][FIELD], t[32];
	int n = 0;
	/* the times first: a narrow terminal leaves out what comes last */
	snprintf(f[n++], sizeof f[0], "elapsed %s", units_duration(p->elapsed, t, sizeof t));
	snprintf(f[n++], sizeof f[0], "ETA %s", units_duration(s->eta_seconds, t, sizeof t));
	snprintf(f[n++], sizeof f[0], "%.0f tok/s", s->tokens_per_second);
	if (s->peak_share > 0)
		snprintf(f[n++], sizeof f[0], "%.1f%% of matmul peak", 100 * s->peak_share);
	snprintf(f[n++], sizeof f[0], "grad norm %.3f", s->grad_norm);
	flow(v, f, n, 2);
}

static void event_line(struct view *v, const struct panel *p)
{
	char f[2][FIELD];
	int n = 1;
	if (p->saved_step >= 0 && p->saved_seconds < 0) /* a resumed run's, saved before */
		snprintf(f[0], sizeof f[0], "checkpoint: step %lld", (long long)p->saved_step);
	else if (p->saved_step >= 0)
		snprintf(f[0], sizeof f[0], "checkpoint: step %lld (%.1f s)",
			 (long long)p->saved_step, p->saved_seconds);
	else
		snprintf(f[0], sizeof f[0], "checkpoint: none yet");
	/* an evaluation holds the steps up as long as it takes: say one is running */
	if (p->evaluating >= 0)
		snprintf(f[n++], sizeof f[0], " evaluating step %lld on --val ...",
			 (long long)p->evaluating);
	else if (p->eval_step >= 0)
		snprintf(f[n++], sizeof f[0], " eval: step %lld, val_loss %.4f, ppl %.4g",
			 (long long)p->eval_step, p->eval_loss, exp(p->eval_loss));
	flow(v, f, n, 1);
}

int panel_render(const struct panel *p, int width, struct strbuf *b)
{
	struct view v = {b, width > 0 ? width : 1, 0, 1, p->ascii};
	if (!p->have_step) { /* before the first step, or a run without one (--steps 0) */
		if (p->evaluating < 0 && p->eval_step < 0 && p->saved_step < 0)
			put_text(&v, "starting");
		else
			event_line(&v, p);
		return v.lines;
	}
	progress_line(&v, &p->last);
	next_line(&v);
	curve_lines(&v, p);
	next_line(&v);
	rate_lines(&v, p);
	next_line(&v);
	event_line(&v, p);
	return v.lines;
}
