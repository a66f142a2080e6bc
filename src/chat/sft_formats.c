/* sft_formats.c — the shapes fine-tuning datasets come in, read as conversations:
 * OpenAI's {"messages": [...]} (chat_from_json), ShareGPT's {"conversations": [...]}
 * and Alpaca's {"instruction", "input", "output"}, with the keys LLaMA-Factory adds to
 * the last two ("system", "tools", "history", the "function_call" speaker). The other
 * two are rewritten as the first, so that one reader (chat_from_value) checks every
 * conversation the same way. */
#include "src/chat/sft.h"
#include "src/base/err.h"
#include "src/base/jsonlimit.h"
#include "src/base/jsontype.h"
#include "src/base/strbuf.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ShareGPT's speakers ("from") as chat roles; FastChat, axolotl and LLaMA-Factory
 * write these names. */
static const char *sharegpt_role(const char *from)
{
	static const struct {
		const char *from, *role;
	} names[] = {
		{"system", "system"},     {"human", "user"},          {"user", "user"},
		{"gpt", "assistant"},     {"assistant", "assistant"}, {"model", "assistant"},
		{"chatgpt", "assistant"}, {"bard", "assistant"},      {"bing", "assistant"},
		{"tool", "tool"},         {"observation", "tool"},    {"function_response", "tool"},
		{"ipython", "tool"},
	};
	for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
		if (!strcmp(from, names[i].from))
			return names[i].role;
	return NULL;
}

/* The JSON value a string holds (LLaMA-Factory keeps calls and tools as JSON text);
 * NULL where it holds none, with *over set where it is past the limits of a
 * conversation file (err_set by jlim_check: the caller names the field). */
static json_t *json_text(json_t *s, bool *over)
{
	*over = json_is_string(s) &&
		jlim_check(json_string_value(s), json_string_length(s), &chat_json_limits, NULL);
	if (!json_is_string(s) || *over)
		return NULL;
	return json_loadb(json_string_value(s), json_string_length(s), 0, NULL);
}

/* LLaMA-Factory's "function_call" turn: its value is the JSON text of a call
 * {"name", "arguments"} or of an array of them, the assistant's tool calls. */
static json_t *function_call(json_t *value, const char *where, size_t i)
{
	bool over;
	json_t *calls = json_text(value, &over);
	if (json_is_object(calls))
		calls = json_pack("[o]", calls);
	if (!json_is_array(calls) || !json_array_size(calls)) {
		json_decref(calls);
		if (over)
			return err_prefix("%s: conversations[%zu].value", where, i), NULL;
		return err_set("%s: conversations[%zu].value: a function_call is the JSON text of "
			       "{\"name\", \"arguments\"} or of an array of them",
			       where, i),
		       NULL;
	}
	json_t *tool_calls = json_array(), *c;
	size_t k;
	json_array_foreach(calls, k, c) json_array_append_new(
		tool_calls, json_pack("{s:s, s:O}", "type", "function", "function", c));
	json_decref(calls);
	return json_pack("{s:s, s:o}", "role", "assistant", "tool_calls", tool_calls);
}

/* Content as OpenAI's array of parts, each {"type": "text", "text": ...}, as a string:
 * the texts joined by line breaks, as serve and vLLM join them (a new reference), or
 * NULL (err_set, naming key[i].content[k]). */
static json_t *text_parts(json_t *parts, const char *where, const char *key, size_t i)
{
	struct strbuf sb = {0};
	for (size_t k = 0; k < json_array_size(parts); k++) {
		json_t *part = json_array_get(parts, k), *type = json_object_get(part, "type");
		json_t *text = json_object_get(part, "text");
		if (!json_is_string(type) || strcmp(json_string_value(type), "text") != 0 ||
		    !json_is_string(text)) {
			free(sb.p);
			return err_set("%s: %s[%zu].content[%zu]: expected a text part "
				       "{\"type\": \"text\", \"text\": ...} (only text is "
				       "supported)",
				       where, key, i, k),
			       NULL;
		}
		if (k)
			sb_put(&sb, "\n", 1);
		sb_put(&sb, json_string_value(text), json_string_length(text));
	}
	json_t *out = sb.oom ? NULL : json_stringn_nocheck(sb.p ? sb.p : "", sb.n);
	free(sb.p);
	if (!out)
		err_set("%s: out of memory", where);
	return out;
}

/* Whether message m is OpenAI's "developer" one: the system message of its newer
 * models' requests, which serve takes as "system" too. */
static bool developer(json_t *m)
{
	json_t *role = json_object_get(m, "role");
	return json_is_string(role) && !strcmp(json_string_value(role), "developer");
}

/* Message i of `key` as chat_from_value takes it: content given as an array of text
 * parts joined into a string, a "developer" message as a "system" one. A new
 * reference: m itself where neither applies, else a copy; NULL (err_set). */
static json_t *plain_turn(json_t *m, const char *where, const char *key, size_t i)
{
	json_t *content = json_object_get(m, "content");
	bool parts = json_is_array(content), dev = developer(m);
	if (!parts && !dev)
		return json_incref(m);
	json_t *text = parts ? text_parts(content, where, key, i) : NULL;
	if (parts && !text)
		return NULL;
	json_t *copy = json_copy(m);
	if (!copy || (parts && json_object_set(copy, "content", text)) ||
	    (dev && json_object_set_new(copy, "role", json_string("system")))) {
		json_decref(text);
		json_decref(copy);
		return err_set("%s: out of memory", where), NULL;
	}
	json_decref(text);
	return copy;
}

/* ShareGPT's turns as messages: {"from", "value"} pairs, or {"role", "content"} ones
 * as some datasets keep under the same key (passed on as they are). */
static json_t *from_sharegpt(json_t *turns, const char *where)
{
	if (!json_is_array(turns))
		return err_set("%s: conversations: expected an array, got %s", where,
			       jsontype_name(turns)),
		       NULL;
	json_t *msgs = json_array(), *t;
	size_t i;
	json_array_foreach(turns, i, t)
	{
		json_t *from = json_object_get(t, "from"), *value = json_object_get(t, "value");
		json_t *role_of = json_object_get(t, "role");
		if (json_is_object(t) && !from && role_of) {
			if (!json_is_string(role_of) ||
			    (chat_role_parse(json_string_value(role_of)) < 0 && !developer(t))) {
				json_decref(msgs);
				return err_set("%s: conversations[%zu].role: %s%.40s%s (a turn of "
					       "\"role\" and \"content\" takes system, developer, "
					       "user, assistant or tool; ShareGPT's speakers are "
					       "\"from\")",
					       where, i,
					       json_is_string(role_of) ? "unknown role \"" : "",
					       json_is_string(role_of) ? json_string_value(role_of)
								       : "not a string",
					       json_is_string(role_of) ? "\"" : ""),
				       NULL;
			}
			json_t *m = plain_turn(t, where, "conversations", i);
			if (!m) {
				json_decref(msgs);
				return NULL;
			}
			json_array_append_new(msgs, m);
			continue;
		}
		if (json_is_string(from) && !strcmp(json_string_value(from), "function_call")) {
			json_t *m = function_call(value, where, i);
			if (!m) {
				json_decref(msgs);
				return NULL;
			}
			json_array_append_new(msgs, m);
			continue;
		}
		const char *role =
			json_is_string(from) ? sharegpt_role(json_string_value(from)) : NULL;
		if (!role) {
			json_decref(msgs);
			return err_set("%s: conversations[%zu].from: %s%.40s%s (system, human or "
				       "user, gpt, assistant or model, tool or observation, "
				       "function_call)",
				       where, i, json_is_string(from) ? "unknown speaker \"" : "",
				       json_is_string(from) ? json_string_value(from)
							    : "missing or not a string",
				       json_is_string(from) ? "\"" : ""),
			       NULL;
		}
		if (!json_is_string(value)) {
			json_decref(msgs);
			return err_set("%s: conversations[%zu].value: expected a string, got %s",
				       where, i, jsontype_name(value)),
			       NULL;
		}
		json_array_append_new(msgs,
				      json_pack("{s:s, s:O}", "role", role, "content", value));
	}
	return msgs;
}

/* Alpaca's record as a system prompt (its "system", when there is one), the earlier
 * turns of its "history" ([instruction, answer] pairs), the user's instruction (and
 * "input" on the next line) and the answer ("output"). */
static json_t *from_alpaca(json_t *o, const char *where)
{
	static const char *const keys[] = {"instruction", "output", "input", "system"};
	json_t *v[4];
	for (int k = 0; k < 4; k++) {
		v[k] = json_object_get(o, keys[k]);
		if ((k < 2 || (v[k] && !json_is_null(v[k]))) && !json_is_string(v[k]))
			return err_set("%s: %s: expected a string, got %s", where, keys[k],
				       jsontype_name(v[k])),
			       NULL;
	}
	json_t *history = json_object_get(o, "history"), *pair;
	if (history && !json_is_null(history) && !json_is_array(history))
		return err_set("%s: history: expected an array, got %s", where,
			       jsontype_name(history)),
		       NULL;
	const char *in = json_is_string(v[2]) ? json_string_value(v[2]) : "";
	json_t *msgs = json_array();
	if (json_is_string(v[3]) && json_string_length(v[3]))
		json_array_append_new(msgs,
				      json_pack("{s:s, s:O}", "role", "system", "content", v[3]));
	size_t i;
	json_array_foreach(history, i, pair)
	{
		json_t *q = json_array_get(pair, 0), *a = json_array_get(pair, 1);
		if (json_array_size(pair) != 2 || !json_is_string(q) || !json_is_string(a)) {
			json_decref(msgs);
			return err_set("%s: history[%zu]: expected a pair of strings [instruction, "
				       "answer]",
				       where, i),
			       NULL;
		}
		json_array_append_new(msgs, json_pack("{s:s, s:O}", "role", "user", "content", q));
		json_array_append_new(msgs,
				      json_pack("{s:s, s:O}", "role", "assistant", "content", a));
	}
	/* the instruction and the input, each where not empty, joined by a line break
	 * (LLaMA-Factory's AlpacaDatasetConverter) */
	const char *ins = json_string_value(v[0]);
	json_t *user = json_sprintf("%s%s%s", ins, *ins && *in ? "\n" : "", in);
	json_array_append_new(msgs, json_pack("{s:s, s:o}", "role", "user", "content", user));
	json_array_append_new(msgs, json_pack("{s:s, s:O}", "role", "assistant", "content", v[1]));
	return msgs;
}

/* ShareGPT's "system" beside its turns: the system prompt, ahead of them. */
static int sharegpt_system(json_t *msgs, json_t *system, const char *where)
{
	if (!system || json_is_null(system))
		return 0;
	if (!json_is_string(system))
		return err_set("%s: system: expected a string, got %s", where,
			       jsontype_name(system));
	if (!json_string_length(system)) /* an empty column, as dumps often carry */
		return 0;
	json_t *role = json_object_get(json_array_get(msgs, 0), "role");
	if (json_is_string(role) && !strcmp(json_string_value(role), "system"))
		return err_set("%s: system: the conversation starts with a system turn too", where);
	json_array_insert_new(msgs, 0,
			      json_pack("{s:s, s:O}", "role", "system", "content", system));
	return 0;
}

/* Tools as LLaMA-Factory lists them for Qwen: a bare definition {"name", ...} (as
 * its glaive example writes them) wrapped as {"type": "function", "function": ...},
 * the form requests carry at inference. A new array. */
static json_t *wrapped_tools(json_t *tools)
{
	json_t *out = json_array(), *t;
	size_t i;
	json_array_foreach(tools, i, t)
	{
		json_t *type = json_object_get(t, "type");
		bool bare = json_is_object(t) &&
			    !(json_is_string(type) && !strcmp(json_string_value(type), "function"));
		json_array_append_new(
			out, bare ? json_pack("{s:s, s:O}", "type", "function", "function", t)
				  : json_incref(t));
	}
	return out;
}

/* The record's "tools": an array of definitions, or (LLaMA-Factory) the JSON text of
 * one. A new reference to the array, or NULL with *bad set. */
static json_t *record_tools(json_t *root, const char *where, bool *bad)
{
	json_t *tools = json_object_get(root, "tools");
	*bad = false;
	if (json_is_array(tools))
		return wrapped_tools(tools);
	if (!tools || json_is_null(tools) || (json_is_string(tools) && !json_string_length(tools)))
		return NULL;
	bool over;
	json_t *parsed = json_text(tools, &over);
	if (json_is_array(parsed)) {
		json_t *wrapped = wrapped_tools(parsed);
		json_decref(parsed);
		return wrapped;
	}
	json_decref(parsed);
	*bad = true;
	if (over)
		return err_prefix("%s: tools", where), NULL;
	return err_set("%s: tools: expected an array of definitions or the JSON text of one",
		       where),
	       NULL;
}

/* The messages of an OpenAI record, or a bare array of them (NULL: neither). */
static json_t *record_messages(json_t *root)
{
	return json_is_array(root) ? root : json_object_get(root, "messages");
}

/* An OpenAI record (or a bare array of messages) with its messages as plain_turn makes
 * them (a new reference), or NULL (err_set). */
static json_t *join_parts(json_t *root, const char *where)
{
	json_t *msgs = record_messages(root);
	if (!json_is_array(msgs)) /* chat_from_value explains */
		return json_incref(root);
	json_t *plain = json_array(), *m;
	if (!plain)
		return err_set("%s: out of memory", where), NULL;
	size_t i;
	json_array_foreach(msgs, i, m)
	{
		json_t *p = plain_turn(m, where, "messages", i);
		if (!p || json_array_append_new(plain, p)) {
			json_decref(plain);
			return p ? err_set("%s: out of memory", where), NULL : NULL;
		}
	}
	if (json_is_array(root))
		return plain;
	json_t *copy = json_copy(root);
	if (!copy || json_object_set_new(copy, "messages", plain)) {
		json_decref(copy);
		return err_set("%s: out of memory", where), NULL;
	}
	return copy;
}

/* An error chat_from_value gave of the messages made from ShareGPT's turns, said of the
 * record's own: its messages[k] is conversations[k - off] (off: 1 when a "system"
 * beside the turns came first, as a message of its own). */
static void sharegpt_error(const char *where, size_t off)
{
	const char *m = err_msg();
	size_t wl = strlen(where);
	if (strncmp(m, where, wl) || strncmp(m + wl, ": messages[", 11))
		return;
	char *end;
	unsigned long long k = strtoull(m + wl + 11, &end, 10);
	if (*end != ']' || k < off)
		return;
	char rest[ERR_MAX];
	snprintf(rest, sizeof rest, "%s", end + 1);
	err_set("%s: conversations[%llu]%s", where, k - off, rest);
}

/* OpenAI's fine-tuning format: "weight" 0 or 1 on an assistant message, 0 for one not
 * trained on; c holds root's messages, one turn each. 0, or -1 (err_set). */
static int weights(struct chat *c, json_t *root, const char *where)
{
	json_t *msgs = record_messages(root);
	for (size_t i = 0; i < json_array_size(msgs) && i < c->n; i++) {
		json_t *w = json_object_get(json_array_get(msgs, i), "weight");
		if (c->turns[i].role != CHAT_ASSISTANT || !w || json_is_null(w))
			continue;
		if (!json_is_number(w) || (json_number_value(w) != 0 && json_number_value(w) != 1))
			return err_set("%s: messages[%zu].weight: expected 0 or 1 (0: not trained "
				       "on)",
				       where, i);
		chat_set_untrained(c, i, json_number_value(w) == 0);
	}
	return 0;
}

struct chat *sft_chat_from_value(json_t *root, const char *where)
{
	bool other =
		json_is_object(root) && !json_object_get(root, "messages") &&
		(json_object_get(root, "conversations") || json_object_get(root, "instruction"));
	if (json_is_object(root) && !other && !json_object_get(root, "messages") &&
	    json_is_string(json_object_get(root, "text"))) {
		err_set("%s: a {\"text\": ...} record is text to pretrain on, not a conversation "
			"(train it without --sft)",
			where);
		return NULL;
	}
	if ((json_is_object(root) && !other && !json_object_get(root, "messages")) ||
	    !(json_is_object(root) || json_is_array(root)))
		return err_set("%s: not a conversation: expected \"messages\" (OpenAI), "
			       "\"conversations\" (ShareGPT) or \"instruction\" and \"output\" "
			       "(Alpaca)%s%s",
			       where, json_is_object(root) ? "" : ", got ",
			       json_is_object(root) ? "" : jsontype_name(root)),
		       NULL;
	if (!other) { /* OpenAI's, a conversation file, or what chat_from_value explains */
		json_t *joined = join_parts(root, where);
		struct chat *c = joined ? chat_from_value(joined, where) : NULL;
		json_decref(joined);
		if (c && weights(c, root, where)) {
			chat_free(c);
			return NULL;
		}
		return c;
	}
	json_t *conv = json_object_get(root, "conversations");
	json_t *msgs = conv ? from_sharegpt(conv, where) : from_alpaca(root, where);
	if (msgs && conv && sharegpt_system(msgs, json_object_get(root, "system"), where) < 0) {
		json_decref(msgs);
		return NULL;
	}
	bool bad;
	json_t *tools = msgs ? record_tools(root, where, &bad) : NULL;
	if (msgs && bad) {
		json_decref(msgs);
		return NULL;
	}
	json_t *o = msgs ? json_pack("{s:o}", "messages", msgs) : NULL;
	if (o && tools)
		json_object_set(o, "tools", tools);
	json_decref(tools);
	if (!o && msgs)
		err_set("%s: out of memory", where);
	struct chat *c = o ? chat_from_value(o, where) : NULL;
	if (!c && o && conv)
		sharegpt_error(where, json_array_size(msgs) - json_array_size(conv));
	json_decref(o);
	return c;
}

struct chat *sft_chat_from_json(const char *text, size_t len, const char *where)
{
	if (jlim_check(text, len, &chat_json_limits, where))
		return NULL;
	json_t *root = json_loadb(text, len, JSON_DECODE_ANY, NULL);
	if (!root) /* chat_from_json says what is wrong, as for any conversation file */
		return chat_from_json(text, len, where);
	struct chat *c = sft_chat_from_value(root, where);
	json_decref(root);
	return c;
}
