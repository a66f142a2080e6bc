/* matmul.c — matrix products over weights of any stored type (matmul.h). */
#include "engine/cpu/matmul.h"

#include <stdlib.h>
#include <string.h>

#include "engine/quant.h"
#include "src/base/err.h"

/* Rows per work item. Prefill: 64, one weight panel; with 512 tokens that is ~70
 * MFLOP, small enough that a thread arriving late still finds work. Decode: about
 * DECODE_BLOCK_BYTES of weights, so that each of the kernel's streams reads a long
 * contiguous run (bf16 blocks of 64 or 128 rows decoded slower than 256 or 512). A
 * power of two keeps the matrices of one call (q, k, v: 2, 1 and 1 MB in bf16)
 * in whole blocks for two threads. */
#define PREFILL_ROWS       CPU_PANEL_ROWS
#define DECODE_BLOCK_BYTES (1 << 20)
/* The quantized kernels prefetch in software and need no long runs; smaller blocks
 * balance the threads: with 1 MB blocks a q/k/v call had 4 blocks of ~0.6-0.9 MB for
 * two threads (Q4_K and Q6_K at different speeds), and a thread waiting for the other
 * was a visible part of a decode step. 128 KB decoded fastest of 1 MB, 256, 128 and
 * 64 KB. */
#define QDECODE_BLOCK_BYTES (128 << 10)

static int block_rows(int n, const struct eng_tensor *w, int K)
{
	if (n >= CPU_QDIRECT || (n > 1 && w->dtype == ENG_BF16))
		return PREFILL_ROWS;
	size_t rb = eng_row_bytes(w->dtype, K);
	size_t lim = w->dtype == ENG_BF16 ? DECODE_BLOCK_BYTES : QDECODE_BLOCK_BYTES;
	int rows = w->dtype == ENG_BF16 ? 64 : 32;
	while ((size_t)rows * 2 * rb <= lim)
		rows *= 2;
	return rows;
}

struct mm_task {
	struct cpu_matmul *c;
	const float *xp;    /* (n, K) packed */
	const uint16_t *xb; /* (n, K) bf16: matmul_bf16 instead */
	int n, K, blocks;
	int rows; /* rows per block (the last of a matrix: fewer) */
	struct cpu_mm mm[3];
	atomic_int next; /* next block, over all matrices */
};

/* Rows [lo, hi) of a quantized matrix for n < CPU_QDIRECT tokens: each token's
 * matrix-vector product over 32 rows at a time, so the rows are read from memory
 * once and from cache for the other tokens. */
static void direct(const struct mm_task *t, const struct cpu_mm *mm, int lo, int hi)
{
	const struct cpu_matmul *c = t->c;
	for (int r = lo; r < hi; r += 32) {
		int e = r + 32 < hi ? r + 32 : hi;
		for (int i = 0; i < t->n; i++)
			c->k->qmatvec(mm->w->dtype, mm->out + (size_t)i * mm->M, mm->w->data,
				      &c->xq[i], t->K, r, e, mm->acc);
	}
}

/* Rows [lo, hi) of a non-bf16 matrix for a prefill: dequantized to bf16 rows, then
 * the bf16 kernels on them. */
static void dequantized(const struct mm_task *t, const struct cpu_mm *mm, int lo, int hi, int tid,
			uint32_t *panel)
{
	const struct cpu_matmul *c = t->c;
	int K = t->K;
	size_t rb = eng_row_bytes(mm->w->dtype, K);
	if (c->wrows32) { /* the exact path: the dequantized weights in fp32 */
		float *rows = c->wrows32 + (size_t)tid * PREFILL_ROWS * c->widest;
		/* a decode's blocks (another matrix of the call sized them) can be longer */
		for (int r0 = lo, r1; r0 < hi; r0 = r1) {
			r1 = r0 + PREFILL_ROWS < hi ? r0 + PREFILL_ROWS : hi;
			for (int r = r0; r < r1; r++)
				c->k->dequant_f32p(mm->w->dtype,
						   (const uint8_t *)mm->w->data + (size_t)r * rb,
						   rows + (size_t)(r - r0) * K, K);
			c->k->matmul_f32w(mm->out + r0, mm->M, t->xp, K, t->n, rows, K, r1 - r0,
					  mm->acc);
		}
		return;
	}
	uint16_t *rows = c->wrows + (size_t)tid * PREFILL_ROWS * c->widest;
	for (int r = lo; r < hi; r++)
		c->k->dequant_bf16(mm->w->dtype, (const uint8_t *)mm->w->data + (size_t)r * rb,
				   rows + (size_t)(r - lo) * K, K);
	if (t->xb)
		c->k->matmul_bf16(mm->out + lo, mm->M, t->xb, K, t->n, rows, K, 0, hi - lo, mm->acc,
				  panel);
	else
		c->k->matmul(mm->out + lo, mm->M, t->xp, K, t->n, rows, K, 0, hi - lo, mm->acc,
			     panel);
}

/* Rows [lo, hi) of a quantized matrix for a prefill in integers: repacked into this
 * thread's panel, then every token's activations against it. */
static void integer(const struct mm_task *t, const struct cpu_mm *mm, int lo, int hi, int tid)
{
	const struct cpu_matmul *c = t->c;
	size_t rb = eng_row_bytes(mm->w->dtype, t->K);
	uint8_t *panel = c->qpanels + (size_t)tid * c->qpanel_bytes;
	c->k->qpack(mm->w->dtype, (const uint8_t *)mm->w->data + (size_t)lo * rb, rb, hi - lo, t->K,
		    panel);
	c->k->qgemm(mm->w->dtype, mm->out + lo, mm->M, c->xq, t->n, panel, t->K, hi - lo, mm->acc);
}

/* How n tokens are multiplied with w: bf16 weights by the bf16 kernels; other types
 * by the matrix-vector kernels for a few tokens (decode), else repacked for the
 * integer prefill where there is one for the type, else as dequantized rows. With
 * exact_decode a few tokens take the block-quantized types as dequantized rows too,
 * so that no activation is rounded (F16 and F32 rows meet fp32 ones in qmatvec). */
enum path { BF16, DIRECT, INTEGER, DEQUANTIZED };

static enum path path_of(const struct cpu_matmul *c, const struct eng_tensor *w, int n)
{
	if (w->dtype == ENG_BF16)
		return BF16;
	if (n < CPU_QDIRECT && !(c->exact_decode && eng_dtype_quantized(w->dtype)))
		return DIRECT;
	if (c->qpanels && n <= c->xq_rows && eng_dtype_quantized(w->dtype))
		return INTEGER;
	return DEQUANTIZED;
}

/* Block b of the task, counted over all its matrices. */
static void run_block(const struct mm_task *t, int b, int tid)
{
	const struct cpu_kernels *k = t->c->k;
	int i = 0;
	for (int nb; b >= (nb = (t->mm[i].M + t->rows - 1) / t->rows); i++)
		b -= nb;
	const struct cpu_mm *mm = &t->mm[i];
	int lo = b * t->rows, hi = lo + t->rows < mm->M ? lo + t->rows : mm->M;
	uint32_t *panel = t->c->panels + (size_t)tid * t->c->panel_words;
	const uint16_t *w = mm->w->data;
	enum path p = path_of(t->c, mm->w, t->n);
	if (p == DIRECT)
		direct(t, mm, lo, hi);
	else if (p == INTEGER)
		integer(t, mm, lo, hi, tid);
	else if (p == DEQUANTIZED)
		dequantized(t, mm, lo, hi, tid, panel);
	else if (t->xb)
		k->matmul_bf16(mm->out, mm->M, t->xb, t->K, t->n, w, t->K, lo, hi, mm->acc, panel);
	else
		k->matmul(mm->out, mm->M, t->xp, t->K, t->n, w, t->K, lo, hi, mm->acc, panel);
}

/* The threads take runs of blocks, a share of what is left each time, rather than one
 * block per claim: a quantized decode step claimed ~6,000 blocks of 64-128 KB, each an
 * atomic add on a cache line both cores write. */
static void mm_run(void *arg, int tid, int nt)
{
	struct mm_task *t = arg;
	for (int b, end; (b = cpu_claim_range(&t->next, t->blocks, nt, &end)) >= 0;)
		for (; b < end; b++)
			run_block(t, b, tid);
}

/* The inputs of the integer kernels: natural order, quantized per 32. A decode's few
 * tokens keep their natural-order rows (F16/F32 weights read them); a prefill's are
 * quantized by all threads, each through its own scratch row. */
struct quantize_task {
	struct cpu_matmul *c;
	const float *xp;
	const uint16_t *xb;
	int n, K;
	atomic_int next;
};

static void quantize_one(const struct quantize_task *q, int i, float *x)
{
	int K = q->K;
	if (q->xb)
		for (int j = 0; j < K; j++)
			x[j] = cpu_bf16_to_f32(q->xb[(size_t)i * K + j]);
	else
		cpu_unpack_row(x, q->xp + (size_t)i * K, K, q->c->k->pack);
	q->c->k->quantize_act(x, K, &q->c->xq[i]);
}

static void quantize_run(void *arg, int tid, int nt)
{
	(void)nt;
	struct quantize_task *q = arg;
	float *x = q->c->xf + (size_t)tid * q->c->widest;
	for (int b; (b = cpu_claim(&q->next, (q->n + 15) / 16)) >= 0;)
		for (int i = 16 * b; i < q->n && i < 16 * b + 16; i++)
			quantize_one(q, i, x);
}

static void quantize_inputs(struct cpu_matmul *c, const float *xp, const uint16_t *xb, int n, int K)
{
	struct quantize_task q = {.c = c, .xp = xp, .xb = xb, .n = n, .K = K};
	if (n < CPU_QDIRECT) {
		for (int i = 0; i < n; i++)
			quantize_one(&q, i, c->xf + (size_t)i * c->widest);
		return;
	}
	atomic_init(&q.next, 0);
	cpu_pool_run(c->pool, quantize_run, &q);
}

void cpu_matmul(struct cpu_matmul *c, const float *xp, const uint16_t *xb, int n, int K, int count,
		const struct cpu_mm *mm)
{
	struct mm_task t = {.c = c, .xp = xp, .xb = xb, .n = n, .K = K};
	t.rows = block_rows(n, mm[0].w, K);
	memcpy(t.mm, mm, (size_t)count * sizeof *mm);
	bool quantized_inputs = false;
	for (int i = 0; i < count; i++) {
		t.blocks += (mm[i].M + t.rows - 1) / t.rows;
		enum path p = path_of(c, mm[i].w, n);
		quantized_inputs |= p == DIRECT || p == INTEGER;
	}
	if (quantized_inputs)
		quantize_inputs(c, xp, xb, n, K);
	atomic_init(&t.next, 0);
	cpu_pool_run(c->pool, mm_run, &t);
}

static void *alloc64(struct cpu_matmul *c, size_t n, size_t size)
{
	void *p = NULL;
	size_t bytes = (n * size + 63) & ~(size_t)63;
	if (posix_memalign(&p, 64, bytes ? bytes : 64))
		return NULL;
	memset(p, 0, bytes);
	c->bytes += bytes;
	return p;
}

int cpu_matmul_init(struct cpu_matmul *c, const struct cpu_kernels *k, struct cpu_pool *pool,
		    int widest, int chunk, bool bf16_only, bool exact, bool exact_decode)
{
	memset(c, 0, sizeof *c);
	c->k = k;
	c->pool = pool;
	c->widest = widest;
	size_t th = (size_t)cpu_pool_size(pool), w = (size_t)widest, q = CPU_QDIRECT;
	c->panel_words = cpu_panel_words(widest);
	if (!(c->panels = alloc64(c, th * c->panel_words, sizeof(uint32_t))))
		return err_set("cpu backend: out of memory");
	if (bf16_only)
		return 0;
	if (exact && k->matmul_f32w) {
		c->wrows32 = alloc64(c, th * PREFILL_ROWS * w, sizeof(float));
		c->exact_decode = exact_decode;
	} else
		c->wrows = alloc64(c, th * PREFILL_ROWS * w, sizeof(uint16_t));
	if (!exact && k->qgemm && chunk > CPU_QDIRECT) {
		c->qpanel_bytes = (cpu_qpanel_bytes(widest) + 63) & ~(size_t)63;
		c->qpanels = alloc64(c, th * c->qpanel_bytes, 1);
		q = (size_t)chunk;
	}
	/* strides that keep every row's arrays 4-byte aligned for the kernels' loads */
	size_t sq = (w + 63) & ~(size_t)63, sd = w / 32 + 1, s16 = (w / 16 + 2 + 1) & ~(size_t)1;
	c->xq_rows = (int)q;
	c->xf = alloc64(c, (th > CPU_QDIRECT ? th : CPU_QDIRECT) * w, sizeof(float));
	c->xq8 = alloc64(c, q * sq, 1);
	c->xd = alloc64(c, q * sd, sizeof(float));
	c->xds = alloc64(c, q * sd, sizeof(float));
	c->xs16 = alloc64(c, q * s16, sizeof(int16_t));
	c->xq = alloc64(c, q, sizeof *c->xq);
	if ((!c->wrows && !c->wrows32) || (c->qpanel_bytes && !c->qpanels) || !c->xf || !c->xq8 ||
	    !c->xd || !c->xds || !c->xs16 || !c->xq)
		return err_set("cpu backend: out of memory");
	for (size_t i = 0; i < q; i++)
		c->xq[i] = (struct cpu_xq){.q = c->xq8 + i * sq,
					   .d = c->xd + i * sd,
					   .ds = c->xds + i * sd,
					   .s16 = c->xs16 + i * s16};
	return 0;
}

void cpu_matmul_free(struct cpu_matmul *c)
{
	void *bufs[] = {c->panels, c->wrows,	c->wrows32, c->qpanels, c->xf,
			c->xq8,	   c->xd,	c->xds,	    c->xs16,	c->xq};
	for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++)
		free(bufs[i]);
	memset(c, 0, sizeof *c);
}
