/* ends.c — where a chat answer begins and how an answer may end (openai.h):
 * continue_final_message; stop strings, and vLLM's stop_token_ids,
 * include_stop_str_in_output, ignore_eos and min_tokens; and the request's other rules
 * for the draw, logit_bias, vLLM's allowed_token_ids, response_format and its guided_*
 * and structured_outputs forms, llama-server's repeat_last_n; and vLLM's
 * prompt_logprobs, truncate_prompt_tokens and return_tokens_as_token_ids. */
#include "src/serve/openai.h"

#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "src/base/err.h"
#include "src/base/jsonschema.h"
#include "src/base/jsontype.h"

/* The members of from not named in skip (NULL-ended) into to, in their order. */
static int copy_others(json_t *to, json_t *from, const char *const *skip)
{
	const char *key;
	json_t *v;
	json_object_foreach(from, key, v)
	{
		bool skipped = false;
		for (const char *const *s = skip; *s; s++)
			skipped |= !strcmp(key, *s);
		if (!skipped && json_object_set(to, key, v))
			return -1;
	}
	return 0;
}

json_t *oai_tool_as_vllm(json_t *t)
{
	static const char *const tool_keys[] = {"type", "function", NULL};
	static const char *const fn_keys[] = {"name", "description", "parameters", NULL};
	json_t *f = json_object_get(t, "function"), *fn = json_object(), *tool = json_object();
	bool ok = fn && tool && !json_object_set_new(tool, "type", json_string("function")) &&
		  !json_object_set(tool, "function", fn);
	for (int i = 0; ok && fn_keys[i]; i++) {
		json_t *v = json_object_get(f, fn_keys[i]);
		ok = !json_object_set_new(fn, fn_keys[i], v ? json_incref(v) : json_null());
	}
	ok = ok && !copy_others(fn, f, fn_keys) && !copy_others(tool, t, tool_keys);
	json_decref(fn);
	if (!ok) {
		json_decref(tool);
		err_set("out of memory");
		return NULL;
	}
	return tool;
}

/* stop: a string or an array of strings. */
static int parse_stop(struct oai_request *r, json_t *root, struct oai_error *e)
{
	json_t *stop = json_object_get(root, "stop");
	if (!stop || json_is_null(stop))
		return 0;
	size_t n = json_is_array(stop) ? json_array_size(stop) : 1;
	if (!json_is_array(stop) && !json_is_string(stop))
		return oai_bad(e, "stop", "expected a string or an array of strings, got %s",
			       jsontype_name(stop));
	if (n > OAI_MAX_STOP)
		return oai_bad(e, "stop", "%zu strings (at most %d)", n, OAI_MAX_STOP);
	if (!(r->stop = calloc(n ? n : 1, sizeof *r->stop)))
		return err_set("out of memory");
	for (size_t i = 0; i < n; i++) {
		json_t *s = json_is_array(stop) ? json_array_get(stop, i) : stop;
		char at[32];
		snprintf(at, sizeof at, json_is_array(stop) ? "stop[%zu]" : "stop", i);
		if (!json_is_string(s))
			return oai_bad(e, at, "expected a string, got %s", jsontype_name(s));
		if (json_string_length(s) == 0 || json_string_length(s) > OAI_MAX_STOP_BYTES)
			return oai_bad(e, at, "%zu bytes (1 to %d)", json_string_length(s),
				       OAI_MAX_STOP_BYTES);
		if (!(r->stop[r->n_stop++] = strdup(json_string_value(s))))
			return err_set("out of memory");
	}
	return 0;
}

/* An array of token ids, member key of root, at most max (stop_token_ids: each one
 * stops the answer as the end of turn does; allowed_token_ids: the only ids drawn,
 * not none). Whether an id is in the vocabulary is the model's to say
 * (gen_check_ids). 0 when absent or null. */
static int parse_ids(json_t *root, const char *key, size_t max, bool need_one, int32_t **out,
		     size_t *n_out, struct oai_error *e)
{
	json_t *ids = json_object_get(root, key);
	if (!ids || json_is_null(ids))
		return 0;
	if (!json_is_array(ids))
		return oai_bad(e, key, "expected an array of token ids, got %s",
			       jsontype_name(ids));
	size_t n = json_array_size(ids);
	if (n > max)
		return oai_bad(e, key, "%zu ids (at most %zu)", n, max);
	if (!n && need_one)
		return oai_bad(e, key, "empty: no token could be drawn");
	if (!(*out = calloc(n ? n : 1, sizeof **out)))
		return err_set("out of memory");
	for (size_t i = 0; i < n; i++) {
		json_t *v = json_array_get(ids, i);
		char at[48];
		snprintf(at, sizeof at, "%s[%zu]", key, i);
		if (!json_is_integer(v) || json_integer_value(v) < 0 ||
		    json_integer_value(v) > INT32_MAX)
			return oai_bad(e, at, "expected a token id (an integer from 0), got %s",
				       json_is_integer(v) ? "a negative or too large one"
							  : jsontype_name(v));
		(*out)[(*n_out)++] = (int32_t)json_integer_value(v);
	}
	return 0;
}

/* A logit_bias key: a token id written in decimal, as JSON keys are strings. */
static bool bias_key(const char *key, int32_t *id)
{
	char *end;
	errno = 0;
	long long v = key[0] >= '0' && key[0] <= '9' ? strtoll(key, &end, 10) : -1;
	if (v < 0 || *end || errno || v > INT32_MAX)
		return false;
	*id = (int32_t)v;
	return true;
}

/* logit_bias: {"token id": bias} (OpenAI's and vLLM's). A bias outside [-100, 100]
 * is held to it, as vLLM holds it; whether an id is in the vocabulary is the model's
 * to say (generate.c). Two keys of one id ("7", "07") are refused. */
static int parse_bias(struct oai_request *r, json_t *root, struct oai_error *e)
{
	json_t *map = json_object_get(root, "logit_bias");
	if (!map || json_is_null(map))
		return 0;
	if (!json_is_object(map))
		return oai_bad(e, "logit_bias",
			       "expected an object of token ids and biases, got %s",
			       jsontype_name(map));
	size_t n = json_object_size(map);
	if (n > OAI_MAX_LOGIT_BIAS)
		return oai_bad(e, "logit_bias", "%zu entries (at most %d)", n, OAI_MAX_LOGIT_BIAS);
	if (!(r->bias_ids = calloc(n ? n : 1, sizeof *r->bias_ids)) ||
	    !(r->bias = calloc(n ? n : 1, sizeof *r->bias)))
		return err_set("out of memory");
	const char *key;
	json_t *v;
	json_object_foreach(map, key, v)
	{
		int32_t id;
		if (!bias_key(key, &id))
			return oai_bad(e, "logit_bias", "key '%.40s' is not a token id", key);
		if (!json_is_number(v))
			return oai_bad(e, "logit_bias", "the bias of %d: expected a number, got %s",
				       (int)id, jsontype_name(v));
		for (size_t i = 0; i < r->n_bias; i++)
			if (r->bias_ids[i] == id)
				return oai_bad(e, "logit_bias", "token id %d is given twice",
					       (int)id);
		double b = json_number_value(v);
		r->bias_ids[r->n_bias] = id;
		r->bias[r->n_bias++] = (float)(b < -100 ? -100 : b > 100 ? 100 : b);
	}
	return 0;
}

int oai_parse_ends(struct oai_request *r, json_t *root, struct oai_error *e)
{
	if (parse_stop(r, root, e) ||
	    parse_ids(root, "stop_token_ids", OAI_MAX_STOP_IDS, false, &r->stop_ids, &r->n_stop_ids,
		      e) ||
	    parse_ids(root, "allowed_token_ids", OAI_MAX_ALLOWED_IDS, true, &r->allowed_ids,
		      &r->n_allowed, e) ||
	    oai_get_bool(root, "include_stop_str_in_output", "include_stop_str_in_output",
			 &r->include_stop, e) < 0 ||
	    parse_bias(r, root, e) ||
	    oai_get_bool(root, "ignore_eos", "ignore_eos", &r->ignore_eos, e) < 0)
		return -1;
	json_int_t min = 0;
	if (oai_get_int(root, "min_tokens", 0, OAI_MAX_TOKENS, &min, e) < 0)
		return -1;
	/* max_tokens given (a text completion's default of 16 included, as vLLM's) */
	if (r->max_tokens && min > r->max_tokens)
		return oai_bad(e, "min_tokens", "%lld is more than %s (%d)", (long long)min,
			       r->max_tokens_key, r->max_tokens);
	r->min_tokens = (int)min;
	json_int_t last = OAI_REPEAT_SERVER; /* -1, as llama.cpp: the whole context */
	if (oai_get_int(root, "repeat_last_n", -1, OAI_MAX_TOKENS, &last, e) < 0)
		return -1;
	r->repeat_last_n = (int)last;
	json_int_t top = -1;
	if (oai_get_int(root, "prompt_logprobs", 0, OAI_MAX_TOP_LOGPROBS, &top, e) < 0)
		return -1;
	if (top > 0 && r->stream) /* as vLLM: a stream sends none */
		return oai_bad(e, "prompt_logprobs", "not available with \"stream\": true");
	r->prompt_logprobs = (int)top;
	json_int_t cut = 0;
	if (oai_get_int(root, "truncate_prompt_tokens", -1, OAI_MAX_TOKENS, &cut, e) < 0)
		return -1;
	if (cut == 0 && json_is_number(json_object_get(root, "truncate_prompt_tokens")))
		return oai_bad(e, "truncate_prompt_tokens", "0 keeps no token (-1 or at least 1)");
	r->truncate = (int)cut;
	return oai_get_bool(root, "return_tokens_as_token_ids", "return_tokens_as_token_ids",
			    &r->tokens_as_ids, e) < 0
		       ? -1
		       : 0;
}

int oai_parse_continue(struct oai_request *r, json_t *root, bool tokenize, struct oai_error *e)
{
	bool cont = false, add = true;
	json_t *given = json_object_get(root, "add_generation_prompt");
	if (oai_get_bool(root, "continue_final_message", "continue_final_message", &cont, e) < 0 ||
	    oai_get_bool(root, "add_generation_prompt", "add_generation_prompt", &add, e) < 0)
		return -1;
	if (cont && add && given && !json_is_null(given))
		return oai_bad(e, "continue_final_message",
			       "cannot be true with add_generation_prompt true");
	if (!cont && !add && !tokenize)
		return oai_bad(e, "add_generation_prompt",
			       "false is taken only with continue_final_message true (else an "
			       "answer starts a new assistant turn)");
	r->continue_final = cont;
	r->add_generation_prompt = add && !cont;
	return 0;
}

/* response_format.json_schema: a name as OpenAI has it (its characters and length),
 * and a schema. */
static int parse_json_schema(struct oai_request *r, json_t *rf, struct oai_error *e)
{
	json_t *js = json_object_get(rf, "json_schema");
	const char *name = json_string_value(json_object_get(js, "name"));
	json_t *schema = json_object_get(js, "schema");
	if (!json_is_object(js))
		return oai_bad(e, "response_format.json_schema", "expected an object, got %s",
			       jsontype_name(js));
	if (!name || !*name || strlen(name) > 64 ||
	    strspn(name, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-") !=
		    strlen(name))
		return oai_bad(e, "response_format.json_schema.name",
			       "expected 1 to 64 letters, digits, '_' or '-'");
	json_t *strict = json_object_get(js, "strict");
	if (strict && !json_is_boolean(strict) && !json_is_null(strict))
		return oai_bad(e, "response_format.json_schema.strict",
			       "expected a boolean, got %s", jsontype_name(strict));
	if (!schema) /* OpenAI's default: any object */
		return (r->format = js_object()) ? 0 : -1;
	static const char where[] = "response_format.json_schema.schema";
	if (!(r->format = js_compile(schema, where))) /* the message names the keyword */
		return snprintf(e->param, sizeof e->param, "%s", where), -1;
	return 0;
}

/* A schema given as vLLM gives it (an object, or its JSON text) at `where`, compiled. */
static int parse_vllm_schema(struct oai_request *r, json_t *v, const char *where,
			     struct oai_error *e)
{
	json_t *owned = NULL;
	if (json_is_string(v)) {
		json_error_t je;
		if (!(owned = json_loads(json_string_value(v), JSON_DECODE_ANY, &je)))
			return oai_bad(e, where, "not a JSON Schema's text (%s)",
				       jsontype_error(&je));
		v = owned;
	}
	r->format = js_compile(v, where); /* the message names the keyword */
	json_decref(owned);
	return r->format ? 0 : (snprintf(e->param, sizeof e->param, "%s", where), -1);
}

/* vLLM's structured_outputs: its json, choice or regex member into got[0..2] (the
 * other kinds are refused). */
static int structured_json(json_t *so, json_t *got[3], struct oai_error *e)
{
	static const char *const kinds[3] = {"json", "choice", "regex"};
	const char *key;
	json_t *v;
	got[0] = got[1] = got[2] = NULL;
	if (!json_is_object(so))
		return oai_bad(e, "structured_outputs", "expected an object, got %s",
			       jsontype_name(so));
	json_object_foreach(so, key, v)
	{
		int k = 0;
		while (k < 3 && strcmp(key, kinds[k]))
			k++;
		if (k < 3)
			got[k] = json_is_null(v) ? NULL : v;
		else if (!json_is_null(v) && !json_is_false(v))
			return oai_bad(e, "structured_outputs",
				       "'%.40s' is not supported (json, choice and regex only)",
				       key);
	}
	if (!!got[0] + !!got[1] + !!got[2] > 1)
		return oai_bad(e, "structured_outputs", "give one of json, choice and regex");
	return 0;
}

/* The choices the answer is held to exactly (guided_choice), or its pattern
 * (guided_regex, a string), as r's format. */
static int parse_choice(struct oai_request *r, json_t *v, bool regex, const char *where,
			struct oai_error *e)
{
	if (regex && !json_is_string(v))
		return oai_bad(e, where, "expected a regular expression, got %s", jsontype_name(v));
	r->format = regex ? js_regex_text(json_string_value(v), json_string_length(v), where)
			  : js_choice(v, where);
	if (r->format)
		return 0;
	const char *msg = err_msg(), *colon = strstr(msg, ": ");
	snprintf(e->param, sizeof e->param, "%.*s", colon ? (int)(colon - msg) : 0, msg);
	return -1;
}

/* tools[i].function.name (checked to be a string). */
static const char *tool_name(json_t *tools, size_t i)
{
	json_t *f = json_object_get(json_array_get(tools, i), "function");
	return json_string_value(json_object_get(f, "name"));
}

/* The $refs of schema v (a copy, changed in place) made to point where v now lies
 * in a larger document: "#/$defs/X" -> "#" + at + "/$defs/X". Values that are data,
 * not schemas (enum, const, default, examples), are left alone. */
static void move_refs(json_t *v, const char *at)
{
	const char *key;
	json_t *x;
	size_t i;
	if (json_is_array(v))
		json_array_foreach(v, i, x) move_refs(x, at);
	if (!json_is_object(v))
		return;
	json_object_foreach(v, key, x)
	{
		const char *ref = json_string_value(x);
		if (!strcmp(key, "$ref") && ref && ref[0] == '#') {
			size_t len = strlen(at) + strlen(ref) + 1;
			char *moved = malloc(len);
			if (moved) {
				snprintf(moved, len, "#%s%s", at, ref + 1);
				json_object_set_new(v, key, json_string(moved));
			}
			free(moved);
		} else if (strcmp(key, "enum") && strcmp(key, "const") && strcmp(key, "default") &&
			   strcmp(key, "examples")) {
			move_refs(x, at);
		}
	}
}

/* "required" among several tools: a call of one of them, {"name": NAME, "arguments":
 * PARAMETERS}, as Qwen3 writes it inside <tool_call>. Each tool's parameters are
 * compiled alone first, so that an error names the tool. */
static int force_any_tool(struct oai_request *r, json_t *tools, struct oai_error *e)
{
	size_t n = json_array_size(tools);
	json_t *doc = json_object(), *alts = json_array();
	json_object_set_new(doc, "anyOf", alts);
	for (size_t i = 0; i < n; i++) {
		json_t *f = json_object_get(json_array_get(tools, i), "function");
		json_t *params = json_object_get(f, "parameters");
		char where[64], at[64];
		snprintf(where, sizeof where, "tools[%zu].function.parameters", i);
		struct js_schema *one = params ? js_compile(params, where) : js_object();
		if (!one) {
			json_decref(doc);
			return snprintf(e->param, sizeof e->param, "%s", where), -1;
		}
		js_free(one);
		json_t *args =
			params ? json_deep_copy(params) : json_pack("{s:s}", "type", "object");
		snprintf(at, sizeof at, "/anyOf/%zu/properties/arguments", i);
		move_refs(args, at);
		json_array_append_new(alts,
				      json_pack("{s:s, s:{s:{s:s}, s:o}, s:[s,s], s:b}", "type",
						"object", "properties", "name", "const",
						tool_name(tools, i), "arguments", args, "required",
						"name", "arguments", "additionalProperties", 0));
	}
	r->format = js_compile(doc, "tools");
	json_decref(doc);
	if (!r->format)
		return snprintf(e->param, sizeof e->param, "tools"), -1;
	r->forced_pick = true;
	return 0;
}

int oai_force_tool(struct oai_request *r, json_t *tools, json_t *choice, struct oai_error *e)
{
	const char *s = json_string_value(choice), *name = NULL;
	json_t *fn = json_object_get(choice, "function");
	size_t n = json_array_size(tools), i = 0;
	if (s && strcmp(s, "required"))
		return oai_bad(e, "tool_choice",
			       "expected \"auto\", \"none\", \"required\" or "
			       "{\"type\": \"function\", \"function\": {\"name\": ...}}");
	if (s && n == 0)
		return oai_bad(e, "tool_choice", "\"required\" with no tools");
	if (s && n > JS_MAX_PATHS) /* each is a reading of the call's first bytes */
		return oai_bad(e, "tool_choice",
			       "\"required\" is supported with at most %d tools (name the "
			       "function to call)",
			       JS_MAX_PATHS);
	if (s && n > 1)
		return force_any_tool(r, tools, e);
	if (!s) {
		const char *type = json_string_value(json_object_get(choice, "type"));
		if (!json_is_object(choice) || !type || strcmp(type, "function") ||
		    !(name = json_string_value(json_object_get(fn, "name"))))
			return oai_bad(e, "tool_choice",
				       "expected {\"type\": \"function\", "
				       "\"function\": {\"name\": ...}}");
		while (i < n && strcmp(name, tool_name(tools, i)))
			i++;
		if (i == n)
			return oai_bad(e, "tool_choice.function.name",
				       "'%.64s' is not among the tools", name);
	}
	json_t *f = json_object_get(json_array_get(tools, i), "function");
	json_t *params = json_object_get(f, "parameters");
	char where[64];
	snprintf(where, sizeof where, "tools[%zu].function.parameters", i);
	r->format = params ? js_compile(params, where) : js_object();
	if (!r->format)
		return snprintf(e->param, sizeof e->param, "%s", where), -1;
	if (!(r->forced_tool = strdup(tool_name(tools, i))))
		return err_set("out of memory");
	return 0;
}

int oai_parse_format(struct oai_request *r, json_t *root, struct oai_error *e)
{
	json_t *rf = json_object_get(root, "response_format"), *so_got[3] = {NULL};
	json_t *guided = json_object_get(root, "guided_json");
	json_t *choice = json_object_get(root, "guided_choice");
	json_t *regex = json_object_get(root, "guided_regex");
	json_t *so = json_object_get(root, "structured_outputs");
	if (so && !json_is_null(so) && structured_json(so, so_got, e))
		return -1;
	json_t *so_json = so_got[0], *so_choice = so_got[1], *so_regex = so_got[2];
	guided = json_is_null(guided) ? NULL : guided;
	choice = json_is_null(choice) ? NULL : choice;
	regex = json_is_null(regex) ? NULL : regex;
	const char *type = json_string_value(json_object_get(rf, "type"));
	bool text = !rf || json_is_null(rf) || (type && strcmp(type, "text") == 0);
	bool so_any = so_json || so_choice || so_regex;
	bool vllm = guided || choice || regex || so_any;
	const char *vname = so_any   ? "structured_outputs"
			    : choice ? "guided_choice"
			    : regex  ? "guided_regex"
				     : "guided_json";
	bool forced = r->forced_tool || r->forced_pick;
	if (forced && r->continue_final)
		return oai_bad(e, "tool_choice",
			       "a forced call is a new answer: not a continued "
			       "message");
	if (text && !vllm)
		return 0;
	if (forced)
		return oai_bad(e, vllm ? vname : "response_format",
			       "a forced tool call holds the answer to its parameters already");
	if (!text && (!type || (strcmp(type, "json_object") && strcmp(type, "json_schema"))))
		return oai_bad(e, "response_format",
			       "expected {\"type\": \"text\"}, {\"type\": \"json_object\"} or "
			       "{\"type\": \"json_schema\", \"json_schema\": {...}}");
	const char *given = !text ? "response_format" : vname;
	if (!text + so_any + !!guided + !!choice + !!regex > 1)
		return oai_bad(e, given,
			       "give one of response_format, guided_json, guided_choice, "
			       "guided_regex and structured_outputs");
	if (r->continue_final) /* its text began before the format could hold it */
		return oai_bad(e, given, "a format holds a new answer: not a continued message");
	if (choice || so_choice)
		return parse_choice(r, choice ? choice : so_choice, false,
				    choice ? "guided_choice" : "structured_outputs.choice", e);
	if (regex || so_regex)
		return parse_choice(r, regex ? regex : so_regex, true,
				    regex ? "guided_regex" : "structured_outputs.regex", e);
	if (vllm)
		return parse_vllm_schema(r, so_json ? so_json : guided,
					 so_json ? "structured_outputs.json" : "guided_json", e);
	if (!strcmp(type, "json_schema"))
		return parse_json_schema(r, rf, e);
	return (r->format = js_object()) ? 0 : -1;
}
