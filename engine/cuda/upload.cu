/* upload.cu — the weights onto the device once, in one allocation, through pinned
 * staging buffers so that reading the memory-mapped file overlaps the transfer. */
#include <stdlib.h>
#include <string.h>

#include "engine/cuda/state.cuh"

/* Pinned staging buffers for the weight upload (two, alternating). */
#define STAGE_BYTES (64u << 20)

static size_t align256(size_t n)
{
	return (n + 255) & ~(size_t)255;
}

struct uploader {
	cudaStream_t stream;
	void *stage[2];
	cudaEvent_t done[2];
	int turn;
	void (*progress)(size_t done_bytes, size_t total_bytes); /* may be NULL */
	size_t sent, total;
};

/* Copies host bytes (the mmap) to the device through alternating pinned buffers, so
 * reading the file overlaps the transfer. */
static int upload(struct uploader *u, void *dst, const void *src, size_t bytes)
{
	for (size_t off = 0; off < bytes; off += STAGE_BYTES) {
		size_t n = bytes - off < STAGE_BYTES ? bytes - off : STAGE_BYTES;
		int b = u->turn;
		u->turn ^= 1;
		CUDA_CHECK(cudaEventSynchronize(u->done[b]));
		memcpy(u->stage[b], (const char *)src + off, n);
		CUDA_CHECK(cudaMemcpyAsync((char *)dst + off, u->stage[b], n,
					   cudaMemcpyHostToDevice, u->stream));
		CUDA_CHECK(cudaEventRecord(u->done[b], u->stream));
		u->sent += n;
		if (u->progress)
			u->progress(u->sent, u->total);
	}
	return 0;
}

/* Places `t` at *off in the device buffer (256-byte aligned) and uploads it. */
static int place(struct cu_state *s, struct uploader *u, size_t *off, const struct eng_tensor *t,
		 const bf16 **where)
{
	*where = (const bf16 *)(s->weights + *off);
	if (upload(u, s->weights + *off, t->data, t->nbytes))
		return -1;
	*off += align256(t->nbytes);
	return 0;
}

/* Several tensors stacked back to back (rows concatenated), e.g. q, k, v. */
static int place_stacked(struct cu_state *s, struct uploader *u, size_t *off,
			 const struct eng_tensor *const *ts, int count, const bf16 **where)
{
	*where = (const bf16 *)(s->weights + *off);
	size_t total = 0;
	for (int i = 0; i < count; i++) {
		if (upload(u, s->weights + *off + total, ts[i]->data, ts[i]->nbytes))
			return -1;
		total += ts[i]->nbytes;
	}
	*off += align256(total);
	return 0;
}

/* The MLP's gate and up rows interleaved (gate row f at 2f, up row f at 2f + 1), so
 * that the decode's matrix-vector product makes silu(gate) * up of a row pair in one
 * warp, and the prefill's GEMM leaves each pair side by side. */
static int place_gate_up(struct cu_state *s, struct uploader *u, size_t *off,
			 const struct eng_tensor *gate, const struct eng_tensor *up,
			 const bf16 **where)
{
	size_t row = gate->nbytes / gate->shape[0], rows = gate->shape[0];
	size_t batch = STAGE_BYTES / (2 * row), done = 0;
	char *tmp = (char *)malloc(batch * 2 * row);
	if (!tmp)
		return err_set("cuda: out of host memory for the weight upload");
	*where = (const bf16 *)(s->weights + *off);
	for (size_t r0 = 0; r0 < rows; r0 += batch) {
		size_t n = rows - r0 < batch ? rows - r0 : batch;
		for (size_t r = 0; r < n; r++) {
			memcpy(tmp + 2 * r * row, (const char *)gate->data + (r0 + r) * row, row);
			memcpy(tmp + (2 * r + 1) * row, (const char *)up->data + (r0 + r) * row,
			       row);
		}
		if (upload(u, s->weights + *off + done, tmp, 2 * n * row)) {
			free(tmp);
			return -1;
		}
		done += 2 * n * row;
	}
	free(tmp);
	*off += align256(done);
	return 0;
}

static size_t weights_size(const struct eng_weights *w, int layers, bool tied)
{
	size_t n = align256(w->embed.nbytes) + align256(w->final_norm.nbytes);
	if (!tied)
		n += align256(w->lm_head.nbytes);
	for (int l = 0; l < layers; l++) {
		const struct eng_layer *L = &w->layers[l];
		n += align256(L->input_norm.nbytes) + align256(L->post_norm.nbytes) +
		     align256(L->q_norm.nbytes) + align256(L->k_norm.nbytes) +
		     align256(L->wq.nbytes + L->wk.nbytes + L->wv.nbytes) + align256(L->wo.nbytes) +
		     align256(L->w_gate.nbytes + L->w_up.nbytes) + align256(L->w_down.nbytes);
	}
	return n;
}

int cu_upload_weights(struct cu_state *s, const struct eng_weights *w,
		      void (*progress)(size_t, size_t))
{
	const struct eng_config *c = s->c;
	bool tied = w->lm_head.data == w->embed.data;
	s->weight_bytes = weights_size(w, c->num_layers, tied);
	if (cudaMalloc((void **)&s->weights, s->weight_bytes) != cudaSuccess) {
		size_t free_b = 0, total_b = 0;
		cudaGetLastError();
		cudaMemGetInfo(&free_b, &total_b);
		return err_set("cuda: the weights need %.2f GB of device memory, %.2f GB of "
			       "%.2f GB are free",
			       s->weight_bytes / 1e9, free_b / 1e9, total_b / 1e9);
	}
	struct uploader u = {s->stream, {NULL, NULL},   {NULL, NULL}, 0, progress,
			     0,         s->weight_bytes};
	int rc = -1;
	size_t off = 0;
	if (cudaMallocHost(&u.stage[0], STAGE_BYTES) != cudaSuccess ||
	    cudaMallocHost(&u.stage[1], STAGE_BYTES) != cudaSuccess ||
	    cudaEventCreate(&u.done[0]) != cudaSuccess ||
	    cudaEventCreate(&u.done[1]) != cudaSuccess) {
		err_set("cuda: cannot allocate %u MB of pinned staging memory",
			2 * (STAGE_BYTES >> 20));
		goto out;
	}
	if (place(s, &u, &off, &w->embed, &s->embed) ||
	    place(s, &u, &off, &w->final_norm, &s->final_norm))
		goto out;
	if (tied)
		s->lm_head = s->embed;
	else if (place(s, &u, &off, &w->lm_head, &s->lm_head))
		goto out;
	for (int l = 0; l < c->num_layers; l++) {
		const struct eng_layer *L = &w->layers[l];
		struct cu_layer *d = &s->layers[l];
		const struct eng_tensor *qkv[3] = {&L->wq, &L->wk, &L->wv};
		if (place(s, &u, &off, &L->input_norm, &d->input_norm) ||
		    place(s, &u, &off, &L->post_norm, &d->post_norm) ||
		    place(s, &u, &off, &L->q_norm, &d->q_norm) ||
		    place(s, &u, &off, &L->k_norm, &d->k_norm) ||
		    place_stacked(s, &u, &off, qkv, 3, &d->wqkv) ||
		    place(s, &u, &off, &L->wo, &d->wo) ||
		    place_gate_up(s, &u, &off, &L->w_gate, &L->w_up, &d->w_gate_up) ||
		    place(s, &u, &off, &L->w_down, &d->w_down))
			goto out;
	}
	if (cudaStreamSynchronize(s->stream) != cudaSuccess) {
		err_set("cuda: weight upload failed: %s", cudaGetErrorString(cudaGetLastError()));
		goto out;
	}
	if (progress)
		progress(s->weight_bytes, s->weight_bytes);
	rc = 0;
out:
	for (int i = 0; i < 2; i++) {
		if (u.stage[i])
			cudaFreeHost(u.stage[i]);
		if (u.done[i])
			cudaEventDestroy(u.done[i]);
	}
	return rc;
}
