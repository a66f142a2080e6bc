/* train_cpu.c — the CPU training backend: a micro-batch's forward (embedding, the
 * layers, the final norm), the loss fused with the output projection in chunks of
 * rows, the backward in reverse, and the optimizer over the host arrays (gradient
 * scaling, the global norm and clipping, AdamW). The layers are train_layer.c's, the
 * element-wise steps train_ops.c's, the products gemm.c's. */
#include <math.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "engine/cpu/gemm_tiles.h"
#include "engine/cpu/train_cpu.h"
#include "engine/rope.h"
#include "src/base/err.h"
#include "src/base/hugemem.h"
#include "src/base/units.h"

/* ---- sizes ------------------------------------------------------------------------------ */

/* Floats of one layer's saved activations (with the attention probabilities, or not). */
static size_t act_floats(const struct eng_config *c, int B, int T, bool probs)
{
	size_t N = (size_t)B * T, D = c->hidden_size, F = c->intermediate_size;
	size_t q = (size_t)c->num_heads * c->head_dim, kv = (size_t)c->num_kv_heads * c->head_dim;
	return N * (2 + 3 * D + 3 * q + 3 * kv + c->num_heads + c->num_kv_heads + 3 * F) +
	       (probs ? (size_t)B * c->num_heads * T * T : 0);
}

/* Rows of the loss's logits at a time: at most 64M floats (256 MB), at least 16 rows. */
static int loss_chunk(const struct eng_config *c, int N)
{
	long ch = (64L << 20) / c->vocab_size;
	if (ch < 16)
		ch = 16;
	if (ch > GEMM_MC) /* whole row blocks: each packs the output layer's weights again */
		ch -= ch % GEMM_MC;
	return ch < N ? (int)ch : N;
}

static int plan_threads(const struct eng_train_options *o)
{
	long n = o->threads > 0 ? o->threads : sysconf(_SC_NPROCESSORS_ONLN);
	return n > 0 ? (int)n : 1;
}

/* The one arena cpu_alloc cuts the state from, in floats: the residual stream, the
 * activations the backward reads and their gradients (acts), then the scratch: per
 * thread a query block's attention probabilities (when made again) and their gradient, the
 * norms' partial gradients, a chunk of the loss's logits and its sums (doubles), the
 * RoPE tables and a margin. The plan reports these figures, so that what it checks
 * against the machine's memory is what is allocated. */
struct arena {
	size_t acts, scratch;
	size_t qblock; /* of the scratch: the threads' slices of a query block's
			 * probabilities (each of them and of their gradient) */
	size_t dwpart; /* of the scratch: the norms' partial gradients */
};

/* Floats of one layer's LoRA activations: (N, rank) for each adapted matrix. */
static size_t lora_floats(const struct eng_train_options *o, size_t N)
{
	size_t n = 0;
	for (int k = 0; o->lora_rank > 0 && k < ENG_LORA_TARGETS; k++)
		n += (o->lora_targets >> k & 1) ? N * (size_t)o->lora_rank : 0;
	return n;
}

static struct arena arena_floats(const struct eng_config *c, const struct eng_train_options *o,
				 int threads, bool keep_probs)
{
	int B = o->batch, T = o->ctx;
	bool recompute = o->recompute;
	size_t N = (size_t)B * T, D = c->hidden_size, F = c->intermediate_size, hd = c->head_dim;
	size_t q = (size_t)c->num_heads * hd, kv = (size_t)c->num_kv_heads * hd;
	size_t layers = recompute ? 1 : (size_t)c->num_layers;
	size_t blocks = (N + TR_BLOCK - 1) / TR_BLOCK, wide = D > 2 * hd ? D : 2 * hd;
	size_t chunk = (size_t)loss_chunk(c, (int)N);
	struct arena r;
	r.qblock = (size_t)threads * tr_qblock_rows(T) * T, r.dwpart = blocks * wide;
	r.acts = (size_t)(c->num_layers + 1) * N * D +
		 layers * (act_floats(c, B, T, keep_probs) + lora_floats(o, N)) + N * (D + 1) +
		 N * (2 * D + 2 * F + 2 * q + 2 * kv) + (size_t)N * o->lora_rank;
	r.scratch = (keep_probs ? 1 : 2) * r.qblock + r.dwpart + chunk * c->vocab_size + 2 * chunk +
		    (size_t)T * hd + 64 * 64;
	return r;
}

static int cpu_plan(const struct eng_config *c, const struct eng_train_options *o,
		    struct eng_train_plan *p)
{
	size_t N = (size_t)o->batch * o->ctx, D = c->hidden_size, F = c->intermediate_size;
	struct arena ar = arena_floats(c, o, plan_threads(o), !o->recompute_probs);
	p->activations = ar.acts * sizeof(float);
	/* gemm.c's packed panels, its operands packed whole and its bf16 copy of the
	   largest left operand */
	size_t chunk = (size_t)loss_chunk(c, (int)N), widest = N * (F > D ? F : D);
	if ((size_t)c->vocab_size * chunk > widest)
		widest = (size_t)c->vocab_size * chunk;
	p->scratch = ar.scratch * sizeof(float) + (size_t)plan_threads(o) * gemm_thread_scratch() +
		     gemm_shared_scratch() + widest / 2 * sizeof(uint32_t);
	p->recompute = o->recompute;
	p->recompute_probs = o->recompute_probs;
	return 0;
}

/* ---- state ---------------------------------------------------------------------------------- */

static float *take(struct train_cpu *s, char **cur, size_t n)
{
	float *p = (float *)*cur;
	*cur += (n * sizeof(float) + 63) & ~(size_t)63;
	(void)s;
	return p;
}

static void cpu_free(void *st)
{
	struct train_cpu *s = st;
	if (!s)
		return;
	gemm_free(s->gm);
	cpu_pool_free(s->pool);
	free(s->act);
	huge_free(s->mem, s->mem_bytes);
	free(s);
}

/* Every array of the state, cut from one allocation. */
static int cpu_alloc(struct train_cpu *s)
{
	const struct eng_config *c = s->c;
	size_t N = s->N, D = s->D, F = s->F, q = s->q_dim, kv = s->kv_dim, T = s->T;
	int layers = s->recompute ? 1 : c->num_layers;
	s->chunk = loss_chunk(c, s->N);
	struct arena ar = arena_floats(c, &s->t->o, s->threads, s->keep_probs);
	size_t total = ar.acts + ar.scratch;
	s->act = calloc((size_t)layers, sizeof *s->act);
	char *cur = NULL;
	char size[16];
	/* each array starts on 64 bytes: up to 15 floats of padding for each of a layer's
	   (at most 15 + LoRA's 7) and the others (fewer than 40) */
	s->mem_bytes = (total + 16 * ((size_t)layers * 24 + 40)) * sizeof(float);
	if (!s->act || !(cur = huge_zalloc(s->mem_bytes)))
		return err_set("training: cannot allocate %s of activations and scratch",
			       units_ibytes((double)(total * sizeof(float)), size, sizeof size));
	s->mem = cur;
	s->x = take(s, &cur, (size_t)(c->num_layers + 1) * N * D);
	for (int l = 0; l < layers; l++) {
		struct tr_act *a = &s->act[l];
		a->rstd1 = take(s, &cur, N), a->xn1 = take(s, &cur, N * D);
		a->q_raw = take(s, &cur, N * q), a->k_raw = take(s, &cur, N * kv);
		a->rstd_q = take(s, &cur, N * s->H), a->rstd_k = take(s, &cur, N * s->Hkv);
		a->q = take(s, &cur, N * q), a->k = take(s, &cur, N * kv), a->v = take(s, &cur, N * kv);
		a->p = s->keep_probs ? take(s, &cur, (size_t)s->B * s->H * T * T) : NULL;
		a->att = take(s, &cur, N * q), a->xmid = take(s, &cur, N * D);
		a->rstd2 = take(s, &cur, N), a->xn2 = take(s, &cur, N * D);
		a->gate = take(s, &cur, N * F), a->up = take(s, &cur, N * F), a->h = take(s, &cur, N * F);
		for (int k = 0; s->t->lora_a && k < ENG_LORA_TARGETS; k++)
			if (s->t->o.lora_targets >> k & 1)
				a->lora_u[train_lora_role((enum eng_lora_target)k)] =
					take(s, &cur, N * (size_t)s->t->o.lora_rank);
	}
	s->rstd_f = take(s, &cur, N), s->xf = take(s, &cur, N * D);
	s->dx = take(s, &cur, N * D), s->dxn = take(s, &cur, N * D);
	s->dh = take(s, &cur, N * F), s->dup = take(s, &cur, N * F);
	s->datt = take(s, &cur, N * q), s->dq = take(s, &cur, N * q);
	s->dk = take(s, &cur, N * kv), s->dv = take(s, &cur, N * kv);
	s->lora_du = take(s, &cur, N * (size_t)s->t->o.lora_rank);
	s->probs = s->keep_probs ? NULL : take(s, &cur, ar.qblock);
	s->dp = take(s, &cur, ar.qblock);
	s->dwpart = take(s, &cur, ar.dwpart);
	s->logits = take(s, &cur, (size_t)s->chunk * s->V);
	s->loss_part = (double *)take(s, &cur, 2 * (size_t)s->chunk);
	s->cos = take(s, &cur, T * (size_t)s->hd / 2), s->sin = take(s, &cur, T * (size_t)s->hd / 2);
	rope_table(c, s->T, s->cos, s->sin);
	return 0;
}

static void *cpu_init(struct eng_trainer *t)
{
	struct train_cpu *s = calloc(1, sizeof *s);
	if (!s) {
		err_set("training: out of memory");
		return NULL;
	}
	const struct eng_config *c = &t->c;
	s->t = t, s->c = c;
	s->B = t->o.batch, s->T = t->o.ctx, s->N = s->B * s->T;
	s->D = c->hidden_size, s->F = c->intermediate_size, s->H = c->num_heads;
	s->Hkv = c->num_kv_heads, s->hd = c->head_dim, s->V = c->vocab_size;
	s->q_dim = s->H * s->hd, s->kv_dim = s->Hkv * s->hd;
	s->eps = (float)c->rms_norm_eps;
	s->recompute = t->o.recompute;
	s->keep_probs = !t->o.recompute_probs;
	enum cpu_isa isa = cpu_isa_best();
	if (t->o.cpu_isa && (!cpu_isa_from_name(t->o.cpu_isa, &isa) || !cpu_isa_supported(isa)))
		isa = cpu_isa_best(); /* the command line refused it already */
	if (!(s->pool = cpu_pool_new(t->o.threads)) || !(s->gm = gemm_new(isa, s->pool))) {
		cpu_free(s);
		return NULL;
	}
	s->threads = cpu_pool_size(s->pool);
	s->k = cpu_kernels_get(isa);
	s->prec = t->o.exact || !gemm_has_bf16(s->gm) ? GEMM_F32 : GEMM_BF16;
	/* attention's left operands: a query block of probabilities, or of q, as they are or
	   read transposed */
	int qb = (int)tr_qblock_rows(s->T), wide = qb > s->hd ? qb : s->hd;
	if (cpu_alloc(s) || gemm_reserve_serial(s->gm, s->T, wide) ||
	    gemm_reserve_serial(s->gm, qb, s->T)) {
		cpu_free(s);
		return NULL;
	}
	return s;
}

/* ---- the loss ---------------------------------------------------------------------------- */

struct ce_task {
	struct train_cpu *s;
	const int32_t *targets; /* the chunk's */
	int rows;
	bool backward;
	atomic_int next;
};

/* Row r of the chunk: its cross-entropy (log-sum-exp with the maximum subtracted, in
 * the kernels' softmax) into loss_part[r], and with backward the row becomes the
 * gradient of the summed loss, softmax - onehot (zero for a row not scored). */
static void ce_row(struct ce_task *ct, int r)
{
	struct train_cpu *s = ct->s;
	float *z = s->logits + (size_t)r * s->V;
	int y = ct->targets[r];
	if (y < 0) {
		s->loss_part[r] = 0;
		if (ct->backward)
			memset(z, 0, (size_t)s->V * sizeof *z);
		return;
	}
	float zy = z[y];
	double lse; /* log sum exp(z) = max + log(sum exp(z - max)), from the softmax */
	s->k->softmax(z, s->V, 1.0f, &lse);
	s->loss_part[r] = lse - zy;
	if (ct->backward)
		z[y] -= 1.0f;
}

static void ce_task_fn(void *arg, int tid, int nthreads)
{
	(void)tid;
	(void)nthreads;
	struct ce_task *ct = arg;
	int r;
	while ((r = cpu_claim(&ct->next, ct->rows)) >= 0)
		ce_row(ct, r);
}

/* Logits, loss and (backward) the output projection's gradients, chunk by chunk:
 * d xf lands in s->dxn. */
static void loss_chunks(struct train_cpu *s, const int32_t *targets, bool backward, double *loss,
			int64_t *count)
{
	struct eng_param *lm = (struct eng_param *)train_lm_head(s->t);
	int D = s->D, V = s->V;
	for (int c0 = 0; c0 < s->N; c0 += s->chunk) {
		int rows = s->N - c0 < s->chunk ? s->N - c0 : s->chunk;
		const float *xf = s->xf + (size_t)c0 * D;
		struct gemm lg = {rows, V, D, s->logits, V, false, xf, D, false, lm->w, D, true, GEMM_FULL};
		gemm_run(s->gm, &lg, s->prec);
		struct ce_task ct = {s, targets + c0, rows, backward, 0};
		cpu_pool_run(s->pool, ce_task_fn, &ct);
		for (int r = 0; r < rows; r++)
			if (targets[c0 + r] >= 0) {
				*loss += s->loss_part[r];
				(*count)++;
			}
		if (!backward)
			continue;
		struct gemm dw = {V, D, rows, lm->g, D, true, s->logits, V, true, xf, D, false, GEMM_FULL};
		if (!lm->frozen)
			gemm_run(s->gm, &dw, s->prec);
		struct gemm dxf = {rows, D, V, s->dxn + (size_t)c0 * D, D, false, s->logits, V, false,
				   lm->w, D, false, GEMM_FULL};
		gemm_run(s->gm, &dxf, s->prec);
	}
}

/* ---- a micro-batch --------------------------------------------------------------------------- */

static int cpu_micro(void *st, const int32_t *inputs, const int32_t *targets, const int32_t *pos,
		     bool backward, double *loss_sum, int64_t *count)
{
	struct train_cpu *s = st;
	s->pos = pos;
	int N = s->N, D = s->D, L = s->c->num_layers;
	for (int i = 0; i < N; i++) {
		if (inputs[i] < 0 || inputs[i] >= s->V)
			return err_set("training: input id %d at %d is not in the vocabulary (%d)",
				       inputs[i], i, s->V);
		if (targets[i] < -1 || targets[i] >= s->V)
			return err_set("training: target id %d at %d is not in the vocabulary (%d)",
				       targets[i], i, s->V);
	}
	struct eng_param *E = &s->t->params[0], *fn = &s->t->params[train_final(s->t)];
	for (int i = 0; i < N; i++)
		memcpy(s->x + (size_t)i * D, E->w + (size_t)inputs[i] * D, (size_t)D * sizeof(float));
	for (int l = 0; l < L; l++)
		tr_layer_forward(s, l, &s->act[s->recompute ? 0 : l]);
	const float *xl = s->x + (size_t)L * N * D;
	tr_rmsnorm_fwd(s, s->xf, s->rstd_f, xl, fn->w, N, D);
	double loss = 0;
	int64_t n = 0;
	loss_chunks(s, targets, backward, &loss, &n);
	*loss_sum += loss;
	*count += n;
	if (!backward)
		return 0;
	tr_rmsnorm_bwd(s, s->dx, fn->g, s->dxn, xl, s->rstd_f, fn->w, N, D, false);
	for (int l = L - 1; l >= 0; l--) {
		struct tr_act *a = &s->act[s->recompute ? 0 : l];
		if (s->recompute)
			tr_layer_forward(s, l, a);
		tr_layer_backward(s, l, a);
	}
	for (int i = 0; !E->frozen && i < N; i++) { /* the embedding's rows, in token order */
		float *g = E->g + (size_t)inputs[i] * D;
		const float *d = s->dx + (size_t)i * D;
		for (int k = 0; k < D; k++)
			g[k] += d[k];
	}
	return 0;
}

/* ---- the optimizer over the host arrays -------------------------------------------------------- */

#define OPT_CHUNK 65536 /* elements of an optimizer work item */

struct opt_task {
	struct train_cpu *s;
	int kind; /* 0 zero, 1 scale and square, 2 scale, 3 AdamW */
	double scale;
	double *sq; /* (items) kind 1 */
	const struct eng_adamw *h;
	double bc1, bc2;
	int items;
	atomic_int next;
};

static void opt_run_item(struct opt_task *o, int it)
{
	int64_t k0 = 0, k1 = 0;
	struct eng_param *p = train_piece(o->s->t, OPT_CHUNK, it, &k0, &k1);
	if (o->kind == 0) {
		memset(p->g + k0, 0, (size_t)(k1 - k0) * sizeof(float));
	} else if (o->kind == 1 || o->kind == 2) {
		double sq = o->s->k->scale_sq(p->g + k0, (size_t)(k1 - k0), (float)o->scale);
		if (o->kind == 1)
			o->sq[it] = sq;
	} else {
		const struct eng_adamw *h = o->h;
		struct cpu_adamw a = {
			.decay = p->decay ? (float)(1.0 - h->lr * h->weight_decay) : 1.0f,
			.b1 = (float)h->beta1,
			.b2 = (float)h->beta2,
			.c1 = (float)(1.0 - h->beta1),
			.c2 = (float)(1.0 - h->beta2),
			.step = (float)(h->lr / o->bc1),
			.rbc2 = (float)(1.0 / sqrt(o->bc2)),
			.eps = (float)h->eps,
		};
		o->s->k->adamw(p->w + k0, p->m + k0, p->v + k0, p->g + k0, (size_t)(k1 - k0), &a);
	}
}

static void opt_task_fn(void *arg, int tid, int nthreads)
{
	(void)tid;
	(void)nthreads;
	struct opt_task *o = arg;
	int it;
	while ((it = cpu_claim(&o->next, o->items)) >= 0)
		opt_run_item(o, it);
}

static void opt_run(struct train_cpu *s, struct opt_task *o)
{
	o->s = s;
	o->items = train_pieces(s->t, OPT_CHUNK);
	atomic_init(&o->next, 0);
	cpu_pool_run(s->pool, opt_task_fn, o);
}

static int cpu_zero_grad(void *st)
{
	struct opt_task o = {.kind = 0};
	opt_run(st, &o);
	return 0;
}

static int cpu_finish_grads(void *st, double scale, double clip, double *norm)
{
	struct train_cpu *s = st;
	int items = train_pieces(s->t, OPT_CHUNK);
	double *sq = calloc((size_t)items, sizeof *sq);
	if (!sq)
		return err_set("training: out of memory");
	struct opt_task o = {.kind = 1, .scale = scale, .sq = sq};
	opt_run(s, &o);
	double total = 0;
	for (int i = 0; i < items; i++) /* in item order: the same sum every run */
		total += sq[i];
	free(sq);
	*norm = sqrt(total);
	if (clip > 0 && isfinite(*norm) && *norm > clip) {
		struct opt_task c = {.kind = 2, .scale = clip / (*norm + 1e-6)};
		opt_run(s, &c);
	}
	return 0;
}

static int cpu_adamw(void *st, const struct eng_adamw *h, int64_t step)
{
	struct opt_task o = {.kind = 3, .h = h};
	o.bc1 = eng_adamw_bias(h->beta1, step);
	o.bc2 = eng_adamw_bias(h->beta2, step);
	opt_run(st, &o);
	return 0;
}

/* ---- the machine's rate -------------------------------------------------------------------------- */

/* The best of up to ten products of N x M x K on every thread in the trainer's
 * precision, after one that warms up; it stops early once two or more have taken
 * BUDGET seconds. */
static double product_rate(struct train_cpu *s, int n, int m, int k, double budget)
{
	size_t bytes = ((size_t)n * k + (size_t)m * k + (size_t)n * m) * sizeof(float);
	float *a = huge_zalloc(bytes); /* as the step's own arrays */
	if (!a)
		return 0;
	float *b = a + (size_t)n * k, *c = b + (size_t)m * k;
	for (size_t i = 0; i < (size_t)n * k + (size_t)m * k; i++)
		a[i] = (float)(i % 13) * 0.01f;
	struct gemm g = {n, m, k, c, m, false, a, k, false, b, k, true, GEMM_FULL};
	double best = 0, timed = 0;
	for (int r = 0; r < 11 && !(r > 2 && timed > budget); r++) {
		struct timespec t0, t1;
		clock_gettime(CLOCK_MONOTONIC, &t0);
		gemm_run(s->gm, &g, s->prec);
		clock_gettime(CLOCK_MONOTONIC, &t1);
		double sec = (t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) * 1e-9;
		double rate = 2.0 * n * m * k / sec / 1e9;
		best = r > 0 && rate > best ? rate : best; /* the first warms up */
		timed += r > 0 ? sec : 0;
	}
	huge_free(a, bytes);
	return best;
}

/* The rate of products of 2048 x 1024 x 1024: the rate the products reach when their
 * shape does not hold them back (this model's own shapes may be too small to), the
 * ceiling the share is against. The 512 x 512 x 1024 products run first: too few
 * blocks of rows to keep every thread busy, they read low (fp32 on two AVX2 cores:
 * 10-20% under the large ones), so they are the answer only where a large product
 * would take over 80 ms (a sanitizer build), so that every `train` starts at once. */
static double cpu_peak(void *st)
{
	struct train_cpu *s = st;
	double quick = product_rate(s, 512, 512, 1024, 0.05);
	if (quick <= 0 || 2.0 * 2048 * 1024 * 1024 / (quick * 1e9) > 0.08)
		return quick;
	double full = product_rate(s, 2048, 1024, 1024, 0.2);
	return full > quick ? full : quick;
}

static bool cpu_exact(void *st)
{
	return ((struct train_cpu *)st)->prec == GEMM_F32;
}

static const char *cpu_kernel_set(void *st)
{
	return ((struct train_cpu *)st)->k->name;
}

static const struct train_ops cpu_ops = {
	.name = "cpu",
	.plan = cpu_plan,
	.init = cpu_init,
	.free = cpu_free,
	.micro = cpu_micro,
	.zero_grad = cpu_zero_grad,
	.finish_grads = cpu_finish_grads,
	.adamw = cpu_adamw,
	.peak_gflops = cpu_peak,
	.exact = cpu_exact,
	.kernels = cpu_kernel_set,
};

const struct train_ops *train_cpu_ops(void)
{
	return &cpu_ops;
}
