/* upload.cu — the weights onto the device once, in one allocation, through pinned
 * staging buffers so that reading the memory-mapped file overlaps the transfer.
 * bf16 matrices stay as the file has them; block-quantized rows are repacked into
 * planes (qblocks.cuh) and padded to 16 bytes; F16 and F32 matrices and every norm
 * become bf16, what the kernels read. */
#include <stdlib.h>
#include <string.h>

#include <cuda_fp16.h>

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

/* Where the rows of one device tensor come from: `count` file tensors stacked (q, k,
 * v), or with interleave two whose rows alternate (gate, up); a norm is one row. */
struct rows_src {
	const struct eng_tensor *t[3];
	int count;
	bool interleave;
	int64_t K, rows;  /* weights per row; rows of the device tensor */
	int dt;           /* the device's type: ENG_BF16 or the block type */
	size_t row_bytes; /* a device row */
};

/* One device tensor to place: a matrix (mat) or a norm (norm). */
struct job {
	struct rows_src rs;
	struct cu_mat *mat;
	const bf16 **norm;
};

static int64_t rows_of(const struct eng_tensor *t)
{
	return t->ndim == 1 ? 1 : t->shape[0];
}

/* Row r of the device tensor into out: the file's bytes when the types agree (block
 * types repacked, padded with zeros), else bf16 from F16 or F32. */
static void fill_row(const struct rows_src *rs, int64_t r, char *out)
{
	const struct eng_tensor *t = rs->t[0];
	int64_t tr = r;
	if (rs->interleave) {
		t = rs->t[r % 2];
		tr = r / 2;
	} else {
		for (int i = 1; tr >= rows_of(t); i++) {
			tr -= rows_of(t);
			t = rs->t[i];
		}
	}
	size_t src_bytes = cu_row_bytes(t->dtype, rs->K);
	const char *src = (const char *)t->data + tr * src_bytes;
	bf16 *o = (bf16 *)out;
	if (t->dtype == ENG_F16) {
		for (int64_t k = 0; k < rs->K; k++) {
			__half h;
			memcpy(&h, src + 2 * k, 2);
			o[k] = __float2bfloat16(__half2float(h));
		}
	} else if (t->dtype == ENG_F32) {
		for (int64_t k = 0; k < rs->K; k++) {
			float f;
			memcpy(&f, src + 4 * k, 4);
			o[k] = __float2bfloat16(f);
		}
	} else {
		if (cu_quantized(t->dtype))
			cu_qrepack_row(t->dtype, (uint8_t *)out, (const uint8_t *)src, rs->K);
		else
			memcpy(out, src, src_bytes);
		memset(out + src_bytes, 0, rs->row_bytes - src_bytes);
	}
}

/* The device tensor's rows, built straight into the pinned staging buffers. */
static int upload_rows(struct uploader *u, char *dst, const struct rows_src *rs)
{
	int64_t per = STAGE_BYTES / rs->row_bytes;
	if (per < 1)
		return err_set("cuda: a weight row of %zu bytes is larger than the staging "
			       "buffer",
			       rs->row_bytes);
	for (int64_t r0 = 0; r0 < rs->rows; r0 += per) {
		int64_t n = rs->rows - r0 < per ? rs->rows - r0 : per;
		int b = u->turn;
		u->turn ^= 1;
		CUDA_CHECK(cudaEventSynchronize(u->done[b]));
		for (int64_t r = 0; r < n; r++)
			fill_row(rs, r0 + r, (char *)u->stage[b] + r * rs->row_bytes);
		CUDA_CHECK(cudaMemcpyAsync(dst + r0 * rs->row_bytes, u->stage[b], n * rs->row_bytes,
					   cudaMemcpyHostToDevice, u->stream));
		CUDA_CHECK(cudaEventRecord(u->done[b], u->stream));
		u->sent += n * rs->row_bytes;
		if (u->progress)
			u->progress(u->sent, u->total);
	}
	return 0;
}

/* Places a job at *off (256-byte aligned) and uploads it. Stacked bf16 tensors go as
 * the bytes they are, the way they always did. */
static int place(struct cu_state *s, struct uploader *u, size_t *off, const struct job *j)
{
	const struct rows_src *rs = &j->rs;
	char *dst = s->weights + *off;
	bool as_is = !rs->interleave;
	for (int i = 0; i < rs->count; i++)
		as_is = as_is && rs->t[i]->dtype == ENG_BF16;
	if (as_is) {
		size_t done = 0;
		for (int i = 0; i < rs->count; i++) {
			if (upload(u, dst + done, rs->t[i]->data, rs->t[i]->nbytes))
				return -1;
			done += rs->t[i]->nbytes;
		}
	} else if (upload_rows(u, dst, rs)) {
		return -1;
	}
	if (j->mat) {
		j->mat->w = dst;
		j->mat->t = rs->dt;
		j->mat->rows = (int)rs->rows;
		j->mat->stride = rs->row_bytes;
	} else {
		*j->norm = (const bf16 *)dst;
	}
	*off += align256((size_t)rs->rows * rs->row_bytes);
	return 0;
}

/* The device type of a file tensor's type: block types stay, float types become bf16. */
static int device_type(int t)
{
	return cu_quantized(t) ? t : ENG_BF16;
}

/* A job of `count` tensors into *mat, or of one norm into *norm when norm is set. */
static int add_job(struct job *jobs, int *n, const struct eng_tensor *const *ts, int count,
		   bool interleave, struct cu_mat *mat, const bf16 **norm)
{
	struct job *j = &jobs[(*n)++];
	memset(j, 0, sizeof *j);
	j->mat = mat;
	j->norm = norm;
	j->rs.count = count;
	j->rs.interleave = interleave;
	j->rs.dt = device_type(ts[0]->dtype);
	j->rs.K = norm ? ts[0]->shape[0] : ts[0]->shape[1];
	for (int i = 0; i < count; i++) {
		j->rs.t[i] = ts[i];
		j->rs.rows += norm ? 1 : ts[i]->shape[0];
		if ((unsigned)ts[i]->dtype < ENG_DTYPE_COUNT && ts[i]->dtype > ENG_F32 &&
		    !cu_quantized(ts[i]->dtype))
			return err_set("cuda backend: no kernel for %s weights (in %s); run this "
				       "model with --backend cpu",
				       eng_dtype_name(ts[i]->dtype),
				       norm         ? "a norm"
				       : interleave ? "gate/up"
						    : "q/k/v or another matrix");
		if ((unsigned)ts[i]->dtype >= ENG_DTYPE_COUNT ||
		    !cu_row_bytes(ts[i]->dtype, j->rs.K) || device_type(ts[i]->dtype) != j->rs.dt ||
		    (norm && cu_quantized(j->rs.dt)))
			return err_set("cuda backend: a %s tensor with a %s one in %s is not "
				       "supported",
				       (unsigned)ts[i]->dtype < ENG_DTYPE_COUNT
					       ? eng_dtype_name(ts[i]->dtype)
					       : "unknown-type",
				       eng_dtype_name(ts[0]->dtype),
				       norm         ? "a norm"
				       : interleave ? "gate/up"
						    : "q/k/v");
	}
	j->rs.row_bytes = cu_quantized(j->rs.dt) ? cu_qrow_stride(j->rs.dt, j->rs.K)
						 : (size_t)j->rs.K * sizeof(bf16);
	return 0;
}

/* Every device tensor of the model, in upload order. */
static int make_jobs(struct cu_state *s, const struct eng_weights *w, bool tied, struct job *jobs,
		     int *n)
{
	*n = 0;
	const struct eng_tensor *one[1] = {&w->embed};
	if (add_job(jobs, n, one, 1, false, &s->embed, NULL))
		return -1;
	one[0] = &w->final_norm;
	if (add_job(jobs, n, one, 1, false, NULL, &s->final_norm))
		return -1;
	one[0] = &w->lm_head;
	if (!tied && add_job(jobs, n, one, 1, false, &s->lm_head, NULL))
		return -1;
	for (int l = 0; l < s->c->num_layers; l++) {
		const struct eng_layer *L = &w->layers[l];
		struct cu_layer *d = &s->layers[l];
		const struct eng_tensor *norms[4] = {&L->input_norm, &L->post_norm, &L->q_norm,
						     &L->k_norm};
		const bf16 **norm_dst[4] = {&d->input_norm, &d->post_norm, &d->q_norm, &d->k_norm};
		for (int i = 0; i < 4; i++)
			if (add_job(jobs, n, &norms[i], 1, false, NULL, norm_dst[i]))
				return -1;
		const struct eng_tensor *qkv[3] = {&L->wq, &L->wk, &L->wv};
		int tq = device_type(L->wq.dtype);
		d->n_qkv = tq == device_type(L->wk.dtype) && tq == device_type(L->wv.dtype) ? 1 : 3;
		for (int i = 0; i < d->n_qkv; i++)
			if (add_job(jobs, n, qkv + i, d->n_qkv == 1 ? 3 : 1, false, &d->qkv[i],
				    NULL))
				return -1;
		const struct eng_tensor *gu[2] = {&L->w_gate, &L->w_up};
		one[0] = &L->wo;
		if (add_job(jobs, n, one, 1, false, &d->wo, NULL) ||
		    add_job(jobs, n, gu, 2, true, &d->gate_up, NULL))
			return -1;
		one[0] = &L->w_down;
		if (add_job(jobs, n, one, 1, false, &d->down, NULL))
			return -1;
	}
	return 0;
}

int cu_upload_weights(struct cu_state *s, const struct eng_weights *w,
		      void (*progress)(size_t, size_t))
{
	const struct eng_config *c = s->c;
	bool tied = w->lm_head.data == w->embed.data;
	int njobs = 0;
	struct job *jobs = (struct job *)calloc(3 + 10 * (size_t)c->num_layers, sizeof *jobs);
	if (!jobs)
		return err_set("cuda: out of host memory for the weight upload");
	if (make_jobs(s, w, tied, jobs, &njobs)) {
		free(jobs);
		return -1;
	}
	s->weight_bytes = 0;
	s->quantized = false;
	for (int i = 0; i < njobs; i++) {
		s->weight_bytes += align256((size_t)jobs[i].rs.rows * jobs[i].rs.row_bytes);
		s->quantized = s->quantized || cu_quantized(jobs[i].rs.dt);
	}
	if (cudaMalloc((void **)&s->weights, s->weight_bytes) != cudaSuccess) {
		size_t free_b = 0, total_b = 0;
		cudaGetLastError();
		cudaMemGetInfo(&free_b, &total_b);
		free(jobs);
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
	for (int i = 0; i < njobs; i++)
		if (place(s, &u, &off, &jobs[i]))
			goto out;
	if (tied)
		s->lm_head = s->embed;
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
	free(jobs);
	return rc;
}
