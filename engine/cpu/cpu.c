/* cpu.c — the CPU backend: the Qwen3 forward pass in fp32 over bf16 weights read in
 * place from the mmap, with a bf16 (or fp32) KV cache. It is the exact reference the
 * other backends are checked against, so it follows transformers' Qwen3 step by step. */
#include <math.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "engine/backend.h"
#include "engine/cpu/kernels.h"
#include "engine/cpu/matmul.h"
#include "engine/cpu/measure.h"
#include "engine/cpu/pool.h"
#include "engine/quant.h"
#include "engine/rope.h"
#include "src/base/err.h"
#include "src/base/units.h"

/* Tokens per forward chunk: 512 keeps the scratch at ~32 MB for Qwen3-0.6B while
 * each weight matrix is read once per 512 tokens. */
#define CHUNK    512
/* Query rows per attention work item (queries x the query heads of one kv head):
 * their scores are one matrix product (two of the AVX-512 kernel's 5-token tiles). */
#define ATT_ROWS 10

struct cpu_state {
	const struct eng_config *c;
	const struct eng_weights *w;
	const struct cpu_kernels *k;
	struct cpu_pool *pool;
	int ctx, chunk;
	int ctx_alloc;     /* ctx rounded up to whole key panels */
	int q_dim, kv_dim; /* num_heads*head_dim, num_kv_heads*head_dim */
	bool kv_f32;
	bool bf16;         /* prefill matmuls with bf16 activations (opt-in) */
	bool bf16_scores;  /* and its attention scores too (scores_bf16: AMX) */
	bool all_bf16;     /* every matrix bf16: no quantized products */
	const atomic_int *cancel; /* eng_set_cancel: looked at between a prefill's layers */
	size_t kv_elem;    /* 2 or 4 */
	void *key_cache;   /* (layer, kv_head, kv_region): ctx rows of head_dim each */
	void *value_cache; /* (layer, kv_head, kv_region) */
	size_t kv_region;  /* bytes from one (layer, kv head)'s rows to the next's */
	size_t kv_bytes;   /* each cache's allocation */
	int kv_high;       /* positions ever written: the cache's pages touched so far */
	int kv_huge;       /* 2 MB extents of every region made huge pages (kv_promote) */
	int kv_next;       /* the next region (of both caches) to promote extent kv_huge of */
	float *rope_cos, *rope_sin; /* (ctx, head_dim/2), YaRN scale applied */
	float *x;                   /* (chunk, hidden) residual stream */
	float *xn;            /* (chunk, max(hidden, q_dim, inter)) packed input of a matmul */
	uint16_t *xb;         /* (chunk, same) bf16 input of a prefill matmul when bf16 */
	float *q;             /* (chunk, q_dim) */
	float *kk, *vv;       /* (chunk, kv_dim) this chunk's keys and values */
	float *att;           /* (chunk, q_dim) attention output */
	float *gate, *up;     /* (chunk, intermediate) */
	int att_rows;         /* rows of an attention item: a multiple of the group */
	float *scores;        /* (threads, att_rows, ctx) score rows per thread */
	float *qp;            /* (threads, att_rows, head_dim) packed queries */
	struct cpu_matmul mm; /* the matrix products' scratch */
	/* the norm weights in fp32, whatever their stored type */
	float *norms; /* (layers, 2 * hidden + 2 * head_dim) + hidden */
	const float *final_norm;
	bool capture;
	float *cap;  /* (layer, num_heads, ctx) last query's softmax; lazily */
	int cap_len; /* keys in each captured row; 0 = none */
	size_t scratch_bytes;
};

/* ---- parallel steps ------------------------------------------------------------ */

/* A per-token step run over tokens [0, n), one token per work item. */
struct tok_task {
	struct cpu_state *s;
	void (*fn)(struct cpu_state *s, const void *ctx, int t);
	const void *ctx;
	int n;
	atomic_int next;
};

static void tok_run(void *arg, int tid, int nt)
{
	(void)tid;
	(void)nt;
	struct tok_task *t = arg;
	for (int i; (i = cpu_claim(&t->next, t->n)) >= 0;)
		t->fn(t->s, t->ctx, i);
}

static void per_token(struct cpu_state *s, int n,
		      void (*fn)(struct cpu_state *s, const void *ctx, int t), const void *ctx)
{
	if (n == 1) { /* decode: not worth waking the pool */
		fn(s, ctx, 0);
		return;
	}
	struct tok_task t = {.s = s, .fn = fn, .ctx = ctx, .n = n};
	atomic_init(&t.next, 0);
	cpu_pool_run(s->pool, tok_run, &t);
}

/* The products of forward_chunk: all share the packed input xn (or xb). */
static void matmul(struct cpu_state *s, int n, int K, int count, const struct cpu_mm *mm)
{
	cpu_matmul(&s->mm, s->xn, s->bf16 && n > 1 ? s->xb : NULL, n, K, count, mm);
}

/* Layer l's norm weights: 0 input, 1 post-attention, 2 q, 3 k. */
static const float *layer_norm(const struct cpu_state *s, int l, int which)
{
	size_t D = (size_t)s->c->hidden_size, hd = (size_t)s->c->head_dim;
	const float *n = s->norms + (size_t)l * (2 * D + 2 * hd);
	return which < 2 ? n + which * D : n + 2 * D + (size_t)(which - 2) * hd;
}

/* ---- the steps of one layer ------------------------------------------------------ */

struct step {
	int layer, pos, n;
	const float *norm; /* rmsnorm_pack: weight */
	const float *src;  /* pack: (n, src_dim) rows */
	int src_dim;
};

/* Row t of a matmul input of n rows of d: packed fp32, or bf16 for a bf16 prefill
 * (the choice matmul() makes for the same n). */
static void put_row(struct cpu_state *s, int n, int t, const float *row, int d)
{
	if (s->bf16 && n > 1)
		s->k->to_bf16(s->xb + (size_t)t * d, row, d);
	else
		s->k->pack_row(s->xn + (size_t)t * d, row, d);
}

static void rmsnorm_pack(struct cpu_state *s, const void *ctx, int t)
{
	const struct step *st = ctx;
	int d = s->c->hidden_size;
	float tmp[d];
	s->k->rmsnorm(tmp, s->x + (size_t)t * d, st->norm, d, (float)s->c->rms_norm_eps);
	put_row(s, st->n, t, tmp, d);
}

static void pack_rows(struct cpu_state *s, const void *ctx, int t)
{
	const struct step *st = ctx;
	size_t d = (size_t)st->src_dim;
	put_row(s, st->n, t, st->src + t * d, st->src_dim);
}

static void swiglu_pack(struct cpu_state *s, const void *ctx, int t)
{
	const struct step *st = ctx;
	size_t d = (size_t)s->c->intermediate_size;
	s->k->swiglu(s->gate + t * d, s->up + t * d, (int)d);
	put_row(s, st->n, t, s->gate + t * d, (int)d);
}

/* The cache: a region per (layer, kv_head) of ctx_alloc rows of head_dim, kv_region
 * bytes apart (kv_alloc). Values are rows; so are keys in an fp32 cache. A bf16 cache
 * keeps each 64 positions' keys as one weight panel (kernels.h: the pair of dims 2i,
 * 2i+1 of position p at 32-bit word i * 64 + p % 64), so that scoring them is the
 * prefill matmul's kernel, with no horizontal sums. */
static void *cache_row(struct cpu_state *s, void *cache, int layer, int kvh, int p)
{
	size_t i = ((size_t)layer * s->c->num_kv_heads + kvh) * s->kv_region;
	return (char *)cache + i + (size_t)p * s->c->head_dim * s->kv_elem;
}

/* The bf16 keys of positions [64b, 64b + 64). */
static const uint32_t *key_panel(struct cpu_state *s, int layer, int kvh, int b)
{
	return cache_row(s, s->key_cache, layer, kvh, CPU_PANEL_ROWS * b);
}

static void store_kv(struct cpu_state *s, void *dst, const float *src)
{
	int hd = s->c->head_dim;
	if (s->kv_f32) {
		memcpy(dst, src, (size_t)hd * sizeof(float));
		return;
	}
	s->k->to_bf16(dst, src, hd);
}

static void store_key(struct cpu_state *s, int layer, int kvh, int p, const float *k)
{
	if (s->kv_f32) { /* fp32 keys stay rows */
		store_kv(s, cache_row(s, s->key_cache, layer, kvh, p), k);
		return;
	}
	int hd = s->c->head_dim;
	uint16_t b[hd];
	s->k->to_bf16(b, k, hd);
	uint32_t *panel = (uint32_t *)key_panel(s, layer, kvh, p / CPU_PANEL_ROWS);
	for (int i = 0; i < hd / 2; i++)
		panel[(size_t)i * CPU_PANEL_ROWS + p % CPU_PANEL_ROWS] =
			b[2 * i] | (uint32_t)b[2 * i + 1] << 16;
}

/* Qwen3's per-head RMSNorm of q and k (before RoPE), rotate-half RoPE, then the
 * token's keys and values go into the cache at its position. */
static void qk_norm_rope_store(struct cpu_state *s, const void *ctx, int t)
{
	const struct step *st = ctx;
	int hd = s->c->head_dim, p = st->pos + t;
	float eps = (float)s->c->rms_norm_eps;
	const float *cs = s->rope_cos + (size_t)p * (hd / 2),
		    *sn = s->rope_sin + (size_t)p * (hd / 2);
	for (int h = 0; h < s->c->num_heads; h++) {
		float *qh = s->q + (size_t)t * s->q_dim + (size_t)h * hd;
		s->k->rmsnorm(qh, qh, layer_norm(s, st->layer, 2), hd, eps);
		cpu_rope(qh, cs, sn, hd);
	}
	for (int h = 0; h < s->c->num_kv_heads; h++) {
		float *kh = s->kk + (size_t)t * s->kv_dim + (size_t)h * hd;
		s->k->rmsnorm(kh, kh, layer_norm(s, st->layer, 3), hd, eps);
		cpu_rope(kh, cs, sn, hd);
		store_key(s, st->layer, h, p, kh);
		store_kv(s, cache_row(s, s->value_cache, st->layer, h, p),
			 s->vv + (size_t)t * s->kv_dim + (size_t)h * hd);
	}
}

/* Causal GQA attention. A work item is one kv head and a tile of queries: its rows
 * are those queries for every query head that reads this kv head (head h reads kv
 * head h / group, as transformers' repeat_kv does), group x tile rows, head-major,
 * so every key and value row is read once for all of them. With a bf16 cache the
 * scores of all the rows are matrix products, q (rows, head_dim) times each panel of
 * 64 keys (scored one query at a time, they took a large share of a prefill); the
 * fp32 cache scores one query at a time.
 * Queries before the tile's last score a few keys past their own position; their
 * probabilities there are set to zero before the values are mixed. */
struct attn_task {
	struct cpu_state *s;
	const struct step *st;
	atomic_int next;
};

static void attention_run(void *arg, int tid, int nt)
{
	(void)nt;
	struct attn_task *a = arg;
	struct cpu_state *s = a->s;
	const struct step *st = a->st;
	int H = s->c->num_heads, KVH = s->c->num_kv_heads, hd = s->c->head_dim, group = H / KVH;
	int tq = s->att_rows / group, tiles = (st->n + tq - 1) / tq;
	float scale = 1.0f / sqrtf((float)hd);
	float *sc = s->scores + (size_t)tid * s->att_rows * s->ctx;
	float *qp = s->qp + (size_t)tid * s->att_rows * hd;
	for (int it; (it = cpu_claim(&a->next, tiles * KVH)) >= 0;) {
		int kvh = it % KVH, t0 = it / KVH * tq;
		int tile_n = st->n - t0 < tq ? st->n - t0 : tq, rows = group * tile_n;
		int nk_tile = st->pos + t0 + tile_n; /* keys the tile's last query sees */
		const void *keys = cache_row(s, s->key_cache, st->layer, kvh, 0); /* fp32 rows */
		const void *vals = cache_row(s, s->value_cache, st->layer, kvh, 0);
		/* row g * tile_n + t: query t0 + t of head kvh * group + g */
		const float *q0 = s->q + (size_t)t0 * s->q_dim + (size_t)kvh * group * hd;
		if (s->bf16_scores && st->n > 1) { /* a prefill: the queries rounded to bf16 */
			uint16_t *qb = (uint16_t *)qp; /* room for 32 rows of bf16 (att_rows) */
			for (int g = 0; g < group; g++)
				for (int t = 0; t < tile_n; t++)
					s->k->to_bf16(qb + (size_t)(g * tile_n + t) * hd,
						      q0 + (size_t)t * s->q_dim + (size_t)g * hd, hd);
			s->k->scores_bf16(sc, s->ctx, qb, hd, rows, key_panel(s, st->layer, kvh, 0),
					  hd, nk_tile);
		} else if (!s->kv_f32) {
			for (int g = 0; g < group; g++)
				for (int t = 0; t < tile_n; t++)
					s->k->pack_row(qp + (size_t)(g * tile_n + t) * hd,
						       q0 + (size_t)t * s->q_dim + (size_t)g * hd,
						       hd);
			for (int b = 0; CPU_PANEL_ROWS * b < nk_tile; b++) {
				int left = nk_tile - CPU_PANEL_ROWS * b;
				s->k->matmul_panel(sc + CPU_PANEL_ROWS * b, s->ctx, qp, hd, rows,
						   key_panel(s, st->layer, kvh, b), hd,
						   left < CPU_PANEL_ROWS ? left : CPU_PANEL_ROWS);
			}
		}
		for (int g = 0; g < group; g++)
			for (int t = 0; t < tile_n; t++) {
				float *row = sc + (size_t)(g * tile_n + t) * s->ctx;
				int nk = st->pos + t0 + t + 1;
				if (s->kv_f32) /* scaled already */
					s->k->scores(row,
						     q0 + (size_t)t * s->q_dim + (size_t)g * hd,
						     keys, nk, hd, false, scale);
				s->k->softmax(row, nk, s->kv_f32 ? 1.0f : scale, NULL);
				memset(row + nk, 0,
				       (size_t)(nk_tile - nk) * sizeof *row); /* causal */
				if (s->capture && t0 + t == st->n - 1)
					memcpy(s->cap + ((size_t)st->layer * H + kvh * group + g) *
								s->ctx,
					       row, (size_t)nk * sizeof *row);
			}
		/* the outputs of many rows at once, each value row read once for all */
		float *o0 = s->att + (size_t)t0 * s->q_dim + (size_t)kvh * group * hd;
		if (tile_n == 1) /* decode: the group's heads sit side by side */
			s->k->mix(o0, hd, sc, s->ctx, group, vals, nk_tile, hd, !s->kv_f32);
		else
			for (int g = 0; g < group; g++)
				s->k->mix(o0 + (size_t)g * hd, s->q_dim,
					  sc + (size_t)g * tile_n * s->ctx, s->ctx, tile_n, vals,
					  nk_tile, hd, !s->kv_f32);
	}
}

static void attention(struct cpu_state *s, const struct step *st)
{
	struct attn_task a = {.s = s, .st = st};
	atomic_init(&a.next, 0);
	cpu_pool_run(s->pool, attention_run, &a);
}

/* ---- the KV cache's pages ------------------------------------------------------------ */

enum { HUGE_PAGE = 2 << 20 };
#if defined(__linux__) && !defined(MADV_COLLAPSE)
#define MADV_COLLAPSE 25 /* Linux 6.1's value; glibc 2.36 (Debian 12) does not name it */
#endif

/* Regions collapsed into 2 MB pages per forward: each is a 2 MB copy in the kernel
 * (MADV_COLLAPSE), a cost a small model's decode step feels, so each forward takes
 * only a few: Qwen3-0.6B's two caches have 448 regions, 112 forwards' worth after
 * each 8192nd token. */
#define KV_PROMOTE_STEP 4

/* The cache comes into memory 4 KB at a time, as positions first reach each region's
 * pages: on 2 MB pages from the start, the first token touched one per region, 28 x 8 x
 * 2 of them, 896 MB for Qwen3-0.6B at ctx 32768 before the conversation held any of
 * it. Laid out in blocks of 64 positions for every region instead, the pages would
 * fill in order, but decode would read 16 KB runs 3.5 MB apart, far below the read
 * bandwidth of whole regions. So each region's 2 MB extents, once full, are made huge
 * pages (what decode gains from them: alloc_aligned), a few regions per forward. */
static void kv_promote(struct cpu_state *s, int budget)
{
	size_t row = (size_t)s->c->head_dim * s->kv_elem;
	int regions = s->c->num_layers * s->c->num_kv_heads;
	int full = s->kv_region >= HUGE_PAGE ? (int)((size_t)s->kv_high * row / HUGE_PAGE) : 0;
	for (; s->kv_huge < full && budget > 0; budget--) {
		char *cache = s->kv_next < regions ? s->key_cache : s->value_cache;
		char *at = cache + (size_t)(s->kv_next % regions) * s->kv_region +
			   (size_t)s->kv_huge * HUGE_PAGE;
#ifdef MADV_HUGEPAGE
		madvise(at, HUGE_PAGE, MADV_HUGEPAGE); /* else khugepaged may, in time */
#endif
#ifdef MADV_COLLAPSE
		madvise(at, HUGE_PAGE, MADV_COLLAPSE); /* Linux 6.1 on; a hint: errors ignored */
#endif
		if (++s->kv_next == 2 * regions) {
			s->kv_next = 0;
			s->kv_huge++;
		}
	}
}

/* A cache of `regions` regions of ctx_alloc rows: 2 MB aligned, each region a whole
 * number of 2 MB extents when it holds one or more (the padding is never touched),
 * on 4 KB pages until kv_promote; not zeroed: only rows written are read. */
static void *kv_alloc(struct cpu_state *s, size_t regions)
{
	size_t bytes = regions * s->kv_region;
	void *p = NULL;
	if (regions && bytes / regions != s->kv_region)
		return NULL;
	if (posix_memalign(&p, HUGE_PAGE, bytes ? bytes : HUGE_PAGE))
		return NULL;
#ifdef MADV_NOHUGEPAGE
	madvise(p, bytes, MADV_NOHUGEPAGE); /* THP "always" would fault 2 MB at a time */
#endif
	s->kv_bytes = bytes;
	return p;
}

/* ---- the forward pass -------------------------------------------------------------- */

/* Whether a prefill stops before its next layer (eng_set_cancel); a token of decode
 * runs whole. */
static bool cancelled(const struct cpu_state *s, int n)
{
	return n > 1 && s->cancel && atomic_load_explicit(s->cancel, memory_order_relaxed);
}

/* One chunk of n <= s->chunk tokens at positions pos..pos+n-1. Logits for the last
 * token, or for all n when `all` (rows of vocab_size); none when logits is NULL.
 * false when cancelled between layers (the cache past pos is then undefined). */
static bool forward_chunk(struct cpu_state *s, const int32_t *ids, int n, int pos, float *logits,
			  bool all)
{
	const struct eng_config *c = s->c;
	const struct eng_weights *w = s->w;
	int D = c->hidden_size, F = c->intermediate_size, V = c->vocab_size;

	/* x (n, D) = embedding rows, dequantized */
	size_t erb = eng_row_bytes(w->embed.dtype, D);
	for (int t = 0; t < n; t++)
		quant_dequantize_row(w->embed.dtype,
				     (const uint8_t *)w->embed.data + (size_t)ids[t] * erb,
				     s->x + (size_t)t * D, D);

	for (int l = 0; l < c->num_layers; l++) {
		const struct eng_layer *L = &w->layers[l];
		struct step st = {.layer = l, .pos = pos, .n = n, .norm = layer_norm(s, l, 0)};
		if (cancelled(s, n))
			return false;

		/* attention block: xn = pack(rmsnorm(x)); q,k,v = xn @ Wq,Wk,Wv^T */
		per_token(s, n, rmsnorm_pack, &st);
		matmul(s, n, D, 3,
		       (struct cpu_mm[3]){{s->q, &L->wq, s->q_dim, false},     /* (n, q_dim) */
					  {s->kk, &L->wk, s->kv_dim, false},   /* (n, kv_dim) */
					  {s->vv, &L->wv, s->kv_dim, false}}); /* (n, kv_dim) */
		per_token(s, n, qk_norm_rope_store, &st);
		/* att (n, q_dim) = softmax(q k^T / sqrt(hd) + causal) v, over the cache */
		attention(s, &st);
		/* x += att @ Wo^T */
		st.src = s->att;
		st.src_dim = s->q_dim;
		per_token(s, n, pack_rows, &st);
		matmul(s, n, s->q_dim, 1, &(struct cpu_mm){s->x, &L->wo, D, true});

		/* MLP block: x += (silu(xn Wg^T) * (xn Wu^T)) Wd^T, xn = pack(rmsnorm(x)) */
		st.norm = layer_norm(s, l, 1);
		per_token(s, n, rmsnorm_pack, &st);
		matmul(s, n, D, 2,
		       (struct cpu_mm[2]){{s->gate, &L->w_gate, F, false}, /* (n, F) */
					  {s->up, &L->w_up, F, false}});   /* (n, F) */
		per_token(s, n, swiglu_pack, &st);
		matmul(s, n, F, 1, &(struct cpu_mm){s->x, &L->w_down, D, true});
	}

	if (!logits)
		return true;
	/* logits (rows, V) = pack(rmsnorm(x)) @ lm_head^T for the last or every token */
	int first = all ? 0 : n - 1, rows = n - first;
	struct step st = {.n = rows, .norm = s->final_norm};
	memmove(s->x, s->x + (size_t)first * D, (size_t)rows * D * sizeof *s->x);
	per_token(s, rows, rmsnorm_pack, &st);
	matmul(s, rows, D, 1, &(struct cpu_mm){logits, &w->lm_head, V, false});
	return true;
}

static int cpu_forward(void *vs, const int32_t *ids, int n, int pos, float *logits, bool all)
{
	struct cpu_state *s = vs;
	if (s->capture)
		s->cap_len = 0;
	for (int done = 0; done < n;) {
		int m = n - done < s->chunk ? n - done : s->chunk;
		bool last = done + m == n;
		/* intermediate chunks need no logits unless all are wanted */
		float *out = all ? logits + (size_t)done * s->c->vocab_size : last ? logits : NULL;
		if (!forward_chunk(s, ids + done, m, pos + done, out, all))
			return ENG_CANCELLED;
		if (last && s->capture)
			s->cap_len = pos + n;
		done += m;
	}
	if (pos + n > s->kv_high)
		s->kv_high = pos + n;
	kv_promote(s, KV_PROMOTE_STEP);
	return 0;
}

/* The last position's hidden state after the final norm, rmsnorm(x) * final_norm in
 * fp32: what an embedding model's last-token pooling reads (cpu_forward without
 * logits leaves the last chunk's residual rows in s->x). */
static int cpu_hidden(void *vs, const int32_t *ids, int n, int pos, float *out)
{
	struct cpu_state *s = vs;
	int rc = cpu_forward(vs, ids, n, pos, NULL, false);
	if (rc)
		return rc;
	int d = s->c->hidden_size, last = (n - 1) % s->chunk;
	s->k->rmsnorm(out, s->x + (size_t)last * d, s->final_norm, d, (float)s->c->rms_norm_eps);
	return 0;
}

/* ---- setup ------------------------------------------------------------------------ */

/* 64-byte aligned; zeroed unless not asked (zero false): 2 MB aligned then, on 2 MB
 * pages where the kernel grants them (THP in "madvise" or "always" mode). The KV cache
 * (kv_alloc) is read in full by every decode step, and on 4 KB pages every page is a
 * TLB miss and a restart of the hardware prefetcher, as for the weights
 * (safetensors.c). */
static void *alloc_aligned(struct cpu_state *s, size_t n, size_t size, bool zero)
{
	void *p = NULL;
	size_t bytes = n * size;
	if (n && bytes / n != size)
		return NULL;
	size_t align = 64;
	if (!zero && bytes >= HUGE_PAGE)
		align = HUGE_PAGE;
	bytes = (bytes + align - 1) & ~(align - 1);
	if (posix_memalign(&p, align, bytes ? bytes : 64))
		return NULL;
#ifdef MADV_HUGEPAGE
	if (align == HUGE_PAGE)
		madvise(p, bytes, MADV_HUGEPAGE); /* a hint: 4 KB pages where refused */
#endif
	if (zero)
		memset(p, 0, bytes);
	s->scratch_bytes += bytes;
	return p;
}

static void *xalloc(struct cpu_state *s, size_t n, size_t size)
{
	return alloc_aligned(s, n, size, true);
}

static void cpu_free(void *vs)
{
	struct cpu_state *s = vs;
	if (!s)
		return;
	cpu_pool_free(s->pool);
	cpu_matmul_free(&s->mm);
	void *bufs[] = {s->key_cache, s->value_cache, s->rope_cos, s->rope_sin, s->x,  s->xn,
			s->xb,        s->norms,       s->q,        s->kk,       s->vv, s->att,
			s->gate,      s->up,          s->scores,   s->qp,       s->cap};
	for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++)
		free(bufs[i]);
	free(s);
}

/* Every tensor's rows must be whole blocks of its type (the loaders check this; a
 * backend trusts nothing it indexes with). *all_bf16 is cleared by a matrix of
 * another type: the products then need the quantized paths' buffers. */
static int check_type(const struct eng_tensor *t, const char *what, int layer, bool *all_bf16)
{
	int64_t K = t->ndim == 2 ? t->shape[1] : t->shape[0];
	if ((unsigned)t->dtype >= ENG_DTYPE_COUNT || !eng_row_bytes(t->dtype, K)) {
		char where[64];
		if (layer < 0)
			snprintf(where, sizeof where, "%s", what);
		else
			snprintf(where, sizeof where, "layer %d's %s", layer, what);
		return err_set("cpu backend: %s: %s rows of %lld weights are not whole blocks",
			       where, eng_dtype_name(t->dtype), (long long)K);
	}
	if (t->ndim == 2 && t->dtype != ENG_BF16)
		*all_bf16 = false;
	return 0;
}

static int check_types(const struct eng_weights *w, int layers, bool *all_bf16)
{
	*all_bf16 = true;
	const struct eng_tensor *top[] = {&w->embed, &w->final_norm, &w->lm_head};
	static const char *top_name[] = {"the token embedding", "the final norm", "the output"};
	for (size_t i = 0; i < 3; i++)
		if (check_type(top[i], top_name[i], -1, all_bf16))
			return -1;
	static const char *name[] = {"input norm", "q_proj",    "k_proj",    "v_proj",
				     "o_proj",     "q_norm",    "k_norm",    "post-attention norm",
				     "gate_proj",  "up_proj",   "down_proj"};
	for (int l = 0; l < layers; l++) {
		const struct eng_layer *L = &w->layers[l];
		const struct eng_tensor *t[] = {
			&L->input_norm, &L->wq,        &L->wk,     &L->wv,   &L->wo,    &L->q_norm,
			&L->k_norm,     &L->post_norm, &L->w_gate, &L->w_up, &L->w_down};
		for (size_t i = 0; i < sizeof t / sizeof t[0]; i++)
			if (check_type(t[i], name[i], l, all_bf16))
				return -1;
	}
	return 0;
}

/* The norms in fp32: any stored type, read once. */
static void widen_norms(struct cpu_state *s)
{
	const struct eng_config *c = s->c;
	for (int l = 0; l < c->num_layers; l++) {
		const struct eng_layer *L = &s->w->layers[l];
		const struct eng_tensor *t[4] = {&L->input_norm, &L->post_norm, &L->q_norm,
						 &L->k_norm};
		for (int i = 0; i < 4; i++)
			quant_dequantize_row(t[i]->dtype, t[i]->data, (float *)layer_norm(s, l, i),
					     t[i]->shape[0]);
	}
	quant_dequantize_row(s->w->final_norm.dtype, s->w->final_norm.data, (float *)s->final_norm,
			     c->hidden_size);
}

static void *cpu_init(struct eng_model *m, struct eng_backend_opts *o)
{
	const struct eng_config *c = eng_model_config(m);
	const struct eng_weights *w = eng_model_weights(m);
	bool all_bf16;
	if (check_types(w, c->num_layers, &all_bf16))
		return NULL;
	struct cpu_state *s = calloc(1, sizeof *s);
	if (!s) {
		err_set("cpu backend: out of memory");
		return NULL;
	}
	s->c = c;
	s->w = w;
	s->all_bf16 = all_bf16;
	/* o->cpu_isa picks the kernels (the tests run every set the CPU has) */
	enum cpu_isa isa = cpu_isa_best();
	if (o->cpu_isa && *o->cpu_isa && strcmp(o->cpu_isa, "auto")) {
		if (eng_cpu_isa_check(o->cpu_isa)) {
			free(s);
			err_prefix("cpu backend: kernel set");
			return NULL;
		}
		cpu_isa_from_name(o->cpu_isa, &isa);
	}
	s->k = cpu_kernels_get(isa);
	s->ctx = o->ctx;
	s->ctx_alloc = (o->ctx + CPU_PANEL_ROWS - 1) / CPU_PANEL_ROWS * CPU_PANEL_ROWS;
	s->chunk = o->ctx < CHUNK ? o->ctx : CHUNK;
	s->q_dim = c->num_heads * c->head_dim;
	s->kv_dim = c->num_kv_heads * c->head_dim;
	s->kv_f32 = o->kv_f32;
	s->bf16 = o->bf16_prefill && s->k->matmul_bf16;
	s->bf16_scores = s->bf16 && s->k->scores_bf16 && !o->kv_f32;
	s->kv_elem = o->kv_f32 ? 4 : 2;
	if (!(s->pool = cpu_pool_new(o->threads))) {
		free(s);
		return NULL;
	}
	size_t ch = (size_t)s->chunk, hd2 = (size_t)c->head_dim / 2, ctx = (size_t)s->ctx;
	size_t widest = (size_t)c->hidden_size;
	if ((size_t)s->q_dim > widest)
		widest = (size_t)s->q_dim;
	if ((size_t)c->intermediate_size > widest)
		widest = (size_t)c->intermediate_size;
	size_t regions = (size_t)c->num_layers * (size_t)c->num_kv_heads;
	s->kv_region = (size_t)s->ctx_alloc * (size_t)c->head_dim * s->kv_elem;
	if (s->kv_region >= HUGE_PAGE) /* whole extents, for kv_promote */
		s->kv_region = (s->kv_region + HUGE_PAGE - 1) / HUGE_PAGE * HUGE_PAGE;
	s->key_cache = kv_alloc(s, regions);
	s->value_cache = kv_alloc(s, regions);
	size_t kv_bytes = 2 * regions * s->kv_region; /* asked for, allocated or not */
	s->rope_cos = xalloc(s, ctx * hd2, sizeof(float));
	s->rope_sin = xalloc(s, ctx * hd2, sizeof(float));
	s->x = xalloc(s, ch * c->hidden_size, sizeof(float));
	s->xn = xalloc(s, ch * widest, sizeof(float));
	size_t norm_floats = (size_t)c->num_layers * (2 * c->hidden_size + 2 * c->head_dim);
	s->norms = xalloc(s, norm_floats + c->hidden_size, sizeof(float));
	if (cpu_matmul_init(&s->mm, s->k, s->pool, (int)widest, s->chunk, all_bf16,
			    !o->bf16_prefill, !o->bf16_prefill && o->exact_decode)) {
		cpu_free(s);
		return NULL;
	}
	s->scratch_bytes += s->mm.bytes;
	if (s->bf16 && !(s->xb = xalloc(s, ch * widest, sizeof(uint16_t))))
		s->bf16 = false; /* falls back to the exact path */
	s->q = xalloc(s, ch * s->q_dim, sizeof(float));
	s->kk = xalloc(s, ch * s->kv_dim, sizeof(float));
	s->vv = xalloc(s, ch * s->kv_dim, sizeof(float));
	s->att = xalloc(s, ch * s->q_dim, sizeof(float));
	s->gate = xalloc(s, ch * c->intermediate_size, sizeof(float));
	s->up = xalloc(s, ch * c->intermediate_size, sizeof(float));
	int group = c->num_heads / c->num_kv_heads;
	int rows = s->bf16_scores ? 32 : ATT_ROWS; /* AMX: a whole tile of query rows */
	s->att_rows = group * (rows / group > 0 ? rows / group : 1);
	s->scores = xalloc(s, (size_t)cpu_pool_size(s->pool) * s->att_rows * ctx, sizeof(float));
	s->qp = xalloc(s, (size_t)cpu_pool_size(s->pool) * s->att_rows * c->head_dim,
		       sizeof(float));
	if (!s->key_cache || !s->value_cache || !s->rope_cos || !s->rope_sin || !s->x || !s->xn ||
	    !s->norms || !s->q || !s->kk || !s->vv || !s->att || !s->gate || !s->up || !s->scores ||
	    !s->qp) {
		char kv[16];
		err_set("cpu backend: out of memory for a %d-token context (KV cache %s)", s->ctx,
			units_ibytes((double)kv_bytes, kv, sizeof kv));
		cpu_free(s);
		return NULL;
	}
	s->final_norm = s->norms + norm_floats;
	widen_norms(s);
	rope_table(c, s->ctx, s->rope_cos, s->rope_sin);
	return s;
}

static void cpu_set_capture(void *vs, bool on)
{
	struct cpu_state *s = vs;
	/* (layer, head, ctx) floats, 73 MB for Qwen3-0.6B at 40k tokens: only when asked.
	 * Without the memory, capture stays off and eng_attention returns NULL. */
	if (on && !s->cap)
		s->cap = xalloc(s, (size_t)s->c->num_layers * s->c->num_heads * s->ctx,
				sizeof(float));
	s->capture = on && s->cap;
	if (!on)
		s->cap_len = 0;
}

static const float *cpu_attention(void *vs, int layer, int head, int *len)
{
	struct cpu_state *s = vs;
	*len = 0;
	if (!s->cap_len || layer < 0 || layer >= s->c->num_layers || head < 0 ||
	    head >= s->c->num_heads)
		return NULL;
	*len = s->cap_len;
	return s->cap + ((size_t)layer * s->c->num_heads + head) * s->ctx;
}

static void cpu_stats(void *vs, struct eng_backend_stats *out)
{
	struct cpu_state *s = vs;
	memset(out, 0, sizeof *out);
	size_t per_tok = 2 * (size_t)s->c->num_layers * s->kv_dim * s->kv_elem;
	out->kv_bytes_per_token = per_tok;
	out->kv_bytes_allocated = per_tok * (size_t)s->ctx_alloc;
	/* The pages touched: each region's rows up to the highest position written, in
	 * 4 KB pages (2 MB ones only over whole extents: the same bytes). */
	size_t touched = ((size_t)s->kv_high * s->c->head_dim * s->kv_elem + 4095) / 4096 * 4096;
	size_t regions = (size_t)s->c->num_layers * s->c->num_kv_heads;
	out->kv_lazy = true;
	out->kv_bytes_resident = 2 * regions * (touched < s->kv_region ? touched : s->kv_region);
	out->scratch_bytes = s->scratch_bytes;
	out->prefill_inputs = s->bf16 ? "bf16" : s->mm.qpanels ? "int8" : "fp32";
}

/* One token takes the decode products (matmul's n == 1: fp32 activations, never the
 * bf16 ones), and so do quantized matrices below CPU_QDIRECT tokens (int8 matrix-vector
 * products instead of the prefill's panels); from there on every kernel computes each
 * token's row in the same order whatever the other rows, so a split prefill gives a
 * whole one's logits bit for bit (tests/unit/test_session.c's warm_cold checks it). */
void eng_cpu_set_cancel(void *vs, const atomic_int *cancel)
{
	((struct cpu_state *)vs)->cancel = cancel;
}

static int cpu_prefill_min(void *vs)
{
	struct cpu_state *s = vs;
	return s->all_bf16 ? 2 : CPU_QDIRECT;
}

static int cpu_measure_op(void *vs, const struct eng_measure_request *rq, struct eng_peaks *out)
{
	struct cpu_state *s = vs;
	return cpu_measure(cpu_pool_size(s->pool), rq, out);
}

static const struct eng_backend_ops cpu_ops = {
	.name = "cpu",
	.init = cpu_init,
	.free = cpu_free,
	.forward = cpu_forward,
	.set_capture = cpu_set_capture,
	.attention = cpu_attention,
	.stats = cpu_stats,
	.measure = cpu_measure_op,
	.prefill_min = cpu_prefill_min,
	.hidden = cpu_hidden,
};

const struct eng_backend_ops *eng_cpu_backend(void)
{
	return &cpu_ops;
}

int eng_cpu_isa_check(const char *name)
{
	enum cpu_isa isa;
	if (!cpu_isa_from_name(name, &isa))
		return err_set("'%s': not one of c, avx2, avx512, avx512bf16, amx", name);
	if (!cpu_isa_supported(isa))
		return err_set("'%s': this CPU cannot run it", name);
	return 0;
}
