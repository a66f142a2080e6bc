/* train_report.h — what `qwenchat train` shows while it runs, and the signals that
 * stop it. The loop's reports (src/train/loop.h) go to stderr in one of three ways:
 *   - the live panel (src/train/panel.h, drawn in place by ui/live.h): stderr is a
 *     terminal with a terminfo entry that can redraw in place;
 *   - one line rewritten in place: --no-panel on a terminal, or a build without the
 *     terminal UI;
 *   - plain lines, one a step, no escape sequences: stderr is not a terminal, TERM is
 *     unset or dumb, or its terminal unknown.
 * Messages (the plan, evaluations, checkpoints, warnings) are lines in every case;
 * with the panel they scroll above it. */
#ifndef QWENCHAT_TRAIN_REPORT_H
#define QWENCHAT_TRAIN_REPORT_H

#include <signal.h>
#include <stdbool.h>

#include "src/cli/train_model.h"
#include "src/train/loop.h"
#include "src/train/rundir.h"
#include "src/train/trainstate.h"

struct train_report;

/* Reports of the run in dir (its options o; the model's remarks come with the plan).
 * panel: false for --no-panel. term: $TERM. saved: the step of the checkpoint in dir
 * (a resumed run's), -1 for none. NULL when out of memory. */
struct train_report *train_report_new(const char *dir, const struct tstate_opts *o,
				      const struct train_model *model, bool panel, const char *term,
				      int64_t saved);

/* The loop's callbacks, printing through r. */
struct loop_report train_report_callbacks(struct train_report *r);

/* SIGINT and SIGTERM ask the loop to stop after the step under way (the flag that
 * loop_run watches); a second one ends the program at once, the terminal's cursor
 * shown again. With the panel, Ctrl-Z shows the cursor before the program stops. */
const volatile sig_atomic_t *train_catch_signals(void);

/* A new run from now on: SIGINT and SIGTERM end the program at once until the steps
 * begin, removing what l names (rundir_leftovers_remove) first. l is kept, not copied. */
void train_catch_signals_new(const struct rundir_leftovers *l);

/* The signal that asked to stop; 0: none. */
int train_stop_signal(void);

/* The run is over: the panel or the live line is left on screen as it last was, and
 * what is printed next goes below it. Frees r (NULL is a no-op). */
void train_report_end(struct train_report *r);

#endif
