/* test_checkpoint.c — the safetensors writer read back by the engine's own loader
 * (eng_model_open on the written directory, F32 and BF16) and by ckpt_st_read; bf16
 * rounding; the transaction: files in place together, an aborted or full-disk save
 * leaving the previous files whole, an interrupted one finished or removed by the next
 * start, links at the targets replaced and never written through. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "engine/engine.h"
#include "src/base/err.h"
#include "src/base/fileio.h"
#include "src/train/checkpoint.h"
#include "src/train/modeldir.h"

#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

static char tmpdir[256];

static int setup(void **state)
{
	(void)state;
	snprintf(tmpdir, sizeof tmpdir, "/tmp/qwenchat-ckpt.XXXXXX");
	return mkdtemp(tmpdir) ? 0 : -1;
}

static int teardown(void **state)
{
	(void)state;
	char cmd[512];
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
	return system(cmd);
}

static float bits(uint32_t u)
{
	float f;
	memcpy(&f, &u, sizeof f);
	return f;
}

static void test_bf16_rounding(void **state)
{
	(void)state;
	assert_int_equal(ckpt_bf16(1.0f), 0x3f80);
	assert_int_equal(ckpt_bf16(bits(0x3f808000)), 0x3f80); /* a tie: to even (down) */
	assert_int_equal(ckpt_bf16(bits(0x3f818000)), 0x3f82); /* a tie: to even (up) */
	assert_int_equal(ckpt_bf16(bits(0x3f808001)), 0x3f81); /* past the tie */
	assert_int_equal(ckpt_bf16(bits(0x3f807fff)), 0x3f80);
	assert_int_equal(ckpt_bf16(-0.0f), 0x8000);
	assert_int_equal(ckpt_bf16(bits(0x7f800000)), 0x7f80);     /* inf */
	assert_int_equal(ckpt_bf16(bits(0x7f7fffff)), 0x7f80);     /* rounds up to inf */
	assert_int_equal(ckpt_bf16(bits(0x7f800001)) & 0x7fc0, 0x7fc0); /* a quiet NaN */
	assert_int_equal(ckpt_bf16(bits(0x00000001)), 0x0000);     /* a subnormal */
}

/* The tensors of a tiny Qwen3 (names and shapes as the engine binds them), values
 * from a fixed formula. */
struct model {
	struct eng_config c;
	int n;
	struct ckpt_tensor t[32];
	char names[32][64];
	float *data[32];
};

static void add(struct model *m, const char *name, int ndim, int64_t r, int64_t c)
{
	int i = m->n++;
	snprintf(m->names[i], sizeof m->names[i], "%s", name);
	int64_t n = ndim == 1 ? r : r * c;
	m->data[i] = malloc((size_t)n * sizeof(float));
	assert_non_null(m->data[i]);
	for (int64_t k = 0; k < n; k++) /* values with bits below bf16's: rounding shows */
		m->data[i][k] = (float)((k * 7919 + i * 104729) % 2003 - 1001) / 977.0f;
	m->t[i] = (struct ckpt_tensor){m->names[i], ndim, {r, ndim == 2 ? c : 0}, m->data[i]};
}

static void tiny(struct model *m, bool tie)
{
	memset(m, 0, sizeof *m);
	struct eng_config *c = &m->c;
	*c = (struct eng_config){.vocab_size = 40, .hidden_size = 16, .intermediate_size = 24,
				 .num_layers = 1, .num_heads = 2, .num_kv_heads = 1, .head_dim = 8,
				 .rms_norm_eps = 1e-6, .rope_theta = 1e6, .rope_factor = 1,
				 .rope_beta_fast = 32, .rope_beta_slow = 1,
				 .max_position_embeddings = 128, .tie_word_embeddings = tie,
				 .dtype = ENG_F32, .bos_token_id = -1, .eos_token_id = -1};
	snprintf(c->rope_type, sizeof c->rope_type, "default");
	add(m, "model.embed_tokens.weight", 2, 40, 16);
	add(m, "model.layers.0.input_layernorm.weight", 1, 16, 0);
	add(m, "model.layers.0.self_attn.q_proj.weight", 2, 16, 16);
	add(m, "model.layers.0.self_attn.k_proj.weight", 2, 8, 16);
	add(m, "model.layers.0.self_attn.v_proj.weight", 2, 8, 16);
	add(m, "model.layers.0.self_attn.o_proj.weight", 2, 16, 16);
	add(m, "model.layers.0.self_attn.q_norm.weight", 1, 8, 0);
	add(m, "model.layers.0.self_attn.k_norm.weight", 1, 8, 0);
	add(m, "model.layers.0.post_attention_layernorm.weight", 1, 16, 0);
	add(m, "model.layers.0.mlp.gate_proj.weight", 2, 24, 16);
	add(m, "model.layers.0.mlp.up_proj.weight", 2, 24, 16);
	add(m, "model.layers.0.mlp.down_proj.weight", 2, 16, 24);
	add(m, "model.norm.weight", 1, 16, 0);
	if (!tie)
		add(m, "lm_head.weight", 2, 40, 16);
}

static void free_model(struct model *m)
{
	for (int i = 0; i < m->n; i++)
		free(m->data[i]);
}

/* DIR/config.json and DIR/model.safetensors in dtype dt. */
static void write_model(const char *dir, struct model *m, enum ckpt_dtype dt)
{
	mkdir(dir, 0700);
	m->c.dtype = dt == CKPT_F32 ? ENG_F32 : ENG_BF16;
	char *config = mdir_config_json(&m->c), *cp = fio_join(dir, "config.json"),
	     *wp = fio_join(dir, "model.safetensors");
	assert_int_equal(fio_write_atomic(cp, config, strlen(config), 0600, FIO_NO_LINKS), 0);
	int fd = open(wp, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	assert_true(fd >= 0);
	const char *meta[] = {"format", "pt", "step", "12"};
	assert_int_equal(ckpt_st_write(fd, wp, m->t, m->n, dt, meta, 2), 0);
	close(fd);
	free(config);
	free(cp);
	free(wp);
}

static float value(const struct eng_tensor *t, int64_t k)
{
	if (t->dtype == ENG_F32)
		return ((const float *)t->data)[k];
	assert_int_equal(t->dtype, ENG_BF16);
	uint32_t u = (uint32_t)((const uint16_t *)t->data)[k] << 16;
	return bits(u);
}

/* Every tensor the engine bound has the values written (rounded to bf16 for BF16). */
static void check_engine(const char *dir, const struct model *m, enum ckpt_dtype dt)
{
	struct eng_model *em = eng_model_open(dir);
	if (!em)
		fail_msg("eng_model_open: %s", err_msg());
	const struct eng_weights *w = eng_model_weights(em);
	const struct eng_layer *l = &w->layers[0];
	const struct eng_tensor *bound[] = {&w->embed,     &l->input_norm, &l->wq,	 &l->wk,
					    &l->wv,	       &l->wo,	       &l->q_norm,	 &l->k_norm,
					    &l->post_norm, &l->w_gate,     &l->w_up,	 &l->w_down,
					    &w->final_norm, &w->lm_head};
	for (int i = 0; i < m->n; i++) {
		const struct eng_tensor *t = bound[i];
		int64_t n = m->t[i].ndim == 1 ? m->t[i].shape[0] : m->t[i].shape[0] * m->t[i].shape[1];
		assert_int_equal(t->shape[0], m->t[i].shape[0]);
		for (int64_t k = 0; k < n; k++) {
			float want = dt == CKPT_F32 ? m->data[i][k] : bits((uint32_t)ckpt_bf16(m->data[i][k]) << 16);
			if (value(t, k) != want)
				fail_msg("%s[%lld]: %g, wrote %g", m->names[i], (long long)k, value(t, k), want);
		}
	}
	eng_model_free(em);
}

static void test_engine_reads_f32_and_bf16(void **state)
{
	(void)state;
	for (int tie = 0; tie < 2; tie++) {
		struct model m;
		tiny(&m, tie);
		char dir[512];
		snprintf(dir, sizeof dir, "%s/f32-%d", tmpdir, tie);
		write_model(dir, &m, CKPT_F32);
		check_engine(dir, &m, CKPT_F32);
		snprintf(dir, sizeof dir, "%s/bf16-%d", tmpdir, tie);
		write_model(dir, &m, CKPT_BF16);
		check_engine(dir, &m, CKPT_BF16);
		free_model(&m);
	}
}

static void test_read_back(void **state)
{
	(void)state;
	struct model m;
	tiny(&m, false);
	char dir[512], path[600];
	snprintf(dir, sizeof dir, "%s/readback", tmpdir);
	write_model(dir, &m, CKPT_F32);
	snprintf(path, sizeof path, "%s/model.safetensors", dir);
	struct ckpt_st *f = ckpt_st_open(path);
	assert_non_null(f);
	assert_string_equal(ckpt_st_meta(f, "step"), "12");
	assert_null(ckpt_st_meta(f, "nothing"));
	float buf[40 * 16];
	for (int i = 0; i < m.n; i++) {
		assert_int_equal(ckpt_st_read(f, m.names[i], m.t[i].ndim, m.t[i].shape, buf), 0);
		int64_t n = m.t[i].ndim == 1 ? m.t[i].shape[0] : m.t[i].shape[0] * m.t[i].shape[1];
		assert_memory_equal(buf, m.data[i], (size_t)n * sizeof(float));
	}
	int64_t wrong[2] = {16, 17};
	assert_int_equal(ckpt_st_read(f, m.names[2], 2, wrong, buf), -1);
	assert_non_null(strstr(err_msg(), "shape"));
	assert_int_equal(ckpt_st_read(f, "no.such.weight", 1, wrong, buf), -1);
	assert_non_null(strstr(err_msg(), "no.such.weight is missing"));
	ckpt_st_close(f);
	/* a truncated file is refused when read, naming it */
	assert_int_equal(truncate(path, 200), 0);
	f = ckpt_st_open(path);
	if (f) {
		assert_int_equal(ckpt_st_read(f, m.names[0], 2, m.t[0].shape, buf), -1);
		ckpt_st_close(f);
	}
	assert_non_null(strstr(err_msg(), "model.safetensors"));
	free_model(&m);
}

static char *slurp(const char *dir, const char *name)
{
	char *p = fio_join(dir, name), *t = fio_read_all(p, 1 << 20, NULL);
	free(p);
	return t;
}

static void put_all(const char *dir, const char *tag, int expect)
{
	struct ckpt_txn *x = ckpt_begin(dir);
	assert_non_null(x);
	int rc = ckpt_put(x, "model.safetensors", tag, strlen(tag));
	if (rc == 0)
		rc = ckpt_put(x, "train-state/state.json", tag, strlen(tag));
	if (rc == 0)
		rc = ckpt_commit(x);
	else
		ckpt_abort(x);
	assert_int_equal(rc, expect);
}

static void test_transaction(void **state)
{
	(void)state;
	char dir[512], tmp[600], link[600], victim[600];
	snprintf(dir, sizeof dir, "%s/txn", tmpdir);
	mkdir(dir, 0700);
	put_all(dir, "one", 0);
	char *a = slurp(dir, "model.safetensors"), *b = slurp(dir, "train-state/state.json");
	assert_string_equal(a, "one");
	assert_string_equal(b, "one");
	free(a);
	free(b);
	struct stat st;
	snprintf(tmp, sizeof tmp, "%s/.checkpoint.new", dir);
	assert_int_equal(stat(tmp, &st), -1); /* nothing left behind */
	snprintf(link, sizeof link, "%s/model.safetensors", dir);
	assert_int_equal(stat(link, &st), 0);
	assert_int_equal(st.st_mode & 0777, 0600);

	/* aborted: the files stay as they were */
	struct ckpt_txn *x = ckpt_begin(dir);
	assert_int_equal(ckpt_put(x, "model.safetensors", "two", 3), 0);
	ckpt_abort(x);
	a = slurp(dir, "model.safetensors");
	assert_string_equal(a, "one");
	free(a);
	assert_int_equal(stat(tmp, &st), -1);

	/* a name outside DIR is refused */
	x = ckpt_begin(dir);
	assert_int_equal(ckpt_create(x, "../escape"), -1);
	assert_int_equal(ckpt_create(x, "train-state/../../escape"), -1);
	ckpt_abort(x);

	/* a link planted at a target is replaced, the file it points to untouched */
	snprintf(victim, sizeof victim, "%s/victim", tmpdir);
	assert_int_equal(fio_write_atomic(victim, "keep", 4, 0600, 0), 0);
	unlink(link);
	assert_int_equal(symlink(victim, link), 0);
	put_all(dir, "three", 0);
	a = fio_read_all(victim, 100, NULL);
	assert_string_equal(a, "keep");
	free(a);
	assert_int_equal(lstat(link, &st), 0);
	assert_true(S_ISREG(st.st_mode));
}

/* A save cut short: before its mark the set is removed, after it the set is finished. */
static void test_recover(void **state)
{
	(void)state;
	char dir[512], p[700];
	snprintf(dir, sizeof dir, "%s/recover", tmpdir);
	mkdir(dir, 0700);
	put_all(dir, "old", 0);
	snprintf(p, sizeof p, "%s/.checkpoint.new", dir);
	mkdir(p, 0700);
	snprintf(p, sizeof p, "%s/.checkpoint.new/f0", dir);
	assert_int_equal(fio_write_atomic(p, "new", 3, 0600, 0), 0);
	assert_int_equal(ckpt_recover(dir), 0); /* no mark: removed */
	char *a = slurp(dir, "model.safetensors");
	assert_string_equal(a, "old");
	free(a);
	struct stat st;
	snprintf(p, sizeof p, "%s/.checkpoint.new", dir);
	assert_int_equal(stat(p, &st), -1);

	/* marked, one of two files already moved: the other is moved now */
	mkdir(p, 0700);
	snprintf(p, sizeof p, "%s/.checkpoint.new/f1", dir);
	assert_int_equal(fio_write_atomic(p, "new", 3, 0600, 0), 0);
	snprintf(p, sizeof p, "%s/.checkpoint.new/COMPLETE", dir);
	const char *mark = "f0 model.safetensors\nf1 train-state/state.json\n";
	assert_int_equal(fio_write_atomic(p, mark, strlen(mark), 0600, 0), 0);
	assert_int_equal(ckpt_recover(dir), 1);
	a = slurp(dir, "train-state/state.json");
	assert_string_equal(a, "new");
	free(a);
	snprintf(p, sizeof p, "%s/.checkpoint.new", dir);
	assert_int_equal(stat(p, &st), -1);

	/* a mark naming a file outside DIR is refused */
	mkdir(p, 0700);
	snprintf(p, sizeof p, "%s/.checkpoint.new/COMPLETE", dir);
	mark = "f0 ../outside\n";
	assert_int_equal(fio_write_atomic(p, mark, strlen(mark), 0600, 0), 0);
	assert_int_equal(ckpt_recover(dir), -1);
	assert_non_null(strstr(err_msg(), "../outside"));

	/* and so is one whose source leaves the transaction's directory: the file
	 * outside stays where it is, the checkpoint as it was */
	char victim[600];
	snprintf(victim, sizeof victim, "%s/victim", tmpdir);
	assert_int_equal(fio_write_atomic(victim, "secret", 6, 0600, 0), 0);
	snprintf(p, sizeof p, "%s/.checkpoint.new/f", dir);
	mkdir(p, 0700);
	snprintf(p, sizeof p, "%s/.checkpoint.new/COMPLETE", dir);
	mark = "f/../../../victim model.safetensors\n";
	assert_int_equal(fio_write_atomic(p, mark, strlen(mark), 0600, 0), 0);
	assert_int_equal(ckpt_recover(dir), -1);
	assert_non_null(strstr(err_msg(), "is not a checkpoint file"));
	assert_int_equal(stat(victim, &st), 0);
	a = slurp(dir, "model.safetensors");
	assert_string_equal(a, "old");
	free(a);
	/* a link as a source is refused too */
	mark = "f7 model.safetensors\n";
	assert_int_equal(fio_write_atomic(p, mark, strlen(mark), 0600, 0), 0);
	snprintf(p, sizeof p, "%s/.checkpoint.new/f7", dir);
	assert_int_equal(symlink(victim, p), 0);
	assert_int_equal(ckpt_recover(dir), -1);
	assert_non_null(strstr(err_msg(), "not a regular file"));
	snprintf(p, sizeof p, "rm -rf '%s/.checkpoint.new'", dir);
	assert_int_equal(system(p), 0);
}

/* What a signal handler does with a save it stops: an unfinished one is removed by
 * its files' names, a marked one kept for ckpt_recover, anything else left alone. */
static void test_discard_unmarked(void **state)
{
	(void)state;
	char tmp[600], p[700], buf[700];
	snprintf(tmp, sizeof tmp, "%s/discard", tmpdir);
	assert_int_equal(ckpt_discard_unmarked(tmp, buf), 0); /* none there */
	mkdir(tmp, 0700);
	const char *names[] = {"f0", "f9", "f10", "f63", "COMPLETE.part"};
	for (size_t i = 0; i < sizeof names / sizeof *names; i++) {
		snprintf(p, sizeof p, "%s/%s", tmp, names[i]);
		assert_int_equal(fio_write_atomic(p, "x", 1, 0600, 0), 0);
	}
	assert_int_equal(ckpt_discard_unmarked(tmp, buf), 0);
	struct stat st;
	assert_int_equal(lstat(tmp, &st), -1); /* all removed */
	/* marked: whole, kept */
	mkdir(tmp, 0700);
	snprintf(p, sizeof p, "%s/f0", tmp);
	assert_int_equal(fio_write_atomic(p, "x", 1, 0600, 0), 0);
	snprintf(p, sizeof p, "%s/COMPLETE", tmp);
	assert_int_equal(fio_write_atomic(p, "f0 model.safetensors\n", 21, 0600, 0), 0);
	assert_int_equal(ckpt_discard_unmarked(tmp, buf), 1);
	snprintf(p, sizeof p, "%s/f0", tmp);
	assert_int_equal(lstat(p, &st), 0);
	/* unmarked with a file not of a save's names: no save kept, the directory stays */
	unlink(p);
	snprintf(p, sizeof p, "%s/COMPLETE", tmp);
	unlink(p);
	snprintf(p, sizeof p, "%s/f3", tmp);
	assert_int_equal(fio_write_atomic(p, "x", 1, 0600, 0), 0);
	snprintf(p, sizeof p, "%s/notes", tmp);
	assert_int_equal(fio_write_atomic(p, "mine", 4, 0600, 0), 0);
	assert_int_equal(ckpt_discard_unmarked(tmp, buf), 0);
	assert_int_equal(lstat(p, &st), 0);
	snprintf(buf, sizeof buf, "%s/f3", tmp);
	assert_int_equal(lstat(buf, &st), -1);
	unlink(p);
	rmdir(tmp);
	/* a link there is no save: nothing kept, the link left alone */
	assert_int_equal(symlink(tmpdir, tmp), 0);
	assert_int_equal(ckpt_discard_unmarked(tmp, buf), 0);
	assert_int_equal(lstat(tmp, &st), 0);
	unlink(tmp);
}

/* A full disk (a file-size limit stands for it): the save fails, the previous files
 * stay whole, nothing is left behind. */
static void test_full_disk(void **state)
{
	(void)state;
	char dir[512], p[700];
	snprintf(dir, sizeof dir, "%s/full", tmpdir);
	mkdir(dir, 0700);
	put_all(dir, "small", 0);
	struct rlimit old, lim;
	getrlimit(RLIMIT_FSIZE, &old);
	lim = old;
	lim.rlim_cur = 4096;
	signal(SIGXFSZ, SIG_IGN);
	assert_int_equal(setrlimit(RLIMIT_FSIZE, &lim), 0);
	char *big = malloc(100000);
	memset(big, 'x', 99999);
	big[99999] = 0;
	struct ckpt_txn *x = ckpt_begin(dir);
	assert_non_null(x);
	assert_int_equal(ckpt_put(x, "model.safetensors", big, 100000), -1);
	assert_non_null(strstr(err_msg(), "model.safetensors"));
	ckpt_abort(x);
	setrlimit(RLIMIT_FSIZE, &old);
	free(big);
	char *a = slurp(dir, "model.safetensors");
	assert_string_equal(a, "small");
	free(a);
	struct stat st;
	snprintf(p, sizeof p, "%s/.checkpoint.new", dir);
	assert_int_equal(stat(p, &st), -1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_bf16_rounding),
		cmocka_unit_test(test_engine_reads_f32_and_bf16),
		cmocka_unit_test(test_read_back),
		cmocka_unit_test(test_transaction),
		cmocka_unit_test(test_recover),
		cmocka_unit_test(test_discard_unmarked),
		cmocka_unit_test(test_full_disk),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
