/* sampler.c — next-token selection: penalties, temperature, top-k/top-p/min-p cuts
 * without sorting the vocabulary, a seeded xoshiro256** draw; generation_config.json. */
#include "src/session/sampler.h"

#include <jansson.h>
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "src/base/err.h"
#include "src/base/fileio.h"
#include "src/base/jsonlimit.h"
#include "src/base/rowexp.h"

struct samp {
	struct samp_params p;
	int vocab;
	uint64_t rng[4]; /* xoshiro256** state */
	float *work;     /* (vocab) logits after the penalties */
	int32_t *count;  /* (vocab) times an id was met this call (zero between calls) */
	int32_t *cid;    /* (vocab) candidate ids */
	float *cp;       /* (vocab) candidate probabilities */
	int n;           /* candidates in cid/cp */
	bool all;        /* every id survives: cp is indexed by id, cid unused */
	bool built;      /* work holds the last call's penalised logits */
};

void samp_params_default(struct samp_params *p)
{
	memset(p, 0, sizeof *p);
	samp_params_preset(p, true, 0);
	p->presence_penalty = 0;
	p->frequency_penalty = 0;
	p->repetition_penalty = 1;
	p->seed = 0;
	p->greedy = false;
}

void samp_params_preset(struct samp_params *p, bool thinking, unsigned user_set)
{
	if (!(user_set & SAMP_SET_TEMP))
		p->temperature = thinking ? 0.6 : 0.7;
	if (!(user_set & SAMP_SET_TOP_P))
		p->top_p = thinking ? 0.95 : 0.8;
	if (!(user_set & SAMP_SET_TOP_K))
		p->top_k = 20;
	if (!(user_set & SAMP_SET_MIN_P))
		p->min_p = 0;
}

void samp_params_override(struct samp_params *p, const struct samp_params *user, unsigned set)
{
	if (set & SAMP_SET_TEMP)
		p->temperature = user->temperature;
	if (set & SAMP_SET_TOP_K)
		p->top_k = user->top_k;
	if (set & SAMP_SET_TOP_P)
		p->top_p = user->top_p;
	if (set & SAMP_SET_MIN_P)
		p->min_p = user->min_p;
	if (set & SAMP_SET_PRESENCE)
		p->presence_penalty = user->presence_penalty;
	if (set & SAMP_SET_FREQUENCY)
		p->frequency_penalty = user->frequency_penalty;
	if (set & SAMP_SET_REPEAT)
		p->repetition_penalty = user->repetition_penalty;
	if (set & SAMP_SET_SEED)
		p->seed = user->seed;
	if (set & SAMP_SET_GREEDY)
		p->greedy = user->greedy;
}

void samp_params_apply(struct samp_params *p, const struct samp_params *user, unsigned set)
{
	samp_params_override(p, user, set);
	if (!(set & SAMP_SET_GREEDY) && (set & SAMP_SET_TEMP) && user->temperature > 0)
		p->greedy = false;
}

int samp_params_check(const struct samp_params *p)
{
	if (!isfinite(p->temperature) || p->temperature < 0)
		return err_set("temperature: %g is not a number >= 0", p->temperature);
	if (p->top_k < 0)
		return err_set("top_k: %d is negative", p->top_k);
	if (!isfinite(p->top_p) || p->top_p < 0 || p->top_p > 1)
		return err_set("top_p: %g is not in [0, 1]", p->top_p);
	if (!isfinite(p->min_p) || p->min_p < 0 || p->min_p > 1)
		return err_set("min_p: %g is not in [0, 1]", p->min_p);
	/* Bounds far beyond any useful value, so that a penalised logit stays finite. */
	if (!isfinite(p->presence_penalty) || fabs(p->presence_penalty) > 1000)
		return err_set("presence_penalty: %g is not in [-1000, 1000]", p->presence_penalty);
	/* ... a count of up to a whole context (~2^20) times it included */
	if (!isfinite(p->frequency_penalty) || fabs(p->frequency_penalty) > 1000)
		return err_set("frequency_penalty: %g is not in [-1000, 1000]",
			       p->frequency_penalty);
	if (!isfinite(p->repetition_penalty) || p->repetition_penalty < 1e-3 ||
	    p->repetition_penalty > 1e3)
		return err_set("repetition_penalty: %g is not in [0.001, 1000]",
			       p->repetition_penalty);
	return 0;
}

/* A number field of generation_config.json into *out (absent or null: unchanged). */
static int gc_number(json_t *root, const char *path, const char *key, double *out)
{
	json_t *v = json_object_get(root, key);
	if (!v || json_is_null(v))
		return 0;
	if (!json_is_number(v))
		return err_set("%s: %s is not a number", path, key);
	*out = json_number_value(v);
	return 0;
}

static int gc_eos(json_t *root, const char *path, int32_t *eos, int *n_eos)
{
	json_t *v = json_object_get(root, "eos_token_id");
	if (!v || json_is_null(v))
		return 0;
	json_t *one[1] = {v};
	json_t **items = one;
	size_t n = 1;
	if (json_is_array(v)) {
		n = json_array_size(v);
		if (n > SAMP_MAX_EOS)
			return err_set("%s: eos_token_id lists %zu ids (at most %d)", path, n,
				       SAMP_MAX_EOS);
		items = NULL;
	}
	int k = 0;
	for (size_t i = 0; i < n; i++) {
		json_t *x = items ? items[i] : json_array_get(v, i);
		if (!json_is_integer(x) || json_integer_value(x) < 0 ||
		    json_integer_value(x) > INT32_MAX)
			return err_set("%s: eos_token_id: not a token id", path);
		eos[k++] = (int32_t)json_integer_value(x);
	}
	*n_eos = k;
	return 0;
}

int samp_parse_generation_config(const char *text, size_t len, const char *name,
				 struct samp_params *p, int32_t *eos, int *n_eos)
{
	json_error_t je;
	json_t *root = json_loadb(text, len, 0, &je);
	int rc = -1, k = 0;
	int32_t ids[SAMP_MAX_EOS];
	struct samp_params q = *p;
	double topk = q.top_k;
	if (!root || !json_is_object(root)) {
		err_set("%s: line %d: %s", name, root ? 1 : je.line,
			root ? "not a JSON object" : je.text);
		goto out;
	}
	if (gc_number(root, name, "temperature", &q.temperature) ||
	    gc_number(root, name, "top_k", &topk) || gc_number(root, name, "top_p", &q.top_p) ||
	    gc_number(root, name, "min_p", &q.min_p) ||
	    gc_number(root, name, "repetition_penalty", &q.repetition_penalty) ||
	    gc_number(root, name, "presence_penalty", &q.presence_penalty) ||
	    gc_eos(root, name, ids, &k))
		goto out;
	if (topk != floor(topk) || topk < 0) {
		err_set("%s: top_k: %g is not a whole number >= 0", name, topk);
		goto out;
	}
	/* more than any vocabulary holds keeps them all, as transformers clamps it */
	q.top_k = topk > SAMP_MAX_TOP_K ? SAMP_MAX_TOP_K : (int)topk;
	json_t *ds = json_object_get(root, "do_sample");
	if (ds && json_is_boolean(ds) && !json_is_true(ds))
		q.greedy = true;
	if (samp_params_check(&q)) {
		err_prefix("%s", name);
		goto out;
	}
	/* nothing changes unless the whole file is good */
	*p = q;
	if (k && eos)
		memcpy(eos, ids, (size_t)k * sizeof *ids);
	if (k && n_eos)
		*n_eos = k;
	rc = 0;
out:
	json_decref(root);
	return rc;
}

int samp_load_generation_config(const char *dir, struct samp_params *p, int32_t *eos, int *n_eos)
{
	char *path = fio_join(dir, "generation_config.json");
	if (!path)
		return err_set("out of memory");
	size_t len;
	char *text = NULL;
	int rc = 0;
	if (fio_exists(path)) { /* optional; if there, a regular file */
		static const struct jlim lim = {.max_depth = 32, .max_values = 1 << 14};
		text = jlim_read_file(path, 1 << 20, &lim, &len);
		rc = text ? samp_parse_generation_config(text, len, path, p, eos, n_eos) : -1;
	}
	free(text);
	free(path);
	return rc;
}

static uint64_t splitmix64(uint64_t *x)
{
	uint64_t z = (*x += 0x9e3779b97f4a7c15ULL);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

void samp_reseed(struct samp *s, uint64_t seed)
{
	for (int i = 0; i < 4; i++)
		s->rng[i] = splitmix64(&seed);
}

static uint64_t rotl(uint64_t x, int k)
{
	return (x << k) | (x >> (64 - k));
}

/* xoshiro256**: a uniform double in [0, 1). */
static double rng_uniform(struct samp *s)
{
	uint64_t *r = s->rng;
	uint64_t out = rotl(r[1] * 5, 7) * 9, t = r[1] << 17;
	r[2] ^= r[0], r[3] ^= r[1], r[1] ^= r[2], r[0] ^= r[3];
	r[2] ^= t, r[3] = rotl(r[3], 45);
	return (double)(out >> 11) * 0x1.0p-53;
}

double samp_peek_uniform(const struct samp *s)
{
	struct samp copy;
	memcpy(copy.rng, s->rng, sizeof copy.rng);
	return rng_uniform(&copy);
}

void samp_take_uniform(struct samp *s)
{
	rng_uniform(s);
}

struct samp *samp_new(const struct samp_params *p, int vocab)
{
	if (samp_params_check(p))
		return NULL;
	if (vocab <= 0) {
		err_set("sampler: vocabulary size %d", vocab);
		return NULL;
	}
	struct samp *s = calloc(1, sizeof *s);
	if (!s)
		goto oom;
	s->p = *p;
	s->vocab = vocab;
	s->work = malloc((size_t)vocab * sizeof *s->work);
	s->count = calloc((size_t)vocab, sizeof *s->count);
	s->cid = malloc((size_t)vocab * sizeof *s->cid);
	s->cp = malloc((size_t)vocab * sizeof *s->cp);
	if (!s->work || !s->count || !s->cid || !s->cp)
		goto oom;
	samp_reseed(s, p->seed);
	return s;
oom:
	samp_free(s);
	err_set("sampler: out of memory");
	return NULL;
}

void samp_free(struct samp *s)
{
	if (!s)
		return;
	free(s->work);
	free(s->count);
	free(s->cid);
	free(s->cp);
	free(s);
}

int samp_set_params(struct samp *s, const struct samp_params *p)
{
	if (samp_params_check(p))
		return -1;
	bool reseed = p->seed != s->p.seed;
	s->p = *p;
	if (reseed)
		samp_reseed(s, p->seed);
	return 0;
}

const struct samp_params *samp_get_params(const struct samp *s)
{
	return &s->p;
}

/* A penalised logit scaled past the float range stays the largest/smallest one. */
static float in_range(float x)
{
	return isfinite(x) ? x : x > 0 ? FLT_MAX : -FLT_MAX;
}

/* Copies the logits into work and applies the penalties: the repetition penalty once
 * to each distinct id of h->recent, then (vLLM's order) frequency x count + presence
 * subtracted from each distinct id of h->answer. -1 on a NaN logit. */
static int penalise(struct samp *s, const float *logits, const struct samp_history *h)
{
	int V = s->vocab;
	for (int i = 0; i < V; i++) {
		if (!isfinite(logits[i]))
			return err_set("sampler: logit %d is not a finite number", i);
		s->work[i] = logits[i];
	}
	double rp = s->p.repetition_penalty, pp = s->p.presence_penalty;
	double fp = s->p.frequency_penalty;
	if (!h)
		return 0;
	for (int i = 0; rp != 1 && i < h->n_recent; i++) {
		int32_t id = h->recent[i];
		if (id < 0 || id >= V || s->count[id]++)
			continue;
		float x = s->work[id];
		s->work[id] = in_range(x > 0 ? (float)(x / rp) : (float)(x * rp));
	}
	for (int i = 0; rp != 1 && i < h->n_recent; i++)
		if (h->recent[i] >= 0 && h->recent[i] < V)
			s->count[h->recent[i]] = 0;
	if (pp == 0 && fp == 0)
		return 0;
	for (int i = 0; i < h->n_answer; i++)
		if (h->answer[i] >= 0 && h->answer[i] < V)
			s->count[h->answer[i]]++;
	for (int i = 0; i < h->n_answer; i++) {
		int32_t id = h->answer[i];
		if (id < 0 || id >= V || !s->count[id])
			continue;
		s->work[id] = in_range((float)(s->work[id] - fp * s->count[id] - pp));
		s->count[id] = 0;
	}
	return 0;
}

/* True when id a comes after id b in the candidate order: descending logit, ties
 * by ascending id (so the order is deterministic). */
static bool after(const float *w, int32_t a, int32_t b)
{
	return w[a] < w[b] || (w[a] == w[b] && a > b);
}

/* Max-heap on the candidate order: the root is the id that comes last. */
static void sift_down(const float *w, int32_t *h, int i, int n)
{
	for (;;) {
		int c = 2 * i + 1;
		if (c >= n)
			break;
		if (c + 1 < n && after(w, h[c + 1], h[c]))
			c++;
		if (!after(w, h[c], h[i]))
			break;
		int32_t t = h[i];
		h[i] = h[c];
		h[c] = t;
		i = c;
	}
}

/* Heap sort of ids[0..n) into candidate order: in place, O(n log n), no qsort
 * callback state. */
static void sort_ids(const float *w, int32_t *ids, int n)
{
	for (int i = n / 2 - 1; i >= 0; i--)
		sift_down(w, ids, i, n);
	for (int end = n - 1; end > 0; end--) {
		int32_t t = ids[0];
		ids[0] = ids[end];
		ids[end] = t;
		sift_down(w, ids, 0, end);
	}
}

/* Keeps the first k ids of the candidate order (the k largest entries of work, ties
 * to the smaller id, as the CUDA sampler keeps them) in cid[0..k): a heap whose root
 * is the kept id that comes last. O(V log k). */
static void heap_topk(struct samp *s, int k)
{
	const float *w = s->work;
	int32_t *h = s->cid;
	int n = 0;
	for (int32_t id = 0; id < s->vocab; id++) {
		if (n < k) { /* sift up */
			int i = n++;
			while (i > 0 && after(w, id, h[(i - 1) / 2])) {
				h[i] = h[(i - 1) / 2];
				i = (i - 1) / 2;
			}
			h[i] = id;
		} else if (w[id] > w[h[0]]) { /* ids ascend: a tie with the root comes after it */
			h[0] = id;
			sift_down(w, h, 0, n);
		}
	}
	s->n = n;
}

/* Probabilities of the sorted candidates cid[0..n) at the temperature, then the
 * top-p and min-p cuts (both keep a prefix of the sorted order), renormalised.
 * z_all: the sum of exp((x - max)/T) over everything before the cut, or 0. */
static void cut_sorted(struct samp *s, double z_all)
{
	double T = s->p.temperature, m = s->work[s->cid[0]], z = 0;
	for (int i = 0; i < s->n; i++) {
		s->cp[i] = (float)exp((s->work[s->cid[i]] - m) / T);
		z += s->cp[i];
	}
	/* top-p measures against the whole distribution it follows: the top-k set, or
	 * the full vocabulary when only a threshold narrowed the candidates. */
	if (z_all > 0)
		z = z_all;
	/* top-p: the smallest prefix whose probability reaches top_p (at least one). */
	double cum = 0;
	int keep = s->n;
	for (int i = 0; i < s->n; i++) {
		cum += s->cp[i] / z;
		if (cum >= s->p.top_p) {
			keep = i + 1;
			break;
		}
	}
	/* min-p: relative to the top probability (cp[0] is exp(0) = 1 before scaling). */
	int j = 1;
	while (j < keep && s->cp[j] >= s->p.min_p)
		j++;
	s->n = j;
	z = 0;
	for (int i = 0; i < s->n; i++)
		z += s->cp[i];
	for (int i = 0; i < s->n; i++)
		s->cp[i] = (float)(s->cp[i] / z);
}

/* No top-k: relative weights w = exp((x - max)/T) for the whole vocabulary; when a
 * cut applies, only ids above a threshold are sorted. The threshold starts high and
 * falls until the ids above it hold top_p of the mass (the nucleus is then among
 * them) or it reaches min_p (nothing below survives anyway). */
static void full_vocab(struct samp *s)
{
	int V = s->vocab;
	double T = s->p.temperature, m = -INFINITY, z = 0;
	for (int i = 0; i < V; i++)
		if (s->work[i] > m)
			m = s->work[i];
	/* weights in float like the logits; the sum in double (151,936 terms) */
	for (int i = 0; i < V; i++) {
		s->cp[i] = expf((float)((s->work[i] - m) / T)); /* T may be tiny: divide */
		z += s->cp[i];
	}
	if (s->p.top_p >= 1 && s->p.min_p <= 0) {
		for (int i = 0; i < V; i++)
			s->cp[i] = (float)(s->cp[i] / z);
		s->all = true;
		s->n = V;
		return;
	}
	double t = 1.0 / 64;
	for (;;) {
		if (t < s->p.min_p)
			t = s->p.min_p;
		double mass = 0;
		int n = 0;
		for (int i = 0; i < V; i++)
			if (s->cp[i] >= t) {
				s->cid[n++] = i;
				mass += s->cp[i];
			}
		if (mass / z >= s->p.top_p || t <= s->p.min_p || t < 1e-30) {
			s->n = n;
			break;
		}
		t /= 64;
	}
	/* A threshold below every weight kept the whole vocabulary: sorting it is the
	 * only way to find this nucleus (a near-flat distribution with top_p near 1). */
	sort_ids(s->work, s->cid, s->n);
	cut_sorted(s, z);
}

/* Fills the candidate set for these logits. */
static int build(struct samp *s, const float *logits, int vocab, const struct samp_history *h)
{
	if (vocab != s->vocab)
		return err_set("sampler: logits of %d entries, expected %d", vocab, s->vocab);
	if (h && (h->n_recent < 0 || (h->n_recent > 0 && !h->recent) || h->n_answer < 0 ||
		  (h->n_answer > 0 && !h->answer)))
		return err_set("sampler: bad token list to penalise");
	s->built = false;
	if (penalise(s, logits, h))
		return -1;
	s->built = true;
	s->all = false;
	if (s->p.greedy || s->p.temperature == 0) {
		int32_t best = 0;
		for (int32_t i = 1; i < vocab; i++)
			if (s->work[i] > s->work[best])
				best = i;
		s->cid[0] = best;
		s->cp[0] = 1;
		s->n = 1;
		return 0;
	}
	if (s->p.top_k > 0 && s->p.top_k < vocab) {
		heap_topk(s, s->p.top_k);
		sort_ids(s->work, s->cid, s->n);
		cut_sorted(s, 0);
		return 0;
	}
	full_vocab(s);
	return 0;
}

int32_t samp_next(struct samp *s, const float *logits, int vocab, const struct samp_history *h)
{
	if (build(s, logits, vocab, h))
		return -1;
	if (s->n == 1)
		return s->all ? 0 : s->cid[0];
	double u = rng_uniform(s), cum = 0;
	for (int i = 0; i < s->n; i++) {
		cum += s->cp[i];
		if (u < cum)
			return s->all ? i : s->cid[i];
	}
	/* Rounding left u above the total: the last candidate with any probability. */
	int i = s->n - 1;
	while (i > 0 && s->cp[i] == 0)
		i--;
	return s->all ? i : s->cid[i];
}

int samp_candidates(struct samp *s, const float *logits, int vocab, const struct samp_history *h,
		    int32_t *ids, float *probs, int max)
{
	if (build(s, logits, vocab, h))
		return -1;
	for (int i = 0; i < s->n && i < max; i++) {
		ids[i] = s->all ? i : s->cid[i];
		probs[i] = s->cp[i];
	}
	return s->n;
}

int samp_drawn(const struct samp *s, int32_t id, float *p, struct samp_logprob *top, int n)
{
	if (!s->built)
		return err_set("sampler: no distribution yet (samp_next first)");
	if (id < 0 || id >= s->vocab || n < 0)
		return err_set("sampler: the probability of id %d in a vocabulary of %d", (int)id,
			       s->vocab);
	int count = s->all ? s->vocab : s->n, k = 0;
	*p = 0;
	for (int i = 0; i < count; i++) { /* the n largest by insertion, as below */
		int32_t cid = s->all ? i : s->cid[i];
		float cp = s->cp[i];
		if (cid == id)
			*p = cp;
		if (n == 0 || cp <= 0 || (k == n && cp <= top[n - 1].logprob))
			continue;
		int j = k < n ? k++ : n - 1;
		while (j > 0 && cp > top[j - 1].logprob) {
			top[j] = top[j - 1];
			j--;
		}
		top[j] = (struct samp_logprob){cid, cp};
	}
	for (int i = 0; i < k; i++)
		top[i].logprob = logf(top[i].logprob);
	return k;
}

/* Log-softmax of w at temperature T: id's into *logprob, the n largest into top. */
static void row_logprobs(const float *w, int vocab, double T, int32_t id, float *logprob,
			 struct samp_logprob *top, int n)
{
	double m = w[0];
	for (int i = 1; i < vocab; i++)
		if (w[i] > m)
			m = w[i];
	double logz = log(rowexp_sum(w, vocab, m, T, NULL));
	*logprob = (float)((w[id] - m) / T - logz);
	/* The n largest by insertion into a sorted prefix: the common case (an id below the
	 * current n-th) costs one comparison, and n is small (OpenAI allows 20). */
	int k = 0;
	for (int32_t i = 0; i < vocab && n > 0; i++) {
		if (k == n && !after(w, top[n - 1].id, i))
			continue;
		int j = k < n ? k++ : n - 1;
		while (j > 0 && after(w, top[j - 1].id, i)) {
			top[j] = top[j - 1];
			j--;
		}
		top[j].id = i;
	}
	for (int i = 0; i < k; i++)
		top[i].logprob = (float)((w[top[i].id] - m) / T - logz);
}

int samp_logprobs(const struct samp *s, int32_t id, float *logprob, struct samp_logprob *top, int n)
{
	if (!s->built)
		return err_set("sampler: no distribution yet (samp_next first)");
	if (id < 0 || id >= s->vocab || n < 0 || n > s->vocab)
		return err_set("sampler: logprobs of id %d (top %d) in a vocabulary of %d", (int)id,
			       n, s->vocab);
	double T = s->p.greedy || s->p.temperature == 0 ? 1 : s->p.temperature;
	row_logprobs(s->work, s->vocab, T, id, logprob, top, n);
	return 0;
}

int samp_row_logprobs(const float *logits, int vocab, int32_t id, float *logprob,
		      struct samp_logprob *top, int n)
{
	if (vocab < 1 || id < 0 || id >= vocab || n < 0 || n > vocab)
		return err_set("sampler: logprobs of id %d (top %d) in a vocabulary of %d", (int)id,
			       n, vocab);
	row_logprobs(logits, vocab, 1, id, logprob, top, n);
	return 0;
}
