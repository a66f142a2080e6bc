/* reply.c — a streamed chat-completions answer from its chunks (see reply.h). The
 * shapes follow what the servers send: vLLM and SGLang open with a chunk holding
 * {"role": "assistant", "content": ""}, stream "reasoning_content" deltas when run
 * with a reasoning parser (newer vLLM and ollama name it "reasoning"), then "content"
 * deltas, tool calls as {"index", "id", "function": {"name", "arguments"}} pieces, a
 * chunk with finish_reason, a last chunk with "choices": [] and "usage" when
 * stream_options.include_usage is set, and "data: [DONE]". SGLang writes null for the
 * fields a chunk does not carry; errors mid-stream come as {"error": {...}}. */
#include "src/remote/reply.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <utf8proc.h>

#include "src/base/array.h"
#include "src/base/clock.h"
#include "src/base/err.h"
#include "src/base/jsonlimit.h"
#include "src/base/jsontype.h"

void reply_init(struct reply *r, sess_emit_fn emit, void *user)
{
	memset(r, 0, sizeof *r);
	sess_router_init(&r->out, emit, user);
	r->prompt_tokens = r->completion_tokens = r->cached_tokens = -1;
}

void reply_free(struct reply *r)
{
	for (size_t i = 0; i < r->n_calls; i++) {
		free(r->calls[i].id.p);
		free(r->calls[i].name.p);
		free(r->calls[i].arguments.p);
	}
	free(r->calls);
	r->calls = NULL;
	r->n_calls = r->cap_calls = 0;
}

void reply_oneline(char *out, size_t sz, const char *s, size_t n)
{
	if (sz < 8) {
		if (sz)
			out[0] = '\0';
		return;
	}
	size_t k = 0, max = sz - 1 < REPLY_MAX_MESSAGE ? sz - 1 : REPLY_MAX_MESSAGE;
	while (n && (*s == ' ' || *s == '\n' || *s == '\r' || *s == '\t'))
		s++, n--;
	while (n) {
		utf8proc_int32_t cp;
		utf8proc_ssize_t len = utf8proc_iterate((const utf8proc_uint8_t *)s,
							(utf8proc_ssize_t)(n < 4 ? n : 4), &cp);
		size_t take = len > 0 ? (size_t)len : 1;
		if (k + take > (take < n ? max - 3 : max)) { /* keep room for "..." */
			memcpy(out + k, "...", 3);
			k += 3;
			break;
		}
		if (len <= 0)
			out[k++] = '?';
		else if (cp < 0x20 || cp == 0x7f || (cp >= 0x80 && cp < 0xa0))
			out[k++] = ' ';
		else
			memcpy(out + k, s, take), k += take;
		s += take;
		n -= take;
	}
	while (k && out[k - 1] == ' ')
		k--;
	out[k] = '\0';
}

void reply_stats(const struct reply *r, double start, struct sess_stats *st)
{
	int gen = r->completion_tokens >= 0 ? r->completion_tokens : (int)r->deltas;
	st->generated = gen;
	if (r->deltas) {
		st->ttft = r->first_delta_at - start;
		st->decode_seconds = r->last_delta_at - r->first_delta_at;
		st->decode_tps =
			gen > 1 && st->decode_seconds > 0 ? (gen - 1) / st->decode_seconds : 0;
	}
	if (r->prompt_tokens >= 0) {
		int cached = r->cached_tokens > 0 && r->cached_tokens <= r->prompt_tokens
				     ? r->cached_tokens
				     : 0;
		st->reused = cached;
		st->prefilled = r->prompt_tokens - cached;
		st->prefill_seconds = st->ttft;
		st->prefill_tps = st->ttft > 0 ? st->prefilled / st->ttft : 0;
	}
}

/* ---- text routing --------------------------------------------------------- */

/* Text of a part; a NUL (JSON's \u0000) becomes U+FFFD, as the conversation keeps
 * NUL-terminated strings. */
static void put(struct reply *r, enum sess_part part, const char *s, size_t n)
{
	if (part != r->out.part)
		sess_router_switch(&r->out, part);
	for (size_t i = 0; part == SESS_ANSWER && !r->answered && i < n; i++)
		r->answered = !strchr(" \t\r\n", s[i]);
	while (n) {
		const char *z = memchr(s, '\0', n);
		size_t k = z ? (size_t)(z - s) : n;
		if (k)
			sess_route(&r->out, s, k);
		if (!z)
			break;
		sess_route(&r->out, "\xef\xbf\xbd", 3);
		s += k + 1;
		n -= k + 1;
	}
}

static const char think_open[] = "<think>", think_close[] = "</think>";

/* The length of the longest end of s[0..n) that begins a tag. */
static size_t tag_prefix_at_end(const char *s, size_t n)
{
	for (size_t k = n < sizeof think_close - 1 ? n : sizeof think_close - 2; k > 0; k--) {
		const char *t = s + n - k;
		if ((k < sizeof think_open - 1 && !memcmp(t, think_open, k)) ||
		    !memcmp(t, think_close, k))
			return k;
	}
	return 0;
}

/* Whether the tag at t (o: the next <think>, else </think>) switches the part: a
 * <think> before any answer text or other reasoning, and the </think> that closes it. */
static bool tag_switches(const struct reply *r, bool opens)
{
	if (opens)
		return !r->think_open && !r->think_closed && !r->answered && !r->server_reasons;
	return r->think_open;
}

/* Content text: a <think> block before the answer goes to the reasoning, as the
 * session routes those tokens; other tags are text. A possible start of a tag at the
 * end waits for the next delta. */
static int content(struct reply *r, const char *s, size_t n)
{
	char *joined = NULL;
	if (r->tag_n) { /* rare: only after a delta that ended in "<", "</th", ... */
		joined = malloc(r->tag_n + n);
		if (!joined)
			return err_set("out of memory");
		memcpy(joined, r->tag, r->tag_n);
		memcpy(joined + r->tag_n, s, n);
		s = joined;
		n += r->tag_n;
		r->tag_n = 0;
	}
	while (n) {
		const char *o = memmem(s, n, think_open, sizeof think_open - 1);
		const char *c = memmem(s, n, think_close, sizeof think_close - 1);
		const char *t = o && (!c || o < c) ? o : c;
		enum sess_part part = r->think_open ? SESS_REASONING : SESS_ANSWER;
		if (!t) {
			size_t hold = tag_prefix_at_end(s, n);
			if (n - hold)
				put(r, part, s, n - hold);
			memcpy(r->tag, s + n - hold, hold);
			r->tag_n = hold;
			break;
		}
		if (t > s)
			put(r, part, s, (size_t)(t - s));
		size_t tl = t == o ? sizeof think_open - 1 : sizeof think_close - 1;
		if (tag_switches(r, t == o)) {
			r->think_open = t == o;
			r->think_closed |= t != o;
			/* The tag switches the part even when nothing follows it yet. */
			put(r, r->think_open ? SESS_REASONING : SESS_ANSWER, "", 0);
		} else {
			put(r, part, t, tl);
		}
		n -= (size_t)(t - s) + tl;
		s = t + tl;
	}
	free(joined);
	return 0;
}

/* Text held back as a possible start of a tag that no delta completed. */
static void flush_tag(struct reply *r)
{
	size_t n = r->tag_n;
	r->tag_n = 0;
	if (n)
		put(r, r->think_open ? SESS_REASONING : SESS_ANSWER, r->tag, n);
}

/* ---- the events ------------------------------------------------------------ */

static int wrong_type(const struct reply *r, const char *where, const char *key, const json_t *v,
		      const char *want)
{
	return err_set("event %zu: %s%s%s is %s, not %s", r->events, where, *where ? "." : "", key,
		       jsontype_name(v), want);
}

/* obj[key] as a string: *s and *n, or *s NULL when it is absent or null. */
static int get_string(const struct reply *r, const json_t *obj, const char *key, const char *where,
		      const char **s, size_t *n)
{
	json_t *v = json_object_get(obj, key);
	*s = NULL;
	*n = 0;
	if (!v || json_is_null(v))
		return 0;
	if (!json_is_string(v))
		return wrong_type(r, where, key, v, "a string");
	*s = json_string_value(v);
	*n = json_string_length(v);
	return 0;
}

/* obj[key] as a token count into *out (left alone when absent or null). */
static int get_count(const struct reply *r, const json_t *obj, const char *key, const char *where,
		     int *out)
{
	json_t *v = json_object_get(obj, key);
	if (!v || json_is_null(v))
		return 0;
	if (!json_is_integer(v))
		return wrong_type(r, where, key, v, "a whole number");
	json_int_t x = json_integer_value(v);
	if (x < 0 || x > REPLY_MAX_TOKENS)
		return err_set("event %zu: %s.%s = %lld is out of range [0, %d]", r->events, where,
			       key, (long long)x, REPLY_MAX_TOKENS);
	*out = (int)x;
	return 0;
}

static int usage(struct reply *r, const json_t *u)
{
	if (!json_is_object(u))
		return wrong_type(r, "", "usage", u, "an object");
	if (get_count(r, u, "prompt_tokens", "usage", &r->prompt_tokens) ||
	    get_count(r, u, "completion_tokens", "usage", &r->completion_tokens))
		return -1;
	json_t *d = json_object_get(u, "prompt_tokens_details");
	if (!d || json_is_null(d))
		return 0;
	if (!json_is_object(d))
		return wrong_type(r, "usage", "prompt_tokens_details", d, "an object");
	return get_count(r, d, "cached_tokens", "usage.prompt_tokens_details", &r->cached_tokens);
}

/* Appends to one part of a call, within its bound. */
static int call_put(struct reply *r, struct strbuf *b, const char *s, size_t n, size_t max,
		    const char *what, size_t index)
{
	if (b->n + n > max)
		return err_set("event %zu: tool call %zu's %s is longer than %zu bytes", r->events,
			       index, what, max);
	if ((r->bytes += n) > REPLY_MAX_TEXT)
		return err_set("event %zu: the answer passed %d MiB", r->events,
			       REPLY_MAX_TEXT >> 20);
	if (memchr(s, '\0', n))
		return err_set("event %zu: tool call %zu's %s holds a NUL character", r->events,
			       index, what);
	sb_put(b, s, n);
	return b->oom ? err_set("out of memory") : 0;
}

/* One element of a delta's "tool_calls": a piece of the call at its "index". */
static int call_delta(struct reply *r, const json_t *d, size_t k)
{
	char where[64];
	snprintf(where, sizeof where, "tool_calls[%zu]", k);
	if (!json_is_object(d))
		return err_set("event %zu: %s is %s, not an object", r->events, where,
			       jsontype_name(d));
	json_t *iv = json_object_get(d, "index");
	size_t index = r->n_calls ? r->n_calls - 1 : 0; /* no index: the call being built */
	if (iv && !json_is_null(iv)) {
		if (!json_is_integer(iv))
			return wrong_type(r, where, "index", iv, "a whole number");
		if (json_integer_value(iv) < 0 || json_integer_value(iv) >= REPLY_MAX_CALLS)
			return err_set("event %zu: %s.index = %lld: at most %d tool calls",
				       r->events, where, (long long)json_integer_value(iv),
				       REPLY_MAX_CALLS);
		index = (size_t)json_integer_value(iv);
	}
	const char *id, *name = NULL, *args = NULL;
	size_t id_n, name_n = 0, args_n = 0;
	if (get_string(r, d, "id", where, &id, &id_n))
		return -1;
	if (!iv && id && r->n_calls && r->calls[index].id.n && id_n &&
	    (r->calls[index].id.n != id_n || memcmp(r->calls[index].id.p, id, id_n)))
		index = r->n_calls; /* no index, a new id: the next call */
	json_t *f = json_object_get(d, "function");
	if (f && !json_is_null(f)) {
		snprintf(where + strlen(where), sizeof where - strlen(where), ".function");
		if (!json_is_object(f))
			return err_set("event %zu: %s is %s, not an object", r->events, where,
				       jsontype_name(f));
		if (get_string(r, f, "name", where, &name, &name_n) ||
		    get_string(r, f, "arguments", where, &args, &args_n))
			return -1;
	}
	if (index >= REPLY_MAX_CALLS)
		return err_set("event %zu: more than %d tool calls", r->events, REPLY_MAX_CALLS);
	if (index >= r->n_calls) {
		if (arr_reserve(&r->calls, &r->cap_calls, index + 1, sizeof *r->calls))
			return -1;
		memset(r->calls + r->n_calls, 0, (index + 1 - r->n_calls) * sizeof *r->calls);
		r->n_calls = index + 1;
	}
	struct reply_call *c = &r->calls[index];
	if (id && !c->id.n && call_put(r, &c->id, id, id_n, REPLY_MAX_CALL_NAME, "id", index))
		return -1;
	if (name && call_put(r, &c->name, name, name_n, REPLY_MAX_CALL_NAME, "name", index))
		return -1;
	if (args &&
	    call_put(r, &c->arguments, args, args_n, REPLY_MAX_CALL_ARGS, "arguments", index))
		return -1;
	return 0;
}

static void set_finish(struct reply *r, const char *s, size_t n)
{
	reply_oneline(r->finish_reason, sizeof r->finish_reason, s, n);
	r->finish = !strcmp(r->finish_reason, "stop")         ? REPLY_STOP
		    : !strcmp(r->finish_reason, "length")     ? REPLY_LENGTH
		    : !strcmp(r->finish_reason, "tool_calls") ? REPLY_TOOL_CALLS
							      : REPLY_OTHER;
}

/* One element of "choices": its delta's text and calls, its finish_reason. */
static int choice(struct reply *r, const json_t *ch, size_t i)
{
	char where[48];
	snprintf(where, sizeof where, "choices[%zu]", i);
	if (!json_is_object(ch))
		return err_set("event %zu: %s is %s, not an object", r->events, where,
			       jsontype_name(ch));
	json_t *iv = json_object_get(ch, "index");
	if (iv && json_is_integer(iv) && json_integer_value(iv) != 0)
		return 0; /* another choice: only one (n = 1) was asked for */
	const char *reason, *think, *text, *fin;
	size_t reason_n, think_n, text_n, fin_n;
	json_t *d = json_object_get(ch, "delta");
	if (get_string(r, ch, "finish_reason", where, &fin, &fin_n))
		return -1;
	if (d && !json_is_null(d)) {
		snprintf(where + strlen(where), sizeof where - strlen(where), ".delta");
		if (!json_is_object(d))
			return err_set("event %zu: %s is %s, not an object", r->events, where,
				       jsontype_name(d));
		if (get_string(r, d, "reasoning_content", where, &reason, &reason_n) ||
		    get_string(r, d, "reasoning", where, &think, &think_n) ||
		    get_string(r, d, "content", where, &text, &text_n))
			return -1;
		json_t *calls = json_object_get(d, "tool_calls");
		if (calls && !json_is_null(calls) && !json_is_array(calls))
			return wrong_type(r, where, "tool_calls", calls, "an array");
		if (!reason) /* vLLM sends one of the two names, never both */
			reason = think, reason_n = think_n;
		bool any = reason_n || text_n || json_array_size(calls);
		r->bytes += reason_n + text_n;
		if (r->bytes > REPLY_MAX_TEXT)
			return err_set("event %zu: the answer passed %d MiB", r->events,
				       REPLY_MAX_TEXT >> 20);
		if (any && r->max_deltas && r->deltas >= (size_t)r->max_deltas) {
			set_finish(r, "length", 6);
			r->done = true;
			return REPLY_DONE;
		}
		if (any) {
			double now = clock_now();
			if (!r->deltas)
				r->first_delta_at = now;
			r->last_delta_at = now;
			r->deltas++;
		}
		if (reason_n) {
			flush_tag(r); /* a server that parses reasoning: nothing to hold */
			r->server_reasons = true;
			put(r, SESS_REASONING, reason, reason_n);
		}
		if (text_n && content(r, text, text_n))
			return -1;
		for (size_t k = 0; k < json_array_size(calls); k++)
			if (call_delta(r, json_array_get(calls, k), k))
				return -1;
	}
	if (fin)
		set_finish(r, fin, fin_n);
	return 0;
}

/* The server's message in an error object (or string), quoted on one line. */
static int server_error(const struct reply *r, const json_t *e, const char *data, size_t len)
{
	char msg[REPLY_MAX_MESSAGE + 8];
	const json_t *m = json_is_object(e) ? json_object_get(e, "message") : e;
	if (json_is_string(m))
		reply_oneline(msg, sizeof msg, json_string_value(m), json_string_length(m));
	else
		reply_oneline(msg, sizeof msg, data, len);
	return err_set("the server reported an error in event %zu: %s", r->events,
		       msg[0] ? msg : "(no message)");
}

int reply_event(struct reply *r, const char *name, const char *data, size_t len)
{
	r->events++;
	size_t n = len;
	while (n && (data[n - 1] == ' ' || data[n - 1] == '\n'))
		n--;
	if (n == 6 && !memcmp(data, "[DONE]", 6)) {
		r->done = true;
		return REPLY_DONE;
	}
	/* an event is one chunk of an answer: bounded before jansson builds it (4 MiB
	 * of "{}," made 320 MB of objects) */
	static const struct jlim lim = {.max_depth = 64, .max_values = 1 << 16};
	char what[40];
	snprintf(what, sizeof what, "event %zu", r->events);
	if (jlim_check(data, len, &lim, what))
		return -1;
	json_error_t je;
	json_t *root = json_loadb(data, len, JSON_ALLOW_NUL | JSON_DECODE_ANY, &je);
	if (!strcmp(name, "error")) { /* {"error": {...}}, {"message": ...} or text */
		json_t *e = json_object_get(root, "error");
		int rc = server_error(r, e ? e : root, data, len);
		json_decref(root);
		return rc;
	}
	if (!root)
		return err_set("event %zu is not valid JSON: %s (at byte %d)", r->events, je.text,
			       je.position);
	int rc = 0;
	json_t *e = json_object_get(root, "error"), *o = json_object_get(root, "object");
	json_t *choices = json_object_get(root, "choices"), *u = json_object_get(root, "usage");
	if (!json_is_object(root))
		rc = err_set("event %zu is %s, not a JSON object", r->events, jsontype_name(root));
	else if ((e && !json_is_null(e)) ||
		 (json_is_string(o) && !strcmp(json_string_value(o), "error")))
		rc = server_error(r, e && !json_is_null(e) ? e : root, data, len);
	else if (choices && !json_is_null(choices) && !json_is_array(choices))
		rc = wrong_type(r, "", "choices", choices, "an array");
	for (size_t i = 0; !rc && i < json_array_size(choices); i++)
		rc = choice(r, json_array_get(choices, i), i);
	if (!rc && u && !json_is_null(u))
		rc = usage(r, u);
	json_decref(root);
	return rc;
}

void reply_flush(struct reply *r)
{
	flush_tag(r);
}

int reply_end(struct reply *r)
{
	flush_tag(r);
	/* calls are kept by the index the server gave them: an index it skipped (calls
	 * 0..2 never sent, 3 sent) leaves an entry nothing came for, dropped here */
	size_t k = 0;
	for (size_t i = 0; i < r->n_calls; i++) {
		struct reply_call *c = &r->calls[i];
		if (!c->id.n && !c->name.n && !c->arguments.n) {
			free(c->id.p);
			free(c->name.p);
			free(c->arguments.p);
			continue;
		}
		r->calls[k++] = *c;
	}
	r->n_calls = k;
	for (size_t i = 0; i < r->n_calls; i++)
		if (!r->calls[i].name.n)
			return err_set("tool call %zu came without a function name", i);
	return 0;
}
