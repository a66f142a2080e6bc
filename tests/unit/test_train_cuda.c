/* test_train_cuda.c — the CUDA trainer against the CPU's (engine/train.h), on a small
 * random model with grouped-query attention, both tied and untied: the same loss and
 * every tensor's gradient on the exact path (fp32 products on both), then three AdamW
 * steps with clipping and decay active (losses, gradient norms, weights), and the fast
 * path (bf16 products) close to the exact one, with attention materialised and in
 * tiles; and rows of packed documents on the exact path. SKIP (77) without a GPU or
 * without the CUDA module; the module's path comes from QWENCHAT_CUDA_MODULE or the
 * first argument (tests/cuda.sh passes it). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/train.h"
#include "src/base/err.h"

static int failures;

#define CHECK(cond, ...)                               \
	do {                                           \
		if (!(cond)) {                         \
			printf("not ok: " __VA_ARGS__); \
			printf("\n");                  \
			failures++;                    \
		}                                      \
	} while (0)

static struct eng_config shape(bool tie)
{
	struct eng_config c = {0};
	c.vocab_size = 1000, c.hidden_size = 128, c.intermediate_size = 320, c.num_layers = 2;
	c.num_heads = 8, c.num_kv_heads = 2, c.head_dim = 32, c.rms_norm_eps = 1e-6;
	c.rope_theta = 1e6, c.max_position_embeddings = 4096, c.tie_word_embeddings = tie;
	c.rope_factor = 1, c.dtype = ENG_F32, c.bos_token_id = -1, c.eos_token_id = -1;
	strcpy(c.rope_type, "default");
	return c;
}

static void batch(int32_t *in, int32_t *tgt, int n, int V, uint64_t s)
{
	for (int i = 0; i < n; i++) {
		s = s * 6364136223846793005ull + 1442695040888963407ull;
		in[i] = (int32_t)((s >> 33) % V);
		tgt[i] = i % 7 == 5 ? -1 : (int32_t)((s >> 13) % V);
	}
}

/* ||a - b|| / ||b|| over n floats. */
static double rel(const float *a, const float *b, int64_t n)
{
	double d = 0, r = 0;
	for (int64_t i = 0; i < n; i++) {
		d += ((double)a[i] - b[i]) * ((double)a[i] - b[i]);
		r += (double)b[i] * b[i];
	}
	return sqrt(d / (r > 0 ? r : 1));
}

static struct eng_trainer *make(const struct eng_config *c, enum eng_backend_kind k, bool exact,
				const char *module, int ctx, bool tiled)
{
	struct eng_train_options o = {.backend = k,
				      .threads = 2,
				      .batch = 2,
				      .ctx = ctx,
				      .exact = exact,
				      .cuda_module = module,
				      .cuda_tiled_attention = tiled};
	struct eng_trainer *t = eng_trainer_new(c, &o, NULL);
	if (!t)
		return NULL;
	eng_trainer_init_normal(t, 9, 0.05);
	return t;
}

/* Whether the three trainers of a check were made; if not, a failure (and those that
 * were made are freed). */
static bool made(const char *check, struct eng_trainer *a, struct eng_trainer *b,
		 struct eng_trainer *c)
{
	if (a && b && c)
		return true;
	printf("not ok: trainers for the %s check: %s\n", check, err_msg());
	failures++;
	eng_trainer_free(a), eng_trainer_free(b), eng_trainer_free(c);
	return false;
}

/* Step s: two micro-batches, the mean loss, clipping at a quarter of the first norm. */
static void step(struct eng_trainer *t, int s, double *loss, double *norm)
{
	int32_t in[96], tgt[96];
	double sum = 0;
	int64_t count = 0;
	eng_trainer_zero_grad(t);
	for (int a = 0; a < 2; a++) {
		batch(in, tgt, 96, 1000, 100 * s + a);
		if (eng_trainer_micro(t, in, tgt, NULL, &sum, &count))
			printf("micro: %s\n", err_msg());
	}
	*loss = sum / count;
	eng_trainer_finish_grads(t, 1.0 / count, 0.5, norm);
	struct eng_adamw h = {3e-3 * (s + 1) / 3, 0.9, 0.95, 1e-8, 0.1};
	eng_trainer_adamw(t, &h, s + 1);
}

/* Every gradient of gpu against cpu's (downloaded), each within 1e-4 relative; the
 * worst. `what` names the check in a failure. */
static double gradients(struct eng_trainer *gpu, struct eng_trainer *cpu, const char *what)
{
	double worst = 0;
	for (int i = 0; i < eng_trainer_nparams(cpu); i++) {
		struct eng_param *a = eng_trainer_param(gpu, i), *b = eng_trainer_param(cpu, i);
		double r = rel(a->g, b->g, b->n);
		worst = r > worst ? r : worst;
		CHECK(r <= 1e-4, "%s: %s gradient: cuda vs cpu %.3g", what, b->name, r);
	}
	return worst;
}

/* The exact CUDA step against the CPU's on shape c with rows of ctx tokens (at most
 * 48; what names it in the output), and the fast one's gradients close to the exact
 * ones. */
static void compare(struct eng_config c, const char *what, const char *module, int ctx)
{
	struct eng_trainer *cpu = make(&c, ENG_BACKEND_CPU, true, NULL, ctx, false);
	struct eng_trainer *gpu = make(&c, ENG_BACKEND_CUDA, true, module, ctx, false);
	struct eng_trainer *fast = make(&c, ENG_BACKEND_CUDA, false, module, ctx, false);
	if (!made("compare", cpu, gpu, fast))
		return;
	/* one micro-batch's gradients */
	int32_t in[96], tgt[96];
	double lc = 0, lg = 0, lf = 0;
	int64_t nc = 0, ng = 0, nf = 0;
	batch(in, tgt, 96, 1000, 1);
	eng_trainer_zero_grad(cpu), eng_trainer_zero_grad(gpu), eng_trainer_zero_grad(fast);
	eng_trainer_micro(cpu, in, tgt, NULL, &lc, &nc);
	eng_trainer_micro(gpu, in, tgt, NULL, &lg, &ng);
	eng_trainer_micro(fast, in, tgt, NULL, &lf, &nf);
	eng_trainer_download(gpu), eng_trainer_download(fast);
	CHECK(nc == ng && fabs(lc - lg) <= 1e-5 * fabs(lc), "%s: loss cuda %.9g cpu %.9g", what, lg,
	      lc);
	CHECK(fabs(lf - lc) <= 2e-2 * fabs(lc), "%s: bf16 loss %.6g, exact %.6g", what, lf, lc);
	double worst = gradients(gpu, cpu, what), worst_f = 0;
	for (int i = 0; i < eng_trainer_nparams(cpu); i++) {
		struct eng_param *a = eng_trainer_param(fast, i), *b = eng_trainer_param(cpu, i);
		double r = rel(a->g, b->g, b->n);
		worst_f = r > worst_f ? r : worst_f;
		CHECK(r <= 3e-2, "%s: %s gradient: bf16 products vs exact %.3g", what, b->name, r);
	}
	printf("ok: %s: loss cuda %.9g cpu %.9g, worst gradient %.2e; bf16 products: loss %.6g, "
	       "worst gradient vs exact %.2e\n",
	       what, lg, lc, worst, lf, worst_f);
	/* three steps */
	eng_trainer_download(cpu);
	int np = eng_trainer_nparams(cpu);
	float **w0 = calloc(np, sizeof *w0);
	for (int i = 0; i < np; i++) {
		struct eng_param *p = eng_trainer_param(cpu, i);
		w0[i] = malloc(p->n * sizeof(float));
		memcpy(w0[i], p->w, p->n * sizeof(float));
	}
	eng_trainer_init_normal(cpu, 9, 0.05), eng_trainer_init_normal(gpu, 9, 0.05);
	for (int s = 0; s < 3; s++) {
		double a, na, b, nb;
		step(cpu, s, &a, &na);
		step(gpu, s, &b, &nb);
		CHECK(fabs(a - b) <= 1e-5 * fabs(a) && fabs(na - nb) <= 1e-5 * na,
		      "step %d: loss %.9g / %.9g, norm %.9g / %.9g", s, b, a, nb, na);
		printf("ok: step %d: loss cuda %.9g cpu %.9g, norm cuda %.9g cpu %.9g\n", s, b, a, nb, na);
	}
	eng_trainer_download(gpu);
	for (int i = 0; i < np; i++) {
		struct eng_param *a = eng_trainer_param(gpu, i), *b = eng_trainer_param(cpu, i);
		double d = 0, u = 0;
		for (int64_t k = 0; k < b->n; k++) {
			d += ((double)a->w[k] - b->w[k]) * ((double)a->w[k] - b->w[k]);
			u += ((double)b->w[k] - w0[i][k]) * ((double)b->w[k] - w0[i][k]);
		}
		CHECK(sqrt(d) <= 2e-3 * sqrt(u) + 1e-12, "%s after 3 steps: |cuda - cpu| / |update| %.3g",
		      b->name, sqrt(d / (u > 0 ? u : 1)));
		free(w0[i]);
	}
	free(w0);
	eng_trainer_free(cpu), eng_trainer_free(gpu), eng_trainer_free(fast);
}

/* One micro-batch of n tokens on t: its loss and, downloaded, its gradients. */
static double grads(struct eng_trainer *t, int n, uint64_t seed)
{
	int32_t *in = malloc(n * sizeof *in), *tgt = malloc(n * sizeof *tgt);
	double sum = 0;
	int64_t count = 0;
	batch(in, tgt, n, 1000, seed);
	eng_trainer_zero_grad(t);
	if (eng_trainer_micro(t, in, tgt, NULL, &sum, &count))
		printf("micro: %s\n", err_msg());
	eng_trainer_download(t);
	free(in);
	free(tgt);
	return sum / (count ? count : 1);
}

/* Attention in tiles (eng_train_options.cuda_tiled_attention) on rows of 150 tokens, three
 * tiles of 64 with a partial one, head_dim 64 and 2 query heads a kv head: the loss
 * and every gradient as close to the exact CPU's as the materialised fast path's
 * (bf16 products), and bit for bit the same on a second run (no atomics). */
static void tiled(const char *module)
{
	struct eng_config c = shape(false);
	c.num_heads = 4, c.num_kv_heads = 2, c.head_dim = 64;
	struct eng_trainer *cpu = make(&c, ENG_BACKEND_CPU, true, NULL, 150, false);
	struct eng_trainer *mat = make(&c, ENG_BACKEND_CUDA, false, module, 150, false);
	struct eng_trainer *til = make(&c, ENG_BACKEND_CUDA, false, module, 150, true);
	if (!made("tiled", cpu, mat, til))
		return;
	double lc = grads(cpu, 300, 7), lm = grads(mat, 300, 7), lt = grads(til, 300, 7);
	CHECK(fabs(lt - lc) <= 1e-2 * fabs(lc), "tiled loss %.6g, exact %.6g", lt, lc);
	int np = eng_trainer_nparams(cpu);
	float **g1 = calloc(np, sizeof *g1);
	double worst_m = 0, worst_t = 0;
	for (int i = 0; i < np; i++) {
		struct eng_param *a = eng_trainer_param(til, i), *m = eng_trainer_param(mat, i),
				 *b = eng_trainer_param(cpu, i);
		double rt = rel(a->g, b->g, b->n), rm = rel(m->g, b->g, b->n);
		worst_t = rt > worst_t ? rt : worst_t, worst_m = rm > worst_m ? rm : worst_m;
		CHECK(rt <= 3e-2, "%s gradient: tiled vs exact %.3g (materialised %.3g)", b->name, rt, rm);
		g1[i] = malloc(a->n * sizeof(float));
		memcpy(g1[i], a->g, a->n * sizeof(float));
	}
	grads(til, 300, 7);
	int same = 1;
	for (int i = 0; i < np; i++) {
		struct eng_param *a = eng_trainer_param(til, i);
		same &= !memcmp(g1[i], a->g, a->n * sizeof(float));
		free(g1[i]);
	}
	free(g1);
	CHECK(same, "tiled attention: a second run gave other gradients");
	printf("ok: tiled attention: loss %.9g (materialised %.9g, exact %.9g), worst gradient vs "
	       "exact %.2e (materialised %.2e), repeats bit for bit: %s\n",
	       lt, lm, lc, worst_t, worst_m, same ? "yes" : "no");
	eng_trainer_free(cpu), eng_trainer_free(mat), eng_trainer_free(til);
}

/* Rows of several documents (positions restarting at 0): the exact CUDA step equals
 * the CPU's, loss and every gradient; with the tiled attention asked for, such rows
 * take the materialised one: the same bits as a trainer without it. */
static void packed(const char *module)
{
	struct eng_config c = shape(false);
	struct eng_trainer *cpu = make(&c, ENG_BACKEND_CPU, true, NULL, 48, false);
	struct eng_trainer *gpu = make(&c, ENG_BACKEND_CUDA, true, module, 48, false);
	struct eng_trainer *til = make(&c, ENG_BACKEND_CUDA, false, module, 48, true);
	struct eng_trainer *mat = make(&c, ENG_BACKEND_CUDA, false, module, 48, false);
	if (!made("packed", cpu, gpu, til)) {
		eng_trainer_free(mat);
		return;
	}
	if (!made("packed", mat, mat, mat)) {
		eng_trainer_free(cpu), eng_trainer_free(gpu), eng_trainer_free(til);
		return;
	}
	static const int starts[] = {0, 20, 48, 58, 73, 90}; /* row 0: 20 + 28; row 1: 10, 15, 17, 6 */
	int32_t in[96], tgt[96], pos[96];
	batch(in, tgt, 96, 1000, 3);
	for (int i = 0, d = 0; i < 96; i++) {
		while (d + 1 < 6 && i >= starts[d + 1])
			d++;
		pos[i] = i - starts[d];
	}
	double lc = 0, lg = 0, lt = 0;
	int64_t nc = 0, ng = 0, nt = 0;
	eng_trainer_zero_grad(cpu), eng_trainer_zero_grad(gpu), eng_trainer_zero_grad(til);
	int rc = eng_trainer_micro(cpu, in, tgt, pos, &lc, &nc);
	rc |= eng_trainer_micro(gpu, in, tgt, pos, &lg, &ng);
	eng_trainer_download(gpu);
	CHECK(!rc && nc == ng && fabs(lc - lg) <= 1e-5 * fabs(lc), "packed: loss cuda %.9g cpu %.9g",
	      lg, lc);
	double worst = gradients(gpu, cpu, "packed");
	double lm = 0;
	int64_t nm = 0;
	eng_trainer_zero_grad(mat);
	rc = eng_trainer_micro(til, in, tgt, pos, &lt, &nt);
	rc |= eng_trainer_micro(mat, in, tgt, pos, &lm, &nm);
	eng_trainer_download(til), eng_trainer_download(mat);
	bool same = !rc && lt == lm && nt == nm;
	for (int i = 0; same && i < eng_trainer_nparams(mat); i++) {
		struct eng_param *a = eng_trainer_param(til, i), *b = eng_trainer_param(mat, i);
		same = !memcmp(a->g, b->g, (size_t)b->n * sizeof *b->g);
	}
	CHECK(same,
	      "packed rows with the tiled attention asked for: loss %.9g, materialised "
	      "%.9g, or the gradients differ (%s)",
	      lt, lm, rc ? err_msg() : "no error");
	printf("ok: packed rows: loss cuda %.9g cpu %.9g, worst gradient %.2e; with tiles asked "
	       "for, the materialised attention's bits\n",
	       lg, lc, worst);
	eng_trainer_free(cpu), eng_trainer_free(gpu), eng_trainer_free(til), eng_trainer_free(mat);
}

int main(int argc, char **argv)
{
	const char *module = getenv("QWENCHAT_CUDA_MODULE");
	if (argc > 1)
		module = argv[1];
	struct eng_config c = shape(true);
	struct eng_train_options o = {.backend = ENG_BACKEND_CUDA,
				      .threads = 1,
				      .batch = 1,
				      .ctx = 8,
				      .exact = true,
				      .cuda_module = module};
	struct eng_trainer *probe = eng_trainer_new(&c, &o, NULL);
	if (!probe) {
		printf("SKIP: no CUDA trainer: %s\n", err_msg());
		return 77;
	}
	eng_trainer_free(probe);
	compare(shape(true), "tied", module, 48);
	compare(shape(false), "untied", module, 48);
	/* sizes that are not multiples of 4: the kernels' one-at-a-time paths */
	c = shape(false);
	c.hidden_size = 42, c.intermediate_size = 70, c.num_heads = 4, c.head_dim = 16;
	compare(c, "hidden 42", module, 48);
	/* an odd row length (the attention products' rows of T scores misaligned), and a
	 * head_dim that is no multiple of 8 (the bf16 attention keeps fp32 operands) */
	compare(shape(false), "ctx 47", module, 47);
	c = shape(false);
	c.num_heads = 4, c.num_kv_heads = 2, c.head_dim = 12;
	compare(c, "head_dim 12", module, 48);
	tiled(module);
	packed(module);
	printf("%d failures\n", failures);
	return failures ? 1 : 0;
}
