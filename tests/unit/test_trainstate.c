/* test_trainstate.c — the option table (values, ranges, choices, what may change on
 * resume) and state.json written and read back. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "src/base/err.h"
#include "src/train/trainstate.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int field(const char *name)
{
	int i = tstate_field(name);
	if (i < 0)
		fail_msg("no field %s", name);
	return i;
}

static void test_set(void **state)
{
	(void)state;
	struct tstate_opts o;
	assert_int_equal(tstate_opts_default(&o), 0);
	assert_int_equal(o.ctx, 256);
	assert_true(o.lr == 6e-4 && o.beta2 == 0.95 && o.clip == 1.0 && o.weight_decay == 0.1);
	assert_int_equal(tstate_set(&o, field("ctx"), "64"), 0);
	assert_int_equal(o.ctx, 64);
	assert_int_equal(tstate_set(&o, field("ctx"), "6.5"), -1);
	assert_non_null(strstr(err_msg(), "--ctx"));
	assert_int_equal(tstate_set(&o, field("ctx"), "0"), -1);
	assert_non_null(strstr(err_msg(), "out of range"));
	/* a whole number is read as one: 2^53 + 1 is past the seed's 2^53, not rounded to it */
	assert_int_equal(tstate_set(&o, field("seed"), "9007199254740992"), 0);
	assert_true(o.seed == 9007199254740992LL);
	assert_int_equal(tstate_set(&o, field("seed"), "9007199254740993"), -1);
	assert_int_equal(tstate_set(&o, field("seed"), "99999999999999999999"), -1);
	assert_int_equal(tstate_set(&o, field("seed"), "-0"), 0);
	assert_int_equal(tstate_set(&o, field("lr"), "1e-3"), 0);
	assert_true(o.lr == 1e-3);
	assert_int_equal(tstate_set(&o, field("lr"), "nan"), -1);
	assert_int_equal(tstate_set(&o, field("beta2"), "1"), -1);
	assert_int_equal(tstate_set(&o, field("save-dtype"), "bf16"), 0);
	assert_string_equal(o.save_dtype, "bf16");
	assert_int_equal(tstate_set(&o, field("save-dtype"), "bf"), -1);
	assert_int_equal(tstate_set(&o, field("backend"), "remote"), -1);
	assert_int_equal(tstate_set(&o, field("data"), "a.txt"), 0);
	assert_int_equal(tstate_set(&o, field("data"), "b.u32"), 0);
	assert_int_equal(o.n_data, 2);
	assert_string_equal(o.data[1], "b.u32");
	assert_int_equal(tstate_set(&o, field("tie"), "false"), 0);
	assert_int_equal(o.tie, 0);
	assert_int_equal(tstate_set(&o, field("sequential"), "true"), 0);
	assert_true(o.sequential);
	assert_true(tstate_may_change(field("steps")));
	assert_true(tstate_may_change(field("threads")));
	assert_false(tstate_may_change(field("ctx")));
	assert_false(tstate_may_change(field("data")));
	assert_false(tstate_may_change(field("lr")));
	struct tstate_opts p;
	tstate_opts_default(&p);
	assert_false(tstate_equal(&o, &p, field("data")));
	assert_int_equal(tstate_copy(&p, &o, field("data")), 0);
	assert_true(tstate_equal(&o, &p, field("data")));
	char text[64];
	tstate_format(&o, field("data"), text, sizeof text);
	assert_string_equal(text, "a.txt b.u32");
	tstate_opts_free(&o);
	tstate_opts_free(&p);
}

/* text with the value of "key" (up to its comma or line end) replaced by value. */
static char *with_value(const char *text, const char *key, const char *value)
{
	char pat[64];
	snprintf(pat, sizeof pat, "\"%s\": ", key);
	const char *p = strstr(text, pat);
	assert_non_null(p);
	p += strlen(pat);
	size_t n = strcspn(p, ",\n");
	char *out = malloc(strlen(text) + strlen(value) + 1);
	assert_non_null(out);
	sprintf(out, "%.*s%s%s", (int)(p - text), text, value, p + n);
	return out;
}

/* The least state a run saves: the defaults, a data file, the schedule resolved. */
static void resolved_state(struct tstate *s)
{
	tstate_opts_default(&s->o);
	tstate_set(&s->o, field("data"), "/d/a.u32");
	s->o.min_lr = 6e-5;
	s->o.cosine_steps = 1000;
	batch_rng_seed(&s->rng, 5);
}

/* A saved value the command line would refuse is refused (naming the field): a
 * state.json edited by hand must not reach the loop with --eval-every 0 (a division by
 * zero) or eps 0. A shape of 0 is a shape not given (--init's). */
static void test_json_ranges(void **state)
{
	(void)state;
	struct tstate s = {0}, b;
	resolved_state(&s);
	char *text = tstate_json(&s);
	assert_non_null(text);
	const char *bad[][2] = {{"eval-every", "0"},   {"save-every", "-3"}, {"batch", "0"},
				{"ctx", "0"},          {"eps", "0"},         {"beta1", "1.5"},
				{"lr", "-1"},          {"threads", "5000"},  {"layers", "-1"},
				{"save-dtype", "\"f16\""}, {"backend", "\"gpu\""}};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		char *t = with_value(text, bad[i][0], bad[i][1]), want[64];
		if (!tstate_parse(&b, t, strlen(t), "s.json"))
			fail_msg("%s %s was accepted", bad[i][0], bad[i][1]);
		snprintf(want, sizeof want, "s.json: options.%s", bad[i][0]);
		if (!strstr(err_msg(), want))
			fail_msg("%s %s: %s", bad[i][0], bad[i][1], err_msg());
		free(t);
	}
	char *t = with_value(text, "head-dim", "0");
	if (tstate_parse(&b, t, strlen(t), "s.json"))
		fail_msg("head-dim 0 (not given) was refused: %s", err_msg());
	tstate_opts_free(&b.o);
	free(t);
	free(text);
	/* a step count no run reaches, whose rows read would leave 64 bits */
	s.step = (int64_t)1 << 62;
	text = tstate_json(&s);
	assert_non_null(text);
	assert_int_equal(tstate_parse(&b, text, strlen(text), "s.json"), -1);
	if (!strstr(err_msg(), "s.json: step: 4611686018427387904"))
		fail_msg("%s", err_msg());
	free(text);
	tstate_opts_free(&s.o);
}

static void test_json(void **state)
{
	(void)state;
	struct tstate s = {0}, b;
	tstate_opts_default(&s.o);
	tstate_set(&s.o, field("data"), "/d/a.txt");
	tstate_set(&s.o, field("val"), "/d/v.txt");
	tstate_set(&s.o, field("init"), "/models/Qwen3-0.6B");
	s.o.min_lr = 6e-5;
	s.o.cosine_steps = 1000;
	s.o.lr = 0.1 + 0.2; /* a double that needs all 17 digits */
	s.step = 12;
	s.tokens = 12345;
	s.seconds = 1.5;
	s.data_tokens = 99999;
	strcpy(s.data_sha256, "sha256:");
	memset(s.data_sha256 + 7, 'a', 64);
	s.master_in_state = true;
	s.o.sft = true;
	batch_rng_seed(&s.rng, 5);
	char *text = tstate_json(&s);
	assert_non_null(text);
	if (tstate_parse(&b, text, strlen(text), "state.json"))
		fail_msg("%s\n%s", err_msg(), text);
	for (int i = 0; i < tstate_field_count(); i++)
		if (!tstate_equal(&s.o, &b.o, i))
			fail_msg("field %s differs", tstate_field_name(i));
	assert_int_equal(b.step, 12);
	assert_int_equal(b.tokens, 12345);
	assert_int_equal(b.data_tokens, 99999);
	assert_string_equal(b.data_sha256, s.data_sha256);
	assert_true(b.master_in_state);
	assert_memory_equal(&b.rng, &s.rng, sizeof s.rng);
	tstate_opts_free(&b.o);
	/* a broken file names itself and the field */
	char *bad = strdup(text);
	char *p = strstr(bad, "\"ctx\": 256");
	assert_non_null(p);
	memcpy(p, "\"ctx\": \"x\"", 10);
	assert_int_equal(tstate_parse(&b, bad, strlen(bad), "s.json"), -1);
	assert_non_null(strstr(err_msg(), "s.json: options.ctx"));
	/* ... and an option edited to another value in range, by its checksum */
	memcpy(p, "\"ctx\": 128", 10);
	assert_int_equal(tstate_parse(&b, bad, strlen(bad), "s.json"), -1);
	assert_non_null(strstr(err_msg(), "s.json: options: edited since the checkpoint"));
	assert_int_equal(tstate_parse(&b, "{", 1, "s.json"), -1);
	/* a checksum that is not one */
	free(bad);
	bad = strdup(text);
	p = strstr(bad, "\"sha256:aaaa");
	assert_non_null(p);
	p[8] = 'x';
	assert_int_equal(tstate_parse(&b, bad, strlen(bad), "s.json"), -1);
	assert_non_null(strstr(err_msg(), "s.json: data_sha256"));
	/* a run saved before --sft existed (and before the options' checksum): without
	 * it, not one */
	free(bad);
	bad = strdup(text);
	p = strstr(bad, "\"sft\": true,");
	assert_non_null(p);
	memmove(p, p + 13, strlen(p + 13) + 1);
	p = strstr(bad, "\"options_sha256\"");
	assert_non_null(p);
	memmove(p, strchr(p, '\n') + 1, strlen(strchr(p, '\n') + 1) + 1);
	if (tstate_parse(&b, bad, strlen(bad), "s.json"))
		fail_msg("%s\n%s", err_msg(), bad);
	assert_false(b.o.sft);
	tstate_opts_free(&b.o);
	free(bad);
	free(text);
	tstate_opts_free(&s.o);
}

/* What a tampered or mis-written state.json must not get through: --pack without --sft
 * (the command line refuses it; its rows are of conversations a text stream lacks), and
 * a path JSON cannot hold (not UTF-8) silently left out of the state written. */
static void test_json_cross(void **state)
{
	(void)state;
	struct tstate s = {0}, b;
	resolved_state(&s);
	s.o.pack = true; /* sft false */
	char *text = tstate_json(&s);
	assert_non_null(text);
	if (!tstate_parse(&b, text, strlen(text), "s.json"))
		fail_msg("pack without sft was accepted");
	if (!strstr(err_msg(), "s.json: options.pack"))
		fail_msg("%s", err_msg());
	free(text);
	s.o.pack = false;
	tstate_set(&s.o, field("data"), "/d/b\xff.u32");
	text = tstate_json(&s);
	if (text) {
		int ok = tstate_parse(&b, text, strlen(text), "s.json") == 0;
		int n = ok ? b.o.n_data : -1;
		if (ok)
			tstate_opts_free(&b.o);
		fail_msg("a non-UTF-8 path was written (it reads back with %d data files)", n);
	}
	if (!strstr(err_msg(), "options.data"))
		fail_msg("%s", err_msg());
	tstate_opts_free(&s.o);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_set),
		cmocka_unit_test(test_json),
		cmocka_unit_test(test_json_ranges),
		cmocka_unit_test(test_json_cross),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
