/* openai.h — the OpenAI requests on the wire, chat completions and (legacy) text
 * completions: a JSON body checked field by field into a conversation or prompts
 * and generation settings; the error object the API answers with; server-sent
 * events. */
#ifndef QWENCHAT_OPENAI_H
#define QWENCHAT_OPENAI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "src/base/strbuf.h"
#include "src/chat/chat.h"
#include "src/session/sampler.h"

/* Limits of a request; beyond them it is refused before anything is built from it. */
enum {
	OAI_MAX_DEPTH = 64,            /* nesting of arrays and objects in the body */
	OAI_MAX_MESSAGES = 2048,       /* messages */
	OAI_MAX_TOOLS = 128,           /* tool definitions, and calls in one assistant message */
	OAI_MAX_STOP = 16,             /* stop strings */
	OAI_MAX_STOP_BYTES = 256,      /* bytes in one stop string */
	OAI_MAX_STOP_IDS = 64,         /* stop_token_ids (SESS_MAX_STOP_IDS) */
	OAI_MAX_LOGIT_BIAS = 1024,     /* logit_bias entries */
	OAI_MAX_ALLOWED_IDS = 1 << 16, /* allowed_token_ids */
	OAI_MAX_TOP_LOGPROBS = 20,
	OAI_MAX_PROMPTS = 1024,       /* prompts of one /v1/completions request, and its choices */
	OAI_MAX_CHOICES = 128,        /* n: answers to one prompt */
	OAI_DEFAULT_TEXT_TOKENS = 16, /* /v1/completions' max_tokens when none is given */
	OAI_MAX_TOKENS = 1 << 24,     /* max_tokens; the server holds it to the context too */
	OAI_REPEAT_SERVER = -2,       /* repeat_last_n not given */
	/* JSON values in the body (keys counted), checked before it is parsed: jansson
	 * allocates each (up to 240 bytes), so this holds a parse to ~31 MB, where a
	 * body of empty arrays within the size limit would take several times that.
	 * 2048 messages with tool calls and 128 tools with their schemas stay far below
	 * it. */
	OAI_MAX_VALUES = 1 << 17,
	/* bytes of a member of the body this server does not read (ignored up to this,
	 * as vLLM ignores them; beyond, refused before the body is parsed) */
	OAI_MAX_UNKNOWN_BYTES = 64 << 10,
};

/* Which API a request is for. */
enum oai_kind {
	OAI_CHAT,       /* /v1/chat/completions: messages rendered with the chat template */
	OAI_TEXT,       /* /v1/completions: raw prompts continued as they are */
	OAI_TOKENIZE,   /* /tokenize: a prompt's or a conversation's ids (tokenize.h) */
	OAI_DETOKENIZE, /* /detokenize: ids (prompts[0]) to text */
	OAI_EMBED,      /* /v1/embeddings: each prompt's pooled hidden state (embed.h) */
};

/* One prompt of a text completion: text (tokenized as `tokenize` does, special tokens
 * recognised) or token ids as given. */
struct oai_prompt {
	char name[16]; /* as the request names it in errors: prompt, or prompt[i] */
	char *text;    /* NULL for ids */
	size_t len;
	int32_t *ids;
	size_t n_ids;
};

struct oai_request {
	enum oai_kind kind;
	struct chat *chat;          /* chat: the messages, and the tools the template lists */
	struct oai_prompt *prompts; /* text: (n_prompts) each answered by a choice */
	size_t n_prompts;
	bool echo; /* text: each choice starts with its prompt (and its tokens' logprobs) */
	int enable_thinking;        /* TMPL_THINK_*: chat_template_kwargs.enable_thinking */
	struct samp_params samp;    /* the sampling fields the request gave ... */
	unsigned samp_set;          /* ... as SAMP_SET_* bits (the others are not read) */
	/* max_completion_tokens, else max_tokens; 0 = not given (chat). A text completion
	 * may ask for 0 (only the echo scored); not given, it is OAI_DEFAULT_TEXT_TOKENS
	 * and max_tokens_default is set (held to the context rather than refused). */
	int max_tokens;
	bool max_tokens_default;
	const char *max_tokens_key; /* which of the two gave it, for errors about it */
	char **stop;                /* (n_stop) strings that end the answer, none empty */
	size_t n_stop;
	bool include_stop; /* include_stop_str_in_output: the stop string stays in the text */
	int32_t *stop_ids; /* (n_stop_ids) stop_token_ids: more ids that end it */
	size_t n_stop_ids;
	int32_t *allowed_ids; /* (n_allowed) allowed_token_ids: the only ids drawn; none */
	size_t n_allowed;     /* given: every id */
	int32_t *bias_ids; /* (n_bias) logit_bias: ids, each once, and what is added to */
	float *bias;       /* their logits before every draw, in [-100, 100] */
	size_t n_bias;
	bool ignore_eos; /* the end-of-turn ids end nothing: max_tokens are generated */
	int min_tokens;  /* no end-of-turn or stop id, nor stop string, before this many */
	int truncate;    /* vLLM's truncate_prompt_tokens: a prompt's last N tokens
			      * only, -1 the context's worth; 0: whole */
	bool tokens_as_ids;  /* vLLM's return_tokens_as_token_ids: logprobs name each
			      * token "token_id:ID" */
	int prompt_logprobs; /* vLLM's: each prompt token's log-probability and this many
			      * likeliest there (0..20); -1: none */
	int repeat_last_n;   /* llama-server's: repetition_penalty's window, the last this
			      * many tokens (-1: all); OAI_REPEAT_SERVER: the server's */
	int n_choices;   /* n: answers to each prompt, sampled with seeds seed, seed + 1, ... */
	bool stream;
	bool include_usage;    /* stream_options.include_usage */
	bool continuous_usage; /* and continuous_usage_stats: the usage in every chunk */
	bool logprobs;      /* text: "logprobs" was a number (its value is top_logprobs) */
	int top_logprobs; /* 0..OAI_MAX_TOP_LOGPROBS */
	bool parse_tools; /* tools were given and tool_choice is not "none" */
	bool add_generation_prompt; /* tokenize: the conversation ends with the assistant's turn opened */
	bool continue_final;        /* chat, tokenize: the last message is continued */
	struct js_schema *format;   /* response_format's (json_object: any object), guided_json's */
	char *forced_tool; /* ..., or a forced tool's parameters: the answer is its arguments */
	bool forced_pick; /* ..., or "required" among several: the answer is {"name", "arguments"} */
	bool token_strs;            /* tokenize: each token as tokenizer.json spells it too */
	int dimensions;             /* embed: the first this many values (0: all) */
	bool base64;                /* embed: encoding_format "base64" (float32 bytes) */
	bool no_special; /* embed: add_special_tokens false (no <|endoftext|> appended) */
	bool raw;        /* embed: normalize false (the vector as pooled) */
};

/* What went wrong with a request besides err_msg(): OpenAI's "param" (the field, such
 * as "messages[2].role"; "" for the body as a whole) and "code" (NULL for none). */
struct oai_error {
	char param[128];
	const char *code;
};

/* The body as a JSON object (a struct json_t of jansson's, to json_decref) within
 * the limits above, its "model" a string when present: NULL with err_set and *e
 * (param "" for the body) on a body past them, malformed JSON, or another value. */
struct json_t *oai_load_body(const char *body, size_t len, struct oai_error *e);

/* Records a problem with field `param` ("" for the body): err_set("PARAM: MESSAGE")
 * and e->param. Returns -1. */
int oai_bad(struct oai_error *e, const char *param, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* Member key of object o (NULL: none) as a bool: 1 when given, 0 when absent or null
 * (*out unchanged), -1 for another type (oai_bad about `param`). */
int oai_get_bool(struct json_t *o, const char *key, const char *param, bool *out,
		 struct oai_error *e);

/* Member key of o as an integer in [lo, hi] (a real that is whole counts): 1 when
 * given, 0 when absent or null (*out unchanged), -1 otherwise (oai_bad about key). */
int oai_get_int(struct json_t *o, const char *key, long long lo, long long hi, long long *out,
		struct oai_error *e);

/* continue_final_message and add_generation_prompt into r: the two are not both true
 * (continue_final_message alone makes the second false); add_generation_prompt false
 * without the first is taken only for /tokenize. -1 with oai_bad on a bad one. */
int oai_parse_continue(struct oai_request *r, struct json_t *root, bool tokenize,
		       struct oai_error *e);

/* stop, stop_token_ids, ignore_eos and min_tokens (at most max_tokens, where the
 * request's max_tokens is known), logit_bias, repeat_last_n, prompt_logprobs
 * (parse_stream first), truncate_prompt_tokens and return_tokens_as_token_ids, into r;
 * -1 with oai_bad on a bad one. */
int oai_parse_ends(struct oai_request *r, struct json_t *root, struct oai_error *e);

/* Tool t (checked: an object with a "function" object) as vLLM hands it to the
 * template, pydantic's model_dump of it: {"type", "function": {"name", "description",
 * "parameters", the function's other members in their order}, the tool's other members
 * in their order}, a missing description or parameters null. A new reference, NULL
 * when out of memory. */
struct json_t *oai_tool_as_vllm(struct json_t *t);

/* tool_choice that names a function (or "required" with one tool): r->forced_tool and
 * its parameters compiled into r->format. "required" with several tools (at most
 * JS_MAX_PATHS): r->forced_pick, and r->format the call of one of them as Qwen3 writes
 * it in a <tool_call> block. -1 with oai_bad on a bad one. */
int oai_force_tool(struct oai_request *r, struct json_t *tools, struct json_t *choice,
		   struct oai_error *e);

/* response_format into r->format: none for text; any object for json_object; the
 * schema for json_schema (whose name OpenAI requires), compiled; or vLLM's guided_json
 * or structured_outputs.json (one of the three); -1 with oai_bad on a bad one, or a
 * schema not followed (the keyword named). */
int oai_parse_format(struct oai_request *r, struct json_t *root, struct oai_error *e);

/* Member key of root as prompts into r->prompts: a string, strings, token ids, or
 * arrays of token ids, none empty (an empty string allowed where empty_ok: the
 * tokenizer may add tokens to it); each named key or key[i] in errors. -1 with
 * oai_bad on a bad one. */
int oai_parse_prompts(struct oai_request *r, struct json_t *root, const char *key, bool empty_ok,
		      struct oai_error *e);

/* Parses and checks a request body (len bytes, no NUL needed). NULL with err_set
 * (a message starting with the field it is about) and *e filled on: malformed JSON
 * or UTF-8, nesting deeper than OAI_MAX_DEPTH, more than OAI_MAX_VALUES values or a
 * member it does not know of more than OAI_MAX_UNKNOWN_BYTES (these three found
 * before the body is parsed), a field of the wrong type or out of
 * range, an unknown role, a content part that is not text, a setting this server
 * does not implement ("required" among several tools, a response_format other than
 * text, json_object and json_schema, best_of, ...). Fields it does not know
 * are ignored, as vLLM ignores them. Roles: system (and OpenAI's "developer"),
 * user, assistant, tool; content is a string or an array of {"type": "text"} parts,
 * joined by newlines as vLLM joins them. Tool-call arguments given as a JSON string
 * holding an object are read as that object, as vLLM does, so that a call renders
 * back into the prompt as the model wrote it. */
struct oai_request *oai_parse(const char *body, size_t len, struct oai_error *e);

/* The same for a /v1/completions body: prompt (a string, an array of strings, an array
 * of token ids or an array of arrays of them; none empty, ids in [0, 2^31)), echo,
 * logprobs (a number, 0..OAI_MAX_TOP_LOGPROBS: the most likely tokens listed beside
 * each one), max_tokens (0 allowed), and the sampling, stop and stream fields of
 * chat; suffix, best_of above 1 and the chat's unsupported fields are refused. */
struct oai_request *oai_parse_text(const char *body, size_t len, struct oai_error *e);
/* A body's conversation alone, for /tokenize (kind OAI_TOKENIZE): messages, tools and
 * chat_template_kwargs read as oai_parse reads them, every other member left to the
 * caller. */
struct oai_request *oai_parse_conversation(const char *body, size_t len, struct oai_error *e);
void oai_request_free(struct oai_request *r);

/* {"error": {"message", "type", "param", "code"}} as malloc'd compact JSON; param and
 * code may be NULL (written as null). NULL when out of memory. */
char *oai_error_json(const char *message, const char *type, const char *param, const char *code);

/* Appends n bytes as valid UTF-8: each byte that does not start a valid sequence
 * becomes the text \xHH (its value in hex). For token pieces that are part of a
 * character, and for messages that quote request text. */
void oai_put_text(struct strbuf *b, const char *s, size_t n);

/* Appends one server-sent event: "data: TEXT\n\n" (TEXT must hold no newline; compact
 * JSON never does). */
void oai_sse(struct strbuf *b, const char *text);

#endif
