/* ppl.h — perplexity of a token stream by the sliding-window loop of Hugging Face
 * transformers' guide ("Perplexity of fixed-length models"), or of the marked tokens
 * of documents each run alone (conversations' answers), and against a second model
 * the KL divergence and the other figures of a comparison over the same positions. */
#ifndef QWENCHAT_PPL_H
#define QWENCHAT_PPL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct eng;

/* Positions whose logits are held at once by default: 512 x 151,936 floats is
 * 311 MB for a Qwen3 vocabulary. The CPU backend runs 512 tokens per chunk, each
 * weight read once per chunk, so smaller slices read the weights more often and
 * take more CPU time. */
enum { PPL_DEFAULT_SLICE = 512 };

struct ppl_options {
	int vocab;  /* the models' vocab_size (a row of logits; the caller checks both agree) */
	int ctx;    /* N: tokens per window (>= 2) */
	int stride; /* S: 1..ctx, how far each window starts after the last */
	int slice;  /* positions run per forward with every row of logits; 0: the default */
	/* llama-perplexity's loop instead: whole chunks of ctx tokens (stride = ctx), each
	 * scoring its labels after position ctx/2 (ppl_count's chunks) */
	bool chunks;
	/* Documents instead of windows (perplexity --sft; NULL: windows): document d is
	 * ids[docs[d], docs[d + 1]) (ndocs + 1 offsets; 2 to ctx tokens each), run from an
	 * empty cache, and only its tokens i > 0 flagged DSET_SCORED (dataset.h) in
	 * flags[i] are scored; stride is then ignored. */
	const size_t *docs;
	int64_t ndocs;
	const uint8_t *flags; /* (n) with docs */
	int threads; /* threads that score the rows (< 1: one) */
	const char *names[2]; /* the two models, naming the one whose forward fails (or NULL) */
	/* Called after each slice (may be NULL): positions scored so far, and in all. */
	void (*progress)(void *user, size_t scored, size_t total);
	void *user;
};

struct ppl_result {
	size_t tokens;  /* positions scored */
	size_t windows; /* windows run through the model (those with a position to score) */
	double nll;     /* sum over them of -log p(token | tokens before it in its window) */
	double nll2;    /* ... of its squares (the spread of the mean) */
	/* against a base (0, or NULL, without one): */
	double base_nll; /* sum of -log q(token), the base's NLL */
	double dnll2;    /* sum of (-log p(token) + log q(token))^2: the spread of the log ratio */
	double kl;       /* sum of KL(P || Q), P the model's, Q the base's */
	double kl2;      /* ... of its squares */
	double dp, dp2;  /* sums of p(token) - q(token) and of its squares */
	size_t top1;     /* positions where both argmaxes agree */
	double *kl_each; /* (tokens) each position's KL, for its quantiles (ppl_result_free) */
};

/* Frees what a result holds (r->kl_each). */
void ppl_result_free(struct ppl_result *r);

/* The quantile at fraction f (0..1) of n >= 1 values sorted ascending, interpolated
 * between the two values around f * (n - 1), as llama-perplexity's percentiles: 0.5
 * is the median (the mean of the middle two for even n). */
double ppl_quantile(const double *sorted, size_t n, double f);

/* The windows of the loop for n tokens: for begin = 0, S, 2S, ...: end = min(begin +
 * N, n), the window is ids[begin:end), its targets the last end - prev_end of them
 * but never its first (nothing predicts it); prev_end = end; it stops after the window
 * that reaches n. The positions scored in all (n - 1 when S < N; n minus the number
 * of windows when S = N). With chunks (S = N), llama-perplexity's loop: the whole
 * chunks ids[kN, (k+1)N) only, each scoring its labels at positions N/2 + 1 .. N - 1
 * (N - 1 - N/2 of them, each with N/2 tokens of context or more). 0 for bad options. */
size_t ppl_count(size_t n, int ctx, int stride, bool chunks);

/* Runs the loop: each window from an empty cache at positions 0.., the forward in
 * slices of o->slice positions continuing the cache, each slice's logits scored
 * before the next (in double, from the float logits). With base (may be NULL; same
 * vocab_size), each slice runs on it too, its scores are summed and each position's
 * KL kept in r->kl_each (ppl_result_free frees it, also after a failure). The
 * engines' contexts must hold ctx - 1 positions. 0, or -1 with err_set (a forward
 * failed, bad options). */
int ppl_run(struct eng *e, struct eng *base, const int32_t *ids, size_t n,
	    const struct ppl_options *o, struct ppl_result *r);

/* What one position scores. */
struct ppl_row {
	double nll;      /* -log softmax(p)[label] */
	double base_nll; /* -log softmax(q)[label]; 0 without q */
	double dp;       /* softmax(p)[label] - softmax(q)[label]; 0 without q */
	double kl;       /* KL(softmax(p) || softmax(q)); 0 without q */
	bool same_top1;  /* the first largest logit of p and of q at the same index */
};

/* Scores one row of logits p against label, and against q (may be NULL), in double
 * with stable log-sum-exps; scratch holds vocab doubles. KL = sum_v P(v) (log P(v) -
 * log Q(v)) is exactly 0 when p and q are equal, and never negative. */
void ppl_score_row(const float *p, const float *q, int vocab, int32_t label, double *scratch,
		   struct ppl_row *out);

#endif
