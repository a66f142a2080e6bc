/* completion.h — one chat-completions answer, or one choice of a text completion, as
 * it is generated: the reasoning and content text with the stop strings applied, tool
 * calls split off the content, the tokens' log-probabilities; and the JSON the API
 * returns for it, either one chat.completion object (a text completion's choice) at
 * the end or chat.completion.chunk (text_completion) events, server-sent, while it
 * streams. Knows no HTTP and no engine. */
#ifndef QWENCHAT_COMPLETION_H
#define QWENCHAT_COMPLETION_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "src/base/strbuf.h"
#include "src/session/session.h"

struct completion_options {
	/* A /v1/completions choice: "text_completion" objects, the legacy logprobs
	 * (parallel lists tokens, token_logprobs, top_logprobs, text_offset), one part
	 * (the answer: reasoning is never split off) and no tool calls. */
	bool text;
	int index;        /* the choice's index in "choices" */
	const char *echo; /* text: (echo_len bytes) the prompt, before the answer; or NULL */
	size_t echo_len;
	const char *id;    /* "chatcmpl-..." or "cmpl-..."; tool calls are named after it */
	const char *model; /* the "model" of every object */
	long long created; /* Unix time */
	char *const *stop; /* (n_stop) non-empty strings that end the answer */
	size_t n_stop;
	bool include_stop;  /* the stop string that ends it stays in the text (vLLM's option) */
	bool parse_tools;   /* split <tool_call> blocks off the content */
	const char *forced_tool; /* or the answer is the arguments of a call of this one */
	bool forced_pick;        /* or it is a call {"name", "arguments"} of one of the tools */
	bool logprobs;      /* report each token's log-probability */
	bool stream;        /* chunks as the text comes, else one object at the end */
	bool include_usage; /* stream: a last chunk with the usage */
	bool continuous_usage; /* stream: and every chunk with the usage so far */
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
 * natural-log probability (NaN: none, as for a prompt's first token; text only). */
struct completion_token {
	const char *bytes;
	size_t len;
	double logprob;
};

struct completion;

/* The strings of o must outlive the completion. NULL when out of memory. */
struct completion *completion_new(const struct completion_options *o);
void completion_free(struct completion *c);

/* Adds generated text to a part (the session's streams). Where stops, a stop string
 * is looked for in what the text adds (a match may begin in the text before it): when
 * one appears the part ends before it, later text is ignored and 1 is returned (stop
 * generating); else 0. */
int completion_add_text(struct completion *c, enum sess_part part, const char *text, size_t len,
			bool stops);

/* The answer ended on stop token id, one the request or generation_config.json adds to
 * the tokenizer's eos token: vLLM's stop_reason names it. */
void completion_set_stop_id(struct completion *c, int32_t id);

/* Adds one generated token's log-probability, with the n most likely tokens of its
 * distribution (n may be 0); for a text completion the echoed prompt's tokens come
 * first, and a token's own entry joins its top list (as OpenAI lists up to
 * logprobs + 1). Ignored unless o->logprobs. 0, or -1 out of memory. */
int completion_add_token(struct completion *c, const struct completion_token *token,
			 const struct completion_token *top, int n);

/* The usage so far of this choice (its prompt, the tokens generated), which the chunks
 * carry where o->continuous_usage. */
void completion_set_usage(struct completion *c, const struct completion_usage *u);

/* Streaming: appends to out the chunk events for the text that can be sent now (the
 * first call also sends the assistant role). Text that may still become a stop
 * string or a tool call is held back until it is known. */
void completion_stream(struct completion *c, struct strbuf *out);

/* The end of a streamed answer: the rest of the text, the tool calls and the chunk
 * with finish_reason, appended to out. The caller ends the stream after its last
 * choice (completion_stream_end). */
void completion_finish(struct completion *c, enum completion_end why, struct strbuf *out);

/* The answer as a choice, not streamed (a new reference; NULL out of memory): a
 * chat's {"index", "message", "logprobs", "finish_reason", "stop_reason"}, its tool
 * calls parsed; a text completion's {"index", "text", "logprobs", "finish_reason",
 * "stop_reason"}. The chunk with the finish_reason carries the stop_reason too (every
 * text_completion chunk, null before, as vLLM sends them). */
json_t *completion_choice(struct completion *c, enum completion_end why);

/* The "usage" object. */
json_t *completion_usage_json(const struct completion_usage *u);

/* The end of a stream: the usage chunk when o asks for it, then "data: [DONE]". */
void completion_stream_end(const struct completion_options *o, const struct completion_usage *u,
			   struct strbuf *out);

#endif
