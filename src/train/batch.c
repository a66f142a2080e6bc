/* batch.c — training windows: the seeded random draw and the sequential rule. */
#include "src/train/batch.h"
#include "src/base/err.h"
#include "src/train/dataset.h"

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

int batch_conv_row(const struct batch_convs *c, int64_t k, int T, int32_t *in, int32_t *tg)
{
	size_t s = c->seq[k], m = c->seq[k + 1] - s;
	int real = m > 1 ? (int)(m - 1) : 0; /* m <= T + 1: the dataset's rule */
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
