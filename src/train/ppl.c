/* ppl.c — the perplexity loop over one or two engines, sliding windows or documents,
 * and the per-position scores in double. */
#include "src/train/ppl.h"
#include "src/train/dataset.h"
#include "engine/engine.h"
#include "src/base/err.h"
#include "src/base/hugemem.h"
#include "src/base/proc.h"
#include "src/base/rowexp.h"

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

/* ---- one row of logits ------------------------------------------------------------ */

/* The largest value and its first index. */
static float row_max(const float *x, int vocab, int *arg)
{
	int best = 0;
	for (int v = 1; v < vocab; v++)
		if (x[v] > x[best])
			best = v;
	if (arg)
		*arg = best;
	return x[best];
}

/* log sum_v exp(x[v]), shifted by the largest so that no term overflows; with e
 * (may be NULL), e[v] = exp(x[v] - max) and *sum their sum. */
static double log_sum_exp(const float *x, int vocab, double *e, double *sum)
{
	double m = row_max(x, vocab, NULL), s = rowexp_sum(x, vocab, m, 1, e);
	if (sum)
		*sum = s;
	return m + log(s);
}

/* KL(P || Q) from P's terms exp(p - max p) (e, summing to sp) and both log-sum-exps,
 * computed once per row for the NLL too. */
static double kl_terms(const float *p, const float *q, int vocab, const double *e, double sp,
		       double lp, double lq)
{
	double kl = 0;
	for (int v = 0; v < vocab; v++)
		kl += e[v] / sp * (((double)p[v] - lp) - ((double)q[v] - lq));
	/* KL >= 0; a sum of terms that cancel to rounding may land just below */
	return kl > 0 ? kl : 0;
}

void ppl_score_row(const float *p, const float *q, int vocab, int32_t label, double *scratch,
		   struct ppl_row *out)
{
	int ap = 0, aq = 0;
	double sp, lp = log_sum_exp(p, vocab, q ? scratch : NULL, &sp);
	out->nll = lp - (double)p[label];
	out->base_nll = out->dp = out->kl = 0;
	out->same_top1 = false;
	if (!q)
		return;
	double lq = log_sum_exp(q, vocab, NULL, NULL);
	out->base_nll = lq - (double)q[label];
	out->dp = exp(-out->nll) - exp(-out->base_nll);
	out->kl = kl_terms(p, q, vocab, scratch, sp, lp, lq);
	row_max(p, vocab, &ap);
	row_max(q, vocab, &aq);
	out->same_top1 = ap == aq;
}

/* ---- the windows ------------------------------------------------------------------ */

/* One window of the loop: ids[begin, end), scored from window position `first` on. */
struct window {
	size_t begin, end, first;
};

/* The window after the one that ended at *prev_end (begin: its start); false after
 * the last. */
static bool next_window(size_t n, size_t ctx, size_t begin, size_t *prev_end,
			struct window *w)
{
	if (begin >= n || (begin > 0 && *prev_end == n))
		return false;
	w->begin = begin;
	w->end = begin + ctx < n ? begin + ctx : n;
	size_t len = w->end - w->begin, trg = w->end - *prev_end;
	/* the targets are the last trg labels, but the first label of a window has no
	 * logits before it (the loss is shifted by one) */
	w->first = len - trg > 1 ? len - trg : 1;
	*prev_end = w->end;
	return true;
}

/* llama-perplexity's chunk at begin: ids[begin, begin + ctx) when it is whole, its
 * labels scored from position ctx/2 + 1 on (the logits of positions ctx/2 .. ctx - 2,
 * each with ctx/2 tokens of context or more); false after the last whole one. */
static bool next_chunk(size_t n, size_t ctx, size_t begin, struct window *w)
{
	if (begin + ctx > n)
		return false;
	*w = (struct window){begin, begin + ctx, ctx / 2 + 1};
	return true;
}

/* The window at begin in either loop (chunks: a stride of ctx). */
static bool window_at(size_t n, size_t ctx, bool chunks, size_t begin, size_t *prev_end,
		      struct window *w)
{
	return chunks ? next_chunk(n, ctx, begin, w) : next_window(n, ctx, begin, prev_end, w);
}

/* Document d of o->docs as a window, scored from its first scored token after its
 * first; false when it scores none. */
static bool doc_window(const struct ppl_options *o, int64_t d, struct window *w)
{
	size_t b = o->docs[d], e = o->docs[d + 1], f = 1;
	while (b + f < e && !(o->flags[b + f] & DSET_SCORED))
		f++;
	*w = (struct window){b, e, f};
	return b + f < e;
}

/* The positions the documents score; SIZE_MAX when they are not documents of at most
 * ctx tokens of ids[0, n) in order. */
static size_t doc_count(const struct ppl_options *o, size_t n)
{
	size_t total = 0;
	if (o->ndocs < 1 || !o->flags || o->docs[0] != 0 || o->docs[o->ndocs] > n)
		return SIZE_MAX;
	for (int64_t d = 0; d < o->ndocs; d++) {
		size_t b = o->docs[d], e = o->docs[d + 1];
		if (e < b + 2 || e - b > (size_t)o->ctx)
			return SIZE_MAX;
		for (size_t i = b + 1; i < e; i++)
			total += (o->flags[i] & DSET_SCORED) != 0;
	}
	return total;
}

size_t ppl_count(size_t n, int ctx, int stride, bool chunks)
{
	size_t total = 0, prev_end = 0;
	struct window w;
	if (ctx < 1 || stride < 1 || stride > ctx || (chunks && stride != ctx))
		return 0;
	for (size_t b = 0; window_at(n, (size_t)ctx, chunks, b, &prev_end, &w); b += (size_t)stride)
		total += w.end - w.begin > w.first ? w.end - w.begin - w.first : 0;
	return total;
}

enum { MAX_THREADS = 256 };

struct run {
	struct eng *e[2];
	float *logits[2];     /* (slice, vocab) each */
	struct ppl_row *rows; /* (slice) the scores of a slice's rows */
	double *scratch;      /* (threads, vocab) */
	int threads;
	const struct ppl_options *o;
	struct ppl_result *r;
	size_t total;
};

/* One scoring thread's share of a slice: rows t, t + nt, ... */
struct part {
	struct run *u;
	const int32_t *label;
	const uint8_t *mask; /* (m) flags: rows flagged DSET_SCORED scored; NULL: every one */
	int m, t, nt;
};

static void *score_part(void *arg)
{
	struct part *pt = arg;
	struct run *u = pt->u;
	size_t V = (size_t)u->o->vocab;
	for (int i = pt->t; i < pt->m; i += pt->nt)
		if (!pt->mask || (pt->mask[i] & DSET_SCORED))
			ppl_score_row(u->logits[0] + (size_t)i * V,
				      u->e[1] ? u->logits[1] + (size_t)i * V : NULL, (int)V,
				      pt->label[i], u->scratch + (size_t)pt->t * V, &u->rows[i]);
	return NULL;
}

/* Scores rows [0, m) of the slice's logits (row i predicts label[i]; with mask, only
 * those flagged DSET_SCORED) on the threads, then adds them up in order: the sums do not
 * depend on the number of threads.
 * Scoring a row of a Qwen3 vocabulary (more so against a base) costs about as much
 * as the forward of a token of a small model on a CPU, and far more than one on a
 * GPU. */
static void score(struct run *u, int m, const int32_t *label, const uint8_t *mask)
{
	int nt = u->threads < m ? u->threads : m;
	pthread_t th[MAX_THREADS];
	struct part pt[MAX_THREADS];
	bool started[MAX_THREADS] = {false};
	for (int t = 0; t < nt; t++) {
		pt[t] = (struct part){u, label, mask, m, t, nt};
		started[t] = t > 0 && proc_thread_create(&th[t], score_part, &pt[t]) == 0;
	}
	for (int t = 0; t < nt; t++) /* the calling thread's share, and any not started */
		if (!started[t])
			score_part(&pt[t]);
	for (int t = 1; t < nt; t++)
		if (started[t])
			pthread_join(th[t], NULL);
	struct ppl_result *r = u->r;
	for (int i = 0; i < m; i++) {
		const struct ppl_row *w = &u->rows[i];
		if (mask && !(mask[i] & DSET_SCORED))
			continue;
		r->nll += w->nll;
		r->nll2 += w->nll * w->nll;
		if (u->e[1]) {
			r->base_nll += w->base_nll;
			r->dnll2 += (w->nll - w->base_nll) * (w->nll - w->base_nll);
			r->kl += w->kl;
			r->kl2 += w->kl * w->kl;
			r->dp += w->dp;
			r->dp2 += w->dp * w->dp;
			r->top1 += w->same_top1;
			r->kl_each[r->tokens] = w->kl;
		}
		r->tokens++;
	}
}

/* The forward of ids[0, n) at pos on each engine: every row of logits, or when
 * !all only the last one's. */
static int forward(struct run *u, const int32_t *ids, int n, int pos, bool all)
{
	for (int k = 0; k < 2 && u->e[k]; k++)
		if (eng_forward(u->e[k], ids, n, pos, u->logits[k], all)) {
			char why[1024];
			snprintf(why, sizeof why, "%s", err_msg());
			return u->o->names[k] ? err_set("%s: %s", u->o->names[k], why) : -1;
		}
	return 0;
}

/* One window: the inputs are its tokens but the last (whose logits would predict past
 * it); those before the first scored label's predecessor run without logits rows. */
static int run_window(struct run *u, const int32_t *ids, const struct window *w)
{
	const int32_t *x = ids + w->begin;
	const uint8_t *mask = u->o->docs ? u->o->flags + w->begin : NULL;
	int len = (int)(w->end - w->begin), a = (int)w->first - 1;
	int slice = u->o->slice;
	if (a > 0 && forward(u, x, a, 0, false))
		return -1;
	for (int p = a; p < len - 1; p += slice) {
		int m = len - 1 - p < slice ? len - 1 - p : slice;
		if (forward(u, x + p, m, p, true))
			return -1;
		score(u, m, x + p + 1, mask ? mask + p + 1 : NULL);
		if (u->o->progress)
			u->o->progress(u->o->user, u->r->tokens, u->total);
	}
	u->r->windows++;
	return 0;
}

int ppl_run(struct eng *e, struct eng *base, const int32_t *ids, size_t n,
	    const struct ppl_options *o, struct ppl_result *r)
{
	*r = (struct ppl_result){0};
	if (o->vocab < 1 || o->ctx < 2 || o->stride < 1 || o->stride > o->ctx || o->slice < 0 ||
	    (o->chunks && o->stride != o->ctx))
		return err_set("perplexity: bad options (vocab %d, ctx %d, stride %d, slice %d)",
			       o->vocab, o->ctx, o->stride, o->slice);
	for (size_t i = 0; i < n; i++)
		if (ids[i] < 0 || ids[i] >= o->vocab)
			return err_set("perplexity: token %zu is id %d, not below vocab_size %d", i,
				       (int)ids[i], o->vocab);
	struct ppl_options so = *o;
	if (!so.slice)
		so.slice = PPL_DEFAULT_SLICE;
	if (so.slice > so.ctx)
		so.slice = so.ctx;
	struct run u = {.e = {e, base},
			.o = &so,
			.r = r,
			.total = o->docs ? doc_count(o, n)
					 : ppl_count(n, o->ctx, o->stride, o->chunks)};
	if (u.total == SIZE_MAX)
		return err_set("perplexity: %lld documents that are not 2 to %d tokens each of "
			       "the %zu given, in order",
			       (long long)o->ndocs, o->ctx, n);
	u.threads = o->threads < 1 ? 1 : o->threads > MAX_THREADS ? MAX_THREADS : o->threads;
	size_t V = (size_t)o->vocab, rows = (size_t)so.slice;
	int rc = -1;
	for (int k = 0; k < 2; k++)
		if (u.e[k] && !(u.logits[k] = huge_zalloc(rows * V * sizeof(float))))
			goto oom;
	if (!(u.rows = malloc(rows * sizeof *u.rows)) ||
	    !(u.scratch = malloc((size_t)u.threads * V * sizeof *u.scratch)))
		goto oom;
	if (base && !(r->kl_each = malloc((u.total ? u.total : 1) * sizeof *r->kl_each))) {
		err_set("perplexity: out of memory for the KL of %zu positions", u.total);
		goto out;
	}
	struct window w;
	size_t prev_end = 0;
	for (int64_t d = 0; o->docs && d < o->ndocs; d++)
		if (doc_window(o, d, &w) && run_window(&u, ids, &w))
			goto out;
	for (size_t b = 0; !o->docs && window_at(n, (size_t)o->ctx, o->chunks, b, &prev_end, &w);
	     b += (size_t)o->stride)
		if (w.end - w.begin > w.first && run_window(&u, ids, &w))
			goto out;
	rc = 0;
	goto out;
oom:
	err_set("perplexity: out of memory for %zu rows of %zu logits", rows, V);
out:
	if (rc)
		ppl_result_free(r);
	huge_free(u.logits[0], rows * V * sizeof(float));
	huge_free(u.logits[1], rows * V * sizeof(float));
	free(u.rows);
	free(u.scratch);
	return rc;
}

void ppl_result_free(struct ppl_result *r)
{
	free(r->kl_each);
	r->kl_each = NULL;
}

double ppl_quantile(const double *sorted, size_t n, double f)
{
	if (f <= 0 || n == 1)
		return sorted[0];
	if (f >= 1)
		return sorted[n - 1];
	double x = f * (double)(n - 1);
	size_t i = (size_t)x;
	double t = x - (double)i;
	return i + 1 < n ? (1 - t) * sorted[i] + t * sorted[i + 1] : sorted[i];
}
