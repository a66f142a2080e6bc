/* bpe.c — BPE vocabulary, merges, merging by rank and the piece cache (see bpe.h). */
#include "tokenizer/bpe.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "src/base/array.h"
#include "src/base/err.h"

/* Pieces up to this many bytes are cached (as tokenizers caches words under 256
 * characters); the cache is emptied when it holds CACHE_MAX entries or CACHE_BYTES of
 * long pieces and their ids, which bounds its memory on endless distinct input. */
enum { CACHE_PIECE_MAX = 255, CACHE_MAX = 1 << 18, CACHE_BYTES = 32 << 20 };

struct merge_slot {
	uint64_t key; /* a << 32 | b; UINT64_MAX when empty */
	int32_t rank, id;
};

/* One cached piece in 32 bytes: short pieces (<= 12 bytes, <= 2 ids; most words)
 * are compared and copied from the slot itself, one cache line, no other memory;
 * longer ones point into cache_bytes / cache_ids. Separate key and id arrays touched
 * more cache lines per piece and encoded markedly slower. */
struct cache_slot {
	uint64_t hash; /* 0 when empty */
	uint8_t len, n_ids;
	uint16_t spare;
	union {
		int32_t ids[2];
		uint32_t off; /* in cache_ids, when n_ids > 2 */
	} i;
	union {
		char key[12];
		uint32_t off; /* in cache_bytes, when len > 12 */
	} k;
};
_Static_assert(sizeof(struct cache_slot) == 32, "cache slot is half a cache line");

struct bpe {
	/* vocabulary: token bytes back to back in `bytes`, where span[id] says where;
	 * an open-addressing table of ids hashed by their bytes */
	char *bytes;
	size_t bytes_len, bytes_cap;
	struct tspan {
		uint32_t off, len;
	} * span; /* (id_cap) bytes of token id; off UINT32_MAX if none */
	int32_t id_cap, id_limit;
	struct vslot {
		int32_t id;
		uint32_t tag;
	} * vslot; /* (vcap) id -1 when empty; tag: hash bits */
	size_t vcap, vcount;
	struct merge_slot *mslot; /* (mcap) */
	size_t mcap, mcount;
	int32_t byte_id[256];
	/* piece cache */
	struct cache_slot *cslot; /* (ccap), grows up to CACHE_MAX * 2 */
	size_t ccount, ccap;
	char *cache_bytes;
	size_t cb_len, cb_cap;
	int32_t *cache_ids;
	size_t ci_len, ci_cap;
	/* scratch for merging one piece */
	int32_t *sym, *nxt, *prv;
	uint64_t *heap;
	size_t scratch_cap, heap_cap;
};

/* A fast byte hash (8 bytes at a time, multiply-xorshift mixing); never 0. */
static uint64_t hash_bytes(const char *s, size_t n)
{
	uint64_t h = 0x9E3779B97F4A7C15ull ^ (n * 0xff51afd7ed558ccdull);
	while (n >= 8) {
		uint64_t w;
		memcpy(&w, s, 8);
		h = (h ^ w) * 0xbf58476d1ce4e5b9ull;
		h ^= h >> 31;
		s += 8;
		n -= 8;
	}
	if (n) {
		uint64_t w = 0;
		memcpy(&w, s, n);
		h = (h ^ w) * 0x94d049bb133111ebull;
		h ^= h >> 29;
	}
	h *= 0xbf58476d1ce4e5b9ull;
	h ^= h >> 32;
	return h ? h : 1;
}

static uint64_t hash_u64(uint64_t x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdull;
	x ^= x >> 33;
	x *= 0xc4ceb9fe1a85ec53ull;
	x ^= x >> 33;
	return x;
}

int bpe_ids_push(struct bpe_ids *a, const int32_t *ids, size_t n)
{
	if (arr_reserve(&a->v, &a->cap, a->n + n, sizeof *a->v))
		return -1;
	memcpy(a->v + a->n, ids, n * sizeof *ids);
	a->n += n;
	return 0;
}

struct bpe *bpe_new(void)
{
	struct bpe *b = calloc(1, sizeof *b);
	if (!b)
		return NULL;
	for (int i = 0; i < 256; i++)
		b->byte_id[i] = -1;
	return b;
}

void bpe_free(struct bpe *b)
{
	if (!b)
		return;
	free(b->bytes);
	free(b->span);
	free(b->vslot);
	free(b->mslot);
	free(b->cslot);
	free(b->cache_bytes);
	free(b->cache_ids);
	free(b->sym);
	free(b->nxt);
	free(b->prv);
	free(b->heap);
	free(b);
}

/* Memory for a hash table of n bytes. Tables of 2 MB and more (Qwen3's vocabulary and
 * merges: 2 and 4 MB) are asked for on 2 MB pages: filled at random, they would
 * otherwise take a page fault and a TLB miss per 4 KB, a fifth of the load time. */
static void *table_alloc(size_t n)
{
	enum { HUGE = 2 << 20 };
	if (n < HUGE)
		return malloc(n);
	size_t size = (n + HUGE - 1) / HUGE * HUGE;
	void *p = aligned_alloc(HUGE, size);
#ifdef MADV_HUGEPAGE
	if (p)
		madvise(p, size, MADV_HUGEPAGE); /* a hint: failure is fine */
#endif
	return p;
}

/* The slot holding token bytes s[0..n) or the empty slot where they would go. The
 * tag (upper hash bits) spares most probes a trip to the token bytes. */
static struct vslot *vfind(const struct bpe *b, const char *s, size_t n, uint64_t h)
{
	size_t mask = b->vcap - 1;
	uint32_t tag = (uint32_t)(h >> 32);
	for (size_t i = h & mask;; i = (i + 1) & mask) {
		struct vslot *v = &b->vslot[i];
		if (v->id < 0)
			return v;
		if (v->tag == tag && b->span[v->id].len == n &&
		    memcmp(b->bytes + b->span[v->id].off, s, n) == 0)
			return v;
	}
}

static int vgrow(struct bpe *b, size_t cap)
{
	struct vslot *s = table_alloc(cap * sizeof *s), *old = b->vslot;
	if (!s)
		return err_set("tokenizer: out of memory");
	for (size_t i = 0; i < cap; i++)
		s[i].id = -1;
	size_t ocap = b->vcap;
	b->vslot = s;
	b->vcap = cap;
	for (size_t i = 0; i < ocap; i++) {
		if (old[i].id < 0)
			continue;
		int32_t id = old[i].id;
		const char *t = b->bytes + b->span[id].off;
		*vfind(b, t, b->span[id].len, hash_bytes(t, b->span[id].len)) = old[i];
	}
	free(old);
	return 0;
}

int32_t bpe_lookup(const struct bpe *b, const char *s, size_t n)
{
	if (!b->vcap)
		return -1;
	return vfind(b, s, n, hash_bytes(s, n))->id;
}

int bpe_add_token(struct bpe *b, const char *s, size_t n, int32_t id)
{
	if (id < 0 || id >= BPE_MAX_ID)
		return err_set("id %d out of range [0, %d)", id, BPE_MAX_ID);
	if (n == 0)
		return err_set("empty token for id %d", id);
	if (id >= b->id_cap) {
		int32_t cap = b->id_cap ? b->id_cap : 1024;
		while (cap <= id)
			cap *= 2;
		struct tspan *sp = realloc(b->span, (size_t)cap * sizeof *sp);
		if (!sp)
			return err_set("tokenizer: out of memory");
		b->span = sp;
		for (int32_t i = b->id_cap; i < cap; i++)
			b->span[i].off = UINT32_MAX;
		b->id_cap = cap;
	}
	if (b->span[id].off != UINT32_MAX)
		return err_set("id %d given twice", id);
	if ((b->vcount + 1) * 4 > b->vcap * 3 && vgrow(b, b->vcap ? b->vcap * 2 : 1 << 12))
		return -1;
	uint64_t h = hash_bytes(s, n);
	struct vslot *v = vfind(b, s, n, h);
	if (v->id >= 0)
		return err_set("token for id %d given twice (also id %d)", id, v->id);
	if (b->bytes_len + n > UINT32_MAX - 1)
		return err_set("vocabulary too large");
	if (arr_reserve(&b->bytes, &b->bytes_cap, b->bytes_len + n, 1))
		return err_set("tokenizer: out of memory");
	memcpy(b->bytes + b->bytes_len, s, n);
	b->span[id].off = (uint32_t)b->bytes_len;
	b->span[id].len = (uint32_t)n;
	b->bytes_len += n;
	v->id = id;
	v->tag = (uint32_t)(h >> 32);
	b->vcount++;
	if (id >= b->id_limit)
		b->id_limit = id + 1;
	if (n == 1)
		b->byte_id[(unsigned char)s[0]] = id;
	return 0;
}

const char *bpe_token(const struct bpe *b, int32_t id, size_t *n)
{
	if (id < 0 || id >= b->id_limit || b->span[id].off == UINT32_MAX)
		return NULL;
	*n = b->span[id].len;
	return b->bytes + b->span[id].off;
}

int32_t bpe_id_limit(const struct bpe *b)
{
	return b->id_limit;
}

static struct merge_slot *mfind(const struct bpe *b, uint64_t key)
{
	size_t mask = b->mcap - 1;
	for (size_t i = hash_u64(key) & mask;; i = (i + 1) & mask)
		if (b->mslot[i].key == key || b->mslot[i].key == UINT64_MAX)
			return &b->mslot[i];
}

static int mgrow(struct bpe *b, size_t cap)
{
	struct merge_slot *s = table_alloc(cap * sizeof *s), *old = b->mslot;
	if (!s)
		return err_set("tokenizer: out of memory");
	for (size_t i = 0; i < cap; i++)
		s[i].key = UINT64_MAX;
	size_t ocap = b->mcap;
	b->mslot = s;
	b->mcap = cap;
	for (size_t i = 0; i < ocap; i++)
		if (old[i].key != UINT64_MAX)
			*mfind(b, old[i].key) = old[i];
	free(old);
	return 0;
}

int bpe_add_merge(struct bpe *b, int32_t a, int32_t bb, int32_t rank, int32_t merged)
{
	if ((b->mcount + 1) * 4 > b->mcap * 3 && mgrow(b, b->mcap ? b->mcap * 2 : 1 << 12))
		return -1;
	uint64_t key = (uint64_t)(uint32_t)a << 32 | (uint32_t)bb;
	struct merge_slot *s = mfind(b, key);
	if (s->key == UINT64_MAX)
		b->mcount++;
	s->key = key;
	s->rank = rank;
	s->id = merged;
	return 0;
}

int bpe_finish(struct bpe *b)
{
	for (int i = 0; i < 256; i++)
		if (b->byte_id[i] < 0)
			return err_set("no token for byte 0x%02x (a byte-level BPE needs all 256)",
				       i);
	if (!b->mcap && mgrow(b, 1 << 4))
		return -1;
	b->ccap = 1 << 8;
	b->cslot = calloc(b->ccap, sizeof *b->cslot);
	if (!b->cslot)
		return err_set("tokenizer: out of memory");
	return 0;
}

int bpe_reserve(struct bpe *b, size_t tokens, size_t merges)
{
	size_t v = 64, m = 64;
	/* load at most 3/4 once full, the threshold bpe_add_* grow at */
	while (v * 3 < tokens * 4 && v < ((size_t)1 << 26))
		v *= 2;
	while (m * 3 < merges * 4 && m < ((size_t)1 << 26))
		m *= 2;
	if (v > b->vcap && vgrow(b, v))
		return -1;
	/* ~11 bytes per token (Qwen3: 1.6 MB for 151k) */
	if (arr_reserve(&b->bytes, &b->bytes_cap, tokens * 11, 1))
		return err_set("tokenizer: out of memory");
	if (m > b->mcap && mgrow(b, m))
		return -1;
	return 0;
}

/* Rank and result of merging a then c; rank -1 when there is no such merge. */
static inline int32_t merge_of(const struct bpe *b, int32_t a, int32_t c, int32_t *id)
{
	const struct merge_slot *s = mfind(b, (uint64_t)(uint32_t)a << 32 | (uint32_t)c);
	if (s->key == UINT64_MAX)
		return -1;
	*id = s->id;
	return s->rank;
}

static void heap_push(uint64_t *h, size_t *n, uint64_t v)
{
	size_t i = (*n)++;
	while (i > 0) {
		size_t p = (i - 1) / 2;
		if (h[p] <= v)
			break;
		h[i] = h[p];
		i = p;
	}
	h[i] = v;
}

static uint64_t heap_pop(uint64_t *h, size_t *n)
{
	uint64_t top = h[0], v = h[--*n];
	size_t i = 0, m = *n;
	for (;;) {
		size_t c = 2 * i + 1;
		if (c >= m)
			break;
		if (c + 1 < m && h[c + 1] < h[c])
			c++;
		if (h[c] >= v)
			break;
		h[i] = h[c];
		i = c;
	}
	if (m)
		h[i] = v;
	return top;
}

/* Merges the bytes s[0..n) (n >= 2): the lowest-ranked adjacent pair first, the
 * leftmost among equal ranks, exactly as tokenizers' Word::merge_all orders its
 * queue. The ids are left in b->sym, linked by b->nxt from index 0. */
static int merge_piece(struct bpe *b, const unsigned char *s, size_t n)
{
	if (n > b->scratch_cap) {
		size_t cap = n < 256 ? 256 : n;
		int32_t *a = realloc(b->sym, cap * sizeof *a);
		if (a)
			b->sym = a;
		int32_t *x = realloc(b->nxt, cap * sizeof *x);
		if (x)
			b->nxt = x;
		int32_t *y = realloc(b->prv, cap * sizeof *y);
		if (y)
			b->prv = y;
		if (!a || !x || !y)
			return err_set("tokenizer: out of memory");
		b->scratch_cap = cap;
	}
	/* each merge pushes at most 2 entries; n - 1 initial ones */
	if (arr_reserve(&b->heap, &b->heap_cap, 3 * n, sizeof *b->heap))
		return err_set("tokenizer: out of memory");
	int32_t *sym = b->sym, *nxt = b->nxt, *prv = b->prv, id;
	uint64_t *heap = b->heap;
	size_t hn = 0;
	for (size_t i = 0; i < n; i++) {
		sym[i] = b->byte_id[s[i]];
		nxt[i] = i + 1 < n ? (int32_t)(i + 1) : -1;
		prv[i] = (int32_t)i - 1;
	}
	for (size_t i = 0; i + 1 < n; i++) {
		int32_t r = merge_of(b, sym[i], sym[i + 1], &id);
		if (r >= 0)
			heap_push(heap, &hn, (uint64_t)r << 32 | i);
	}
	while (hn) {
		uint64_t top = heap_pop(heap, &hn);
		int32_t r = (int32_t)(top >> 32), i = (int32_t)(uint32_t)top, j = nxt[i];
		/* stale entries: the symbol was absorbed (sym -1) or its pair changed */
		if (sym[i] < 0 || j < 0 || merge_of(b, sym[i], sym[j], &id) != r)
			continue;
		sym[i] = id;
		sym[j] = -1;
		nxt[i] = nxt[j];
		if (nxt[j] >= 0)
			prv[nxt[j]] = i;
		int32_t k = prv[i], id2;
		if (k >= 0 && (r = merge_of(b, sym[k], sym[i], &id2)) >= 0)
			heap_push(heap, &hn, (uint64_t)r << 32 | (uint32_t)k);
		if (nxt[i] >= 0 && (r = merge_of(b, sym[i], sym[nxt[i]], &id2)) >= 0)
			heap_push(heap, &hn, (uint64_t)r << 32 | (uint32_t)i);
	}
	return 0;
}

static void cache_clear(struct bpe *b)
{
	memset(b->cslot, 0, b->ccap * sizeof *b->cslot);
	b->ccount = 0;
	b->cb_len = 0;
	b->ci_len = 0;
}

/* Doubles the cache table (it starts small so short inputs touch little memory). */
static void cache_grow(struct bpe *b)
{
	size_t cap = b->ccap * 2, mask = cap - 1;
	struct cache_slot *s = calloc(cap, sizeof *s);
	if (!s)
		return;
	for (size_t i = 0; i < b->ccap; i++) {
		if (!b->cslot[i].hash)
			continue;
		size_t k = b->cslot[i].hash & mask;
		while (s[k].hash)
			k = (k + 1) & mask;
		s[k] = b->cslot[i];
	}
	free(b->cslot);
	b->cslot = s;
	b->ccap = cap;
}

static size_t cache_slot_for(const struct bpe *b, uint64_t h)
{
	size_t mask = b->ccap - 1, k = h & mask;
	while (b->cslot[k].hash)
		k = (k + 1) & mask;
	return k;
}

static void cache_put(struct bpe *b, uint64_t h, size_t slot, const char *s, size_t n,
		      const int32_t *ids, size_t k)
{
	struct cache_slot c = {.hash = h, .len = (uint8_t)n, .n_ids = (uint8_t)k};
	if (n <= sizeof c.k.key) {
		memcpy(c.k.key, s, n);
	} else {
		if (arr_reserve(&b->cache_bytes, &b->cb_cap, b->cb_len + n, 1))
			return; /* the cache is only an optimisation */
		c.k.off = (uint32_t)b->cb_len;
		memcpy(b->cache_bytes + b->cb_len, s, n);
		b->cb_len += n;
	}
	if (k <= 2) {
		memcpy(c.i.ids, ids, k * sizeof *ids);
	} else {
		if (arr_reserve(&b->cache_ids, &b->ci_cap, b->ci_len + k, sizeof *ids))
			return;
		c.i.off = (uint32_t)b->ci_len;
		memcpy(b->cache_ids + b->ci_len, ids, k * sizeof *ids);
		b->ci_len += k;
	}
	b->cslot[slot] = c;
	b->ccount++;
}

int bpe_encode(struct bpe *b, const char *s, size_t n, struct bpe_ids *out)
{
	if (n == 1)
		return bpe_ids_push(out, &b->byte_id[(unsigned char)s[0]], 1);
	uint64_t h = 0;
	if (n <= CACHE_PIECE_MAX) {
		h = hash_bytes(s, n);
		size_t mask = b->ccap - 1;
		for (size_t k = h & mask; b->cslot[k].hash; k = (k + 1) & mask) {
			const struct cache_slot *c = &b->cslot[k];
			if (c->hash != h || c->len != n)
				continue;
			if (memcmp(n <= sizeof c->k.key ? c->k.key : b->cache_bytes + c->k.off, s,
				   n) == 0)
				return bpe_ids_push(
					out, c->n_ids <= 2 ? c->i.ids : b->cache_ids + c->i.off,
					c->n_ids);
		}
	}
	if (merge_piece(b, (const unsigned char *)s, n))
		return -1;
	size_t start = out->n;
	for (int32_t i = 0; i >= 0; i = b->nxt[i])
		if (bpe_ids_push(out, &b->sym[i], 1))
			return -1;
	if (h) {
		if (b->ccount >= CACHE_MAX || b->cb_len + b->ci_len * sizeof(int32_t) > CACHE_BYTES)
			cache_clear(b);
		else if ((b->ccount + 1) * 2 > b->ccap)
			cache_grow(b);
		cache_put(b, h, cache_slot_for(b, h), s, n, out->v + start, out->n - start);
	}
	return 0;
}
