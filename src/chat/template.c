/* template.c — the Qwen3 chat templates (hybrid, Instruct-2507, Thinking-2507) and a
 * ChatML fallback, written out in C. Each branch below mirrors a line of the official
 * jinja text; the comments quote it so the two can be compared side by side. */
#include "src/chat/template.h"
#include "src/base/err.h"
#include "src/base/strbuf.h"
#include "src/base/utf8.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* t with each two-character escape \n as the newline it stands for. */
static char *newlines(const char *t)
{
	char *c = malloc(strlen(t) + 1), *o = c;
	for (; c && *t; t++)
		if (t[0] == '\\' && t[1] == 'n')
			*o++ = '\n', t++;
		else
			*o++ = *t;
	if (c)
		*o = 0;
	return c;
}

/* The Qwen3 template c is (escapes read), by the markers each variant has. */
static enum tmpl_variant variant_of(const char *c)
{
	bool qwen = strstr(c, "'<|im_start|>system\n' + messages[0].content + '<|im_end|>\n'") &&
		    strstr(c, "<tool_response>") && !strstr(c, "You are Qwen");
	bool history = strstr(c, "last_query_index") && strstr(c, "reasoning_content");
	bool switch_off = strstr(c, "enable_thinking") && strstr(c, "'<think>\n\n</think>\n\n'");
	bool opens = strstr(c, "'<|im_start|>assistant\n<think>\n'") != NULL;
	if (qwen && history && switch_off && !opens)
		return TMPL_QWEN3;
	if (qwen && history && opens && !switch_off)
		return TMPL_QWEN3_THINKING;
	if (qwen && !strstr(c, "<think>") && strstr(c, "'<|im_start|>assistant\n' }}") &&
	    strstr(c, "'<|im_start|>' + message.role + '\n' + content }}"))
		return TMPL_QWEN3_INSTRUCT;
	return TMPL_CHATML;
}

/* FNV-1a over n bytes: to tell Qwen's own texts from edited copies, not a secret. */
static uint64_t fnv1a(const char *s, size_t n, uint64_t h)
{
	for (size_t i = 0; i < n; i++)
		h = (h ^ (unsigned char)s[i]) * 0x100000001b3ULL;
	return h;
}

/* Whether c (escapes read) is Qwen's own text of variant v, line ends (CRLF) and
 * white space at its end aside. The hashes are of the chat_template of Qwen/Qwen3-*
 * (hybrid), Qwen3-*-Instruct-2507 and Qwen3-*-Thinking-2507 (tests/unit/test_template.c
 * checks them against tests/golden/template-config-*.json), and of the hybrid with its
 * default flipped to no thinking ("enable_thinking is not defined or ..."), which
 * tmpl_absent_think follows. */
static bool is_qwens_own(const char *c, enum tmpl_variant v)
{
	static const struct {
		enum tmpl_variant v;
		uint64_t h;
	} own[] = {
		{TMPL_QWEN3, 0xabb815b933a4981aULL},
		{TMPL_QWEN3, 0xd26f27eb58b6d8dfULL},
		{TMPL_QWEN3_INSTRUCT, 0xe62b0eb869d628c3ULL},
		{TMPL_QWEN3_THINKING, 0xf12683db822f0eddULL},
	};
	size_t n = strlen(c);
	while (n && strchr(" \t\r\n", c[n - 1]))
		n--;
	uint64_t h = 0xcbf29ce484222325ULL;
	for (size_t i = 0; i < n;) { /* CRLF as LF */
		size_t k = i;
		while (k < n && !(c[k] == '\r' && k + 1 < n && c[k + 1] == '\n'))
			k++;
		h = fnv1a(c + i, k - i, h);
		i = k < n ? k + 1 : n;
	}
	for (size_t i = 0; i < sizeof own / sizeof *own; i++)
		if (own[i].v == v && own[i].h == h)
			return true;
	return false;
}

/* What is said of a copy of a known template with edits: the rendering is Qwen's. */
static const char *edited_warning(enum tmpl_variant v)
{
	switch (v) {
	case TMPL_QWEN3:
		return "the chat template is an edited or older copy of the Qwen3 template: "
		       "qwenchat renders Qwen's own (what the edits change is not followed)";
	case TMPL_QWEN3_INSTRUCT:
		return "the chat template is an edited or older copy of the Qwen3 Instruct-2507 "
		       "template: qwenchat renders Qwen's own (what the edits change is not "
		       "followed)";
	case TMPL_QWEN3_THINKING:
		return "the chat template is an edited or older copy of the Qwen3 Thinking-2507 "
		       "template: qwenchat renders Qwen's own (what the edits change is not "
		       "followed)";
	case TMPL_CHATML: break;
	}
	return NULL;
}

enum tmpl_variant tmpl_detect(const char *t, const char **warning)
{
	if (warning)
		*warning = NULL;
	if (!t || !*t) {
		if (warning && t)
			*warning = "the model's chat template is empty; using plain ChatML";
		else if (warning)
			*warning = "the model has no chat template (tokenizer_config.json's "
				   "chat_template, a GGUF's tokenizer.chat_template); using plain "
				   "ChatML";
		return TMPL_CHATML;
	}
	/* Markers are jinja source text, whose string literals hold a newline as the escape
	 * "\n" (Qwen's files) or as itself (templates written from Python strings, as
	 * Unsloth's): the escapes are read as newlines first. */
	char *c = newlines(t);
	if (!c) {
		if (warning)
			*warning = "out of memory reading the chat template; using plain ChatML";
		return TMPL_CHATML;
	}
	enum tmpl_variant v = variant_of(c);
	bool own = v != TMPL_CHATML && is_qwens_own(c, v);
	free(c);
	if (v != TMPL_CHATML) {
		if (!own && warning)
			*warning = edited_warning(v);
		return v;
	}
	if (warning)
		*warning = "chat_template is not a known Qwen3 template; using plain ChatML";
	return TMPL_CHATML;
}

const char *tmpl_variant_name(enum tmpl_variant v)
{
	switch (v) {
	case TMPL_QWEN3: return "qwen3";
	case TMPL_QWEN3_INSTRUCT: return "qwen3-instruct-2507";
	case TMPL_QWEN3_THINKING: return "qwen3-thinking-2507";
	case TMPL_CHATML: break;
	}
	return "chatml";
}

int tmpl_absent_think(const char *t)
{
	return t && strstr(t, "enable_thinking is not defined or enable_thinking is false")
		       ? TMPL_THINK_OFF
		       : TMPL_THINK_ABSENT;
}

bool tmpl_has_think_switch(enum tmpl_variant v)
{
	return v == TMPL_QWEN3;
}

bool tmpl_prompt_opens_think(enum tmpl_variant v, int enable_thinking)
{
	(void)enable_thinking; /* Thinking-2507 ignores it; the hybrid never opens the block */
	return v == TMPL_QWEN3_THINKING;
}

/* A byte range of a turn's text; Python's str methods on it below. */
struct span {
	const char *p;
	size_t n;
};

static struct span lstrip_nl(struct span s) /* s.lstrip('\n') */
{
	while (s.n > 0 && s.p[0] == '\n') {
		s.p++;
		s.n--;
	}
	return s;
}

static struct span rstrip_nl(struct span s) /* s.rstrip('\n') */
{
	while (s.n > 0 && s.p[s.n - 1] == '\n')
		s.n--;
	return s;
}

static const char *find_last(struct span s, const char *needle)
{
	size_t k = strlen(needle);
	const char *last = NULL, *p = s.p, *end = s.p + s.n;
	while ((p = memmem(p, (size_t)(end - p), needle, k)) != NULL) {
		last = p;
		p += 1;
	}
	return last;
}

static bool starts_with(const char *s, const char *prefix)
{
	return strncmp(s, prefix, strlen(prefix)) == 0;
}

static bool ends_with(const char *s, const char *suffix)
{
	size_t n = strlen(s), k = strlen(suffix);
	return n >= k && memcmp(s + n - k, suffix, k) == 0;
}

/* The rendered text, and where the messages' own text lies in it: the template's
 * markers around it are control tokens, what a message says may be literal text. */
struct out {
	struct strbuf sb;
	struct tmpl_spans *msg; /* NULL: not asked for */
	struct tmpl_spans *ans; /* the answers; NULL: not asked for */
};

static void out_puts(struct out *o, const char *s)
{
	sb_puts(&o->sb, s);
}

static void span_add(struct tmpl_spans *m, size_t start, size_t end)
{
	if (m->n == m->cap) {
		size_t cap = m->cap ? 2 * m->cap : 16;
		struct tmpl_span *v = realloc(m->v, cap * sizeof *v);
		if (!v) {
			m->oom = true;
			return;
		}
		m->v = v, m->cap = cap;
	}
	m->v[m->n++] = (struct tmpl_span){start, end};
}

/* Text taken from a message (content, reasoning, tool call arguments, tool output). */
static void out_msg(struct out *o, const char *s, size_t n)
{
	size_t start = o->sb.n;
	sb_put(&o->sb, s, n);
	if (!o->msg || n == 0)
		return;
	struct tmpl_spans *m = o->msg;
	if (m->n && m->v[m->n - 1].end == start) /* adjacent: one span */
		m->v[m->n - 1].end = start + n;
	else
		span_add(m, start, start + n);
}

/* An assistant turn: "<|im_start|>assistant\n", then what the model writes for it
 * (out_answer_start up to here ... out_answer_end after its "<|im_end|>"), then the
 * newline the template puts between turns. */
static void out_answer_start(struct out *o)
{
	out_puts(o, "<|im_start|>assistant\n");
	if (o->ans)
		span_add(o->ans, o->sb.n, o->sb.n);
}

static void out_answer_end(struct out *o)
{
	out_puts(o, "<|im_end|>");
	if (o->ans && o->ans->n)
		o->ans->v[o->ans->n - 1].end = o->sb.n;
	out_puts(o, "\n");
}

static void out_msgs(struct out *o, const char *s)
{
	out_msg(o, s, strlen(s));
}

/* {%- for message in messages[::-1] %} ... ns.last_query_index: the last user turn
 * that is not a bare <tool_response>...</tool_response>; len - 1 when there is none. */
static size_t last_query_index(const struct chat *c)
{
	for (size_t i = c->n; i-- > 0;) {
		const char *s = c->turns[i].content;
		if (c->turns[i].role == CHAT_USER &&
		    !(starts_with(s, "<tool_response>") && ends_with(s, "</tool_response>")))
			return i;
	}
	return c->n - 1;
}

/* {%- if message.tool_calls %}{%- for tool_call in message.tool_calls %} ...: each
 * call as a <tool_call> block, on a line of its own after any content. */
static void tool_calls(struct out *o, const struct chat_turn *t, bool has_content)
{
	for (size_t k = 0; k < t->n_calls; k++) {
		/* {%- if (loop.first and content) or (not loop.first) %} */
		if (k > 0 || has_content)
			out_puts(o, "\n");
		out_puts(o, "<tool_call>\n{\"name\": \"");
		out_msgs(o, t->calls[k].name);
		out_puts(o, "\", \"arguments\": ");
		out_msgs(o, t->calls[k].arguments); /* the string, or `arguments | tojson` */
		out_puts(o, "}\n</tool_call>");
	}
}

bool tmpl_split_think(const char *content, size_t *r_off, size_t *r_len, size_t *a_off)
{
	/* reasoning = content.split('</think>')[0].rstrip('\n').split('<think>')[-1].lstrip('\n')
	 * content = content.split('</think>')[-1].lstrip('\n') */
	struct span c = {content, strlen(content)};
	const char *first_close = memmem(c.p, c.n, "</think>", 8);
	if (!first_close)
		return false;
	const char *last_close = find_last(c, "</think>");
	struct span head = rstrip_nl((struct span){c.p, (size_t)(first_close - c.p)});
	const char *open = find_last(head, "<think>");
	if (open)
		head = (struct span){open + 7, (size_t)(head.p + head.n - (open + 7))};
	head = lstrip_nl(head);
	const char *tail = last_close + 8;
	struct span rest = lstrip_nl((struct span){tail, (size_t)(c.p + c.n - tail)});
	*r_off = (size_t)(head.p - content), *r_len = head.n, *a_off = (size_t)(rest.p - content);
	return true;
}

/* The assistant branch of the hybrid and Thinking-2507 templates. */
static void assistant_with_reasoning(struct out *o, const struct chat_turn *t, bool after_query,
				     bool last)
{
	struct span content = {t->content, strlen(t->content)};
	struct span reasoning = {"", 0};
	if (t->reasoning) {
		/* {%- if message.reasoning_content is string %} */
		reasoning = (struct span){t->reasoning, strlen(t->reasoning)};
	} else {
		size_t r_off, r_len, a_off;
		if (tmpl_split_think(t->content, &r_off, &r_len, &a_off)) {
			reasoning = (struct span){t->content + r_off, r_len};
			content = (struct span){t->content + a_off, content.n - a_off};
		}
	}
	/* {%- if loop.index0 > ns.last_query_index %}
	 *   {%- if loop.last or (not loop.last and reasoning_content) %} */
	bool has_content = content.n > 0; /* the tool calls test `content`, unstripped */
	out_answer_start(o);
	if (after_query && (last || reasoning.n > 0)) {
		out_puts(o, "<think>\n");
		reasoning = rstrip_nl(lstrip_nl(reasoning)); /* reasoning_content.strip('\n') */
		out_msg(o, reasoning.p, reasoning.n);
		out_puts(o, "\n</think>\n\n");
		content = lstrip_nl(content);
	}
	out_msg(o, content.p, content.n);
	tool_calls(o, t, has_content);
	out_answer_end(o);
}

/* {%- elif message.role == "tool" %}: consecutive tool turns share one user turn. */
static void tool_turn(struct out *o, const struct chat *c, size_t i)
{
	if (i == 0 || c->turns[i - 1].role != CHAT_TOOL)
		out_puts(o, "<|im_start|>user");
	out_puts(o, "\n<tool_response>\n");
	out_msgs(o, c->turns[i].content);
	out_puts(o, "\n</tool_response>");
	if (i + 1 == c->n || c->turns[i + 1].role != CHAT_TOOL)
		out_puts(o, "<|im_end|>\n");
}

/* {%- if tools %}: the system turn lists the tool definitions after the system
 * prompt (if any) and says how to call them. */
static void tools_system(struct out *o, const struct chat *c)
{
	out_puts(o, "<|im_start|>system\n");
	if (c->turns[0].role == CHAT_SYSTEM) {
		out_msgs(o, c->turns[0].content);
		out_puts(o, "\n\n");
	}
	out_puts(o, "# Tools\n\nYou may call one or more functions to assist with the user query."
		    "\n\nYou are provided with function signatures within <tools></tools> XML tags:"
		    "\n<tools>");
	for (size_t i = 0; i < c->n_tools; i++) {
		out_puts(o, "\n");
		out_msgs(o, c->tools[i]); /* {{- tool | tojson }} */
	}
	out_puts(o, "\n</tools>\n\nFor each function call, return a json object with function "
		    "name and arguments within <tool_call></tool_call> XML tags:\n<tool_call>\n"
		    "{\"name\": <function-name>, \"arguments\": <args-json-object>}\n"
		    "</tool_call><|im_end|>\n");
}

static void render_qwen3(struct out *o, const struct chat *c, enum tmpl_variant v)
{
	/* {%- if messages[0].role == 'system' %} at the top; later system turns inline. */
	if (c->n_tools) {
		tools_system(o, c);
	} else if (c->turns[0].role == CHAT_SYSTEM) {
		out_puts(o, "<|im_start|>system\n");
		out_msgs(o, c->turns[0].content);
		out_puts(o, "<|im_end|>\n");
	}
	size_t lqi = v == TMPL_QWEN3_INSTRUCT ? 0 : last_query_index(c);
	for (size_t i = 0; i < c->n; i++) {
		const struct chat_turn *t = &c->turns[i];
		switch (t->role) {
		case CHAT_SYSTEM: /* (message.role == "system" and not loop.first) */
			if (i == 0)
				break;
			/* fall through */
		case CHAT_USER:
			out_puts(o, "<|im_start|>");
			out_puts(o, chat_role_name(t->role));
			out_puts(o, "\n");
			out_msgs(o, t->content);
			out_puts(o, "<|im_end|>\n");
			break;
		case CHAT_ASSISTANT:
			if (v == TMPL_QWEN3_INSTRUCT) {
				/* Instruct-2507 shows assistant content as it is, reasoning never. */
				out_answer_start(o);
				out_msgs(o, t->content);
				tool_calls(o, t, t->content[0] != '\0');
				out_answer_end(o);
			} else {
				assistant_with_reasoning(o, t, i > lqi, i + 1 == c->n);
			}
			break;
		case CHAT_TOOL: tool_turn(o, c, i); break;
		}
	}
}

/* The common ChatML template: every turn as it is, reasoning dropped. */
static void render_chatml(struct out *o, const struct chat *c)
{
	for (size_t i = 0; i < c->n; i++) {
		if (c->turns[i].role == CHAT_ASSISTANT) {
			out_answer_start(o);
			out_msgs(o, c->turns[i].content);
			out_answer_end(o);
			continue;
		}
		out_puts(o, "<|im_start|>");
		out_puts(o, chat_role_name(c->turns[i].role));
		out_puts(o, "\n");
		out_msgs(o, c->turns[i].content);
		out_puts(o, "<|im_end|>\n");
	}
}

/* The rendering, with the messages' spans and the answers' when asked for. */
static char *render(const struct chat *c, enum tmpl_variant v, bool add_generation_prompt,
		    int enable_thinking, size_t *len, struct tmpl_spans *msg, struct tmpl_spans *ans)
{
	if (c->n == 0) {
		err_set("the conversation has no messages");
		return NULL;
	}
	struct out o = {{0}, msg, ans};
	if (msg)
		msg->n = 0, msg->oom = false;
	if (ans)
		ans->n = 0, ans->oom = false;
	if (v == TMPL_CHATML)
		render_chatml(&o, c);
	else
		render_qwen3(&o, c, v);
	if (add_generation_prompt) {
		out_puts(&o, "<|im_start|>assistant\n");
		if (v == TMPL_QWEN3 && enable_thinking == TMPL_THINK_OFF)
			out_puts(&o, "<think>\n\n</think>\n\n");
		else if (v == TMPL_QWEN3_THINKING)
			out_puts(&o, "<think>\n");
	}
	if (o.sb.oom || !o.sb.p || (msg && msg->oom) ||
	    (ans && ans->oom)) { /* every conversation renders to something */
		free(o.sb.p);
		err_set("out of memory rendering the conversation");
		return NULL;
	}
	if (len)
		*len = o.sb.n;
	return o.sb.p;
}

char *tmpl_render_spans(const struct chat *c, enum tmpl_variant v, bool add_generation_prompt,
			int enable_thinking, size_t *len, struct tmpl_spans *msg)
{
	return render(c, v, add_generation_prompt, enable_thinking, len, msg, NULL);
}

char *tmpl_render_answers(const struct chat *c, enum tmpl_variant v, size_t *len,
			  struct tmpl_spans *msg, struct tmpl_spans *answers)
{
	return render(c, v, false, TMPL_THINK_ABSENT, len, msg, answers);
}

char *tmpl_render(const struct chat *c, enum tmpl_variant v, bool add_generation_prompt,
		  int enable_thinking, size_t *len)
{
	return render(c, v, add_generation_prompt, enable_thinking, len, NULL, NULL);
}

/* Where the last copy of want[0..n) starts in text[0..len), or SIZE_MAX (Python's
 * text.rindex(want); an empty want is found at the very end). */
static size_t last_start(const char *text, size_t len, const char *want, size_t n)
{
	for (size_t i = len >= n ? len - n + 1 : 0; i-- > 0;)
		if (!memcmp(text + i, want, n))
			return i;
	return SIZE_MAX;
}

char *tmpl_render_continue(const struct chat *c, enum tmpl_variant v, int enable_thinking,
			   size_t *len)
{
	size_t n = 0;
	char *text = render(c, v, false, enable_thinking, &n, NULL, NULL);
	if (!text)
		return NULL;
	/* transformers' rule: find the last copy of the content stripped of white space;
	 * keep the content's trailing white space only when the content has no leading
	 * white space and the template wrote it whole there. */
	const char *want = c->turns[c->n - 1].content;
	size_t wn = strlen(want), a, b;
	utf8_strip(want, wn, &a, &b);
	size_t at = last_start(text, n, want + a, b - a), cut;
	if (at == SIZE_MAX) {
		free(text);
		err_set("messages[%zu]: its content is not in the conversation as the chat "
			"template renders it, so it cannot be continued",
			c->n - 1);
		return NULL;
	}
	if (a == 0 && at + wn <= n && !memcmp(text + at, want, wn))
		cut = at + wn;
	else
		cut = at + (b - a);
	text[cut] = '\0';
	if (len)
		*len = cut;
	return text;
}
