/* train_kernels.cu — the element-wise steps of a training step on the device, each
 * beside its backward (the CPU's engine/cpu/train_ops.c computes the same). Sums across
 * a block go through fixed trees (warp shuffles, then the warps in order), so every
 * run adds in the same order. */
#include "engine/cuda/train.cuh"

/* Sum over a block of `double`s, every thread gets it (a fixed tree). */
__device__ static double block_sum_d(double v)
{
	__shared__ double ws[32];
	int lane = threadIdx.x % 32, warp = threadIdx.x / 32, nw = CEIL_DIV(blockDim.x, 32);
	for (int o = 16; o > 0; o /= 2)
		v += __shfl_xor_sync(0xffffffffu, v, o);
	__syncthreads();
	if (lane == 0)
		ws[warp] = v;
	__syncthreads();
	double t = 0;
	for (int i = 0; i < nw; i++)
		t += ws[i];
	return t;
}

__device__ static float block_max(float v)
{
	__shared__ float ws[32];
	int lane = threadIdx.x % 32, warp = threadIdx.x / 32, nw = CEIL_DIV(blockDim.x, 32);
	for (int o = 16; o > 0; o /= 2)
		v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
	__syncthreads();
	if (lane == 0)
		ws[warp] = v;
	__syncthreads();
	float t = ws[0];
	for (int i = 1; i < nw; i++)
		t = fmaxf(t, ws[i]);
	return t;
}

/* ---- embedding ------------------------------------------------------------------------- */

__global__ static void embed_kernel(float *x, const float *E, const int32_t *ids, int D)
{
	const float *src = E + (size_t)ids[blockIdx.x] * D;
	for (int i = threadIdx.x; i < D; i += blockDim.x)
		x[(size_t)blockIdx.x * D + i] = src[i];
}

int trc_embed(float *x, const float *E, const int32_t *ids, int N, int D, cudaStream_t s)
{
	embed_kernel<<<N, 256, 0, s>>>(x, E, ids, D);
	LAUNCH_CHECK();
	return 0;
}

__global__ static void embed_back_kernel(float *gE, const float *dx, const int32_t *uniq,
					 const int32_t *start, const int32_t *pos, int D)
{
	int u = blockIdx.x;
	float *g = gE + (size_t)uniq[u] * D;
	for (int i = threadIdx.x; i < D; i += blockDim.x) {
		float acc = g[i];
		for (int p = start[u]; p < start[u + 1]; p++)
			acc += dx[(size_t)pos[p] * D + i];
		g[i] = acc;
	}
}

int trc_embed_back(float *gE, const float *dx, const int32_t *uniq, const int32_t *start,
		   const int32_t *pos, int nuniq, int D, cudaStream_t s)
{
	if (nuniq)
		embed_back_kernel<<<nuniq, 256, 0, s>>>(gE, dx, uniq, start, pos, D);
	LAUNCH_CHECK();
	return 0;
}

/* ---- RMSNorm ------------------------------------------------------------------------------ */

__global__ static void rmsnorm_kernel(float *y, float *rstd, const float *x, const float *w, int D,
				      float eps)
{
	const float *xr = x + (size_t)blockIdx.x * D;
	double ss = 0;
	for (int i = threadIdx.x; i < D; i += blockDim.x)
		ss += (double)xr[i] * xr[i];
	float r = 1.0f / sqrtf((float)(block_sum_d(ss) / D) + eps);
	if (threadIdx.x == 0)
		rstd[blockIdx.x] = r;
	for (int i = threadIdx.x; i < D; i += blockDim.x)
		y[(size_t)blockIdx.x * D + i] = (xr[i] * r) * w[i];
}

int trc_rmsnorm(float *y, float *rstd, const float *x, const float *w, int n, int D, float eps,
		cudaStream_t s)
{
	rmsnorm_kernel<<<n, 256, 0, s>>>(y, rstd, x, w, D, eps);
	LAUNCH_CHECK();
	return 0;
}

/* Block b: rows [b TRC_BLOCK, ...); dx = r g - r^3 / D x sum(g x), g = dy w; the block's
 * share of dw (sum of dy x r over its rows, in row order) into part[b]. */
__global__ static void rmsnorm_back_kernel(float *dx, float *part, const float *dy, const float *x,
					   const float *rstd, const float *w, int n, int D, bool add)
{
	int t0 = blockIdx.x * TRC_BLOCK, t1 = min(n, t0 + TRC_BLOCK);
	float *pb = part + (size_t)blockIdx.x * D;
	for (int i = threadIdx.x; i < D; i += blockDim.x)
		pb[i] = 0.0f;
	for (int t = t0; t < t1; t++) {
		const float *xr = x + (size_t)t * D, *dyr = dy + (size_t)t * D;
		float r = rstd[t];
		double dot = 0;
		for (int i = threadIdx.x; i < D; i += blockDim.x)
			dot += (double)(dyr[i] * w[i]) * xr[i];
		float c = (float)(block_sum_d(dot) * r * r * r / D);
		for (int i = threadIdx.x; i < D; i += blockDim.x) {
			float d = r * (dyr[i] * w[i]) - c * xr[i];
			float *o = dx + (size_t)t * D + i;
			*o = add ? *o + d : d;
			pb[i] += dyr[i] * xr[i] * r;
		}
	}
}

/* dw[i] += the blocks' parts, in block order. */
__global__ static void sum_parts_kernel(float *dw, const float *part, int blocks, int width,
					int stride, int offset)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i >= width)
		return;
	double acc = 0;
	for (int b = 0; b < blocks; b++)
		acc += part[(size_t)b * stride + offset + i];
	dw[i] += (float)acc;
}

int trc_rmsnorm_back(float *dx, float *dw, float *part, const float *dy, const float *x,
		     const float *rstd, const float *w, int n, int D, bool add, cudaStream_t s)
{
	int blocks = CEIL_DIV(n, TRC_BLOCK);
	rmsnorm_back_kernel<<<blocks, 256, 0, s>>>(dx, part, dy, x, rstd, w, n, D, add);
	LAUNCH_CHECK();
	sum_parts_kernel<<<CEIL_DIV(D, 256), 256, 0, s>>>(dw, part, blocks, D, D, 0);
	LAUNCH_CHECK();
	return 0;
}

/* ---- q/k norms and RoPE ------------------------------------------------------------------- */

/* A warp's sum (every lane gets it). */
__device__ static double warp_sum_d(double v)
{
	for (int o = 16; o > 0; o /= 2)
		v += __shfl_xor_sync(0xffffffffu, v, o);
	return v;
}

/* out = rope(in r w) for one head, one warp; r returned. */
__device__ static float head_fwd(float *out, const float *in, const float *w, const float *cs,
				 const float *sn, int hd, float eps)
{
	int lane = threadIdx.x % 32, h = hd / 2;
	double ss = 0;
	for (int i = lane; i < hd; i += 32)
		ss += (double)in[i] * in[i];
	float r = 1.0f / sqrtf((float)(warp_sum_d(ss) / hd) + eps);
	for (int i = lane; i < h; i += 32) {
		float a = (in[i] * r) * w[i], b = (in[i + h] * r) * w[i + h];
		out[i] = a * cs[i] - b * sn[i];
		out[i + h] = b * cs[i] + a * sn[i];
	}
	return r;
}

/* Block per token, warp per head. */
__global__ static void qk_kernel(struct trc_qk a)
{
	int t = blockIdx.x, warp = threadIdx.x / 32, nw = blockDim.x / 32, hd = a.hd;
	const float *cs = a.cos + (size_t)a.pos[t] * (hd / 2), *sn = a.sin + (size_t)a.pos[t] * (hd / 2);
	for (int h = warp; h < a.H + a.Hkv; h += nw) {
		bool isq = h < a.H;
		int hh = isq ? h : h - a.H, width = isq ? a.H * hd : a.Hkv * hd;
		size_t o = (size_t)t * width + (size_t)hh * hd;
		float r = head_fwd((isq ? a.q : a.k) + o, (isq ? a.q_raw : a.k_raw) + o, isq ? a.qw : a.kw,
				   cs, sn, hd, a.eps);
		if (threadIdx.x % 32 == 0)
			(isq ? a.rstd_q : a.rstd_k)[(size_t)t * (isq ? a.H : a.Hkv) + hh] = r;
	}
}

int trc_qk(const struct trc_qk *a, cudaStream_t s)
{
	qk_kernel<<<a->N, 256, 0, s>>>(*a);
	LAUNCH_CHECK();
	return 0;
}

/* Block b: TRC_BLOCK tokens; warp per head. d (the gradient after RoPE) becomes that of
 * the raw head in place; each warp sums its heads' norm-weight gradients over the tokens
 * in smem (fixed order), the warps are summed in order into part[b] (2 hd: q's, k's). */
__global__ static void qk_back_kernel(struct trc_qk a, float *dq, float *dk, float *part)
{
	extern __shared__ float sh[]; /* (warps, 2 hd) */
	int warp = threadIdx.x / 32, nw = blockDim.x / 32, lane = threadIdx.x % 32, hd = a.hd, h2 = hd / 2;
	float *mine = sh + (size_t)warp * 2 * hd;
	for (int i = lane; i < 2 * hd; i += 32)
		mine[i] = 0.0f;
	int t0 = blockIdx.x * TRC_BLOCK, t1 = min(a.N, t0 + TRC_BLOCK);
	for (int t = t0; t < t1; t++) {
		const float *cs = a.cos + (size_t)a.pos[t] * h2, *sn = a.sin + (size_t)a.pos[t] * h2;
		for (int h = warp; h < a.H + a.Hkv; h += nw) {
			bool isq = h < a.H;
			int hh = isq ? h : h - a.H, width = isq ? a.H * hd : a.Hkv * hd;
			size_t o = (size_t)t * width + (size_t)hh * hd;
			float *d = (isq ? dq : dk) + o, *acc = mine + (isq ? 0 : hd);
			const float *in = (isq ? a.q_raw : a.k_raw) + o, *w = isq ? a.qw : a.kw;
			float r = (isq ? a.rstd_q : a.rstd_k)[(size_t)t * (isq ? a.H : a.Hkv) + hh];
			float dn[2][ENG_MAX_HEAD_DIM / 64]; /* lane's elements i and i + h2 */
			double dot = 0;
			for (int i = lane, j = 0; i < h2; i += 32, j++) {
				float x = d[i], y = d[i + h2];
				dn[0][j] = x * cs[i] + y * sn[i];
				dn[1][j] = y * cs[i] - x * sn[i];
				dot += (double)(dn[0][j] * w[i]) * in[i] + (double)(dn[1][j] * w[i + h2]) * in[i + h2];
			}
			float c = (float)(warp_sum_d(dot) * r * r * r / hd);
			__syncwarp(); /* every lane has read d before it is overwritten */
			for (int i = lane, j = 0; i < h2; i += 32, j++) {
				acc[i] += dn[0][j] * in[i] * r;
				acc[i + h2] += dn[1][j] * in[i + h2] * r;
				d[i] = r * (dn[0][j] * w[i]) - c * in[i];
				d[i + h2] = r * (dn[1][j] * w[i + h2]) - c * in[i + h2];
			}
		}
	}
	__syncthreads();
	for (int i = threadIdx.x; i < 2 * hd; i += blockDim.x) {
		float v = 0.0f;
		for (int w = 0; w < nw; w++)
			v += sh[(size_t)w * 2 * hd + i];
		part[(size_t)blockIdx.x * 2 * hd + i] = v;
	}
}

int trc_qk_back(const struct trc_qk *a, float *dq, float *dk, float *dqw, float *dkw, float *part,
		cudaStream_t s)
{
	int blocks = CEIL_DIV(a->N, TRC_BLOCK), threads = 256;
	qk_back_kernel<<<blocks, threads, (threads / 32) * 2 * a->hd * sizeof(float), s>>>(*a, dq, dk,
											   part);
	LAUNCH_CHECK();
	sum_parts_kernel<<<CEIL_DIV(a->hd, 256), 256, 0, s>>>(dqw, part, blocks, a->hd, 2 * a->hd, 0);
	LAUNCH_CHECK();
	sum_parts_kernel<<<CEIL_DIV(a->hd, 256), 256, 0, s>>>(dkw, part, blocks, a->hd, 2 * a->hd,
							       a->hd);
	LAUNCH_CHECK();
	return 0;
}

/* ---- SwiGLU ---------------------------------------------------------------------------------- */

__global__ static void swiglu_kernel(float *h, const float *g, const float *u, size_t n)
{
	size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n)
		h[i] = g[i] / (1.0f + expf(-g[i])) * u[i];
}

int trc_swiglu(float *h, const float *g, const float *u, size_t n, cudaStream_t s)
{
	swiglu_kernel<<<(unsigned)CEIL_DIV(n, (size_t)256), 256, 0, s>>>(h, g, u, n);
	LAUNCH_CHECK();
	return 0;
}

/* h = g sigma(g) u: dg = dh u sigma (1 + g (1 - sigma)), du = dh g sigma. For g > 0,
 * 1 - sigma in floats is all rounding; it equals e^-g sigma, and g (1 - sigma) is under
 * 1e-33 past g = 80 (as the CPU kernels). */
__global__ static void swiglu_back_kernel(float *dh, float *du, const float *g, const float *u,
					  size_t n)
{
	size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
	if (i >= n)
		return;
	float x = g[i], e = expf(-x), sg = 1.0f / (1.0f + e), d = dh[i];
	float rest = x > 80.0f ? 0.0f : x > 0.0f ? e * sg : 1.0f - sg;
	du[i] = d * x * sg;
	dh[i] = d * u[i] * sg * (1.0f + x * rest);
}

int trc_swiglu_back(float *dh, float *du, const float *g, const float *u, size_t n, cudaStream_t s)
{
	swiglu_back_kernel<<<(unsigned)CEIL_DIV(n, (size_t)256), 256, 0, s>>>(dh, du, g, u, n);
	LAUNCH_CHECK();
	return 0;
}

/* ---- attention's softmax ----------------------------------------------------------------------- */

/* Row r of p (B, H, T, T) is query i = r % T of head h of batch row b: its keys are
 * lo .. i, where lo = i - pos[b T + i] starts its document (the causal mask when rows
 * hold one document each). */
__device__ static int softmax_first_key(const int32_t *pos, int r, int T, int H)
{
	int i = r % T, b = r / T / H;
	return i - pos[(size_t)b * T + i];
}

/* Block per row. */
__global__ static void softmax_causal_kernel(float *p, const int32_t *pos, int T, int H, float scale)
{
	float *row = p + (size_t)blockIdx.x * T;
	int lo = softmax_first_key(pos, blockIdx.x, T, H), n = blockIdx.x % T + 1;
	float mx = -INFINITY;
	for (int j = lo + threadIdx.x; j < n; j += blockDim.x)
		mx = fmaxf(mx, row[j] * scale);
	mx = block_max(mx);
	double sum = 0;
	for (int j = lo + threadIdx.x; j < n; j += blockDim.x)
		sum += expf(row[j] * scale - mx);
	float inv = (float)(1.0 / block_sum_d(sum));
	for (int j = threadIdx.x; j < T; j += blockDim.x)
		row[j] = j >= lo && j < n ? expf(row[j] * scale - mx) * inv : 0.0f;
}

int trc_softmax_causal(float *p, const int32_t *pos, int rows, int T, int H, float scale,
		       cudaStream_t s)
{
	softmax_causal_kernel<<<rows, 256, 0, s>>>(p, pos, T, H, scale);
	LAUNCH_CHECK();
	return 0;
}

__global__ static void softmax_back_kernel(float *d, const float *p, const int32_t *pos, int T,
					   int H, float scale)
{
	float *dr = d + (size_t)blockIdx.x * T;
	const float *pr = p + (size_t)blockIdx.x * T;
	int lo = softmax_first_key(pos, blockIdx.x, T, H), n = blockIdx.x % T + 1;
	double dot = 0;
	for (int j = lo + threadIdx.x; j < n; j += blockDim.x)
		dot += (double)dr[j] * pr[j];
	float s = (float)block_sum_d(dot);
	for (int j = threadIdx.x; j < T; j += blockDim.x)
		dr[j] = j >= lo && j < n ? pr[j] * (dr[j] - s) * scale : 0.0f;
}

int trc_softmax_back(float *d, const float *p, const int32_t *pos, int rows, int T, int H,
		     float scale, cudaStream_t s)
{
	softmax_back_kernel<<<rows, 256, 0, s>>>(d, p, pos, T, H, scale);
	LAUNCH_CHECK();
	return 0;
}

/* ---- the loss ------------------------------------------------------------------------------------ */

/* Block per row: log-sum-exp with the maximum subtracted. */
__global__ static void ce_kernel(float *z, const int32_t *targets, double *loss, int V,
				 bool backward)
{
	float *row = z + (size_t)blockIdx.x * V;
	int y = targets[blockIdx.x];
	if (y < 0) {
		if (threadIdx.x == 0)
			loss[blockIdx.x] = 0;
		if (backward)
			for (int j = threadIdx.x; j < V; j += blockDim.x)
				row[j] = 0.0f;
		return;
	}
	float mx = -INFINITY;
	for (int j = threadIdx.x; j < V; j += blockDim.x)
		mx = fmaxf(mx, row[j]);
	mx = block_max(mx);
	double sum = 0;
	for (int j = threadIdx.x; j < V; j += blockDim.x)
		sum += expf(row[j] - mx);
	sum = block_sum_d(sum);
	float zy = row[y];
	__syncthreads(); /* every thread has read row[y] */
	if (threadIdx.x == 0)
		loss[blockIdx.x] = (double)mx + log(sum) - zy;
	if (!backward)
		return;
	float inv = (float)(1.0 / sum);
	for (int j = threadIdx.x; j < V; j += blockDim.x)
		row[j] = expf(row[j] - mx) * inv - (j == y ? 1.0f : 0.0f);
}

int trc_cross_entropy(float *z, const int32_t *targets, double *loss, int rows, int V,
		      bool backward, cudaStream_t s)
{
	ce_kernel<<<rows, 512, 0, s>>>(z, targets, loss, V, backward);
	LAUNCH_CHECK();
	return 0;
}

/* ---- conversion and the optimizer --------------------------------------------------------------- */

__global__ static void to_bf16_kernel(bf16 *dst, const float *src, size_t n)
{
	for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
	     i += (size_t)gridDim.x * blockDim.x)
		dst[i] = __float2bfloat16_rn(src[i]);
}

int trc_to_bf16(bf16 *dst, const float *src, size_t n, cudaStream_t s)
{
	unsigned blocks = (unsigned)(CEIL_DIV(n, (size_t)256) < 4096 ? CEIL_DIV(n, (size_t)256) : 4096);
	if (n)
		to_bf16_kernel<<<blocks, 256, 0, s>>>(dst, src, n);
	LAUNCH_CHECK();
	return 0;
}

__global__ static void scale_kernel(float *g, size_t n, float scale, double *part)
{
	double sq = 0;
	for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
	     i += (size_t)gridDim.x * blockDim.x) {
		float v = g[i] * scale;
		g[i] = v;
		sq += (double)v * v;
	}
	if (part) {
		sq = block_sum_d(sq);
		if (threadIdx.x == 0)
			part[blockIdx.x] = sq;
	}
}

int trc_scale(float *g, size_t n, float scale, double *part, cudaStream_t s)
{
	scale_kernel<<<TRC_SQ_BLOCKS, 512, 0, s>>>(g, n, scale, part);
	LAUNCH_CHECK();
	return 0;
}

__global__ static void adamw_kernel(float *w, const float *g, float *m, float *v, size_t n,
				    struct trc_adamw h)
{
	for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
	     i += (size_t)gridDim.x * blockDim.x) {
		float gi = g[i], wi = w[i] * h.decay;
		float mi = h.beta1 * m[i] + h.c1 * gi;
		float vi = h.beta2 * v[i] + h.c2 * gi * gi;
		m[i] = mi, v[i] = vi;
		w[i] = wi - h.step * mi / (sqrtf(vi) * h.rbc2 + h.eps);
	}
}

int trc_adamw(float *w, const float *g, float *m, float *v, size_t n, struct trc_adamw h,
	      cudaStream_t s)
{
	unsigned blocks = (unsigned)(CEIL_DIV(n, (size_t)256) < 4096 ? CEIL_DIV(n, (size_t)256) : 4096);
	adamw_kernel<<<blocks, 256, 0, s>>>(w, g, m, v, n, h);
	LAUNCH_CHECK();
	return 0;
}
