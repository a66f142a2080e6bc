/* test_gguf.c — a Qwen3 model written as GGUF the way llama.cpp's convert_hf_to_gguf.py
 * writes it (tests/mkgguf.py, from a tests/mkmodel directory with the real Qwen3
 * tokenizer) loads as the same model: the same config, the same token ids as
 * tokenizer.json on the golden cases (Hugging Face tokenizers' ids) and on random
 * text, the same template and special tokens, bit-identical logits (one file or three
 * splits), weights read in place. SKIP without the tokenizer files (except CI). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <jansson.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "engine/engine.h"
#include "src/base/err.h"
#include "src/hub/loader.h"
#include "tokenizer/tokenizer.h"

#define MKMODEL_FLAGS                                                                       \
	"--vocab-size 151936 --hidden-size 64 --intermediate-size 96 --layers 2 --heads 4 " \
	"--kv-heads 2 --head-dim 16 --no-tie --seed 11"

static char tmpdir[] = "/tmp/qwenchat-gguf.XXXXXX";
static char dir[4200], gguf[4200], gguf_bf16[4200], split1[4200];
static struct tok *hf, *gg; /* tokenizer.json's and the GGUF's */

static const char *env_or(const char *name, const char *dflt)
{
	const char *s = getenv(name);
	return s ? s : dflt;
}

static int run(const char *fmt, ...)
{
	char cmd[16384];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(cmd, sizeof cmd, fmt, ap);
	va_end(ap);
	return system(cmd) == 0 ? 0 : -1;
}

static int setup(void **state)
{
	(void)state;
	char tdir[4096] = "", cmd[4400];
	snprintf(cmd, sizeof cmd, "sh '%s/tests/fetch-tokenizer.sh'", env_or("TOP_SRCDIR", "."));
	FILE *p = popen(cmd, "r");
	if (!p || !fgets(tdir, sizeof tdir, p)) {
		int st = p ? pclose(p) : -1;
		fprintf(stderr, "test_gguf: no tokenizer files\n");
		exit(WIFEXITED(st) && WEXITSTATUS(st) == 77 ? 77 : 1);
	}
	pclose(p);
	tdir[strcspn(tdir, "\n")] = 0;
	if (!mkdtemp(tmpdir))
		return -1;
	snprintf(dir, sizeof dir, "%s/m", tmpdir);
	snprintf(gguf, sizeof gguf, "%s/m.gguf", tmpdir);
	snprintf(gguf_bf16, sizeof gguf_bf16, "%s/m-bf16.gguf", tmpdir);
	snprintf(split1, sizeof split1, "%s/s-00001-of-00003.gguf", tmpdir);
	const char *src = env_or("TOP_SRCDIR", ".");
	if (run("'%s/tests/mkmodel' --out '%s' --tokenizer '%s' " MKMODEL_FLAGS " >/dev/null",
		env_or("TOP_BUILDDIR", "."), dir, tdir) ||
	    run("python3 '%s/tests/mkgguf.py' '%s' '%s'", src, dir, gguf) ||
	    run("python3 '%s/tests/mkgguf.py' '%s' '%s' --norm-type bf16", src, dir, gguf_bf16) ||
	    run("python3 '%s/tests/mkgguf.py' '%s' '%s/s.gguf' --norm-type bf16 --split 3", src,
		dir, tmpdir))
		return -1;
	hf = tok_load(dir);
	gg = loader_tokenizer(gguf);
	if (!hf || !gg)
		fprintf(stderr, "%s\n", err_msg());
	return hf && gg ? 0 : -1;
}

static int teardown(void **state)
{
	(void)state;
	tok_free(hf);
	tok_free(gg);
	return run("rm -rf '%s'", tmpdir);
}

/* Both tokenizers give `want` (when given) and the same ids on text[0..n). */
static void same_ids(const char *text, size_t n, json_t *want, const char *what)
{
	size_t na, nb;
	int32_t *a = tok_encode(hf, text, n, &na), *b = tok_encode(gg, text, n, &nb);
	assert_non_null(a);
	assert_non_null(b);
	if (na != nb || memcmp(a, b, na * sizeof *a))
		fail_msg("%s: tokenizer.json gives %zu ids, the GGUF %zu", what, na, nb);
	if (want) {
		assert_int_equal(json_array_size(want), nb);
		for (size_t i = 0; i < nb; i++)
			assert_int_equal(json_integer_value(json_array_get(want, i)), b[i]);
	}
	free(a);
	free(b);
}

/* The golden cases (ids from Hugging Face tokenizers) through both paths. */
static int golden_file(const char *name)
{
	char path[4200], *line = NULL;
	size_t cap = 0;
	int n = 0;
	snprintf(path, sizeof path, "%s/tests/golden/%s", env_or("TOP_SRCDIR", "."), name);
	FILE *f = fopen(path, "r");
	assert_non_null(f);
	while (getline(&line, &cap, f) > 0) {
		json_t *c = json_loads(line, JSON_ALLOW_NUL, NULL), *ids;
		assert_non_null(c);
		json_t *text = json_object_get(c, "text");
		/* cases for a modified tokenizer ("tokenizer": "extra") do not apply */
		if (json_is_string(text) && !json_object_get(c, "tokenizer")) {
			ids = json_object_get(c, "ids");
			same_ids(json_string_value(text), json_string_length(text), ids,
				 json_string_value(json_object_get(c, "name")));
			n++;
		}
		json_decref(c);
	}
	free(line);
	fclose(f);
	return n;
}

static void test_golden_ids(void **state)
{
	(void)state;
	assert_true(golden_file("tokenizer-cases.jsonl") >= 60);
	assert_int_equal(golden_file("qwen2-tokenizer-reference-cases.jsonl"), 46);
}

/* 256 KiB of random pieces: ASCII, CJK, emoji, added tokens, invalid UTF-8. */
static void test_random_text(void **state)
{
	(void)state;
	static const char *const pieces[] = {"Hello",
					     " world",
					     "\n\n",
					     "  ",
					     "<think>",
					     "</think>",
					     "<|im_start|>",
					     "<|im_end|>",
					     "<tool_call>",
					     "日本語",
					     "😀",
					     "\xff",
					     "\xc3",
					     "é",
					     "e\xcc\x81",
					     "123456",
					     "'s",
					     " 's",
					     "\t",
					     "<|fim_prefix|>",
					     "<|endoftext|>",
					     "ﬁ"};
	size_t cap = 256 << 10, n = 0;
	char *text = malloc(cap + 64);
	uint32_t x = 2463534242u;
	while (n < cap) {
		x ^= x << 13, x ^= x >> 17, x ^= x << 5;
		const char *p = pieces[x % (sizeof pieces / sizeof pieces[0])];
		memcpy(text + n, p, strlen(p));
		n += strlen(p);
	}
	same_ids(text, n, NULL, "random text");
	free(text);
}

/* Every id decodes to the same bytes with the same flags. convert_hf_to_gguf.py marks
 * every <|...|> token CONTROL, Qwen's six FIM and repository tokens too, which
 * tokenizer.json has non-special: the loader gives them Qwen's flag back. */
static void test_vocabulary(void **state)
{
	(void)state;
	int n = tok_vocab_size(hf);
	assert_int_equal(tok_vocab_size(gg), n);
	for (int32_t id = 0; id < n; id++) {
		size_t la, lb;
		const char *a = tok_piece(hf, id, &la), *b = tok_piece(gg, id, &lb);
		assert_non_null(a);
		assert_non_null(b);
		if (la != lb || memcmp(a, b, la))
			fail_msg("id %d decodes differently", id);
		assert_int_equal(tok_is_added(hf, id), tok_is_added(gg, id));
		if (tok_is_special(hf, id) != tok_is_special(gg, id))
			fail_msg("id %d (%.*s): special %d in tokenizer.json, %d in the GGUF", id,
				 (int)la, a, tok_is_special(hf, id), tok_is_special(gg, id));
	}
	assert_string_equal(tok_chat_template(gg), tok_chat_template(hf));
	assert_string_equal(tok_eos_token(gg), tok_eos_token(hf));
	assert_string_equal(tok_pad_token(gg), tok_pad_token(hf));
}

static void test_config(void **state)
{
	(void)state;
	struct eng_model *a = eng_model_open(dir), *b = eng_model_open(gguf);
	if (!b)
		fail_msg("%s", err_msg());
	assert_non_null(a);
	struct eng_config ca = *eng_model_config(a), cb = *eng_model_config(b);
	assert_int_equal(cb.dtype, ENG_BF16); /* the most common type; norms are F32 */
	ca.dtype = cb.dtype;
	/* GGUF keeps the epsilon and rope base as float32 */
	assert_true(cb.rms_norm_eps == (float)ca.rms_norm_eps);
	assert_true(cb.rope_theta == (float)ca.rope_theta);
	ca.rms_norm_eps = cb.rms_norm_eps;
	ca.rope_theta = cb.rope_theta;
	assert_memory_equal(&ca, &cb, sizeof ca);
	assert_non_null(eng_model_gguf(b));
	assert_null(eng_model_gguf(a));
	struct eng_type_count tc[ENG_DTYPE_COUNT];
	eng_model_type_counts(b, tc);
	assert_int_equal(tc[ENG_F32].tensors, 2 * 4 + 1); /* 4 norms per layer, final norm */
	assert_int_equal(tc[ENG_BF16].tensors, 2 * 7 + 2);
	eng_model_free(a);
	eng_model_free(b);
}

static float *logits_of(const char *path, const int32_t *ids, int n)
{
	struct eng_model *m = eng_model_open(path);
	if (!m)
		fail_msg("%s: %s", path, err_msg());
	struct eng_options eo = {
		.backend = ENG_BACKEND_CPU, .threads = 1, .ctx = 64, .kv_f32 = true};
	struct eng *e = eng_new(m, &eo, NULL);
	if (!e)
		fail_msg("%s: %s", path, err_msg());
	int V = eng_model_config(m)->vocab_size;
	float *out = malloc((size_t)n * (size_t)V * sizeof *out);
	assert_int_equal(eng_forward(e, ids, n, 0, out, true), 0);
	eng_free(e);
	eng_model_free(m);
	return out;
}

/* The same weights in the same order: the CPU backend gives the same bits. */
static void test_logits(void **state)
{
	(void)state;
	const int32_t ids[] = {151644, 872, 198, 9707, 11, 1879, 0, 151645, 151935};
	const int n = sizeof ids / sizeof ids[0];
	size_t bytes = (size_t)n * 151936 * sizeof(float);
	float *a = logits_of(dir, ids, n), *b = logits_of(gguf_bf16, ids, n),
	      *c = logits_of(split1, ids, n);
	assert_memory_equal(a, b, bytes);
	assert_memory_equal(a, c, bytes);
	free(a);
	free(b);
	free(c);
}

/* Resident memory in bytes. */
static size_t rss(void)
{
	long pages = 0, resident = 0;
	FILE *f = fopen("/proc/self/statm", "r");
	if (f) {
		if (fscanf(f, "%ld %ld", &pages, &resident) != 2)
			resident = 0;
		fclose(f);
	}
	return (size_t)resident * (size_t)sysconf(_SC_PAGESIZE);
}

/* Opening maps the file: the 19 MB embedding is not read until used. */
static void test_mapped_in_place(void **state)
{
	(void)state;
	size_t before = rss();
	struct eng_model *m = eng_model_open(gguf);
	assert_non_null(m);
	size_t grown = rss() - before, file = eng_model_file_bytes(m);
	assert_true(file > 20u << 20);
	if (grown > file / 4)
		fail_msg("opening grew RSS by %zu bytes for a %zu-byte file", grown, file);
	eng_model_free(m);
}

static void test_metadata_api(void **state)
{
	(void)state;
	struct eng_gguf *g = eng_gguf_open(gguf);
	assert_non_null(g);
	int64_t v;
	double d;
	const char *s;
	size_t n;
	enum eng_gguf_type et;
	uint64_t count;
	assert_int_equal(eng_gguf_int(g, "qwen3.block_count", &v), 0);
	assert_int_equal(v, 2);
	assert_int_equal(eng_gguf_float(g, "qwen3.rope.freq_base", &d), 0);
	assert_true(d == 1e6);
	assert_int_equal(eng_gguf_str(g, "general.architecture", &s, &n), 0);
	assert_int_equal(n, 5);
	assert_memory_equal(s, "qwen3", 5);
	assert_int_equal(eng_gguf_int(g, "no.such.key", &v), 1);
	assert_int_equal(eng_gguf_int(g, "general.architecture", &v), -1);
	assert_non_null(strstr(err_msg(), "m.gguf: key general.architecture is a string"));
	assert_int_equal(eng_gguf_array(g, "tokenizer.ggml.tokens", &et, &count), 0);
	assert_int_equal(et, ENG_GGUF_STRING);
	assert_int_equal(count, 151936);
	s = eng_gguf_array_str(g, "tokenizer.ggml.tokens", 151645, &n);
	assert_non_null(s);
	assert_int_equal(n, 10);
	assert_memory_equal(s, "<|im_end|>", 10);
	assert_null(eng_gguf_array_str(g, "tokenizer.ggml.tokens", count, &n));
	assert_int_equal(eng_gguf_array_int(g, "tokenizer.ggml.token_type", 151645, &v), 0);
	assert_int_equal(v, 3);
	assert_int_equal(eng_gguf_array_int(g, "tokenizer.ggml.token_type", 151667, &v), 0);
	assert_int_equal(v, 4);
	assert_int_equal(eng_gguf_array_int(g, "tokenizer.ggml.token_type", 151935, &v), 0);
	assert_int_equal(v, 5);
	eng_gguf_free(g);
	assert_true(eng_is_gguf(gguf));
	assert_false(eng_is_gguf(dir));
}

/* A generation config from the GGUF: the eos id, and the sampling defaults of the
 * generation_config.json it was made from as float32 general.sampling.* keys; the
 * rest untouched. */
static void test_generation(void **state)
{
	(void)state;
	struct samp_params p, q;
	int32_t eos[SAMP_MAX_EOS];
	int n_eos = 0;
	samp_params_default(&p);
	q = p;
	assert_int_equal(loader_generation(gguf, &p, eos, &n_eos), 0);
	assert_int_equal(n_eos, 1);
	assert_int_equal(eos[0], 151645);
	q.temperature = (float)0.6;
	q.top_p = (float)0.95;
	q.top_k = 20;
	assert_memory_equal(&p, &q, sizeof p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_golden_ids),   cmocka_unit_test(test_random_text),
		cmocka_unit_test(test_vocabulary),   cmocka_unit_test(test_config),
		cmocka_unit_test(test_logits),       cmocka_unit_test(test_mapped_in_place),
		cmocka_unit_test(test_metadata_api), cmocka_unit_test(test_generation),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
