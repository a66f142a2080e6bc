/* sampler.h — picking the next token from the logits: penalties, temperature,
 * top-k, top-p, min-p and a seeded random draw; defaults from generation_config.json
 * and Qwen's recommended presets for thinking and non-thinking mode. */
#ifndef QWENCHAT_SAMPLER_H
#define QWENCHAT_SAMPLER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The settings. The order they act in is Hugging Face's (transformers' logits
 * processors and warpers): the penalties on the raw logits, then temperature, top-k,
 * top-p, min-p, then one draw from what is left. The repetition penalty looks at the
 * recent tokens of the context, the prompt's too: the chat's last SAMP_PENALTY_LAST_N
 * (llama.cpp's window), serve's every one (vLLM's); presence and frequency at the
 * tokens of the answer so far, as OpenAI and vLLM define them (the prompt's tokens,
 * the template's <|im_end|> among them, must not make an answer longer or shorter). */
struct samp_params {
	double temperature; /* > 0; 0 means greedy */
	int top_k;          /* keep the k most likely tokens; 0 = no limit */
	double top_p;       /* keep the smallest set whose probability reaches top_p; 1 = off */
	double min_p;       /* drop tokens below min_p x the top probability; 0 = off */
	double presence_penalty;   /* subtracted once from the logit of every id in the answer */
	double frequency_penalty;  /* subtracted from it as many times as the id is there */
	double repetition_penalty; /* HF/CTRL: logits of ids in `recent` divided by it when
	                             * positive, multiplied when negative; 1 = off */
	uint64_t seed;             /* the RNG seed: the same seed gives the same tokens */
	bool greedy;               /* always the most likely token (after penalties) */
};

/* Which settings a user chose explicitly: presets (samp_params_preset) leave them. */
enum {
	SAMP_SET_TEMP = 1 << 0,
	SAMP_SET_TOP_K = 1 << 1,
	SAMP_SET_TOP_P = 1 << 2,
	SAMP_SET_MIN_P = 1 << 3,
	SAMP_SET_PRESENCE = 1 << 4,
	SAMP_SET_REPEAT = 1 << 5,
	SAMP_SET_SEED = 1 << 6,
	SAMP_SET_GREEDY = 1 << 7,
	SAMP_SET_FREQUENCY = 1 << 8,
};

/* The whole vocabulary may take part in top-p/min-p when top_k is 0; the repetition
 * penalty does not look beyond this many recent tokens (llama.cpp's repeat_last_n). */
enum { SAMP_PENALTY_LAST_N = 64 };

/* The largest top_k kept (a larger one in a config is held to it): beyond any
 * vocabulary, and a count every int holds. */
enum { SAMP_MAX_TOP_K = 1 << 24 };

/* Most eos ids generation_config.json may list (more are refused). */
enum { SAMP_MAX_EOS = 8 };

/* Built-in defaults before any file: Qwen's thinking preset (temperature 0.6,
 * top_p 0.95, top_k 20, min_p 0), no penalties, seed 0, not greedy. */
void samp_params_default(struct samp_params *p);

/* Qwen's recommended presets: thinking — temperature 0.6, top_p 0.95, top_k 20,
 * min_p 0; non-thinking — temperature 0.7, top_p 0.8, top_k 20, min_p 0. Sets those
 * four fields, except the ones whose SAMP_SET_TEMP/TOP_K/TOP_P/MIN_P bit is in
 * user_set (the user's explicit choice always wins). Call it when the mode changes
 * (the UI's /think, `run --no-think`); the model's generation_config.json values
 * stand for the default (thinking) mode. */
void samp_params_preset(struct samp_params *p, bool thinking, unsigned user_set);

/* Copies the settings of `user` whose SAMP_SET_* bit is in `set` into p. */
void samp_params_override(struct samp_params *p, const struct samp_params *user, unsigned set);
/* The user's choices over defaults: samp_params_override, and a temperature above 0
 * chosen without a greedy choice of the same turns greedy off, since an explicit
 * temperature wins over generation_config.json's do_sample false (and a request's over
 * serve --greedy). */
void samp_params_apply(struct samp_params *p, const struct samp_params *user, unsigned set);

/* Checks the values (NaN, negative temperature, top_p/min_p outside [0,1], top_k < 0,
 * repetition_penalty <= 0, ...). 0 or -1 with err_set naming the field. */
int samp_params_check(const struct samp_params *p);

/* Reads DIR/generation_config.json when it exists (absent: p and the eos list are
 * left alone, returns 0): temperature, top_k, top_p, min_p, repetition_penalty,
 * presence_penalty and do_sample (false = greedy) go into p; eos_token_id (a number
 * or an array) into eos[0..*n_eos) (at most SAMP_MAX_EOS; eos may be NULL). Unknown
 * keys are ignored. A file that does not parse or holds a bad value is refused:
 * -1 with err_set naming the file and the field. */
int samp_load_generation_config(const char *dir, struct samp_params *p, int32_t *eos, int *n_eos);

/* The same from the file's text (name starts every message); for tests and fuzzing. */
int samp_parse_generation_config(const char *text, size_t len, const char *name,
				 struct samp_params *p, int32_t *eos, int *n_eos);

/* A sampler: the settings, the RNG and scratch buffers for one vocabulary size. */
struct samp;

/* vocab: the length of every logits row it will see. NULL on error (bad params,
 * out of memory) with err_set. */
struct samp *samp_new(const struct samp_params *p, int vocab);
void samp_free(struct samp *s);

/* Replaces the settings; the RNG is re-seeded only when the seed changes. 0 or -1. */
int samp_set_params(struct samp *s, const struct samp_params *p);
const struct samp_params *samp_get_params(const struct samp *s);
/* Restarts the random sequence from this seed. */
void samp_reseed(struct samp *s, uint64_t seed);

/* The uniform number in [0, 1) that samp_next would draw next, without drawing it;
 * samp_take_uniform draws it. For a backend that samples with the caller's draw
 * (eng_forward_sample), so that the random sequence is the same on either path. */
double samp_peek_uniform(const struct samp *s);
void samp_take_uniform(struct samp *s);

/* The tokens the penalties look at: recent, the last ones of the context (the
 * repetition penalty's: SAMP_PENALTY_LAST_N, or as sess_ends says); answer, those
 * generated in this answer so far (presence and frequency). Either may be empty;
 * out-of-range ids are ignored. */
struct samp_history {
	const int32_t *recent;
	int n_recent;
	const int32_t *answer;
	int n_answer;
};

/* The next token id for a logits row of `vocab` floats (not modified); h may be NULL
 * (no tokens to penalise).
 * Top-k is selected without sorting the vocabulary (a k-entry heap), and with
 * top_k 0 a probability threshold narrows the candidates before any sort, so a
 * token costs O(vocab) plus a sort of the few candidates that matter.
 * Returns the id, or -1 with err_set when vocab differs from samp_new's or a logit
 * is NaN. */
int32_t samp_next(struct samp *s, const float *logits, int vocab, const struct samp_history *h);

/* One entry of samp_logprobs: a token id and its log-probability (natural log). */
struct samp_logprob {
	int32_t id;
	float logprob;
};

/* Log-probabilities of the distribution the last samp_next or samp_candidates drew
 * from: the logits after the penalties, at the temperature (1 when greedy or at
 * temperature 0, where the draw itself is certain), over the whole vocabulary before
 * the top-k/top-p/min-p cut, so that every id has a finite one. Writes id's into
 * *logprob and the n most likely ids into top[0..n) (descending, ties by id; n <= the
 * vocabulary). Reads only what the last call left: 0, or -1 (err_set) when there was
 * none or id is out of range. O(vocab) plus O(vocab x n) at worst for the top n. */
int samp_logprobs(const struct samp *s, int32_t id, float *logprob, struct samp_logprob *top,
		  int n);

/* The same for a row of raw logits (the model's own distribution: no penalties, at
 * temperature 1), as a prompt's tokens are scored. 0, or -1 (err_set) when id or n is
 * out of range. */
int samp_row_logprobs(const float *logits, int vocab, int32_t id, float *logprob,
		      struct samp_logprob *top, int n);

/* The distribution the last samp_next actually drew from (after the penalties, the
 * temperature and the top-k/top-p/min-p cut, renormalized; greedy: the one id at
 * 1): *p is id's probability (0 when the cut removed it), top[0..k) the k <= n most
 * likely, their natural-log probabilities in logprob. Returns k, or -1 (err_set)
 * when nothing was drawn yet or id is out of range. */
int samp_drawn(const struct samp *s, int32_t id, float *p, struct samp_logprob *top, int n);

/* The candidate set samp_next would draw from for these logits: up to max entries,
 * ids[] and probs[] (renormalised over the set, summing to 1), by descending
 * probability when the set was cut (top-k, top-p, min-p); in id order when every
 * token survives. Returns the size of the whole set (may exceed max), or -1.
 * Draws nothing: for tests. Greedy: the one id. */
int samp_candidates(struct samp *s, const float *logits, int vocab, const struct samp_history *h,
		    int32_t *ids, float *probs, int max);

#endif
