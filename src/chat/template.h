/* template.h — Qwen3 chat templates rendered in C, byte-identical to Hugging Face's
 * jinja rendering of the official chat_template texts. */
#ifndef QWENCHAT_TEMPLATE_H
#define QWENCHAT_TEMPLATE_H

#include <stdbool.h>
#include <stddef.h>

#include "src/chat/chat.h"

enum tmpl_variant {
	TMPL_CHATML,         /* unknown template: plain ChatML, reasoning dropped */
	TMPL_QWEN3,          /* hybrid Qwen3 (Qwen3-0.6B ... 235B-A22B): enable_thinking switch */
	TMPL_QWEN3_INSTRUCT, /* Qwen3-*-Instruct-2507: never thinks */
	TMPL_QWEN3_THINKING, /* Qwen3-*-Thinking-2507: always thinks; generation prompt opens "<think>\n" */
};

/* enable_thinking as the template sees it: absent (not passed), false or true. */
enum { TMPL_THINK_ABSENT = -1, TMPL_THINK_OFF = 0, TMPL_THINK_ON = 1 };

/* Recognises the variant from tokenizer_config.json's chat_template text (NULL =
 * no template). For anything unknown returns TMPL_CHATML and, when warning is not
 * NULL, sets *warning to a one-line message the caller should show (else NULL). */
enum tmpl_variant tmpl_detect(const char *chat_template, const char **warning);

/* "qwen3", "qwen3-instruct-2507", "qwen3-thinking-2507", "chatml". */
const char *tmpl_variant_name(enum tmpl_variant v);

/* Whether enable_thinking changes anything (only the hybrid template honours it). */
bool tmpl_has_think_switch(enum tmpl_variant v);

/* What enable_thinking a template takes when none is given: TMPL_THINK_OFF for a hybrid
 * template edited to think only when asked (its empty think block opened when
 * "enable_thinking is not defined or enable_thinking is false", as some fine-tunes
 * ship it), else TMPL_THINK_ABSENT (its own default, thinking). */
int tmpl_absent_think(const char *t);
/* Whether, with this enable_thinking, the generation prompt already holds the
 * opening "<think>\n" (Thinking-2507): the model's first tokens are reasoning and
 * only "</think>" is generated. The session's reasoning/answer splitter needs it. */
bool tmpl_prompt_opens_think(enum tmpl_variant v, int enable_thinking);

/* An assistant content without reasoning_content, split as Qwen3's templates split it
 * at </think>: the reasoning (content[r_off, r_off + r_len)) and the answer from
 * a_off. false when content holds no </think>. */
bool tmpl_split_think(const char *content, size_t *r_off, size_t *r_len, size_t *a_off);

/* Renders the conversation to the model's text, as apply_chat_template(messages,
 * tokenize=False, add_generation_prompt=..., [enable_thinking=...]) would. Returns a
 * malloc'd NUL-terminated string of *len bytes (len may be NULL), or NULL with
 * err_set: an empty conversation (the official template fails on it too). */
char *tmpl_render(const struct chat *c, enum tmpl_variant v, bool add_generation_prompt,
		  int enable_thinking, size_t *len);

/* The conversation rendered to continue its last message (vLLM's
 * continue_final_message, Hugging Face's apply_chat_template(continue_final_message=
 * True)): rendered without a generation prompt and cut, as transformers cuts it, just
 * after the last place the final message's content stripped of white space appears
 * (with the content's trailing white space where the template kept it and the content
 * has no leading white space), so that the model goes on writing that message. NULL
 * with err_set when the content does not appear at all (a template that rewrote it). */
char *tmpl_render_continue(const struct chat *c, enum tmpl_variant v, int enable_thinking,
			   size_t *len);

/* Byte ranges [start, end) of the rendered text, in order, that come from the
 * messages (content, reasoning, tool calls and tool output, tool definitions) rather
 * than from the template itself. */
struct tmpl_span {
	size_t start, end;
};
struct tmpl_spans {
	struct tmpl_span *v;
	size_t n, cap;
	bool oom;
};

/* tmpl_render that also fills msg (reset first; free msg->v when done). */
char *tmpl_render_spans(const struct chat *c, enum tmpl_variant v, bool add_generation_prompt,
			int enable_thinking, size_t *len, struct tmpl_spans *msg);

/* The whole conversation rendered (no generation prompt) for training on it, with msg
 * as above and, in answers (reset first; free answers->v), one span per assistant
 * turn in order: from just after its "<|im_start|>assistant\n" through its
 * "<|im_end|>", i.e. what the model writes for that turn as this rendering shows it
 * (with the hybrid template, the reasoning of answers before the last user query is
 * not in it). */
char *tmpl_render_answers(const struct chat *c, enum tmpl_variant v, size_t *len,
			  struct tmpl_spans *msg, struct tmpl_spans *answers);

#endif
