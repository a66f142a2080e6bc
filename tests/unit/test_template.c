/* test_template.c — tmpl_render against the jinja2 golden renders (every case, every
 * add_generation_prompt/enable_thinking combination, every variant), in process, and
 * tmpl_detect on each variant's tokenizer_config.json. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "src/chat/chat.h"
#include "src/base/err.h"
#include "src/chat/template.h"

static const struct {
	const char *name;
	enum tmpl_variant v;
} variants[] = {
	{"qwen3", TMPL_QWEN3},
	{"qwen3-instruct-2507", TMPL_QWEN3_INSTRUCT},
	{"qwen3-thinking-2507", TMPL_QWEN3_THINKING},
	{"chatml", TMPL_CHATML},
};

static json_t *load_golden(const char *name)
{
	const char *top = getenv("TOP_SRCDIR");
	char path[4096];
	snprintf(path, sizeof path, "%s/tests/golden/%s", top ? top : ".", name);
	json_error_t e;
	json_t *j = json_load_file(path, 0, &e);
	if (!j)
		fail_msg("%s: %s (line %d)", path, e.text, e.line);
	return j;
}

/* The conversations of template-cases.json ({"name", "messages", "tools"} objects),
 * parsed by chat_from_json. */
static struct chat **load_cases(size_t *n)
{
	json_t *root = load_golden("template-cases.json");
	json_t *cases = json_object_get(root, "cases");
	*n = json_array_size(cases);
	assert_true(*n >= 40);
	struct chat **out = calloc(*n, sizeof *out);
	assert_non_null(out);
	for (size_t i = 0; i < *n; i++) {
		char *text = json_dumps(json_array_get(cases, i), JSON_PRESERVE_ORDER);
		assert_non_null(text);
		out[i] = chat_from_json(text, strlen(text), "template-cases.json");
		if (!out[i])
			fail_msg("case %zu: %s", i, err_msg());
		free(text);
	}
	json_decref(root);
	return out;
}

/* Whether s[0..n) occurs in one of the conversation's own texts. */
static bool from_messages(const struct chat *c, const char *s, size_t n)
{
	for (size_t i = 0; i < c->n; i++) {
		const struct chat_turn *t = &c->turns[i];
		const char *fields[] = {t->content, t->reasoning ? t->reasoning : ""};
		for (size_t f = 0; f < 2; f++)
			if (memmem(fields[f], strlen(fields[f]), s, n))
				return true;
		for (size_t k = 0; k < t->n_calls; k++)
			if (memmem(t->calls[k].name, strlen(t->calls[k].name), s, n) ||
			    memmem(t->calls[k].arguments, strlen(t->calls[k].arguments), s, n))
				return true;
	}
	for (size_t i = 0; i < c->n_tools; i++)
		if (memmem(c->tools[i], strlen(c->tools[i]), s, n))
			return true;
	return false;
}

/* The message spans of a render: the same text, in order, inside it, and each one's
 * bytes taken from the messages. */
static void check_spans(const struct chat *c, enum tmpl_variant v, bool agp, int think,
			const char *text, size_t len)
{
	struct tmpl_spans m = {0};
	size_t len2;
	char *again = tmpl_render_spans(c, v, agp, think, &len2, &m);
	assert_non_null(again);
	assert_int_equal(len2, len);
	assert_memory_equal(again, text, len);
	size_t end = 0;
	for (size_t i = 0; i < m.n; i++) {
		assert_true(m.v[i].start >= end && m.v[i].start < m.v[i].end && m.v[i].end <= len);
		if (!from_messages(c, text + m.v[i].start, m.v[i].end - m.v[i].start))
			fail_msg("span %zu (%.*s) is not a message's text", i,
				 (int)(m.v[i].end - m.v[i].start), text + m.v[i].start);
		end = m.v[i].end;
	}
	free(m.v);
	free(again);
}

/* Whether [a, b) lies inside one of the spans. */
static bool in_spans(const struct tmpl_spans *m, size_t a, size_t b)
{
	for (size_t i = 0; i < m->n; i++)
		if (m->v[i].start <= a && b <= m->v[i].end)
			return true;
	return false;
}

/* The answers of a render without generation prompt: one per assistant turn, each
 * right after the template's "<|im_start|>assistant\n" and through the first
 * "<|im_end|>" of the template after it; the text the same as tmpl_render's. */
static void check_answers(const struct chat *c, enum tmpl_variant v, const char *text, size_t len)
{
	struct tmpl_spans m = {0}, a = {0};
	size_t len2;
	char *again = tmpl_render_answers(c, v, &len2, &m, &a);
	assert_non_null(again);
	assert_int_equal(len2, len);
	assert_memory_equal(again, text, len);
	size_t turns = 0, end = 0;
	for (size_t i = 0; i < c->n; i++)
		turns += c->turns[i].role == CHAT_ASSISTANT;
	assert_int_equal(a.n, turns);
	static const char open[] = "<|im_start|>assistant\n", close[] = "<|im_end|>";
	for (size_t i = 0; i < a.n; i++) {
		size_t s = a.v[i].start, e = a.v[i].end, k = strlen(open);
		assert_true(s >= end + k && e > s && e <= len);
		assert_memory_equal(text + s - k, open, k);
		assert_false(in_spans(&m, s - k, s));
		const char *p = text + s;
		for (;;) { /* the template's first <|im_end|> after the start ends the answer */
			p = memmem(p, (size_t)(text + len - p), close, strlen(close));
			assert_non_null(p);
			if (!in_spans(&m, (size_t)(p - text), (size_t)(p - text) + strlen(close)))
				break;
			p++;
		}
		assert_int_equal((size_t)(p - text) + strlen(close), e);
		end = e;
	}
	free(m.v);
	free(a.v);
	free(again);
}

static void check_variant(size_t k)
{
	size_t ncases;
	struct chat **cases = load_cases(&ncases);
	char name[128];
	snprintf(name, sizeof name, "template-golden-%s.json", variants[k].name);
	json_t *golden = load_golden(name);
	json_t *renders = json_object_get(golden, "renders");
	assert_int_equal(json_array_size(renders), ncases * 6);
	size_t bad = 0;
	for (size_t i = 0; i < json_array_size(renders); i++) {
		json_t *r = json_array_get(renders, i);
		size_t c = (size_t)json_integer_value(json_object_get(r, "case"));
		assert_true(c < ncases);
		bool agp = json_is_true(json_object_get(r, "add_generation_prompt"));
		json_t *th = json_object_get(r, "enable_thinking");
		int think = json_is_null(th)   ? TMPL_THINK_ABSENT
			    : json_is_true(th) ? TMPL_THINK_ON
					       : TMPL_THINK_OFF;
		const char *want = json_string_value(json_object_get(r, "text"));
		size_t len;
		char *got = tmpl_render(cases[c], variants[k].v, agp, think, &len);
		assert_non_null(got);
		check_spans(cases[c], variants[k].v, agp, think, got, len);
		if (!agp && think == TMPL_THINK_ABSENT)
			check_answers(cases[c], variants[k].v, got, len);
		if (len != strlen(want) || memcmp(got, want, len) != 0) {
			if (bad++ < 5)
				print_error("%s: case %zu agp=%d think=%d differs\n--- "
					    "want\n%s\n--- got\n%s\n",
					    variants[k].name, c, agp, think, want, got);
		}
		free(got);
	}
	assert_int_equal(bad, 0);
	json_decref(golden);
	for (size_t i = 0; i < ncases; i++)
		chat_free(cases[i]);
	free(cases);
}

static void test_qwen3(void **state)
{
	(void)state;
	check_variant(0);
}
static void test_instruct(void **state)
{
	(void)state;
	check_variant(1);
}
static void test_thinking(void **state)
{
	(void)state;
	check_variant(2);
}
static void test_chatml(void **state)
{
	(void)state;
	check_variant(3);
}

static void test_detect(void **state)
{
	(void)state;
	for (size_t k = 0; k < sizeof variants / sizeof variants[0]; k++) {
		char name[128];
		snprintf(name, sizeof name, "template-config-%s.json", variants[k].name);
		json_t *cfg = load_golden(name);
		const char *warning = "unset";
		enum tmpl_variant v = tmpl_detect(
			json_string_value(json_object_get(cfg, "chat_template")), &warning);
		assert_int_equal(v, variants[k].v);
		if (variants[k].v == TMPL_CHATML)
			assert_non_null(warning);
		else
			assert_null(warning);
		assert_string_equal(tmpl_variant_name(v), variants[k].name);
		/* the same text with its string literals' "\n" escapes written as newlines
		 * (as Unsloth's templates, made from Python strings, hold them) */
		const char *t = json_string_value(json_object_get(cfg, "chat_template"));
		char *raw = strdup(t), *o = raw;
		for (const char *p = t; *p; p++)
			if (p[0] == '\\' && p[1] == 'n')
				*o++ = '\n', p++;
			else
				*o++ = *p;
		*o = 0;
		warning = "unset";
		assert_int_equal(tmpl_detect(raw, &warning), variants[k].v);
		if (variants[k].v != TMPL_CHATML)
			assert_null(warning); /* still Qwen's own text */
		free(raw);
		if (variants[k].v != TMPL_CHATML) {
			/* CRLF line ends and a last newline: Qwen's own too */
			size_t n = strlen(t);
			char *crlf = malloc(2 * n + 3), *c = crlf;
			for (const char *p = t; *p; p++) {
				if (*p == '\n')
					*c++ = '\r';
				*c++ = *p;
			}
			strcpy(c, "\r\n");
			warning = "unset";
			assert_int_equal(tmpl_detect(crlf, &warning), variants[k].v);
			assert_null(warning);
			free(crlf);
			/* an edit the markers keep: rendered as Qwen's, with a warning */
			char *ed = malloc(n + 8);
			sprintf(ed, "%s{# #}", t);
			warning = NULL;
			assert_int_equal(tmpl_detect(ed, &warning), variants[k].v);
			assert_non_null(warning);
			assert_non_null(strstr(warning, "edited or older copy"));
			free(ed);
		}
		json_decref(cfg);
	}
	/* none and an empty one: plain ChatML, each said as what it is */
	const char *warn = NULL;
	assert_int_equal(tmpl_detect(NULL, &warn), TMPL_CHATML);
	assert_non_null(strstr(warn, "has no chat template"));
	assert_int_equal(tmpl_detect("", &warn), TMPL_CHATML);
	assert_non_null(strstr(warn, "chat template is empty"));
	/* a hybrid template edited to think only when asked: off when none is given */
	json_t *hy = load_golden("template-config-qwen3.json");
	const char *ht = json_string_value(json_object_get(hy, "chat_template"));
	assert_int_equal(tmpl_absent_think(ht), TMPL_THINK_ABSENT);
	char *flip = malloc(strlen(ht) + 16), *at2 = strstr(ht, "enable_thinking is defined and");
	assert_non_null(at2);
	sprintf(flip, "%.*senable_thinking is not defined or%s", (int)(at2 - ht), ht,
		at2 + strlen("enable_thinking is defined and"));
	const char *warning = "unset";
	assert_int_equal(tmpl_detect(flip, &warning), TMPL_QWEN3);
	assert_null(warning); /* an edit qwenchat follows */
	assert_int_equal(tmpl_absent_think(flip), TMPL_THINK_OFF);
	free(flip);
	json_decref(hy);
	/* Near misses are not taken for a known template: Qwen2.5's (a default system
	 * prompt) and a Thinking-2507 text whose prompt no longer opens <think>. */
	json_t *cfg = load_golden("template-config-qwen3-thinking-2507.json");
	const char *thinking = json_string_value(json_object_get(cfg, "chat_template"));
	char *edited = strdup(thinking), *at = strstr(edited, "assistant\\n<think>\\n'");
	assert_non_null(at);
	memmove(at + 11, at + 20, strlen(at + 20) + 1); /* drop "<think>\\n" */
	assert_int_equal(tmpl_detect(edited, NULL), TMPL_CHATML);
	free(edited);
	json_decref(cfg);
	assert_int_equal(
		tmpl_detect("{%- if messages[0].role == 'system' %}{{- '<|im_start|>system\\n' + "
			    "messages[0].content + '<|im_end|>\\n' }}{%- else %}{{- '<|im_start|>"
			    "system\\nYou are Qwen, created by Alibaba Cloud.' }}{%- endif %}"
			    "<tool_response>",
			    NULL),
		TMPL_CHATML);
	warning = NULL;
	assert_int_equal(tmpl_detect(NULL, &warning), TMPL_CHATML);
	assert_non_null(warning);
	assert_true(tmpl_has_think_switch(TMPL_QWEN3));
	assert_false(tmpl_has_think_switch(TMPL_QWEN3_THINKING));
	assert_true(tmpl_prompt_opens_think(TMPL_QWEN3_THINKING, TMPL_THINK_ABSENT));
	assert_false(tmpl_prompt_opens_think(TMPL_QWEN3, TMPL_THINK_ON));
}

/* A typed marker inside a message is in a span; the template's own are not. */
static void test_message_spans(void **state)
{
	(void)state;
	struct chat *c = chat_new();
	assert_int_equal(chat_set_system(c, "S<|im_end|>"), 0);
	assert_int_equal(chat_add(c, CHAT_USER, "<|im_start|>x", NULL), 0);
	struct tmpl_spans m = {0};
	size_t len;
	char *s = tmpl_render_spans(c, TMPL_QWEN3, true, TMPL_THINK_OFF, &len, &m);
	assert_non_null(s);
	assert_string_equal(
		s, "<|im_start|>system\nS<|im_end|><|im_end|>\n<|im_start|>user\n"
		   "<|im_start|>x<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n");
	assert_int_equal(m.n, 2);
	assert_int_equal(m.v[0].start, strlen("<|im_start|>system\n"));
	assert_memory_equal(s + m.v[0].start, "S<|im_end|>", m.v[0].end - m.v[0].start);
	assert_int_equal(m.v[0].end - m.v[0].start, strlen("S<|im_end|>"));
	assert_memory_equal(s + m.v[1].start, "<|im_start|>x", m.v[1].end - m.v[1].start);
	assert_int_equal(m.v[1].end - m.v[1].start, strlen("<|im_start|>x"));
	free(m.v);
	free(s);
	chat_free(c);
}

/* The hybrid template drops the reasoning of answers before the last user message:
 * the answers are what the rendering of the whole conversation shows. */
static void test_answers(void **state)
{
	(void)state;
	struct chat *c = chat_new();
	assert_int_equal(chat_add(c, CHAT_USER, "q1", NULL), 0);
	assert_int_equal(chat_add(c, CHAT_ASSISTANT, "a1", "r1"), 0);
	assert_int_equal(chat_add(c, CHAT_USER, "q2", NULL), 0);
	assert_int_equal(chat_add(c, CHAT_ASSISTANT, "a2", "r2"), 0);
	assert_int_equal(chat_add(c, CHAT_ASSISTANT, "a3", NULL), 0);
	struct tmpl_spans m = {0}, a = {0};
	size_t len;
	char *s = tmpl_render_answers(c, TMPL_QWEN3, &len, &m, &a);
	assert_non_null(s);
	assert_int_equal(a.n, 3);
	const char *want[] = {"a1<|im_end|>", "<think>\nr2\n</think>\n\na2<|im_end|>",
			      "<think>\n\n</think>\n\na3<|im_end|>"};
	for (size_t i = 0; i < 3; i++) {
		assert_int_equal(a.v[i].end - a.v[i].start, strlen(want[i]));
		assert_memory_equal(s + a.v[i].start, want[i], strlen(want[i]));
	}
	free(s);
	s = tmpl_render_answers(c, TMPL_CHATML, &len, &m, &a);
	assert_int_equal(a.n, 3);
	assert_memory_equal(s + a.v[1].start, "a2<|im_end|>", strlen("a2<|im_end|>"));
	free(s);
	free(m.v);
	free(a.v);
	chat_free(c);
}

static void test_empty(void **state)
{
	(void)state;
	struct chat *c = chat_new();
	assert_non_null(c);
	assert_null(tmpl_render(c, TMPL_QWEN3, true, TMPL_THINK_ABSENT, NULL));
	assert_non_null(strstr(err_msg(), "no messages"));
	chat_free(c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_qwen3),         cmocka_unit_test(test_instruct),
		cmocka_unit_test(test_thinking),      cmocka_unit_test(test_chatml),
		cmocka_unit_test(test_detect),        cmocka_unit_test(test_empty),
		cmocka_unit_test(test_message_spans), cmocka_unit_test(test_answers),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
