/* train.c — the trainer: its parameters (names, shapes, the fp32 arrays), their
 * initialisation from a seed or from a model, and the calls handed to the backend
 * that computes (train_backend.h). */
#include "engine/train.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/cpu/kernels.h"
#include "engine/cpu/pool.h"
#include "engine/quant.h"
#include "engine/safetensors.h"
#include "engine/backend.h"
#include "engine/train_backend.h"
#include "src/base/err.h"
#include "src/base/hugemem.h"
#include "src/base/units.h"

/* ---- the parameters ----------------------------------------------------------------- */

static const char *const layer_names[TR_PER_LAYER] = {
	"input_layernorm.weight",        "self_attn.q_proj.weight", "self_attn.k_proj.weight",
	"self_attn.v_proj.weight",       "self_attn.o_proj.weight", "self_attn.q_norm.weight",
	"self_attn.k_norm.weight",       "post_attention_layernorm.weight",
	"mlp.gate_proj.weight",          "mlp.up_proj.weight",      "mlp.down_proj.weight",
};

/* The shape of a layer's parameter and its dimensions: 1 for the norms (s[1] = 1), 2 for
 * the matrices, whose s[1] may be 1 too (down_proj of --intermediate-size 1). */
static int layer_shape(const struct eng_config *c, enum train_role r, int64_t s[2])
{
	int64_t D = c->hidden_size, F = c->intermediate_size, hd = c->head_dim;
	int64_t q = (int64_t)c->num_heads * hd, kv = (int64_t)c->num_kv_heads * hd;
	switch (r) {
	case TR_IN_NORM:
	case TR_POST_NORM: s[0] = D, s[1] = 1; return 1;
	case TR_Q_NORM:
	case TR_K_NORM: s[0] = hd, s[1] = 1; return 1;
	case TR_WQ: s[0] = q, s[1] = D; break;
	case TR_WK:
	case TR_WV: s[0] = kv, s[1] = D; break;
	case TR_WO: s[0] = D, s[1] = q; break;
	case TR_GATE:
	case TR_UP: s[0] = F, s[1] = D; break;
	default: s[0] = D, s[1] = F; break; /* TR_DOWN */
	}
	return 2;
}

static int count_params(const struct eng_config *c)
{
	return 2 + c->num_layers * TR_PER_LAYER + (c->tie_word_embeddings ? 0 : 1);
}

static int count_targets(unsigned targets)
{
	int n = 0;
	for (int k = 0; k < ENG_LORA_TARGETS; k++)
		n += (int)(targets >> k & 1);
	return n;
}

const char *eng_lora_target_name(enum eng_lora_target t)
{
	static const char *const names[ENG_LORA_TARGETS] = {
		"q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"};
	return (unsigned)t < ENG_LORA_TARGETS ? names[t] : "?";
}

/* Room for a parameter's name; PEFT's names of the adapters are the longest
 * ("base_model.model.model.layers.1023.self_attn.gate_proj.lora_A.weight"). */
#define NAME_MAX_LEN 96

/* LoRA's adapters after the model's tensors: per layer and target, A (rank, in) then
 * B (out, rank); the model's own tensors frozen. */
static void make_adapters(struct eng_trainer *t)
{
	int r = t->o.lora_rank, i = t->nbase;
	for (int p = 0; p < t->nbase; p++)
		t->params[p].frozen = true;
	for (int l = 0; l < t->c.num_layers; l++)
		for (int k = 0; k < ENG_LORA_TARGETS; k++) {
			if (!(t->o.lora_targets >> k & 1))
				continue;
			int base = train_index(l, train_lora_role((enum eng_lora_target)k));
			const struct eng_param *W = &t->params[base];
			t->lora_a[base - 1] = i; /* as params[1, train_final) by layer and role */
			for (int ab = 0; ab < 2; ab++, i++) {
				struct eng_param *p = &t->params[i];
				char *name = t->names + (size_t)i * NAME_MAX_LEN;
				int cut = (int)strlen(W->name) - (int)strlen(".weight");
				snprintf(name, NAME_MAX_LEN, "base_model.model.%.*s.lora_%c.weight",
					 cut, W->name, ab ? 'B' : 'A');
				p->name = name;
				p->ndim = 2;
				p->shape[0] = ab ? W->shape[0] : r;
				p->shape[1] = ab ? r : W->shape[1];
				p->n = p->shape[0] * p->shape[1];
				p->decay = true;
				p->adapts = base;
				p->lora_b = ab == 1;
				t->total += (size_t)p->n;
				t->trained += (size_t)p->n;
			}
		}
}

/* Names and shapes of every parameter (no arrays yet). */
static int make_params(struct eng_trainer *t)
{
	const struct eng_config *c = &t->c;
	bool lora = t->o.lora_rank > 0;
	t->nbase = count_params(c);
	t->nparams = t->nbase + (lora ? 2 * c->num_layers * count_targets(t->o.lora_targets) : 0);
	t->params = calloc((size_t)t->nparams, sizeof *t->params);
	t->names = calloc((size_t)t->nparams, NAME_MAX_LEN);
	if (lora)
		t->lora_a = malloc((size_t)c->num_layers * TR_PER_LAYER * sizeof *t->lora_a);
	if (!t->params || !t->names || (lora && !t->lora_a))
		return err_set("training: out of memory");
	for (int i = 0; i < t->nbase; i++) {
		struct eng_param *p = &t->params[i];
		char *name = t->names + (size_t)i * NAME_MAX_LEN;
		p->name = name;
		p->ndim = 2;
		p->adapts = -1;
		if (i == 0) {
			snprintf(name, NAME_MAX_LEN, "model.embed_tokens.weight");
			p->shape[0] = c->vocab_size, p->shape[1] = c->hidden_size;
		} else if (i < train_final(t)) {
			int l = (i - 1) / TR_PER_LAYER, r = (i - 1) % TR_PER_LAYER;
			snprintf(name, NAME_MAX_LEN, "model.layers.%d.%s", l, layer_names[r]);
			p->ndim = layer_shape(c, (enum train_role)r, p->shape);
		} else if (i == train_final(t)) {
			snprintf(name, NAME_MAX_LEN, "model.norm.weight");
			p->shape[0] = c->hidden_size, p->shape[1] = 1, p->ndim = 1;
		} else {
			snprintf(name, NAME_MAX_LEN, "lm_head.weight");
			p->shape[0] = c->vocab_size, p->shape[1] = c->hidden_size;
		}
		p->n = p->shape[0] * p->shape[1];
		p->decay = p->ndim == 2;
		t->total += (size_t)p->n;
		t->trained += (size_t)p->n;
	}
	if (!lora)
		return 0;
	t->trained = 0;
	t->lora_scale = (float)(t->o.lora_alpha / t->o.lora_rank);
	for (int k = 0; k < c->num_layers * TR_PER_LAYER; k++)
		t->lora_a[k] = -1;
	make_adapters(t);
	return 0;
}

/* The host arrays in one zeroed allocation: every parameter's weights, then the
 * gradients, first and second moments of the trained ones (in this order, each
 * array of them contiguous, as the GPU backend's device copy is). */
static int alloc_host(struct eng_trainer *t)
{
	t->host_floats = t->total + 3 * t->trained;
	t->host = t->total <= SIZE_MAX / 16 ? huge_zalloc(t->host_floats * sizeof(float)) : NULL;
	char size[16];
	if (!t->host)
		return err_set(
			"training: cannot allocate %s for the weights, gradients and "
			"moments",
			units_ibytes((double)t->host_floats * sizeof(float), size, sizeof size));
	float *g = t->host + t->total;
	size_t off = 0, toff = 0;
	for (int i = 0; i < t->nparams; i++) {
		struct eng_param *p = &t->params[i];
		p->w = t->host + off;
		off += (size_t)p->n;
		if (p->frozen)
			continue;
		p->g = g + toff;
		p->m = g + t->trained + toff;
		p->v = g + 2 * t->trained + toff;
		toff += (size_t)p->n;
	}
	return 0;
}

/* ---- the plan ------------------------------------------------------------------------- */

/* The backend the options ask for: CUDA's from its module (AUTO: when a driver and
 * the module are there, else the CPU, with a notice unless there is no driver at all),
 * or the CPU's. NULL with err_set when CUDA was asked for and cannot run. */
static const struct train_ops *backend_ops(const struct eng_train_options *o,
					   void (*notice)(const char *msg))
{
	if (o->backend == ENG_BACKEND_CPU || (o->lora_rank > 0 && o->backend == ENG_BACKEND_AUTO))
		return train_cpu_ops();
	if (o->lora_rank > 0) {
		err_set("training: LoRA runs on the CPU backend only (--backend cpu)");
		return NULL;
	}
	bool no_driver = false;
	const struct train_ops *ops = eng_cuda_trainer(o->cuda_module, &no_driver);
	if (ops || o->backend == ENG_BACKEND_CUDA)
		return ops;
	if (!no_driver && notice) {
		char msg[ERR_MAX + 32];
		snprintf(msg, sizeof msg, "training on the CPU: %s", err_msg());
		notice(msg);
	}
	return train_cpu_ops();
}

static int check_options(const struct eng_config *c, const struct eng_train_options *o)
{
	if (o->batch < 1 || o->ctx < 1)
		return err_set("training: a micro-batch needs batch >= 1 and ctx >= 1 (got %d, %d)",
			       o->batch, o->ctx);
	if ((int64_t)o->batch * o->ctx > (1 << 24))
		return err_set("training: batch x ctx = %lld tokens per micro-batch is too many "
			       "(at most 16M)",
			       (long long)o->batch * o->ctx);
	if (c->head_dim % 2)
		return err_set("training: head_dim %d is odd (RoPE needs pairs)", c->head_dim);
	if (o->lora_rank < 0 || o->lora_rank > 4096)
		return err_set("training: LoRA rank %d is not in 1 .. 4096 (0: no LoRA)",
			       o->lora_rank);
	if (o->lora_rank > 0 &&
	    (!(o->lora_targets & ENG_LORA_ALL) || !(o->lora_alpha > 0 && o->lora_alpha < 1e6)))
		return err_set("training: LoRA needs a target and an alpha in (0, 1e6)");
	return 0;
}

/* Elements of LoRA's adapters: rank x (in + out) for each adapted matrix. */
static int64_t lora_params(const struct eng_config *c, const struct eng_train_options *o)
{
	int64_t D = c->hidden_size, F = c->intermediate_size;
	int64_t q = (int64_t)c->num_heads * c->head_dim,
		kv = (int64_t)c->num_kv_heads * c->head_dim;
	const int64_t sizes[ENG_LORA_TARGETS] = {D + q, D + kv, D + kv, q + D, D + F, D + F, F + D};
	int64_t n = 0;
	for (int k = 0; k < ENG_LORA_TARGETS; k++)
		if (o->lora_targets >> k & 1)
			n += sizes[k];
	return n * o->lora_rank * c->num_layers;
}

int eng_train_plan(const struct eng_config *c, const struct eng_train_options *o,
		   struct eng_train_plan *p)
{
	memset(p, 0, sizeof *p);
	if (check_options(c, o))
		return -1;
	struct eng_param_counts pc;
	eng_count_params(c, &pc);
	p->params = pc.total;
	if (o->lora_rank > 0) {
		p->frozen = pc.total;
		p->params = lora_params(c, o);
	}
	p->weights = (size_t)(p->frozen + p->params) * sizeof(float);
	p->grads = (size_t)p->params * sizeof(float);
	p->moments = 2 * p->grads;
	const struct train_ops *ops = backend_ops(o, NULL);
	if (!ops || ops->plan(c, o, p))
		return -1;
	p->total = p->weights + p->grads + p->moments + p->activations + p->scratch;
	return 0;
}

/* ---- the trainer ------------------------------------------------------------------------ */

/* The positions of rows of one document each: 0 .. ctx-1 in every row. */
static int alloc_positions(struct eng_trainer *t)
{
	int n = t->o.batch * t->o.ctx;
	if (!(t->pos = malloc((size_t)n * sizeof *t->pos)))
		return err_set("training: out of memory");
	for (int i = 0; i < n; i++)
		t->pos[i] = i % t->o.ctx;
	return 0;
}

struct eng_trainer *eng_trainer_new(const struct eng_config *c, const struct eng_train_options *o,
				    void (*notice)(const char *msg))
{
	struct eng_trainer *t = calloc(1, sizeof *t);
	if (!t) {
		err_set("training: out of memory");
		return NULL;
	}
	t->c = *c;
	t->o = *o;
	t->ops = backend_ops(o, notice);
	if (t->ops == train_cpu_ops()) /* the plan of the backend that will run */
		t->o.backend = ENG_BACKEND_CPU;
	if (!t->ops || eng_train_plan(c, &t->o, &t->plan) || make_params(t) || alloc_host(t) ||
	    alloc_positions(t) || !(t->st = t->ops->init(t))) {
		eng_trainer_free(t);
		return NULL;
	}
	return t;
}

void eng_trainer_free(struct eng_trainer *t)
{
	if (!t)
		return;
	if (t->st)
		t->ops->free(t->st);
	huge_free(t->host, t->host_floats * sizeof(float));
	free(t->lora_a);
	free(t->pos);
	free(t->params);
	free(t->names);
	free(t);
}

const struct eng_config *eng_trainer_config(const struct eng_trainer *t)
{
	return &t->c;
}

const char *eng_trainer_backend(const struct eng_trainer *t)
{
	return t->ops->name;
}

const char *eng_trainer_kernels(const struct eng_trainer *t)
{
	return t->ops->kernels ? t->ops->kernels(t->st) : NULL;
}

bool eng_trainer_exact(const struct eng_trainer *t)
{
	return t->ops->exact(t->st);
}

void eng_trainer_get_plan(const struct eng_trainer *t, struct eng_train_plan *out)
{
	*out = t->plan;
}

int eng_trainer_nparams(const struct eng_trainer *t)
{
	return t->nparams;
}

struct eng_param *eng_trainer_param(struct eng_trainer *t, int i)
{
	return i >= 0 && i < t->nparams ? &t->params[i] : NULL;
}

/* ---- initial weights --------------------------------------------------------------------- */

/* splitmix64: a seeded stream of 64-bit values. */
static uint64_t next64(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

/* A standard normal value (Box-Muller, one of each pair). */
static double normal(uint64_t *s)
{
	double u1 = ((next64(s) >> 11) + 0.5) / 9007199254740992.0;
	double u2 = (next64(s) >> 11) / 9007199254740992.0;
	return sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2);
}

/* Each tensor draws from its own stream, so that a shape change elsewhere keeps it.
 * SplitMix64 steps its state by a constant, so value k of a tensor (two draws) starts
 * from state s0 + 2k * 0x9e37..: the tensors are drawn in pieces, on every thread,
 * and give the same values as one pass (one thread is slow at a 0.6B model's 596M). */
#define INIT_CHUNK (1 << 20)

/* The pieces of the trained parameters, or of all of them. */
static int pieces(const struct eng_trainer *t, int64_t chunk, bool all)
{
	int n = 0;
	for (int i = 0; i < t->nparams; i++)
		if (all || !t->params[i].frozen)
			n += (int)((t->params[i].n + chunk - 1) / chunk);
	return n;
}

static struct eng_param *piece(struct eng_trainer *t, int64_t chunk, int it, int64_t *k0,
			       int64_t *k1, bool all)
{
	for (int i = 0; i < t->nparams; i++) {
		struct eng_param *p = &t->params[i];
		int64_t n = p->frozen && !all ? 0 : (p->n + chunk - 1) / chunk;
		if (it < n) {
			*k0 = (int64_t)it * chunk;
			*k1 = *k0 + chunk < p->n ? *k0 + chunk : p->n;
			return p;
		}
		it -= (int)n;
	}
	return NULL;
}

int train_pieces(const struct eng_trainer *t, int64_t chunk)
{
	return pieces(t, chunk, false);
}

struct eng_param *train_piece(struct eng_trainer *t, int64_t chunk, int it, int64_t *k0,
			      int64_t *k1)
{
	return piece(t, chunk, it, k0, k1, false);
}

struct init_task {
	struct eng_trainer *t;
	uint64_t seed;
	double std;
	bool all; /* every parameter, not only the trained ones */
	int items;
	atomic_int next;
};

static void init_fn(void *arg, int tid, int nthreads)
{
	(void)tid, (void)nthreads;
	struct init_task *a = arg;
	for (int it; (it = cpu_claim(&a->next, a->items)) >= 0;) {
		int64_t k0 = 0, k1 = 0;
		struct eng_param *p = piece(a->t, INIT_CHUNK, it, &k0, &k1, a->all);
		uint64_t i = (uint64_t)(p - a->t->params); /* the tensor's stream */
		uint64_t s = (a->seed ^ (0x5851f42d4c957f2dull * (i + 1))) +
			     2 * (uint64_t)k0 * 0x9e3779b97f4a7c15ull;
		/* LoRA's A: uniform in +-1/sqrt(in) from the stream's 53-bit values */
		double bound = 1.0 / sqrt((double)p->shape[1]);
		for (int64_t k = k0; k < k1; k++)
			if (p->adapts >= 0)
				p->w[k] = p->lora_b ? 0.0f
						    : (float)(bound * (2.0 * (next64(&s) >> 11) /
									       9007199254740992.0 -
								       1.0));
			else
				p->w[k] = p->ndim == 1 ? 1.0f : (float)(a->std * normal(&s));
		if (p->m) {
			memset(p->m + k0, 0, (size_t)(k1 - k0) * sizeof(float));
			memset(p->v + k0, 0, (size_t)(k1 - k0) * sizeof(float));
		}
	}
}

/* Draws every parameter (all) or the trained ones. */
static void draw(struct eng_trainer *t, uint64_t seed, double std, bool all)
{
	struct init_task a = {
		.t = t, .seed = seed, .std = std, .all = all, .items = pieces(t, INIT_CHUNK, all)};
	atomic_init(&a.next, 0);
	struct cpu_pool *pool = cpu_pool_new(t->o.backend == ENG_BACKEND_CPU ? t->o.threads : 0);
	if (pool)
		cpu_pool_run(pool, init_fn, &a);
	else /* no threads to be had: the same values on this one */
		init_fn(&a, 0, 1);
	cpu_pool_free(pool);
	eng_trainer_upload(t);
}

void eng_trainer_init_normal(struct eng_trainer *t, uint64_t seed, double std)
{
	draw(t, seed, std, true);
}

void eng_trainer_init_lora(struct eng_trainer *t, uint64_t seed)
{
	if (t->o.lora_rank > 0) /* the trained parameters are the adapters alone */
		draw(t, seed, 0, false);
}

void eng_trainer_merged_rows(const struct eng_trainer *t, int i, int64_t r0, int64_t r1, float *out)
{
	const struct eng_param *W = &t->params[i];
	int64_t cols = W->shape[1];
	memcpy(out, W->w + r0 * cols, (size_t)((r1 - r0) * cols) * sizeof *out);
	/* lora_a is indexed as params[1, train_final) are, by layer and role */
	int ia = t->lora_a && i >= 1 && i < train_final(t) ? t->lora_a[i - 1] : -1;
	if (ia < 0)
		return;
	int r = t->o.lora_rank;
	const float *A = t->params[ia].w, *B = t->params[ia + 1].w;
	double s = t->o.lora_alpha / r;
	for (int64_t row = r0; row < r1; row++) /* in double: one rounding, at the end */
		for (int64_t k = 0; k < cols; k++) {
			double d = 0;
			for (int j = 0; j < r; j++)
				d += (double)B[row * r + j] * A[(int64_t)j * cols + k];
			out[(row - r0) * cols + k] = (float)(W->w[row * cols + k] + s * d);
		}
}

uint64_t eng_trainer_frozen_digest(const struct eng_trainer *t)
{
	uint64_t h = 0;
	for (int i = 0; i < t->nparams; i++) {
		const struct eng_param *p = &t->params[i];
		const uint32_t *w = (const uint32_t *)p->w;
		if (!p->frozen)
			continue;
		/* four independent lanes (a multiply's latency each), folded at the end */
		uint64_t lane[4] = {h ^ 1, h ^ 2, h ^ 3, h ^ 4};
		int64_t k = 0;
		for (; k + 4 <= p->n; k += 4)
			for (int j = 0; j < 4; j++)
				lane[j] = (lane[j] ^ w[k + j]) * 0x100000001b3ull;
		for (; k < p->n; k++)
			lane[0] = (lane[0] ^ w[k]) * 0x100000001b3ull;
		for (int j = 0; j < 4; j++)
			h = (h ^ lane[j]) * 0x9e3779b97f4a7c15ull + (uint64_t)j;
	}
	return h;
}

/* Tensor x (F32, F16 or BF16, of p's shape) into p->w; path names it in messages. */
static int adapter_from(struct eng_param *p, const struct st_tensor *x, const char *path)
{
	if (x->ndim != 2 || x->shape[0] != p->shape[0] || x->shape[1] != p->shape[1])
		return err_set("%s: %s: not of shape [%lld, %lld] (the rank and the matrix the "
			       "adapter_config.json and the model give)",
			       path, p->name, (long long)p->shape[0], (long long)p->shape[1]);
	if (x->dtype != ENG_F32 && x->dtype != ENG_F16 && x->dtype != ENG_BF16)
		return err_set("%s: %s: %s, where F32, F16 or BF16 was expected", path, p->name,
			       eng_dtype_name(x->dtype));
	const uint16_t *h = x->data;
	for (int64_t k = 0; k < p->n; k++) {
		if (x->dtype == ENG_F32)
			memcpy(&p->w[k], (const float *)x->data + k, sizeof(float));
		else
			p->w[k] = x->dtype == ENG_BF16 ? cpu_bf16_to_f32(h[k])
						       : quant_f16_to_f32(h[k]);
		if (!isfinite(p->w[k]))
			return err_set("%s: %s: element %lld is not finite", path, p->name,
				       (long long)k);
	}
	memset(p->m, 0, (size_t)p->n * sizeof(float));
	memset(p->v, 0, (size_t)p->n * sizeof(float));
	return 0;
}

int eng_trainer_load_adapters(struct eng_trainer *t, const char *path)
{
	struct st_file *f = st_open(path, path);
	if (!f)
		return -1;
	int rc = 0;
	for (int i = t->nbase; rc == 0 && i < t->nparams; i++) {
		const struct st_tensor *x = st_find(f, t->params[i].name);
		rc = x ? adapter_from(&t->params[i], x, path)
		       : err_set("%s: no tensor %s (adapter_config.json names its matrix)", path,
				 t->params[i].name);
	}
	for (int k = 0; rc == 0 && k < f->ntensors; k++) { /* an adapter left out is refused */
		const char *name = f->tensors[k].name;
		bool ours = false;
		for (int i = t->nbase; !ours && i < t->nparams; i++)
			ours = !strcmp(name, t->params[i].name);
		if (!ours && (strstr(name, ".lora_A.") || strstr(name, ".lora_B.")))
			rc = err_set("%s: %s: an adapter of a matrix adapter_config.json does not "
				     "name, or of no layer of the model",
				     path, name);
	}
	st_free(f);
	return rc ? -1 : eng_trainer_upload(t);
}

/* The model's tensor for parameter i. */
static const struct eng_tensor *model_tensor(const struct eng_trainer *t, const struct eng_weights *w,
					     int i)
{
	if (i == 0)
		return &w->embed;
	if (i == train_final(t))
		return &w->final_norm;
	if (i > train_final(t))
		return &w->lm_head;
	const struct eng_layer *L = &w->layers[(i - 1) / TR_PER_LAYER];
	const struct eng_tensor *by_role[TR_PER_LAYER] = {
		&L->input_norm, &L->wq,     &L->wk,        &L->wv,   &L->wo,    &L->q_norm,
		&L->k_norm,     &L->post_norm, &L->w_gate, &L->w_up, &L->w_down};
	return by_role[(i - 1) % TR_PER_LAYER];
}

int eng_trainer_load(struct eng_trainer *t, const struct eng_model *m)
{
	const struct eng_config *mc = eng_model_config(m);
	if (mc->vocab_size != t->c.vocab_size || mc->hidden_size != t->c.hidden_size ||
	    mc->num_layers != t->c.num_layers || mc->tie_word_embeddings != t->c.tie_word_embeddings)
		return err_set("training: the model's shape is not the trainer's");
	const struct eng_weights *w = eng_model_weights(m);
	for (int i = 0; i < t->nbase; i++) {
		struct eng_param *p = &t->params[i];
		const struct eng_tensor *x = model_tensor(t, w, i);
		int64_t rows = x->ndim == 1 ? 1 : x->shape[0], cols = x->ndim == 1 ? x->shape[0] : x->shape[1];
		if (eng_dtype_quantized(x->dtype) && !p->frozen)
			return err_set("%s is %s: train from the bf16 model (quantized weights "
				       "cannot be trained)",
				       p->name, eng_dtype_name(x->dtype));
		if (rows * cols != p->n)
			return err_set("%s: %lld weights, the trainer expects %lld", p->name,
				       (long long)(rows * cols), (long long)p->n);
		if (eng_dtype_quantized(x->dtype)) { /* LoRA's frozen base: as ggml reads it */
			size_t stride = eng_row_bytes(x->dtype, cols);
			for (int64_t r = 0; r < rows; r++)
				quant_dequantize_row(x->dtype,
						     (const uint8_t *)x->data + r * stride,
						     p->w + r * cols, cols);
		} else if (x->dtype == ENG_F32) {
			memcpy(p->w, x->data, (size_t)p->n * sizeof(float));
		} else {
			const uint16_t *h = x->data;
			for (int64_t k = 0; k < p->n; k++)
				p->w[k] = x->dtype == ENG_BF16 ? cpu_bf16_to_f32(h[k]) : quant_f16_to_f32(h[k]);
		}
		if (!p->frozen) {
			memset(p->m, 0, (size_t)p->n * sizeof(float));
			memset(p->v, 0, (size_t)p->n * sizeof(float));
		}
	}
	return eng_trainer_upload(t);
}

int eng_trainer_download(struct eng_trainer *t)
{
	return t->ops->download ? t->ops->download(t->st) : 0;
}

int eng_trainer_upload(struct eng_trainer *t)
{
	return t->ops->upload ? t->ops->upload(t->st) : 0;
}

/* ---- a step ----------------------------------------------------------------------------------- */

int eng_trainer_zero_grad(struct eng_trainer *t)
{
	return t->ops->zero_grad(t->st);
}

/* pos (batch, ctx) as train.h describes it: 0 at the start of every row, and then
 * each position 0 or one more than the one before. */
static int check_positions(const struct eng_trainer *t, const int32_t *pos)
{
	int T = t->o.ctx;
	/* by induction 0 <= pos[i] <= its column: RoPE's table covers every position */
	for (int i = 0; i < t->o.batch * T; i++) {
		int64_t next = i % T ? (int64_t)pos[i - 1] + 1 : 0;
		if (pos[i] != 0 && pos[i] != next)
			return err_set("training: position %d at row %d, column %d does not start a "
				       "document (0) or follow the one before (%lld)",
				       pos[i], i / T, i % T, (long long)next);
	}
	return 0;
}

int eng_trainer_micro(struct eng_trainer *t, const int32_t *inputs, const int32_t *targets,
		      const int32_t *pos, double *loss_sum, int64_t *count)
{
	if (pos && check_positions(t, pos))
		return -1;
	return t->ops->micro(t->st, inputs, targets, pos ? pos : t->pos, true, loss_sum, count);
}

int eng_trainer_eval(struct eng_trainer *t, const int32_t *inputs, const int32_t *targets,
		     const int32_t *pos, double *loss_sum, int64_t *count)
{
	if (pos && check_positions(t, pos))
		return -1;
	return t->ops->micro(t->st, inputs, targets, pos ? pos : t->pos, false, loss_sum, count);
}

int eng_trainer_finish_grads(struct eng_trainer *t, double scale, double clip, double *norm)
{
	return t->ops->finish_grads(t->st, scale, clip, norm);
}

int eng_trainer_adamw(struct eng_trainer *t, const struct eng_adamw *h, int64_t step)
{
	if (step < 1)
		return err_set("training: AdamW steps count from 1 (got %lld)", (long long)step);
	return t->ops->adamw(t->st, h, step);
}

double eng_trainer_peak_gflops(struct eng_trainer *t)
{
	if (t->peak == 0) { /* once: a failed measurement (-1) is not retried every step */
		double p = t->ops->peak_gflops(t->st);
		t->peak = p > 0 ? p : -1;
	}
	return t->peak > 0 ? t->peak : 0;
}

double eng_trainer_peak_share(struct eng_trainer *t, double gflops)
{
	double peak = eng_trainer_peak_gflops(t);
	/* The peak is measured once, before the first step; when the machine was busy then,
	 * a step can run faster than it, and the best rate seen is the better estimate. */
	if (peak > 0 && gflops > peak)
		t->peak = peak = gflops;
	return peak > 0 ? gflops / peak : 0;
}

double eng_trainer_step_flops(const struct eng_trainer *t, const int32_t *pos)
{
	const struct eng_config *c = &t->c;
	double N = (double)t->o.batch * t->o.ctx, T = t->o.ctx;
	double D = c->hidden_size, F = c->intermediate_size, hd = c->head_dim;
	double q = c->num_heads * hd, kv = c->num_kv_heads * hd;
	double per_layer = D * (q + 2 * kv) + q * D + 3 * D * F; /* weights touched per token */
	double matmul = c->num_layers * per_layer + (double)c->vocab_size * D;
	/* attention's forward: q.k and p.v over the keys a query sees, T/2 on average in a
	 * row of one document; in packed rows, its position + 1/2 on average */
	double keys = N * T / 2;
	if (pos) {
		keys = 0;
		for (int i = 0; i < t->o.batch * t->o.ctx; i++)
			keys += pos[i] + 0.5;
	}
	double attn = c->num_layers * 4.0 * q * keys;
	if (t->o.lora_rank == 0) /* forward once, backward twice */
		return 3.0 * (2.0 * N * matmul + attn);
	/* LoRA: the frozen products' backward makes only the inputs' gradients; the
	   adapters' three products each way */
	return 2.0 * (2.0 * N * matmul + attn) + 6.0 * N * (double)t->plan.params;
}

int eng_safetensors_check(const char *path)
{
	struct st_file *f = st_open(path, path);
	if (!f)
		return -1;
	st_free(f);
	return 0;
}
