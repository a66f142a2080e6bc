/* trainlog.h — what a run records: DIR/train-log.jsonl (one JSON object per step and
 * per evaluation) and DIR/loss.svg (the training and validation curves, drawn from
 * the same records). The records also go into each checkpoint, so that a resumed run
 * starts again from the log of the step it resumes at. */
#ifndef QWENCHAT_TRAINLOG_H
#define QWENCHAT_TRAINLOG_H

#include <stddef.h>
#include <stdint.h>

#include "src/base/strbuf.h"

struct tlog_point {
	int64_t step;
	double value;
};

struct tlog {
	struct strbuf text; /* every record so far, one JSON object a line */
	size_t last;        /* where the last record starts in text */
	struct tlog_point *train, *val;
	size_t n_train, n_val, cap_train, cap_val;
};

/* One step's record: {"step", "loss", "grad_norm", "lr", "tokens", "seconds"}. step
 * counts from 1 (the first step is 1; its lr is the schedule's at s = 0), tokens is the
 * number of training tokens (targets) seen up to and including this step, seconds the
 * step's own wall time. */
struct tlog_step {
	int64_t step;
	double loss, grad_norm, lr;
	int64_t tokens;
	double seconds;
};

void tlog_init(struct tlog *l);
void tlog_free(struct tlog *l);
/* Append a record (finite values only). The line, with its newline, is then at
 * text.p + last. 0 or -1 (err_set: out of memory, a value that is not finite). */
int tlog_add_step(struct tlog *l, const struct tlog_step *s);
/* {"step", "val_loss", "val_ppl"}: the evaluation after `step` steps. */
int tlog_add_eval(struct tlog *l, int64_t step, double val_loss);
/* Rebuilds l (empty) from a log's text, `name` in messages: every line must be one of
 * the two records. 0 or -1 (err_set naming the line). */
int tlog_parse(struct tlog *l, const char *text, size_t len, const char *name);
/* The curves as an SVG document (malloc'd, NUL-terminated; NULL when out of memory):
 * the training loss (averaged into at most 1000 points), the validation loss, axes
 * with round ticks, a legend. */
char *tlog_svg(const struct tlog *l);

#endif
