/* cuda.cu — the CUDA backend's table (engine/backend.h). Setup and teardown are
 * plan.cu's and the forward passes step.cu's; here are the queries of a running
 * backend (the captured attention, its memory, the device's limits) and the module's
 * check that there is a device at all. */
#include <string.h>

#include "engine/cuda/state.cuh"

static const float *cuda_attention(void *vs, int layer, int head, int *len)
{
	struct cu_state *s = (struct cu_state *)vs;
	*len = 0;
	if (!s->cap_len || layer < 0 || layer >= s->c->num_layers || head < 0 ||
	    head >= s->c->num_heads)
		return NULL;
	*len = s->cap_len;
	return s->cap_host + ((size_t)layer * s->c->num_heads + head) * s->ctx;
}

static void cuda_stats(void *vs, struct eng_backend_stats *out)
{
	struct cu_state *s = (struct cu_state *)vs;
	memset(out, 0, sizeof *out);
	out->weight_bytes = s->weight_bytes;
	out->kv_bytes_allocated = s->kv_bytes;
	out->kv_bytes_per_token = s->kv_bytes / s->ctx;
	out->scratch_bytes = s->scratch_bytes;
	out->graph_bytes = s->graph[STEP_LOGITS].bytes + s->graph[STEP_SAMPLE].bytes;
	cudaMemGetInfo(&out->device_free, &out->device_total);
}

static int cuda_measure(void *vs, const struct eng_measure_request *rq, struct eng_peaks *out)
{
	struct cu_state *s = (struct cu_state *)vs;
	if (rq->gemm_m < 1 || rq->gemm_n < 1 || rq->gemm_k < 1)
		return err_set("cuda backend: GEMM shape %dx%dx%d", rq->gemm_m, rq->gemm_n,
			       rq->gemm_k);
	return cu_measure_peaks(s->blas, s->stream, rq->gemm_m, rq->gemm_n, rq->gemm_k, out);
}

static const struct eng_backend_ops cuda_ops = {
	"cuda",         cuda_init,  cuda_free,      cuda_forward,        cuda_set_capture,
	cuda_attention, cuda_stats, cuda_sample_ok, cuda_forward_sample, cuda_measure,
	NULL, /* prefill_min: no bit-for-bit promise between prefill and decode here */
	NULL, /* hidden: embeddings run on the CPU engine */
};

const struct eng_backend_ops *cuda_backend_ops(void)
{
	int count = 0;
	cudaError_t e = cudaGetDeviceCount(&count);
	if (e != cudaSuccess || count == 0) {
		err_set("no usable CUDA device (%s)",
			e != cudaSuccess ? cudaGetErrorString(e) : "none found");
		cudaGetLastError(); /* clear the sticky "no device" error */
		return NULL;
	}
	return &cuda_ops;
}
