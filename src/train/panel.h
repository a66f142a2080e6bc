/* panel.h — the live panel `qwenchat train` shows on a terminal: the figures it keeps
 * (the last step's, the training loss and learning rate over the run, the last
 * checkpoint and evaluation) and, apart from them, those figures laid out as a few
 * lines of text that fit a given width. Putting the lines on a terminal is the command
 * line's business (it redraws them in place); this module writes no output. */
#ifndef QWENCHAT_PANEL_H
#define QWENCHAT_PANEL_H

#include <stdbool.h>
#include <stdint.h>

#include "src/base/strbuf.h"
#include "src/train/loop.h"

/* The most lines panel_render writes. */
enum { PANEL_MAX_LINES = 6 };

/* A curve kept as at most PANEL_BUCKETS means of consecutive steps. When the buckets
 * are full, neighbours merge in pairs and each later bucket takes twice as many
 * steps: the memory stays the same however long the run, and there are always more
 * buckets than a terminal has columns. */
enum { PANEL_BUCKETS = 1024 };
struct panel_curve {
	double sum[PANEL_BUCKETS];
	int64_t count[PANEL_BUCKETS];
	int n;       /* buckets in use */
	int64_t per; /* steps a full bucket holds */
};

struct panel {
	bool ascii;              /* the terminal takes no UTF-8: ASCII marks for the bars */
	bool have_step;          /* `last` holds a step */
	struct loop_status last; /* the last step's figures */
	double elapsed;          /* seconds since this command began the run, at the last step */
	struct panel_curve loss, lr; /* since this process started (a resumed run: since
				      * the checkpoint) */
	int64_t saved_step;          /* the last checkpoint; -1: none yet */
	double saved_seconds;        /* how long writing it took; -1: unknown (before this run) */
	int64_t eval_step;           /* the last evaluation; -1: none yet */
	double eval_loss;
	int64_t evaluating; /* the step being evaluated now; -1: none */
};

void panel_init(struct panel *p, bool ascii);

/* The model: what the loop reports, kept. */
void panel_step(struct panel *p, const struct loop_status *s, double elapsed);
void panel_eval(struct panel *p, int64_t step, double val_loss);
void panel_evaluating(struct panel *p, int64_t step); /* -1: no longer */
/* The run is over (at its last step): the elapsed time to now, nothing left to wait. */
void panel_finished(struct panel *p, double elapsed);
void panel_saved(struct panel *p, int64_t step, double seconds);

/* The view: the panel as lines separated by '\n' (none after the last), appended to b,
 * none of them wider than `width` columns (every character written takes one column).
 * Returns the number of lines, at most PANEL_MAX_LINES:
 *   step 1200/5000 [██████████▍                               ]  24.0%
 *   loss 3.4521  val 3.6012  █▆▅▄▃▃▂▂▂▂▁▁▁▁▁▁▁▁▁▁▁▁▁▁▁▁▁▁▁▁▁▁▁▁▁▁▁
 *   lr 5.82e-04              ▁▂▃▄▅▆▇███████▇▇▇▇▇▇▇▆▆▆▆▆▆▆▆▅▅▅▅▅▅
 *   elapsed 1m02s  ETA 3m10s  51234 tok/s  3.2% of peak  grad norm 0.812
 *   checkpoint: step 1000 (0.3 s)   eval: step 1200, val_loss 3.6012, ppl 36.65
 * (a narrow terminal gets the figures of the fourth line on two). */
int panel_render(const struct panel *p, int width, struct strbuf *b);

#endif
