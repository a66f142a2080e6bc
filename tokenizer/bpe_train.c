/* bpe_train.c — the BPE merge loop: incremental pair counts, pair → words index,
 * and a max-heap with lazy invalidation, so a merge costs only the words that
 * hold the merged pair, never a rescan of the whole vocabulary of pre-tokens. */
#include "tokenizer/bpe_train.h"

#include "src/base/array.h"
#include "src/base/err.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

/* One adjacent pair of token ids, its weighted count and the words it was seen in.
 * The word list may hold stale entries (words that since lost the pair): a merge
 * checks each word, which is cheaper than keeping the list exact. */
struct pair {
	int32_t a, b;
	int64_t count;
	uint32_t *words, nwords, capwords;
	uint32_t dirty; /* merge step that last raised the count */
};

struct heap_entry {
	int64_t count; /* the pair's count when pushed; stale when it differs now */
	uint32_t pair;
};

struct trainer {
	/* words: symbols of word w are sym[start[w] .. start[w] + len[w]) */
	uint32_t nw;
	int32_t *sym;
	size_t *start;
	uint32_t *len;
	uint64_t *wcount;
	uint32_t *visited; /* merge step that last rewrote the word */
	/* pairs, and an open-addressing index from (a << 32 | b) to pair number + 1 */
	struct pair *pairs;
	uint32_t npairs, cappairs;
	uint32_t *slots;
	size_t nslots;
	/* heap of candidate pairs */
	struct heap_entry *heap;
	size_t nheap, capheap;
	/* pairs whose count rose during the current merge */
	uint32_t *raised;
	size_t nraised, capraised;
	/* token bytes */
	char *arena;
	size_t *off;
	size_t arena_len, arena_cap;
	int ntok;
};

static uint64_t mix64(uint64_t x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdULL;
	x ^= x >> 33;
	x *= 0xc4ceb9fe1a85ec53ULL;
	x ^= x >> 33;
	return x;
}

static uint64_t pair_key(int32_t a, int32_t b)
{
	return (uint64_t)(uint32_t)a << 32 | (uint32_t)b;
}

static bool slots_rehash(struct trainer *t, size_t nslots)
{
	uint32_t *s = calloc(nslots, sizeof *s);
	if (!s)
		return false;
	for (uint32_t i = 0; i < t->npairs; i++) {
		size_t h = mix64(pair_key(t->pairs[i].a, t->pairs[i].b)) & (nslots - 1);
		while (s[h])
			h = (h + 1) & (nslots - 1);
		s[h] = i + 1;
	}
	free(t->slots);
	t->slots = s;
	t->nslots = nslots;
	return true;
}

/* The pair (a, b), created with count 0 when new; -1 when out of memory. */
static int64_t pair_get(struct trainer *t, int32_t a, int32_t b)
{
	size_t mask = t->nslots - 1;
	size_t h = mix64(pair_key(a, b)) & mask;
	for (; t->slots[h]; h = (h + 1) & mask) {
		struct pair *p = &t->pairs[t->slots[h] - 1];
		if (p->a == a && p->b == b)
			return t->slots[h] - 1;
	}
	if (t->npairs == UINT32_MAX - 1)
		return -1;
	size_t cap = t->cappairs;
	if (arr_reserve(&t->pairs, &cap, (size_t)t->npairs + 1, sizeof *t->pairs))
		return -1;
	t->cappairs = (uint32_t)cap;
	uint32_t i = t->npairs++;
	t->pairs[i] = (struct pair){.a = a, .b = b};
	t->slots[h] = i + 1;
	/* keep the index at most half full so probes stay short */
	if ((size_t)t->npairs * 2 > t->nslots && !slots_rehash(t, t->nslots * 2))
		return -1;
	return i;
}

/* Adds delta to pair (a, b)'s count; a rise records word w and marks the pair. */
static int pair_add(struct trainer *t, int32_t a, int32_t b, int64_t delta, uint32_t w,
		    uint32_t step)
{
	int64_t i = pair_get(t, a, b);
	if (i < 0)
		return -1;
	struct pair *p = &t->pairs[i];
	p->count += delta;
	if (delta <= 0)
		return 0;
	if (p->nwords == 0 || p->words[p->nwords - 1] != w) {
		size_t cap = p->capwords;
		if ((size_t)p->nwords + 1 > UINT32_MAX ||
		    arr_reserve(&p->words, &cap, (size_t)p->nwords + 1, sizeof *p->words))
			return -1;
		p->capwords = (uint32_t)cap;
		p->words[p->nwords++] = w;
	}
	if (step && p->dirty != step) {
		p->dirty = step;
		if (arr_reserve(&t->raised, &t->capraised, t->nraised + 1, sizeof *t->raised))
			return -1;
		t->raised[t->nraised++] = (uint32_t)i;
	}
	return 0;
}

/* Compares two byte strings the way Python compares bytes: memcmp over the
 * common length, then the shorter one is smaller. */
static int bytes_cmp(const char *x, size_t nx, const char *y, size_t ny)
{
	int c = memcmp(x, y, nx < ny ? nx : ny);
	if (c)
		return c;
	return nx < ny ? -1 : nx > ny;
}

/* The tie rule of the CS336 assignment: max over (count, (bytes(a), bytes(b))). */
static bool entry_above(const struct trainer *t, struct heap_entry x, struct heap_entry y)
{
	if (x.count != y.count)
		return x.count > y.count;
	if (x.pair == y.pair)
		return false;
	const struct pair *p = &t->pairs[x.pair], *q = &t->pairs[y.pair];
	const size_t *o = t->off;
	int c = bytes_cmp(t->arena + o[p->a], o[p->a + 1] - o[p->a], t->arena + o[q->a],
			  o[q->a + 1] - o[q->a]);
	if (!c)
		c = bytes_cmp(t->arena + o[p->b], o[p->b + 1] - o[p->b], t->arena + o[q->b],
			      o[q->b + 1] - o[q->b]);
	return c > 0;
}

static void sift_down(struct trainer *t, size_t i)
{
	struct heap_entry e = t->heap[i];
	for (;;) {
		size_t c = 2 * i + 1;
		if (c >= t->nheap)
			break;
		if (c + 1 < t->nheap && entry_above(t, t->heap[c + 1], t->heap[c]))
			c++;
		if (!entry_above(t, t->heap[c], e))
			break;
		t->heap[i] = t->heap[c];
		i = c;
	}
	t->heap[i] = e;
}

static int heap_push(struct trainer *t, uint32_t pair)
{
	if (arr_reserve(&t->heap, &t->capheap, t->nheap + 1, sizeof *t->heap))
		return -1;
	struct heap_entry e = {t->pairs[pair].count, pair};
	size_t i = t->nheap++;
	while (i > 0) {
		size_t up = (i - 1) / 2;
		if (!entry_above(t, e, t->heap[up]))
			break;
		t->heap[i] = t->heap[up];
		i = up;
	}
	t->heap[i] = e;
	return 0;
}

/* The best pair with a current count, or -1 when none is left. Entries whose
 * count went down since they were pushed are pushed again at the new count
 * (a fall never pushes, so this is the only place the heap learns of it). */
static int64_t heap_pop_best(struct trainer *t)
{
	while (t->nheap) {
		struct heap_entry e = t->heap[0];
		t->heap[0] = t->heap[--t->nheap];
		if (t->nheap)
			sift_down(t, 0);
		struct pair *p = &t->pairs[e.pair];
		if (e.count == p->count && p->count > 0)
			return e.pair;
		if (p->count > 0 && e.count > p->count && heap_push(t, e.pair) < 0)
			return -2;
	}
	return -1;
}

/* Appends a token made of tokens a and b. */
static int token_add(struct trainer *t, int32_t a, int32_t b)
{
	size_t la = t->off[a + 1] - t->off[a], lb = t->off[b + 1] - t->off[b];
	size_t cap = t->arena_cap;
	if (arr_reserve(&t->arena, &cap, t->arena_len + la + lb, 1))
		return -1;
	t->arena_cap = cap;
	memcpy(t->arena + t->arena_len, t->arena + t->off[a], la);
	memcpy(t->arena + t->arena_len + la, t->arena + t->off[b], lb);
	t->arena_len += la + lb;
	t->ntok++;
	t->off[t->ntok] = t->arena_len;
	return 0;
}

/* Rewrites word w with every (a, b) replaced by z, left to right, and moves the
 * counts of the pairs around each replaced site (as Hugging Face's Word::merge
 * does): prev is taken from the rewritten part, next from the old part. */
static int word_merge(struct trainer *t, uint32_t w, uint32_t pi, int32_t z, uint32_t step)
{
	int32_t a = t->pairs[pi].a, b = t->pairs[pi].b;
	int32_t *s = t->sym + t->start[w];
	uint32_t n = t->len[w], i = 0, j = 0;
	int64_t c = (int64_t)t->wcount[w];
	while (i < n) {
		if (i + 1 < n && s[i] == a && s[i + 1] == b) {
			if (j > 0 && (pair_add(t, s[j - 1], a, -c, w, step) < 0 ||
				      pair_add(t, s[j - 1], z, c, w, step) < 0))
				return -1;
			if (i + 2 < n && (pair_add(t, b, s[i + 2], -c, w, step) < 0 ||
					  pair_add(t, z, s[i + 2], c, w, step) < 0))
				return -1;
			t->pairs[pi].count -= c;
			s[j++] = z;
			i += 2;
		} else {
			s[j++] = s[i++];
		}
	}
	t->len[w] = j;
	return 0;
}

/* One merge: the pair's word list is taken over (the merge never adds words
 * to the merged pair itself), every listed word is rewritten once, and every
 * pair whose count rose goes into the heap at its final count. */
static int merge_step(struct trainer *t, uint32_t pi, uint32_t step)
{
	int32_t a = t->pairs[pi].a, b = t->pairs[pi].b, z = t->ntok;
	if (token_add(t, a, b) < 0)
		return err_set("bpe: out of memory at merge %u", step);
	uint32_t *words = t->pairs[pi].words, nwords = t->pairs[pi].nwords;
	t->pairs[pi].words = NULL;
	t->pairs[pi].nwords = t->pairs[pi].capwords = 0;
	t->nraised = 0;
	int rc = 0;
	for (uint32_t k = 0; k < nwords && rc == 0; k++) {
		uint32_t w = words[k];
		if (t->visited[w] == step)
			continue;
		t->visited[w] = step;
		rc = word_merge(t, w, pi, z, step);
	}
	free(words);
	for (size_t k = 0; k < t->nraised && rc == 0; k++)
		if (t->pairs[t->raised[k]].count > 0)
			rc = heap_push(t, t->raised[k]);
	if (rc < 0)
		return err_set("bpe: out of memory at merge %u", step);
	if (t->pairs[pi].count != 0)
		return err_set("bpe: internal error: pair count %lld left after merge",
			       (long long)t->pairs[pi].count);
	return 0;
}

static void trainer_free(struct trainer *t)
{
	for (uint32_t i = 0; i < t->npairs; i++)
		free(t->pairs[i].words);
	free(t->pairs);
	free(t->slots);
	free(t->heap);
	free(t->raised);
	free(t->sym);
	free(t->start);
	free(t->len);
	free(t->visited);
	free(t->arena);
	free(t->off);
}

/* Words as byte symbols, the 256 byte tokens, every pair counted, and a heap of them. */
static int trainer_init(struct trainer *t, const struct bpe_words *words, int max_tokens)
{
	if (words->n >= UINT32_MAX)
		return err_set("bpe: too many distinct pre-tokens (%zu)", words->n);
	t->nw = (uint32_t)words->n;
	size_t total = words->off[words->n];
	t->sym = malloc((total ? total : 1) * sizeof *t->sym);
	t->start = malloc((t->nw + 1) * sizeof *t->start);
	t->len = malloc((t->nw + 1) * sizeof *t->len);
	t->visited = calloc(t->nw + 1, sizeof *t->visited);
	t->wcount = words->count;
	t->off = malloc(((size_t)max_tokens + 1) * sizeof *t->off);
	t->arena_cap = 4096;
	t->arena = malloc(t->arena_cap);
	t->nslots = 1024;
	t->slots = calloc(t->nslots, sizeof *t->slots);
	if (!t->sym || !t->start || !t->len || !t->visited || !t->off || !t->arena || !t->slots)
		return err_set("bpe: out of memory for %zu pre-tokens", words->n);
	for (int i = 0; i < 256; i++) {
		t->arena[i] = (char)i;
		t->off[i] = (size_t)i;
	}
	t->off[256] = t->arena_len = 256;
	t->ntok = 256;
	for (uint32_t w = 0; w < t->nw; w++) {
		size_t o = words->off[w], n = words->off[w + 1] - o;
		if (n > UINT32_MAX)
			return err_set("bpe: pre-token of %zu bytes is too long", n);
		t->start[w] = o;
		t->len[w] = (uint32_t)n;
		for (size_t i = 0; i < n; i++)
			t->sym[o + i] = (unsigned char)words->arena[o + i];
		for (size_t i = 0; i + 1 < n; i++)
			if (pair_add(t, t->sym[o + i], t->sym[o + i + 1], (int64_t)t->wcount[w], w,
				     0) < 0)
				return err_set("bpe: out of memory counting pairs");
	}
	t->heap = malloc(((size_t)t->npairs + 1) * sizeof *t->heap);
	if (!t->heap)
		return err_set("bpe: out of memory for %u pairs", t->npairs);
	t->capheap = (size_t)t->npairs + 1;
	for (uint32_t i = 0; i < t->npairs; i++)
		t->heap[t->nheap++] = (struct heap_entry){t->pairs[i].count, i};
	for (size_t i = t->nheap / 2; i-- > 0;)
		sift_down(t, i);
	return 0;
}

struct bpe_model *bpe_train(const struct bpe_words *words, const struct bpe_train_opts *opts)
{
	int want = opts->vocab_size - 256 - opts->n_specials;
	if (opts->n_specials < 0 || want < 0) {
		err_set("bpe: vocabulary size %d is below 256 byte tokens + %d special tokens",
			opts->vocab_size, opts->n_specials);
		return NULL;
	}
	struct trainer t = {0};
	struct bpe_model *m = calloc(1, sizeof *m);
	if (!m || !(m->merges = malloc(((size_t)want + 1) * sizeof *m->merges))) {
		err_set("bpe: out of memory");
		goto fail;
	}
	if (trainer_init(&t, words, 256 + want) < 0)
		goto fail;
	int done = 0;
	while (done < want) {
		int64_t pi = heap_pop_best(&t);
		if (pi == -1)
			break; /* every pre-token is a single token: nothing left to merge */
		if (pi < 0) {
			err_set("bpe: out of memory at merge %d", done + 1);
			goto fail;
		}
		if (merge_step(&t, (uint32_t)pi, (uint32_t)done + 1) < 0)
			goto fail;
		m->merges[done][0] = t.pairs[pi].a;
		m->merges[done][1] = t.pairs[pi].b;
		done++;
		if (opts->progress && (done % 64 == 0 || done == want))
			opts->progress(opts->progress_ctx, done, want);
	}
	m->n_merges = done;
	m->n_tokens = t.ntok;
	m->arena = t.arena;
	m->off = t.off;
	t.arena = NULL;
	t.off = NULL;
	trainer_free(&t);
	return m;
fail:
	trainer_free(&t);
	bpe_model_free(m);
	return NULL;
}

void bpe_model_free(struct bpe_model *m)
{
	if (!m)
		return;
	free(m->merges);
	free(m->arena);
	free(m->off);
	free(m);
}

const char *bpe_model_token(const struct bpe_model *m, int id, size_t *len)
{
	if (id < 0 || id >= m->n_tokens)
		return NULL;
	*len = m->off[id + 1] - m->off[id];
	return m->arena + m->off[id];
}
