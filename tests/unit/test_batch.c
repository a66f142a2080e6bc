/* test_batch.c — training windows: the generator (known answers, determinism, state
 * saved and restored), the random draw's range, the sequential rule and its wrap-around,
 * evaluation windows; conversation rows (--sft): targets where scored, the padding,
 * the sequential and evaluation order; packed rows (--pack): first-fit decreasing
 * against a slow version of the rule, positions restarting at each conversation. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "src/base/err.h"
#include "src/train/batch.h"
#include "src/train/dataset.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

static void test_known_answers(void **state)
{
	(void)state;
	struct batch_rng r;
	batch_rng_seed(&r, 0);
	/* splitmix64's first output from 0 (Vigna's reference splitmix64.c) */
	assert_true(r.s[0] == 0xe220a8397b1dcdafull);
	/* xoshiro256** from {1, 2, 3, 4}: rotl(2 * 5, 7) * 9, then the next from the
	 * reference's update (xoshiro256starstar.c) */
	r = (struct batch_rng){{1, 2, 3, 4}};
	assert_true(batch_rng_next(&r) == 11520);
	assert_true(batch_rng_next(&r) == 0);
	assert_true(batch_rng_next(&r) == 1509978240);
}

static void test_deterministic(void **state)
{
	(void)state;
	struct batch_rng a, b, c;
	batch_rng_seed(&a, 1337);
	batch_rng_seed(&b, 1337);
	batch_rng_seed(&c, 1338);
	bool differ = false;
	for (int i = 0; i < 100; i++) {
		uint64_t x = batch_rng_next(&a);
		assert_true(x == batch_rng_next(&b));
		differ |= x != batch_rng_next(&c);
	}
	assert_true(differ);
}

static void test_save_restore(void **state)
{
	(void)state;
	struct batch_rng r, back;
	char hex[65];
	batch_rng_seed(&r, 42);
	for (int i = 0; i < 10; i++)
		batch_rng_next(&r);
	batch_rng_format(&r, hex);
	assert_int_equal(strlen(hex), 64);
	uint64_t want[20];
	for (int i = 0; i < 20; i++)
		want[i] = batch_rng_below(&r, 1000 + (uint64_t)i);
	assert_int_equal(batch_rng_parse(&back, hex, "state.json: rng"), 0);
	for (int i = 0; i < 20; i++)
		assert_true(batch_rng_below(&back, 1000 + (uint64_t)i) == want[i]);
	/* not hex, too short, all zero */
	assert_int_equal(batch_rng_parse(&back, "xyz", "state.json: rng"), -1);
	assert_non_null(strstr(err_msg(), "state.json: rng"));
	char bad[65];
	memcpy(bad, hex, 65);
	bad[10] = 'G';
	assert_int_equal(batch_rng_parse(&back, bad, "rng"), -1);
	memset(bad, '0', 64);
	assert_int_equal(batch_rng_parse(&back, bad, "rng"), -1);
}

static void test_below(void **state)
{
	(void)state;
	struct batch_rng r;
	batch_rng_seed(&r, 7);
	int count[3] = {0};
	for (int i = 0; i < 30000; i++) {
		uint64_t x = batch_rng_below(&r, 3);
		assert_true(x < 3);
		count[x]++;
	}
	for (int k = 0; k < 3; k++)
		assert_true(count[k] > 9500 && count[k] < 10500);
	for (int i = 0; i < 100; i++)
		assert_true(batch_rng_below(&r, 1) == 0);
	/* a bound near 2^64, where the rejection matters */
	for (int i = 0; i < 100; i++)
		assert_true(batch_rng_below(&r, (1ull << 63) + 12345) < (1ull << 63) + 12345);
}

/* The stream 0, 1, 2, ... so that a token is its own offset. */
static int32_t *identity(size_t len)
{
	int32_t *s = malloc(len * sizeof *s);
	assert_non_null(s);
	for (size_t i = 0; i < len; i++)
		s[i] = (int32_t)i;
	return s;
}

static void test_random_windows(void **state)
{
	(void)state;
	enum { T = 8, B = 64, LEN = T + 2 };
	int32_t *s = identity(LEN), in[B * T], tg[B * T];
	struct batch_rng r;
	batch_rng_seed(&r, 1);
	batch_random(&r, s, LEN, B, T, in, tg);
	bool seen[2] = {false, false};
	for (int b = 0; b < B; b++) {
		int o = in[b * T];
		assert_true(o >= 0 && o <= LEN - T - 1); /* [0, len - T - 1] */
		seen[o] = true;
		for (int i = 0; i < T; i++) {
			assert_int_equal(in[b * T + i], o + i);
			assert_int_equal(tg[b * T + i], o + i + 1);
		}
	}
	assert_true(seen[0] && seen[1]);
	/* the same seed draws the same windows */
	int32_t in2[B * T], tg2[B * T];
	batch_rng_seed(&r, 1);
	batch_random(&r, s, LEN, B, T, in2, tg2);
	assert_memory_equal(in, in2, sizeof in);
	free(s);
}

static void test_windows(void **state)
{
	(void)state;
	assert_int_equal(batch_windows(8, 8), 0);
	assert_int_equal(batch_windows(9, 8), 1);
	assert_int_equal(batch_windows(16, 8), 1);
	assert_int_equal(batch_windows(17, 8), 2);
	assert_int_equal(batch_windows(0, 8), 0);
}

static void test_sequential(void **state)
{
	(void)state;
	enum { T = 8, B = 3, A = 2, LEN = 100 }; /* W = 99 / 8 = 12 windows */
	int32_t *s = identity(LEN), in[B * T], tg[B * T];
	int64_t w = batch_windows(LEN, T);
	assert_int_equal(w, 12);
	for (int64_t step = 0; step < 9; step++)
		for (int a = 0; a < A; a++) {
			batch_sequential(s, LEN, step, A, a, B, T, in, tg);
			for (int b = 0; b < B; b++) {
				int64_t k = ((step * A + a) * B + b) % w;
				assert_int_equal(in[b * T], k * T);
				assert_int_equal(tg[b * T + T - 1], k * T + T);
			}
		}
	/* step 2, micro-batch 0 starts at window 12, past the last (11): window 0 again */
	batch_sequential(s, LEN, 2, A, 0, B, T, in, tg);
	assert_int_equal(in[0], 0);
	/* huge steps do not overflow */
	int64_t big = (int64_t)1 << 60;
	assert_int_equal(batch_seq_window(big, 1 << 16, 5, 1 << 16, 7, 1000003),
			 (int64_t)((((unsigned __int128)big * (1 << 16) + 5) * (1 << 16) + 7) %
				   1000003));
	free(s);
}

static void test_eval(void **state)
{
	(void)state;
	enum { T = 4, B = 4, LEN = 11 }; /* W = 2 */
	int32_t *s = identity(LEN), in[B * T], tg[B * T];
	assert_int_equal(batch_eval(s, LEN, T, 0, B, in, tg), 2);
	assert_int_equal(in[0], 0);
	assert_int_equal(in[T], 4);
	assert_int_equal(tg[T + T - 1], 8);
	for (int i = 2 * T; i < B * T; i++) {
		assert_int_equal(in[i], 0);
		assert_int_equal(tg[i], -1);
	}
	free(s);
}

static void test_conversations(void **state)
{
	(void)state;
	const uint8_t S = DSET_SCORED, F = DSET_START;
	const int32_t ids[] = {10, 11, 12, 13, 20, 21, 22};
	const uint8_t flags[] = {F, 0, S, S, F, 0, S};
	const size_t seq[] = {0, 4, 7};
	struct batch_convs c = {ids, flags, seq, 2};
	int32_t in[2 * 5], tg[2 * 5];
	assert_int_equal(batch_conv_row(&c, 0, 5, in, tg), 3);
	const int32_t in0[] = {10, 11, 12, 0, 0}, tg0[] = {-1, 12, 13, -1, -1};
	assert_memory_equal(in, in0, sizeof in0);
	assert_memory_equal(tg, tg0, sizeof tg0);
	/* sequential: ((s*A + a)*B + b) mod n */
	int64_t real = 0;
	batch_conv_sequential(&c, 1, 1, 0, 2, 5, in, tg, &real); /* rows 2, 3: convs 0, 1 */
	assert_int_equal(real, 3 + 2);
	assert_int_equal(in[0], 10);
	assert_int_equal(in[5], 20);
	const int32_t tg1[] = {-1, 22, -1, -1, -1};
	assert_memory_equal(tg + 5, tg1, sizeof tg1);
	batch_conv_sequential(&c, 0, 3, 2, 1, 5, in, tg, &real); /* row 2: conv 0 */
	assert_int_equal(in[0], 10);
	/* evaluation: in order, then padding */
	assert_int_equal(batch_conv_eval(&c, 1, 2, 5, in, tg), 1);
	assert_int_equal(in[0], 20);
	for (int i = 5; i < 10; i++)
		assert_int_equal(tg[i], -1);
	/* random: both conversations come up */
	struct batch_rng r;
	batch_rng_seed(&r, 3);
	bool seen[2] = {false, false};
	for (int i = 0; i < 20; i++) {
		batch_conv_random(&r, &c, 1, 5, in, tg, &real);
		seen[in[0] == 20] = true;
	}
	assert_true(seen[0] && seen[1]);
}

/* Conversations of these widths (positions: tokens - 1), token ids 100 k + i. */
static struct batch_convs make_convs(const int *w, int n, int32_t **ids, uint8_t **flags,
				     size_t **seq)
{
	size_t total = 0;
	for (int k = 0; k < n; k++)
		total += (size_t)w[k] + 1;
	*ids = malloc(total * sizeof **ids), *flags = malloc(total), *seq = malloc((n + 1) * sizeof **seq);
	size_t o = 0;
	for (int k = 0; k < n; k++) {
		(*seq)[k] = o;
		for (int i = 0; i <= w[k]; i++, o++) {
			(*ids)[o] = 100 * k + i;
			(*flags)[o] = i ? DSET_SCORED : DSET_START;
		}
	}
	(*seq)[n] = o;
	return (struct batch_convs){*ids, *flags, *seq, n};
}

/* First-fit decreasing as the header states it, the slow way. */
static int64_t naive_ffd(const int *w, int n, int T, int64_t *row_of)
{
	int room[4096], rows = 0;
	bool done[4096] = {false};
	for (int placed = 0; placed < n; placed++) {
		int k = -1;
		for (int j = 0; j < n; j++)
			if (!done[j] && (k < 0 || w[j] > w[k]))
				k = j;
		done[k] = true;
		int r = 0;
		while (r < rows && room[r] < w[k])
			r++;
		if (r == rows)
			room[rows++] = T;
		room[r] -= w[k];
		row_of[k] = r;
	}
	return rows;
}

static void test_packing(void **state)
{
	(void)state;
	enum { T = 10 };
	static const int w[] = {3, 6, 5, 4, 2, 6, 1};
	int32_t *ids;
	uint8_t *flags;
	size_t *seq;
	struct batch_convs c = make_convs(w, 7, &ids, &flags, &seq);
	struct batch_pack p;
	assert_int_equal(batch_pack_make(&p, &c, T), 0);
	/* longest first, ties in order: 1 -> row 0, 5 -> row 1, 2 -> row 2, 3 -> row 0,
	 * 0 -> row 1, 4 -> row 2, 6 -> row 1 */
	assert_int_equal(p.rows, 3);
	assert_int_equal(p.real, 27);
	const int64_t start[] = {0, 2, 5, 7}, order[] = {1, 3, 5, 0, 6, 2, 4};
	assert_memory_equal(p.start, start, sizeof start);
	assert_memory_equal(p.order, order, sizeof order);
	int32_t in[2 * T], tg[2 * T], pos[2 * T];
	assert_int_equal(batch_pack_row(&c, &p, 2, T, in, tg, pos), 7);
	const int32_t in2[] = {200, 201, 202, 203, 204, 400, 401, 0, 0, 0};
	const int32_t tg2[] = {201, 202, 203, 204, 205, 401, 402, -1, -1, -1};
	const int32_t pos2[] = {0, 1, 2, 3, 4, 0, 1, 0, 1, 2};
	assert_memory_equal(in, in2, sizeof in2);
	assert_memory_equal(tg, tg2, sizeof tg2);
	assert_memory_equal(pos, pos2, sizeof pos2);
	/* sequential over rows: step 1 of 2-row micro-batches reads rows 2 and 0 */
	int64_t real = 0;
	batch_pack_sequential(&c, &p, 1, 1, 0, 2, T, in, tg, pos, &real);
	assert_int_equal(real, 7 + 10);
	assert_int_equal(in[0], 200);
	assert_int_equal(in[T], 100);
	assert_int_equal(pos[T + 6], 0); /* conversation 3 starts after 1's six positions */
	/* evaluation: rows past the last are padding, one document a row */
	assert_int_equal(batch_pack_eval(&c, &p, 2, 2, T, in, tg, pos), 1);
	for (int i = T; i < 2 * T; i++) {
		assert_int_equal(tg[i], -1);
		assert_int_equal(pos[i], i - T);
	}
	batch_pack_free(&p);
	free(ids), free(flags), free(seq);
	/* random widths against the slow first fit */
	uint64_t x = 5;
	for (int round = 0; round < 20; round++) {
		int n = 1 + round * 37 % 300, wr[300];
		for (int k = 0; k < n; k++) {
			x = x * 6364136223846793005ull + 1442695040888963407ull;
			wr[k] = 1 + (int)((x >> 33) % (round % 2 ? 64 : 17));
		}
		struct batch_convs cr = make_convs(wr, n, &ids, &flags, &seq);
		int64_t row_of[300];
		assert_int_equal(batch_pack_make(&p, &cr, 64), 0);
		assert_int_equal(p.rows, naive_ffd(wr, n, 64, row_of));
		for (int64_t r = 0; r < p.rows; r++)
			for (int64_t j = p.start[r]; j < p.start[r + 1]; j++)
				assert_int_equal(row_of[p.order[j]], r);
		batch_pack_free(&p);
		free(ids), free(flags), free(seq);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_known_answers), cmocka_unit_test(test_deterministic),
		cmocka_unit_test(test_save_restore),  cmocka_unit_test(test_below),
		cmocka_unit_test(test_random_windows), cmocka_unit_test(test_windows),
		cmocka_unit_test(test_sequential),    cmocka_unit_test(test_eval),
		cmocka_unit_test(test_conversations), cmocka_unit_test(test_packing),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
