/* scores.h — the scores of the prompt a text completion last echoed with logprobs:
 * for each position, the log-probability of the token after it and the most likely
 * tokens there, kept so that the next prompt sharing its start (the context of a
 * multiple-choice question, sent again with each answer, as lm-evaluation-harness
 * does) computes only the positions where it differs. */
#ifndef QWENCHAT_SCORES_H
#define QWENCHAT_SCORES_H

#include <stdbool.h>
#include <stdint.h>

#include "src/serve/openai.h"
#include "src/session/sampler.h"
#include "tokenizer/tokenizer.h"

/* The alternatives kept per position: as many as a request may ask for. */
enum { SCORES_TOP = OAI_MAX_TOP_LOGPROBS };

/* Position pos's scores: of the token at pos + 1, and the SCORES_TOP most likely
 * there (descending, ties by id, as samp_row_logprobs lists them). */
struct scores_entry {
	float logprob;
	int rank; /* the ids as likely or likelier, itself included (vLLM's rank); 0 where
		   * it was not asked for */
	struct samp_logprob top[SCORES_TOP];
};

/* The scores of token id under a row of logits (vocab floats): the model's own
 * distribution, samp_row_logprobs's; the top entries past the vocabulary have id -1;
 * its rank with `rank` (a pass more over the row, which only prompt_logprobs reads).
 * 0, or -1 (err_set) when id is out of range. */
int scores_entry_of(const float *logits, int vocab, int32_t id, bool rank, struct scores_entry *e);

struct scores;

/* An empty store. NULL when out of memory. */
struct scores *scores_new(void);
void scores_free(struct scores *s);

/* Positions of ids[0..n) whose scores are known: those whose token and the next both
 * lie in the start ids shares with the prompt scored last (none where `rank` is asked
 * for and that prompt was scored without). */
int scores_known(const struct scores *s, const int32_t *ids, int n, bool rank);

/* Begins scoring ids[0..n), the first `known` positions kept, with their ranks where
 * `rank`. 0, or -1 (err_set) out of memory (the store is then empty). */
int scores_begin(struct scores *s, const int32_t *ids, int n, int known, bool rank);

/* The logits (vocab floats) after position pos of the prompt begun: the scores of
 * the token at pos + 1 (none after the last position). */
void scores_row(struct scores *s, int pos, const float *logits, int vocab);

/* The scoring ended: complete, every position of the prompt is known; else the store
 * forgets it. */
void scores_end(struct scores *s, bool complete);

/* Position pos's scores, pos < n - 1 of the prompt scored last. */
const struct scores_entry *scores_get(const struct scores *s, int pos);

/* The prompt scored last (complete) as vLLM's prompt_logprobs: null for its first
 * token, then for each token {"ID": {"logprob", "rank", "decoded_token"}}, its own id
 * first, then the `top` likeliest (ranks 1..top; a token among them holds the rank of
 * its place there, as vLLM's dict keeps the later value). decoded_token is the token's
 * bytes alone, U+FFFD for any that are not UTF-8. A new reference, NULL out of memory. */
struct json_t *scores_prompt_logprobs(const struct scores *s, int top, const struct tok *t);

#endif
