/* trainlog.c — train-log.jsonl records and the hand-written loss.svg. */
#include "src/train/trainlog.h"
#include "src/base/array.h"
#include "src/base/err.h"

#include <jansson.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void tlog_init(struct tlog *l)
{
	memset(l, 0, sizeof *l);
}

void tlog_free(struct tlog *l)
{
	free(l->text.p);
	free(l->train);
	free(l->val);
	memset(l, 0, sizeof *l);
}

static int push(struct tlog_point **a, size_t *n, size_t *cap, int64_t step, double v)
{
	if (arr_reserve(a, cap, *n + 1, sizeof **a))
		return -1;
	(*a)[(*n)++] = (struct tlog_point){step, v};
	return 0;
}

static void field(struct strbuf *b, const char *key, double v)
{
	sb_printf(b, ", \"%s\": ", key);
	sb_real(b, v);
}

int tlog_add_step(struct tlog *l, const struct tlog_step *s)
{
	if (!isfinite(s->loss) || !isfinite(s->grad_norm) || !isfinite(s->lr) ||
	    !isfinite(s->seconds))
		return err_set("train-log: step %lld: a value is not finite", (long long)s->step);
	if (push(&l->train, &l->n_train, &l->cap_train, s->step, s->loss))
		return -1;
	l->last = l->text.n;
	sb_printf(&l->text, "{\"step\": %lld", (long long)s->step);
	field(&l->text, "loss", s->loss);
	field(&l->text, "grad_norm", s->grad_norm);
	field(&l->text, "lr", s->lr);
	sb_printf(&l->text, ", \"tokens\": %lld", (long long)s->tokens);
	field(&l->text, "seconds", s->seconds);
	sb_puts(&l->text, "}\n");
	return l->text.oom ? err_set("train-log: out of memory") : 0;
}

int tlog_add_eval(struct tlog *l, int64_t step, double val_loss)
{
	if (!isfinite(val_loss))
		return err_set("train-log: step %lld: the validation loss is not finite",
			       (long long)step);
	if (push(&l->val, &l->n_val, &l->cap_val, step, val_loss))
		return -1;
	l->last = l->text.n;
	sb_printf(&l->text, "{\"step\": %lld", (long long)step);
	field(&l->text, "val_loss", val_loss);
	double ppl = exp(val_loss);
	if (isfinite(ppl))
		field(&l->text, "val_ppl", ppl);
	else
		sb_puts(&l->text, ", \"val_ppl\": null"); /* past 709 nats: no double holds it */
	sb_puts(&l->text, "}\n");
	return l->text.oom ? err_set("train-log: out of memory") : 0;
}

/* One record of a saved log back into l. */
static int parse_line(struct tlog *l, const char *line, size_t n, const char *name, int lineno)
{
	json_error_t je;
	json_t *o = json_loadb(line, n, 0, &je);
	json_t *step = json_object_get(o, "step"), *loss = json_object_get(o, "loss"),
	       *val = json_object_get(o, "val_loss");
	int rc = -1;
	if (!json_is_object(o) || !json_is_integer(step) || json_integer_value(step) < 0)
		err_set("%s: line %d: not a record with a step", name, lineno);
	else if (json_is_number(loss)) {
		json_t *g = json_object_get(o, "grad_norm"), *lr = json_object_get(o, "lr"),
		       *tk = json_object_get(o, "tokens"), *sec = json_object_get(o, "seconds");
		if (!json_is_number(g) || !json_is_number(lr) || !json_is_integer(tk) ||
		    !json_is_number(sec))
			err_set("%s: line %d: a step record needs grad_norm, lr, tokens, seconds",
				name, lineno);
		else
			rc = tlog_add_step(l, &(struct tlog_step){
						      json_integer_value(step), json_number_value(loss),
						      json_number_value(g), json_number_value(lr),
						      json_integer_value(tk), json_number_value(sec)});
	} else if (json_is_number(val)) {
		rc = tlog_add_eval(l, json_integer_value(step), json_number_value(val));
	} else {
		err_set("%s: line %d: neither loss nor val_loss", name, lineno);
	}
	json_decref(o);
	return rc;
}

int tlog_parse(struct tlog *l, const char *text, size_t len, const char *name)
{
	int lineno = 0;
	for (size_t i = 0; i < len;) {
		const char *nl = memchr(text + i, '\n', len - i);
		size_t n = nl ? (size_t)(nl - (text + i)) : len - i;
		lineno++;
		if (n > 0 && parse_line(l, text + i, n, name, lineno))
			return -1;
		i += n + 1;
	}
	return 0;
}

/* ---- loss.svg ------------------------------------------------------------------- */

enum { W = 720, H = 420, LEFT = 64, RIGHT = 16, TOP = 36, BOTTOM = 48, MAX_POINTS = 1000 };

/* A round tick spacing giving about `want` intervals over span: 1, 2 or 5 x 10^k. */
static double nice_step(double span, int want)
{
	double raw = span / want, p = pow(10, floor(log10(raw))), f = raw / p;
	return (f < 1.5 ? 1 : f < 3.5 ? 2 : f < 7.5 ? 5 : 10) * p;
}

struct frame {
	double x0, x1, y0, y1; /* data ranges */
};

static double px(const struct frame *f, double x)
{
	return LEFT + (x - f->x0) / (f->x1 - f->x0) * (W - LEFT - RIGHT);
}

static double py(const struct frame *f, double y)
{
	return H - BOTTOM - (y - f->y0) / (f->y1 - f->y0) * (H - TOP - BOTTOM);
}

/* The ticks of [lo, hi] at multiples of step: the first index in *k0 and how many
 * (at most 50; none when the range is too narrow for doubles to tell the ticks
 * apart, as with one value of 1e16). */
static int ticks(double lo, double hi, double step, double *k0)
{
	*k0 = ceil(lo / step);
	double n = floor(hi / step) - *k0 + 1;
	if (!(n >= 1 && n <= 50) || *k0 * step + step == *k0 * step)
		return 0;
	return (int)n;
}

static void axes(struct strbuf *b, const struct frame *f)
{
	double ys = nice_step(f->y1 - f->y0, 6), xs = nice_step(f->x1 - f->x0, 8), ky, kx;
	if (xs < 1)
		xs = 1;
	int ny = ticks(f->y0, f->y1, ys, &ky), nx = ticks(f->x0, f->x1, xs, &kx);
	sb_puts(b, "<g stroke=\"#ddd\" stroke-width=\"1\">\n");
	for (int i = 0; i < ny; i++)
		sb_printf(b, "<line x1=\"%d\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\"/>\n", LEFT,
			  py(f, (ky + i) * ys), W - RIGHT, py(f, (ky + i) * ys));
	for (int i = 0; i < nx; i++)
		sb_printf(b, "<line x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%d\"/>\n",
			  px(f, (kx + i) * xs), TOP, px(f, (kx + i) * xs), H - BOTTOM);
	sb_puts(b, "</g>\n<g font-family=\"sans-serif\" font-size=\"11\" fill=\"#333\">\n");
	for (int i = 0; i < ny; i++) {
		double y = (ky + i) * ys;
		sb_printf(b, "<text x=\"%d\" y=\"%.1f\" text-anchor=\"end\">%g</text>\n", LEFT - 6,
			  py(f, y) + 4, fabs(y) < 1e-12 * ys ? 0.0 : y);
	}
	for (int i = 0; i < nx; i++)
		sb_printf(b, "<text x=\"%.1f\" y=\"%d\" text-anchor=\"middle\">%.0f</text>\n",
			  px(f, (kx + i) * xs), H - BOTTOM + 16, (kx + i) * xs);
	sb_printf(b,
		  "<text x=\"%d\" y=\"%d\" text-anchor=\"middle\">step</text>\n"
		  "<text x=\"14\" y=\"%d\" text-anchor=\"middle\" "
		  "transform=\"rotate(-90 14 %d)\">loss (nats)</text>\n</g>\n",
		  (LEFT + W - RIGHT) / 2, H - 10, (TOP + H - BOTTOM) / 2, (TOP + H - BOTTOM) / 2);
	sb_printf(b,
		  "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"none\" "
		  "stroke=\"#888\"/>\n",
		  LEFT, TOP, W - LEFT - RIGHT, H - TOP - BOTTOM);
}

/* The training curve: runs of consecutive points averaged so that at most MAX_POINTS
 * are drawn (a long run has more steps than the plot has pixels). */
static void train_curve(struct strbuf *b, const struct frame *f, const struct tlog *l)
{
	size_t per = (l->n_train + MAX_POINTS - 1) / MAX_POINTS;
	sb_puts(b, "<polyline fill=\"none\" stroke=\"#1f77b4\" stroke-width=\"1.5\" points=\"");
	for (size_t i = 0; i < l->n_train; i += per) {
		size_t k = l->n_train - i < per ? l->n_train - i : per;
		double sx = 0, sy = 0;
		for (size_t j = i; j < i + k; j++) {
			sx += (double)l->train[j].step;
			sy += l->train[j].value;
		}
		sb_printf(b, "%s%.1f,%.1f", i ? " " : "", px(f, sx / k), py(f, sy / k));
	}
	sb_puts(b, "\"/>\n");
}

static void val_curve(struct strbuf *b, const struct frame *f, const struct tlog *l)
{
	sb_puts(b, "<polyline fill=\"none\" stroke=\"#d62728\" stroke-width=\"1.5\" points=\"");
	for (size_t i = 0; i < l->n_val; i++)
		sb_printf(b, "%s%.1f,%.1f", i ? " " : "", px(f, (double)l->val[i].step),
			  py(f, l->val[i].value));
	sb_puts(b, "\"/>\n<g fill=\"#d62728\">\n");
	for (size_t i = 0; i < l->n_val; i++)
		sb_printf(b, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"2.5\"/>\n",
			  px(f, (double)l->val[i].step), py(f, l->val[i].value));
	sb_puts(b, "</g>\n");
}

static void ranges(const struct tlog *l, struct frame *f)
{
	double lo = INFINITY, hi = -INFINITY, last = 1;
	for (size_t i = 0; i < l->n_train; i++) {
		lo = fmin(lo, l->train[i].value);
		hi = fmax(hi, l->train[i].value);
		last = fmax(last, (double)l->train[i].step);
	}
	for (size_t i = 0; i < l->n_val; i++) {
		lo = fmin(lo, l->val[i].value);
		hi = fmax(hi, l->val[i].value);
		last = fmax(last, (double)l->val[i].step);
	}
	if (!(lo <= hi)) /* no points yet */
		lo = 0, hi = 1;
	double pad = hi > lo ? 0.05 * (hi - lo) : fmax(0.5, 1e-3 * fabs(hi));
	*f = (struct frame){0, last, lo - pad, hi + pad};
}

static void legend(struct strbuf *b, const struct tlog *l)
{
	sb_puts(b, "<g font-family=\"sans-serif\" font-size=\"12\" fill=\"#333\">\n");
	sb_printf(b, "<line x1=\"%d\" y1=\"18\" x2=\"%d\" y2=\"18\" stroke=\"#1f77b4\" "
		     "stroke-width=\"2\"/>\n<text x=\"%d\" y=\"22\">train",
		  LEFT, LEFT + 24, LEFT + 30);
	if (l->n_train) {
		sb_printf(b, " %.4f (step %lld)", l->train[l->n_train - 1].value,
			  (long long)l->train[l->n_train - 1].step);
	}
	sb_puts(b, "</text>\n");
	if (l->n_val) {
		sb_printf(b,
			  "<line x1=\"%d\" y1=\"18\" x2=\"%d\" y2=\"18\" stroke=\"#d62728\" "
			  "stroke-width=\"2\"/>\n<text x=\"%d\" y=\"22\">validation %.4f (step "
			  "%lld)</text>\n",
			  W / 2 + 20, W / 2 + 44, W / 2 + 50, l->val[l->n_val - 1].value,
			  (long long)l->val[l->n_val - 1].step);
	}
	sb_puts(b, "</g>\n");
}

char *tlog_svg(const struct tlog *l)
{
	struct strbuf b = {0};
	struct frame f;
	ranges(l, &f);
	sb_printf(&b,
		  "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
		  "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" "
		  "viewBox=\"0 0 %d %d\">\n<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n",
		  W, H, W, H);
	axes(&b, &f);
	if (l->n_train)
		train_curve(&b, &f, l);
	if (l->n_val)
		val_curve(&b, &f, l);
	legend(&b, l);
	sb_puts(&b, "</svg>\n");
	if (b.oom) {
		free(b.p);
		err_set("loss.svg: out of memory");
		return NULL;
	}
	return b.p;
}
