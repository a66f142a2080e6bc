/* test_session.c — the persistent KV cache across turns on a generated model with the
 * real Qwen3 tokenizer (CPU backend, fp32 KV): after each of 5 thinking turns the
 * KV-reuse path gives the logits of a fresh prefill of the whole rendered
 * conversation and prefills only the tokens after the common prefix; cancel during
 * prefill and decode, then continue, gives the same; context overflow drops the
 * oldest whole turns; a model rigged to write a think block streams its reasoning
 * and answer apart; bad ids and calls are errors, not crashes. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <cmocka.h>
#include <jansson.h>

#include "engine/engine.h"
#include "src/chat/chat.h"
#include "src/chat/fit.h"
#include "src/base/err.h"
#include "tests/unit/testutil.h"
#include "src/session/sampler.h"
#include "src/session/session.h"
#include "src/base/utf8.h"
#include "src/chat/template.h"
#include "tokenizer/tokenizer.h"

/* A narrow model over the real vocabulary (151936 ids: the tokenizer's ids must be
 * valid); two layers, GQA 4:2. */
static const char *const MKMODEL_FLAGS =
	"--vocab-size 151936 --hidden-size 32 --intermediate-size 64 --layers 2 --heads 4 "
	"--kv-heads 2 --head-dim 16 --max-position 4096 --seed 11";
enum { CTX = 2048, CHUNK = 16 };

static char tmpdir[] = "/tmp/qwenchat-session.XXXXXX";
static char model_dir[4200];
static struct eng_model *model;
static struct tok *tok;
static struct eng *ref; /* a second engine for the fresh prefills */
static enum tmpl_variant variant;
static int V;
static float *fresh;

static int setup(void **state)
{
	(void)state;
	if (!mkdtemp(tmpdir))
		return -1;
	snprintf(model_dir, sizeof model_dir, "%s/m", tmpdir);
	if (tu_make_model(model_dir, MKMODEL_FLAGS, true))
		return -1;
	model = eng_model_open(model_dir);
	tok = tok_load(model_dir);
	if (!model || !tok) {
		fprintf(stderr, "%s\n", err_msg());
		return -1;
	}
	V = eng_model_config(model)->vocab_size;
	struct eng_options eo = {
		.backend = ENG_BACKEND_CPU, .threads = 1, .ctx = CTX, .kv_f32 = true};
	ref = eng_new(model, &eo, NULL);
	fresh = malloc((size_t)V * sizeof *fresh);
	variant = tmpl_detect(tok_chat_template(tok), NULL);
	return ref && fresh ? 0 : -1;
}

static int teardown(void **state)
{
	(void)state;
	eng_free(ref);
	eng_model_free(model);
	tok_free(tok);
	free(fresh);
	char cmd[256];
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
	return system(cmd) == 0 ? 0 : -1;
}

/* The session's logits equal a fresh prefill of all its ids, within 1e-5 of the
 * largest logit's magnitude. */
static void check_fresh(const struct sess *s)
{
	const float *got = sess_logits(s);
	assert_non_null(got);
	assert_int_equal(eng_truncate(ref, 0), 0);
	assert_int_equal(eng_forward(ref, sess_ids(s), sess_n(s), 0, fresh, false), 0);
	double maxabs = 0, maxdiff = 0;
	for (int i = 0; i < V; i++) {
		if (fabs(fresh[i]) > maxabs)
			maxabs = fabs(fresh[i]);
		if (fabs(got[i] - fresh[i]) > maxdiff)
			maxdiff = fabs(got[i] - fresh[i]);
	}
	print_message("  logits vs fresh prefill of %d tokens: max |diff| %.3g, max |logit| %.3g\n",
		      sess_n(s), maxdiff, maxabs);
	if (maxdiff > 1e-5 * maxabs)
		fail_msg("logits differ from a fresh prefill: %g (max |logit| %g)", maxdiff,
			 maxabs);
}

/* The engine under the session of the running test (a session does not own it). */
static struct eng *sess_engine;

/* What a sync to b keeps of the cache holding a: the common prefix, short of the last
 * token, and short of the engine's least prefill (eng_prefill_min). */
static int common_prefix(const int32_t *a, int na, const int32_t *b, int nb)
{
	int k = 0, least = eng_prefill_min(sess_engine);
	while (k < na && k < nb - 1 && a[k] == b[k])
		k++;
	if (nb - k < least)
		k = nb > least ? nb - least : 0;
	return k;
}

/* Syncs to ids and checks the statistics and the logits. */
static void sync_check(struct sess *s, const int32_t *ids, int n)
{
	int lcp = common_prefix(sess_ids(s), sess_n(s), ids, n);
	assert_int_equal(sess_sync(s, ids, n), 0);
	assert_int_equal(sess_n(s), n);
	assert_memory_equal(sess_ids(s), ids, (size_t)n * sizeof *ids);
	assert_int_equal(sess_stats(s)->reused, lcp);
	assert_int_equal(sess_stats(s)->prefilled, n - lcp);
	check_fresh(s);
}

struct collect {
	char text[2][4096]; /* by enum sess_part */
	size_t len[2];
	int pieces;
	int cancel_after; /* set *cancel after this many pieces (0: never) */
	atomic_int *cancel;
};

static int collect(void *user, enum sess_part part, const char *text, size_t len)
{
	struct collect *c = user;
	assert_true(len > 0);
	if (c->len[part] + len < sizeof c->text[part]) {
		memcpy(c->text[part] + c->len[part], text, len);
		c->len[part] += len;
		c->text[part][c->len[part]] = 0;
	}
	if (++c->pieces == c->cancel_after)
		atomic_store(c->cancel, 1);
	return 0;
}

/* Appends text's tokens to the cache contents and syncs (the prompt-side tokens
 * the model would have written, e.g. "<think>\n"). */
static void sync_append(struct sess *s, const char *text)
{
	size_t k;
	int32_t *extra = tok_encode(tok, text, strlen(text), &k);
	assert_non_null(extra);
	int n = sess_n(s);
	int32_t *ids = malloc((size_t)(n + (int)k) * sizeof *ids);
	memcpy(ids, sess_ids(s), (size_t)n * sizeof *ids);
	memcpy(ids + n, extra, k * sizeof *ids);
	sync_check(s, ids, n + (int)k);
	assert_int_equal(sess_stats(s)->prefilled, (int)k);
	free(ids);
	free(extra);
}

/* Generates up to max tokens; checks that the ids generated are in the cache and
 * that the streamed text is their decoding. Returns the text of `part`. */
static char *generate(struct sess *s, struct samp *sp, int max, enum sess_split split,
		      struct collect *col)
{
	int before = sess_n(s);
	assert_int_equal(sess_generate(s, sp, max, split, collect, col), 0);
	const struct sess_stats *st = sess_stats(s);
	int stop_tok = st->stop == SESS_STOP_EOS;
	assert_int_equal(sess_n(s), before + st->generated + stop_tok);
	assert_true(st->generated <= max);
	size_t len;
	char *dec = tok_decode(tok, sess_ids(s) + before, (size_t)st->generated, true, &len);
	assert_non_null(dec);
	/* the stream is the decoding with ill-formed UTF-8 replaced by U+FFFD (as
	 * test_term checks against Python), less the leading newlines the template strips */
	char *fixed = malloc(3 * len + 1);
	size_t o = 0;
	for (const char *q = dec; len > 0;) {
		size_t valid, bad;
		utf8_next_piece(q, len, &valid, &bad);
		memcpy(fixed + o, q, valid), o += valid;
		if (bad)
			memcpy(fixed + o, UTF8_REPLACEMENT, 3), o += 3;
		q += valid + bad, len -= valid + bad;
	}
	fixed[o] = 0;
	free(dec);
	dec = fixed;
	enum sess_part part = split == SESS_SPLIT_REASONING_FIRST ? SESS_REASONING : SESS_ANSWER;
	const char *d = dec;
	while (*d == '\n')
		d++;
	if (part == SESS_ANSWER)
		assert_string_equal(col->text[part], d);
	else
		assert_memory_equal(col->text[part], d, col->len[part]);
	free(dec);
	return strdup(col->text[part]);
}

static const char *const questions[] = {
	"What is the capital of France?",
	"And of Germany? Answer in one word.",
	"Write a haiku about caches — with an é and a 😀.",
	"Now explain, step by step, why 17 is prime.",
	"Thanks! Summarise our conversation.",
};

/* One assistant turn the way a thinking model writes it: "<think>\n", reasoning,
 * "\n</think>\n\n", answer; the tags are fed as prompt tokens (a random model does
 * not write them), the rest is sampled. */
static void assistant_turn(struct sess *s, struct samp *sp, struct chat *c, int max)
{
	struct collect r = {0}, a = {0};
	sync_append(s, "<think>\n");
	char *reasoning = generate(s, sp, max, SESS_SPLIT_REASONING_FIRST, &r);
	sync_append(s, "\n</think>\n\n");
	char *answer = generate(s, sp, max, SESS_SPLIT_ANSWER_FIRST, &a);
	assert_int_equal(chat_add(c, CHAT_ASSISTANT, answer, reasoning), 0);
	free(reasoning);
	free(answer);
}

static struct samp *sampler(uint64_t seed)
{
	struct samp_params p;
	samp_params_default(&p);
	p.temperature = 1.0, p.top_k = 50, p.top_p = 0.95, p.seed = seed;
	struct samp *sp = samp_new(&p, V);
	assert_non_null(sp);
	return sp;
}

static struct sess *session(atomic_int *cancel, void (*progress)(void *, int, int), void *user)
{
	struct eng_options eo = {
		.backend = ENG_BACKEND_CPU, .threads = 1, .ctx = CTX, .kv_f32 = true};
	struct eng *e = sess_engine = eng_new(model, &eo, NULL);
	assert_non_null(e);
	struct sess_options so = {
		.chunk = CHUNK, .cancel = cancel, .progress = progress, .progress_user = user};
	struct sess *s = sess_new(e, model, tok, &so);
	assert_non_null(s);
	return s;
}

static void render(struct chat *c, int32_t **ids, int *n)
{
	int dropped = 0;
	free(*ids);
	*ids = chat_render_fit(tok, c, variant, TMPL_THINK_ON, true, CTX, 64, 0, n, &dropped);
	assert_non_null(*ids);
	assert_int_equal(dropped, 0);
}

static void test_five_turns(void **state)
{
	(void)state;
	assert_int_equal(variant, TMPL_QWEN3);
	struct sess *s = session(NULL, NULL, NULL);
	struct samp *sp = sampler(7);
	struct chat *c = chat_new();
	int32_t *ids = NULL;
	int n;
	assert_int_equal(chat_set_system(c, "You are a careful test assistant."), 0);
	for (int turn = 0; turn < 5; turn++) {
		assert_int_equal(chat_add(c, CHAT_USER, questions[turn], NULL), 0);
		render(c, &ids, &n);
		int lcp = common_prefix(sess_ids(s), sess_n(s), ids, n);
		/* from the second turn on, the last reasoning is gone from the render: the
		 * cache must be cut back, not merely extended */
		if (turn > 0)
			assert_true(lcp < sess_n(s));
		int cached = sess_n(s);
		sync_check(s, ids, n);
		print_message("turn %d: cache %d tokens, render %d: %d reused, %d prefilled\n",
			      turn + 1, cached, n, sess_stats(s)->reused, sess_stats(s)->prefilled);
		if (turn > 0)
			assert_true(sess_stats(s)->reused > 0 && sess_stats(s)->prefilled < n);
		assistant_turn(s, sp, c, 12);
	}
	/* the same conversation again: everything but the last tokens is reused */
	assert_int_equal(chat_add(c, CHAT_USER, "One more?", NULL), 0);
	render(c, &ids, &n);
	sync_check(s, ids, n);
	assert_int_equal(sess_sync(s, ids, n), 0);
	assert_int_equal(sess_stats(s)->prefilled, 0);
	check_fresh(s);
	free(ids);
	chat_free(c);
	samp_free(sp);
	sess_free(s);
	eng_free(sess_engine);
}

struct prog {
	atomic_int *cancel;
	int at;
	int calls;
};

static void progress(void *user, int done, int total)
{
	struct prog *p = user;
	assert_true(done > 0 && done <= total);
	if (++p->calls == p->at)
		atomic_store(p->cancel, 1);
}

static void test_cancel(void **state)
{
	(void)state;
	atomic_int cancel = 0;
	struct prog pr = {&cancel, 3, 0};
	struct sess *s = session(&cancel, progress, &pr);
	struct samp *sp = sampler(3);
	struct chat *c = chat_new();
	int32_t *ids = NULL;
	int n;
	assert_int_equal(chat_add(c, CHAT_USER, questions[3], NULL), 0);
	assert_int_equal(chat_add(c, CHAT_ASSISTANT,
				  "17 has no divisors but 1 and 17: it is "
				  "not divisible by 2, 3 (1+7=8), or any prime up to its root.",
				  "Check small primes up to 4."),
			 0);
	assert_int_equal(chat_add(c, CHAT_USER, questions[2], NULL), 0);
	render(c, &ids, &n);
	assert_true(n > 4 * CHUNK);
	/* cancel during the prefill: three chunks are in, and ids say so */
	assert_int_equal(sess_sync(s, ids, n), 1);
	assert_int_equal(sess_n(s), 3 * CHUNK);
	assert_memory_equal(sess_ids(s), ids, 3 * CHUNK * sizeof *ids);
	assert_null(sess_logits(s));
	assert_int_equal(sess_generate(s, sp, 4, SESS_SPLIT_ANSWER_FIRST, NULL, NULL), -1);
	/* continue: only the rest is prefilled, and the logits are a fresh prefill's */
	atomic_store(&cancel, 0);
	pr.at = 0;
	sync_check(s, ids, n);
	assert_int_equal(sess_stats(s)->reused, 3 * CHUNK);

	/* cancel during decode, after the third piece of text */
	struct collect col = {.cancel_after = 3, .cancel = &cancel};
	assert_int_equal(sess_generate(s, sp, 40, SESS_SPLIT_ANSWER_FIRST, collect, &col), 0);
	const struct sess_stats *st = sess_stats(s);
	assert_int_equal(st->stop, SESS_STOP_CANCEL);
	assert_true(st->generated >= 3 && st->generated < 40);
	assert_int_equal(sess_n(s), n + st->generated);
	check_fresh(s);
	/* the interrupted answer joins the conversation; the next turn reuses the cache */
	atomic_store(&cancel, 0);
	assert_int_equal(chat_add(c, CHAT_ASSISTANT, col.text[SESS_ANSWER], ""), 0);
	assert_int_equal(chat_add(c, CHAT_USER, questions[4], NULL), 0);
	render(c, &ids, &n);
	sync_check(s, ids, n);
	free(ids);
	chat_free(c);
	samp_free(sp);
	sess_free(s);
	eng_free(sess_engine);
}

static int render_len(const struct chat *c)
{
	size_t len, n;
	char *text = tmpl_render(c, variant, true, TMPL_THINK_ON, &len);
	int32_t *ids = tok_encode(tok, text, len, &n);
	free(text);
	free(ids);
	return (int)n;
}

static void test_overflow(void **state)
{
	(void)state;
	struct chat *c = chat_new();
	char buf[128];
	assert_int_equal(chat_set_system(c, "System prompt stays."), 0);
	for (int i = 0; i < 4; i++) {
		snprintf(buf, sizeof buf, "question %d about something long enough", i);
		assert_int_equal(chat_add(c, CHAT_USER, buf, NULL), 0);
		snprintf(buf, sizeof buf, "answer %d with a few words in it", i);
		assert_int_equal(chat_add(c, CHAT_ASSISTANT, buf, NULL), 0);
	}
	assert_int_equal(chat_add(c, CHAT_USER, "the last question", NULL), 0);
	/* what the conversation costs after dropping two whole turns */
	struct chat *two = chat_dup(c);
	chat_remove(two, 1, 4);
	int want = render_len(two);
	int n, dropped = 0;
	int32_t *ids = chat_render_fit(tok, c, variant, TMPL_THINK_ON, true, want + 10, 10, 0, &n,
				       &dropped);
	assert_non_null(ids);
	assert_int_equal(dropped, 2);
	assert_int_equal(n, want);
	assert_int_equal(c->n, two->n);
	assert_string_equal(c->turns[0].content, "System prompt stays.");
	assert_string_equal(c->turns[1].content, "question 2 about something long enough");
	assert_string_equal(c->turns[c->n - 1].content, "the last question");
	free(ids);
	chat_free(two);

	/* a single message longer than the context: refused with its token count */
	char *big = malloc(4000);
	big[0] = 0;
	for (int i = 0; i < 100; i++)
		strcat(big, "lorem ipsum dolor ");
	size_t k;
	int32_t *bids = tok_encode(tok, big, strlen(big), &k);
	free(bids);
	assert_int_equal(chat_add(c, CHAT_ASSISTANT, "ok", NULL), 0);
	assert_int_equal(chat_add(c, CHAT_USER, big, NULL), 0);
	dropped = 0;
	assert_null(
		chat_render_fit(tok, c, variant, TMPL_THINK_ON, true, 100, 10, 0, &n, &dropped));
	assert_int_equal(c->n, 2); /* everything droppable went: system + the message */
	/* the count is the rendered prompt's (template, system prompt), the message's apart */
	size_t kp;
	int32_t *pids = chat_encode(tok, c, variant, true, TMPL_THINK_ON, true, &kp);
	free(pids);
	assert_true(kp > k);
	snprintf(buf, sizeof buf,
		 "the prompt is %zu tokens (the message alone %zu), the context holds 100", kp, k);
	assert_string_equal(err_msg(), buf);
	free(big);
	chat_free(c);
}

/* A model rigged to write a fixed sequence (bf16 weights patched in place), with a
 * padding id ranked above it that must never be chosen: residual
 * dimension 0 is a constant 10 (embedding column 0; row 0 of every o_proj and
 * down_proj zero), the final norm keeps only that dimension, so the logits are
 * lm_head[:, 0] times a positive constant whatever the input. lm_head[:, 0] ranks
 * the script's tokens first to last; a huge presence penalty then makes greedy
 * decoding take them in order, each once. */
static const char *const script[] = {"<think>",  "\n",    "Hello", "\n\n",
				     "</think>", "World", "!",     "<|im_end|>"};
enum { NSCRIPT = sizeof script / sizeof script[0] };

/* Sets tensor `name` (bf16, rows x cols) entries: column col (col >= 0) or row row.
 * The values used are exact in bf16 (the upper half of the float). */
static void patch(FILE *f, json_t *hdr, uint64_t base, const char *name, int row, int col,
		  const float *vals, int count)
{
	json_t *t = json_object_get(hdr, name);
	assert_non_null(t);
	assert_string_equal(json_string_value(json_object_get(t, "dtype")), "BF16");
	json_t *shape = json_object_get(t, "shape");
	int64_t cols =
		json_array_size(shape) == 2 ? json_integer_value(json_array_get(shape, 1)) : 1;
	uint64_t off = base + (uint64_t)json_integer_value(
				      json_array_get(json_object_get(t, "data_offsets"), 0));
	for (int i = 0; i < count; i++) {
		int64_t r = col >= 0 ? i : row, c = col >= 0 ? col : i;
		uint32_t bits;
		memcpy(&bits, &vals[i], 4);
		uint16_t half = (uint16_t)(bits >> 16);
		assert_int_equal(fseek(f, (long)(off + (uint64_t)(r * cols + c) * 2), SEEK_SET), 0);
		assert_int_equal(fwrite(&half, 2, 1, f), 1);
	}
}

static void rig_model(const char *dir, const int32_t *ids)
{
	char path[4400];
	snprintf(path, sizeof path, "%s/model.safetensors", dir);
	FILE *f = fopen(path, "r+b");
	assert_non_null(f);
	uint64_t n = 0;
	assert_int_equal(fread(&n, 8, 1, f), 1); /* little-endian host */
	char *text = malloc(n);
	assert_int_equal(fread(text, 1, n, f), n);
	json_t *hdr = json_loadb(text, n, 0, NULL);
	free(text);
	assert_non_null(hdr);
	enum { H = 32, I = 64, L = 2 };
	float *v = calloc(151936, sizeof *v);
	float *zero = calloc(151936, sizeof *zero);
	for (int i = 0; i < 151936; i++)
		v[i] = 10;
	patch(f, hdr, 8 + n, "model.embed_tokens.weight", 0, 0, v, 151936);
	for (int l = 0; l < L; l++) {
		char name[96];
		snprintf(name, sizeof name, "model.layers.%d.self_attn.o_proj.weight", l);
		patch(f, hdr, 8 + n, name, 0, -1, zero, 4 * 16);
		snprintf(name, sizeof name, "model.layers.%d.mlp.down_proj.weight", l);
		patch(f, hdr, 8 + n, name, 0, -1, zero, I);
	}
	float one = 1;
	patch(f, hdr, 8 + n, "model.norm.weight", 0, -1, zero, H);
	patch(f, hdr, 8 + n, "model.norm.weight", 0, -1, &one, 1);
	memset(v, 0, 151936 * sizeof *v);
	for (int k = 0; k < NSCRIPT; k++)
		v[ids[k]] = (float)(NSCRIPT - k);
	/* A padding row (past the tokenizer's 151,669 ids) above them all: the session
	 * must never sample it, or the script would not come out. */
	v[151935] = NSCRIPT + 1;
	patch(f, hdr, 8 + n, "lm_head.weight", 0, 0, v, 151936);
	assert_int_equal(fclose(f), 0);
	json_decref(hdr);
	free(v);
	free(zero);
}

/* The token hook: the ids it saw, and whether each was the most likely one. */
struct hooked {
	int32_t ids[64];
	int n;
	bool all_top;
};

static void hook(void *user, int32_t id, const struct samp *sp)
{
	struct hooked *h = user;
	float lp;
	struct samp_logprob top[2];
	assert_int_equal(samp_logprobs(sp, id, &lp, top, 2), 0);
	h->all_top &= top[0].id == id && top[0].logprob == lp && top[1].logprob < lp;
	if (h->n < 64)
		h->ids[h->n++] = id;
}

static void test_think_split(void **state)
{
	(void)state;
	char dir[4200];
	int32_t ids[NSCRIPT];
	for (int k = 0; k < NSCRIPT; k++) {
		size_t n;
		int32_t *x = tok_encode(tok, script[k], strlen(script[k]), &n);
		assert_int_equal(n, 1); /* each piece is one token of the real vocabulary */
		ids[k] = x[0];
		free(x);
	}
	char flags[1024];
	snprintf(dir, sizeof dir, "%s/rigged", tmpdir);
	snprintf(flags, sizeof flags, "%s --no-tie", MKMODEL_FLAGS);
	assert_int_equal(tu_make_model(dir, flags, true), 0);
	rig_model(dir, ids);
	struct eng_model *m = eng_model_open(dir);
	assert_non_null(m);
	struct eng_options eo = {
		.backend = ENG_BACKEND_CPU, .threads = 1, .ctx = 256, .kv_f32 = true};
	struct eng *e = eng_new(m, &eo, NULL);
	if (!e)
		fail_msg("%s", err_msg());
	struct sess *s = sess_new(e, m, tok, NULL);
	struct samp_params p;
	samp_params_default(&p);
	p.greedy = true, p.presence_penalty = 1000;
	struct samp *sp = samp_new(&p, V);
	assert_true(e && s && sp);
	int32_t prompt[3] = {100, 200, 300};
	enum sess_split splits[] = {SESS_SPLIT_ANSWER_FIRST, SESS_SPLIT_NONE};
	for (int i = 0; i < 2; i++) {
		assert_int_equal(sess_sync(s, prompt, 3), 0);
		struct collect col = {0};
		struct hooked h = {.all_top = true};
		sess_set_token_hook(s, i == 0 ? hook : NULL, &h);
		assert_int_equal(sess_generate(s, sp, 50, splits[i], collect, &col), 0);
		/* the hook saw every generated id but the stop token, each the greedy pick */
		assert_int_equal(h.n, i == 0 ? NSCRIPT - 1 : 0);
		assert_memory_equal(h.ids, ids, (size_t)h.n * sizeof *ids);
		assert_true(h.all_top);
		assert_int_equal(sess_stats(s)->stop, SESS_STOP_EOS);
		assert_int_equal(sess_stats(s)->generated, NSCRIPT - 1);
		assert_int_equal(sess_n(s), 3 + NSCRIPT);
		assert_memory_equal(sess_ids(s) + 3, ids, sizeof ids);
		if (splits[i] == SESS_SPLIT_NONE) {
			/* no split: everything is answer text, tags included */
			assert_string_equal(col.text[SESS_ANSWER],
					    "<think>\nHello\n\n</think>World!");
			assert_int_equal(col.len[SESS_REASONING], 0);
		} else {
			/* the tags are gone, and the newlines the template strips */
			assert_string_equal(col.text[SESS_REASONING], "Hello");
			assert_string_equal(col.text[SESS_ANSWER], "World!");
		}
	}
	samp_free(sp);
	sess_free(s);
	eng_free(e);
	eng_model_free(m);
}

/* A prompt gets the same logits, bit for bit, whether its first tokens come from the
 * cache or not, so the same seed writes the same text: a repeated request (all but
 * its last token cached), a cache cut 3 tokens short, and a cold prefill whose last
 * chunk would be one token (2 * CHUNK + 1); on bf16 weights with the fast (bf16) prefill and the
 * exact one, and on q8_0 weights, whose decode products start below 8 tokens. */
static void warm_cold(struct eng_model *m, bool bf16_prefill, enum eng_ftype quant)
{
	struct eng_options eo = {.backend = ENG_BACKEND_CPU,
				 .threads = 1,
				 .ctx = CTX,
				 .bf16_prefill = bf16_prefill,
				 .quant = quant};
	struct eng *e = sess_engine = eng_new(m, &eo, NULL);
	assert_non_null(e);
	struct sess *s = sess_new(e, m, tok, &(struct sess_options){.chunk = CHUNK});
	assert_non_null(s);
	struct samp *sp = sampler(5);
	struct chat *c = chat_new();
	int32_t *ids = NULL;
	int n;
	assert_int_equal(chat_set_system(c, "You are a careful test assistant."), 0);
	assert_int_equal(chat_add(c, CHAT_USER, questions[3], NULL), 0);
	render(c, &ids, &n);
	assert_true(n > 2 * CHUNK + 1);
	float *cold = malloc((size_t)V * sizeof *cold);
	assert_non_null(cold);
	int lens[2] = {n, 2 * CHUNK + 1};
	for (int i = 0; i < 2; i++) {
		int len = lens[i];
		sess_reset(s);
		assert_int_equal(sess_sync(s, ids, len), 0);
		memcpy(cold, sess_logits(s), (size_t)V * sizeof *cold);
		assert_int_equal(sess_generate(s, sp, 6, SESS_SPLIT_ANSWER_FIRST, NULL, NULL), 0);
		assert_int_equal(sess_sync(s, ids, len), 0); /* the answer's cache cut back */
		assert_true(sess_stats(s)->reused > len - 9);
		assert_memory_equal(sess_logits(s), cold, (size_t)V * sizeof *cold);
		assert_int_equal(sess_sync(s, ids, len - 3), 0);
		assert_int_equal(sess_sync(s, ids, len), 0);
		assert_memory_equal(sess_logits(s), cold, (size_t)V * sizeof *cold);
	}
	free(cold);
	free(ids);
	chat_free(c);
	samp_free(sp);
	sess_free(s);
	eng_free(e);
}

static void test_warm_cold(void **state)
{
	(void)state;
	warm_cold(model, true, ENG_FTYPE_NONE);
	warm_cold(model, false, ENG_FTYPE_NONE);
	/* quantizing at load changes the model: a copy of its own */
	struct eng_model *q = eng_model_open(model_dir);
	assert_non_null(q);
	warm_cold(q, true, ENG_FTYPE_Q8_0);
	eng_model_free(q);
}

/* Rows a scored sync passed on: rows[pos] for pos from..n-1, in order. */
struct seen {
	float *rows;
	int first, next;
	bool out_of_order;
};

static void keep_row(void *user, int pos, const float *logits)
{
	struct seen *w = user;
	if (w->first < 0)
		w->first = w->next = pos;
	w->out_of_order |= pos != w->next++;
	memcpy(w->rows + (size_t)pos * V, logits, (size_t)V * sizeof *logits);
}

/* A scored sync passes every position's logits on, in forwards of the session's chunk,
 * the same bits as one forward of all the ids; told that the first positions are
 * known, it reuses the cache up to there and passes on the rest, still the same bits. */
static void test_scored(void **state)
{
	(void)state;
	enum { N = 40 };
	struct eng_options eo = {
		.backend = ENG_BACKEND_CPU, .threads = 1, .ctx = CTX, .kv_f32 = true};
	struct eng *e = sess_engine = eng_new(model, &eo, NULL);
	struct sess *s = sess_new(e, model, tok, &(struct sess_options){.chunk = CHUNK});
	assert_non_null(s);
	int32_t ids[N];
	for (int i = 0; i < N; i++)
		ids[i] = 1000 + 37 * i;
	float *want = malloc((size_t)N * V * sizeof *want);
	struct seen w = {malloc((size_t)N * V * sizeof *w.rows), -1, 0, false};
	assert_true(want && w.rows);
	for (int round = 0; round < 2; round++) {
		if (round == 1)
			for (int i = 30; i < N; i++)
				ids[i] = 5000 + i; /* the prompt after: the same first 30 tokens */
		assert_int_equal(eng_truncate(ref, 0), 0);
		assert_int_equal(eng_forward(ref, ids, N, 0, want, true), 0);
		w.first = -1;
		w.out_of_order = false;
		assert_int_equal(sess_sync_scored(s, ids, N, round ? 29 : 0, keep_row, &w), 0);
		assert_false(w.out_of_order);
		assert_int_equal(w.next, N);
		if (round == 0)
			assert_int_equal(w.first, 0);
		else /* reused up to the known positions, a forward's least short of them */
			assert_true(w.first > 0 && w.first <= 29 &&
				    sess_stats(s)->reused == w.first);
		assert_memory_equal(w.rows + (size_t)w.first * V, want + (size_t)w.first * V,
				    (size_t)(N - w.first) * V * sizeof *want);
		assert_memory_equal(sess_logits(s), want + (size_t)(N - 1) * V,
				    (size_t)V * sizeof *want);
		assert_int_equal(sess_n(s), N);
	}
	free(want);
	free(w.rows);
	sess_free(s);
	eng_free(e);
}

static void test_errors(void **state)
{
	(void)state;
	struct sess *s = session(NULL, NULL, NULL);
	struct samp *sp = sampler(1);
	int32_t ids[4] = {1, 2, 3, 4};
	assert_int_equal(sess_generate(s, sp, 4, SESS_SPLIT_NONE, NULL, NULL), -1);
	assert_int_equal(sess_sync(s, ids, 4), 0);
	int32_t bad[3] = {1, 2, 151936};
	assert_int_equal(sess_sync(s, bad, 3), -1);
	assert_non_null(strstr(err_msg(), "151936"));
	bad[2] = -5;
	assert_int_equal(sess_sync(s, bad, 3), -1);
	assert_int_equal(sess_n(s), 4); /* untouched */
	assert_int_equal(sess_sync(s, ids, 0), -1);
	int32_t *many = calloc(CTX + 1, sizeof *many);
	assert_int_equal(sess_sync(s, many, CTX + 1), -1);
	free(many);
	assert_int_equal(sess_generate(s, sp, -1, SESS_SPLIT_NONE, NULL, NULL), -1);
	/* max_new 0 generates nothing; the cache is unchanged */
	assert_int_equal(sess_generate(s, sp, 0, SESS_SPLIT_NONE, NULL, NULL), 0);
	assert_int_equal(sess_stats(s)->stop, SESS_STOP_MAX);
	assert_int_equal(sess_n(s), 4);
	sess_reset(s);
	assert_int_equal(sess_n(s), 0);
	assert_null(sess_logits(s));
	samp_free(sp);
	sess_free(s);
	eng_free(sess_engine);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_five_turns), cmocka_unit_test(test_cancel),
		cmocka_unit_test(test_overflow),   cmocka_unit_test(test_think_split),
		cmocka_unit_test(test_errors),     cmocka_unit_test(test_warm_cold),
		cmocka_unit_test(test_scored),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
