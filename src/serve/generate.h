/* generate.h — one request run on the model. A chat completion: the conversation
 * rendered with the chat template and tokenized, the KV cache synced to it (the
 * longest common prefix with what the cache holds is reused, as in the chat), the
 * answer sampled and written as the API's JSON. A text completion: each prompt
 * continued as it is, its own tokens scored when it is echoed with logprobs. The
 * HTTP side is serve.c. */
#ifndef QWENCHAT_GENERATE_H
#define QWENCHAT_GENERATE_H

#include <stdatomic.h>
#include <stdint.h>

#include "engine/engine.h"
#include "src/chat/template.h"
#include "src/serve/completion.h"
#include "src/serve/openai.h"
#include "src/serve/scores.h"
#include "src/session/sampler.h"
#include "src/session/session.h"
#include "tokenizer/tokenizer.h"

/* The model and its defaults, shared by every request (one at a time). */
struct gen_model {
	struct eng *eng;
	struct tok *tok;
	struct sess *sess; /* over eng and tok; cancelling it ends the running request */
	struct samp *samp; /* re-set and re-seeded for each request */
	enum tmpl_variant variant;
	int absent_think;          /* enable_thinking when a request gives none (TMPL_THINK_*) */
	struct samp_params params; /* defaults: generation_config.json, then the command line */
	unsigned params_set;       /* SAMP_SET_* bits the command line gave */
	int max_tokens;            /* default and largest max_tokens; 0 = the context */
	int vocab;                 /* the model's vocab_size (token ids a prompt may hold) */
	int hidden;                /* its hidden_size (an embedding's values) */
	char *embed_refusal;       /* why /v1/embeddings is refused (a pooling not computed
				    * here), or NULL */
	bool embed_ok;             /* the backend gives hidden states (the CPU's) */
	const atomic_int *cancel;  /* the worker's: set when the client went away */
	struct scores *scores;     /* the prompt a text completion scored last */
	bool processed_logprobs;   /* a generated token's logprobs: of the distribution it
				    * was drawn from, not the model's own (vLLM's modes) */
	int repeat_last_n;         /* the repetition penalty's window when a request gives none: the
			    * last this many tokens of the context, -1 all (sess_ends) */
	const char *name;          /* the model's id in responses and /v1/models */
};

/* Where the response goes. */
struct gen_output {
	void *user;
	/* The HTTP status before any write: 4xx with the error object as the body, or 200
	 * once the request is checked, before the prompt is run. A stream's events follow;
	 * another answer is written whole at its end, or fails: start again with 5xx and
	 * the error object (a stream ends with an error event instead). */
	void (*start)(void *user, int status);
	/* Response bytes: stream events as they come, or the whole body. */
	void (*write)(void *user, const char *text, size_t len);
};

/* Writes an error response (the status and the error object; once started, a
 * stream's error event and its end). Returns the status. */
int gen_fail(const struct gen_output *out, bool started, int status, const char *message,
	     const char *param, const char *code);

/* 0 when every id of a request's ids[0..n) is below the model's vocab_size; else
 * writes the 400 that names the first other as NAME[j], and returns 400. */
int gen_check_ids(const struct gen_model *m, const int32_t *ids, size_t n, const char *name,
		  const struct gen_output *out);

/* vLLM's truncate_prompt_tokens (r->truncate): the last tokens of ids[0..*k) only, at
 * most the context. 0, or the HTTP status after writing the error. */
int gen_truncate(const struct gen_model *m, const struct oai_request *r, int32_t *ids, size_t *k,
		 const struct gen_output *out);

/* ids read back as text (malloc'd, *len bytes, NULL when out of memory): special tokens
 * spelled out, a padding id past the tokenizer as nothing, and ids that end inside a
 * character as U+FFFD there, as Hugging Face decodes. */
char *gen_ids_text(const struct tok *t, const int32_t *ids, size_t n, size_t *len);

/* Answers request r (either kind): settings are the model's defaults, Qwen's
 * non-thinking preset when a chat switches thinking off on the hybrid template, then
 * the request's own; without a seed (from the request or the command line) each
 * request draws a random one. Fills *usage (prompt, cached: reused from the KV cache,
 * completion: every token generated, the end-of-turn one included; summed over a
 * text completion's prompts). Returns the HTTP status, or 0 when the session's
 * cancel flag stopped it (the client went away). */
int gen_run(const struct gen_model *m, const struct oai_request *r, const struct gen_output *out,
	    struct completion_usage *usage);

#endif
