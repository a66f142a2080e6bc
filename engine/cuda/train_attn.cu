/* train_attn.cu — causal attention of the fast training path in tiles, as flash
 * attention computes it: the forward keeps each row's log-sum-exp instead of its
 * T x T softmax, and the backward recomputes the softmax a tile at a time. The
 * products run on the tensor cores (wmma) with bf16 operands and fp32 sums; the
 * online softmax is fp32. There are no atomics: one block per key tile sums dK and
 * dV over every query tile and every query head of its group, and one block per
 * query tile sums dQ over the key tiles, so that a run repeats bit for bit.
 *
 * Layouts are those of the rest of the step: q, att, datt, dq (N, H hd) and k, v,
 * dk, dv (N, Hkv hd), rows b T + t; lse and delta (B, H, T).
 *
 * Each block has 4 warps; a warp owns 16 rows of the 64 of a tile, so between the
 * block-wide loads of a tile a warp touches only its own rows of the score tiles. */
#include <mma.h>

#include "engine/cuda/train.cuh"

using namespace nvcuda;

#define FA_TILE 64
#define FA_WARPS 4
#define FA_THREADS (32 * FA_WARPS)

typedef wmma::fragment<wmma::matrix_a, 16, 16, 16, bf16, wmma::row_major> frag_a;
typedef wmma::fragment<wmma::matrix_b, 16, 16, 16, bf16, wmma::row_major> frag_b;
typedef wmma::fragment<wmma::matrix_b, 16, 16, 16, bf16, wmma::col_major> frag_bt;
typedef wmma::fragment<wmma::accumulator, 16, 16, 16, float> frag_c;

/* Shared-memory strides (elements): the padding staggers rows across the banks and
 * keeps every row 16-byte aligned, as wmma's loads need. */
template <int HD> struct fa_lay {
	static constexpr int LH = HD + 8;      /* a bf16 tile of 64 rows of a head */
	static constexpr int LS = FA_TILE + 4; /* an fp32 tile of 64 x 64 scores */
	static constexpr int LP = FA_TILE + 8; /* a bf16 tile of 64 x 64 probabilities */
	static constexpr int LO = HD + 4;      /* an fp32 accumulator of 64 rows of a head */
	static constexpr size_t H16 = (size_t)FA_TILE * LH * sizeof(bf16);
	static constexpr size_t S32 = (size_t)FA_TILE * LS * sizeof(float);
	static constexpr size_t P16 = (size_t)FA_TILE * LP * sizeof(bf16);
	static constexpr size_t O32 = (size_t)FA_TILE * LO * sizeof(float);
	static constexpr size_t ROWS = 2 * FA_TILE * sizeof(float);
	/* the kernels' shared memory: forward, dK/dV, dQ */
	static constexpr size_t FWD = 3 * H16 + S32 + P16 + O32 + ROWS;
	static constexpr size_t BKV = 4 * H16 + 2 * S32 + 2 * P16 + 2 * O32 + ROWS;
	static constexpr size_t BQ = 4 * H16 + 2 * S32 + P16 + O32 + ROWS;
};

/* Rows row0 .. row0 + 63 of one head (src: its first element at token 0; ld: the
 * row stride) into a bf16 tile; rows past T are zero. */
template <int HD>
__device__ static void load_rows(bf16 *dst, const float *src, int ld, int row0, int T)
{
	constexpr int V4 = HD / 4, LH = fa_lay<HD>::LH;
	for (int i = threadIdx.x; i < FA_TILE * V4; i += FA_THREADS) {
		int r = i / V4, c = (i % V4) * 4;
		float4 x = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
		if (row0 + r < T)
			x = *(const float4 *)(src + (size_t)(row0 + r) * ld + c);
		bf16 *d = dst + r * LH + c;
		d[0] = __float2bfloat16(x.x), d[1] = __float2bfloat16(x.y);
		d[2] = __float2bfloat16(x.z), d[3] = __float2bfloat16(x.w);
	}
}

/* A warp's 16 x 64 tile s (stride LS) = a (its 16 rows, stride LH) . b^T, where b is a
 * 64-row tile (stride LH): scores of 16 rows against 64 others over the head. */
template <int HD>
__device__ static void rows_by_rows_t(float *s, const bf16 *a, const bf16 *b)
{
	constexpr int LH = fa_lay<HD>::LH, LS = fa_lay<HD>::LS;
	for (int n = 0; n < FA_TILE / 16; n++) {
		frag_c acc;
		wmma::fill_fragment(acc, 0.0f);
		for (int d = 0; d < HD; d += 16) {
			frag_a fa;
			frag_bt fb;
			wmma::load_matrix_sync(fa, a + d, LH);
			wmma::load_matrix_sync(fb, b + n * 16 * LH + d, LH);
			wmma::mma_sync(acc, fa, fb, acc);
		}
		wmma::store_matrix_sync(s + n * 16, acc, LS, wmma::mem_row_major);
	}
}

/* A warp's 16 rows of o (fp32, stride LO) += p (its 16 x 64, stride LP) . b (a 64-row
 * tile, stride LH). */
template <int HD>
__device__ static void acc_rows_by_tile(float *o, const bf16 *p, const bf16 *b)
{
	constexpr int LH = fa_lay<HD>::LH, LP = fa_lay<HD>::LP, LO = fa_lay<HD>::LO;
	for (int n = 0; n < HD / 16; n++) {
		frag_c acc;
		wmma::load_matrix_sync(acc, o + n * 16, LO, wmma::mem_row_major);
		for (int k = 0; k < FA_TILE; k += 16) {
			frag_a fa;
			frag_b fb;
			wmma::load_matrix_sync(fa, p + k, LP);
			wmma::load_matrix_sync(fb, b + k * LH + n * 16, LH);
			wmma::mma_sync(acc, fa, fb, acc);
		}
		wmma::store_matrix_sync(o + n * 16, acc, LO, wmma::mem_row_major);
	}
}

/* ---- forward ------------------------------------------------------------------------------------ */

/* Block (query tile, head, row of the batch). Scores are kept in the log2 domain:
 * x = q.k scale log2(e), p = 2^(x - m) / l, and lse = m + log2(l). */
template <int HD>
__global__ static void __launch_bounds__(FA_THREADS)
	fa_forward(float *att, float *lse, const float *q, const float *k, const float *v, int T,
		   int H, int G, int q_dim, int kv_dim, float scale2)
{
	typedef fa_lay<HD> L;
	extern __shared__ __align__(128) unsigned char smem[];
	bf16 *Qs = (bf16 *)smem, *Ks = (bf16 *)(smem + L::H16), *Vs = (bf16 *)(smem + 2 * L::H16);
	float *Ss = (float *)(smem + 3 * L::H16);
	bf16 *Ps = (bf16 *)(smem + 3 * L::H16 + L::S32);
	float *Os = (float *)(smem + 3 * L::H16 + L::S32 + L::P16);
	float *row_m = (float *)(smem + 3 * L::H16 + L::S32 + L::P16 + L::O32), *row_l = row_m + FA_TILE;
	int qt = blockIdx.x, h = blockIdx.y, b = blockIdx.z, q0 = qt * FA_TILE;
	int warp = threadIdx.x / 32, lane = threadIdx.x % 32, r0 = warp * 16;
	const float *kh = k + (size_t)b * T * kv_dim + (size_t)(h / G) * HD;
	const float *vh = v + (size_t)b * T * kv_dim + (size_t)(h / G) * HD;
	load_rows<HD>(Qs, q + (size_t)b * T * q_dim + (size_t)h * HD, q_dim, q0, T);
	for (int i = threadIdx.x; i < FA_TILE * L::LO; i += FA_THREADS)
		Os[i] = 0.0f;
	if (threadIdx.x < FA_TILE)
		row_m[threadIdx.x] = -INFINITY, row_l[threadIdx.x] = 0.0f;
	/* two lanes a row, the even and the odd columns */
	int r = r0 + lane / 2, half = lane % 2, qi = q0 + r;
	for (int kt = 0; kt <= qt; kt++) {
		int k0 = kt * FA_TILE;
		__syncthreads(); /* the last tile's K and V are no longer read */
		load_rows<HD>(Ks, kh, kv_dim, k0, T);
		load_rows<HD>(Vs, vh, kv_dim, k0, T);
		__syncthreads();
		rows_by_rows_t<HD>(Ss + r0 * L::LS, Qs + r0 * L::LH, Ks);
		__syncwarp();
		/* key k0 <= q0 <= qi is in every row, so the maximum is finite */
		float *srow = Ss + r * L::LS, mx = -INFINITY;
		for (int c = half; c < FA_TILE; c += 2) {
			float x = k0 + c <= qi ? srow[c] * scale2 : -INFINITY;
			srow[c] = x;
			mx = fmaxf(mx, x);
		}
		mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 1));
		float m_old = row_m[r], m_new = fmaxf(m_old, mx), alpha = exp2f(m_old - m_new), sum = 0;
		for (int c = half; c < FA_TILE; c += 2) {
			float p = exp2f(srow[c] - m_new);
			Ps[r * L::LP + c] = __float2bfloat16(p);
			sum += p;
		}
		sum += __shfl_xor_sync(0xffffffffu, sum, 1);
		for (int c = half; c < HD; c += 2)
			Os[r * L::LO + c] *= alpha;
		__syncwarp(); /* both lanes of a row have read row_m, and Ps and Os are written */
		if (!half)
			row_m[r] = m_new, row_l[r] = row_l[r] * alpha + sum;
		acc_rows_by_tile<HD>(Os + r0 * L::LO, Ps + r0 * L::LP, Vs);
	}
	__syncwarp();
	if (qi < T) {
		float inv = 1.0f / row_l[r];
		float *dst = att + ((size_t)b * T + qi) * q_dim + (size_t)h * HD;
		for (int c = half; c < HD; c += 2)
			dst[c] = Os[r * L::LO + c] * inv;
		if (!half)
			lse[((size_t)b * H + h) * T + qi] = row_m[r] + log2f(row_l[r]);
	}
}

/* ---- backward ----------------------------------------------------------------------------------- */

/* delta (B, H, T) = rowsum(datt att) per head: the softmax backward's sum of p dp. A
 * warp per (token, head). datt is rounded to bf16 as the tiles that make dp read it,
 * so that a row's score gradients p (dp - delta) sum to 0 as they should (with the
 * fp32 datt, the first row's dq and dk, which are 0, were not). */
__global__ static void fa_delta(float *delta, const float *datt, const float *att, int N, int T,
				int H, int hd, int q_dim)
{
	int w = (blockIdx.x * blockDim.x + threadIdx.x) / 32, lane = threadIdx.x % 32;
	if (w >= N * H)
		return;
	int n = w / H, h = w % H;
	const float *a = att + (size_t)n * q_dim + (size_t)h * hd, *d = datt + (size_t)n * q_dim + (size_t)h * hd;
	float s = 0;
	for (int i = lane; i < hd; i += 32)
		s += a[i] * __bfloat162float(__float2bfloat16(d[i]));
	for (int o = 16; o > 0; o /= 2)
		s += __shfl_xor_sync(0xffffffffu, s, o);
	if (lane == 0)
		delta[((size_t)(n / T) * H + h) * T + n % T] = s;
}

/* One row's (r) probabilities and score gradients against a 64-wide tile, two lanes a
 * row: p = 2^(x scale2 - lse), ds = p (dp - delta) scale, zero where `keep` fails. */
__device__ static void fa_grad_row(bf16 *prow, bf16 *dsrow, const float *srow, const float *dprow,
				   int half, float scale2, float scale, int qi_or_kj, bool rows_are_keys,
				   int col0, int T, const float *lse_c, const float *delta_c, float lse_r,
				   float delta_r)
{
	for (int c = half; c < FA_TILE; c += 2) {
		int qi = rows_are_keys ? col0 + c : qi_or_kj, kj = rows_are_keys ? qi_or_kj : col0 + c;
		bool keep = kj <= qi && qi < T;
		float l = rows_are_keys ? lse_c[c] : lse_r, dl = rows_are_keys ? delta_c[c] : delta_r;
		float p = keep ? exp2f(srow[c] * scale2 - l) : 0.0f;
		if (prow)
			prow[c] = __float2bfloat16(p);
		dsrow[c] = __float2bfloat16(p * (dprow[c] - dl) * scale);
	}
}

/* Block (key tile, kv head, row of the batch): dK and dV of 64 keys, over the query
 * heads of the group and the query tiles at or after the key tile. Warps own key rows:
 * s^T = K Q^T, dp^T = V dO^T, then dV += p^T dO and dK += ds^T Q. */
template <int HD>
__global__ static void __launch_bounds__(FA_THREADS)
	fa_backward_kv(float *dk, float *dv, const float *q, const float *k, const float *v,
		       const float *datt, const float *lse, const float *delta, int T, int H, int G,
		       int q_dim, int kv_dim, float scale2, float scale)
{
	typedef fa_lay<HD> L;
	extern __shared__ __align__(128) unsigned char smem[];
	bf16 *Ks = (bf16 *)smem, *Vs = (bf16 *)(smem + L::H16), *Qs = (bf16 *)(smem + 2 * L::H16),
	     *dOs = (bf16 *)(smem + 3 * L::H16);
	float *Ss = (float *)(smem + 4 * L::H16), *dPs = (float *)(smem + 4 * L::H16 + L::S32);
	bf16 *Pb = (bf16 *)(smem + 4 * L::H16 + 2 * L::S32), *dSb = Pb + FA_TILE * L::LP;
	float *dKs = (float *)(smem + 4 * L::H16 + 2 * L::S32 + 2 * L::P16), *dVs = dKs + FA_TILE * L::LO;
	float *Ls = dVs + FA_TILE * L::LO, *Ds = Ls + FA_TILE;
	int kt = blockIdx.x, g = blockIdx.y, b = blockIdx.z, k0 = kt * FA_TILE, nt = CEIL_DIV(T, FA_TILE);
	int warp = threadIdx.x / 32, lane = threadIdx.x % 32, r0 = warp * 16;
	int r = r0 + lane / 2, half = lane % 2;
	size_t kvo = (size_t)b * T * kv_dim + (size_t)g * HD;
	load_rows<HD>(Ks, k + kvo, kv_dim, k0, T);
	load_rows<HD>(Vs, v + kvo, kv_dim, k0, T);
	for (int i = threadIdx.x; i < 2 * FA_TILE * L::LO; i += FA_THREADS)
		dKs[i] = 0.0f; /* dKs and dVs are adjacent */
	for (int j = 0; j < G; j++) {
		int h = g * G + j;
		size_t qo = (size_t)b * T * q_dim + (size_t)h * HD, lo = ((size_t)b * H + h) * T;
		for (int qt = kt; qt < nt; qt++) {
			int q0 = qt * FA_TILE;
			__syncthreads(); /* the last tile's Q, dO, lse and delta are no longer read */
			load_rows<HD>(Qs, q + qo, q_dim, q0, T);
			load_rows<HD>(dOs, datt + qo, q_dim, q0, T);
			if (threadIdx.x < FA_TILE) {
				bool in = q0 + (int)threadIdx.x < T;
				Ls[threadIdx.x] = in ? lse[lo + q0 + threadIdx.x] : 0.0f;
				Ds[threadIdx.x] = in ? delta[lo + q0 + threadIdx.x] : 0.0f;
			}
			__syncthreads();
			rows_by_rows_t<HD>(Ss + r0 * L::LS, Ks + r0 * L::LH, Qs);
			rows_by_rows_t<HD>(dPs + r0 * L::LS, Vs + r0 * L::LH, dOs);
			__syncwarp();
			fa_grad_row(Pb + r * L::LP, dSb + r * L::LP, Ss + r * L::LS, dPs + r * L::LS, half,
					scale2, scale, k0 + r, true, q0, T, Ls, Ds, 0.0f, 0.0f);
			__syncwarp();
			acc_rows_by_tile<HD>(dVs + r0 * L::LO, Pb + r0 * L::LP, dOs);
			acc_rows_by_tile<HD>(dKs + r0 * L::LO, dSb + r0 * L::LP, Qs);
		}
	}
	__syncwarp();
	if (k0 + r < T)
		for (int c = half; c < HD; c += 2) {
			size_t o = kvo + (size_t)(k0 + r) * kv_dim + c;
			dk[o] = dKs[r * L::LO + c], dv[o] = dVs[r * L::LO + c];
		}
}

/* Block (query tile, head, row of the batch): dQ of 64 queries over the key tiles up to
 * the diagonal. Warps own query rows: s = Q K^T, dp = dO V^T, dQ += ds K. */
template <int HD>
__global__ static void __launch_bounds__(FA_THREADS)
	fa_backward_q(float *dq, const float *q, const float *k, const float *v, const float *datt,
		      const float *lse, const float *delta, int T, int H, int G, int q_dim, int kv_dim,
		      float scale2, float scale)
{
	typedef fa_lay<HD> L;
	extern __shared__ __align__(128) unsigned char smem[];
	bf16 *Qs = (bf16 *)smem, *dOs = (bf16 *)(smem + L::H16), *Ks = (bf16 *)(smem + 2 * L::H16),
	     *Vs = (bf16 *)(smem + 3 * L::H16);
	float *Ss = (float *)(smem + 4 * L::H16), *dPs = (float *)(smem + 4 * L::H16 + L::S32);
	bf16 *dSb = (bf16 *)(smem + 4 * L::H16 + 2 * L::S32);
	float *dQs = (float *)(smem + 4 * L::H16 + 2 * L::S32 + L::P16), *Ls = dQs + FA_TILE * L::LO;
	float *Ds = Ls + FA_TILE;
	int qt = blockIdx.x, h = blockIdx.y, b = blockIdx.z, q0 = qt * FA_TILE;
	int warp = threadIdx.x / 32, lane = threadIdx.x % 32, r0 = warp * 16;
	int r = r0 + lane / 2, half = lane % 2;
	size_t qo = (size_t)b * T * q_dim + (size_t)h * HD, lo = ((size_t)b * H + h) * T;
	size_t kvo = (size_t)b * T * kv_dim + (size_t)(h / G) * HD;
	load_rows<HD>(Qs, q + qo, q_dim, q0, T);
	load_rows<HD>(dOs, datt + qo, q_dim, q0, T);
	for (int i = threadIdx.x; i < FA_TILE * L::LO; i += FA_THREADS)
		dQs[i] = 0.0f;
	if (threadIdx.x < FA_TILE) {
		bool in = q0 + (int)threadIdx.x < T;
		Ls[threadIdx.x] = in ? lse[lo + q0 + threadIdx.x] : 0.0f;
		Ds[threadIdx.x] = in ? delta[lo + q0 + threadIdx.x] : 0.0f;
	}
	for (int kt = 0; kt <= qt; kt++) {
		int k0 = kt * FA_TILE;
		__syncthreads(); /* the last tile's K and V are no longer read */
		load_rows<HD>(Ks, k + kvo, kv_dim, k0, T);
		load_rows<HD>(Vs, v + kvo, kv_dim, k0, T);
		__syncthreads();
		rows_by_rows_t<HD>(Ss + r0 * L::LS, Qs + r0 * L::LH, Ks);
		rows_by_rows_t<HD>(dPs + r0 * L::LS, dOs + r0 * L::LH, Vs);
		__syncwarp();
		fa_grad_row(NULL, dSb + r * L::LP, Ss + r * L::LS, dPs + r * L::LS, half, scale2,
				scale, q0 + r, false, k0, T, NULL, NULL, Ls[r], Ds[r]);
		__syncwarp();
		acc_rows_by_tile<HD>(dQs + r0 * L::LO, dSb + r0 * L::LP, Ks);
	}
	__syncwarp();
	if (q0 + r < T)
		for (int c = half; c < HD; c += 2)
			dq[qo + (size_t)(q0 + r) * q_dim + c] = dQs[r * L::LO + c];
}

/* ---- host ---------------------------------------------------------------------------------------- */

template <int HD> static size_t fa_smem_need(void)
{
	size_t m = fa_lay<HD>::FWD > fa_lay<HD>::BKV ? fa_lay<HD>::FWD : fa_lay<HD>::BKV;
	return m > fa_lay<HD>::BQ ? m : fa_lay<HD>::BQ;
}

/* Raises the three kernels' shared-memory limit once; false when the device has not
 * that much. */
template <int HD> static bool fa_setup(void)
{
	int dev = 0, optin = 0;
	if (cudaGetDevice(&dev) != cudaSuccess ||
	    cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev) != cudaSuccess ||
	    (size_t)optin < fa_smem_need<HD>())
		return false;
	return cudaFuncSetAttribute(fa_forward<HD>, cudaFuncAttributeMaxDynamicSharedMemorySize,
				    (int)fa_lay<HD>::FWD) == cudaSuccess &&
	       cudaFuncSetAttribute(fa_backward_kv<HD>, cudaFuncAttributeMaxDynamicSharedMemorySize,
				    (int)fa_lay<HD>::BKV) == cudaSuccess &&
	       cudaFuncSetAttribute(fa_backward_q<HD>, cudaFuncAttributeMaxDynamicSharedMemorySize,
				    (int)fa_lay<HD>::BQ) == cudaSuccess;
}

bool trc_flash_usable(int hd)
{
	switch (hd) {
	case 32: return fa_setup<32>();
	case 64: return fa_setup<64>();
	case 128: return fa_setup<128>();
	default: return false;
	}
}

/* log2(e): the kernels exponentiate with exp2f */
#define FA_LOG2E 1.4426950408889634f

template <int HD> static int fa_fwd(const struct trc_flash *a, cudaStream_t s)
{
	dim3 grid(CEIL_DIV(a->T, FA_TILE), a->H, a->B);
	fa_forward<HD><<<grid, FA_THREADS, fa_lay<HD>::FWD, s>>>(
		a->att, a->lse, a->q, a->k, a->v, a->T, a->H, a->H / a->Hkv, a->H * HD, a->Hkv * HD,
		a->scale * FA_LOG2E);
	LAUNCH_CHECK();
	return 0;
}

template <int HD> static int fa_bwd(const struct trc_flash *a, cudaStream_t s)
{
	int N = a->B * a->T, G = a->H / a->Hkv, q_dim = a->H * HD, kv_dim = a->Hkv * HD;
	fa_delta<<<CEIL_DIV((size_t)N * a->H * 32, 256), 256, 0, s>>>(a->delta, a->datt, a->att, N,
								       a->T, a->H, HD, q_dim);
	LAUNCH_CHECK();
	dim3 gkv(CEIL_DIV(a->T, FA_TILE), a->Hkv, a->B), gq(CEIL_DIV(a->T, FA_TILE), a->H, a->B);
	fa_backward_kv<HD><<<gkv, FA_THREADS, fa_lay<HD>::BKV, s>>>(
		a->dk, a->dv, a->q, a->k, a->v, a->datt, a->lse, a->delta, a->T, a->H, G, q_dim, kv_dim,
		a->scale * FA_LOG2E, a->scale);
	LAUNCH_CHECK();
	fa_backward_q<HD><<<gq, FA_THREADS, fa_lay<HD>::BQ, s>>>(
		a->dq, a->q, a->k, a->v, a->datt, a->lse, a->delta, a->T, a->H, G, q_dim, kv_dim,
		a->scale * FA_LOG2E, a->scale);
	LAUNCH_CHECK();
	return 0;
}

/* The kernels of a's head_dim, forward or backward. */
static int fa_run(const struct trc_flash *a, cudaStream_t s, bool backward)
{
	switch (a->hd) {
	case 32: return backward ? fa_bwd<32>(a, s) : fa_fwd<32>(a, s);
	case 64: return backward ? fa_bwd<64>(a, s) : fa_fwd<64>(a, s);
	case 128: return backward ? fa_bwd<128>(a, s) : fa_fwd<128>(a, s);
	default: return err_set("cuda training: no tiled attention for head_dim %d", a->hd);
	}
}

int trc_flash_forward(const struct trc_flash *a, cudaStream_t s)
{
	return fa_run(a, s, false);
}

int trc_flash_backward(const struct trc_flash *a, cudaStream_t s)
{
	return fa_run(a, s, true);
}
