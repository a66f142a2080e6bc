/* completion.h — one chat-completions answer as it is generated: the reasoning and
 * content text with the stop strings applied, tool calls split off the content, the
 * tokens' log-probabilities; and the JSON the API returns for it, either one
 * chat.completion object at the end or chat.completion.chunk events (server-sent
 * events) while it streams. Knows no HTTP and no engine. */
#ifndef QWENCHAT_COMPLETION_H
#define QWENCHAT_COMPLETION_H

#include <stdbool.h>
#include <stddef.h>

#include "src/base/strbuf.h"
#include "src/session/session.h"

struct completion_options {
	const char *id;    /* "chatcmpl-..."; tool calls are named after it */
	const char *model; /* the "model" of every object */
	long long created; /* Unix time */
	char *const *stop; /* (n_stop) non-empty strings that end the answer */
	size_t n_stop;
	bool parse_tools;   /* split <tool_call> blocks off the content */
	bool logprobs;      /* report each token's log-probability */
	bool stream;        /* chunks as the text comes, else one object at the end */
	bool include_usage; /* stream: a last chunk with the usage */
};

/* Token counts of the "usage" object. */
struct completion_usage {
	int prompt;     /* prompt_tokens */
	int cached;     /* prompt_tokens_details.cached_tokens: reused from the KV cache */
	int completion; /* completion_tokens */
};

/* Why the generation ended (tool calls, when found, say "tool_calls" instead). */
enum completion_end {
	COMPLETION_STOP,   /* end of turn or a stop string: "stop" */
	COMPLETION_LENGTH, /* max_tokens or the context: "length" */
};

/* A token for the log-probabilities: its bytes (maybe part of a character) and
 * natural-log probability. */
struct completion_token {
	const char *bytes;
	size_t len;
	double logprob;
};

struct completion;

/* The strings of o must outlive the completion. NULL when out of memory. */
struct completion *completion_new(const struct completion_options *o);
void completion_free(struct completion *c);

/* Adds generated text to a part (the session's streams). A stop string is looked for
 * in each part's text as it grows: when one appears the part ends before it, later
 * text is ignored and 1 is returned (stop generating); else 0. */
int completion_add_text(struct completion *c, enum sess_part part, const char *text, size_t len);

/* Adds one generated token's log-probability, with the n most likely tokens of its
 * distribution (n may be 0). Ignored unless o->logprobs. 0, or -1 out of memory. */
int completion_add_token(struct completion *c, const struct completion_token *token,
			 const struct completion_token *top, int n);

/* Streaming: appends to out the chunk events for the text that can be sent now (the
 * first call also sends the assistant role). Text that may still become a stop
 * string or a tool call is held back until it is known. */
void completion_stream(struct completion *c, struct strbuf *out);

/* The end of the answer. Streaming: the rest of the text, the tool calls, the chunk
 * with finish_reason, the usage chunk when asked and "data: [DONE]". Otherwise the
 * chat.completion object with usage. Appended to out. */
void completion_finish(struct completion *c, enum completion_end why,
		       const struct completion_usage *u, struct strbuf *out);

#endif
