/* chat.h — a conversation: an optional system prompt and the turns after it, with
 * JSON load/save (the UI's /save, /load and autosave, and `template --messages`). */
#ifndef QWENCHAT_CHAT_H
#define QWENCHAT_CHAT_H

#include <stdbool.h>
#include <stddef.h>

struct json_t; /* jansson's */
struct jlim;   /* src/base/jsonlimit.h */

enum chat_role {
	CHAT_SYSTEM, /* at index 0: the system prompt; elsewhere: a mid-conversation system turn */
	CHAT_USER, /* a user turn; one wrapped in <tool_response>...</tool_response> is not a query */
	CHAT_ASSISTANT, /* a model answer: content and, apart, its reasoning */
	CHAT_TOOL,      /* a tool result ("tool" role); rendered inside a user turn */
};

/* A function call an assistant turn made (an entry of its "tool_calls"). */
struct chat_tool_call {
	char *name;
	/* What the template writes after "arguments": the text itself when the arguments
	 * were given as a JSON string, else their JSON as Python's json.dumps writes it. */
	char *arguments;
	bool arguments_is_text;
};

struct chat_turn {
	enum chat_role role;
	char *content; /* NUL-terminated, valid UTF-8 (never NULL) */
	/* Assistant turns only (NULL for the others): the text of the <think> block.
	 * NULL means "none given": the template then splits a <think>...</think> off
	 * the content itself, as Hugging Face does without reasoning_content.
	 * "" is an empty reasoning, which differs from NULL only in that the content
	 * is then taken as it is. */
	char *reasoning;
	struct chat_tool_call *calls; /* assistant turns only: (n_calls) in order */
	size_t n_calls;
	/* Assistant turns only: "weight": 0 in OpenAI's fine-tuning format, an answer shown
	 * as context that fine-tuning (train --sft) does not train on. */
	bool untrained;
};

/* Read the fields directly; change them only through the functions below. */
struct chat {
	struct chat_turn *
		turns; /* (n) in order; turns[0] is the system prompt when its role is CHAT_SYSTEM */
	size_t n, cap;
	/* The tool definitions the templates list in the system turn, each as Python's
	 * json.dumps writes it (the template's `tool | tojson`). */
	char **tools;
	size_t n_tools;
	/* The file's "qwenchat" object as JSON text, kept as it is (NULL: none): the chat
	 * records there the model and settings a conversation was held with. */
	char *meta;
};

struct chat *chat_new(void);
void chat_free(struct chat *c);
/* A deep copy, or NULL (out of memory). */
struct chat *chat_dup(const struct chat *c);

/* "system", "user", "assistant", "tool"; and back (-1 for an unknown name). */
const char *chat_role_name(enum chat_role r);
int chat_role_parse(const char *name);

/* Appends a turn. reasoning is kept only for CHAT_ASSISTANT (NULL = none, see above).
 * Bytes that are not valid UTF-8 are replaced by U+FFFD, so every conversation can
 * be saved; the text is copied. 0, or -1 (out of memory) with err_set. */
int chat_add(struct chat *c, enum chat_role role, const char *content, const char *reasoning);

/* Appends a function call to assistant turn i (see struct chat_tool_call). 0 or -1. */
int chat_add_tool_call(struct chat *c, size_t i, const char *name, const char *arguments,
		       bool arguments_is_text);
/* Appends a tool definition, given as its tojson text. 0 or -1. */
int chat_add_tool(struct chat *c, const char *json_text);

/* Replaces the "qwenchat" object (JSON text of an object; NULL removes it). 0, or -1
 * (not an object, out of memory) with err_set. */
int chat_set_meta(struct chat *c, const char *json_text);

/* Marks assistant turn i as one fine-tuning does not train on (or does again). */
void chat_set_untrained(struct chat *c, size_t i, bool untrained);
/* Replaces turn i's content and reasoning (same rules as chat_add); its tool calls
 * stay. 0 or -1. */
int chat_set_turn(struct chat *c, size_t i, const char *content, const char *reasoning);

/* The system prompt (turns[0].content when it is a system turn) or NULL. */
const char *chat_system(const struct chat *c);
/* Sets or replaces the system prompt (inserted as turns[0]); NULL removes it. 0 or -1. */
int chat_set_system(struct chat *c, const char *text);

/* Number of turns after the system prompt (what /clear removes). */
size_t chat_count(const struct chat *c);
/* Index of the last turn with this role, or -1 when there is none. */
long chat_last(const struct chat *c, enum chat_role role);
/* Keeps turns [0, n) and frees the rest (n >= c->n: no change). For /undo, /edit,
 * /retry: e.g. chat_truncate(c, chat_last(c, CHAT_USER)) drops the last question
 * and its answer. */
void chat_truncate(struct chat *c, size_t n);
/* Removes turns [i, i + count) (clamped), shifting the later ones down; for
 * dropping the oldest turns when the context is full. */
void chat_remove(struct chat *c, size_t i, size_t count);
/* Removes every turn except the system prompt (/clear). */
void chat_clear(struct chat *c);

/* JSON. The file format is the one of `qwenchat template --messages`: an array of
 * {"role": ..., "content": ...} objects, assistant turns optionally carrying
 * "reasoning_content" (string or null) and "tool_calls" (OpenAI's
 * [{"type": "function", "function": {"name": ..., "arguments": ...}}], or the
 * function objects themselves; content may then be null). An object
 * {"messages": [...], "tools": [...], "qwenchat": {...}} carries tool definitions and
 * the meta object too. Content that is not a string is refused, and a "qwenchat" that
 * is not an object; other keys are ignored. An empty array is a valid, empty
 * conversation. A conversation with tools or meta is written as that object.
 * JSON nested deeper than 64 levels or holding more than 512k values (keys
 * included) is refused before it is parsed, as is a file over 64 MiB (chat_load).
 * name (the file name) starts every error message, e.g.
 * "conv.json: messages[3].role: unknown role \"robot\"". */
struct chat *chat_from_json(const char *text, size_t len, const char *name);
/* The same on a parsed value (root is not taken). */
struct chat *chat_from_value(struct json_t *root, const char *name);
/* The depth and value limits chat_from_json checks before it parses. */
extern const struct jlim chat_json_limits;
/* Reads and parses a file ("-" = stdin). NULL with err_set on any error. */
struct chat *chat_load(const char *path);
/* The JSON text (pretty-printed, ends with a newline), malloc'd; NULL on error. */
char *chat_to_json(const struct chat *c, size_t *len);
/* Writes the conversation atomically (fio_write_atomic: the old file or the new one,
 * never a partial one). An existing file that does not parse as a conversation is
 * refused and left untouched (it may be a corrupt file the user wants to repair);
 * unless overwrite_any. 0 or -1 with err_set. */
int chat_save(const struct chat *c, const char *path, bool overwrite_any);

#endif
