/* test_panel.c — the training panel: its curves keep every step's value in a fixed
 * number of buckets however long the run, and its lines never exceed the width asked
 * for, at every width from 1 column up, with their elements where there is room; an
 * evaluation shows while it runs, and a finished run waits for nothing. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "src/train/panel.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* A run of `steps` steps at step `at`: the loss falls, the rate rises then falls. */
static void run_to(struct panel *p, int64_t at, int64_t steps)
{
	for (int64_t i = 1; i <= at; i++) {
		struct loop_status s = {.step = i,
					.steps = steps,
					.loss = 6.0 / (1 + 0.01 * (double)i),
					.grad_norm = 1.5,
					.lr = i < 100 ? 6e-4 * (double)i / 100
						      : 6e-4 - 5e-4 * (double)i / steps,
					.val_loss = i >= 500 ? 3.25 : NAN,
					.tokens_per_second = 51234,
					.peak_share = 0.032,
					.eta_seconds = 190};
		panel_step(p, &s, 62);
	}
}

/* The columns of a line the panel wrote: every character it writes takes one. */
static int columns(const char *s, size_t n)
{
	int c = 0;
	for (size_t i = 0; i < n; i++)
		c += ((unsigned char)s[i] & 0xc0) != 0x80;
	return c;
}

static void test_curve_buckets(void **state)
{
	(void)state;
	struct panel *p = malloc(sizeof *p);
	assert_non_null(p);
	panel_init(p, false);
	for (int steps = 1; steps <= 5000; steps++) {
		struct loop_status s = {.step = steps, .steps = 5000, .loss = steps, .lr = 1};
		panel_step(p, &s, 0);
		assert_true(p->loss.n >= 1 && p->loss.n <= PANEL_BUCKETS);
	}
	double sum = 0;
	int64_t count = 0;
	for (int i = 0; i < p->loss.n; i++) {
		sum += p->loss.sum[i];
		count += p->loss.count[i];
		if (i + 1 < p->loss.n) /* every bucket but the last is full */
			assert_int_equal(p->loss.count[i], p->loss.per);
	}
	assert_int_equal(count, 5000);
	assert_true(sum == 5000.0 * 5001 / 2);
	free(p);
}

static void test_widths(void **state)
{
	(void)state;
	struct panel *p = malloc(sizeof *p);
	assert_non_null(p);
	for (int k = 0; k < 6; k++) { /* ASCII or not; steps, an evaluation running, none */
		bool ascii = k % 2;
		panel_init(p, ascii);
		if (k < 4)
			run_to(p, 3000, 10000);
		panel_saved(p, 2500, 0.25);
		panel_eval(p, 3000, 3.25);
		panel_evaluating(p, k >= 2 ? 3000 : -1);
		for (int w = 1; w <= 300; w++) {
			struct strbuf b = {0};
			int n = panel_render(p, w, &b), lines = 0;
			assert_false(b.oom);
			assert_true(n >= 1 && n <= PANEL_MAX_LINES);
			for (const char *s = b.p; s; lines++) {
				const char *end = strchr(s, '\n');
				size_t len = end ? (size_t)(end - s) : strlen(s);
				if (columns(s, len) > w)
					fail_msg("width %d, line %d: %.*s", w, lines, (int)len, s);
				for (size_t i = 0; ascii && i < len; i++)
					assert_true((unsigned char)s[i] < 0x80);
				s = end ? end + 1 : NULL;
			}
			assert_int_equal(lines, n);
			free(b.p);
		}
	}
	free(p);
}

static void test_elements(void **state)
{
	(void)state;
	struct panel *p = malloc(sizeof *p);
	assert_non_null(p);
	panel_init(p, false);
	run_to(p, 3000, 10000);
	panel_saved(p, 2500, 0.25);
	panel_eval(p, 3000, 3.25);
	struct strbuf b = {0};
	assert_int_equal(panel_render(p, 100, &b), 5);
	/* 75 columns of bar, 30% of them 22.5 */
	assert_non_null(strstr(b.p, "step 3000/10000 [██████████████████████▌ "));
	assert_non_null(strstr(b.p, " ]  30.0%\nloss 0.1935  val 3.2500  █▆▅"));
	assert_non_null(strstr(b.p, "▁\nlr 4.50e-04              ▂▅██"));
	assert_non_null(strstr(b.p,
			       "\nelapsed 1m02s  ETA 3m10s  51234 tok/s  3.2% of matmul peak  grad "
			       "norm 1.500\n"));
	assert_non_null(strstr(b.p, "\ncheckpoint: step 2500 (0.2 s)   eval: step 3000, "
				    "val_loss 3.2500, ppl 25.79"));
	free(b.p);
	/* the last step is 100%; the one before it is not */
	panel_init(p, false);
	run_to(p, 999, 1000);
	b = (struct strbuf){0};
	panel_render(p, 80, &b);
	assert_non_null(strstr(b.p, "]  99.9%\n"));
	free(b.p);
	run_to(p, 1000, 1000);
	b = (struct strbuf){0};
	panel_render(p, 80, &b);
	assert_non_null(strstr(b.p, "█] 100.0%\n"));
	free(b.p);
	free(p);
}

/* render_has P WIDTH TEXT: the panel, drawn WIDTH wide, holds TEXT. */
static void render_has(const struct panel *p, int width, const char *text)
{
	struct strbuf b = {0};
	panel_render(p, width, &b);
	if (!strstr(b.p, text))
		fail_msg("no \"%s\" in:\n%s", text, b.p);
	free(b.p);
}

/* An evaluation is shown while it runs (it holds the steps up); a run without a step
 * (--steps 0, or a resumed run before its first) shows its checkpoint and evaluation,
 * not "starting"; a finished run waits for nothing. */
static void test_evaluation_and_end(void **state)
{
	(void)state;
	struct panel *p = malloc(sizeof *p);
	assert_non_null(p);
	panel_init(p, false);
	render_has(p, 80, "starting");
	panel_evaluating(p, 0);
	render_has(p, 80, "checkpoint: none yet   evaluating step 0 on --val ...");
	panel_evaluating(p, -1);
	panel_eval(p, 0, 6.9);
	panel_saved(p, 0, 0.125);
	render_has(p, 80, "checkpoint: step 0 (0.1 s)   eval: step 0, val_loss 6.9000");
	panel_init(p, false);
	panel_saved(p, 40, -1); /* a resumed run's checkpoint, saved by an earlier one */
	render_has(p, 80, "checkpoint: step 40");
	run_to(p, 50, 50);
	panel_evaluating(p, 50);
	render_has(p, 100, "ETA 3m10s");
	render_has(p, 100, "evaluating step 50 on --val ...");
	panel_finished(p, 75);
	render_has(p, 100, "elapsed 1m15s  ETA 0s");
	free(p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_curve_buckets),
		cmocka_unit_test(test_widths),
		cmocka_unit_test(test_elements),
		cmocka_unit_test(test_evaluation_and_end),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
