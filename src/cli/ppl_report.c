/* ppl_report.c — what `qwenchat perplexity` prints: the table, or one JSON object,
 * with llama-perplexity's statistics against a base. */
#include "src/cli/ppl_report.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

/* A JSON number, or null for what JSON cannot write (an overflowed perplexity). */
static void json_number(const char *key, double v)
{
	if (isfinite(v))
		printf(", \"%s\": %.17g", key, v);
	else
		printf(", \"%s\": null", key);
}

/* The standard error of a mean of n values from their sum and sum of squares; NAN
 * from fewer than two values, whose spread says nothing. */
static double std_error(double sum, double sum2, size_t n)
{
	if (n < 2)
		return NAN;
	double mean = sum / (double)n, var = sum2 / (double)n - mean * mean;
	return var > 0 ? sqrt(var / (double)(n - 1)) : 0;
}

/* What --kl-base adds to the table, as llama-perplexity's --kl-divergence statistics
 * (with MODEL as its Q and MODEL2 as its base). */
struct vs_base {
	double nll, ppl;        /* the base's mean NLL and perplexity */
	double ln_ratio, ln_se; /* mean of log q(token) - log p(token), its standard error */
	double kl, kl_se, top1, top1_se;
	double kl_q[5];           /* the positions' KL at kl_fractions */
	double dp, dp_se, dp_rms; /* p(token) - q(token): mean, its error, root mean square */
};

static const double kl_fractions[5] = {0.5, 0.9, 0.99, 0.999, 1};
static const char *const kl_names[5] = {"median", "90%", "99%", "99.9%", "max"};
static const char *const kl_keys[5] = {"kl_median", "kl_p90", "kl_p99", "kl_p999", "kl_max"};

/* Ascending, NaN (from logits that were not numbers) after every number. */
static int cmp_double(const void *x, const void *y)
{
	double a = *(const double *)x, b = *(const double *)y;
	if (isnan(a) || isnan(b))
		return !!isnan(a) - !!isnan(b);
	return (a > b) - (a < b);
}

/* Sorts r->kl_each for its quantiles. */
static void vs_base(struct ppl_result *r, struct vs_base *b)
{
	double n = (double)r->tokens;
	b->nll = r->base_nll / n;
	b->ppl = exp(b->nll);
	b->ln_ratio = (r->nll - r->base_nll) / n;
	b->ln_se = std_error(r->nll - r->base_nll, r->dnll2, r->tokens);
	b->kl = r->kl / n;
	b->kl_se = std_error(r->kl, r->kl2, r->tokens);
	b->top1 = (double)r->top1 / n;
	b->top1_se = r->tokens > 1 ? sqrt(b->top1 * (1 - b->top1) / (n - 1)) : NAN;
	qsort(r->kl_each, r->tokens, sizeof *r->kl_each, cmp_double);
	for (int k = 0; k < 5; k++)
		b->kl_q[k] = ppl_quantile(r->kl_each, r->tokens, kl_fractions[k]);
	b->dp = r->dp / n;
	b->dp_se = std_error(r->dp, r->dp2, r->tokens);
	b->dp_rms = sqrt(r->dp2 / n);
}

static void print_json(const struct ppl_report *a, const struct ppl_result *r,
		       const struct vs_base *b)
{
	double nll = r->nll / (double)r->tokens, se = std_error(r->nll, r->nll2, r->tokens);
	printf("{\"tokens\": %zu", r->tokens);
	json_number("nll", nll);
	json_number("ppl", exp(nll));
	json_number("nll_stderr", se);
	json_number("ppl_stderr", exp(nll) * se);
	printf(", \"ctx\": %d, \"stride\": %d, \"windows\": %zu, \"loop\": \"%s\"", a->ctx,
	       a->stride, r->windows,
	       a->convs   ? "sft"
	       : a->llama ? "llama-chunks"
			  : "sliding");
	const struct dset_sft *f = a->convs;
	if (a->convs)
		printf(", \"conversations\": %lld, \"cut\": %lld, \"left_out\": %lld, "
		       "\"no_answer\": %lld",
		       (long long)f->conversations, (long long)f->cut, (long long)f->left_out,
		       (long long)f->no_answer);
	if (b) {
		json_number("kl", b->kl);
		json_number("top1", b->top1);
		json_number("kl_stderr", b->kl_se);
		json_number("top1_stderr", b->top1_se);
		json_number("base_nll", b->nll);
		json_number("base_ppl", b->ppl);
		json_number("ppl_ratio", exp(b->ln_ratio));
		json_number("ln_ppl_ratio", b->ln_ratio);
		json_number("ln_ppl_ratio_stderr", b->ln_se);
		for (int k = 0; k < 5; k++)
			json_number(kl_keys[k], b->kl_q[k]);
		json_number("dp", b->dp);
		json_number("dp_stderr", b->dp_se);
		json_number("dp_rms", b->dp_rms);
	}
	printf("}\n");
}

/* The table's lines of --kl-base. */
static void print_vs_base(const struct ppl_report *a, const struct vs_base *b)
{
	printf("base        %.6f nats per token, perplexity %.4f (MODEL2, %s)\n", b->nll, b->ppl,
	       a->kl_base);
	printf("ratio       %.6f: perplexity over the base's (log %.6f", exp(b->ln_ratio),
	       b->ln_ratio);
	if (!isnan(b->ln_se))
		printf(" +/- %.6f", b->ln_se);
	printf(")\n");
	printf("kl          %.6f nats per token, mean KL(P_MODEL || P_MODEL2)\n", b->kl);
	printf("kl spread  ");
	for (int k = 0; k < 5; k++)
		printf(" %s %.6f%s", kl_names[k], b->kl_q[k], k < 4 ? "," : "\n");
	printf("top1        %.6f of the positions: the same most likely token\n", b->top1);
	printf("dp          mean %+.6f, rms %.6f: p_MODEL - p_MODEL2 of the scored token\n", b->dp,
	       b->dp_rms);
}

/* --sft: the table's lines of what was read. */
static void print_convs(const struct ppl_report *a)
{
	const struct dset_sft *f = a->convs;
	int ctx = a->ctx;
	printf("file        %s: %lld conversation%s, each a window of its own of at most %d "
	       "tokens, their answers scored\n",
	       a->file, (long long)f->conversations, f->conversations == 1 ? "" : "s", ctx);
	if (f->cut)
		printf("cut         %lld after their last answer within --ctx %d\n",
		       (long long)f->cut, ctx);
	if (f->left_out) {
		char keep[96];
		ppl_report_keep(keep, sizeof keep, (long long)f->left_out_ctx + 1, a->max_ctx);
		printf("left out    %lld whose first answer ends past --ctx %d (%s)\n",
		       (long long)f->left_out, ctx, keep);
	}
	if (f->no_answer)
		printf("no answer   %lld without an answer to score\n", (long long)f->no_answer);
}

void ppl_report_print(const struct ppl_report *a, struct ppl_result *r)
{
	int ctx = a->ctx;
	size_t n_all = a->n_all;
	struct vs_base b;
	if (a->kl_base)
		vs_base(r, &b);
	if (a->json) {
		print_json(a, r, a->kl_base ? &b : NULL);
		return;
	}
	double nll = r->nll / (double)r->tokens, ppl = exp(nll);
	/* as llama-perplexity's +/-: the spread of the positions' values over their count
	 * (positions of one text are not independent, so it is a lower bound) */
	double se = std_error(r->nll, r->nll2, r->tokens);
	if (a->convs)
		print_convs(a);
	else if (a->llama)
		printf("file        %s: %zu token%s, %zu whole chunk%s of %d, the last %d of each "
		       "scored (llama-perplexity's loop)\n",
		       a->file, n_all, n_all == 1 ? "" : "s", r->windows,
		       r->windows == 1 ? "" : "s", ctx, ctx - 1 - ctx / 2);
	else
		printf("file        %s: %zu token%s, %zu window%s of at most %d, stride %d\n",
		       a->file, n_all, n_all == 1 ? "" : "s", r->windows,
		       r->windows == 1 ? "" : "s", ctx, a->stride);
	if (a->n < n_all)
		printf("chunks      the first %zu windows only: tokens 1 to %zu\n", r->windows,
		       a->n);
	printf("tokens      %zu scored\n", r->tokens);
	printf("nll         %.6f nats per token (mean)\n", nll);
	printf("perplexity  %.4f\n", ppl);
	if (a->kl_base)
		print_vs_base(a, &b);
	if (isnan(se)) {
		printf("uncertainty none: one scored token has no spread\n");
		return;
	}
	printf("uncertainty +/- %.6f nats on the mean NLL, +/- %.4f on the perplexity", se,
	       ppl * se);
	if (a->kl_base)
		printf(", +/- %.6f on the KL, +/- %.6f on top1, +/- %.6f on dp", b.kl_se, b.top1_se,
		       b.dp_se);
	printf(" (standard errors)\n");
}

void ppl_report_keep(char *out, size_t size, long long need, int max_ctx)
{
	if (need <= max_ctx)
		snprintf(out, size, "--ctx %lld keeps them", need);
	else
		snprintf(out, size, "they need --ctx %lld; the model takes at most %d", need,
			 max_ctx);
}
