/* test_openai_request.c — what `qwenchat serve` reads from an OpenAI request, without
 * HTTP or a model: every field, a conversation that must render exactly as the same one
 * given as a conversation file (whose rendering is checked against jinja2), refused
 * requests naming their field, and the bounds on what a body may cost. */
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
#include "src/chat/template.h"
#include "src/chat/toolcall.h"
#include "src/serve/completion.h"
#include "src/serve/openai.h"
#include "src/serve/origin.h"


static struct oai_request *parse(const char *body, struct oai_error *e)
{
	return oai_parse(body, strlen(body), e);
}

static void test_parse_fields(void **state)
{
	(void)state;
	const char *body =
		"{\"model\": \"m\", \"messages\": ["
		"{\"role\": \"developer\", \"content\": \"Be brief.\"},"
		"{\"role\": \"user\", \"content\": [{\"type\": \"text\", \"text\": \"a\"},"
		" {\"type\": \"text\", \"text\": \"b\"}]},"
		"{\"role\": \"assistant\", \"content\": null, \"reasoning_content\": \"hmm\","
		" \"tool_calls\": [{\"id\": \"c1\", \"type\": \"function\", \"function\":"
		" {\"name\": \"f\", \"arguments\": \"{\\\"x\\\":1}\"}},"
		" {\"id\": \"c2\", \"type\": \"function\", \"function\":"
		" {\"name\": \"g\", \"arguments\": \"not json\"}}]},"
		"{\"role\": \"tool\", \"tool_call_id\": \"c1\", \"content\": \"2\"}],"
		"\"tools\": [{\"type\": \"function\", \"function\": {\"name\": \"f\"}}],"
		"\"tool_choice\": \"auto\", \"temperature\": 0.5, \"top_p\": 0.9, \"top_k\": -1,"
		"\"min_p\": 0.1, \"presence_penalty\": 0.5, \"repetition_penalty\": 1.1, \"seed\": "
		"-1,"
		"\"max_tokens\": 10, \"max_completion_tokens\": 20, \"stop\": \"END\","
		"\"stream\": true, \"stream_options\": {\"include_usage\": true}, \"logprobs\": "
		"true,"
		"\"top_logprobs\": 5, \"chat_template_kwargs\": {\"enable_thinking\": false},"
		"\"response_format\": {\"type\": \"text\"}, \"n\": 1, \"frequency_penalty\": 0.25,"
		"\"logit_bias\": {}, \"user\": \"ignored\", \"ignore_eos\": false, \"min_tokens\": "
		"0,"
		"\"best_of\": 1, \"echo\": false, \"stop_token_ids\": [], \"functions\": null,"
		"\"function_call\": \"none\","
		"\"add_generation_prompt\": true, \"modalities\": [\"text\"]}";
	struct oai_error e;
	struct oai_request *r = parse(body, &e);
	if (!r)
		fail_msg("%s", err_msg());
	const struct chat *c = r->chat;
	assert_int_equal(c->n, 4);
	assert_int_equal(c->turns[0].role, CHAT_SYSTEM);
	assert_string_equal(c->turns[1].content, "a\nb");
	assert_int_equal(c->turns[2].role, CHAT_ASSISTANT);
	assert_string_equal(c->turns[2].content, "");
	assert_string_equal(c->turns[2].reasoning, "hmm");
	assert_int_equal(c->turns[2].n_calls, 2);
	/* JSON text holding an object is read as the object (tojson writes it back) */
	assert_string_equal(c->turns[2].calls[0].arguments, "{\"x\": 1}");
	assert_false(c->turns[2].calls[0].arguments_is_text);
	assert_string_equal(c->turns[2].calls[1].arguments, "not json");
	assert_true(c->turns[2].calls[1].arguments_is_text);
	assert_int_equal(c->turns[3].role, CHAT_TOOL);
	assert_int_equal(c->n_tools, 1);
	assert_true(r->parse_tools);
	assert_int_equal(r->samp_set, SAMP_SET_TEMP | SAMP_SET_TOP_P | SAMP_SET_TOP_K |
					      SAMP_SET_MIN_P | SAMP_SET_PRESENCE | SAMP_SET_REPEAT |
					      SAMP_SET_SEED | SAMP_SET_FREQUENCY);
	assert_true(r->samp.temperature == 0.5 && r->samp.top_p == 0.9 && r->samp.min_p == 0.1);
	assert_true(r->samp.presence_penalty == 0.5 && r->samp.repetition_penalty == 1.1);
	assert_true(r->samp.frequency_penalty == 0.25);
	assert_int_equal(r->samp.top_k, 0);
	assert_true(r->samp.seed == UINT64_MAX);
	assert_int_equal(r->max_tokens, 20); /* max_completion_tokens wins */
	assert_int_equal(r->n_stop, 1);
	assert_string_equal(r->stop[0], "END");
	assert_true(r->stream && r->include_usage && r->logprobs);
	assert_int_equal(r->top_logprobs, 5);
	assert_int_equal(r->enable_thinking, TMPL_THINK_OFF);
	oai_request_free(r);
}

/* response_format and vLLM's guided_json and structured_outputs: each gives a format */
static void test_parse_formats(void **state)
{
	(void)state;
	struct oai_error e;
	struct oai_request *r;
	r = parse("{\"messages\": [{\"role\": \"user\", \"content\": \"hi\"}], "
		  "\"response_format\": {\"type\": \"json_object\"}}",
		  &e);
	assert_non_null(r);
	assert_non_null(r->format);
	oai_request_free(r);
	/* vLLM's ways: guided_json (a schema or its text), structured_outputs.json */
	static const char *const vllm[] = {
		"\"guided_json\": {\"enum\": [\"yes\", \"no\"]}",
		"\"guided_json\": \"{\\\"type\\\": \\\"integer\\\"}\"",
		"\"structured_outputs\": {\"json\": {\"type\": \"array\"}, \"regex\": null}",
		"\"guided_json\": {\"type\": \"string\", \"pattern\": \"^[a-z]+\\\\d$\"}",
	};
	for (size_t i = 0; i < sizeof vllm / sizeof *vllm; i++) {
		char body[512];
		snprintf(body, sizeof body,
			 "{\"messages\": [{\"role\": \"user\", \"content\": \"hi\"}], %s}",
			 vllm[i]);
		r = parse(body, &e);
		if (!r)
			fail_msg("%s: %s", vllm[i], err_msg());
		assert_non_null(r->format);
		oai_request_free(r);
	}
	r = parse("{\"messages\": [{\"role\": \"user\", \"content\": \"hi\"}], "
		  "\"response_format\": {\"type\": \"json_schema\", \"json_schema\": "
		  "{\"name\": \"p\", \"strict\": true, \"schema\": {\"type\": \"object\", "
		  "\"properties\": {\"a\": {\"type\": \"integer\"}}}}}}",
		  &e);
	assert_non_null(r);
	assert_non_null(r->format);
	oai_request_free(r);
}

/* logit_bias, the defaults, whole numbers written as reals, vLLM's ways to end an
 * answer, and tool_choice "none" */
static void test_parse_small(void **state)
{
	(void)state;
	struct oai_error e;
	struct oai_request *r;
	/* logit_bias: ids as decimal keys, biases held to [-100, 100] as vLLM holds them */
	r = parse("{\"messages\": [{\"role\": \"user\", \"content\": \"hi\"}], "
		  "\"logit_bias\": {\"7\": 150, \"151643\": -2.5, \"0\": -1e9}}",
		  &e);
	if (!r)
		fail_msg("%s", err_msg());
	assert_int_equal(r->n_bias, 3);
	for (size_t i = 0; i < r->n_bias; i++) {
		int32_t id = r->bias_ids[i];
		float want = id == 7 ? 100.0f : id == 151643 ? -2.5f : -100.0f;
		assert_true(id == 7 || id == 151643 || id == 0);
		assert_true(r->bias[i] == want);
	}
	oai_request_free(r);

	/* the least: defaults */
	r = parse("{\"messages\": [{\"role\": \"user\", \"content\": \"hi\"}]}", &e);
	assert_non_null(r);
	assert_int_equal(r->samp_set, 0);
	assert_int_equal(r->max_tokens, 0);
	assert_int_equal(r->enable_thinking, TMPL_THINK_ABSENT);
	assert_false(r->stream || r->logprobs || r->parse_tools);
	oai_request_free(r);

	/* whole numbers written as reals are integers (vLLM takes them) */
	r = parse("{\"messages\": [{\"role\": \"user\", \"content\": \"hi\"}], \"top_k\": 5.0, "
		  "\"seed\": 7.0, \"n\": 1.0, \"max_tokens\": 3e1}",
		  &e);
	if (!r)
		fail_msg("%s", err_msg());
	assert_int_equal(r->samp.top_k, 5);
	assert_true(r->samp.seed == 7);
	assert_int_equal(r->max_tokens, 30);
	oai_request_free(r);

	/* vLLM's ways to end an answer */
	r = parse(
		"{\"messages\": [{\"role\": \"user\", \"content\": \"hi\"}], \"ignore_eos\": true, "
		"\"min_tokens\": 4, \"max_tokens\": 4, \"stop_token_ids\": [7, 151645]}",
		&e);
	if (!r)
		fail_msg("%s", err_msg());
	assert_true(r->ignore_eos);
	assert_int_equal(r->min_tokens, 4);
	assert_int_equal(r->n_stop_ids, 2);
	assert_int_equal(r->stop_ids[0], 7);
	assert_int_equal(r->stop_ids[1], 151645);
	assert_int_equal(r->repeat_last_n, OAI_REPEAT_SERVER); /* not given: the server's */
	oai_request_free(r);

	/* llama-server's repeat_last_n: -1 is the whole context */
	r = parse("{\"messages\": [{\"role\": \"user\", \"content\": \"hi\"}], "
		  "\"repeat_last_n\": -1}",
		  &e);
	if (!r)
		fail_msg("%s", err_msg());
	assert_int_equal(r->repeat_last_n, -1);
	oai_request_free(r);

	/* tool_choice "none": the tools are shown (as vLLM shows them) but no call parsed */
	r = parse(
		"{\"messages\": [{\"role\": \"user\", \"content\": \"hi\"}], \"tool_choice\": "
		"\"none\", \"tools\": [{\"type\": \"function\", \"function\": {\"name\": \"f\"}}]}",
		&e);
	assert_non_null(r);
	assert_int_equal(r->chat->n_tools, 1);
	assert_false(r->parse_tools);
	oai_request_free(r);

	/* stream_options as vLLM reads them; top_logprobs 0 needs no logprobs */
	static const struct {
		const char *members;
		bool usage, continuous;
	} so[] = {
		{"\"stream_options\": {}, \"top_logprobs\": 0", false, false},
		{"\"stream\": true, \"stream_options\": {}", true, false},
		{"\"stream\": true, \"stream_options\": {\"include_usage\": null}", false, false},
		{"\"stream\": true, \"stream_options\": {\"continuous_usage_stats\": true}", true,
		 true},
		{"\"stream\": true, \"stream_options\": {\"include_usage\": false, "
		 "\"continuous_usage_stats\": true}",
		 false, false},
	};
	for (size_t i = 0; i < sizeof so / sizeof so[0]; i++) {
		char body[256];
		snprintf(body, sizeof body,
			 "{\"messages\": [{\"role\": \"user\", \"content\": \"hi\"}], %s}",
			 so[i].members);
		r = parse(body, &e);
		if (!r)
			fail_msg("%s: %s", body, err_msg());
		assert_int_equal(r->include_usage, so[i].usage);
		assert_int_equal(r->continuous_usage, so[i].continuous);
		oai_request_free(r);
	}
}


/* The same conversation as an OpenAI request (arguments as JSON text, content as
 * parts, a tool without description) and as a conversation file (arguments as
 * objects, the tool as vLLM hands it to the template) renders to the same prompt:
 * the file form's rendering is the one checked against jinja2. */
static void test_parse_renders_as_file(void **state)
{
	(void)state;
	const char *req =
		"{\"messages\": [{\"role\": \"system\", \"content\": [{\"type\": \"text\", "
		"\"text\":"
		" \"S\"}]}, {\"role\": \"user\", \"content\": \"Weather?\"},"
		" {\"role\": \"assistant\", \"content\": \"\", \"tool_calls\": [{\"type\": "
		"\"function\","
		" \"function\": {\"name\": \"w\", \"arguments\": \"{\\\"city\\\":\\\"Paris\\\","
		"\\\"days\\\":[1,2.5]}\"}}]}, {\"role\": \"tool\", \"content\": \"sunny\"}],"
		" \"tools\": [{\"type\": \"function\", \"function\": {\"name\": \"w\", "
		"\"parameters\":"
		" {\"type\": \"object\"}}}]}";
	const char *file =
		"{\"messages\": [{\"role\": \"system\", \"content\": \"S\"}, {\"role\": \"user\","
		" \"content\": \"Weather?\"}, {\"role\": \"assistant\", \"content\": \"\","
		" \"tool_calls\": [{\"type\": \"function\", \"function\": {\"name\": \"w\","
		" \"arguments\": {\"city\": \"Paris\", \"days\": [1, 2.5]}}}]},"
		" {\"role\": \"tool\", \"content\": \"sunny\"}], \"tools\": [{\"type\": "
		"\"function\","
		" \"function\": {\"name\": \"w\", \"description\": null, \"parameters\": "
		"{\"type\": \"object\"}}}]}";
	struct oai_error e;
	struct oai_request *r = parse(req, &e);
	struct chat *c = chat_from_json(file, strlen(file), "file");
	assert_non_null(r);
	assert_non_null(c);
	enum tmpl_variant vs[] = {TMPL_QWEN3, TMPL_QWEN3_INSTRUCT, TMPL_QWEN3_THINKING,
				  TMPL_CHATML};
	for (size_t i = 0; i < 4; i++) {
		char *a = tmpl_render(r->chat, vs[i], true, TMPL_THINK_ABSENT, NULL);
		char *b = tmpl_render(c, vs[i], true, TMPL_THINK_ABSENT, NULL);
		assert_non_null(a);
		assert_string_equal(a, b);
		free(a);
		free(b);
	}
	chat_free(c);
	oai_request_free(r);
}

/* A tool call's arguments as vLLM reads them before the template: a false value
 * (nothing, null, "", [], false) is {}; JSON text is parsed and written back with tojson, except a JSON string, which
 * the template writes as it is; text that is not JSON stays as it is. */
static void test_call_arguments(void **state)
{
	(void)state;
	static const struct {
		const char *args, *renders;
	} cases[] = {
		{"", "{}"},
		{"\"arguments\": null", "{}"},
		{"\"arguments\": \"\"", "{}"},
		{"\"arguments\": []", "{}"},
		{"\"arguments\": false", "{}"},
		{"\"arguments\": \"{\\\"a\\\":1}\"", "{\"a\": 1}"},
		{"\"arguments\": \" [1,2.50] \"", "[1, 2.5]"},
		{"\"arguments\": [1, {\"b\": true}]", "[1, {\"b\": true}]"},
		{"\"arguments\": \"5\"", "5"},
		{"\"arguments\": \"\\\"Paris\\\"\"", "Paris"},
		{"\"arguments\": \"not {json\"", "not {json"},
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		char body[512], want[128];
		snprintf(body, sizeof body,
			 "{\"messages\": [{\"role\": \"assistant\", \"content\": null, "
			 "\"tool_calls\": [{\"type\": \"function\", \"function\": {\"name\": "
			 "\"w\"%s%s}}]}]}",
			 cases[i].args[0] ? ", " : "", cases[i].args);
		snprintf(want, sizeof want, "{\"name\": \"w\", \"arguments\": %s}\n",
			 cases[i].renders);
		struct oai_error e;
		struct oai_request *r = parse(body, &e);
		if (!r)
			fail_msg("%s: %s", body, err_msg());
		char *text = tmpl_render(r->chat, TMPL_QWEN3, false, TMPL_THINK_ABSENT, NULL);
		assert_non_null(text);
		if (!strstr(text, want))
			fail_msg("arguments %s rendered\n%s", cases[i].args, text);
		free(text);
		oai_request_free(r);
	}
}

/* Requests refused, each with the field it names (param) and words of its message. */
static const struct {
	const char *body, *param, *code, *says;
} parse_errors[] = {
	{"{\"messages\": [", "", NULL, "not valid JSON"},
	{"[1, 2]", "", NULL, "not an object"},
	{"{\"messages\": [{\"role\": \"user\", \"content\": \"\xff\"}]}", "", NULL,
	 "not valid JSON"},
	{"{\"messages\": []}", "messages", NULL, "0 messages"},
	{"{\"messages\": \"hi\"}", "messages", NULL, "expected an array"},
	{"{}", "messages", NULL, "got nothing"},
	{"{\"messages\": [{\"role\": \"robot\", \"content\": \"x\"}]}", "messages[0].role", NULL,
	 "unknown role"},
	{"{\"messages\": [{\"content\": \"x\"}]}", "messages[0].role", NULL, "expected a string"},
	{"{\"messages\": [3]}", "messages[0]", NULL, "expected an object"},
	{"{\"messages\": [{\"role\": \"user\", \"content\": 5}]}", "messages[0].content", NULL,
	 "got a number"},
	{"{\"messages\": [{\"role\": \"user\"}]}", "messages[0].content", NULL, "missing"},
	{"{\"messages\": [{\"role\": \"user\", \"content\": [{\"type\": \"image_url\"}]}]}",
	 "messages[0].content[0]", NULL, "only text parts"},
	{"{\"messages\": [{\"role\": \"assistant\", \"content\": \"\", \"tool_calls\": "
	 "[{\"function\": {\"name\": \"w\", \"arguments\": 5}}]}]}",
	 "messages[0].tool_calls[0].function", NULL, "arguments: expected a string or an object"},
	{"{\"messages\": [{\"role\": \"assistant\", \"content\": \"\", \"tool_calls\": "
	 "[{}]}]}",
	 "messages[0].tool_calls[0].function", NULL, "expected an object"},
	{"{\"messages\": [{\"role\": \"user\", \"content\": \"x\"}], \"temperature\": "
	 "\"hot\"}",
	 "temperature", NULL, "expected a number"},
	{"{\"messages\": [{\"role\": \"user\", \"content\": \"x\"}], \"temperature\": 3}",
	 "temperature", NULL, "not in [0, 2]"},
	{"{\"messages\": [{\"role\": \"user\", \"content\": \"x\"}], \"top_k\": 1.5}", "top_k",
	 NULL, "expected an integer"},
	{"{\"messages\": [{\"role\": \"user\", \"content\": \"x\"}], \"max_tokens\": -1}",
	 "max_tokens", NULL, "not in"},
	{"{\"messages\": [{\"role\": \"user\", \"content\": \"x\"}], \"max_tokens\": 1e30}",
	 "max_tokens", NULL, "expected an integer"},
	{"{\"messages\": [{\"role\": \"user\", \"content\": \"x\"}], \"max_tokens\": "
	 "99999999999}",
	 "max_tokens", NULL, "not in"},
	{"{\"messages\": [{\"role\": \"user\", \"content\": \"x\"}], \"n\": 129}", "n", NULL,
	 "not in [1, 128]"},
	/* vLLM's and OpenAI's members this server does not implement: refused when
	 * they ask for something (their defaults pass: the first test's body) */
	{"{\"messages\": [{\"role\": \"user\", \"content\": \"x\"}], \"ignore_eos\": 1}",
	 "ignore_eos", NULL, "expected a boolean"},
	{"{\"messages\": [{\"role\": \"user\", \"content\": \"x\"}], \"min_tokens\": -1}",
	 "min_tokens", NULL, "not in"},
	{"{\"messages\": [{\"role\": \"user\", \"content\": \"x\"}], \"repeat_last_n\": -2}",
	 "repeat_last_n", NULL, "not in"},
	{"{\"messages\": [{\"role\": \"user\", \"content\": \"x\"}], \"min_tokens\": 11, "
	 "\"max_completion_tokens\": 10}",
	 "min_tokens", NULL, "more than max_completion_tokens (10)"},
	{"{\"messages\": [{\"role\": \"user\", \"content\": \"x\"}], \"stop_token_ids\": "
	 "5}",
	 "stop_token_ids", NULL, "expected an array"},
	{"{\"messages\": [{\"role\": \"user\", \"content\": \"x\"}], \"stop_token_ids\": "
	 "[5, -1]}",
	 "stop_token_ids[1]", NULL, "expected a token id"},
	{"{\"messages\": [{\"role\": \"user\", \"content\": \"x\"}], \"stop_token_ids\": "
	 "[5, \"6\"]}",
	 "stop_token_ids[1]", NULL, "got a string"},
	{"{\"messages\": [{\"role\": \"user\", \"content\": \"x\"}], \"best_of\": 2}", "best_of",
	 NULL, "not supported"},
	{"{\"messages\": [{\"role\": \"user\", \"content\": \"x\"}], \"guided_regex\": "
	 "\"a)(b\"}",
	 "guided_regex", NULL, "a ) without its ("},
	{"{\"messages\": [{\"role\": \"user\", \"content\": \"x\"}], \"guided_grammar\": "
	 "\"root ::= x\"}",
	 "guided_grammar", NULL, "not supported"},
	{"{\"messages\": [{\"role\": \"user\", \"content\": \"x\"}], "
	 "\"add_generation_prompt\": false}",
	 "add_generation_prompt", NULL, "only with continue_final_message true"},
	{"{\"messages\": [{\"role\": \"user\", \"content\": \"x\"}], "
	 "\"add_generation_prompt\": true, \"continue_final_message\": true}",
	 "continue_final_message", NULL, "cannot be true with add_generation_prompt true"},
	{"{\"messages\": [{\"role\": \"user\", \"content\": \"x\"}], \"modalities\": "
	 "[\"text\", \"audio\"]}",
	 "modalities", NULL, "text only"},
	{"{\"messages\": [{\"role\": \"user\", \"content\": \"x\"}], "
	 "\"frequency_penalty\": 3}",
	 "frequency_penalty", NULL, "[-2, 2]"},
	/* members typed as OpenAI's schema types them (vLLM refuses the others) */
	{"{\"messages\": [{\"role\": \"user\", \"content\": \"x\"}], \"tools\": "
	 "[{\"type\": "
	 "\"function\", \"function\": {\"name\": \"f\", \"parameters\": \"x\"}}]}",
	 "tools[0].function", NULL, "parameters: expected an object"},
	{"{\"messages\": [{\"role\": \"user\", \"content\": \"x\"}], \"tools\": "
	 "[{\"type\": "
	 "\"function\", \"function\": {\"name\": \"f\", \"strict\": \"yes\"}}]}",
	 "tools[0].function", NULL, "strict: expected a boolean"},
	{"{\"messages\": [{\"role\": \"user\", \"content\": \"x\", \"name\": 5}]}", "messages[0]",
	 NULL, "name: expected a string"},
	{"{\"messages\": [{\"role\": \"assistant\", \"content\": null, \"tool_calls\": "
	 "[{\"id\": 5, \"type\": \"function\", \"function\": {\"name\": \"f\", "
	 "\"arguments\": \"{}\"}}]}, {\"role\": \"user\", \"content\": \"x\"}]}",
	 "messages[0].tool_calls[0]", NULL, "id: expected a string"},
	{"{\"messages\": [{\"role\": \"assistant\", \"content\": null, \"tool_calls\": "
	 "[{\"id\": \"c\", \"type\": \"zzz\", \"function\": {\"name\": \"f\", "
	 "\"arguments\": \"{}\"}}]}, {\"role\": \"user\", \"content\": \"x\"}]}",
	 "messages[0].tool_calls[0]", NULL, "type: expected \"function\""},
	{"{\"messages\": [{\"role\": \"user\", \"content\": \"x\"}], \"logit_bias\": "
	 "[1, 5]}",
	 "logit_bias", NULL, "expected an object"},
	{"{\"messages\": [{\"role\": \"user\", \"content\": \"x\"}], \"logit_bias\": "
	 "{\"hello\": 5}}",
	 "logit_bias", NULL, "key 'hello' is not a token id"},
	{"{\"messages\": [{\"role\": \"user\", \"content\": \"x\"}], \"logit_bias\": "
	 "{\"-1\": 5}}",
	 "logit_bias", NULL, "key '-1' is not a token id"},
	{"{\"messages\": [{\"role\": \"user\", \"content\": \"x\"}], \"logit_bias\": "
	 "{\"4294967296\": 5}}",
	 "logit_bias", NULL, "is not a token id"},
	{"{\"messages\": [{\"role\": \"user\", \"content\": \"x\"}], \"logit_bias\": "
	 "{\"12x\": 5}}",
	 "logit_bias", NULL, "is not a token id"},
	{"{\"messages\": [{\"role\": \"user\", \"content\": \"x\"}], \"logit_bias\": "
	 "{\"12\": \"5\"}}",
	 "logit_bias", NULL, "the bias of 12: expected a number, got a string"},
	{"{\"messages\": [{\"role\": \"user\", \"content\": \"x\"}], \"logit_bias\": "
	 "{\"12\": 1, \"012\": 2}}",
	 "logit_bias", NULL, "token id 12 is given twice"},
	{"{\"messages\": [{\"role\": \"user\", \"content\": \"x\"}], \"tool_choice\": "
	 "\"required\"}",
	 "tool_choice", NULL, "\"required\" with no tools"},
	{"{\"messages\": [{\"role\": \"user\", \"content\": \"x\"}], \"tool_choice\": "
	 "\"always\"}",
	 "tool_choice", NULL, "expected \"auto\""},
	{"{\"messages\": [{\"role\": \"user\", \"content\": \"x\"}], \"tools\": "
	 "[{\"type\": "
	 "\"function\", \"function\": {\"name\": \"f\"}}], \"tool_choice\": {\"type\": "
	 "\"function\", \"function\": {\"name\": \"g\"}}}",
	 "tool_choice.function.name", NULL, "'g' is not among the tools"},
	{"{\"messages\": [{\"role\": \"user\", \"content\": \"x\"}], \"tools\": "
	 "[{\"type\": "
	 "\"function\"}]}",
	 "tools[0]", NULL, "function.name"},
	{"{\"messages\": [{\"role\": \"user\", \"content\": \"x\"}], \"stop\": [\"\"]}", "stop[0]",
	 NULL, "0 bytes"},
	{"{\"messages\": [{\"role\": \"user\", \"content\": \"x\"}], \"top_logprobs\": 2}",
	 "top_logprobs", NULL, "needs"},
	{"{\"messages\": [{\"role\": \"user\", \"content\": \"x\"}], \"logprobs\": true, "
	 "\"top_logprobs\": 21}",
	 "top_logprobs", NULL, "not in [0, 20]"},
	{"{\"messages\": [{\"role\": \"user\", \"content\": \"x\"}], \"stream\": 1}", "stream",
	 NULL, "expected a boolean"},
	{"{\"messages\": [{\"role\": \"user\", \"content\": \"x\"}], \"stream_options\": "
	 "{\"include_usage\": true}}",
	 "stream_options", NULL, "only with"},
	{"{\"messages\": [{\"role\": \"user\", \"content\": \"x\"}], \"guided_json\": "
	 "\"{\"}",
	 "guided_json", NULL, "not a JSON Schema's text"},
	{"{\"messages\": [{\"role\": \"user\", \"content\": \"x\"}], \"guided_json\": "
	 "{\"type\": \"string\", \"not\": {}}}",
	 "guided_json", NULL, "guided_json.not: this keyword is not supported"},
	{"{\"messages\": [{\"role\": \"user\", \"content\": \"x\"}], "
	 "\"structured_outputs\": {\"grammar\": \"root ::= x\"}}",
	 "structured_outputs", NULL, "'grammar' is not supported"},
	{"{\"messages\": [{\"role\": \"user\", \"content\": \"x\"}], \"guided_json\": "
	 "{}, \"response_format\": {\"type\": \"json_object\"}}",
	 "response_format", NULL, "give one of"},
	{"{\"messages\": [{\"role\": \"user\", \"content\": \"x\"}], \"response_format\": "
	 "{\"type\": \"grammar\"}}",
	 "response_format", NULL, "expected {\"type\": \"text\"}"},
	{"{\"messages\": [{\"role\": \"user\", \"content\": \"x\"}], \"response_format\": "
	 "{\"type\": \"json_schema\", \"json_schema\": {\"schema\": {}}}}",
	 "response_format.json_schema.name", NULL, "expected 1 to 64 letters"},
	{"{\"messages\": [{\"role\": \"user\", \"content\": \"x\"}], \"response_format\": "
	 "{\"type\": \"json_schema\", \"json_schema\": {\"name\": \"n\", \"schema\": "
	 "{\"type\": \"object\", \"properties\": {\"n\": {\"type\": \"string\", "
	 "\"pattern\": \"(a)\\\\1\"}}}}}}",
	 "response_format.json_schema.schema", NULL,
	 "response_format.json_schema.schema.properties.n.pattern: this escape (a "
	 "back-reference, "},
	{"{\"messages\": [{\"role\": \"user\", \"content\": \"x\"}, {\"role\": "
	 "\"assistant\", \"content\": \"{\"}], \"continue_final_message\": true, "
	 "\"add_generation_prompt\": false, \"response_format\": {\"type\": "
	 "\"json_object\"}}",
	 "response_format", NULL, "not a continued message"},
	{"{\"messages\": [{\"role\": \"user\", \"content\": \"x\"}], "
	 "\"chat_template_kwargs\": "
	 "{\"enable_thinking\": \"no\"}}",
	 "chat_template_kwargs.enable_thinking", NULL, "expected a boolean"},
	{"{\"messages\": [{\"role\": \"user\", \"content\": \"\\u0000\"}]}", "", NULL,
	 "\\u0000 character in a string is not supported"},
	{"{\"messages\": [{\"role\": \"user\", \"content\": \"x\"}], \"seed\": "
	 "99999999999999999999}",
	 "", NULL, "a number too large (integers up to 2^63 - 1"},
	{"{\"messages\": [{\"role\": \"user\", \"content\": \"\\ud800\"}]}", "", NULL,
	 "not valid JSON"},
};

static void test_parse_errors(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof parse_errors / sizeof parse_errors[0]; i++) {
		struct oai_error e;
		struct oai_request *r = parse(parse_errors[i].body, &e);
		if (r)
			fail_msg("case %zu accepted: %s", i, parse_errors[i].body);
		if (strcmp(e.param, parse_errors[i].param) ||
		    !strstr(err_msg(), parse_errors[i].says))
			fail_msg("case %zu: param \"%s\", message \"%s\"", i, e.param, err_msg());
		if (*parse_errors[i].param &&
		    strncmp(err_msg(), parse_errors[i].param, strlen(parse_errors[i].param)))
			fail_msg("case %zu: the message does not start with the field: %s", i,
				 err_msg());
	}
}

/* nesting: 64 levels pass, 65 are refused before parsing */
static void test_parse_depth(void **state)
{
	(void)state;
	char deep[400] = "{\"messages\": [{\"role\": \"user\", \"content\": \"x\"}], \"x\": ";
	size_t n = strlen(deep);
	for (int k = 0; k < 2; k++) {
		int levels = k ? 64 : 63; /* plus the outer object */
		char body[800];
		snprintf(body, sizeof body, "%s", deep);
		size_t m = n;
		for (int i = 0; i < levels; i++)
			body[m++] = '[';
		for (int i = 0; i < levels; i++)
			body[m++] = ']';
		body[m++] = '}';
		body[m] = 0;
		struct oai_error e;
		struct oai_request *r = parse(body, &e);
		if (k == 0)
			assert_non_null(r);
		else
			assert_non_null(strstr(err_msg(), "deeper than 64"));
		oai_request_free(r);
	}
}

/* A body of many small values, and members no field reads: refused before parsing
 * when their cost is beyond anything a request needs, accepted below. */
static void test_parse_bounds(void **state)
{
	(void)state;
	const char *head = "{\"messages\": [{\"role\": \"user\", \"content\": \"x\"}], ";
	size_t cap = 4u << 20, n;
	char *body = malloc(cap);
	assert_non_null(body);
	struct oai_error e;
	/* an unknown member of OAI_MAX_UNKNOWN_BYTES is ignored; one byte more is refused */
	for (int k = 0; k < 2; k++) {
		n = (size_t)snprintf(body, cap, "%s\"junk\": \"", head);
		size_t fill = OAI_MAX_UNKNOWN_BYTES - 3 + (size_t)k; /* the value with its quotes */
		memset(body + n, 'a', fill);
		n += fill;
		n += (size_t)snprintf(body + n, cap - n, "\"}");
		struct oai_request *r = oai_parse(body, n, &e);
		if (k == 0) {
			if (!r)
				fail_msg("%s", err_msg());
		} else {
			assert_null(r);
			assert_string_equal(e.param, "junk");
			assert_non_null(
				strstr(err_msg(), "junk: a member this server does not read"));
		}
		oai_request_free(r);
	}
	/* logit_bias: OAI_MAX_LOGIT_BIAS entries taken, one more refused */
	for (int k = 0; k < 2; k++) {
		n = (size_t)snprintf(body, cap, "%s\"logit_bias\": {", head);
		for (int i = 0; i < OAI_MAX_LOGIT_BIAS + k; i++)
			n += (size_t)snprintf(body + n, cap - n, "%s\"%d\": 1", i ? ", " : "", i);
		n += (size_t)snprintf(body + n, cap - n, "}}");
		struct oai_request *r = oai_parse(body, n, &e);
		if (k == 0 && !r)
			fail_msg("%s", err_msg());
		if (k == 1) {
			assert_null(r);
			assert_string_equal(e.param, "logit_bias");
		}
		oai_request_free(r);
	}
	/* a known member of that size is the field's to judge (stop strings here) */
	n = (size_t)snprintf(body, cap, "%s\"stop\": \"", head);
	memset(body + n, 'a', 70000);
	n += 70000;
	n += (size_t)snprintf(body + n, cap - n, "\"}");
	assert_null(oai_parse(body, n, &e));
	assert_string_equal(e.param, "stop");
	/* values: a body of a million empty arrays (3 MB) is refused unparsed */
	n = (size_t)snprintf(body, cap, "%s\"messages2\": [", head);
	for (int i = 0; i < 1000000; i++)
		n += (size_t)snprintf(body + n, cap - n, i ? ",[]" : "[]");
	n += (size_t)snprintf(body + n, cap - n, "]}");
	assert_null(oai_parse(body, n, &e));
	assert_non_null(strstr(err_msg(), "more than 131072 JSON values"));
	assert_string_equal(e.param, "");
	/* 2048 messages with a tool call each stay well inside the cap */
	n = (size_t)snprintf(body, cap, "{\"messages\": [");
	for (int i = 0; i < OAI_MAX_MESSAGES; i++)
		n += (size_t)snprintf(
			body + n, cap - n,
			"%s{\"role\": \"assistant\", \"content\": null, \"tool_calls\": [{\"id\": "
			"\"c%d\", \"type\": \"function\", \"function\": {\"name\": \"f\", "
			"\"arguments\": {\"a\": [1, 2, 3]}}}]}",
			i ? ", " : "", i);
	n += (size_t)snprintf(body + n, cap - n, "]}");
	struct oai_request *r = oai_parse(body, n, &e);
	if (!r)
		fail_msg("%s", err_msg());
	oai_request_free(r);
	free(body);
}

static void test_error_json(void **state)
{
	(void)state;
	char *s = oai_error_json("bad \xff role", "invalid_request_error", "messages[0]", NULL);
	json_t *v = json_loads(s, 0, NULL); /* valid JSON although the message was not UTF-8 */
	assert_non_null(v);
	json_t *e = json_object_get(v, "error");
	assert_string_equal(json_string_value(json_object_get(e, "message")), "bad \\xff role");
	assert_string_equal(json_string_value(json_object_get(e, "type")), "invalid_request_error");
	assert_string_equal(json_string_value(json_object_get(e, "param")), "messages[0]");
	assert_true(json_is_null(json_object_get(e, "code")));
	json_decref(v);
	free(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse_fields),
		cmocka_unit_test(test_call_arguments),
		cmocka_unit_test(test_parse_formats),
		cmocka_unit_test(test_parse_small),
		cmocka_unit_test(test_parse_renders_as_file),
		cmocka_unit_test(test_parse_errors),
		cmocka_unit_test(test_parse_depth),
		cmocka_unit_test(test_parse_bounds),
		cmocka_unit_test(test_error_json),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
