/* test_trainlog.c — train-log.jsonl records (read back with jansson and with
 * tlog_parse) and loss.svg (its curves, its size on a long run). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "src/base/err.h"
#include "src/train/trainlog.h"

#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

static void test_records(void **state)
{
	(void)state;
	struct tlog l;
	tlog_init(&l);
	struct tlog_step s = {1, 10.123456789012345, 0.5, 6e-4, 2048, 0.25};
	assert_int_equal(tlog_add_step(&l, &s), 0);
	assert_int_equal(l.last, 0);
	json_t *o = json_loads(l.text.p, 0, NULL);
	assert_non_null(o);
	assert_int_equal(json_integer_value(json_object_get(o, "step")), 1);
	/* written exactly: the reference compares these digits */
	assert_true(json_real_value(json_object_get(o, "loss")) == 10.123456789012345);
	assert_true(json_real_value(json_object_get(o, "lr")) == 6e-4);
	assert_true(json_real_value(json_object_get(o, "grad_norm")) == 0.5);
	assert_int_equal(json_integer_value(json_object_get(o, "tokens")), 2048);
	assert_true(json_real_value(json_object_get(o, "seconds")) == 0.25);
	json_decref(o);
	assert_int_equal(tlog_add_eval(&l, 1, 2.0), 0);
	o = json_loads(l.text.p + l.last, 0, NULL);
	assert_non_null(o);
	assert_true(json_real_value(json_object_get(o, "val_loss")) == 2.0);
	assert_true(fabs(json_real_value(json_object_get(o, "val_ppl")) - exp(2.0)) < 1e-12);
	json_decref(o);
	assert_int_equal(l.text.p[l.text.n - 1], '\n');
	/* not finite: refused, nothing written */
	size_t n = l.text.n;
	s.loss = NAN;
	assert_int_equal(tlog_add_step(&l, &s), -1);
	assert_int_equal(tlog_add_eval(&l, 2, INFINITY), -1);
	assert_int_equal(l.text.n, n);

	/* the saved text gives the same log back */
	struct tlog back;
	tlog_init(&back);
	assert_int_equal(tlog_parse(&back, l.text.p, l.text.n, "log.jsonl"), 0);
	assert_int_equal(back.n_train, 1);
	assert_int_equal(back.n_val, 1);
	assert_string_equal(back.text.p, l.text.p);
	tlog_free(&back);
	tlog_init(&back);
	assert_int_equal(tlog_parse(&back, "{\"step\": 1}\n", 12, "log.jsonl"), -1);
	assert_non_null(strstr(err_msg(), "log.jsonl: line 1"));
	tlog_free(&back);
	tlog_free(&l);
}

static int count(const char *s, const char *what)
{
	int n = 0;
	for (const char *p = s; (p = strstr(p, what)); p += strlen(what))
		n++;
	return n;
}

static void test_svg(void **state)
{
	(void)state;
	struct tlog l;
	tlog_init(&l);
	char *svg = tlog_svg(&l); /* no points yet: axes only */
	assert_non_null(svg);
	assert_int_equal(count(svg, "<polyline"), 0);
	free(svg);
	for (int i = 1; i <= 5000; i++) {
		struct tlog_step s = {i, 10.0 / sqrt(i), 1, 1e-3, i * 100, 0.1};
		assert_int_equal(tlog_add_step(&l, &s), 0);
		if (i % 500 == 0)
			assert_int_equal(tlog_add_eval(&l, i, 11.0 / sqrt(i)), 0);
	}
	svg = tlog_svg(&l);
	assert_non_null(svg);
	assert_int_equal(strncmp(svg, "<?xml", 5), 0);
	assert_non_null(strstr(svg, "</svg>\n"));
	assert_int_equal(count(svg, "<polyline"), 2);
	assert_int_equal(count(svg, "<circle"), 10);
	/* the training curve is averaged into at most 1000 points */
	const char *pts = strstr(svg, "points=\"");
	assert_non_null(pts);
	const char *end = strchr(pts + 8, '"');
	int commas = 0;
	for (const char *p = pts; p < end; p++)
		commas += *p == ',';
	assert_true(commas >= 900 && commas <= 1000);
	assert_null(strstr(svg, "nan"));
	free(svg);
	tlog_free(&l);
}

/* One value where doubles cannot tell ticks apart (found by fuzz_trainstate: the
 * tick loop never ended), and values spanning many decades: a bounded document. */
static void test_svg_extremes(void **state)
{
	(void)state;
	double values[][2] = {{6201430005580117.0, 6201430005580117.0}, {1e-300, 1e300}, {0, 0}};
	for (size_t i = 0; i < sizeof values / sizeof values[0]; i++) {
		struct tlog l;
		tlog_init(&l);
		struct tlog_step s = {1, values[i][0], 1, 1e-3, 100, 0.1};
		assert_int_equal(tlog_add_step(&l, &s), 0);
		assert_int_equal(tlog_add_eval(&l, (int64_t)1 << 62, values[i][1]), 0);
		char *svg = tlog_svg(&l);
		assert_non_null(svg);
		assert_true(strlen(svg) < 20000);
		assert_true(count(svg, "<text") <= 2 * 50 + 4);
		free(svg);
		tlog_free(&l);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_records),
		cmocka_unit_test(test_svg),
		cmocka_unit_test(test_svg_extremes),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
