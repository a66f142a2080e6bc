/* step.cu — the backend's forward entries. A decode step is recorded once per kind
 * (the logits back, or the id sampled on the device) as a CUDA graph and replayed at
 * every position, its inputs read from device memory; a prompt goes in chunks of at
 * most CHUNK tokens. The captured softmax rows are copied back after either. */
#include <string.h>

#include "engine/cuda/state.cuh"

/* Enqueues one decode step whose id and position are in s->in (and, to sample, whose
 * settings are in s->sp_dev), ending with the copy of its result to pinned memory. */
static int enqueue_step(struct cu_state *s, enum step_kind kind)
{
	int V = s->c->vocab_size;
	if (cu_forward_chunk(s, 1, false))
		return -1;
	if (kind == STEP_LOGITS) {
		CUDA_CHECK(cudaMemcpyAsync(s->logits_host, s->logits, (size_t)V * sizeof(float),
					   cudaMemcpyDeviceToHost, s->stream));
		return 0;
	}
	struct cu_sample_args sa = {s->logits, s->sp_dev, V, s->cand, s->pick + 3, s->pick};
	if (cu_sample(&sa, s->stream))
		return -1;
	CUDA_CHECK(cudaMemcpyAsync(s->pick_host, s->pick, 3 * sizeof(int), cudaMemcpyDeviceToHost,
				   s->stream));
	return 0;
}

void cu_drop_graph(struct step_graph *g)
{
	if (g->exec)
		cudaGraphExecDestroy(g->exec);
	g->exec = NULL;
	g->bytes = 0;
}

/* Records the decode step of this kind into its graph. The graph's device memory is
 * measured as the drop in free memory across the instantiation. */
static int build_graph(struct cu_state *s, enum step_kind kind)
{
	struct step_graph *sg = &s->graph[kind];
	cudaGraph_t g;
	cu_drop_graph(sg);
	CUDA_CHECK(cudaStreamBeginCapture(s->stream, cudaStreamCaptureModeThreadLocal));
	int rc = enqueue_step(s, kind);
	cudaError_t e = cudaStreamEndCapture(s->stream, &g);
	if (rc)
		return rc;
	if (e != cudaSuccess)
		return err_set("cuda: graph capture failed: %s", cudaGetErrorString(e));
	size_t free0 = 0, free1 = 0, total = 0;
	cudaMemGetInfo(&free0, &total);
	e = cudaGraphInstantiate(&sg->exec, g, 0);
	cudaGraphDestroy(g);
	if (e != cudaSuccess) {
		sg->exec = NULL;
		return err_set("cuda: graph instantiation failed: %s", cudaGetErrorString(e));
	}
	cudaMemGetInfo(&free1, &total);
	sg->bytes = free0 > free1 ? free0 - free1 : 0;
	sg->capture = s->capture;
	return 0;
}

static int copy_capture(struct cu_state *s, int nk)
{
	const struct eng_config *c = s->c;
	size_t rows = (size_t)c->num_layers * c->num_heads;
	CUDA_CHECK(cudaMemcpy2DAsync(s->cap_host, (size_t)s->ctx * sizeof(float), s->cap,
				     (size_t)s->ctx * sizeof(float), (size_t)nk * sizeof(float),
				     rows, cudaMemcpyDeviceToHost, s->stream));
	CUDA_CHECK(cudaStreamSynchronize(s->stream));
	s->cap_len = nk;
	return 0;
}

/* One token at pos through the graph of this kind (or plain launches when graphs are
 * off); its result is in logits_host or pick_host afterwards. */
static int decode_step(struct cu_state *s, int32_t id, int pos, enum step_kind kind)
{
	s->in_host[0] = pos;
	s->in_host[1] = id;
	CUDA_CHECK(cudaMemcpyAsync(s->in, s->in_host, 2 * sizeof(int), cudaMemcpyHostToDevice,
				   s->stream));
	if (kind == STEP_SAMPLE)
		CUDA_CHECK(cudaMemcpyAsync(s->sp_dev, s->sp_host, sizeof *s->sp_host,
					   cudaMemcpyHostToDevice, s->stream));
	if (s->use_graph) {
		struct step_graph *g = &s->graph[kind];
		if ((!g->exec || g->capture != s->capture) && build_graph(s, kind))
			return -1;
		CUDA_CHECK(cudaGraphLaunch(g->exec, s->stream));
	} else if (enqueue_step(s, kind)) {
		return -1;
	}
	CUDA_CHECK(cudaStreamSynchronize(s->stream));
	if (s->capture && copy_capture(s, pos + 1))
		return -1;
	return 0;
}

int cuda_forward(void *vs, const int32_t *ids, int n, int pos, float *logits, bool all)
{
	struct cu_state *s = (struct cu_state *)vs;
	int V = s->c->vocab_size;
	s->cap_len = 0;
	if (n == 1) {
		if (decode_step(s, ids[0], pos, STEP_LOGITS))
			return -1;
		memcpy(logits, s->logits_host, (size_t)V * sizeof(float));
		return 0;
	}
	int chunk = all ? LOGIT_ROWS : CHUNK;
	for (int done = 0; done < n;) {
		int m = n - done < chunk ? n - done : chunk;
		bool last = done + m == n;
		s->in_host[0] = pos + done;
		memcpy(s->in_host + 1, ids + done, (size_t)m * sizeof(int));
		CUDA_CHECK(cudaMemcpyAsync(s->in, s->in_host, (size_t)(m + 1) * sizeof(int),
					   cudaMemcpyHostToDevice, s->stream));
		bool keep_capture = s->capture;
		s->capture = keep_capture && last; /* only the final chunk's last query */
		int rc = cu_forward_chunk(s, m, all);
		s->capture = keep_capture;
		if (rc)
			return -1;
		if (all || last) {
			float *dst = all ? logits + (size_t)done * V : logits;
			size_t rows = all ? (size_t)m : 1;
			CUDA_CHECK(cudaMemcpyAsync(dst, s->logits, rows * V * sizeof(float),
						   cudaMemcpyDeviceToHost, s->stream));
		}
		CUDA_CHECK(cudaStreamSynchronize(s->stream));
		done += m;
	}
	if (s->capture && copy_capture(s, pos + n))
		return -1;
	return 0;
}

/* ---- sampling on the device ----------------------------------------------------------- */

bool cuda_sample_ok(void *vs, const struct eng_sampling *sp)
{
	struct cu_state *s = (struct cu_state *)vs;
	if (s->no_sampling)
		return false;
	if (sp->greedy)
		return true;
	return sp->top_k >= 1 && sp->top_k <= CU_SAMPLE_MAX_K && sp->top_k < sp->vocab_limit &&
	       sp->top_k < s->c->vocab_size && sp->temperature > 0;
}

int cuda_forward_sample(void *vs, int32_t id, int pos, const struct eng_sampling *sp, int32_t *next,
			bool *used_uniform)
{
	struct cu_state *s = (struct cu_state *)vs;
	struct cu_sample_params *p = s->sp_host;
	int V = s->c->vocab_size;
	p->k = sp->greedy ? 1 : sp->top_k;
	p->n_recent = sp->n_recent;
	p->vocab = V;
	p->vocab_limit = sp->vocab_limit;
	p->temperature = sp->temperature;
	p->top_p = sp->top_p;
	p->min_p = sp->min_p;
	p->presence_penalty = sp->presence_penalty;
	p->repetition_penalty = sp->repetition_penalty;
	p->uniform = sp->uniform;
	if (sp->n_recent)
		memcpy(p->recent, sp->recent, (size_t)sp->n_recent * sizeof(int32_t));
	s->cap_len = 0;
	if (decode_step(s, id, pos, STEP_SAMPLE))
		return -1;
	if (s->pick_host[2] >= 0 && s->pick_host[2] < V)
		return err_set("forward: logit %d at position %d is not finite "
			       "(NaN or Inf in the weights or activations)",
			       s->pick_host[2], pos);
	if (s->pick_host[0] < 0 || s->pick_host[0] >= sp->vocab_limit)
		return err_set("cuda: the device sampler picked id %d (limit %d)", s->pick_host[0],
			       sp->vocab_limit);
	*next = s->pick_host[0];
	*used_uniform = s->pick_host[1] != 0;
	return 0;
}
