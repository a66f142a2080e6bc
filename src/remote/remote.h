/* remote.h — a client of an OpenAI-compatible chat-completions server (vLLM, SGLang,
 * llama-server, ollama, qwenchat serve): the served models from GET /models, and one
 * streamed answer from POST /chat/completions read as server-sent events with
 * libcurl. Connect and stall timeouts, retries after 429/503 as Retry-After asks, a
 * cancel flag looked at every 50 ms, and one clear message for each failure. The API
 * key goes only into the Authorization header: never into a message. */
#ifndef QWENCHAT_REMOTE_H
#define QWENCHAT_REMOTE_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>

#include "src/chat/chat.h"
#include "src/remote/reply.h"
#include "src/session/sampler.h"

enum {
	REMOTE_CONNECT_TIMEOUT = 10, /* s: default time to connect (and TLS handshake) */
	REMOTE_STALL_TIMEOUT = 120,  /* s: default time a response may send nothing; a long
	                              * prompt's prefill on a busy server fits in it */
	REMOTE_MAX_TIMEOUT = 86400,
	REMOTE_ATTEMPTS = 4,        /* tries of a request answered 429 or 503 */
	REMOTE_MAX_RETRY_WAIT = 60, /* s: a longer Retry-After is reported, not waited */
};

struct remote_options {
	const char *url;     /* the API base: http(s)://HOST:PORT/v1 */
	const char *api_key; /* "Authorization: Bearer KEY", or NULL for none */
	int connect_timeout; /* seconds; 0 = REMOTE_CONNECT_TIMEOUT */
	int stall_timeout;   /* seconds without a byte; 0 = REMOTE_STALL_TIMEOUT */
	/* told, when not NULL, each time a busy server (429, 503) is waited for before
	 * the request is tried again: one line, such as hub downloads print, from the
	 * thread making the request; retry_user is passed on */
	void (*on_retry)(void *retry_user, const char *msg);
	void *retry_user;
};

struct remote;

/* Checks the URL (http or https, a host) and keeps copies of the options. A trailing
 * "/" or "/chat/completions" is dropped from the URL. NULL with err_set. */
struct remote *remote_new(const struct remote_options *o);
void remote_free(struct remote *r);

/* Whether remote_new would take url: 0, or -1 with err_set saying why (for the
 * command line, before anything else is done); name: where url came from ("--url",
 * "OPENAI_BASE_URL"), for the message. */
int remote_check_url(const char *url, const char *name);

/* The URL for messages: the API base without any user:password part. */
const char *remote_url(const struct remote *r);
/* True when an API key is sent over plain http to a host other than the loopback. */
bool remote_key_in_clear(const struct remote *r);

/* A model the server serves. */
struct remote_model {
	char *id;       /* what the "model" field of a request names */
	char *owned_by; /* "vllm", "sglang", "llamacpp", "library", ... or "" */
	long max_len;   /* context in tokens (vLLM's and SGLang's max_model_len); 0 unknown */
};

/* GET {url}/models. 0 with *models (malloc'd, *n entries, maybe 0), or -1 with
 * err_set. cancel may be NULL. */
int remote_models(struct remote *r, struct remote_model **models, size_t *n, atomic_int *cancel);
void remote_models_free(struct remote_model *m, size_t n);

/* The model to ask for: want when the server serves it (or has no model list to
 * check it against), else with want NULL the only one it serves; its context in
 * *max_len (0 when unknown). Malloc'd, or NULL with err_set listing the served
 * models. */
char *remote_pick_model(struct remote *r, const char *want, long *max_len, atomic_int *cancel);

/* One request. Only the settings whose SAMP_SET_* bit is in sampling_set are sent,
 * so the server's defaults (its generation_config) stand for the others; greedy is
 * sent as temperature 0. */
struct remote_request {
	const char *model;           /* the served model's id */
	const struct chat *chat;     /* the conversation; its last turn is the question */
	int think;                   /* chat_template_kwargs.enable_thinking: 1, 0; -1 unsent */
	struct samp_params sampling; /* temperature, top_p, top_k, min_p, presence_penalty,
	                              * repetition_penalty, seed */
	unsigned sampling_set;       /* SAMP_SET_* bits: what is sent */
	int max_tokens;              /* > 0: max_tokens; 0: the server's limit */
	bool json;                   /* response_format json_object, or with schema ... */
	struct json_t *schema;       /* ... json_schema (a JSON Schema) */
};

/* The body of the request: compact JSON, malloc'd (its length in *len), with
 * "stream": true and stream_options.include_usage. NULL with err_set (a tool
 * definition that is not JSON, a seed above 2^63 - 1, out of memory). */
char *remote_request_json(const struct remote_request *q, size_t *len);

/* Streams one answer into out (reply_init'd by the caller with its emit callback).
 * Returns 0 when the answer ended (finish_reason or [DONE]), or was stopped by cancel
 * or by emit (out->stop); what arrived until then is in out. -1 with err_set on a
 * failure: an HTTP error (the server's own message quoted), a refused or timed-out
 * connection, a TLS error, a stall, a malformed event, an error event, or a stream
 * that ended mid-answer; out then holds the text that came before it. */
int remote_chat(struct remote *r, const struct remote_request *q, struct reply *out,
		atomic_int *cancel);

#endif
