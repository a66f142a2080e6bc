/* engine.c — the engine front: picks a backend, checks every argument of the
 * forward pass (ids, positions, cache bounds) before a backend sees it, and keeps
 * the token count and timings. Backends implement engine/backend.h. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "engine/backend.h"
#include "engine/model.h"
#include "engine/engine.h"
#include "src/base/err.h"
#include "src/base/clock.h"
#include "src/base/proc.h"
#include "src/base/units.h"

struct eng {
	struct eng_model *model;
	const struct eng_config *cfg;
	const struct eng_backend_ops *ops;
	void *st;   /* the backend's state */
	int ctx;    /* KV capacity in tokens */
	int cached; /* positions whose K/V are valid */
	bool capture;
	double prefill_s, decode_s;
	int64_t prefill_tok, decode_tok;
};

/* The backend for `kind`; AUTO prefers CUDA when a driver is there and the module
 * loads and finds a device. */
static const struct eng_backend_ops *pick_backend(const struct eng_options *opt,
						  void (*notice)(const char *msg))
{
	if (opt->backend == ENG_BACKEND_CPU)
		return eng_cpu_backend();
	bool no_driver;
	const struct eng_backend_ops *cuda = eng_cuda_load(opt->cuda_module, &no_driver);
	if (cuda)
		return cuda;
	if (opt->backend == ENG_BACKEND_CUDA) {
		err_prefix("backend cuda");
		return NULL;
	}
	if (!no_driver && notice) { /* a GPU machine whose GPU cannot be used: say why */
		char msg[1200];
		snprintf(msg, sizeof msg, "CUDA backend unusable (%s); using the CPU backend",
			 err_msg());
		notice(msg);
	}
	return eng_cpu_backend();
}

/* The context when none is asked for: the model's own maximum (eng_max_context), at most
 * ENG_DEFAULT_CTX_MAX (room for long reasoning without a cache sized for the
 * extreme); on the CPU also at most what half of the memory available now holds
 * of KV cache (it is allocated lazily, but a conversation may fill it), in steps
 * of 256. A GPU backend fits its own cache to its memory. */
static int default_ctx(const struct eng_config *c, const struct eng_options *opt,
		       const struct eng_backend_ops *ops, void (*notice)(const char *msg))
{
	int max = eng_max_context(c), ctx = max < ENG_DEFAULT_CTX_MAX ? max : ENG_DEFAULT_CTX_MAX;
	if (strcmp(ops->name, "cpu"))
		return ctx;
	size_t per_tok =
		2 * (size_t)c->num_layers * c->num_kv_heads * c->head_dim * (opt->kv_f32 ? 4 : 2);
	size_t avail = proc_mem_available(NULL, 0);
	if (!avail || (size_t)ctx * per_tok <= avail / 2)
		return ctx;
	int fit = (int)(avail / 2 / per_tok / 256 * 256);
	if (fit < 256)
		fit = 256 < ctx ? 256 : ctx;
	if (notice) {
		char msg[192], size[16];
		snprintf(msg, sizeof msg,
			 "context %d tokens: the KV cache of %d would take over half of the %s of "
			 "memory available (--ctx sets it)",
			 fit, ctx, units_ibytes((double)avail, size, sizeof size));
		notice(msg);
	}
	return fit;
}

struct eng *eng_new(struct eng_model *m, const struct eng_options *opt,
		    void (*notice)(const char *msg))
{
	static const struct eng_options defaults = {.backend = ENG_BACKEND_AUTO};
	if (!opt)
		opt = &defaults;
	const struct eng_config *c = eng_model_config(m);
	if (opt->threads < 0 || opt->ctx < 0) {
		err_set("engine: %s must not be negative", opt->threads < 0 ? "threads" : "ctx");
		return NULL;
	}
	const struct eng_backend_ops *ops = pick_backend(opt, notice);
	if (!ops)
		return NULL;
	if (opt->quant > ENG_FTYPE_NONE && opt->quant < ENG_FTYPE_COUNT &&
	    !eng_model_quantized_in_memory(m) &&
	    eng_model_quantize(m, opt->quant, opt->threads, opt->quant_progress))
		return NULL;
	int ctx = opt->ctx ? opt->ctx : default_ctx(c, opt, ops, notice);
	if (eng_check_context(c, ctx))
		return NULL;
	struct eng *e = calloc(1, sizeof *e);
	if (!e) {
		err_set("engine: out of memory");
		return NULL;
	}
	e->model = m;
	e->cfg = c;
	e->ops = ops;
	e->ctx = ctx;
	struct eng_backend_opts bo = {.threads = opt->threads,
				      .ctx = ctx,
				      .kv_f32 = opt->kv_f32,
				      .cpu_isa = opt->cpu_isa,
				      .bf16_prefill = opt->bf16_prefill,
				      .exact_decode = opt->exact_decode,
				      .cuda_no_graph = opt->cuda_no_graph,
				      .cuda_no_sampling = opt->cuda_no_sampling,
				      .notice = notice,
				      .progress = opt->progress};
	if (!(e->st = ops->init(m, &bo)) && opt->backend == ENG_BACKEND_AUTO &&
	    ops != eng_cpu_backend()) {
		/* the GPU cannot run this model (a weight type without kernels there, too
		 * little memory): the CPU can, and the user asked for no backend in
		 * particular */
		if (notice) {
			char msg[1200];
			snprintf(msg, sizeof msg, "%s backend unusable (%s); using the CPU backend",
				 ops->name, err_msg());
			notice(msg);
		}
		e->ops = ops = eng_cpu_backend();
		bo.ctx = e->ctx = opt->ctx ? opt->ctx : default_ctx(c, opt, ops, notice);
		e->st = ops->init(m, &bo);
	}
	if (!e->st) {
		free(e);
		return NULL;
	}
	e->ctx = bo.ctx; /* a GPU backend may have shrunk it to fit its memory */
	return e;
}

void eng_free(struct eng *e)
{
	if (!e)
		return;
	e->ops->free(e->st);
	free(e);
}

const char *eng_backend_name(const struct eng *e)
{
	return e->ops->name;
}

enum eng_backend_kind eng_backend_kind(const char *name)
{
	if (!strcmp(name, "cpu"))
		return ENG_BACKEND_CPU;
	if (!strcmp(name, "cuda"))
		return ENG_BACKEND_CUDA;
	return ENG_BACKEND_AUTO;
}

int eng_ctx(const struct eng *e)
{
	return e->ctx;
}

int eng_cached(const struct eng *e)
{
	return e->cached;
}

int eng_prefill_min(const struct eng *e)
{
	return e->ops->prefill_min ? e->ops->prefill_min(e->st) : 1;
}

/* Finds the first non-finite logit: NaN or Inf weights (or an overflow) would
 * otherwise reach the sampler as garbage. */
static int check_finite(const float *logits, int rows, int vocab, int pos, const char *what)
{
	for (int r = 0; r < rows; r++)
		for (int i = 0; i < vocab; i++)
			if (!isfinite(logits[(size_t)r * vocab + i]))
				return err_set("forward: %s %d at position %d is not finite "
					       "(NaN or Inf in the weights or activations)",
					       what, i, pos + r);
	return 0;
}

/* The checks eng_forward makes, for n tokens at pos. */
static int check_forward(const struct eng *e, const int32_t *ids, int n, int pos)
{
	if (pos < 0 || pos > e->cached)
		return err_set("forward: position %d is beyond the %d cached tokens", pos,
			       e->cached);
	if (n > e->ctx - pos)
		return err_set("positions %d..%d exceed the context of %d tokens", pos, pos + n - 1,
			       e->ctx);
	return eng_check_ids(e->cfg, ids, n, pos);
}

int eng_check_ids(const struct eng_config *c, const int32_t *ids, int n, int pos)
{
	for (int i = 0; i < n; i++)
		if (ids[i] < 0 || ids[i] >= c->vocab_size)
			return err_set("token id %d at position %d is not in the vocabulary "
				       "(vocab_size %d)",
				       (int)ids[i], pos + i, c->vocab_size);
	return 0;
}

/* A forward of n tokens at pos that took dt seconds succeeded: the cache holds them. */
static void count_forward(struct eng *e, int n, int pos, double dt)
{
	e->cached = pos + n;
	if (n == 1) {
		e->decode_s += dt;
		e->decode_tok++;
	} else {
		e->prefill_s += dt;
		e->prefill_tok += n;
	}
}

int eng_hidden(struct eng *e, const int32_t *ids, int n, int pos, float *out)
{
	if (n <= 0 || !ids || !out)
		return err_set("forward: need at least one token and an output buffer (n=%d)", n);
	if (!e->ops->hidden)
		return err_set("the %s backend does not give hidden states (embeddings): use "
			       "--backend cpu",
			       e->ops->name);
	if (check_forward(e, ids, n, pos))
		return -1;
	e->cached = pos;
	double t0 = clock_now();
	int rc = e->ops->hidden(e->st, ids, n, pos, out);
	if (rc)
		return rc < 0 ? -1 : ENG_CANCELLED;
	double dt = clock_now() - t0;
	if (check_finite(out, 1, e->cfg->hidden_size, pos + n - 1, "hidden value"))
		return -1;
	count_forward(e, n, pos, dt);
	return 0;
}

int eng_embed(struct eng *e, const int32_t *ids, int n, int dims, bool normalize, float *out)
{
	int d = e->cfg->hidden_size;
	if (dims < 1 || dims > d)
		return err_set("dimensions %d: the model gives 1 to %d (hidden_size)", dims, d);
	float *h = malloc((size_t)d * sizeof *h);
	if (!h)
		return err_set("out of memory");
	int rc = eng_hidden(e, ids, n, 0, h);
	if (rc == 0) {
		double ss = 0;
		for (int i = 0; i < dims; i++)
			ss += (double)h[i] * h[i];
		/* as torch.nn.functional.normalize: the norm taken as at least 1e-12 */
		double scale = normalize ? 1.0 / fmax(sqrt(ss), 1e-12) : 1.0;
		for (int i = 0; i < dims; i++)
			out[i] = (float)(h[i] * scale);
	}
	free(h);
	return rc;
}

int eng_forward(struct eng *e, const int32_t *ids, int n, int pos, float *logits, bool all_logits)
{
	const int vocab = e->cfg->vocab_size;
	if (n <= 0 || !ids || !logits)
		return err_set("forward: need at least one token and a logits buffer (n=%d)", n);
	if (check_forward(e, ids, n, pos))
		return -1;
	/* The backend overwrites entries from pos on; until it succeeds only pos stay valid. */
	e->cached = pos;
	double t0 = clock_now();
	int rc = e->ops->forward(e->st, ids, n, pos, logits, all_logits);
	if (rc)
		return rc < 0 ? -1 : ENG_CANCELLED;
	double dt = clock_now() - t0;
	if (check_finite(logits, all_logits ? n : 1, vocab, all_logits ? pos : pos + n - 1,
			 "logit"))
		return -1;
	count_forward(e, n, pos, dt);
	return 0;
}

bool eng_can_sample(const struct eng *e, const struct eng_sampling *sp)
{
	return e->ops->sample_ok && e->ops->sample_ok(e->st, sp);
}

int eng_forward_sample(struct eng *e, int32_t id, int pos, const struct eng_sampling *sp,
		       int32_t *next, bool *used_uniform)
{
	if (!sp || !next || !used_uniform)
		return err_set("forward_sample: missing argument");
	if (!eng_can_sample(e, sp))
		return err_set("forward_sample: the %s backend cannot sample with these settings "
			       "(top_k %d)",
			       e->ops->name, sp->top_k);
	if (sp->n_recent < 0 || sp->n_recent > ENG_SAMPLE_MAX_RECENT ||
	    (sp->n_recent && !sp->recent))
		return err_set("forward_sample: %d recent ids (at most %d)", sp->n_recent,
			       ENG_SAMPLE_MAX_RECENT);
	if (sp->vocab_limit < 1 || sp->vocab_limit > e->cfg->vocab_size || !(sp->uniform >= 0) ||
	    !(sp->uniform < 1))
		return err_set("forward_sample: vocab_limit %d or uniform %g out of range",
			       sp->vocab_limit, sp->uniform);
	if (check_forward(e, &id, 1, pos))
		return -1;
	e->cached = pos; /* as in eng_forward */
	double t0 = clock_now();
	if (e->ops->forward_sample(e->st, id, pos, sp, next, used_uniform))
		return -1;
	count_forward(e, 1, pos, clock_now() - t0);
	return 0;
}

int eng_measure(struct eng *e, const struct eng_measure_request *rq, struct eng_peaks *out)
{
	memset(out, 0, sizeof *out);
	if (rq->gemm_m < 0 || rq->gemm_n < 0 || rq->gemm_k < 0 || rq->reps < 0 || rq->reps > 1000)
		return err_set("measure: GEMM shape %dx%dx%d, %d passes", rq->gemm_m, rq->gemm_n,
			       rq->gemm_k, rq->reps);
	return e->ops->measure(e->st, rq, out);
}

void eng_set_cancel(struct eng *e, const atomic_int *cancel)
{
	if (e->ops == eng_cpu_backend())
		eng_cpu_set_cancel(e->st, cancel);
}

int eng_truncate(struct eng *e, int n)
{
	if (n < 0 || n > e->cached)
		return err_set("truncate: %d is outside the %d cached tokens", n, e->cached);
	e->cached = n;
	return 0;
}

void eng_set_capture(struct eng *e, bool on)
{
	e->capture = on;
	e->ops->set_capture(e->st, on);
}

const float *eng_attention(const struct eng *e, int layer, int head, int *len)
{
	int dummy;
	if (!len)
		len = &dummy;
	*len = 0;
	if (!e->capture)
		return NULL;
	return e->ops->attention(e->st, layer, head, len);
}

void eng_get_stats(const struct eng *e, struct eng_stats *st)
{
	struct eng_backend_stats b;
	e->ops->stats(e->st, &b);
	memset(st, 0, sizeof *st);
	st->weight_bytes = b.weight_bytes ? b.weight_bytes : eng_model_weight_bytes(e->model);
	st->kv_bytes_allocated = b.kv_bytes_allocated;
	st->kv_bytes_used = b.kv_bytes_per_token * (size_t)e->cached;
	st->kv_bytes_resident = b.kv_lazy ? b.kv_bytes_resident : b.kv_bytes_allocated;
	st->scratch_bytes = b.scratch_bytes;
	st->graph_bytes = b.graph_bytes;
	st->device_free = b.device_free;
	st->device_total = b.device_total;
	st->prefill_seconds = e->prefill_s;
	st->decode_seconds = e->decode_s;
	st->prefill_tokens = e->prefill_tok;
	st->decode_tokens = e->decode_tok;
	st->prefill_inputs = b.prefill_inputs;
}
