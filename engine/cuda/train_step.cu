/* train_step.cu — the CUDA training backend's state and step (the CPU's
 * engine/cpu/train_cpu.c): the parameters, gradients and moments in one device
 * allocation that eng_trainer_download/upload mirror into the trainer's host arrays; a
 * micro-batch's forward, the loss fused with the output projection in chunks of rows,
 * the backward; and the optimizer (scaling, the global norm summed per block and then
 * on the host in block order, clipping, AdamW). */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "engine/cuda/train.cuh"

extern "C" {
#include "engine/rope.h"
}

static void trc_free(void *st)
{
	struct trc *s = (struct trc *)st;
	if (!s)
		return;
	if (s->act)
		for (int l = 0; l < s->layers; l++)
			cudaFree(s->act[l].ptr);
	cudaFree(s->dev);
	cudaFree(s->wh);
	cudaFree(s->mem);
	cudaFree(s->loss_d);
	cudaFree(s->sq_d);
	cudaFree(s->ids_d);
	cudaFreeHost(s->ids_h);
	cudaFreeHost(s->loss_h);
	cudaFreeHost(s->sq_h);
	if (s->blas)
		cublasDestroy(s->blas);
	if (s->stream)
		cudaStreamDestroy(s->stream);
	free(s->w);
	free(s->act);
	free(s);
}

/* Cuts n floats from *cur (256-byte aligned). */
static float *take(char **cur, size_t n)
{
	float *p = (float *)*cur;
	*cur += (n * sizeof(float) + 255) & ~(size_t)255;
	return p;
}

/* The parameters' device arrays and their bf16 copies. */
static int alloc_params(struct trc *s)
{
	struct eng_trainer *t = s->t;
	CUDA_CHECK(cudaMalloc((void **)&s->dev, 4 * t->total * sizeof(float)));
	if (!s->exact)
		CUDA_CHECK(cudaMalloc((void **)&s->wh, t->total * sizeof(bf16)));
	s->w = (float **)calloc(5 * (size_t)t->nparams, sizeof(void *));
	if (!s->w)
		return err_set("cuda training: out of memory");
	s->g = s->w + t->nparams, s->m = s->g + t->nparams, s->v = s->m + t->nparams;
	s->whp = (bf16 **)(s->v + t->nparams);
	size_t off = 0;
	for (int i = 0; i < t->nparams; i++) {
		s->w[i] = s->dev + off, s->g[i] = s->dev + t->total + off;
		s->m[i] = s->dev + 2 * t->total + off, s->v[i] = s->dev + 3 * t->total + off;
		s->whp[i] = s->wh ? s->wh + off : NULL;
		off += (size_t)t->params[i].n;
	}
	return 0;
}

/* Activations, gradients of activations and scratch, cut from one allocation. */
static int alloc_acts(struct trc *s)
{
	const struct eng_train_options *o = &s->t->o;
	size_t half, f = trc_scratch_floats(s->c, o, &half);
	size_t N = s->N, D = s->D, F = s->F, q = s->q_dim, kv = s->kv_dim, T = s->T;
	s->bytes = f * sizeof(float) + 2 * half * sizeof(bf16) + 64 * 256;
	CUDA_CHECK(cudaMalloc((void **)&s->mem, s->bytes));
	char *cur = s->mem;
	s->x = take(&cur, (size_t)(s->c->num_layers + 1) * N * D);
	s->act = (struct trc_act *)calloc((size_t)s->layers, sizeof *s->act);
	if (!s->act)
		return err_set("cuda training: out of memory");
	for (int l = 0; l < s->layers; l++) {
		struct trc_act *a = &s->act[l];
		a->rstd1 = take(&cur, N), a->xn1 = take(&cur, N * D);
		a->q_raw = take(&cur, N * q), a->k_raw = take(&cur, N * kv);
		a->rstd_q = take(&cur, N * s->H), a->rstd_k = take(&cur, N * s->Hkv);
		a->q = take(&cur, N * q), a->k = take(&cur, N * kv), a->v = take(&cur, N * kv);
		a->p = take(&cur, (size_t)s->B * s->H * T * T);
		a->att = take(&cur, N * q), a->xmid = take(&cur, N * D);
		a->rstd2 = take(&cur, N), a->xn2 = take(&cur, N * D);
		a->gate = take(&cur, N * F), a->up = take(&cur, N * F), a->h = take(&cur, N * F);
	}
	s->rstd_f = take(&cur, N), s->xf = take(&cur, N * D);
	s->dx = take(&cur, N * D), s->dxn = take(&cur, N * D);
	s->dh = take(&cur, N * F), s->dup = take(&cur, N * F);
	s->datt = take(&cur, N * q), s->dq = take(&cur, N * q);
	s->dk = take(&cur, N * kv), s->dv = take(&cur, N * kv);
	s->dp = take(&cur, (size_t)s->B * s->H * T * T);
	size_t wide = D > 2 * (size_t)s->hd ? D : 2 * (size_t)s->hd;
	s->part = take(&cur, CEIL_DIV(N, (size_t)TRC_BLOCK) * wide);
	s->logits = take(&cur, (size_t)s->chunk * s->V);
	s->cos = take(&cur, T * (size_t)s->hd / 2), s->sin = take(&cur, T * (size_t)s->hd / 2);
	s->ha = (bf16 *)take(&cur, (half + 1) / 2), s->hb = (bf16 *)take(&cur, (half + 1) / 2);
	s->hsize = half;
	CUDA_CHECK(cudaMalloc((void **)&s->loss_d, N * sizeof(double)));
	CUDA_CHECK(cudaMalloc((void **)&s->sq_d, TRC_SQ_BLOCKS * sizeof(double)));
	/* inputs (N), targets (N), the embedding's lists (3 N + 1), positions (N) */
	CUDA_CHECK(cudaMalloc((void **)&s->ids_d, (6 * N + 1) * sizeof(int32_t)));
	s->tgt_d = s->ids_d + N, s->emb_d = s->ids_d + 2 * N, s->pos_d = s->ids_d + 5 * N + 1;
	CUDA_CHECK(cudaMallocHost((void **)&s->ids_h, (6 * N + 1) * sizeof(int32_t)));
	s->emb_h = s->ids_h + 2 * N;
	CUDA_CHECK(cudaMallocHost((void **)&s->loss_h, N * sizeof(double)));
	CUDA_CHECK(cudaMallocHost((void **)&s->sq_h, TRC_SQ_BLOCKS * sizeof(double)));
	float *cs = (float *)malloc(T * s->hd * sizeof(float));
	if (!cs)
		return err_set("cuda training: out of memory");
	rope_table(s->c, s->T, cs, cs + T * s->hd / 2);
	cudaError_t e = cudaMemcpy(s->cos, cs, T * s->hd / 2 * sizeof(float), cudaMemcpyHostToDevice);
	if (e == cudaSuccess)
		e = cudaMemcpy(s->sin, cs + T * s->hd / 2, T * s->hd / 2 * sizeof(float),
			       cudaMemcpyHostToDevice);
	free(cs);
	CUDA_CHECK(e);
	for (int l = 0; l < s->layers; l++)
		if (trc_make_ptrs(s, &s->act[l]))
			return -1;
	return 0;
}

static void *trc_init(struct eng_trainer *t)
{
	struct trc *s = (struct trc *)calloc(1, sizeof *s);
	if (!s) {
		err_set("cuda training: out of memory");
		return NULL;
	}
	const struct eng_config *c = &t->c;
	s->t = t, s->c = c;
	s->B = t->o.batch, s->T = t->o.ctx, s->N = s->B * s->T;
	s->D = c->hidden_size, s->F = c->intermediate_size, s->H = c->num_heads;
	s->Hkv = c->num_kv_heads, s->G = s->H / s->Hkv, s->hd = c->head_dim, s->V = c->vocab_size;
	s->q_dim = s->H * s->hd, s->kv_dim = s->Hkv * s->hd;
	s->eps = (float)c->rms_norm_eps;
	s->exact = t->o.exact;
	s->attn_bf16 = TRC_BF16_ATTENTION && !s->exact && s->hd % 8 == 0;
	s->tiles = !s->exact && t->o.cuda_tiled_attention && trc_flash_usable(c->head_dim);
	s->tiled = s->tiles;
	s->layers = t->o.recompute ? 1 : c->num_layers;
	s->chunk = trc_loss_chunk(c, s->N);
	size_t free_b = 0, total_b = 0;
	if (cudaMemGetInfo(&free_b, &total_b) != cudaSuccess) {
		err_set("cuda training: no usable device: %s", cudaGetErrorString(cudaGetLastError()));
		trc_free(s);
		return NULL;
	}
	if (t->plan.total > free_b) {
		err_set("cuda training: the plan needs %.2f GB of device memory, %.2f GB are free "
			"(fewer --batch rows, a shorter --ctx, or --recompute)",
			t->plan.total / 1e9, free_b / 1e9);
		trc_free(s);
		return NULL;
	}
	if (cudaStreamCreate(&s->stream) != cudaSuccess ||
	    cublasCreate(&s->blas) != CUBLAS_STATUS_SUCCESS ||
	    cublasSetStream(s->blas, s->stream) != CUBLAS_STATUS_SUCCESS) {
		err_set("cuda training: cannot create a stream and a cuBLAS handle");
		trc_free(s);
		return NULL;
	}
	if (alloc_params(s) || alloc_acts(s)) {
		trc_free(s);
		return NULL;
	}
	return s;
}

/* ---- a micro-batch ---------------------------------------------------------------------------- */

static int cmp_pair(const void *a, const void *b)
{
	const int32_t *x = (const int32_t *)a, *y = (const int32_t *)b;
	return x[0] != y[0] ? (x[0] < y[0] ? -1 : 1) : (x[1] < y[1] ? -1 : x[1] > y[1]);
}

/* The embedding's backward lists: each distinct input id, where its positions start,
 * the positions in order (into s->emb_h: uniq (n), start (n + 1), pos (N)). */
static int embed_lists(struct trc *s, const int32_t *inputs, int *nuniq)
{
	int N = s->N;
	int32_t *pairs = (int32_t *)malloc(2 * (size_t)N * sizeof *pairs);
	if (!pairs)
		return err_set("cuda training: out of memory");
	for (int i = 0; i < N; i++)
		pairs[2 * i] = inputs[i], pairs[2 * i + 1] = i;
	qsort(pairs, N, 2 * sizeof *pairs, cmp_pair);
	int n = 0;
	int32_t *uniq = s->emb_h, *pos = s->emb_h + 2 * N + 1;
	for (int i = 0; i < N; i++) {
		if (!i || pairs[2 * i] != pairs[2 * i - 2])
			uniq[n++] = pairs[2 * i];
		pos[i] = pairs[2 * i + 1];
	}
	int32_t *start = s->emb_h + n; /* packed right after the n ids */
	for (int i = 0, u = 0; i < N; i++)
		if (!i || pairs[2 * i] != pairs[2 * i - 2])
			start[u++] = i;
	start[n] = N;
	free(pairs);
	*nuniq = n;
	return 0;
}

/* Logits, loss and (backward) the output projection's gradients, chunk by chunk; d xf
 * lands in s->dxn. */
static int loss_chunks(struct trc *s, bool backward)
{
	const struct eng_trainer *t = s->t;
	int li = t->c.tie_word_embeddings ? 0 : train_final(t) + 1, D = s->D, V = s->V;
	for (int c0 = 0; c0 < s->N; c0 += s->chunk) {
		int rows = s->N - c0 < s->chunk ? s->N - c0 : s->chunk;
		const float *xf = s->xf + (size_t)c0 * D;
		const bf16 *xh = trc_half(s, s->hb, xf, (size_t)rows * D);
		bf16 *lh = backward && !s->exact ? s->ha : NULL; /* the logits' gradient in bf16 */
		if (trc_mm(s, s->logits, V, false, xf, xh, D, false, s->w[li], s->whp[li], D, true,
			   rows, V, D) ||
		    trc_cross_entropy(s->logits, lh, s->tgt_d + c0, s->loss_d + c0, rows, V,
				      backward, s->stream))
			return -1;
		if (!backward)
			continue;
		if (trc_mm(s, s->g[li], D, true, s->logits, lh, V, true, xf, xh, D, false, V, D, rows) ||
		    trc_mm(s, s->dxn + (size_t)c0 * D, D, false, s->logits, lh, V, false, s->w[li],
			   s->whp[li], D, false, rows, D, V))
			return -1;
	}
	return 0;
}

static int trc_micro(void *st, const int32_t *inputs, const int32_t *targets, const int32_t *pos,
		     bool backward, double *loss_sum, int64_t *count)
{
	struct trc *s = (struct trc *)st;
	int N = s->N, D = s->D, L = s->c->num_layers, nuniq = 0;
	/* the tiles mask causally only: rows of several documents (packed conversations, or
	 * a row's padding after them) take the materialised attention, whose buffers are
	 * there, this micro-step */
	bool packed = false;
	for (int i = 0; s->tiles && i < N; i++)
		packed |= pos[i] != i % s->T;
	s->tiled = s->tiles && !packed;
	for (int i = 0; i < N; i++)
		if (inputs[i] < 0 || inputs[i] >= s->V || targets[i] < -1 || targets[i] >= s->V)
			return err_set("training: token id %d or target %d at %d is not in the "
				       "vocabulary (%d)",
				       inputs[i], targets[i], i, s->V);
	memcpy(s->ids_h, inputs, N * sizeof *inputs);
	memcpy(s->ids_h + N, targets, N * sizeof *targets);
	memcpy(s->ids_h + 5 * N + 1, pos, N * sizeof *pos);
	if (backward && embed_lists(s, inputs, &nuniq))
		return -1;
	CUDA_CHECK(cudaMemcpyAsync(s->ids_d, s->ids_h, (6 * (size_t)N + 1) * sizeof(int32_t),
				   cudaMemcpyHostToDevice, s->stream));
	int fi = train_final(s->t);
	if (trc_embed(s->x, s->w[0], s->ids_d, N, D, s->stream))
		return -1;
	for (int l = 0; l < L; l++)
		if (trc_layer_forward(s, l, &s->act[s->layers == 1 ? 0 : l]))
			return -1;
	const float *xl = s->x + (size_t)L * N * D;
	if (trc_rmsnorm(s->xf, s->rstd_f, xl, s->w[fi], N, D, s->eps, s->stream) ||
	    loss_chunks(s, backward))
		return -1;
	CUDA_CHECK(cudaMemcpyAsync(s->loss_h, s->loss_d, N * sizeof(double), cudaMemcpyDeviceToHost,
				   s->stream));
	if (backward) {
		if (trc_rmsnorm_back(s->dx, s->g[fi], s->part, s->dxn, xl, s->rstd_f, s->w[fi], N, D,
				     false, s->stream))
			return -1;
		for (int l = L - 1; l >= 0; l--) {
			struct trc_act *a = &s->act[s->layers == 1 ? 0 : l];
			if ((s->layers == 1 && trc_layer_forward(s, l, a)) || trc_layer_backward(s, l, a))
				return -1;
		}
		const int32_t *u = s->emb_d;
		if (trc_embed_back(s->g[0], s->dx, u, u + nuniq, u + 2 * N + 1, nuniq, D, s->stream))
			return -1;
	}
	CUDA_CHECK(cudaStreamSynchronize(s->stream));
	for (int i = 0; i < N; i++)
		if (targets[i] >= 0) {
			*loss_sum += s->loss_h[i];
			(*count)++;
		}
	return 0;
}

/* ---- the optimizer -------------------------------------------------------------------------------- */

static int trc_zero_grad(void *st)
{
	struct trc *s = (struct trc *)st;
	CUDA_CHECK(cudaMemsetAsync(s->g[0], 0, s->t->total * sizeof(float), s->stream));
	return 0;
}

static int trc_finish_grads(void *st, double scale, double clip, double *norm)
{
	struct trc *s = (struct trc *)st;
	size_t n = s->t->total;
	if (trc_scale(s->g[0], n, (float)scale, s->sq_d, s->stream))
		return -1;
	CUDA_CHECK(cudaMemcpyAsync(s->sq_h, s->sq_d, TRC_SQ_BLOCKS * sizeof(double),
				   cudaMemcpyDeviceToHost, s->stream));
	CUDA_CHECK(cudaStreamSynchronize(s->stream));
	double total = 0;
	for (int i = 0; i < TRC_SQ_BLOCKS; i++)
		total += s->sq_h[i];
	*norm = sqrt(total);
	if (clip > 0 && isfinite(*norm) && *norm > clip &&
	    trc_scale(s->g[0], n, (float)(clip / (*norm + 1e-6)), NULL, s->stream))
		return -1;
	return 0;
}

/* The bf16 copies of the weights, after an upload (AdamW writes them after a step). */
static int refresh_half(struct trc *s)
{
	return s->exact ? 0 : trc_to_bf16(s->wh, s->w[0], s->t->total, s->stream);
}

static int trc_adamw_step(void *st, const struct eng_adamw *h, int64_t step)
{
	struct trc *s = (struct trc *)st;
	double bc1 = eng_adamw_bias(h->beta1, step), bc2 = eng_adamw_bias(h->beta2, step);
	for (int i = 0; i < s->t->nparams; i++) {
		const struct eng_param *p = &s->t->params[i];
		struct trc_adamw a = {p->decay ? (float)(1.0 - h->lr * h->weight_decay) : 1.0f,
				      (float)h->beta1, (float)h->beta2, (float)(1.0 - h->beta1),
				      (float)(1.0 - h->beta2), (float)h->eps,
				      (float)(h->lr / bc1), (float)(1.0 / sqrt(bc2))};
		if (trc_adamw(s->w[i], s->g[i], s->m[i], s->v[i], s->whp[i], (size_t)p->n, a,
			      s->stream))
			return -1;
	}
	CUDA_CHECK(cudaStreamSynchronize(s->stream));
	return 0;
}

/* The host arrays (w | g | m | v, each t->total floats) have the device's layout. */
static int trc_download(void *st)
{
	struct trc *s = (struct trc *)st;
	CUDA_CHECK(cudaStreamSynchronize(s->stream));
	CUDA_CHECK(cudaMemcpy(s->t->host, s->dev, 4 * s->t->total * sizeof(float),
			      cudaMemcpyDeviceToHost));
	return 0;
}

static int trc_upload(void *st)
{
	struct trc *s = (struct trc *)st;
	CUDA_CHECK(cudaMemcpy(s->dev, s->t->host, 4 * s->t->total * sizeof(float),
			      cudaMemcpyHostToDevice));
	if (refresh_half(s))
		return -1;
	CUDA_CHECK(cudaStreamSynchronize(s->stream));
	return 0;
}

/* cuBLAS's rate on a large product (8192^3, random operands) in the trainer's precision,
 * the best of a few after a warm-up, in GFLOP/s: the ceiling the model FLOP utilisation
 * is against. */
static double trc_peak(void *st)
{
	struct trc *s = (struct trc *)st;
	const int n = 8192;
	size_t e = (size_t)n * n;
	float *buf = NULL;
	bf16 *half = NULL;
	cudaEvent_t e0 = NULL, e1 = NULL;
	double best = 0;
	if (cudaMalloc((void **)&buf, 3 * e * sizeof(float)) != cudaSuccess ||
	    (!s->exact && cudaMalloc((void **)&half, 2 * e * sizeof(bf16)) != cudaSuccess) ||
	    cudaEventCreate(&e0) != cudaSuccess || cudaEventCreate(&e1) != cudaSuccess)
		goto out;
	if (trc_fill_random(buf, 2 * e, 7, s->stream) ||
	    (half && trc_to_bf16(half, buf, 2 * e, s->stream)))
		goto out;
	for (int r = 0; r < 5; r++) {
		cudaEventRecord(e0, s->stream);
		if (trc_mm(s, buf + 2 * e, n, false, buf, half, n, false, buf + e, half ? half + e : NULL,
			   n, true, n, n, n))
			goto out;
		cudaEventRecord(e1, s->stream);
		cudaEventSynchronize(e1);
		float ms = 0;
		cudaEventElapsedTime(&ms, e0, e1);
		double rate = 2.0 * n * (double)n * n / (ms * 1e-3) / 1e9;
		if (r > 0 && rate > best)
			best = rate;
	}
out:
	cudaGetLastError();
	if (e0)
		cudaEventDestroy(e0);
	if (e1)
		cudaEventDestroy(e1);
	cudaFree(buf);
	cudaFree(half);
	return best;
}

static bool trc_exact(void *st)
{
	return ((struct trc *)st)->exact;
}

/* The attention's kernels: the tiled ones, and bf16 operands, give other bits than
 * the materialised in TF32 (at most 15 characters: the train state keeps 16) */
static const char *trc_kernels(void *st)
{
	const struct trc *s = (const struct trc *)st;
	return s->tiles ? "tiled" : s->attn_bf16 ? "bf16 attention" : "materialised";
}

static const struct train_ops ops = {
	"cuda",       trc_plan,      trc_init, trc_free,   trc_micro, trc_zero_grad, trc_finish_grads,
	trc_adamw_step, trc_download, trc_upload, trc_peak, trc_exact,
	trc_kernels,
};

const struct train_ops *cuda_train_ops(void)
{
	return &ops;
}
