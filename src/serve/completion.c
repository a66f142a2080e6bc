/* completion.c — an answer's text, stop strings, tool calls and log-probabilities,
 * and the chat.completion / chat.completion.chunk JSON built from them, or a text
 * completion's choice and text_completion chunks. */
#include "src/serve/completion.h"

#include <jansson.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "src/base/err.h"
#include "src/base/utf8.h"
#include "src/chat/toolcall.h"
#include "src/serve/openai.h"

struct part {
	struct strbuf text;
	size_t sent; /* bytes of text already streamed */
};

struct completion {
	struct completion_options o;
	struct part part[2]; /* by enum sess_part */
	bool stopped;        /* a stop string ended the text: o.stop[stop_index] */
	size_t stop_index;
	int32_t stop_id; /* or this stop token id, the tokenizer's eos excepted (-1: none) */
	bool role_sent;
	size_t tool_at;  /* where "<tool_call>" starts in the answer, or SIZE_MAX */
	json_t *pending; /* log-probability entries not streamed yet (streaming) */
	json_t *all;     /* every entry, for the final object (not streaming) */
	/* text: the legacy logprobs object not streamed yet (all of it, not streaming),
	 * the characters its tokens spelled so far (text_offset), the echo's sending */
	json_t *legacy;
	size_t chars;
	bool echo_sent;
	bool args_open; /* a forced call's id and name were streamed */
	struct completion_usage now; /* o.continuous_usage: the usage so far */
};

/* {"tokens": [], "token_logprobs": [], "top_logprobs": [], "text_offset": []} */
static json_t *legacy_new(void)
{
	return json_pack("{s:[], s:[], s:[], s:[]}", "tokens", "token_logprobs", "top_logprobs",
			 "text_offset");
}

static const char *const part_key[2] = {
	[SESS_REASONING] = "reasoning_content", [SESS_ANSWER] = "content"};

struct completion *completion_new(const struct completion_options *o)
{
	struct completion *c = calloc(1, sizeof *c);
	if (!c) {
		err_set("out of memory");
		return NULL;
	}
	c->o = *o;
	c->tool_at = SIZE_MAX;
	c->stop_id = -1;
	c->pending = json_array();
	c->all = json_array();
	c->legacy = legacy_new();
	if (!c->pending || !c->all || !c->legacy) {
		completion_free(c);
		err_set("out of memory");
		return NULL;
	}
	return c;
}

void completion_free(struct completion *c)
{
	if (!c)
		return;
	free(c->part[0].text.p);
	free(c->part[1].text.p);
	json_decref(c->pending);
	json_decref(c->all);
	json_decref(c->legacy);
	free(c);
}

int completion_add_text(struct completion *c, enum sess_part part, const char *text, size_t len,
			bool stops)
{
	if (c->stopped)
		return 1;
	struct strbuf *b = &c->part[part].text;
	size_t old = b->n;
	sb_put(b, text, len);
	if (b->oom || !b->p)
		return b->oom;
	/* the earliest stop string that ends in the new text */
	size_t cut = SIZE_MAX, end = 0;
	for (size_t i = 0; i < c->o.n_stop && stops; i++) {
		size_t L = strlen(c->o.stop[i]), from = old >= L ? old - L + 1 : 0;
		const char *m = memmem(b->p + from, b->n - from, c->o.stop[i], L);
		if (m && (size_t)(m - b->p) < cut)
			cut = (size_t)(m - b->p), end = cut + L, c->stop_index = i;
	}
	if (cut != SIZE_MAX && c->o.include_stop)
		cut = end;
	if (cut != SIZE_MAX) {
		b->n = cut;
		b->p[cut] = '\0';
		c->stopped = true;
	}
	if (part == SESS_ANSWER && c->o.parse_tools && c->tool_at == SIZE_MAX) {
		size_t L = sizeof TOOLCALL_OPEN - 1, from = old >= L ? old - L + 1 : 0;
		const char *m = memmem(b->p + from, b->n - from, TOOLCALL_OPEN, L);
		if (m)
			c->tool_at = (size_t)(m - b->p);
	}
	return c->stopped;
}

void completion_set_stop_id(struct completion *c, int32_t id)
{
	c->stop_id = id;
}

/* vLLM's stop_reason: the stop string or token id that ended the answer; null when
 * none did (the end of turn, the length). A new reference, NULL out of memory. */
static json_t *stop_reason(const struct completion *c)
{
	if (c->stopped)
		return json_string(c->o.stop[c->stop_index]);
	return c->stop_id >= 0 ? json_integer(c->stop_id) : json_null();
}

/* The longest k < strlen(pat), k <= n, for which the last k bytes of s[0..n) are the
 * first k of pat: text that may yet become pat. */
static size_t partial(const char *s, size_t n, const char *pat, size_t floor)
{
	size_t L = strlen(pat);
	for (size_t k = L - 1 < n ? L - 1 : n; k > floor; k--)
		if (memcmp(s + n - k, pat, k) == 0)
			return k;
	return floor;
}

/* How far a part's text can be sent: everything at the end, else all but a tail that
 * may still become a stop string or the start of a tool call; never the tool calls. */
static size_t ready(const struct completion *c, enum sess_part part, bool final, size_t tools)
{
	const struct part *p = &c->part[part];
	size_t n = p->text.n, hold = 0;
	if (n == p->sent) /* nothing new (no text yet: text.p is NULL) */
		return p->sent;
	if (!final && !c->stopped) {
		for (size_t i = 0; i < c->o.n_stop; i++)
			hold = partial(p->text.p + p->sent, n - p->sent, c->o.stop[i], hold);
		if (part == SESS_ANSWER && c->o.parse_tools)
			hold = partial(p->text.p + p->sent, n - p->sent, TOOLCALL_OPEN, hold);
	}
	size_t limit = n - hold;
	if (part == SESS_ANSWER && limit > tools)
		limit = tools;
	return limit > p->sent ? limit : p->sent;
}

/* A JSON string of text that should be UTF-8 (a token stream's last bytes may be
 * part of a character): invalid bytes are written as \xHH. */
static json_t *text_json(const char *s, size_t n)
{
	json_t *v = json_stringn(s, n);
	if (v)
		return v;
	struct strbuf b = {0};
	oai_put_text(&b, s, n);
	v = b.oom ? NULL : json_stringn(b.p ? b.p : "", b.n);
	free(b.p);
	return v;
}

static json_t *token_json(const struct completion_token *t)
{
	json_t *bytes = json_array();
	for (size_t i = 0; i < t->len; i++)
		json_array_append_new(bytes, json_integer((unsigned char)t->bytes[i]));
	/* -9999 is what OpenAI reports for a token with no probability at all */
	double lp = isfinite(t->logprob) ? t->logprob : -9999.0;
	return json_pack("{s:o, s:f, s:o}", "token", text_json(t->bytes, t->len), "logprob", lp,
			 "bytes", bytes);
}

/* A token's log-probability: a number, or null for none. */
static json_t *logprob_json(double lp)
{
	if (isnan(lp))
		return json_null();
	return json_real(isfinite(lp) ? lp : -9999.0); /* OpenAI's "no probability at all" */
}

/* A token's text as the legacy lists give it: its bytes with each ill-formed
 * sequence (part of a character the next token ends) as U+FFFD, as Hugging Face
 * decodes one token; *chars (when not NULL) gets its length in characters. */
static json_t *piece_json(const char *s, size_t n, size_t *chars)
{
	size_t tn, k = 0;
	char *t = utf8_dup_replaced(s, n, &tn);
	if (!t)
		return NULL;
	for (size_t i = 0; i < tn; i++) /* well-formed now: count the lead bytes */
		k += ((unsigned char)t[i] & 0xc0) != 0x80;
	if (chars)
		*chars = k;
	json_t *v = json_stringn(t, tn);
	free(t);
	return v;
}

/* The legacy entry: the token, its log-probability, its top list (a token -> logprob
 * object holding the token too) and where its text starts: as vLLM counts it, after
 * the characters of the tokens before (the text's own offsets unless a character
 * was cut between two tokens). */
static int add_legacy(struct completion *c, const struct completion_token *token,
		      const struct completion_token *top, int n)
{
	json_t *tops = isnan(token->logprob) ? json_null() : json_object();
	for (int i = -1; i < n && json_is_object(tops); i++) {
		const struct completion_token *t = i < 0 ? token : &top[i];
		json_t *key = piece_json(t->bytes, t->len, NULL);
		if (key)
			json_object_set_new(tops, json_string_value(key), logprob_json(t->logprob));
		json_decref(key);
	}
	size_t chars = 0;
	json_t *l = c->legacy;
	int rc = json_array_append_new(json_object_get(l, "tokens"),
				       piece_json(token->bytes, token->len, &chars)) |
		 json_array_append_new(json_object_get(l, "token_logprobs"),
				       logprob_json(token->logprob)) |
		 json_array_append_new(json_object_get(l, "top_logprobs"), tops) |
		 json_array_append_new(json_object_get(l, "text_offset"),
				       json_integer((json_int_t)c->chars));
	c->chars += chars;
	return rc ? err_set("out of memory") : 0;
}

int completion_add_token(struct completion *c, const struct completion_token *token,
			 const struct completion_token *top, int n)
{
	if (!c->o.logprobs)
		return 0;
	if (c->o.text)
		return add_legacy(c, token, top, n);
	json_t *entry = token_json(token), *tops = json_array();
	for (int i = 0; i < n; i++)
		json_array_append_new(tops, token_json(&top[i]));
	/* a stream sends each entry once and forgets it: only the final object of an
	 * answer not streamed needs them all (about 20 KB a token with 20 alternatives) */
	json_t *list = c->o.stream ? c->pending : c->all;
	if (!entry || json_object_set_new(entry, "top_logprobs", tops) ||
	    json_array_append_new(list, entry))
		return err_set("out of memory");
	return 0;
}

/* Appends root (stolen) as one server-sent event; NULL (out of memory) marks out. */
static void put_event(json_t *root, struct strbuf *out)
{
	char *text = root ? json_dumps(root, JSON_COMPACT) : NULL;
	if (text)
		oai_sse(out, text);
	else
		out->oom = true;
	free(text);
	json_decref(root);
}

/* The choice's "logprobs": the entries given (stolen), or null when not asked for. */
static json_t *logprobs_json(const struct completion *c, json_t *entries)
{
	if (!c->o.logprobs) {
		json_decref(entries);
		return json_null();
	}
	return json_pack("{s:o}", "content", entries);
}

void completion_set_usage(struct completion *c, const struct completion_usage *u)
{
	c->now = *u;
}

/* A chunk's "usage" where the stream carries it: null, or the usage so far (vLLM's
 * continuous_usage_stats). */
static void put_usage(const struct completion *c, json_t *root)
{
	if (root && c->o.include_usage)
		json_object_set_new(root, "usage",
				    c->o.continuous_usage ? completion_usage_json(&c->now)
							  : json_null());
}

/* Appends one chunk event holding delta (stolen), the pending log-probabilities and
 * finish_reason (NULL: null). */
static void put_chunk(struct completion *c, json_t *delta, const char *finish, struct strbuf *out)
{
	json_t *lp = NULL;
	if (c->o.logprobs && json_array_size(c->pending)) {
		lp = logprobs_json(c, c->pending);
		c->pending = json_array();
	}
	json_t *root = json_pack(
		"{s:s, s:s, s:I, s:s, s:[{s:i, s:o, s:o, s:s?, s:o*}]}", "id", c->o.id, "object",
		"chat.completion.chunk", "created", (json_int_t)c->o.created, "model", c->o.model,
		"choices", "index", c->o.index, "delta", delta, "logprobs", lp ? lp : json_null(),
		"finish_reason", finish, "stop_reason", finish ? stop_reason(c) : NULL);
	put_usage(c, root);
	put_event(root, out);
}

/* Appends one text_completion chunk: text (stolen), the pending legacy logprobs and
 * finish_reason (NULL: null). */
static void put_text_chunk(struct completion *c, json_t *text, const char *finish,
			   struct strbuf *out)
{
	json_t *lp = json_null();
	if (c->o.logprobs) {
		lp = c->legacy;
		c->legacy = legacy_new();
	}
	json_t *root = json_pack("{s:s, s:s, s:I, s:s, s:[{s:i, s:o, s:o, s:s?, s:o}]}", "id",
				 c->o.id, "object", "text_completion", "created",
				 (json_int_t)c->o.created, "model", c->o.model, "choices", "index",
				 c->o.index, "text", text, "logprobs", lp, "finish_reason", finish,
				 "stop_reason", finish ? stop_reason(c) : json_null());
	put_usage(c, root);
	if (!c->legacy) { /* out of memory for the next chunk's lists */
		json_decref(root);
		root = NULL;
	}
	put_event(root, out);
}

/* A text completion's stream: the echo first, then the answer as it can be sent. */
static void stream_plain(struct completion *c, bool final, struct strbuf *out)
{
	if (!c->echo_sent && c->o.echo) {
		put_text_chunk(c, text_json(c->o.echo, c->o.echo_len), NULL, out);
		c->echo_sent = true;
	}
	struct part *p = &c->part[SESS_ANSWER];
	size_t limit = ready(c, SESS_ANSWER, final, SIZE_MAX);
	if (limit == p->sent)
		return;
	put_text_chunk(c, text_json(p->text.p + p->sent, limit - p->sent), NULL, out);
	p->sent = limit;
}

static void stream_text(struct completion *c, bool final, size_t tools, struct strbuf *out)
{
	if (c->o.text) {
		stream_plain(c, final, out);
		return;
	}
	if (!c->role_sent) {
		put_chunk(c, json_pack("{s:s, s:s}", "role", "assistant", "content", ""), NULL,
			  out);
		c->role_sent = true;
	}
	for (int k = 0; k < 2; k++) {
		enum sess_part part = k == 0 ? SESS_REASONING : SESS_ANSWER;
		struct part *p = &c->part[part];
		size_t limit = ready(c, part, final, tools);
		if (limit == p->sent)
			continue;
		json_t *delta = json_object(),
		       *text = text_json(p->text.p + p->sent, limit - p->sent);
		if (part == SESS_REASONING) /* the newer name too (below) */
			json_object_set(delta, "reasoning", text);
		json_object_set_new(delta, part_key[part], text);
		put_chunk(c, delta, NULL, out);
		p->sent = limit;
	}
}

/* Call i's id: unique within the response (the choice's index past the first). */
static void call_id(const struct completion *c, size_t i, char *id, size_t size)
{
	const char *dash = strchr(c->o.id, '-');
	if (c->o.index)
		snprintf(id, size, "call_%.60s_%d_%zu", dash ? dash + 1 : c->o.id, c->o.index, i);
	else
		snprintf(id, size, "call_%.60s_%zu", dash ? dash + 1 : c->o.id, i);
}

static bool is_blank(char c)
{
	return c == ' ' || c == '\t' || c == '\r' || c == '\n';
}

/* A forced call's arguments as the answer brings them, as OpenAI streams them: the
 * call's id and name with the first piece, then each piece. The blanks around the
 * JSON are not sent (trailing ones are held until more than blanks follow). */
static void stream_arguments(struct completion *c, bool final, struct strbuf *out)
{
	struct part *p = &c->part[SESS_ANSWER];
	const char *t = p->text.p;
	size_t limit = ready(c, SESS_ANSWER, final, SIZE_MAX);
	while (!c->args_open && p->sent < limit && is_blank(t[p->sent]))
		p->sent++;
	while (limit > p->sent && is_blank(t[limit - 1]))
		limit--;
	if (limit == p->sent && (c->args_open || !final))
		return;
	json_t *call = json_pack("{s:i, s:{s:o}}", "index", 0, "function", "arguments",
				 text_json(t ? t + p->sent : "", limit - p->sent));
	if (call && !c->args_open) {
		char id[112];
		call_id(c, 0, id, sizeof id);
		json_object_set_new(call, "id", json_string(id));
		json_object_set_new(call, "type", json_string("function"));
		json_object_set_new(json_object_get(call, "function"), "name",
				    json_string(c->o.forced_tool));
	}
	put_chunk(c, json_pack("{s:[o]}", "tool_calls", call), NULL, out);
	p->sent = limit, c->args_open = true;
}

void completion_stream(struct completion *c, struct strbuf *out)
{
	stream_text(c, false, c->o.forced_tool || c->o.forced_pick ? 0 : c->tool_at, out);
	if (c->o.forced_tool && !c->o.text)
		stream_arguments(c, false, out);
}

/* The tool calls as OpenAI writes them; with the chunk's "index" when streaming. */
static json_t *calls_json(const struct completion *c, const struct toolcall_set *set)
{
	json_t *calls = json_array();
	for (size_t i = 0; i < set->n; i++) {
		char id[112];
		call_id(c, i, id, sizeof id);
		json_t *call = json_pack("{s:s, s:s, s:{s:s, s:s}}", "id", id, "type", "function",
					 "function", "name", set->calls[i].name, "arguments",
					 set->calls[i].arguments);
		if (call && c->o.stream)
			json_object_set_new(call, "index", json_integer((json_int_t)i));
		json_array_append_new(calls, call);
	}
	return calls;
}

json_t *completion_usage_json(const struct completion_usage *u)
{
	return json_pack("{s:i, s:i, s:i, s:{s:i}}", "prompt_tokens", u->prompt,
			 "completion_tokens", u->completion, "total_tokens",
			 u->prompt + u->completion, "prompt_tokens_details", "cached_tokens",
			 u->cached);
}

/* A chat.completion choice: {"index", "message", "logprobs", "finish_reason",
 * "stop_reason"}. */
static json_t *chat_choice(struct completion *c, const struct toolcall_set *set, const char *finish)
{
	const struct strbuf *a = &c->part[SESS_ANSWER].text, *r = &c->part[SESS_REASONING].text;
	size_t n = set->n ? set->content_len : a->n;
	json_t *msg = json_pack("{s:s}", "role", "assistant");
	json_object_set_new(msg, "content",
			    n || !set->n ? text_json(a->p ? a->p : "", n) : json_null());
	if (r->n) { /* SGLang's and DeepSeek's name, and newer vLLM's: clients read either */
		json_t *text = text_json(r->p, r->n);
		json_object_set(msg, "reasoning", text);
		json_object_set_new(msg, "reasoning_content", text);
	}
	if (set->n)
		json_object_set_new(msg, "tool_calls", calls_json(c, set));
	json_t *lp = logprobs_json(c, json_incref(c->all));
	return json_pack("{s:i, s:o, s:o, s:s, s:o}", "index", c->o.index, "message", msg,
			 "logprobs", lp, "finish_reason", finish, "stop_reason", stop_reason(c));
}

/* The answer that "required" among several tools held to {"name", "arguments"}: the
 * call, read as the block <tool_call> ANSWER </tool_call> is read. An answer cut short
 * is no call: its text is the content, and the reason "length". */
static const char *picked_call(const struct strbuf *a, enum completion_end why,
			       struct toolcall_set *set)
{
	struct strbuf block = {0};
	sb_puts(&block, "<tool_call>\n");
	sb_put(&block, a->p ? a->p : "", a->n);
	sb_puts(&block, "\n</tool_call>");
	if (block.oom) {
		free(block.p);
		return NULL;
	}
	int r = toolcall_parse(block.p, block.n, set);
	free(block.p);
	if (r < 0)
		return NULL;
	set->content_len = set->n ? 0 : a->n;
	return set->n ? "stop" : why == COMPLETION_LENGTH ? "length" : "stop";
}

/* The answer's tool calls into *set (none unless they are parsed and one began); the
 * finish_reason they make of why. NULL when out of memory. */
static const char *tool_calls(struct completion *c, enum completion_end why,
			      struct toolcall_set *set)
{
	const struct strbuf *a = &c->part[SESS_ANSWER].text;
	if (c->o.forced_tool) { /* the answer is the call's arguments: "stop", as OpenAI's */
		size_t from = 0, to = a->n;
		while (from < to && is_blank(a->p[from]))
			from++;
		while (to > from && is_blank(a->p[to - 1]))
			to--;
		set->calls = calloc(1, sizeof *set->calls);
		if (!set->calls || !(set->calls[0].name = strdup(c->o.forced_tool)) ||
		    !(set->calls[0].arguments = strndup(a->p ? a->p + from : "", to - from))) {
			set->n = set->calls ? 1 : 0;
			return NULL;
		}
		set->n = 1, set->content_len = 0;
		return why == COMPLETION_LENGTH ? "length" : "stop";
	}
	if (c->o.forced_pick) /* a call as a <tool_call> block holds it */
		return picked_call(a, why, set);
	if (c->o.parse_tools && c->tool_at != SIZE_MAX && toolcall_parse(a->p, a->n, set) < 0)
		return NULL;
	return set->n ? "tool_calls" : why == COMPLETION_LENGTH ? "length" : "stop";
}

json_t *completion_choice(struct completion *c, enum completion_end why)
{
	if (!c->o.text) {
		struct toolcall_set set = {0};
		const char *finish = tool_calls(c, why, &set);
		json_t *choice = finish ? chat_choice(c, &set, finish) : NULL;
		toolcall_set_free(&set);
		return choice;
	}
	const struct strbuf *a = &c->part[SESS_ANSWER].text;
	struct strbuf t = {0};
	sb_put(&t, c->o.echo ? c->o.echo : "", c->o.echo ? c->o.echo_len : 0);
	sb_put(&t, a->p ? a->p : "", a->n);
	json_t *text = t.oom ? NULL : text_json(t.p ? t.p : "", t.n);
	free(t.p);
	json_t *lp = c->o.logprobs ? json_incref(c->legacy) : json_null();
	return json_pack("{s:i, s:o, s:o, s:s, s:o}", "index", c->o.index, "text", text, "logprobs",
			 lp, "finish_reason", why == COMPLETION_LENGTH ? "length" : "stop",
			 "stop_reason", stop_reason(c));
}

void completion_stream_end(const struct completion_options *o, const struct completion_usage *u,
			   struct strbuf *out)
{
	if (o->include_usage)
		put_event(json_pack("{s:s, s:s, s:I, s:s, s:[], s:o}", "id", o->id, "object",
				    o->text ? "text_completion" : "chat.completion.chunk",
				    "created", (json_int_t)o->created, "model", o->model, "choices",
				    "usage", completion_usage_json(u)),
			  out);
	oai_sse(out, "[DONE]");
}

void completion_finish(struct completion *c, enum completion_end why, struct strbuf *out)
{
	if (c->o.text) {
		stream_plain(c, true, out);
		put_text_chunk(c, json_string(""), why == COMPLETION_LENGTH ? "length" : "stop",
			       out);
		return;
	}
	struct toolcall_set set = {0};
	const char *finish = tool_calls(c, why, &set);
	if (!finish) {
		out->oom = true;
		return;
	}
	/* a block that did not parse as a call is content after all */
	stream_text(c, true, set.n ? set.content_len : SIZE_MAX, out);
	if (c->o.forced_tool) /* its arguments went as they came */
		stream_arguments(c, true, out);
	else if (set.n)
		put_chunk(c, json_pack("{s:o}", "tool_calls", calls_json(c, &set)), NULL, out);
	put_chunk(c, json_object(), finish, out);
	toolcall_set_free(&set);
}
