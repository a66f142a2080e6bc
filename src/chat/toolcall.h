/* toolcall.h — function calls in a model's answer: the <tool_call>...</tool_call>
 * blocks the Qwen3 templates ask for, each a JSON object {"name": ..., "arguments":
 * ...}, split from the text around them as vLLM's hermes tool parser splits them. */
#ifndef QWENCHAT_TOOLCALL_H
#define QWENCHAT_TOOLCALL_H

#include <stddef.h>

#include "src/chat/chat.h"

/* The tags around a call (both are single added tokens of the Qwen3 vocabulary). */
#define TOOLCALL_OPEN  "<tool_call>"
#define TOOLCALL_CLOSE "</tool_call>"

/* The calls found in an answer. Each call's arguments are the JSON text Python's
 * json.dumps writes (arguments_is_text false), so that the call renders back into
 * the template byte for byte as it was generated when the model wrote that form. */
struct toolcall_set {
	struct chat_tool_call *calls; /* (n) in order */
	size_t n;
	size_t content_len; /* the answer's own text: text[0..content_len), before the first call */
};

/* Parses an answer. A block runs from <tool_call> to the next </tool_call>, or to the
 * end of the text when none follows (an answer cut short). Returns 1 when the text
 * holds blocks and every one is a JSON object with a string "name" and an
 * "arguments" member; 0 when it holds none, or one that is not such a call: then the
 * whole text is content (set->n 0, content_len len); -1 when out of memory (err_set).
 * set is filled in every case but -1; free it with toolcall_set_free. */
int toolcall_parse(const char *text, size_t len, struct toolcall_set *set);
void toolcall_set_free(struct toolcall_set *set);

#endif
