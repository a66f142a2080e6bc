/* reply.h — one streamed chat-completions answer put together from its events: the
 * "chat.completion.chunk" objects of the OpenAI API as vLLM, SGLang, llama-server and
 * ollama send them. Reasoning comes from the "reasoning_content" (or "reasoning")
 * deltas a server's reasoning parser writes, or from <think>...</think> in the content
 * when the server has none; function calls from "tool_calls" deltas; token counts
 * from "usage". The text goes out through the session's emit callback, split and
 * trimmed as the local session splits it, so that a remote answer is saved exactly as
 * a local one would be. Every event is untrusted input: checked field by field. */
#ifndef QWENCHAT_REPLY_H
#define QWENCHAT_REPLY_H

#include <stdbool.h>
#include <stddef.h>

#include "src/base/strbuf.h"
#include "src/session/session.h"

/* Bounds on what one answer may hold. */
enum {
	REPLY_MAX_CALLS = 128,         /* tool calls */
	REPLY_MAX_CALL_NAME = 256,     /* bytes of a function name */
	REPLY_MAX_CALL_ARGS = 1 << 20, /* bytes of one call's arguments */
	REPLY_MAX_TEXT = 64 << 20,     /* bytes of text and calls in one answer: a server
	                                * that never stops cannot fill the memory */
	REPLY_MAX_TOKENS = 1 << 30,    /* a token count above this is refused */
	REPLY_MAX_MESSAGE = 300,       /* bytes of a server's error message shown */
};

/* A function call as its deltas built it. */
struct reply_call {
	struct strbuf id, name, arguments; /* arguments: the JSON text, as sent */
};

/* Why the server ended the answer (finish_reason). */
enum reply_finish {
	REPLY_UNFINISHED, /* no finish_reason yet */
	REPLY_STOP,       /* "stop": end of turn or a stop string */
	REPLY_LENGTH,     /* "length": max_tokens or the context */
	REPLY_TOOL_CALLS, /* "tool_calls" */
	REPLY_OTHER,      /* anything else ("abort", "content_filter", ...) */
};

struct reply {
	struct sess_router out; /* the text into reasoning and answer, as the session does */

	/* What the stream said so far. */
	struct reply_call *calls; /* (n_calls) by their index */
	size_t n_calls, cap_calls;
	int prompt_tokens, completion_tokens, cached_tokens; /* usage; -1 when not given */
	size_t events;                                       /* events read */
	size_t deltas;         /* chunks that carried text or a call */
	size_t bytes;          /* of text and call pieces, against REPLY_MAX_TEXT */
	double first_delta_at; /* clock_now() of the first such chunk; 0 before */
	double last_delta_at;  /* ... and of the last */
	enum reply_finish finish;
	char finish_reason[32]; /* as sent, made printable; "" before */
	bool done;              /* "data: [DONE]" arrived */
	/* Deltas beyond which the server ignored max_tokens (0: no bound): the stream ends
	 * there, finish "length". Not max_tokens itself: a token's text may come in two
	 * deltas (the end of the reasoning and the start of the answer, a held-back tag). */
	int max_deltas;

	/* <think> tags in the content, for servers without a reasoning parser: one block
	 * before the answer, as Qwen3 writes it; tags anywhere else are text. */
	bool think_open;     /* inside a <think> of the content */
	bool think_closed;   /* ... and after its </think> */
	bool answered;       /* answer text other than white space went out */
	bool server_reasons; /* reasoning came as reasoning deltas: tags are text */
	char tag[16];        /* the end of the content, held: it may be the start of a tag */
	size_t tag_n;
};

void reply_init(struct reply *r, sess_emit_fn emit, void *user);
void reply_free(struct reply *r);

enum { REPLY_DONE = 1 };

/* One server-sent event (name and data as sse.h gives them). 0 to go on; REPLY_DONE
 * after "[DONE]"; -1 with err_set ("event 7: ...") when the data is not JSON, a known
 * field has the wrong type or is out of bounds, or the server sent an error (an
 * "error" event, or an object with an "error" member), whose message it quotes. */
int reply_event(struct reply *r, const char *name, const char *data, size_t len);

/* The end of the stream: text held back (a possible start of a tag) goes out.
 * 0, or -1 with err_set when a tool call came without a function name. */
int reply_end(struct reply *r);
/* Only the first half of reply_end, for a stream that broke off. */
void reply_flush(struct reply *r);

/* The answer's figures in the session's terms, start being clock_now() when the
 * request went out: generated (usage's completion_tokens, else the chunks with
 * text), time to first token, decode rate from the first chunk to the last, reused
 * (usage's cached tokens) and prefilled prompt tokens, and their rate over the time to
 * the first token (network and queueing on the server included). stop is left as it
 * was. */
void reply_stats(const struct reply *r, double start, struct sess_stats *st);

/* Copies s[0..n) into out (sz bytes) as one printable line of at most
 * REPLY_MAX_MESSAGE bytes: control characters become spaces, invalid UTF-8 becomes
 * '?', a cut is made at a character boundary and marked with "...". For messages
 * that quote what a server sent. */
void reply_oneline(char *out, size_t sz, const char *s, size_t n);

#endif
