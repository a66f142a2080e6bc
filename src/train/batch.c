/* batch.c — training windows: the seeded random draw and the sequential rule. */
#include "src/train/batch.h"
#include "src/base/err.h"
#include "src/train/dataset.h"

#include <stdlib.h>
#include <string.h>

static uint64_t splitmix64(uint64_t *x)
{
	uint64_t z = (*x += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

void batch_rng_seed(struct batch_rng *r, uint64_t seed)
{
	for (int i = 0; i < 4; i++)
		r->s[i] = splitmix64(&seed);
}

static uint64_t rotl(uint64_t x, int k)
{
	return (x << k) | (x >> (64 - k));
}

uint64_t batch_rng_next(struct batch_rng *r)
{
	uint64_t *s = r->s;
	uint64_t result = rotl(s[1] * 5, 7) * 9, t = s[1] << 17;
	s[2] ^= s[0];
	s[3] ^= s[1];
	s[1] ^= s[2];
	s[0] ^= s[3];
	s[2] ^= t;
	s[3] = rotl(s[3], 45);
	return result;
}

uint64_t batch_rng_below(struct batch_rng *r, uint64_t n)
{
	/* Lemire: the high word of x*n is uniform once the low word is past the bias */
	unsigned __int128 m = (unsigned __int128)batch_rng_next(r) * n;
	uint64_t low = (uint64_t)m;
	if (low < n) {
		uint64_t threshold = -n % n;
		while (low < threshold) {
			m = (unsigned __int128)batch_rng_next(r) * n;
			low = (uint64_t)m;
		}
	}
	return (uint64_t)(m >> 64);
}

void batch_rng_format(const struct batch_rng *r, char out[65])
{
	static const char hex[] = "0123456789abcdef";
	for (int i = 0; i < 4; i++)
		for (int j = 0; j < 16; j++)
			out[i * 16 + j] = hex[(r->s[i] >> (60 - 4 * j)) & 15];
	out[64] = '\0';
}

int batch_rng_parse(struct batch_rng *r, const char *hex, const char *what)
{
	struct batch_rng x = {{0}};
	if (!hex || strlen(hex) != 64)
		return err_set("%s: not 64 hex digits", what);
	for (int i = 0; i < 64; i++) {
		char c = hex[i];
		int v = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
		if (v < 0)
			return err_set("%s: not 64 hex digits", what);
		x.s[i / 16] = x.s[i / 16] << 4 | (uint64_t)v;
	}
	if (!(x.s[0] | x.s[1] | x.s[2] | x.s[3]))
		return err_set("%s: an all-zero generator state", what);
	*r = x;
	return 0;
}

static void window(const int32_t *stream, size_t o, int T, int32_t *in, int32_t *tg)
{
	memcpy(in, stream + o, (size_t)T * sizeof *in);
	memcpy(tg, stream + o + 1, (size_t)T * sizeof *tg);
}

void batch_random(struct batch_rng *r, const int32_t *stream, size_t len, int rows, int T,
		  int32_t *inputs, int32_t *targets)
{
	for (int b = 0; b < rows; b++) {
		size_t o = (size_t)batch_rng_below(r, (uint64_t)(len - (size_t)T));
		window(stream, o, T, inputs + (size_t)b * T, targets + (size_t)b * T);
	}
}

/* Positions [from, T) of a row hold nothing: input 0, no target (not scored). */
static void pad(int32_t *in, int32_t *tg, int from, int T)
{
	for (int i = from; i < T; i++) {
		in[i] = 0;
		tg[i] = -1;
	}
}

int64_t batch_windows(size_t len, int T)
{
	return len < (size_t)T + 1 ? 0 : (int64_t)((len - 1) / (size_t)T);
}

int64_t batch_seq_window(int64_t step, int accum, int micro, int rows, int row, int64_t windows)
{
	/* ((s*A + a)*B + b) mod W, reduced at each stage so that no product overflows */
	int64_t k = step % windows;
	k = (k * accum + micro) % windows;
	return (k * rows + row) % windows;
}

void batch_sequential(const int32_t *stream, size_t len, int64_t step, int accum, int micro,
		      int rows, int T, int32_t *inputs, int32_t *targets)
{
	int64_t w = batch_windows(len, T);
	for (int b = 0; b < rows; b++) {
		int64_t k = batch_seq_window(step, accum, micro, rows, b, w);
		window(stream, (size_t)k * (size_t)T, T, inputs + (size_t)b * T,
		       targets + (size_t)b * T);
	}
}

int batch_eval(const int32_t *stream, size_t len, int T, int64_t first, int rows,
	       int32_t *inputs, int32_t *targets)
{
	int64_t w = batch_windows(len, T);
	int real = 0;
	for (int b = 0; b < rows; b++) {
		int32_t *in = inputs + (size_t)b * T, *tg = targets + (size_t)b * T;
		if (first + b < w) {
			window(stream, (size_t)(first + b) * (size_t)T, T, in, tg);
			real++;
		} else {
			pad(in, tg, 0, T);
		}
	}
	return real;
}

/* Positions conversation k takes in a row: its inputs, m - 1 (m <= T + 1: the
 * dataset's rule). */
static int conv_width(const struct batch_convs *c, int64_t k)
{
	size_t m = c->seq[k + 1] - c->seq[k];
	return m > 1 ? (int)(m - 1) : 0;
}

int batch_conv_row(const struct batch_convs *c, int64_t k, int T, int32_t *in, int32_t *tg)
{
	size_t s = c->seq[k];
	int real = conv_width(c, k);
	for (int i = 0; i < real; i++) {
		in[i] = c->ids[s + (size_t)i];
		tg[i] = c->flags[s + (size_t)i + 1] & DSET_SCORED ? c->ids[s + (size_t)i + 1] : -1;
	}
	pad(in, tg, real, T);
	return real;
}

void batch_conv_random(struct batch_rng *r, const struct batch_convs *c, int rows, int T,
		       int32_t *inputs, int32_t *targets, int64_t *real)
{
	for (int b = 0; b < rows; b++) {
		int64_t k = (int64_t)batch_rng_below(r, (uint64_t)c->n);
		*real += batch_conv_row(c, k, T, inputs + (size_t)b * T, targets + (size_t)b * T);
	}
}

void batch_conv_sequential(const struct batch_convs *c, int64_t step, int accum, int micro,
			   int rows, int T, int32_t *inputs, int32_t *targets, int64_t *real)
{
	for (int b = 0; b < rows; b++) {
		int64_t k = batch_seq_window(step, accum, micro, rows, b, c->n);
		*real += batch_conv_row(c, k, T, inputs + (size_t)b * T, targets + (size_t)b * T);
	}
}

int batch_conv_eval(const struct batch_convs *c, int64_t first, int rows, int T,
		    int32_t *inputs, int32_t *targets)
{
	int real = 0;
	for (int b = 0; b < rows; b++) {
		int32_t *in = inputs + (size_t)b * T, *tg = targets + (size_t)b * T;
		if (first + b < c->n) {
			batch_conv_row(c, first + b, T, in, tg);
			real++;
		} else {
			pad(in, tg, 0, T);
		}
	}
	return real;
}

/* ---- packed rows (--pack) ------------------------------------------------------------------ */

struct by_len {
	int w;
	int64_t k;
};

static int cmp_by_len(const void *a, const void *b)
{
	const struct by_len *x = a, *y = b;
	if (x->w != y->w)
		return x->w > y->w ? -1 : 1;
	return x->k < y->k ? -1 : x->k > y->k;
}

/* First fit over the rows' room left: a tree of maxima over rows 0 .. cap-1 (leaves at
 * cap .. 2 cap - 1), every row starting with T, so that the first row a conversation
 * fits in is found in log(cap) steps and is a new row when no opened one has room. */
struct rooms {
	int64_t cap;
	int *max; /* (2 cap) */
};

static int64_t rooms_first_fit(const struct rooms *r, int w)
{
	int64_t i = 1;
	while (i < r->cap)
		i = r->max[2 * i] >= w ? 2 * i : 2 * i + 1;
	return i - r->cap;
}

static void rooms_take(struct rooms *r, int64_t row, int w)
{
	int64_t i = row + r->cap;
	r->max[i] -= w;
	for (i /= 2; i >= 1; i /= 2)
		r->max[i] = r->max[2 * i] > r->max[2 * i + 1] ? r->max[2 * i] : r->max[2 * i + 1];
}

int batch_pack_make(struct batch_pack *p, const struct batch_convs *c, int T)
{
	memset(p, 0, sizeof *p);
	int64_t n = c->n, placed = 0;
	struct rooms r = {1, NULL};
	while (r.cap < n)
		r.cap *= 2;
	struct by_len *v = malloc(((size_t)n + 1) * sizeof *v);
	int64_t *row_of = malloc(((size_t)n + 1) * sizeof *row_of), *fill = NULL;
	r.max = malloc(2 * (size_t)r.cap * sizeof *r.max);
	int rc = -1;
	if (!v || !row_of || !r.max)
		goto out;
	for (int64_t i = 0; i < 2 * r.cap; i++)
		r.max[i] = T;
	for (int64_t k = 0; k < n; k++)
		if ((v[placed].w = conv_width(c, k)) > 0)
			v[placed++].k = k;
	qsort(v, (size_t)placed, sizeof *v, cmp_by_len);
	for (int64_t i = 0; i < placed; i++) { /* w <= T: the first unopened row always fits */
		int64_t row = rooms_first_fit(&r, v[i].w);
		rooms_take(&r, row, v[i].w);
		row_of[i] = row;
		p->rows = row + 1 > p->rows ? row + 1 : p->rows;
		p->real += v[i].w;
	}
	p->start = calloc((size_t)p->rows + 1, sizeof *p->start);
	p->order = malloc(((size_t)placed + 1) * sizeof *p->order);
	fill = malloc(((size_t)p->rows + 1) * sizeof *fill);
	if (!p->start || !p->order || !fill)
		goto out;
	for (int64_t i = 0; i < placed; i++)
		p->start[row_of[i] + 1]++;
	for (int64_t j = 0; j < p->rows; j++)
		p->start[j + 1] += p->start[j];
	memcpy(fill, p->start, ((size_t)p->rows + 1) * sizeof *fill);
	for (int64_t i = 0; i < placed; i++) /* each row's conversations, longest first */
		p->order[fill[row_of[i]]++] = v[i].k;
	rc = 0;
out:
	if (rc) {
		batch_pack_free(p);
		err_set("--pack: out of memory for %lld conversations", (long long)n);
	}
	free(v);
	free(row_of);
	free(fill);
	free(r.max);
	return rc;
}

void batch_pack_free(struct batch_pack *p)
{
	free(p->start);
	free(p->order);
	memset(p, 0, sizeof *p);
}

int batch_pack_row(const struct batch_convs *c, const struct batch_pack *p, int64_t r, int T,
		   int32_t *in, int32_t *tg, int32_t *pos)
{
	int off = 0;
	for (int64_t j = p->start[r]; j < p->start[r + 1]; j++) {
		int64_t k = p->order[j];
		int w = batch_conv_row(c, k, conv_width(c, k), in + off, tg + off);
		for (int i = 0; i < w; i++)
			pos[off + i] = i;
		off += w;
	}
	pad(in, tg, off, T);
	for (int i = off; i < T; i++) /* the padding: a document of its own */
		pos[i] = i - off;
	return off;
}

void batch_pack_random(struct batch_rng *rng, const struct batch_convs *c,
		       const struct batch_pack *p, int rows, int T, int32_t *inputs,
		       int32_t *targets, int32_t *pos, int64_t *real)
{
	for (int b = 0; b < rows; b++) {
		int64_t r = (int64_t)batch_rng_below(rng, (uint64_t)p->rows);
		size_t o = (size_t)b * T;
		*real += batch_pack_row(c, p, r, T, inputs + o, targets + o, pos + o);
	}
}

void batch_pack_sequential(const struct batch_convs *c, const struct batch_pack *p, int64_t step,
			   int accum, int micro, int rows, int T, int32_t *inputs, int32_t *targets,
			   int32_t *pos, int64_t *real)
{
	for (int b = 0; b < rows; b++) {
		int64_t r = batch_seq_window(step, accum, micro, rows, b, p->rows);
		size_t o = (size_t)b * T;
		*real += batch_pack_row(c, p, r, T, inputs + o, targets + o, pos + o);
	}
}

int batch_pack_eval(const struct batch_convs *c, const struct batch_pack *p, int64_t first,
		    int rows, int T, int32_t *inputs, int32_t *targets, int32_t *pos)
{
	int real = 0;
	for (int b = 0; b < rows; b++) {
		size_t o = (size_t)b * T;
		if (first + b < p->rows) {
			batch_pack_row(c, p, first + b, T, inputs + o, targets + o, pos + o);
			real++;
		} else {
			pad(inputs + o, targets + o, 0, T);
			for (int i = 0; i < T; i++)
				pos[o + i] = i;
		}
	}
	return real;
}
