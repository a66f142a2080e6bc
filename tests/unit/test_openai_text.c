/* test_openai_text.c — /v1/completions without HTTP or a model: the prompt's four
 * forms and the fields that differ from chat (max_tokens 0 and its default of 16,
 * logprobs as a count, echo, suffix), and a choice built whole and streamed: the echo
 * before the answer, stop strings applied to the answer alone, the legacy logprobs
 * lists (a prompt's first token with none, each token in its own top list, text_offset
 * in characters), chunks that add up to the whole choice. */
#include <jansson.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "src/base/err.h"
#include "src/serve/completion.h"
#include "src/serve/openai.h"
#include "src/serve/scores.h"

static struct oai_request *parse(const char *body, struct oai_error *e)
{
	return oai_parse_text(body, strlen(body), e);
}

static void test_prompt_forms(void **state)
{
	(void)state;
	struct oai_error e;
	struct oai_request *r = parse("{\"prompt\": \"Hi\"}", &e);
	assert_non_null(r);
	assert_int_equal(r->kind, OAI_TEXT);
	assert_int_equal(r->n_prompts, 1);
	assert_string_equal(r->prompts[0].text, "Hi");
	assert_int_equal(r->max_tokens, OAI_DEFAULT_TEXT_TOKENS);
	assert_true(r->max_tokens_default);
	assert_false(r->logprobs || r->echo);
	oai_request_free(r);
	r = parse("{\"prompt\": [\"a\", \"b\\u00e9c\"], \"max_tokens\": 0, \"echo\": true, "
		  "\"logprobs\": 5}",
		  &e);
	assert_non_null(r);
	assert_int_equal(r->n_prompts, 2);
	assert_int_equal(r->prompts[1].len, 4); /* bytes of UTF-8 */
	assert_int_equal(r->max_tokens, 0);
	assert_false(r->max_tokens_default);
	assert_true(r->logprobs && r->echo);
	assert_int_equal(r->top_logprobs, 5);
	oai_request_free(r);
	r = parse("{\"prompt\": [1, 2, 3], \"logprobs\": true}", &e);
	assert_non_null(r);
	assert_int_equal(r->n_prompts, 1);
	assert_null(r->prompts[0].text);
	assert_int_equal(r->prompts[0].n_ids, 3);
	assert_int_equal(r->prompts[0].ids[2], 3);
	assert_true(r->logprobs); /* true: one alternative, as vLLM reads it */
	assert_int_equal(r->top_logprobs, 1);
	oai_request_free(r);
	r = parse("{\"prompt\": [7.0, 8]}", &e); /* a whole real is an id, as pydantic reads it */
	assert_non_null(r);
	assert_int_equal(r->prompts[0].ids[0], 7);
	oai_request_free(r);
	r = parse("{\"prompt\": [[7], [8, 9]], \"logprobs\": false, \"suffix\": \"\"}", &e);
	assert_non_null(r);
	assert_int_equal(r->n_prompts, 2);
	assert_int_equal(r->prompts[1].n_ids, 2);
	assert_false(r->logprobs);
	oai_request_free(r);
}

static void test_refused(void **state)
{
	(void)state;
	static const struct {
		const char *body, *param;
	} bad[] = {
		{"{}", "prompt"},
		{"{\"prompt\": 5}", "prompt"},
		{"{\"prompt\": \"\"}", "prompt"},
		{"{\"prompt\": [[]]}", "prompt[0]"},
		{"{\"prompt\": [\"a\", [1]]}", "prompt[1]"},
		{"{\"prompt\": [1, 2.5]}", "prompt[1]"},
		{"{\"prompt\": [[1, 2147483648]]}", "prompt[0][1]"},
		{"{\"prompt\": \"x\", \"suffix\": \"y\"}", "suffix"},
		{"{\"prompt\": \"x\", \"logprobs\": 21}", "logprobs"},
		{"{\"prompt\": \"x\", \"max_tokens\": -1}", "max_tokens"},
		{"{\"prompt\": \"x\", \"stream_options\": {\"include_usage\": false}}",
		 "stream_options"},
		{"{\"prompt\": \"x\", \"n\": 129}", "n"},
		/* 9 prompts of 128 choices: more than 1024 choices */
		{"{\"prompt\": [\"a\", \"b\", \"c\", \"d\", \"e\", \"f\", \"g\", \"h\", \"i\"], "
		 "\"n\": 128}",
		 "n"},
		{"{\"prompt\": \"x\", \"ignore_eos\": \"yes\"}", "ignore_eos"},
		{"{\"prompt\": \"x\", \"min_tokens\": 17}", "min_tokens"}, /* max_tokens is 16 */
		{"{\"prompt\": \"x\", \"include_stop_str_in_output\": 1}",
		 "include_stop_str_in_output"},
		{"{\"prompt\": \"x\", \"allowed_token_ids\": []}", "allowed_token_ids"},
		{"{\"prompt\": \"x\", \"allowed_token_ids\": [1, -2]}", "allowed_token_ids[1]"},
		{"{\"prompt\": \"x\", \"truncate_prompt_tokens\": 0}", "truncate_prompt_tokens"},
		{"{\"prompt\": \"x\", \"truncate_prompt_tokens\": -2}", "truncate_prompt_tokens"},
		{"{\"prompt\": \"x\", \"response_format\": {\"type\": \"xml\"}}",
		 "response_format"},
	};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		struct oai_error e;
		struct oai_request *r = parse(bad[i].body, &e);
		if (r)
			fail_msg("%s: taken", bad[i].body);
		if (strcmp(e.param, bad[i].param))
			fail_msg("%s: param '%s', expected '%s' (%s)", bad[i].body, e.param,
				 bad[i].param, err_msg());
	}
}

/* Feeds a prompt's two tokens (the first with no log-probability) and an answer of
 * pieces, as the server does. */
static void feed(struct completion *c, const char *const *answer, int n, struct strbuf *b,
		 bool stream)
{
	struct completion_token prompt[2] = {{"caf", 3, NAN}, {"\xc3\xa9!", 3, -0.5}};
	struct completion_token alt = {"x", 1, -0.25};
	completion_add_token(c, &prompt[0], NULL, 0);
	completion_add_token(c, &prompt[1], &alt, 1);
	if (stream)
		completion_stream(c, b);
	for (int i = 0; i < n; i++) {
		struct completion_token t = {answer[i], strlen(answer[i]), -1.0};
		completion_add_token(c, &t, &alt, 1);
		if (completion_add_text(c, SESS_ANSWER, answer[i], strlen(answer[i]), true))
			break;
		if (stream)
			completion_stream(c, b);
	}
}

static void test_choice(void **state)
{
	(void)state;
	char *stop[] = {"END"};
	static const char *const answer[] = {" ok E", "ND no"};
	struct completion_options o = {.text = true,
				       .index = 3,
				       .echo = "caf\xc3\xa9!",
				       .echo_len = 6,
				       .id = "cmpl-x",
				       .model = "m",
				       .stop = stop,
				       .n_stop = 1,
				       .logprobs = true};
	struct completion *c = completion_new(&o);
	feed(c, answer, 2, NULL, false);
	json_t *ch = completion_choice(c, COMPLETION_STOP);
	completion_free(c);
	assert_int_equal(json_integer_value(json_object_get(ch, "index")), 3);
	assert_string_equal(json_string_value(json_object_get(ch, "text")), "caf\xc3\xa9! ok ");
	assert_string_equal(json_string_value(json_object_get(ch, "finish_reason")), "stop");
	json_t *lp = json_object_get(ch, "logprobs");
	json_t *toks = json_object_get(lp, "tokens"), *vals = json_object_get(lp, "token_logprobs");
	json_t *tops = json_object_get(lp, "top_logprobs"),
	       *offs = json_object_get(lp, "text_offset");
	assert_int_equal(json_array_size(toks), 4);
	assert_true(json_is_null(json_array_get(vals, 0)));
	assert_true(json_is_null(json_array_get(tops, 0)));
	assert_true(json_real_value(json_array_get(vals, 1)) == -0.5);
	json_t *top1 = json_array_get(tops, 1);
	assert_int_equal(json_object_size(top1), 2); /* the alternative and the token */
	assert_true(json_real_value(json_object_get(top1, "\xc3\xa9!")) == -0.5);
	assert_true(json_real_value(json_object_get(top1, "x")) == -0.25);
	/* characters, not bytes: "café!" is 5 */
	static const int want_off[] = {0, 3, 5, 10};
	for (int i = 0; i < 4; i++)
		assert_int_equal(json_integer_value(json_array_get(offs, i)), want_off[i]);

	/* streamed: the chunks add up to the same text and lists */
	o.stream = true, o.include_usage = true;
	c = completion_new(&o);
	struct strbuf b = {0};
	feed(c, answer, 2, &b, true);
	struct completion_usage u = {2, 0, 2};
	completion_finish(c, COMPLETION_STOP, &b);
	completion_stream_end(&o, &u, &b);
	completion_free(c);
	json_t *all_toks = json_array(), *all_offs = json_array();
	char text[64] = "";
	const char *p = b.p, *finish = NULL;
	bool done = false, usage = false;
	while (p && *p) {
		const char *end = strstr(p, "\n\n");
		assert_non_null(end);
		assert_memory_equal(p, "data: ", 6);
		if (!strncmp(p + 6, "[DONE]", 6)) {
			done = true;
			break;
		}
		json_t *ev = json_loadb(p + 6, (size_t)(end - p - 6), 0, NULL);
		assert_non_null(ev);
		assert_string_equal(json_string_value(json_object_get(ev, "object")),
				    "text_completion");
		json_t *cc = json_array_get(json_object_get(ev, "choices"), 0);
		usage |= json_is_object(json_object_get(ev, "usage"));
		if (cc) {
			strncat(text, json_string_value(json_object_get(cc, "text")),
				sizeof text - strlen(text) - 1);
			json_t *l = json_object_get(cc, "logprobs");
			json_array_extend(all_toks, json_object_get(l, "tokens"));
			json_array_extend(all_offs, json_object_get(l, "text_offset"));
			if (json_is_string(json_object_get(cc, "finish_reason")))
				finish = "stop";
		}
		json_decref(ev);
		p = end + 2;
	}
	assert_true(done && usage);
	assert_string_equal(text, "caf\xc3\xa9! ok ");
	assert_non_null(finish);
	assert_true(json_equal(all_toks, toks));
	assert_true(json_equal(all_offs, offs));
	json_decref(all_toks);
	json_decref(all_offs);
	json_decref(ch);
	free(b.p);
}

/* A character cut between two tokens: each part reads U+FFFD, as Hugging Face decodes
 * one token, and text_offset counts those characters, as vLLM does. */
static void test_cut_character(void **state)
{
	(void)state;
	struct completion_options o = {
		.text = true, .id = "cmpl-x", .model = "m", .logprobs = true};
	struct completion *c = completion_new(&o);
	struct completion_token parts[3] = {{"\xe2\x82", 2, -1}, {"\xac", 1, -1}, {"x", 1, -1}};
	for (int i = 0; i < 3; i++)
		completion_add_token(c, &parts[i], NULL, 0);
	json_t *ch = completion_choice(c, COMPLETION_LENGTH);
	completion_free(c);
	json_t *lp = json_object_get(ch, "logprobs");
	json_t *toks = json_object_get(lp, "tokens"), *offs = json_object_get(lp, "text_offset");
	assert_string_equal(json_string_value(json_array_get(toks, 0)), "\xef\xbf\xbd");
	assert_string_equal(json_string_value(json_array_get(toks, 1)), "\xef\xbf\xbd");
	assert_int_equal(json_integer_value(json_array_get(offs, 2)), 2);
	json_decref(ch);
}

/* A prompt position's scores: the token's log-probability and rank (vLLM's: the ids
 * as likely or likelier, itself included, ties too), the likeliest in order. */
static void test_scores_rank(void **state)
{
	(void)state;
	const float row[5] = {1, 3, 3, 2, 0};
	double z = log(exp(1) + 2 * exp(3) + exp(2) + exp(0));
	struct scores_entry e;
	assert_int_equal(scores_entry_of(row, 5, 2, true, &e), 0);
	assert_int_equal(e.rank, 2);
	assert_true(fabs(e.logprob - (3 - z)) < 1e-6);
	assert_int_equal(e.top[0].id, 1); /* ties by id */
	assert_int_equal(e.top[1].id, 2);
	assert_int_equal(e.top[2].id, 3);
	assert_int_equal(e.top[4].id, 4);
	assert_int_equal(e.top[5].id, -1); /* past the vocabulary */
	assert_int_equal(scores_entry_of(row, 5, 3, true, &e), 0);
	assert_int_equal(e.rank, 3);
	assert_int_equal(scores_entry_of(row, 5, 4, true, &e), 0);
	assert_int_equal(e.rank, 5);
	assert_int_equal(scores_entry_of(row, 5, 5, true, &e), -1);
	assert_int_equal(scores_entry_of(row, 5, 3, false, &e), 0); /* not asked: no pass */
	assert_int_equal(e.rank, 0);
	assert_true(fabs(e.logprob - (2 - z)) < 1e-6);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_prompt_forms), cmocka_unit_test(test_refused),
		cmocka_unit_test(test_choice),       cmocka_unit_test(test_cut_character),
		cmocka_unit_test(test_scores_rank),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
