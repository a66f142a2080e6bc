/* session.h — one conversation's KV cache kept across turns: ids[0..n) are exactly
 * the tokens whose K/V the engine holds (docs/architecture.md, "A turn of the chat",
 * step 3); a new render reuses the longest common prefix and prefills the rest;
 * the decode loop streams reasoning and answer apart. */
#ifndef QWENCHAT_SESSION_H
#define QWENCHAT_SESSION_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "engine/engine.h"
#include "src/session/sampler.h"
#include "tokenizer/tokenizer.h"

struct js_schema;

struct sess_options {
	int chunk;          /* prefill chunk in tokens; 0 = SESS_DEFAULT_CHUNK */
	const int32_t *eos; /* extra stop ids (generation_config.json's eos_token_id) */
	int n_eos;
	/* Set non-zero (from a signal handler or another thread) to stop the running
	 * sess_sync/sess_generate at the next token, chunk or (on the CPU) layer of a
	 * chunk; the session stays consistent. The session never clears it, and hands
	 * it to the engine (eng_set_cancel) while it lives. May be NULL. */
	atomic_int *cancel;
	/* Called after each prefill chunk with the tokens of this sync done so far and
	 * its total (a progress bar for long prompts); may be NULL. */
	void (*progress)(void *user, int done, int total);
	void *progress_user;
};

/* Prefill chunk: bounds the activations (and attention scores) of one forward, so a
 * 32K-token prompt never needs memory quadratic in its length, and is how often
 * progress is told. cancel is looked at between chunks and, on the CPU, between the
 * layers of each (eng_set_cancel). */
enum { SESS_DEFAULT_CHUNK = 512 };

/* Why sess_generate stopped. */
enum sess_stop {
	SESS_STOP_EOS,    /* <|im_end|>, <|endoftext|>, a generation_config eos id, or one
			   * of sess_set_ends' stop ids */
	SESS_STOP_MAX,    /* max_new tokens generated */
	SESS_STOP_CTX,    /* the KV cache is full */
	SESS_STOP_CANCEL, /* the cancel flag was set */
	SESS_STOP_CALLER, /* the emit callback returned non-zero */
};

/* Statistics of the current turn: sess_sync starts a new turn and zeroes them. */
struct sess_stats {
	int reused;             /* tokens kept from the cache (common prefix) */
	int prefilled;          /* tokens run through the prefill this turn */
	int generated;          /* tokens sampled (the stop token not counted) */
	double prefill_seconds; /* wall time of the prefill forwards */
	double decode_seconds;  /* wall time of sampling + decode forwards */
	double ttft;            /* sess_sync start to the first generated token, s */
	double prefill_tps;     /* prefilled / prefill_seconds (0 when none) */
	double decode_tps;      /* decode forwards / decode_seconds (0 when none) */
	enum sess_stop stop;    /* why the last sess_generate ended */
};

/* Which stream a piece of generated text belongs to. */
enum sess_part { SESS_REASONING, SESS_ANSWER };

/* Receives complete UTF-8 text as it is generated (len > 0). The <think> and
 * </think> tags themselves are not passed; the newlines after each tag (and at the
 * start of reasoning the prompt opened) and the newlines before </think> are
 * dropped, as the chat template strips them, so the pieces concatenated are the
 * turn's reasoning and content; an answer no tag opened is passed whole. Return
 * non-zero to stop. */
typedef int (*sess_emit_fn)(void *user, enum sess_part part, const char *text, size_t len);

/* Routes generated text into reasoning and answer the way the chat template will
 * render the saved turn: the leading newlines of each part are dropped, and the
 * reasoning's trailing newlines are held until more reasoning comes (the template
 * strips both). The local session and the remote backend both route through it, so
 * a turn is saved the same way whoever generated it. */
struct sess_router {
	sess_emit_fn emit; /* may be NULL: nothing is passed on */
	void *user;
	enum sess_part part;
	bool part_start; /* nothing of this part emitted yet */
	size_t held_nl;  /* reasoning newlines held back until more text comes */
	int stop;        /* what emit returned: non-zero, no more is wanted */
};

void sess_router_init(struct sess_router *r, sess_emit_fn emit, void *user);
/* Passes text of the current part on (nothing once emit has asked to stop). */
void sess_route(struct sess_router *r, const char *text, size_t len);
/* Starts the other part: newlines held from the one before are dropped. */
void sess_router_switch(struct sess_router *r, enum sess_part part);

/* How the generated text is split. */
enum sess_split {
	SESS_SPLIT_NONE,            /* everything is answer (raw continuation) */
	SESS_SPLIT_ANSWER_FIRST,    /* a first <think> token opens reasoning, until </think> */
	SESS_SPLIT_REASONING_FIRST, /* the prompt already opened <think> (Thinking-2507) */
};

struct sess;

/* A session over an engine made from model m and a tokenizer (all must outlive it;
 * the session is the engine's only user: it assumes the cache holds what ids says).
 * The cache is truncated to 0. NULL on error (a tokenizer without <|im_end|> and
 * <|endoftext|> still works, stopping on the eos ids given). */
struct sess *sess_new(struct eng *e, const struct eng_model *m, struct tok *t,
		      const struct sess_options *opt);
void sess_free(struct sess *s);

/* The tokens the cache holds now, ids[0..sess_n). */
int sess_n(const struct sess *s);
const int32_t *sess_ids(const struct sess *s);

/* Makes the cache hold ids[0..n): keeps the longest common prefix with the current
 * ids (at most n-1 of them, so the last position is always computed and its logits
 * are known), truncates the cache there and prefills the rest in chunks.
 * Returns 0; 1 when cancelled (the cache then holds a prefix of ids, a whole number
 * of chunks, and sess_ids says which); -1 on error (err_set; ids too long for the
 * context, an id out of range, an engine failure: the session stays consistent).
 * Starts a new turn's statistics. */
int sess_sync(struct sess *s, const int32_t *ids, int n);

/* Receives the logits (vocab floats) after position pos of a scored sync. */
typedef void (*sess_row_fn)(void *user, int pos, const float *logits);

/* Bytes of logits a scored sync holds at once. */
#define SESS_SCORE_BYTES ((size_t)256 << 20)

/* sess_sync, with the logits after every position it computes passed to fn in order
 * (a prompt's own tokens scored, as /v1/completions' echo does). The caller has the
 * scores of positions before `from` (0: none): the cache is reused up to there at
 * most, so fn sees every position from some keep <= from to n-1. On the CPU backend
 * a position's logits are the same bits whatever was reused (eng_prefill_min).
 * Returns as sess_sync does; on 1 or -1, fn has seen the positions computed before
 * the stop. */
int sess_sync_scored(struct sess *s, const int32_t *ids, int n, int from, sess_row_fn fn,
		     void *user);

/* The logits (vocab floats) after the last position, when the last operation left
 * them (a completed sess_sync, or sess_generate between tokens); else NULL. */
const float *sess_logits(const struct sess *s);

/* The decode loop, after a completed sess_sync: samples from the logits, streams
 * the text through emit and runs each sampled token through the engine, until a
 * stop id, max_new tokens, a full cache, cancel (looked at before each token), or
 * emit returning non-zero. Every sampled token, the stop token included, goes into
 * the cache (the next render holds it: <|im_end|> closes the turn), so afterwards
 * sess_ids()[sync's n .. sess_n) are exactly the generated ids; only when the cache
 * is full is the last sampled token left out. sess_logits stays valid, except
 * after a cancel or an emit stop on a backend that samples on the device
 * (eng_forward_sample): then it is NULL and the next sess_sync runs the last
 * token again.
 * Returns 0 (why it stopped: sess_stats()->stop) or -1 on error. */
int sess_generate(struct sess *s, struct samp *sp, int max_new, enum sess_split split,
		  sess_emit_fn emit, void *user);

/* Called for each token sampled on the host that is not a stop token, right after the
 * draw and before the token's text is emitted, with the sampler that drew it
 * (samp_logprobs then describes the distribution it was drawn from); sess_logits is
 * then the row it was drawn from as the model computed it (the padding rows past the
 * tokenizer, which the draw never picks, with their own values). */
typedef void (*sess_token_fn)(void *user, int32_t id, const struct samp *sp);

/* Sets the token hook for the following sess_generate calls; NULL removes it. While
 * one is set every token is sampled on the host, so that the hook sees it (a backend
 * that samples would keep the logits on the device). Stop tokens are not passed
 * unless sess_set_token_hook_stops says so (which setting the hook undoes). */
void sess_set_token_hook(struct sess *s, sess_token_fn fn, void *user);
/* With stops, the hook sees the stop token that ends the answer too (a text
 * completion lists it among the tokens' log-probabilities, as vLLM does). */
void sess_set_token_hook_stops(struct sess *s, bool stops);

/* How the following sess_generate calls may end, besides the session's stop ids
 * (vLLM's request fields of the same names). */
enum { SESS_MAX_STOP_IDS = 64 };
struct sess_ends {
	bool ignore_eos; /* the session's stop ids stop nothing: they are generated as text */
	int min_new;     /* until this many tokens are generated, no stop id is sampled */
	const int32_t *stop_ids; /* (n_stop_ids, at most SESS_MAX_STOP_IDS) more ids that */
	int n_stop_ids;          /* stop, as the eos ids do (ids past the vocabulary: none) */
	/* The repetition penalty looks at the last repeat_last_n tokens of the context,
	 * the prompt's included; -1: all of them (vLLM's and transformers' rule). */
	int repeat_last_n;
	/* The prompt closed the think block (thinking off) or has none (a raw text): an
	 * answer held to a format (sess_set_json) may not open one, as vLLM's reasoning
	 * parser then holds the answer from its first token. */
	bool no_think;
};
/* Sets them (copied); NULL restores the defaults (every field 0 but repeat_last_n,
 * SAMP_PENALTY_LAST_N: llama.cpp's window, which the chat keeps). */
void sess_set_ends(struct sess *s, const struct sess_ends *ends);

/* Adds bias[i] to the logit of ids[i] before every draw of the following
 * sess_generate calls (OpenAI's logit_bias: before the penalties, as vLLM applies
 * it), n entries copied; n = 0 removes them. Ids past the vocabulary are dropped. A
 * token hook and sess_logits see the logits as the model computed them. 0, or -1 with
 * err_set (out of memory: the bias is then none). */
int sess_set_bias(struct sess *s, const int32_t *ids, const float *bias, int n);

/* Only ids[0..n) may be drawn by the following sess_generate calls (vLLM's
 * allowed_token_ids: the end of turn too only when listed); n = 0: every id. Ids the
 * tokenizer cannot write are dropped. 0; 1 when that leaves none (then every id);
 * -1 with err_set (out of memory: then every id). */
int sess_set_allowed(struct sess *s, const int32_t *ids, int n);

/* With a schema, the answer of the following sess_generate calls is held to one
 * value of it (OpenAI's response_format: json_object is js_object(), json_schema its
 * schema compiled): at each draw every token that would take it out of the schema's
 * language is masked (added tokens too), and the stop ids until the value is whole,
 * every other id after. Reasoning is free: the schema holds the answer part only (a
 * first <think> may open reasoning). Should no token fit (a stop id masked by min_new,
 * ignore_eos), the answer goes on unheld. sc stays the caller's and must outlive the
 * calls; NULL: the answer is free. 0, or -1 with err_set (out of memory). */
int sess_set_json(struct sess *s, const struct js_schema *sc);

/* The current turn's statistics. */
const struct sess_stats *sess_stats(const struct sess *s);

/* Forgets everything (cache truncated to 0). */
void sess_reset(struct sess *s);


#endif
