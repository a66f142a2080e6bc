/* openai.c — a chat-completions request body into a conversation and settings, a
 * text-completions body into prompts and settings, every field checked (openai.h). */
#include "src/serve/openai.h"

#include <jansson.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "src/base/err.h"
#include "src/base/jsonschema.h"
#include "src/base/jsonlimit.h"
#include "src/base/jsontype.h"
#include "src/chat/template.h"
#include "src/chat/tojson.h"

int oai_bad(struct oai_error *e, const char *param, const char *fmt, ...)
{
	char msg[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	snprintf(e->param, sizeof e->param, "%s", param);
	if (*param)
		return err_set("%s: %s", param, msg);
	return err_set("%s", msg);
}

/* The members of a request this server reads; any other is ignored, up to
 * OAI_MAX_UNKNOWN_BYTES. */
static const char *const known_members[] = {
	"model",
	"messages",
	"tools",
	"tool_choice",
	"temperature",
	"top_p",
	"top_k",
	"min_p",
	"presence_penalty",
	"frequency_penalty",
	"repetition_penalty",
	"repeat_last_n",
	"prompt_logprobs",
	"return_tokens_as_token_ids",
	"truncate_prompt_tokens",
	"seed",
	"logit_bias",
	"stop",
	"stop_token_ids",
	"ignore_eos",
	"min_tokens",
	"n",
	"max_tokens",
	"max_completion_tokens",
	"stream",
	"stream_options",
	"logprobs",
	"top_logprobs",
	"response_format",
	"guided_json",
	"guided_choice",
	"guided_regex",
	"structured_outputs",
	"chat_template_kwargs",
	"prompt",
	"input",
	"echo",
	"suffix",
	"best_of",
	"add_generation_prompt", /* /tokenize and /detokenize (tokenize.c) */
	"add_special_tokens",
	"continue_final_message",
	"return_token_strs",
	"tokens",
};

static int member_size(void *user, const char *key, size_t key_len, size_t bytes)
{
	struct oai_error *e = user;
	if (bytes <= OAI_MAX_UNKNOWN_BYTES)
		return 0;
	for (size_t i = 0; i < sizeof known_members / sizeof known_members[0]; i++)
		if (strlen(known_members[i]) == key_len && !memcmp(known_members[i], key, key_len))
			return 0;
	char name[64]; /* as written, escapes and all; the error object makes it UTF-8 */
	snprintf(name, sizeof name, "%.*s", (int)(key_len < 48 ? key_len : 48), key);
	return oai_bad(e, name,
		       "a member this server does not read, of %zu bytes (ignored up to %d)", bytes,
		       OAI_MAX_UNKNOWN_BYTES);
}

/* What the parse will cost, before it allocates anything: nesting (each level costs
 * jansson's parser stack), values (each an allocation) and members nobody reads. */
static int check_shape(const char *s, size_t n, struct oai_error *e)
{
	struct jlim l = {.max_depth = OAI_MAX_DEPTH,
			 .max_values = OAI_MAX_VALUES,
			 .member = member_size,
			 .user = e};
	return jlim_check(s, n, &l, NULL); /* param "" but for a member: the whole body */
}

/* Member `key` of o as a number in [lo, hi]. 1 when present, 0 when absent or null
 * (*out unchanged), -1 on a wrong type or value. */
static int get_number(json_t *o, const char *key, double lo, double hi, double *out,
		      struct oai_error *e)
{
	json_t *v = json_object_get(o, key);
	if (!v || json_is_null(v))
		return 0;
	if (!json_is_number(v))
		return oai_bad(e, key, "expected a number, got %s", jsontype_name(v));
	double x = json_number_value(v);
	if (!(x >= lo && x <= hi))
		return oai_bad(e, key, "%g is not in [%g, %g]", x, lo, hi);
	*out = x;
	return 1;
}

int oai_get_int(json_t *o, const char *key, long long lo, long long hi, long long *out,
		struct oai_error *e)
{
	json_t *v = json_object_get(o, key);
	if (!v || json_is_null(v))
		return 0;
	/* a whole number written as a real (1.0) is one, as vLLM's pydantic takes it */
	double r = json_is_real(v) ? json_real_value(v) : 0.5;
	bool whole = r == floor(r) && fabs(r) <= 9007199254740992.0;
	if (!json_is_integer(v) && !whole)
		return oai_bad(e, key, "expected an integer, got %s", jsontype_name(v));
	json_int_t x = json_is_integer(v) ? json_integer_value(v) : (json_int_t)r;
	if (x < lo || x > hi)
		return oai_bad(e, key, "%lld is not in [%lld, %lld]", (long long)x, (long long)lo,
			       (long long)hi);
	*out = x;
	return 1;
}

int oai_get_bool(json_t *o, const char *key, const char *param, bool *out, struct oai_error *e)
{
	json_t *v = json_object_get(o, key);
	if (!v || json_is_null(v))
		return 0;
	if (!json_is_boolean(v))
		return oai_bad(e, param, "expected a boolean, got %s", jsontype_name(v));
	*out = json_is_true(v);
	return 1;
}

/* Content: a string, or an array of text parts joined by newlines. */
static int get_content(json_t *c, const char *at, struct strbuf *out, struct oai_error *e)
{
	char p[160];
	if (json_is_string(c)) {
		sb_put(out, json_string_value(c), json_string_length(c));
		return 0;
	}
	if (!json_is_array(c))
		return oai_bad(e, at, "expected a string or an array of text parts, got %s",
			       jsontype_name(c));
	for (size_t k = 0; k < json_array_size(c); k++) {
		json_t *part = json_array_get(c, k), *type = json_object_get(part, "type");
		json_t *text = json_object_get(part, "text");
		snprintf(p, sizeof p, "%s[%zu]", at, k);
		if (!json_is_object(part))
			return oai_bad(e, p, "expected an object, got %s", jsontype_name(part));
		if (!json_is_string(type) || strcmp(json_string_value(type), "text") != 0)
			return oai_bad(e, p, "only text parts are supported (type \"%.40s\")",
				       json_is_string(type) ? json_string_value(type) : "?");
		if (!json_is_string(text))
			return oai_bad(e, p, "text: expected a string");
		if (k)
			sb_put(out, "\n", 1);
		sb_put(out, json_string_value(text), json_string_length(text));
	}
	return 0;
}

/* The tool_calls of assistant message i, added to the conversation's last turn. */
/* jsontype_check, as a problem with the request at `at`. */
static int member_types(json_t *o, const char *at, const char *const *keys, int n,
			struct oai_error *e)
{
	const char *want;
	int k = jsontype_check(o, keys, n, &want);
	return k < 0 ? 0
		     : oai_bad(e, at, "%.*s: expected %s", (int)strlen(keys[k]) - 2, keys[k], want);
}

/* Python's truth value of a JSON value (missing is false). */
static bool falsy(const json_t *v)
{
	return !v || json_is_null(v) || json_is_false(v) ||
	       (json_is_string(v) && json_string_length(v) == 0) ||
	       (json_is_array(v) && json_array_size(v) == 0) ||
	       (json_is_object(v) && json_object_size(v) == 0) ||
	       (json_is_number(v) && json_number_value(v) == 0);
}

/* The text a tool call's arguments render as, read as vLLM reads them: a false value
 * (missing, null, "", [], 0) is {}; an object or array is written with tojson; a
 * string is the JSON text OpenAI sends, parsed, and its value written with tojson, or
 * as it is when that value is itself a string (the template's "is string" branch) or
 * the text is not JSON. */
static int call_arguments(json_t *args, const char *at, char **text, bool *verbatim,
			  struct oai_error *e)
{
	if (falsy(args)) {
		*text = strdup("{}");
		return *text ? 0 : oai_bad(e, at, "out of memory");
	}
	if (!json_is_string(args) && !json_is_object(args) && !json_is_array(args))
		return oai_bad(e, at, "arguments: expected a string or an object, got %s",
			       jsontype_name(args));
	/* The text is a value of the body, but the body's limits did not see inside it:
	 * the same limits. */
	struct jlim l = {.max_depth = OAI_MAX_DEPTH, .max_values = OAI_MAX_VALUES};
	if (json_is_string(args) &&
	    jlim_check(json_string_value(args), json_string_length(args), &l, "arguments"))
		return oai_bad(e, at, "%s", err_msg());
	json_t *v = json_is_string(args)
			    ? json_loadb(json_string_value(args), json_string_length(args),
					 JSON_DECODE_ANY, NULL)
			    : json_incref(args);
	if (!v || json_is_string(v)) {
		*verbatim = true;
		*text = strdup(v ? json_string_value(v) : json_string_value(args));
	} else {
		*text = tojson(v, NULL);
	}
	json_decref(v);
	return *text ? 0 : oai_bad(e, at, "out of memory");
}

static int get_tool_calls(struct chat *c, json_t *calls, size_t i, struct oai_error *e)
{
	char at[96];
	snprintf(at, sizeof at, "messages[%zu].tool_calls", i);
	if (!json_is_array(calls))
		return oai_bad(e, at, "expected an array, got %s", jsontype_name(calls));
	if (json_array_size(calls) > OAI_MAX_TOOLS)
		return oai_bad(e, at, "%zu calls (at most %d)", json_array_size(calls),
			       OAI_MAX_TOOLS);
	for (size_t k = 0; k < json_array_size(calls); k++) {
		json_t *f = json_object_get(json_array_get(calls, k), "function");
		json_t *name = json_object_get(f, "name"), *args = json_object_get(f, "arguments");
		json_t *call = json_array_get(calls, k), *type = json_object_get(call, "type");
		static const char *const call_keys[] = {"id:s", "type:s"};
		snprintf(at, sizeof at, "messages[%zu].tool_calls[%zu]", i, k);
		if (member_types(call, at, call_keys, 2, e))
			return -1;
		if (json_is_string(type) && strcmp(json_string_value(type), "function"))
			return oai_bad(e, at, "type: expected \"function\"");
		snprintf(at, sizeof at, "messages[%zu].tool_calls[%zu].function", i, k);
		if (!json_is_object(f))
			return oai_bad(e, at, "expected an object");
		if (!json_is_string(name))
			return oai_bad(e, at, "name: expected a string");
		char *text = NULL;
		bool verbatim = false;
		if (call_arguments(args, at, &text, &verbatim, e))
			return -1;
		int rc = chat_add_tool_call(c, c->n - 1, json_string_value(name), text, verbatim);
		free(text);
		if (rc)
			return -1;
	}
	return 0;
}

static int parse_role(json_t *m, size_t i, struct oai_error *e)
{
	static const struct {
		const char *name;
		enum chat_role role;
	} roles[] = {{"system", CHAT_SYSTEM},
		     {"developer", CHAT_SYSTEM},
		     {"user", CHAT_USER},
		     {"assistant", CHAT_ASSISTANT},
		     {"tool", CHAT_TOOL}};
	char at[64];
	static const char *const msg_keys[] = {"name:s", "tool_call_id:s"};
	snprintf(at, sizeof at, "messages[%zu]", i);
	if (member_types(m, at, msg_keys, 2, e))
		return -1;
	snprintf(at, sizeof at, "messages[%zu].role", i);
	json_t *role = json_object_get(m, "role");
	if (!json_is_string(role))
		return oai_bad(e, at, "expected a string, got %s",
			       role ? jsontype_name(role) : "nothing");
	for (size_t k = 0; k < sizeof roles / sizeof roles[0]; k++)
		if (strcmp(json_string_value(role), roles[k].name) == 0)
			return (int)roles[k].role;
	return oai_bad(
		e, at,
		"unknown role \"%.40s\" (expected system, developer, user, assistant or tool)",
		json_string_value(role));
}

static int parse_message(struct chat *c, json_t *m, size_t i, struct oai_error *e)
{
	char at[64];
	snprintf(at, sizeof at, "messages[%zu]", i);
	if (!json_is_object(m))
		return oai_bad(e, at, "expected an object, got %s", jsontype_name(m));
	int role = parse_role(m, i, e);
	if (role < 0)
		return -1;
	json_t *content = json_object_get(m, "content");
	json_t *calls = role == CHAT_ASSISTANT ? json_object_get(m, "tool_calls") : NULL;
	/* newer vLLM names it "reasoning"; either is read, reasoning_content first */
	const char *rkey =
		json_object_get(m, "reasoning_content") ? "reasoning_content" : "reasoning";
	json_t *rc = role == CHAT_ASSISTANT ? json_object_get(m, rkey) : NULL;
	snprintf(at, sizeof at, "messages[%zu].content", i);
	struct strbuf text = {0};
	/* only an assistant turn may leave its content out (it then calls tools) */
	if ((!content || json_is_null(content)) && role != CHAT_ASSISTANT)
		return oai_bad(e, at, "missing (a %s message needs content)",
			       chat_role_name((enum chat_role)role));
	if (content && !json_is_null(content) && get_content(content, at, &text, e)) {
		free(text.p);
		return -1;
	}
	snprintf(at, sizeof at, "messages[%zu].%s", i, rkey);
	int r = -1;
	if (rc && !json_is_null(rc) && !json_is_string(rc))
		oai_bad(e, at, "expected a string, got %s", jsontype_name(rc));
	else if (text.oom)
		err_set("out of memory");
	else if (chat_add(c, (enum chat_role)role, text.p ? text.p : "",
			  json_is_string(rc) ? json_string_value(rc) : NULL) == 0)
		r = calls && !json_is_null(calls) ? get_tool_calls(c, calls, i, e) : 0;
	free(text.p);
	return r;
}

/* tools and tool_choice ("none": the tools are listed, no call is parsed). */
static int parse_tools(struct oai_request *r, json_t *root, struct oai_error *e)
{
	json_t *tools = json_object_get(root, "tools"),
	       *choice = json_object_get(root, "tool_choice");
	const char *s = json_string_value(choice);
	bool none = s && !strcmp(s, "none");
	bool forced = choice && !json_is_null(choice) && !none && !(s && !strcmp(s, "auto"));
	if (!tools || json_is_null(tools))
		return forced ? oai_force_tool(r, tools, choice, e) : 0;
	if (!json_is_array(tools))
		return oai_bad(e, "tools", "expected an array, got %s", jsontype_name(tools));
	if (json_array_size(tools) > OAI_MAX_TOOLS)
		return oai_bad(e, "tools", "%zu tools (at most %d)", json_array_size(tools),
			       OAI_MAX_TOOLS);
	for (size_t i = 0; i < json_array_size(tools); i++) {
		json_t *t = json_array_get(tools, i), *type = json_object_get(t, "type");
		json_t *name = json_object_get(json_object_get(t, "function"), "name");
		char at[48];
		snprintf(at, sizeof at, "tools[%zu]", i);
		if (!json_is_object(t))
			return oai_bad(e, at, "expected an object, got %s", jsontype_name(t));
		if (!json_is_string(type) || strcmp(json_string_value(type), "function"))
			return oai_bad(e, at, "type: expected \"function\"");
		if (!json_is_string(name))
			return oai_bad(e, at, "function.name: expected a string");
		static const char *const fn_keys[] = {"description:s", "parameters:o", "strict:b"};
		snprintf(at, sizeof at, "tools[%zu].function", i);
		if (member_types(json_object_get(t, "function"), at, fn_keys, 3, e))
			return -1;
		/* shown to the model whatever tool_choice says, as vLLM shows them unless
		 * started with --exclude-tools-when-tool-choice-none */
		json_t *shown = oai_tool_as_vllm(t);
		char *text = shown ? tojson(shown, NULL) : NULL;
		json_decref(shown);
		int rc = text ? chat_add_tool(r->chat, text) : -1;
		free(text);
		if (rc)
			return -1;
	}
	r->parse_tools = !none && !forced && json_array_size(tools) > 0;
	if (forced)
		return oai_force_tool(r, tools, choice, e);
	return 0;
}

/* temperature, top_p, top_k, min_p, penalties, seed; refuses what is not implemented. */
static int parse_sampling(struct oai_request *r, json_t *root, struct oai_error *e)
{
	struct samp_params *p = &r->samp;
	json_int_t k = 0, seed = 0;
	int got;
	static const struct {
		const char *key;
		double lo, hi;
		size_t off;
		unsigned bit;
	} nums[] = {
		{"temperature", 0, 2, offsetof(struct samp_params, temperature), SAMP_SET_TEMP},
		{"top_p", 0, 1, offsetof(struct samp_params, top_p), SAMP_SET_TOP_P},
		{"min_p", 0, 1, offsetof(struct samp_params, min_p), SAMP_SET_MIN_P},
		{"presence_penalty", -2, 2, offsetof(struct samp_params, presence_penalty),
		 SAMP_SET_PRESENCE},
		{"frequency_penalty", -2, 2, offsetof(struct samp_params, frequency_penalty),
		 SAMP_SET_FREQUENCY},
		{"repetition_penalty", 0.01, 10, offsetof(struct samp_params, repetition_penalty),
		 SAMP_SET_REPEAT},
	};
	for (size_t i = 0; i < sizeof nums / sizeof nums[0]; i++) {
		double *field = (double *)((char *)p + nums[i].off);
		if ((got = get_number(root, nums[i].key, nums[i].lo, nums[i].hi, field, e)) < 0)
			return -1;
		if (got)
			r->samp_set |= nums[i].bit;
	}
	/* top_k: vLLM's -1 (and 0) mean no limit */
	if ((got = oai_get_int(root, "top_k", -1, SAMP_MAX_TOP_K, &k, e)) < 0)
		return -1;
	if (got) {
		p->top_k = k < 0 ? 0 : (int)k;
		r->samp_set |= SAMP_SET_TOP_K;
	}
	if ((got = oai_get_int(root, "seed", INT64_MIN, INT64_MAX, &seed, e)) < 0)
		return -1;
	if (got) {
		p->seed = (uint64_t)seed;
		r->samp_set |= SAMP_SET_SEED;
	}
	return 0;
}

/* n: one choice per request (per prompt for a text completion). */
static int parse_n(struct oai_request *r, json_t *root, struct oai_error *e)
{
	json_int_t n = 1;
	if (oai_get_int(root, "n", 1, OAI_MAX_CHOICES, &n, e) < 0)
		return -1;
	r->n_choices = (int)n;
	return 0;
}

/* stream, stream_options, read as vLLM reads them: a stream_options object asks for
 * the usage unless its include_usage is false or null; an empty one passes without
 * stream (Python's {} is false); continuous_usage_stats puts the usage so far in
 * every chunk. */
static int parse_stream(struct oai_request *r, json_t *root, struct oai_error *e)
{
	json_t *so = json_object_get(root, "stream_options");
	bool cont = false;
	if (oai_get_bool(root, "stream", "stream", &r->stream, e) < 0 ||
	    (so && !json_is_null(so) && !json_is_object(so) &&
	     oai_bad(e, "stream_options", "expected an object, got %s", jsontype_name(so))))
		return -1;
	if (!json_is_object(so) || (!r->stream && !json_object_size(so)))
		return 0;
	if (!r->stream) /* as OpenAI and vLLM refuse it */
		return oai_bad(e, "stream_options", "only with \"stream\": true");
	r->include_usage = true;
	if (json_is_null(json_object_get(so, "include_usage")))
		r->include_usage = false;
	if (oai_get_bool(so, "include_usage", "stream_options.include_usage", &r->include_usage,
			 e) < 0 ||
	    oai_get_bool(so, "continuous_usage_stats", "stream_options.continuous_usage_stats",
			 &cont, e) < 0)
		return -1;
	r->continuous_usage = r->include_usage && cont;
	return 0;
}

/* chat_template_kwargs: enable_thinking is the one the templates read. */
static int parse_kwargs(struct oai_request *r, json_t *root, struct oai_error *e)
{
	json_t *kw = json_object_get(root, "chat_template_kwargs");
	bool think = true;
	if (kw && !json_is_null(kw) && !json_is_object(kw))
		return oai_bad(e, "chat_template_kwargs", "expected an object, got %s",
			       jsontype_name(kw));
	int got = oai_get_bool(kw, "enable_thinking", "chat_template_kwargs.enable_thinking",
			       &think, e);
	if (got < 0)
		return -1;
	r->enable_thinking = !got ? TMPL_THINK_ABSENT : think ? TMPL_THINK_ON : TMPL_THINK_OFF;
	return 0;
}

/* n, max_tokens, stream, logprobs, response_format, chat_template_kwargs. */
static int parse_output(struct oai_request *r, json_t *root, struct oai_error *e)
{
	json_int_t mt = 0, top = 0;
	if (parse_n(r, root, e))
		return -1;
	int old = oai_get_int(root, "max_tokens", 1, OAI_MAX_TOKENS, &mt, e), now;
	if (old < 0 ||
	    (now = oai_get_int(root, "max_completion_tokens", 1, OAI_MAX_TOKENS, &mt, e)) < 0)
		return -1;
	r->max_tokens = (int)mt;
	r->max_tokens_key = now ? "max_completion_tokens" : "max_tokens";
	if (parse_stream(r, root, e) ||
	    oai_get_bool(root, "logprobs", "logprobs", &r->logprobs, e) < 0)
		return -1;
	int got = oai_get_int(root, "top_logprobs", 0, OAI_MAX_TOP_LOGPROBS, &top, e);
	if (got < 0)
		return -1;
	if (top > 0 && !r->logprobs) /* 0 is the default, given or not (vLLM) */
		return oai_bad(e, "top_logprobs", "needs \"logprobs\": true");
	r->top_logprobs = (int)top;
	return oai_parse_format(r, root, e) || parse_kwargs(r, root, e);
}

static int parse_messages(struct oai_request *r, json_t *root, struct oai_error *e)
{
	json_t *msgs = json_object_get(root, "messages");
	if (!json_is_array(msgs))
		return oai_bad(e, "messages", "expected an array of messages, got %s",
			       msgs ? jsontype_name(msgs) : "nothing");
	size_t n = json_array_size(msgs);
	if (n == 0 || n > OAI_MAX_MESSAGES)
		return oai_bad(e, "messages", "%zu messages (1 to %d)", n, OAI_MAX_MESSAGES);
	for (size_t i = 0; i < n; i++)
		if (parse_message(r->chat, json_array_get(msgs, i), i, e))
			return -1;
	return 0;
}

/* Members of OpenAI's API or vLLM's extensions that this server does not implement,
 * with the values that ask for nothing (their defaults): those pass, as clients send
 * them unasked; any other is refused rather than ignored, since the answer would not
 * be the one asked for. */
static const struct {
	const char *name, *say;
	double idle; /* the number that asks for nothing */
} unsupported[] = {
	{"best_of", "one candidate per request", 1},
	{"use_beam_search", "sampling only", 0},
	{"echo", "the prompt is not echoed", 0},
	{"continue_final_message", "a last assistant message is not continued", 0},
	{"guided_grammar", "guided_json, guided_choice or guided_regex only", 0},
	{"functions", "use tools", 0},
	{"function_call", "use tool_choice", 0},
	{"audio", "text only", 0},
	{"prediction", "no predicted outputs", 0},
	{"bad_words", "no words are banned", 0},
	{"logits_processors", "no logits processors", 0},
	{"length_penalty", "sampling only", 1},
};

/* Whether v asks for something: not null, false, the idle number, "", [] or {}, nor
 * function_call's "none" or "auto" (with no functions, both ask for nothing). */
static bool asks(const char *name, json_t *v, double idle)
{
	if (!strcmp(name, "function_call") && json_is_string(v) &&
	    (!strcmp(json_string_value(v), "none") || !strcmp(json_string_value(v), "auto")))
		return false;
	switch (json_typeof(v)) {
	case JSON_NULL:
	case JSON_FALSE: return false;
	case JSON_INTEGER:
	case JSON_REAL: return json_number_value(v) != idle;
	case JSON_STRING: return json_string_length(v) > 0;
	case JSON_ARRAY: return json_array_size(v) > 0;
	case JSON_OBJECT: return json_object_size(v) > 0;
	default: return true;
	}
}

static int refuse_unsupported(json_t *root, bool text, struct oai_error *e)
{
	for (size_t i = 0; i < sizeof unsupported / sizeof unsupported[0]; i++) {
		json_t *v = json_object_get(root, unsupported[i].name);
		if (text && !strcmp(unsupported[i].name, "echo"))
			continue; /* a text completion echoes its prompt */
		if (!text && !strcmp(unsupported[i].name, "continue_final_message"))
			continue; /* a chat's (oai_parse_continue) */
		if (v && asks(unsupported[i].name, v, unsupported[i].idle))
			return oai_bad(e, unsupported[i].name, "not supported (%s)",
				       unsupported[i].say);
	}
	if (json_is_false(json_object_get(root, "skip_special_tokens")))
		return oai_bad(e, "skip_special_tokens",
			       "not supported (special tokens are left out of the text)");
	if (text && json_is_false(json_object_get(root, "add_generation_prompt")))
		return oai_bad(e, "add_generation_prompt", "not supported (a chat's member)");
	json_t *mod = json_object_get(root, "modalities");
	for (size_t i = 0; i < json_array_size(mod); i++) {
		json_t *m = json_array_get(mod, i);
		if (!json_is_string(m) || strcmp(json_string_value(m), "text"))
			return oai_bad(e, "modalities", "not supported (text only)");
	}
	return 0;
}

json_t *oai_load_body(const char *body, size_t len, struct oai_error *e)
{
	memset(e, 0, sizeof *e);
	if (check_shape(body, len, e))
		return NULL;
	json_error_t je;
	json_t *root = json_loadb(body, len, 0, &je);
	if (!root) {
		oai_bad(e, "", "the body is not valid JSON (line %d, column %d: %s)", je.line,
			je.column, jsontype_error(&je));
		return NULL;
	}
	json_t *model = json_object_get(root, "model");
	if (!json_is_object(root))
		oai_bad(e, "", "the body is %s, not an object", jsontype_name(root));
	else if (model && !json_is_null(model) && !json_is_string(model))
		oai_bad(e, "model", "expected a string, got %s", jsontype_name(model));
	else
		return root;
	json_decref(root);
	return NULL;
}

/* One prompt of token ids (v an array of integers) into p; at names it for errors. */
static int get_ids(json_t *v, const char *at, struct oai_prompt *p, struct oai_error *e)
{
	size_t n = json_array_size(v);
	if (n == 0)
		return oai_bad(e, at, "empty (a prompt needs at least one token)");
	if (!(p->ids = malloc(n * sizeof *p->ids)))
		return err_set("out of memory");
	for (size_t k = 0; k < n; k++) {
		json_t *id = json_array_get(v, k);
		char where[64];
		snprintf(where, sizeof where, "%s[%zu]", at, k);
		/* a whole number written as a real (7.0) is one, as get_integer takes it */
		double r = json_is_real(id) ? json_real_value(id) : 0.5;
		if (!json_is_integer(id) && r != floor(r))
			return oai_bad(e, where, "expected a token id, got %s", jsontype_name(id));
		double x = json_is_integer(id) ? (double)json_integer_value(id) : r;
		if (!(x >= 0 && x <= INT32_MAX))
			return oai_bad(e, where, "%.0f is not a token id", x);
		p->ids[p->n_ids++] = (int32_t)x;
	}
	return 0;
}

int oai_parse_prompts(struct oai_request *r, json_t *root, const char *key, bool empty_ok,
		      struct oai_error *e)
{
	static const char forms[] = "expected a string, an array of strings, an array of token "
				    "ids or an array of arrays of token ids";
	json_t *p = json_object_get(root, key);
	if (!json_is_string(p) && !json_is_array(p))
		return oai_bad(e, key, "%s, got %s", forms, p ? jsontype_name(p) : "nothing");
	/* a string, or one prompt of ids, stands alone; any other array is the prompts */
	json_t *first = json_array_get(p, 0);
	bool one = json_is_string(p) || json_is_number(first);
	size_t n = one ? 1 : json_array_size(p);
	if (n == 0 || n > OAI_MAX_PROMPTS)
		return oai_bad(e, key, "%zu prompts (1 to %d)", n, OAI_MAX_PROMPTS);
	if (!(r->prompts = calloc(n, sizeof *r->prompts)))
		return err_set("out of memory");
	for (size_t i = 0; i < n; i++) {
		json_t *v = one ? p : json_array_get(p, i);
		r->n_prompts = i + 1; /* freed with the request, whole or not */
		struct oai_prompt *q = &r->prompts[i];
		const char *at = q->name;
		if (one)
			snprintf(q->name, sizeof q->name, "%s", key);
		else
			snprintf(q->name, sizeof q->name, "%.6s[%zu]", key, i);
		if ((!json_is_string(v) && !json_is_array(v)) ||
		    (!one && json_typeof(v) != json_typeof(first)))
			return oai_bad(e, at, "%s, got %s", forms, jsontype_name(v));
		if (json_is_array(v)) {
			if (get_ids(v, at, q, e))
				return -1;
			continue;
		}
		if (json_string_length(v) == 0 && !empty_ok)
			return oai_bad(e, at, "empty (a prompt needs at least one token)");
		q->len = json_string_length(v);
		if (!(q->text = malloc(q->len + 1)))
			return err_set("out of memory");
		memcpy(q->text, json_string_value(v), q->len + 1);
	}
	return 0;
}

/* n, max_tokens (0 allowed, 16 when absent), stream, logprobs (a number), echo,
 * suffix. */
static int parse_text_output(struct oai_request *r, json_t *root, struct oai_error *e)
{
	json_int_t mt = OAI_DEFAULT_TEXT_TOKENS, top = 0;
	int got = oai_get_int(root, "max_tokens", 0, OAI_MAX_TOKENS, &mt, e);
	if (parse_n(r, root, e) || got < 0 || parse_stream(r, root, e))
		return -1;
	if (r->n_prompts * (size_t)r->n_choices > OAI_MAX_PROMPTS)
		return oai_bad(e, "n", "%zu prompts of %d choices each: more than %d choices",
			       r->n_prompts, r->n_choices, OAI_MAX_PROMPTS);
	r->max_tokens = (int)mt;
	r->max_tokens_default = !got;
	r->max_tokens_key = "max_tokens";
	/* legacy logprobs is a count; true is taken as 1, as vLLM's pydantic takes it,
	 * false as none */
	json_t *lp = json_object_get(root, "logprobs");
	if (json_is_boolean(lp))
		got = json_is_true(lp);
	else if ((got = oai_get_int(root, "logprobs", 0, OAI_MAX_TOP_LOGPROBS, &top, e)) < 0)
		return -1;
	r->logprobs = got;
	top = json_is_boolean(lp) ? got : top;
	r->top_logprobs = (int)top;
	if (oai_get_bool(root, "echo", "echo", &r->echo, e) < 0 || oai_parse_format(r, root, e))
		return -1;
	json_t *suffix = json_object_get(root, "suffix");
	if (suffix && !json_is_null(suffix) &&
	    !(json_is_string(suffix) && !json_string_length(suffix)))
		return oai_bad(e, "suffix",
			       "not supported (Qwen3 has no fill-in-the-middle prompt)");
	return 0;
}

/* A request for either API: its fields checked as its kind reads them. */
static struct oai_request *parse(const char *body, size_t len, enum oai_kind kind,
				 struct oai_error *e)
{
	json_t *root = oai_load_body(body, len, e);
	if (!root)
		return NULL;
	struct oai_request *r = calloc(1, sizeof *r);
	if (!r || (kind != OAI_TEXT && !(r->chat = chat_new()))) {
		err_set("out of memory");
		goto fail;
	}
	r->kind = kind;
	r->enable_thinking = TMPL_THINK_ABSENT;
	if (kind == OAI_TOKENIZE) { /* a conversation alone: nothing is generated */
		if (parse_messages(r, root, e) || parse_tools(r, root, e) ||
		    parse_kwargs(r, root, e))
			goto fail;
		json_decref(root);
		return r;
	}
	if (refuse_unsupported(root, kind == OAI_TEXT, e) ||
	    (kind == OAI_CHAT ? parse_messages(r, root, e) || parse_tools(r, root, e) ||
					oai_parse_continue(r, root, false, e)
			      : oai_parse_prompts(r, root, "prompt", false, e)) ||
	    parse_sampling(r, root, e) ||
	    (kind == OAI_CHAT ? parse_output(r, root, e) : parse_text_output(r, root, e)) ||
	    oai_parse_ends(r, root, e))
		goto fail;
	json_decref(root);
	return r;
fail:
	json_decref(root);
	oai_request_free(r);
	return NULL;
}

struct oai_request *oai_parse(const char *body, size_t len, struct oai_error *e)
{
	return parse(body, len, OAI_CHAT, e);
}

struct oai_request *oai_parse_conversation(const char *body, size_t len, struct oai_error *e)
{
	return parse(body, len, OAI_TOKENIZE, e);
}

struct oai_request *oai_parse_text(const char *body, size_t len, struct oai_error *e)
{
	return parse(body, len, OAI_TEXT, e);
}

void oai_request_free(struct oai_request *r)
{
	if (!r)
		return;
	chat_free(r->chat);
	js_free(r->format);
	free(r->forced_tool);
	for (size_t i = 0; i < r->n_prompts; i++) {
		free(r->prompts[i].text);
		free(r->prompts[i].ids);
	}
	free(r->prompts);
	for (size_t i = 0; i < r->n_stop; i++)
		free(r->stop[i]);
	free(r->stop);
	free(r->stop_ids);
	free(r->allowed_ids);
	free(r->bias_ids);
	free(r->bias);
	free(r);
}
