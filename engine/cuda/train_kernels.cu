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

static bool aligned(const void *p, size_t to)
{
	return (uintptr_t)p % to == 0;
}

/* Blocks of 256 threads for n elements, four a thread where vec, at most 8192. */
static unsigned grid_for(size_t n, bool vec)
{
	size_t b = CEIL_DIV(vec ? CEIL_DIV(n, (size_t)4) : n, (size_t)256);
	return (unsigned)(b < 8192 ? (b ? b : 1) : 8192);
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
 * share of dw (sum of dy x r over its rows, in row order) into part[b]. A thread keeps
 * its RB_PER columns of w, of the row and of the share in registers, so that a row is
 * read once and the share never leaves the block until its end. */
#define RB_PER 8
__global__ static void rmsnorm_back_kernel(float *dx, float *part, const float *dy, const float *x,
					   const float *rstd, const float *w, int n, int D, bool add)
{
	int t0 = blockIdx.x * TRC_BLOCK, t1 = min(n, t0 + TRC_BLOCK);
	float wr[RB_PER], acc[RB_PER];
#pragma unroll
	for (int k = 0; k < RB_PER; k++) {
		int i = threadIdx.x + k * blockDim.x;
		wr[k] = i < D ? w[i] : 0.0f, acc[k] = 0.0f;
	}
	for (int t = t0; t < t1; t++) {
		const float *xr = x + (size_t)t * D, *dyr = dy + (size_t)t * D;
		float r = rstd[t], dv[RB_PER], xv[RB_PER];
		double dot = 0;
#pragma unroll
		for (int k = 0; k < RB_PER; k++) {
			int i = threadIdx.x + k * blockDim.x;
			dv[k] = i < D ? dyr[i] : 0.0f, xv[k] = i < D ? xr[i] : 0.0f;
			dot += (double)(dv[k] * wr[k]) * xv[k];
		}
		float c = (float)(block_sum_d(dot) * r * r * r / D);
#pragma unroll
		for (int k = 0; k < RB_PER; k++) {
			int i = threadIdx.x + k * blockDim.x;
			if (i >= D)
				continue;
			float d = r * (dv[k] * wr[k]) - c * xv[k];
			float *o = dx + (size_t)t * D + i;
			*o = add ? *o + d : d;
			acc[k] += dv[k] * xv[k] * r;
		}
	}
#pragma unroll
	for (int k = 0; k < RB_PER; k++) {
		int i = threadIdx.x + k * blockDim.x;
		if (i < D)
			part[(size_t)blockIdx.x * D + i] = acc[k];
	}
}

/* dw[i] += the blocks' parts: eight interleaved sums (blocks b = r mod 8), then those
 * eight in order; a lane per column, so the reads of a row of parts coalesce. */
__global__ static void sum_parts_kernel(float *dw, const float *part, int blocks, int width,
					int stride, int offset)
{
	__shared__ double sh[8][32];
	int lane = threadIdx.x % 32, r = threadIdx.x / 32, i = blockIdx.x * 32 + lane;
	double acc = 0;
	if (i < width)
		for (int b = r; b < blocks; b += 8)
			acc += part[(size_t)b * stride + offset + i];
	sh[r][lane] = acc;
	__syncthreads();
	if (r > 0 || i >= width)
		return;
	double t = 0;
	for (int j = 0; j < 8; j++)
		t += sh[j][lane];
	dw[i] += (float)t;
}

static int sum_parts(float *dw, const float *part, int blocks, int width, int stride, int offset,
		     cudaStream_t s)
{
	sum_parts_kernel<<<CEIL_DIV(width, 32), 256, 0, s>>>(dw, part, blocks, width, stride,
							     offset);
	LAUNCH_CHECK();
	return 0;
}

int trc_rmsnorm_back(float *dx, float *dw, float *part, const float *dy, const float *x,
		     const float *rstd, const float *w, int n, int D, bool add, cudaStream_t s)
{
	int blocks = CEIL_DIV(n, TRC_BLOCK), threads = CEIL_DIV(CEIL_DIV(D, RB_PER), 32) * 32;
	if (threads > 1024)
		return err_set(
			"cuda training: a hidden size of %d is over the %d RMSNorm's backward "
			"takes",
			D, 1024 * RB_PER);
	rmsnorm_back_kernel<<<blocks, threads, 0, s>>>(dx, part, dy, x, rstd, w, n, D, add);
	LAUNCH_CHECK();
	return sum_parts(dw, part, blocks, D, D, 0, s);
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
	return sum_parts(dqw, part, blocks, a->hd, 2 * a->hd, 0, s) ||
	       sum_parts(dkw, part, blocks, a->hd, 2 * a->hd, a->hd, s);
}

/* ---- SwiGLU ---------------------------------------------------------------------------------- */

__device__ static float swiglu_one(float g, float u)
{
	return g / (1.0f + expf(-g)) * u;
}

/* h = g sigma(g) u: dg = dh u sigma (1 + g (1 - sigma)), du = dh g sigma. For g > 0,
 * 1 - sigma in floats is all rounding; it equals e^-g sigma, and g (1 - sigma) is under
 * 1e-33 past g = 80 (as the CPU kernels). dh becomes dg. */
__device__ static void swiglu_back_one(float *dh, float *du, float x, float u)
{
	float e = expf(-x), sg = 1.0f / (1.0f + e), d = *dh;
	float rest = x > 80.0f ? 0.0f : x > 0.0f ? e * sg : 1.0f - sg;
	*du = d * x * sg;
	*dh = d * u * sg * (1.0f + x * rest);
}

/* Four elements a thread (VEC: the arrays 16-byte aligned and n a multiple of 4). */
template <bool VEC>
__global__ static void swiglu_kernel(float *h, const float *g, const float *u, size_t n)
{
	size_t i = 4 * ((size_t)blockIdx.x * blockDim.x + threadIdx.x);
	if (VEC && i < n) {
		float4 gv = *(const float4 *)(g + i), uv = *(const float4 *)(u + i);
		*(float4 *)(h + i) = make_float4(swiglu_one(gv.x, uv.x), swiglu_one(gv.y, uv.y),
						 swiglu_one(gv.z, uv.z), swiglu_one(gv.w, uv.w));
	}
	for (size_t j = i; !VEC && j < i + 4 && j < n; j++)
		h[j] = swiglu_one(g[j], u[j]);
}

template <bool VEC>
__global__ static void swiglu_back_kernel(float *dh, float *du, const float *g, const float *u,
					  size_t n)
{
	size_t i = 4 * ((size_t)blockIdx.x * blockDim.x + threadIdx.x);
	if (VEC && i < n) {
		float4 d = *(float4 *)(dh + i), o, gv = *(const float4 *)(g + i);
		float4 uv = *(const float4 *)(u + i);
		swiglu_back_one(&d.x, &o.x, gv.x, uv.x), swiglu_back_one(&d.y, &o.y, gv.y, uv.y);
		swiglu_back_one(&d.z, &o.z, gv.z, uv.z), swiglu_back_one(&d.w, &o.w, gv.w, uv.w);
		*(float4 *)(dh + i) = d, *(float4 *)(du + i) = o;
	}
	for (size_t j = i; !VEC && j < i + 4 && j < n; j++)
		swiglu_back_one(dh + j, du + j, g[j], u[j]);
}

static bool vec4(size_t n, const void *a, const void *b, const void *c, const void *d)
{
	return n % 4 == 0 && aligned(a, 16) && aligned(b, 16) && aligned(c, 16) && aligned(d, 16);
}

int trc_swiglu(float *h, const float *g, const float *u, size_t n, cudaStream_t s)
{
	unsigned blocks = (unsigned)CEIL_DIV(n, (size_t)1024);
	if (vec4(n, h, g, u, h))
		swiglu_kernel<true><<<blocks, 256, 0, s>>>(h, g, u, n);
	else
		swiglu_kernel<false><<<blocks, 256, 0, s>>>(h, g, u, n);
	LAUNCH_CHECK();
	return 0;
}

int trc_swiglu_back(float *dh, float *du, const float *g, const float *u, size_t n, cudaStream_t s)
{
	unsigned blocks = (unsigned)CEIL_DIV(n, (size_t)1024);
	if (vec4(n, dh, du, g, u))
		swiglu_back_kernel<true><<<blocks, 256, 0, s>>>(dh, du, g, u, n);
	else
		swiglu_back_kernel<false><<<blocks, 256, 0, s>>>(dh, du, g, u, n);
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

/* bf16 and fp32 rows of p alike. */
__device__ static inline float p_load(const float *p, int j)
{
	return p[j];
}
__device__ static inline float p_load(const bf16 *p, int j)
{
	return __bfloat162float(p[j]);
}
__device__ static inline void p_store(float *p, int j, float v)
{
	p[j] = v;
}
__device__ static inline void p_store(bf16 *p, int j, float v)
{
	p[j] = __float2bfloat16(v);
}

/* Block per row: the scores' row of s into p's (the same rows on the exact path; on the
 * fast path p is bf16, the operand of the products that read it). */
template <typename P>
__global__ static void softmax_causal_kernel(P *p, const float *s, const int32_t *pos, int T, int H,
					     float scale)
{
	const float *row = s + (size_t)blockIdx.x * T;
	P *out = p + (size_t)blockIdx.x * T;
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
		p_store(out, j, j >= lo && j < n ? expf(row[j] * scale - mx) * inv : 0.0f);
}

int trc_softmax_causal(float *p, const int32_t *pos, int rows, int T, int H, float scale,
		       cudaStream_t s)
{
	softmax_causal_kernel<float><<<rows, 256, 0, s>>>(p, p, pos, T, H, scale);
	LAUNCH_CHECK();
	return 0;
}

int trc_softmax_causal_bf16(bf16 *p, const float *scores, const int32_t *pos, int rows, int T,
			    int H, float scale, cudaStream_t s)
{
	softmax_causal_kernel<bf16><<<rows, 256, 0, s>>>(p, scores, pos, T, H, scale);
	LAUNCH_CHECK();
	return 0;
}

/* Block per row: out = p (d - rowsum(d p)) scale, where out is d's row when p is fp32,
 * and p's own when it is bf16 (in place: p read before it is written at each j). */
template <typename P>
__global__ static void softmax_back_kernel(float *d, P *p, const int32_t *pos, int T, int H,
					   float scale)
{
	float *dr = d + (size_t)blockIdx.x * T;
	P *pr = p + (size_t)blockIdx.x * T;
	int lo = softmax_first_key(pos, blockIdx.x, T, H), n = blockIdx.x % T + 1;
	double dot = 0;
	for (int j = lo + threadIdx.x; j < n; j += blockDim.x)
		dot += (double)dr[j] * p_load(pr, j);
	float s = (float)block_sum_d(dot);
	for (int j = threadIdx.x; j < T; j += blockDim.x) {
		float v = j >= lo && j < n ? p_load(pr, j) * (dr[j] - s) * scale : 0.0f;
		if constexpr (sizeof(P) < sizeof(float))
			p_store(pr, j, v);
		else
			dr[j] = v;
	}
}

int trc_softmax_back(float *d, const float *p, const int32_t *pos, int rows, int T, int H,
		     float scale, cudaStream_t s)
{
	softmax_back_kernel<float><<<rows, 256, 0, s>>>(d, (float *)p, pos, T, H, scale);
	LAUNCH_CHECK();
	return 0;
}

int trc_softmax_back_bf16(bf16 *p, const float *d, const int32_t *pos, int rows, int T, int H,
			  float scale, cudaStream_t s)
{
	softmax_back_kernel<bf16><<<rows, 256, 0, s>>>((float *)d, p, pos, T, H, scale);
	LAUNCH_CHECK();
	return 0;
}

/* ---- the loss ------------------------------------------------------------------------------------ */

/* Block per row: log-sum-exp with the maximum subtracted, the maximum and the sum found
 * in one pass (a thread's sum rescaled when its maximum grows). With backward the row
 * becomes softmax - onehot, in place, or into zh's row in bf16 (the products that read
 * it take bf16), which saves writing the fp32 row and converting it afterwards. */
__global__ static void ce_kernel(float *z, bf16 *zh, const int32_t *targets, double *loss, int V,
				 bool backward)
{
	float *row = z + (size_t)blockIdx.x * V;
	bf16 *rh = zh ? zh + (size_t)blockIdx.x * V : NULL;
	int y = targets[blockIdx.x];
	if (y < 0) {
		if (threadIdx.x == 0)
			loss[blockIdx.x] = 0;
		for (int j = threadIdx.x; backward && j < V; j += blockDim.x)
			if (rh)
				rh[j] = __float2bfloat16_rn(0.0f);
			else
				row[j] = 0.0f;
		return;
	}
	float m = -INFINITY;
	double sum = 0;
	for (int j = threadIdx.x; j < V; j += blockDim.x) {
		float zj = row[j];
		if (zj > m) {
			sum = sum * exp((double)m - zj);
			m = zj;
		}
		sum += expf(zj - m);
	}
	float mx = block_max(m);
	sum = block_sum_d(m == -INFINITY ? 0.0 : sum * exp((double)m - mx));
	float zy = row[y];
	__syncthreads(); /* every thread has read row[y] */
	if (threadIdx.x == 0)
		loss[blockIdx.x] = (double)mx + log(sum) - zy;
	if (!backward)
		return;
	float inv = (float)(1.0 / sum);
	for (int j = threadIdx.x; j < V; j += blockDim.x) {
		float d = expf(row[j] - mx) * inv - (j == y ? 1.0f : 0.0f);
		if (rh)
			rh[j] = __float2bfloat16_rn(d);
		else
			row[j] = d;
	}
}

int trc_cross_entropy(float *z, bf16 *zh, const int32_t *targets, double *loss, int rows, int V,
		      bool backward, cudaStream_t s)
{
	ce_kernel<<<rows, 512, 0, s>>>(z, zh, targets, loss, V, backward);
	LAUNCH_CHECK();
	return 0;
}

/* ---- conversion and the optimizer --------------------------------------------------------------- */

/* Four bf16 (round to nearest even) as one 8-byte store. */
__device__ static void store_bf16x4(bf16 *dst, float4 v)
{
	union {
		__nv_bfloat162 h[2];
		uint2 u;
	} p;
	p.h[0] = __floats2bfloat162_rn(v.x, v.y), p.h[1] = __floats2bfloat162_rn(v.z, v.w);
	*(uint2 *)dst = p.u;
}

/* VEC: src 16-byte and dst 8-byte aligned, four elements a load; the tail (n mod 4)
 * and unaligned arrays one at a time. */
template <bool VEC> __global__ static void to_bf16_kernel(bf16 *dst, const float *src, size_t n)
{
	size_t i0 = (size_t)blockIdx.x * blockDim.x + threadIdx.x,
	       st = (size_t)gridDim.x * blockDim.x;
	size_t done = VEC ? n / 4 * 4 : 0;
	for (size_t i = i0; VEC && 4 * i < done; i += st)
		store_bf16x4(dst + 4 * i, *(const float4 *)(src + 4 * i));
	for (size_t i = done + i0; i < n; i += st)
		dst[i] = __float2bfloat16_rn(src[i]);
}

int trc_to_bf16(bf16 *dst, const float *src, size_t n, cudaStream_t s)
{
	bool vec = aligned(src, 16) && aligned(dst, 8);
	if (!n)
		return 0;
	if (vec)
		to_bf16_kernel<true><<<grid_for(n, true), 256, 0, s>>>(dst, src, n);
	else
		to_bf16_kernel<false><<<grid_for(n, false), 256, 0, s>>>(dst, src, n);
	LAUNCH_CHECK();
	return 0;
}

template <bool VEC>
__global__ static void scale_kernel(float *g, size_t n, float scale, double *part)
{
	size_t i0 = (size_t)blockIdx.x * blockDim.x + threadIdx.x,
	       st = (size_t)gridDim.x * blockDim.x;
	size_t done = VEC ? n / 4 * 4 : 0;
	double sq = 0;
	for (size_t i = i0; VEC && 4 * i < done; i += st) {
		float4 v = *(float4 *)(g + 4 * i);
		v.x *= scale, v.y *= scale, v.z *= scale, v.w *= scale;
		*(float4 *)(g + 4 * i) = v;
		sq += (double)v.x * v.x + (double)v.y * v.y + (double)v.z * v.z + (double)v.w * v.w;
	}
	for (size_t i = done + i0; i < n; i += st) {
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
	if (aligned(g, 16))
		scale_kernel<true><<<TRC_SQ_BLOCKS, 512, 0, s>>>(g, n, scale, part);
	else
		scale_kernel<false><<<TRC_SQ_BLOCKS, 512, 0, s>>>(g, n, scale, part);
	LAUNCH_CHECK();
	return 0;
}

__device__ static float adamw_one(float *w, float g, float *m, float *v, const struct trc_adamw &h)
{
	float wi = *w * h.decay;
	float mi = h.beta1 * *m + h.c1 * g;
	float vi = h.beta2 * *v + h.c2 * g * g;
	*m = mi, *v = vi;
	return *w = wi - h.step * mi / (sqrtf(vi) * h.rbc2 + h.eps);
}

/* AdamW, and the weights' bf16 copy (wh, unless NULL) from the new weights. */
template <bool VEC>
__global__ static void adamw_kernel(float *w, const float *g, float *m, float *v, bf16 *wh,
				    size_t n, struct trc_adamw h)
{
	size_t i0 = (size_t)blockIdx.x * blockDim.x + threadIdx.x,
	       st = (size_t)gridDim.x * blockDim.x;
	size_t done = VEC ? n / 4 * 4 : 0;
	for (size_t i = i0; VEC && 4 * i < done; i += st) {
		float4 wv = *(float4 *)(w + 4 * i), gv = *(const float4 *)(g + 4 * i);
		float4 mv = *(float4 *)(m + 4 * i), vv = *(float4 *)(v + 4 * i);
		adamw_one(&wv.x, gv.x, &mv.x, &vv.x, h), adamw_one(&wv.y, gv.y, &mv.y, &vv.y, h);
		adamw_one(&wv.z, gv.z, &mv.z, &vv.z, h), adamw_one(&wv.w, gv.w, &mv.w, &vv.w, h);
		*(float4 *)(w + 4 * i) = wv, *(float4 *)(m + 4 * i) = mv,
				    *(float4 *)(v + 4 * i) = vv;
		if (wh)
			store_bf16x4(wh + 4 * i, wv);
	}
	for (size_t i = done + i0; i < n; i += st) {
		float wi = adamw_one(w + i, g[i], m + i, v + i, h);
		if (wh)
			wh[i] = __float2bfloat16_rn(wi);
	}
}

int trc_adamw(float *w, const float *g, float *m, float *v, bf16 *wh, size_t n, struct trc_adamw h,
	      cudaStream_t s)
{
	bool vec = aligned(w, 16) && aligned(g, 16) && aligned(m, 16) && aligned(v, 16) &&
		   (!wh || aligned(wh, 8));
	if (vec)
		adamw_kernel<true><<<grid_for(n, true), 256, 0, s>>>(w, g, m, v, wh, n, h);
	else
		adamw_kernel<false><<<grid_for(n, false), 256, 0, s>>>(w, g, m, v, wh, n, h);
	LAUNCH_CHECK();
	return 0;
}

/* x[i] uniform in [-1, 1) from a hash of i: a matrix product runs faster on constant or
 * zero data than on the data of a real step, so the rate it is measured against is
 * measured on these. */
__global__ static void fill_random_kernel(float *x, size_t n, uint32_t seed)
{
	for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
	     i += (size_t)gridDim.x * blockDim.x) {
		uint32_t h = (uint32_t)i * 0x9e3779b9u ^ (uint32_t)(i >> 32) ^ seed;
		h ^= h >> 16, h *= 0x7feb352du, h ^= h >> 15, h *= 0x846ca68bu, h ^= h >> 16;
		x[i] = (float)(h >> 8) * (2.0f / 16777216.0f) - 1.0f;
	}
}

int trc_fill_random(float *x, size_t n, uint32_t seed, cudaStream_t s)
{
	fill_random_kernel<<<grid_for(n, false), 256, 0, s>>>(x, n, seed);
	LAUNCH_CHECK();
	return 0;
}
