/* test_engine.c — the engine's cache and argument contract on the CPU backend: prefill
 * then decode equals a longer prefill, truncate + re-prefill equals a fresh prefill,
 * chunked and threaded runs agree, bad positions/ids/NaN weights give errors (not
 * crashes), and attention capture returns softmax rows. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include <jansson.h>

#include "engine/engine.h"
#include "src/base/err.h"
#include "tests/unit/testutil.h"
#include "src/base/fileio.h"

static char tmpdir[] = "/tmp/qwenchat-engine.XXXXXX";
static char model_dir[4200];
static struct eng_model *model;
static int V;

/* An untied model with GQA (8 query heads on 2 KV heads), made by tests/mkmodel. */
static const char *const MKMODEL_FLAGS =
	"--vocab-size 300 --hidden-size 96 --intermediate-size 160 --layers 2 --heads 8 "
	"--kv-heads 2 --head-dim 16 --rope-theta 1e4 --no-tie --max-position 2048 --seed 5";

static void mkmodel(const char *dir, const char *flags)
{
	if (tu_make_model(dir, flags, false))
		fail_msg("mkmodel failed");
}

static int setup(void **state)
{
	(void)state;
	if (!mkdtemp(tmpdir))
		return -1;
	snprintf(model_dir, sizeof model_dir, "%s/m", tmpdir);
	mkmodel(model_dir, MKMODEL_FLAGS);
	model = eng_model_open(model_dir);
	if (!model) {
		fprintf(stderr, "%s\n", err_msg());
		return -1;
	}
	V = eng_model_config(model)->vocab_size;
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	eng_model_free(model);
	char cmd[256];
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
	return system(cmd) == 0 ? 0 : -1;
}

static struct eng *engine(int ctx, int threads, bool kv_f32)
{
	struct eng_options o = {
		.backend = ENG_BACKEND_CPU, .threads = threads, .ctx = ctx, .kv_f32 = kv_f32};
	struct eng *e = eng_new(model, &o, NULL);
	if (!e)
		fail_msg("eng_new: %s", err_msg());
	return e;
}

static int32_t *ids_of(int n)
{
	int32_t *ids = malloc((size_t)n * sizeof *ids);
	for (int i = 0; i < n; i++)
		ids[i] = (int32_t)((i * 7919 + 13) % V);
	return ids;
}

/* Two runs of the same arithmetic: equal up to fp32 reassociation at most. */
static void assert_rows_close(const float *a, const float *b, size_t n, const char *what)
{
	double maxd = 0, maxabs = 1e-30;
	for (size_t i = 0; i < n; i++) {
		maxd = fmax(maxd, fabs((double)a[i] - b[i]));
		maxabs = fmax(maxabs, fabs(b[i]));
	}
	if (maxd > 1e-6 * maxabs)
		fail_msg("%s: max |diff| %g (max |logit| %g)", what, maxd, maxabs);
}

static void test_decode_equals_prefill(void **state)
{
	(void)state;
	for (int kv32 = 0; kv32 <= 1; kv32++) {
		int n = 20;
		int32_t *ids = ids_of(n + 1);
		float *a = malloc((size_t)V * sizeof *a), *b = malloc((size_t)V * sizeof *b);
		struct eng *e = engine(64, 0, kv32);
		assert_int_equal(eng_forward(e, ids, n, 0, a, false), 0);
		assert_int_equal(eng_cached(e), n);
		assert_int_equal(eng_forward(e, ids + n, 1, n, a, false), 0); /* decode */
		assert_int_equal(eng_cached(e), n + 1);
		struct eng *f = engine(64, 0, kv32);
		assert_int_equal(eng_forward(f, ids, n + 1, 0, b, false), 0); /* prefill N+1 */
		assert_rows_close(a, b, (size_t)V, "prefill N + decode vs prefill N+1");
		eng_free(e);
		eng_free(f);
		free(a);
		free(b);
		free(ids);
	}
}

static void test_truncate_reprefill(void **state)
{
	(void)state;
	int n = 30, k = 11;
	int32_t *ids = ids_of(n), *other = ids_of(n + 5);
	float *a = malloc((size_t)n * V * sizeof *a), *b = malloc((size_t)n * V * sizeof *b);
	struct eng *e = engine(64, 0, false);
	assert_int_equal(eng_forward(e, other + 5, n, 0, a, false), 0); /* different tokens */
	/* keep the first k positions only when they agree: make them agree */
	assert_int_equal(eng_truncate(e, 0), 0);
	assert_int_equal(eng_forward(e, ids, n, 0, a, false), 0);
	assert_int_equal(eng_truncate(e, k), 0);
	assert_int_equal(eng_cached(e), k);
	assert_int_equal(eng_forward(e, ids + k, n - k, k, a, true), 0);
	struct eng *f = engine(64, 0, false);
	assert_int_equal(eng_forward(f, ids, n, 0, b, true), 0);
	assert_rows_close(a, b + (size_t)k * V, (size_t)(n - k) * V, "truncate + re-prefill");
	/* an implicit truncate: forward at pos < cached replaces the rest */
	assert_int_equal(eng_forward(e, ids + 5, n - 5, 5, a, true), 0);
	assert_rows_close(a, b + (size_t)5 * V, (size_t)(n - 5) * V, "forward at pos < cached");
	assert_int_equal(eng_truncate(e, n + 1), -1);
	assert_non_null(strstr(err_msg(), "truncate"));
	eng_free(e);
	eng_free(f);
	free(a);
	free(b);
	free(ids);
	free(other);
}

/* eng_set_cancel: a prefill that finds the flag set stops (ENG_CANCELLED) with the
 * cache at pos, what it wrote past pos forgotten; a token of decode runs whole; once
 * the flag is down the same prompt gives a fresh engine's logits. */
static void test_cancel(void **state)
{
	(void)state;
	int n = 40, k = 9;
	int32_t *ids = ids_of(n);
	float *a = malloc((size_t)V * sizeof *a), *b = malloc((size_t)V * sizeof *b);
	atomic_int stop = 1;
	struct eng *e = engine(64, 0, false);
	eng_set_cancel(e, &stop);
	assert_int_equal(eng_forward(e, ids, n, 0, a, false), ENG_CANCELLED);
	assert_int_equal(eng_cached(e), 0);
	assert_int_equal(eng_forward(e, ids, 1, 0, a, false), 0); /* decode: whole */
	assert_int_equal(eng_cached(e), 1);
	assert_int_equal(eng_forward(e, ids + 1, k, 1, a, false), ENG_CANCELLED);
	assert_int_equal(eng_cached(e), 1);
	atomic_store(&stop, 0);
	assert_int_equal(eng_forward(e, ids + 1, n - 1, 1, a, false), 0);
	assert_int_equal(eng_cached(e), n);
	struct eng *f = engine(64, 0, false);
	assert_int_equal(eng_forward(f, ids, n, 0, b, false), 0);
	assert_rows_close(a, b, (size_t)V, "after a cancelled prefill");
	eng_set_cancel(e, NULL);
	atomic_store(&stop, 1);
	assert_int_equal(eng_forward(e, ids, n, 0, a, false), 0); /* no flag: runs whole */
	eng_free(e);
	eng_free(f);
	free(a);
	free(b);
	free(ids);
}

static void test_chunks_and_threads(void **state)
{
	(void)state;
	int n = 700; /* more than one internal 512-token chunk */
	int32_t *ids = ids_of(n);
	float *a = malloc((size_t)n * V * sizeof *a), *b = malloc((size_t)n * V * sizeof *b);
	struct eng *e = engine(n, 1, false), *f = engine(n, 3, false);
	assert_int_equal(eng_forward(e, ids, n, 0, a, true), 0);
	assert_int_equal(eng_forward(f, ids, 300, 0, b, true), 0);
	assert_int_equal(eng_forward(f, ids + 300, n - 300, 300, b + (size_t)300 * V, true), 0);
	assert_rows_close(a, b, (size_t)n * V, "1 thread, one call vs 3 threads, two calls");
	struct eng_stats st;
	eng_get_stats(f, &st);
	assert_int_equal(st.prefill_tokens, n);
	/* a full cache: the allocation rounds the context up to whole 64-position panels */
	size_t per_token = st.kv_bytes_used / n;
	assert_true(per_token > 0 && st.kv_bytes_used == per_token * n && st.weight_bytes > 0);
	assert_true(st.kv_bytes_allocated == per_token * (size_t)((n + 63) / 64 * 64));
	eng_free(e);
	eng_free(f);
	free(a);
	free(b);
	free(ids);
}

static void test_bad_arguments(void **state)
{
	(void)state;
	int32_t ids[4] = {1, 2, 3, 4};
	float *lg = malloc((size_t)4 * V * sizeof *lg);
	struct eng *e = engine(8, 0, false);
	assert_int_equal(eng_ctx(e), 8);
	assert_int_equal(eng_forward(e, ids, 4, 0, lg, false), 0);
	assert_int_equal(eng_forward(e, ids, 1, 5, lg, false), -1); /* pos > cached */
	assert_non_null(strstr(err_msg(), "position 5"));
	assert_int_equal(eng_forward(e, ids, 4, 4, lg, false), 0);  /* fills ctx exactly */
	assert_int_equal(eng_forward(e, ids, 1, 8, lg, false), -1); /* pos >= ctx */
	assert_non_null(strstr(err_msg(), "context of 8 tokens"));
	assert_int_equal(eng_forward(e, ids, 4, 6, lg, false), -1); /* pos + n > ctx */
	int32_t bad[2] = {3, (int32_t)V};
	assert_int_equal(eng_forward(e, bad, 2, 0, lg, false), -1); /* id >= vocab */
	assert_non_null(strstr(err_msg(), "vocab"));
	bad[1] = -1;
	assert_int_equal(eng_forward(e, bad, 2, 0, lg, false), -1);
	assert_int_equal(eng_forward(e, ids, 0, 0, lg, false), -1);
	assert_int_equal(eng_cached(e), 8); /* argument errors leave the cache alone */
	eng_free(e);
	struct eng_options o = {
		.backend = ENG_BACKEND_CPU, .threads = 0, .ctx = 1 << 20, .kv_f32 = false};
	assert_null(eng_new(model, &o, NULL)); /* ctx > max_position */
	assert_non_null(strstr(err_msg(), "max_position_embeddings"));
	/* the CUDA module is loaded from beside the program: a test program has none */
	o.ctx = 8;
	o.backend = ENG_BACKEND_CUDA;
	o.cuda_module = "/nonexistent/qwenchat-cuda.so";
	assert_null(eng_new(model, &o, NULL));
	assert_non_null(
		strstr(err_msg(), "backend cuda: /nonexistent/qwenchat-cuda.so: cannot read"));
	free(lg);
}

/* The CPU backend has no device: it samples nothing and measures no device peaks,
 * and says so instead of pretending. */
static void test_no_device_paths(void **state)
{
	(void)state;
	struct eng *e = engine(8, 1, false);
	struct eng_sampling sp = {.greedy = true, .vocab_limit = (int)V};
	assert_false(eng_can_sample(e, &sp));
	int32_t next = -1;
	bool used = true;
	assert_int_equal(eng_forward_sample(e, 1, 0, &sp, &next, &used), -1);
	assert_non_null(strstr(err_msg(), "cannot sample"));
	assert_int_equal(eng_cached(e), 0);
	/* the CPU's limit is its memory read bandwidth (a small buffer: a quick pass) */
	struct eng_measure_request rq = {.read_bytes = 16 << 20, .reps = 1};
	struct eng_peaks pk;
	assert_int_equal(eng_measure(e, &rq, &pk), 0);
	assert_false(pk.device);
	assert_true(pk.read_gb_s > 0 && pk.copy_gb_s == 0 && pk.gemm_tflop_s == 0);
	struct eng_stats st;
	eng_get_stats(e, &st);
	assert_int_equal(st.graph_bytes, 0);
	eng_free(e);
}

/* Sets the bf16 element `index` of tensor `name` in DIR/model.safetensors to NaN. */
static void poison(const char *dir, const char *name, size_t index)
{
	char *path = fio_join(dir, "model.safetensors");
	FILE *f = fopen(path, "r+b");
	assert_non_null(f);
	uint64_t hlen = 0;
	unsigned char b8[8];
	assert_int_equal(fread(b8, 1, 8, f), 8);
	for (int i = 7; i >= 0; i--)
		hlen = hlen << 8 | b8[i];
	char *hdr = malloc(hlen + 1);
	assert_int_equal(fread(hdr, 1, hlen, f), hlen);
	hdr[hlen] = 0;
	json_t *root = json_loads(hdr, 0, NULL);
	assert_non_null(root);
	json_t *off =
		json_array_get(json_object_get(json_object_get(root, name), "data_offsets"), 0);
	assert_non_null(off);
	long pos = (long)(8 + hlen + (uint64_t)json_integer_value(off) + 2 * index);
	unsigned char nan_bf16[2] = {0xc0, 0x7f};
	assert_int_equal(fseek(f, pos, SEEK_SET), 0);
	assert_int_equal(fwrite(nan_bf16, 1, 2, f), 2);
	fclose(f);
	json_decref(root);
	free(hdr);
	free(path);
}

static void test_nan_weights(void **state)
{
	(void)state;
	char dir[4300];
	snprintf(dir, sizeof dir, "%s/nan", tmpdir);
	mkmodel(dir, MKMODEL_FLAGS);
	int hidden = 96;
	poison(dir, "model.embed_tokens.weight", (size_t)7 * hidden); /* token 7's row */
	struct eng_model *m = eng_model_open(dir);
	assert_non_null(m);
	struct eng_options o = {
		.backend = ENG_BACKEND_CPU, .threads = 0, .ctx = 16, .kv_f32 = false};
	struct eng *e = eng_new(m, &o, NULL);
	assert_non_null(e);
	float *lg = malloc((size_t)V * sizeof *lg);
	int32_t ok[3] = {1, 2, 3}, bad[2] = {5, 7};
	assert_int_equal(eng_forward(e, ok, 3, 0, lg, false), 0);
	assert_int_equal(eng_forward(e, bad, 2, 3, lg, false), -1);
	assert_non_null(strstr(err_msg(), "not finite"));
	assert_int_equal(eng_cached(e), 3); /* the failed tokens are not kept */
	assert_int_equal(eng_forward(e, ok, 1, 3, lg, false), 0);
	eng_free(e);
	eng_model_free(m);
	free(lg);
}

static void test_capture(void **state)
{
	(void)state;
	int32_t *ids = ids_of(10);
	float *lg = malloc((size_t)V * sizeof *lg);
	struct eng *e = engine(32, 0, true);
	int len = -1;
	assert_null(eng_attention(e, 0, 0, &len));
	eng_set_capture(e, true);
	assert_int_equal(eng_forward(e, ids, 10, 0, lg, false), 0);
	const struct eng_config *c = eng_model_config(model);
	for (int l = 0; l < c->num_layers; l++)
		for (int h = 0; h < c->num_heads; h++) {
			const float *row = eng_attention(e, l, h, &len);
			assert_non_null(row);
			assert_int_equal(len, 10);
			double s = 0;
			for (int j = 0; j < len; j++) {
				assert_true(row[j] >= 0 && row[j] <= 1);
				s += row[j];
			}
			assert_float_equal(s, 1, 1e-5);
		}
	assert_int_equal(eng_forward(e, ids, 1, 10, lg, false), 0); /* decode: 11 keys */
	assert_non_null(eng_attention(e, 1, 7, &len));
	assert_int_equal(len, 11);
	assert_null(eng_attention(e, c->num_layers, 0, &len));
	assert_null(eng_attention(e, 0, c->num_heads, &len));
	eng_set_capture(e, false);
	assert_null(eng_attention(e, 0, 0, &len));
	eng_free(e);
	free(lg);
	free(ids);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_decode_equals_prefill),
		cmocka_unit_test(test_truncate_reprefill),
		cmocka_unit_test(test_chunks_and_threads),
		cmocka_unit_test(test_cancel),
		cmocka_unit_test(test_bad_arguments),
		cmocka_unit_test(test_no_device_paths),
		cmocka_unit_test(test_nan_weights),
		cmocka_unit_test(test_capture),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
