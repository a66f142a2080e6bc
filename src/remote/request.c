/* request.c — the body of a chat-completions request: the conversation as OpenAI
 * messages and the settings the user chose (remote.h). */
#include "src/remote/remote.h"

#include <jansson.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "src/base/err.h"

/* Adds key: value to obj, taking the value's reference; false when out of memory. */
static bool put(json_t *obj, const char *key, json_t *v)
{
	return v && json_object_set_new(obj, key, v) == 0;
}

/* An assistant turn: content (null when it holds only calls), its calls with ids the
 * tool results after it refer to, and its reasoning when the template shows it (the
 * turns after the last question: a tool-call loop). */
static json_t *assistant(const struct chat_turn *t, size_t i, bool with_reasoning)
{
	json_t *m = json_object();
	bool ok = m && put(m, "role", json_string("assistant")) &&
		  put(m, "content",
		      t->content[0] || !t->n_calls ? json_string(t->content) : json_null());
	if (ok && with_reasoning && t->reasoning && t->reasoning[0])
		ok = put(m, "reasoning_content", json_string(t->reasoning));
	json_t *calls = t->n_calls ? json_array() : NULL;
	for (size_t k = 0; ok && k < t->n_calls; k++) {
		char id[48];
		snprintf(id, sizeof id, "call_%zu_%zu", i, k);
		json_t *c = json_object(), *f = json_object();
		ok = c && f && put(f, "name", json_string(t->calls[k].name)) &&
		     put(f, "arguments", json_string(t->calls[k].arguments)) &&
		     put(c, "id", json_string(id)) && put(c, "type", json_string("function")) &&
		     put(c, "function", f) && json_array_append_new(calls, c) == 0;
		if (!ok) {
			json_decref(c);
			json_decref(f);
		}
	}
	if (ok && calls)
		ok = put(m, "tool_calls", calls);
	else
		json_decref(calls);
	if (!ok)
		json_decref(m);
	return ok ? m : NULL;
}

/* The messages; a tool result names the call it answers: the k-th result after an
 * assistant turn answers its k-th call. */
static json_t *messages(const struct chat *c)
{
	json_t *a = json_array();
	long last_user = chat_last(c, CHAT_USER);
	size_t caller = 0, result = 0; /* the last turn with calls; results after it */
	bool ok = a != NULL;
	for (size_t i = 0; ok && i < c->n; i++) {
		const struct chat_turn *t = &c->turns[i];
		json_t *m;
		if (t->role == CHAT_ASSISTANT) {
			m = assistant(t, i, (long)i > last_user);
			if (t->n_calls)
				caller = i, result = 0;
		} else {
			m = json_object();
			ok = m && put(m, "role", json_string(chat_role_name(t->role))) &&
			     put(m, "content", json_string(t->content));
			if (ok && t->role == CHAT_TOOL && caller < i &&
			    result < c->turns[caller].n_calls) {
				char id[48];
				snprintf(id, sizeof id, "call_%zu_%zu", caller, result++);
				ok = put(m, "tool_call_id", json_string(id));
			}
		}
		ok = ok && m && json_array_append_new(a, m) == 0;
	}
	if (!ok)
		json_decref(a);
	return ok ? a : NULL;
}

static json_t *tools(const struct chat *c)
{
	json_t *a = json_array();
	for (size_t i = 0; a && i < c->n_tools; i++) {
		json_error_t e;
		json_t *t = json_loads(c->tools[i], 0, &e);
		if (!t) {
			err_set("tool definition %zu is not JSON: %s", i, e.text);
			json_decref(a);
			return NULL;
		}
		json_array_append_new(a, t);
	}
	return a;
}

/* The sampling settings the user chose, by their OpenAI (and vLLM/SGLang) names. */
static int sampling(json_t *body, const struct remote_request *q)
{
	const struct samp_params *p = &q->sampling;
	unsigned set = q->sampling_set;
	bool ok = true, greedy = (set & SAMP_SET_GREEDY) && p->greedy;
	if (greedy || (set & SAMP_SET_TEMP))
		ok = put(body, "temperature", json_real(greedy ? 0.0 : p->temperature));
	if (ok && (set & SAMP_SET_TOP_P))
		ok = put(body, "top_p", json_real(p->top_p));
	if (ok && (set & SAMP_SET_TOP_K)) /* vLLM and SGLang: -1 means no limit */
		ok = put(body, "top_k", json_integer(p->top_k > 0 ? p->top_k : -1));
	if (ok && (set & SAMP_SET_MIN_P))
		ok = put(body, "min_p", json_real(p->min_p));
	if (ok && (set & SAMP_SET_PRESENCE))
		ok = put(body, "presence_penalty", json_real(p->presence_penalty));
	if (ok && (set & SAMP_SET_FREQUENCY))
		ok = put(body, "frequency_penalty", json_real(p->frequency_penalty));
	if (ok && (set & SAMP_SET_REPEAT))
		ok = put(body, "repetition_penalty", json_real(p->repetition_penalty));
	if (ok && (set & SAMP_SET_SEED)) {
		if (p->seed > INT64_MAX)
			return err_set("seed %llu: a server takes seeds up to 2^63 - 1",
				       (unsigned long long)p->seed);
		ok = put(body, "seed", json_integer((json_int_t)p->seed));
	}
	return ok ? 0 : err_set("out of memory");
}

char *remote_request_json(const struct remote_request *q, size_t *len)
{
	json_t *body = json_object(), *opts = json_object(), *kw = json_object();
	json_t *msgs = messages(q->chat), *tl = q->chat->n_tools ? tools(q->chat) : NULL;
	char *text = NULL;
	if (q->chat->n_tools && !tl)
		goto done; /* the error is set */
	if (!body || !opts || !kw || !msgs) {
		err_set("out of memory");
		goto done;
	}
	/* From here each put() owns its value, whether it succeeds or not. */
	bool ok = put(body, "model", json_string(q->model));
	ok = put(body, "messages", msgs) && ok;
	ok = put(body, "stream", json_true()) && ok;
	ok = put(opts, "include_usage", json_true()) && ok;
	ok = put(body, "stream_options", opts) && ok;
	if (q->think >= 0) {
		ok = put(kw, "enable_thinking", json_boolean(q->think)) && ok;
		ok = put(body, "chat_template_kwargs", kw) && ok;
	} else {
		json_decref(kw);
	}
	if (q->max_tokens > 0)
		ok = put(body, "max_tokens", json_integer(q->max_tokens)) && ok;
	if (q->json && q->schema) /* OpenAI requires the name */
		ok = put(body, "response_format",
			 json_pack("{s:s,s:{s:s,s:O}}", "type", "json_schema", "json_schema",
				   "name", "schema", "schema", q->schema)) &&
		     ok;
	else if (q->json)
		ok = put(body, "response_format", json_pack("{s:s}", "type", "json_object")) && ok;
	if (tl)
		ok = put(body, "tools", tl) && ok;
	msgs = opts = kw = tl = NULL;
	if (!ok) {
		err_set("out of memory");
		goto done;
	}
	if (sampling(body, q))
		goto done;
	text = json_dumps(body, JSON_COMPACT | JSON_PRESERVE_ORDER);
	if (!text)
		err_set("out of memory");
	else if (len)
		*len = strlen(text);
done:
	json_decref(body);
	json_decref(opts);
	json_decref(kw);
	json_decref(msgs);
	json_decref(tl);
	return text;
}
