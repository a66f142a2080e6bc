/* chat.c — the conversation: turns, editing, and JSON load/save. */
#include "src/chat/chat.h"
#include "src/base/array.h"
#include "src/base/err.h"
#include "src/base/utf8.h"
#include "src/base/fileio.h"
#include "src/base/jsonlimit.h"
#include "src/base/jsontype.h"
#include "src/chat/tojson.h"

#include <jansson.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A conversation file: its size, and its JSON values and nesting, caps that bound the
 * time and memory its parse takes (~120 MB at most, where a file of nested arrays
 * without them takes many times its size). 64 MiB holds hundreds of full contexts of
 * text, and 512k values tens of thousands of turns with tool calls. */
enum { CHAT_MAX_FILE = 64 << 20, CHAT_MAX_VALUES = 1 << 19, CHAT_MAX_DEPTH = 64 };

static const char *const role_names[] = {
	[CHAT_SYSTEM] = "system",
	[CHAT_USER] = "user",
	[CHAT_ASSISTANT] = "assistant",
	[CHAT_TOOL] = "tool",
};

const char *chat_role_name(enum chat_role r)
{
	if ((unsigned)r < sizeof role_names / sizeof role_names[0])
		return role_names[r];
	return "?";
}

int chat_role_parse(const char *name)
{
	for (size_t i = 0; i < sizeof role_names / sizeof role_names[0]; i++)
		if (strcmp(name, role_names[i]) == 0)
			return (int)i;
	return -1;
}

/* A copy of s in which each ill-formed UTF-8 sequence becomes U+FFFD (its maximal
 * subpart, as the training data and Python's errors="replace" have it); NULL when out
 * of memory. */
static char *utf8_dup(const char *s)
{
	return utf8_dup_replaced(s, strlen(s), NULL);
}

struct chat *chat_new(void)
{
	struct chat *c = calloc(1, sizeof *c);
	if (!c)
		err_set("out of memory");
	return c;
}

static void calls_free(struct chat_tool_call *calls, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		free(calls[i].name);
		free(calls[i].arguments);
	}
	free(calls);
}

static void turn_free(struct chat_turn *t)
{
	free(t->content);
	free(t->reasoning);
	calls_free(t->calls, t->n_calls);
	t->content = t->reasoning = NULL;
	t->calls = NULL;
	t->n_calls = 0;
}

void chat_free(struct chat *c)
{
	if (!c)
		return;
	for (size_t i = 0; i < c->n; i++)
		turn_free(&c->turns[i]);
	for (size_t i = 0; i < c->n_tools; i++)
		free(c->tools[i]);
	free(c->tools);
	free(c->turns);
	free(c->meta);
	free(c);
}

static int reserve(struct chat *c, size_t n)
{
	return arr_reserve(&c->turns, &c->cap, n, sizeof *c->turns);
}

/* Fills t with sanitized copies; t is untouched on failure. */
static int turn_fill(struct chat_turn *t, enum chat_role role, const char *content,
		     const char *reasoning)
{
	char *cc = utf8_dup(content ? content : "");
	char *rr = (role == CHAT_ASSISTANT && reasoning) ? utf8_dup(reasoning) : NULL;
	if (!cc || (role == CHAT_ASSISTANT && reasoning && !rr)) {
		free(cc);
		free(rr);
		return err_set("out of memory");
	}
	t->role = role;
	t->content = cc;
	t->reasoning = rr;
	t->calls = NULL;
	t->n_calls = 0;
	t->untrained = false;
	return 0;
}

int chat_add(struct chat *c, enum chat_role role, const char *content, const char *reasoning)
{
	if ((unsigned)role > CHAT_TOOL)
		return err_set("chat: invalid role %d", (int)role);
	if (reserve(c, c->n + 1) < 0)
		return -1;
	if (turn_fill(&c->turns[c->n], role, content, reasoning) < 0)
		return -1;
	c->n++;
	return 0;
}

void chat_set_untrained(struct chat *c, size_t i, bool untrained)
{
	if (i < c->n && c->turns[i].role == CHAT_ASSISTANT)
		c->turns[i].untrained = untrained;
}

int chat_set_turn(struct chat *c, size_t i, const char *content, const char *reasoning)
{
	if (i >= c->n)
		return err_set("chat: no turn %zu (the conversation has %zu)", i, c->n);
	struct chat_turn t;
	if (turn_fill(&t, c->turns[i].role, content, reasoning) < 0)
		return -1;
	t.untrained = c->turns[i].untrained;
	t.calls = c->turns[i].calls; /* the calls stay with the turn */
	t.n_calls = c->turns[i].n_calls;
	c->turns[i].calls = NULL;
	c->turns[i].n_calls = 0;
	turn_free(&c->turns[i]);
	c->turns[i] = t;
	return 0;
}

int chat_add_tool_call(struct chat *c, size_t i, const char *name, const char *arguments,
		       bool arguments_is_text)
{
	if (i >= c->n || c->turns[i].role != CHAT_ASSISTANT)
		return err_set("chat: turn %zu is not an assistant turn", i);
	struct chat_turn *t = &c->turns[i];
	struct chat_tool_call *grown = realloc(t->calls, (t->n_calls + 1) * sizeof *grown);
	if (!grown)
		return err_set("out of memory");
	t->calls = grown;
	struct chat_tool_call *k = &t->calls[t->n_calls];
	k->name = utf8_dup(name);
	k->arguments = utf8_dup(arguments);
	k->arguments_is_text = arguments_is_text;
	if (!k->name || !k->arguments) {
		free(k->name);
		free(k->arguments);
		return err_set("out of memory");
	}
	t->n_calls++;
	return 0;
}

int chat_add_tool(struct chat *c, const char *json_text)
{
	char **grown = realloc(c->tools, (c->n_tools + 1) * sizeof *grown);
	if (!grown)
		return err_set("out of memory");
	c->tools = grown;
	if (!(c->tools[c->n_tools] = strdup(json_text)))
		return err_set("out of memory");
	c->n_tools++;
	return 0;
}

int chat_set_meta(struct chat *c, const char *json_text)
{
	char *copy = NULL;
	if (json_text) {
		json_t *o = json_loads(json_text, 0, NULL);
		bool obj = json_is_object(o);
		json_decref(o);
		if (!obj)
			return err_set("conversation meta: not a JSON object");
		if (!(copy = strdup(json_text)))
			return err_set("out of memory");
	}
	free(c->meta);
	c->meta = copy;
	return 0;
}

struct chat *chat_dup(const struct chat *c)
{
	struct chat *d = chat_new();
	if (!d)
		return NULL;
	for (size_t i = 0; i < c->n; i++) {
		const struct chat_turn *t = &c->turns[i];
		if (chat_add(d, t->role, t->content, t->reasoning) < 0)
			goto fail;
		d->turns[i].untrained = t->untrained;
		for (size_t k = 0; k < t->n_calls; k++)
			if (chat_add_tool_call(d, i, t->calls[k].name, t->calls[k].arguments,
					       t->calls[k].arguments_is_text) < 0)
				goto fail;
	}
	for (size_t i = 0; i < c->n_tools; i++)
		if (chat_add_tool(d, c->tools[i]) < 0)
			goto fail;
	if (chat_set_meta(d, c->meta) < 0)
		goto fail;
	return d;
fail:
	chat_free(d);
	return NULL;
}

const char *chat_system(const struct chat *c)
{
	return c->n > 0 && c->turns[0].role == CHAT_SYSTEM ? c->turns[0].content : NULL;
}

int chat_set_system(struct chat *c, const char *text)
{
	int has = chat_system(c) != NULL;
	if (!text) {
		if (has)
			chat_remove(c, 0, 1);
		return 0;
	}
	if (has)
		return chat_set_turn(c, 0, text, NULL);
	if (reserve(c, c->n + 1) < 0)
		return -1;
	struct chat_turn t;
	if (turn_fill(&t, CHAT_SYSTEM, text, NULL) < 0)
		return -1;
	memmove(c->turns + 1, c->turns, c->n * sizeof *c->turns);
	c->turns[0] = t;
	c->n++;
	return 0;
}

size_t chat_count(const struct chat *c)
{
	return c->n - (chat_system(c) ? 1 : 0);
}

long chat_last(const struct chat *c, enum chat_role role)
{
	for (size_t i = c->n; i-- > 0;)
		if (c->turns[i].role == role)
			return (long)i;
	return -1;
}

void chat_truncate(struct chat *c, size_t n)
{
	while (c->n > n)
		turn_free(&c->turns[--c->n]);
}

void chat_remove(struct chat *c, size_t i, size_t count)
{
	if (i >= c->n)
		return;
	if (count > c->n - i)
		count = c->n - i;
	for (size_t k = i; k < i + count; k++)
		turn_free(&c->turns[k]);
	memmove(c->turns + i, c->turns + i + count, (c->n - i - count) * sizeof *c->turns);
	c->n -= count;
}

void chat_clear(struct chat *c)
{
	chat_truncate(c, chat_system(c) ? 1 : 0);
}

/* Whether v is a JSON string that is also a whole C string (no NUL inside; jansson
 * refuses \u0000 without JSON_ALLOW_NUL, so this guards what the text is kept as). */
static bool whole_string(const json_t *v)
{
	return json_is_string(v) && strlen(json_string_value(v)) == json_string_length(v);
}

/* Entry k of assistant turn i's tool_calls, added to the last turn of c: OpenAI's
 * {"type": "function", "function": {"name", "arguments"}}, or the function object
 * itself (the templates take `tool_call.function` when it is there). */
static int parse_tool_call(struct chat *c, json_t *call, const char *name, size_t i, size_t k)
{
	if (!json_is_object(call))
		return err_set("%s: messages[%zu].tool_calls[%zu]: not an object", name, i, k);
	json_t *f = json_object_get(call, "function");
	const char *at = "";
	if (f && !json_is_null(f)) {
		if (!json_is_object(f))
			return err_set("%s: messages[%zu].tool_calls[%zu].function: not an object",
				       name, i, k);
		if (json_object_size(f) > 0) { /* {%- if tool_call.function %} */
			call = f;
			at = ".function";
		}
	}
	json_t *fname = json_object_get(call, "name");
	if (!whole_string(fname))
		return err_set("%s: messages[%zu].tool_calls[%zu]%s.name: missing or not a string",
			       name, i, k, at);
	json_t *args = json_object_get(call, "arguments");
	if (!args)
		return err_set("%s: messages[%zu].tool_calls[%zu]%s.arguments: missing", name, i, k,
			       at);
	if (json_is_string(args)) {
		if (!whole_string(args))
			return err_set("%s: messages[%zu].tool_calls[%zu]%s.arguments: contains a "
				       "NUL character",
				       name, i, k, at);
		return chat_add_tool_call(c, c->n - 1, json_string_value(fname),
					  json_string_value(args), true);
	}
	char *text = tojson(args, NULL); /* {{- tool_call.arguments | tojson }} */
	int rc = text ? chat_add_tool_call(c, c->n - 1, json_string_value(fname), text, false) : -1;
	free(text);
	return rc;
}

/* Parses one message object; "NAME: messages[I]..." starts every error. */
static int parse_message(struct chat *c, json_t *m, const char *name, size_t i)
{
	if (!json_is_object(m))
		return err_set("%s: messages[%zu]: not an object", name, i);
	json_t *role = json_object_get(m, "role");
	if (!json_is_string(role))
		return err_set("%s: messages[%zu].role: missing or not a string", name, i);
	int r = chat_role_parse(json_string_value(role));
	if (r < 0)
		return err_set("%s: messages[%zu].role: unknown role \"%.64s\" (expected system, "
			       "user, assistant or tool)",
			       name, i, json_string_value(role));
	/* The templates read tool_calls of assistant turns only. */
	json_t *calls = r == CHAT_ASSISTANT ? json_object_get(m, "tool_calls") : NULL;
	if (calls && !json_is_null(calls) && !json_is_array(calls))
		return err_set("%s: messages[%zu].tool_calls: not an array", name, i);
	json_t *content = json_object_get(m, "content");
	/* A turn that only calls tools may have null content or none (OpenAI's forms); the
	 * 2507 templates render it as "", the hybrid one fails on it. */
	if ((!content || json_is_null(content)) && json_array_size(calls) > 0)
		content = NULL;
	else if (!json_is_string(content))
		return err_set("%s: messages[%zu].content: missing or not a string (only plain "
			       "text content is supported)",
			       name, i);
	if (content && !whole_string(content))
		return err_set("%s: messages[%zu].content: contains a NUL character", name, i);
	const char *reasoning = NULL;
	/* The templates read reasoning_content of assistant turns only; elsewhere it is
	 * ignored, as Hugging Face ignores it. */
	json_t *rc = r == CHAT_ASSISTANT ? json_object_get(m, "reasoning_content") : NULL;
	if (rc && !json_is_null(rc)) {
		if (!json_is_string(rc))
			return err_set("%s: messages[%zu].reasoning_content: not a string", name,
				       i);
		if (!whole_string(rc))
			return err_set("%s: messages[%zu].reasoning_content: contains a NUL "
				       "character",
				       name, i);
		reasoning = json_string_value(rc);
	}
	if (chat_add(c, (enum chat_role)r, content ? json_string_value(content) : "", reasoning) <
	    0)
		return err_prefix("%s", name);
	for (size_t k = 0; k < json_array_size(calls); k++)
		if (parse_tool_call(c, json_array_get(calls, k), name, i, k) < 0)
			return -1;
	return 0;
}

/* The "tools" array of a conversation object: each definition kept as its tojson text. */
static int parse_tools(struct chat *c, json_t *tools, const char *name)
{
	if (!tools || json_is_null(tools))
		return 0;
	if (!json_is_array(tools))
		return err_set("%s: tools: not an array", name);
	for (size_t i = 0; i < json_array_size(tools); i++) {
		/* transformers takes each tool as a dict (or a Python function) */
		if (!json_is_object(json_array_get(tools, i)))
			return err_set("%s: tools[%zu]: not an object", name, i);
		char *text = tojson(json_array_get(tools, i), NULL);
		int rc = text ? chat_add_tool(c, text) : -1;
		free(text);
		if (rc < 0)
			return -1;
	}
	return 0;
}

const struct jlim chat_json_limits = {.max_depth = CHAT_MAX_DEPTH, .max_values = CHAT_MAX_VALUES};

struct chat *chat_from_json(const char *text, size_t len, const char *name)
{
	if (jlim_check(text, len, &chat_json_limits, name))
		return NULL;
	json_error_t jerr;
	json_t *root = json_loadb(text, len, JSON_DECODE_ANY, &jerr);
	if (!root) {
		err_set("%s: invalid JSON at line %d, column %d: %s", name, jerr.line, jerr.column,
			jsontype_error(&jerr));
		return NULL;
	}
	struct chat *c = chat_from_value(root, name);
	json_decref(root);
	return c;
}

struct chat *chat_from_value(json_t *root, const char *name)
{
	json_t *msgs = root, *tools = NULL, *meta = NULL;
	if (json_is_object(root)) {
		tools = json_object_get(root, "tools");
		msgs = json_object_get(root, "messages");
		meta = json_object_get(root, "qwenchat");
	}
	if (meta && !json_is_object(meta)) {
		err_set("%s: qwenchat: not an object", name);
		return NULL;
	}
	if (!json_is_array(msgs)) {
		err_set("%s: expected a JSON array of messages (or an object with a \"messages\" "
			"array)",
			name);
		return NULL;
	}
	struct chat *c = chat_new();
	char *meta_text = meta ? json_dumps(meta, JSON_COMPACT | JSON_PRESERVE_ORDER) : NULL;
	if (c && (parse_tools(c, tools, name) < 0 || (meta && !meta_text) ||
		  (meta_text && chat_set_meta(c, meta_text) < 0))) {
		if (meta && !meta_text)
			err_set("out of memory");
		chat_free(c);
		c = NULL;
	}
	free(meta_text);
	for (size_t i = 0; c && i < json_array_size(msgs); i++) {
		if (parse_message(c, json_array_get(msgs, i), name, i) < 0) {
			chat_free(c);
			c = NULL;
		}
	}
	return c;
}

struct chat *chat_load(const char *path)
{
	size_t len;
	char *text = fio_read_all(path, CHAT_MAX_FILE, &len);
	if (!text)
		return NULL;
	struct chat *c = chat_from_json(text, len, strcmp(path, "-") == 0 ? "stdin" : path);
	free(text);
	return c;
}

static json_t *turn_json(const struct chat_turn *t)
{
	json_t *o = json_object();
	if (!o)
		return NULL;
	int bad = json_object_set_new(o, "role", json_string(chat_role_name(t->role)));
	bad |= json_object_set_new(o, "content", json_string(t->content));
	if (t->role == CHAT_ASSISTANT && t->reasoning)
		bad |= json_object_set_new(o, "reasoning_content", json_string(t->reasoning));
	if (t->untrained)
		bad |= json_object_set_new(o, "weight", json_integer(0));
	if (t->n_calls) {
		json_t *calls = json_array();
		bad |= json_object_set_new(o, "tool_calls", calls);
		for (size_t k = 0; !bad && k < t->n_calls; k++) {
			const struct chat_tool_call *tc = &t->calls[k];
			json_t *f = json_object(), *call = json_object();
			bad |= json_array_append_new(calls, call);
			bad |= json_object_set_new(call, "type", json_string("function"));
			bad |= json_object_set_new(call, "function", f);
			bad |= json_object_set_new(f, "name", json_string(tc->name));
			bad |= json_object_set_new(
				f, "arguments",
				tc->arguments_is_text
					? json_string(tc->arguments)
					: json_loads(tc->arguments, JSON_DECODE_ANY, NULL));
		}
	}
	if (bad) {
		json_decref(o);
		return NULL;
	}
	return o;
}

char *chat_to_json(const struct chat *c, size_t *len)
{
	json_t *arr = json_array(), *root = arr;
	for (size_t i = 0; arr && i < c->n; i++) {
		if (json_array_append_new(arr, turn_json(&c->turns[i])) < 0) {
			json_decref(arr);
			arr = root = NULL;
		}
	}
	if (arr && (c->n_tools || c->meta)) { /* {"messages": [...], "tools": [...], ...} */
		json_t *tools = c->n_tools ? json_array() : NULL;
		root = json_object();
		int bad = json_object_set_new(root, "messages", arr);
		if (tools)
			bad |= json_object_set_new(root, "tools", tools);
		if (c->meta)
			bad |= json_object_set_new(root, "qwenchat", json_loads(c->meta, 0, NULL));
		for (size_t i = 0; !bad && i < c->n_tools; i++)
			bad |= json_array_append_new(
				tools, json_loads(c->tools[i], JSON_DECODE_ANY, NULL));
		if (bad) {
			json_decref(root);
			root = NULL;
		}
	}
	char *s = root ? json_dumps(root, JSON_INDENT(2) | JSON_PRESERVE_ORDER) : NULL;
	json_decref(root);
	if (!s) {
		err_set("out of memory");
		return NULL;
	}
	size_t n = strlen(s);
	char *out = realloc(s, n + 2);
	if (!out) {
		free(s);
		err_set("out of memory");
		return NULL;
	}
	out[n] = '\n';
	out[n + 1] = '\0';
	if (len)
		*len = n + 1;
	return out;
}

int chat_save(const struct chat *c, const char *path, bool overwrite_any)
{
	if (!overwrite_any && fio_is_file(path)) {
		struct chat *old = chat_load(path);
		if (!old) {
			char why[ERR_MAX]; /* err_set must not read the buffer it writes */
			snprintf(why, sizeof why, "%s", err_msg());
			return err_set("%s: not overwritten: the existing file is not a "
				       "conversation (%s)",
				       path, why);
		}
		chat_free(old);
	}
	size_t len;
	char *text = chat_to_json(c, &len);
	if (!text)
		return err_prefix("%s", path);
	int rc = fio_write_atomic(path, text, len, 0600, 0);
	free(text);
	return rc;
}
