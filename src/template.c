/* template.c — the Qwen3 chat templates (hybrid, Instruct-2507, Thinking-2507) and a
 * ChatML fallback, written out in C. Each branch below mirrors a line of the official
 * jinja text; the comments quote it so the two can be compared side by side. */
#include "src/template.h"
#include "src/err.h"

#include <stdlib.h>
#include <string.h>

enum tmpl_variant tmpl_detect(const char *t, const char **warning)
{
	if (warning)
		*warning = NULL;
	if (!t) {
		if (warning)
			*warning = "no chat_template in tokenizer_config.json; using plain ChatML";
		return TMPL_CHATML;
	}
	/* Markers are jinja source text, so "\n" inside a string literal is a backslash and an n. */
	bool qwen = strstr(t, "'<|im_start|>system\\n' + messages[0].content + '<|im_end|>\\n'") &&
		    strstr(t, "<tool_response>") && !strstr(t, "You are Qwen");
	bool history = strstr(t, "last_query_index") && strstr(t, "reasoning_content");
	bool switch_off = strstr(t, "enable_thinking") && strstr(t, "'<think>\\n\\n</think>\\n\\n'");
	bool opens = strstr(t, "'<|im_start|>assistant\\n<think>\\n'") != NULL;
	if (qwen && history && switch_off && !opens)
		return TMPL_QWEN3;
	if (qwen && history && opens && !switch_off)
		return TMPL_QWEN3_THINKING;
	if (qwen && !strstr(t, "<think>") && strstr(t, "'<|im_start|>assistant\\n' }}") &&
	    strstr(t, "'<|im_start|>' + message.role + '\\n' + content }}"))
		return TMPL_QWEN3_INSTRUCT;
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

bool tmpl_has_think_switch(enum tmpl_variant v)
{
	return v == TMPL_QWEN3;
}

bool tmpl_prompt_opens_think(enum tmpl_variant v, int enable_thinking)
{
	(void)enable_thinking;  /* Thinking-2507 ignores it; the hybrid never opens the block */
	return v == TMPL_QWEN3_THINKING;
}

/* A growing output string; a failed allocation is remembered and reported once. */
struct out {
	char *p;
	size_t n, cap;
	bool oom;
};

static void put(struct out *o, const char *s, size_t n)
{
	if (o->oom || n == 0)
		return;
	if (o->n + n + 1 > o->cap) {
		size_t cap = o->cap ? o->cap : 256;
		while (cap < o->n + n + 1)
			cap *= 2;
		char *p = realloc(o->p, cap);
		if (!p) {
			o->oom = true;
			return;
		}
		o->p = p;
		o->cap = cap;
	}
	memcpy(o->p + o->n, s, n);
	o->n += n;
	o->p[o->n] = '\0';
}

static void puts_(struct out *o, const char *s)
{
	put(o, s, strlen(s));
}

/* A byte range of a turn's text; Python's str methods on it below. */
struct span {
	const char *p;
	size_t n;
};

static struct span lstrip_nl(struct span s)  /* s.lstrip('\n') */
{
	while (s.n > 0 && s.p[0] == '\n') {
		s.p++;
		s.n--;
	}
	return s;
}

static struct span rstrip_nl(struct span s)  /* s.rstrip('\n') */
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

/* The assistant branch of the hybrid and Thinking-2507 templates. */
static void assistant_with_reasoning(struct out *o, const struct chat_turn *t, bool after_query,
				     bool last)
{
	struct span content = {t->content, strlen(t->content)};
	struct span reasoning = {"", 0};
	if (t->reasoning) {
		/* {%- if message.reasoning_content is string %} */
		reasoning = (struct span){t->reasoning, strlen(t->reasoning)};
	} else if (memmem(content.p, content.n, "</think>", 8)) {
		/* reasoning = content.split('</think>')[0].rstrip('\n').split('<think>')[-1].lstrip('\n')
		 * content = content.split('</think>')[-1].lstrip('\n') */
		const char *first_close = memmem(content.p, content.n, "</think>", 8);
		const char *last_close = find_last(content, "</think>");
		struct span head = rstrip_nl((struct span){content.p, (size_t)(first_close - content.p)});
		const char *open = find_last(head, "<think>");
		if (open)
			head = (struct span){open + 7, (size_t)(head.p + head.n - (open + 7))};
		reasoning = lstrip_nl(head);
		const char *tail = last_close + 8;
		content = lstrip_nl((struct span){tail, (size_t)(content.p + content.n - tail)});
	}
	/* {%- if loop.index0 > ns.last_query_index %}
	 *   {%- if loop.last or (not loop.last and reasoning_content) %} */
	if (after_query && (last || reasoning.n > 0)) {
		puts_(o, "<|im_start|>assistant\n<think>\n");
		reasoning = rstrip_nl(lstrip_nl(reasoning));  /* reasoning_content.strip('\n') */
		put(o, reasoning.p, reasoning.n);
		puts_(o, "\n</think>\n\n");
		content = lstrip_nl(content);
	} else {
		puts_(o, "<|im_start|>assistant\n");
	}
	put(o, content.p, content.n);
	puts_(o, "<|im_end|>\n");
}

/* {%- elif message.role == "tool" %}: consecutive tool turns share one user turn. */
static void tool_turn(struct out *o, const struct chat *c, size_t i)
{
	if (i == 0 || c->turns[i - 1].role != CHAT_TOOL)
		puts_(o, "<|im_start|>user");
	puts_(o, "\n<tool_response>\n");
	puts_(o, c->turns[i].content);
	puts_(o, "\n</tool_response>");
	if (i + 1 == c->n || c->turns[i + 1].role != CHAT_TOOL)
		puts_(o, "<|im_end|>\n");
}

static void render_qwen3(struct out *o, const struct chat *c, enum tmpl_variant v)
{
	/* {%- if messages[0].role == 'system' %} at the top; later system turns inline. */
	if (c->turns[0].role == CHAT_SYSTEM) {
		puts_(o, "<|im_start|>system\n");
		puts_(o, c->turns[0].content);
		puts_(o, "<|im_end|>\n");
	}
	size_t lqi = v == TMPL_QWEN3_INSTRUCT ? 0 : last_query_index(c);
	for (size_t i = 0; i < c->n; i++) {
		const struct chat_turn *t = &c->turns[i];
		switch (t->role) {
		case CHAT_SYSTEM:  /* (message.role == "system" and not loop.first) */
			if (i == 0)
				break;
			/* fall through */
		case CHAT_USER:
			puts_(o, "<|im_start|>");
			puts_(o, chat_role_name(t->role));
			puts_(o, "\n");
			puts_(o, t->content);
			puts_(o, "<|im_end|>\n");
			break;
		case CHAT_ASSISTANT:
			if (v == TMPL_QWEN3_INSTRUCT) {
				/* Instruct-2507 shows assistant content as it is, reasoning never. */
				puts_(o, "<|im_start|>assistant\n");
				puts_(o, t->content);
				puts_(o, "<|im_end|>\n");
			} else {
				assistant_with_reasoning(o, t, i > lqi, i + 1 == c->n);
			}
			break;
		case CHAT_TOOL:
			tool_turn(o, c, i);
			break;
		}
	}
}

/* The common ChatML template: every turn as it is, reasoning dropped. */
static void render_chatml(struct out *o, const struct chat *c)
{
	for (size_t i = 0; i < c->n; i++) {
		puts_(o, "<|im_start|>");
		puts_(o, chat_role_name(c->turns[i].role));
		puts_(o, "\n");
		puts_(o, c->turns[i].content);
		puts_(o, "<|im_end|>\n");
	}
}

char *tmpl_render(const struct chat *c, enum tmpl_variant v, bool add_generation_prompt,
		  int enable_thinking, size_t *len)
{
	if (c->n == 0) {
		err_set("the conversation has no messages");
		return NULL;
	}
	struct out o = {0};
	if (v == TMPL_CHATML)
		render_chatml(&o, c);
	else
		render_qwen3(&o, c, v);
	if (add_generation_prompt) {
		puts_(&o, "<|im_start|>assistant\n");
		if (v == TMPL_QWEN3 && enable_thinking == TMPL_THINK_OFF)
			puts_(&o, "<think>\n\n</think>\n\n");
		else if (v == TMPL_QWEN3_THINKING)
			puts_(&o, "<think>\n");
	}
	if (o.oom || !o.p) {  /* every non-empty conversation renders to something */
		free(o.p);
		err_set("out of memory rendering the conversation");
		return NULL;
	}
	if (len)
		*len = o.n;
	return o.p;
}
