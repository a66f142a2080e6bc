/* attention.cu — causal GQA attention over the bf16 KV cache: split-K
 * (flash-decoding) for one query, tiled flash attention for a chunk of queries.
 * Softmax in fp32; no n x n buffer anywhere. Kernels first, launchers after. */
#include "engine/cuda/kernels.cuh"

#define DECODE_THREADS   128
#define DECODE_KEYS      32 /* keys per shared tile: one per lane in the softmax */
#define DECODE_MAX_GROUP 8  /* query heads per kv head (Qwen3: 2 to 8) */
#define PREFILL_WARPS    8  /* queries per block (the scalar fallback) */
#define PREFILL_KEYS     32 /* keys per shared-memory tile */
#define REG_DIMS         (CU_MAX_HEAD_DIM / 32)

__device__ static float warp_sum(float v)
{
	for (int o = 16; o > 0; o /= 2)
		v += __shfl_xor_sync(0xffffffffu, v, o);
	return v;
}

__device__ static float warp_max(float v)
{
	for (int o = 16; o > 0; o /= 2)
		v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
	return v;
}

/* Keys per split of the decode attention: the context split evenly over the grid's
 * fixed number of splits (so one graph serves every position), in multiples of 16. */
__device__ static int split_len(int nk, int splits)
{
	return CEIL_DIV(CEIL_DIV(nk, splits), 16) * 16;
}

/* 16 bytes global -> shared without a register round trip (sm_80+), so the next tile
 * streams in while this one is computed. */
__device__ static void cp_async16(void *dst, const void *src)
{
	unsigned d = (unsigned)__cvta_generic_to_shared(dst);
	asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(d), "l"(src));
}

__device__ static void cp_async_commit(void)
{
	asm volatile("cp.async.commit_group;\n" ::);
}

/* Waits until at most one group (the tile being prefetched) is in flight. */
__device__ static void cp_async_wait_prev(void)
{
	asm volatile("cp.async.wait_group 1;\n" ::: "memory");
}

/* Shared memory of the decode kernel (dynamic; bytes from decode_smem): */
struct decode_smem {
	float *q;      /* (G, hd) scaled queries */
	bf16 *k0, *k1; /* two tiles of K rows, padded to hd + 8 */
	bf16 *v0, *v1; /* and of V rows, dense */
	float *p;      /* (G, DECODE_KEYS) weights of the current tile */
	float *corr;   /* (G) rescale of the accumulators for this tile */
};

__host__ __device__ static size_t decode_smem_bytes(int hd, int G)
{
	size_t q = (size_t)G * hd * 4;
	size_t tiles = 2 * DECODE_KEYS * ((hd + 8) + hd) * 2 + (size_t)G * (DECODE_KEYS + 1) * 4;
	size_t red = (size_t)(DECODE_THREADS / (hd / 2)) * G * hd * 4; /* reuses the tiles */
	return q + (tiles > red ? tiles : red);
}

__device__ static struct decode_smem decode_smem_layout(unsigned char *base, int hd, int G)
{
	struct decode_smem m;
	m.q = (float *)base;
	bf16 *b = (bf16 *)(m.q + G * hd);
	m.k0 = b, m.k1 = b + DECODE_KEYS * (hd + 8);
	m.v0 = m.k1 + DECODE_KEYS * (hd + 8), m.v1 = m.v0 + DECODE_KEYS * hd;
	m.p = (float *)(m.v1 + DECODE_KEYS * hd);
	m.corr = m.p + G * DECODE_KEYS;
	return m;
}

/* Starts the copy of keys [k0, k0 + n) of K and V into one tile buffer. */
__device__ static void decode_fetch(bf16 *ks, bf16 *vs, const bf16 *K, const bf16 *V, int k0, int n,
				    int hd)
{
	int pieces = hd / 8; /* 16-byte pieces per row */
	for (int i = threadIdx.x; i < n * pieces; i += blockDim.x) {
		int r = i / pieces, c = i % pieces * 8;
		cp_async16(ks + r * (hd + 8) + c, K + (size_t)(k0 + r) * hd + c);
		cp_async16(vs + r * hd + c, V + (size_t)(k0 + r) * hd + c);
	}
}

/* One head of the raw projection (src, hd values) through its RMSNorm (weight w) and
 * rotate-half RoPE (the position's cos/sin rows), by one warp; put(i, value) takes each
 * result. The arithmetic of qk_norm_rope_store_kernel, the reduction by warp. */
template <typename Put>
__device__ static void norm_rope_warp(const float *src, const bf16 *w, const float *cs,
				      const float *sn, int hd, float eps, Put put)
{
	int lane = threadIdx.x % 32, half = hd / 2;
	float ss = 0.0f;
	for (int i = lane; i < hd; i += 32)
		ss += src[i] * src[i];
	float inv = rsqrtf(warp_sum(ss) / hd + eps);
	for (int i = lane; i < half; i += 32) {
		float x1 = src[i] * inv * __bfloat162float(w[i]);
		float x2 = src[i + half] * inv * __bfloat162float(w[i + half]);
		put(i, x1 * cs[i] - x2 * sn[i]);
		put(i + half, x2 * cs[i] + x1 * sn[i]);
	}
}

/* The queries of kv head kvh's group into q_s (scaled), from the raw projection, and,
 * when this block's keys end at the new position, its key and value into the caches:
 * no other block reads that position. */
__device__ static void decode_rope(const struct cu_attn_args &a, float *q_s, int kvh, bool last)
{
	const struct cu_rope_args &r = a.rope;
	int hd = a.hd, G = a.H / a.Hkv, p = *a.pos, warp = threadIdx.x / 32;
	int nwarps = DECODE_THREADS / 32;
	const float *cs = r.cos + (size_t)p * (hd / 2), *sn = r.sin + (size_t)p * (hd / 2);
	for (int g = warp; g < G; g += nwarps)
		norm_rope_warp(r.qkv + (size_t)(kvh * G + g) * hd, r.q_norm, cs, sn, hd, r.eps,
			       [&](int i, float v) { q_s[g * hd + i] = v * a.scale; });
	if (!last)
		return;
	bf16 *k = r.k_cache + ((size_t)kvh * a.ctx + p) * hd;
	bf16 *v = r.v_cache + ((size_t)kvh * a.ctx + p) * hd;
	const float *kv = r.qkv + (size_t)(a.H + kvh) * hd;
	if (warp == nwarps - 1)
		norm_rope_warp(kv, r.k_norm, cs, sn, hd, r.eps,
			       [&](int i, float x) { k[i] = __float2bfloat16(x); });
	else if (warp == nwarps - 2)
		for (int i = threadIdx.x % 32; i < hd; i += 32)
			v[i] = __float2bfloat16(kv[(size_t)a.Hkv * hd + i]);
}

/* Block (kv head, split): every query head of the kv head's group (G = H / Hkv) over
 * the split's keys, so each K and V row is read once per step, not G times. Tiles of
 * DECODE_KEYS keys stream into shared memory (double-buffered, cp.async); per tile a
 * warp per query head scores the keys (lane = key, the whole dot product in the lane:
 * no shuffles), keeps the online softmax, and the weighted sum of V rows is made by a
 * thread per pair of dimensions, the tile's keys split between thread groups. Writes
 * each head's unnormalized output, max and sum. */
__global__ __launch_bounds__(DECODE_THREADS) static void decode_split_kernel(struct cu_attn_args a)
{
	extern __shared__ __align__(16) unsigned char smem[];
	int kvh = blockIdx.x, split = blockIdx.y, hd = a.hd, G = a.H / a.Hkv;
	int nk = *a.pos + a.q_offset + 1, per = split_len(nk, gridDim.y);
	int start = split * per, end = min(nk, start + per);
	if (start >= nk)
		return;
	struct decode_smem sm = decode_smem_layout(smem, hd, G);
	int lane = threadIdx.x % 32, warp = threadIdx.x / 32, nwarps = DECODE_THREADS / 32;
	int pairs = hd / 2, grp = threadIdx.x / pairs, ngroups = DECODE_THREADS / pairs;
	int pr = threadIdx.x % pairs;
	const bf16 *K = a.k_cache + (size_t)kvh * a.ctx * hd;
	const bf16 *V = a.v_cache + (size_t)kvh * a.ctx * hd;
	const float *q = a.q + (size_t)a.q_offset * a.H * hd + (size_t)kvh * G * hd;
	int ntiles = CEIL_DIV(end - start, DECODE_KEYS);

	if (a.rope.qkv) {
		decode_rope(a, sm.q, kvh, end == nk);
		__syncthreads(); /* the new key and value are stored before the tiles load */
	} else {
		for (int i = threadIdx.x; i < G * hd; i += blockDim.x)
			sm.q[i] = q[i] * a.scale;
	}
	decode_fetch(sm.k0, sm.v0, K, V, start, min(DECODE_KEYS, end - start), hd);
	cp_async_commit();
	/* the softmax state of this warp's query heads: warp, warp + 4 */
	float m[DECODE_MAX_GROUP / (DECODE_THREADS / 32)],
		l[DECODE_MAX_GROUP / (DECODE_THREADS / 32)];
#pragma unroll
	for (int gi = 0; gi < DECODE_MAX_GROUP / (DECODE_THREADS / 32); gi++)
		m[gi] = -INFINITY, l[gi] = 0.0f;
	float acc[DECODE_MAX_GROUP][2] = {};
	for (int t = 0; t < ntiles; t++) {
		int k0 = start + t * DECODE_KEYS, tile = min(DECODE_KEYS, end - k0);
		if (t + 1 < ntiles)
			decode_fetch(t & 1 ? sm.k0 : sm.k1, t & 1 ? sm.v0 : sm.v1, K, V,
				     k0 + DECODE_KEYS, min(DECODE_KEYS, end - k0 - DECODE_KEYS),
				     hd);
		cp_async_commit(); /* an empty group on the last tile keeps the count right */
		cp_async_wait_prev();
		__syncthreads();
		const bf16 *ks = t & 1 ? sm.k1 : sm.k0, *vs = t & 1 ? sm.v1 : sm.v0;
		/* scores and online softmax: warp per query head, lane = key */
#pragma unroll
		for (int gi = 0; gi < DECODE_MAX_GROUP / (DECODE_THREADS / 32); gi++) {
			int g = warp + gi * nwarps;
			if (g >= G)
				break;
			float s = -INFINITY;
			if (lane < tile) {
				const uint4 *kr = (const uint4 *)(ks + lane * (hd + 8));
				const float4 *qg = (const float4 *)(sm.q + g * hd);
				s = 0.0f;
				for (int c = 0; c < hd / 8; c++) {
					uint4 kv = kr[c];
					float4 q0 = qg[2 * c], q1 = qg[2 * c + 1];
					const __nv_bfloat162 *k2 = (const __nv_bfloat162 *)&kv;
					float2 k01 = __bfloat1622float2(k2[0]),
					       k23 = __bfloat1622float2(k2[1]);
					float2 k45 = __bfloat1622float2(k2[2]),
					       k67 = __bfloat1622float2(k2[3]);
					s += q0.x * k01.x + q0.y * k01.y + q0.z * k23.x +
					     q0.w * k23.y + q1.x * k45.x + q1.y * k45.y +
					     q1.z * k67.x + q1.w * k67.y;
				}
				if (a.cap) /* raw scores; the combine normalizes them */
					a.cap[(size_t)(kvh * G + g) * a.ctx + k0 + lane] = s;
			}
			float m_new = fmaxf(m[gi], warp_max(s));
			float e = lane < tile ? expf(s - m_new) : 0.0f;
			float c = expf(m[gi] - m_new);
			l[gi] = l[gi] * c + warp_sum(e);
			m[gi] = m_new;
			sm.p[g * DECODE_KEYS + lane] = e;
			if (lane == 0)
				sm.corr[g] = c;
		}
		__syncthreads();
		/* weighted sum of V rows: this thread's pair of dims over its share of keys */
		if (grp < ngroups) {
#pragma unroll
			for (int g = 0; g < DECODE_MAX_GROUP; g++)
				if (g < G)
					acc[g][0] *= sm.corr[g], acc[g][1] *= sm.corr[g];
			for (int j = grp; j < tile; j += ngroups) {
				float2 v = __bfloat1622float2(
					*(const __nv_bfloat162 *)&vs[j * hd + 2 * pr]);
#pragma unroll
				for (int g = 0; g < DECODE_MAX_GROUP; g++)
					if (g < G) {
						float w = sm.p[g * DECODE_KEYS + j];
						acc[g][0] = fmaf(w, v.x, acc[g][0]);
						acc[g][1] = fmaf(w, v.y, acc[g][1]);
					}
			}
		}
		__syncthreads(); /* before the next fetch overwrites this buffer */
	}
	/* the thread groups' sums, through shared memory (the tiles are free now) */
	float *red = (float *)sm.k0; /* (ngroups, G, hd): 256 G floats at most */
	if (grp < ngroups)
#pragma unroll
		for (int g = 0; g < DECODE_MAX_GROUP; g++)
			if (g < G) {
				red[(grp * G + g) * hd + 2 * pr] = acc[g][0];
				red[(grp * G + g) * hd + 2 * pr + 1] = acc[g][1];
			}
	__syncthreads();
	for (int i = threadIdx.x; i < G * hd; i += blockDim.x) {
		int g = i / hd, d = i % hd;
		float o = 0.0f;
		for (int r = 0; r < ngroups; r++)
			o += red[(r * G + g) * hd + d];
		a.part[((size_t)(kvh * G + g) * a.max_splits + split) * (hd + 2) + d] = o;
	}
	if (lane == 0)
#pragma unroll
		for (int gi = 0; gi < DECODE_MAX_GROUP / (DECODE_THREADS / 32); gi++) {
			int g = warp + gi * nwarps;
			if (g >= G)
				break;
			float *part =
				a.part + ((size_t)(kvh * G + g) * a.max_splits + split) * (hd + 2);
			part[hd] = m[gi];
			part[hd + 1] = l[gi];
		}
}

/* Block per query head: rescales the splits to the global max and normalizes. */
__global__ static void decode_combine_kernel(struct cu_attn_args a)
{
	__shared__ float w[CU_MAX_SPLITS];
	__shared__ float red[DECODE_THREADS / 32];
	pdl_launch_dependents(); /* the output projection may start fetching its weights */
	int h = blockIdx.x, hd = a.hd, lane = threadIdx.x % 32, warp = threadIdx.x / 32;
	int nk = *a.pos + a.q_offset + 1, splits = CEIL_DIV(nk, split_len(nk, a.max_splits));
	const float *part = a.part + (size_t)h * a.max_splits * (hd + 2);
	float m = -INFINITY;
	for (int s = threadIdx.x; s < splits; s += blockDim.x)
		m = fmaxf(m, part[(size_t)s * (hd + 2) + hd]);
	m = warp_max(m);
	if (lane == 0)
		red[warp] = m;
	__syncthreads();
	for (int i = 0; i < DECODE_THREADS / 32; i++)
		m = fmaxf(m, red[i]);
	float l = 0.0f;
	for (int s = threadIdx.x; s < splits; s += blockDim.x) {
		float ws = expf(part[(size_t)s * (hd + 2) + hd] - m);
		w[s] = ws;
		l += ws * part[(size_t)s * (hd + 2) + hd + 1];
	}
	l = block_sum(l); /* its barriers also publish w */
	for (int d = threadIdx.x; d < hd; d += blockDim.x) {
		float o = 0.0f;
#pragma unroll 8
		for (int s = 0; s < splits; s++)
			o += w[s] * part[(size_t)s * (hd + 2) + d];
		a.out[(size_t)h * hd + d] = __float2bfloat16(o / l);
	}
	if (a.cap)
		for (int j = threadIdx.x; j < nk; j += blockDim.x) {
			float *c = a.cap + (size_t)h * a.ctx + j;
			*c = expf(*c - m) / l;
		}
}

/* Block (head, tile of PREFILL_WARPS queries); each warp owns one query, keeps it and
 * its output accumulator in registers (lane holds dims lane, lane+32, ...), and walks
 * the keys tile by tile with an online softmax. The block's K/V tiles are shared. */
__global__ static void prefill_kernel(struct cu_attn_args a)
{
	__shared__ bf16 ks[PREFILL_KEYS * CU_MAX_HEAD_DIM];
	__shared__ bf16 vs[PREFILL_KEYS * CU_MAX_HEAD_DIM];
	int h = blockIdx.x, hd = a.hd, lane = threadIdx.x % 32, warp = threadIdx.x / 32;
	int pos0 = *a.pos;
	int t = blockIdx.y * PREFILL_WARPS + warp; /* this warp's query in the chunk */
	int t_last = min(a.n - 1, (int)(blockIdx.y + 1) * PREFILL_WARPS - 1);
	int kvh = h / (a.H / a.Hkv);
	const bf16 *K = a.k_cache + (size_t)kvh * a.ctx * hd;
	const bf16 *V = a.v_cache + (size_t)kvh * a.ctx * hd;
	bool active = t < a.n;
	int nk = pos0 + t + 1; /* keys this query sees */

	float q[REG_DIMS], o[REG_DIMS];
#pragma unroll
	for (int r = 0; r < REG_DIMS; r++) {
		int d = lane + 32 * r;
		q[r] = active && d < hd ? a.q[(size_t)t * a.H * hd + (size_t)h * hd + d] * a.scale
					: 0.0f;
		o[r] = 0.0f;
	}
	float m = -INFINITY, l = 0.0f;
	int keys_block = pos0 + t_last + 1;
	for (int k0 = 0; k0 < keys_block; k0 += PREFILL_KEYS) {
		int tile = min(PREFILL_KEYS, keys_block - k0);
		__syncthreads();
		for (int i = threadIdx.x; i < tile * hd; i += blockDim.x) {
			ks[i] = K[(size_t)k0 * hd + i];
			vs[i] = V[(size_t)k0 * hd + i];
		}
		__syncthreads();
		if (!active)
			continue;
		int upto = min(tile, nk - k0);
		for (int j = 0; j < upto; j++) {
			float s = 0.0f;
#pragma unroll
			for (int r = 0; r < REG_DIMS; r++) {
				int d = lane + 32 * r;
				if (d < hd)
					s += q[r] * __bfloat162float(ks[j * hd + d]);
			}
			s = warp_sum(s);
			float m_new = fmaxf(m, s);
			float corr = expf(m - m_new), p = expf(s - m_new);
			l = l * corr + p;
#pragma unroll
			for (int r = 0; r < REG_DIMS; r++) {
				int d = lane + 32 * r;
				if (d < hd)
					o[r] = o[r] * corr + p * __bfloat162float(vs[j * hd + d]);
			}
			m = m_new;
		}
	}
	if (!active)
		return;
#pragma unroll
	for (int r = 0; r < REG_DIMS; r++) {
		int d = lane + 32 * r;
		if (d < hd)
			a.out[(size_t)t * a.H * hd + (size_t)h * hd + d] =
				__float2bfloat16(o[r] / l);
	}
}

/* ---- tensor-core flash attention for prefill ------------------------------------------ */

#define FA_WARPS 4  /* 16 queries per warp: the rows of one mma tile */
#define FA_KEYS  64 /* keys per shared tile */

/* d (16x8 fp32) += a (16x16 bf16, row-major) . b (16x8 bf16, column-major), the fragment
 * layouts of PTX's mma.m16n8k16: lane = 4 * g + t holds rows g and g + 8, columns
 * 2t, 2t + 1 (and + 8 in k). */
__device__ static void mma16816(float d[4], const uint32_t a[4], uint32_t b0, uint32_t b1)
{
	asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 "
		     "{%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
		     : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
		     : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

/* Two floats as a bf16 pair: lo in the low half (the lower column). */
__device__ static uint32_t pack_bf16(float lo, float hi)
{
	__nv_bfloat162 v = __floats2bfloat162_rn(lo, hi);
	return *(uint32_t *)&v;
}

__device__ static uint32_t pack_raw(bf16 lo, bf16 hi)
{
	return (uint32_t) * (const uint16_t *)&lo | (uint32_t) * (const uint16_t *)&hi << 16;
}

/* Block (tile of 64 queries, head). Each warp owns 16 queries: Q as bf16 A fragments in
 * registers, the output accumulator (16 x HD fp32) in C fragments. The block walks the
 * keys in tiles of FA_KEYS staged in shared memory (rows padded by 8 bf16 so that the
 * fragment loads hit 32 different banks): S = Q K^T on tensor cores, the causal mask, an
 * online softmax in the exp2 domain, P rounded to bf16 as the A operand of O += P V. */
template <int HD>
__global__ __launch_bounds__(FA_WARPS * 32) static void flash_prefill_kernel(struct cu_attn_args a)
{
	constexpr int PAD = HD + 8, KT = HD / 16, DT = HD / 8, ST = FA_KEYS / 8;
	__shared__ __align__(16) bf16 ks[FA_KEYS * PAD];
	__shared__ __align__(16) bf16 vs[FA_KEYS * PAD];
	int h = blockIdx.y, warp = threadIdx.x / 32, lane = threadIdx.x % 32;
	int g = lane / 4, t = lane % 4;
	int pos0 = *a.pos, n = a.n;
	int t0 = blockIdx.x * FA_WARPS * 16, tw = t0 + warp * 16; /* block's, warp's first query */
	const size_t kv_off = (size_t)(h / (a.H / a.Hkv)) * a.ctx * HD;
	const bf16 *K = a.k_cache + kv_off, *V = a.v_cache + kv_off;
	bool active = tw < n;
	/* rows g and g + 8: their positions (rows past n repeat the last query; not stored) */
	int qpos[2] = {pos0 + min(tw + g, n - 1), pos0 + min(tw + g + 8, n - 1)};

	uint32_t qf[KT][4];
	const float qscale = a.scale * 1.4426950408889634f; /* scores in log2 units */
#pragma unroll
	for (int kk = 0; kk < KT; kk++)
#pragma unroll
		for (int i = 0; i < 4;
		     i++) { /* a0: (g, 2t) a1: (g+8, 2t) a2: (g, 2t+8) a3: (g+8, 2t+8) */
			int row = tw + g + 8 * (i & 1), col = 16 * kk + 2 * t + 8 * (i >> 1);
			const float *src = a.q + (size_t)row * a.H * HD + (size_t)h * HD + col;
			qf[kk][i] = row < n ? pack_bf16(src[0] * qscale, src[1] * qscale) : 0u;
		}
	float o[DT][4] = {};
	float m[2] = {-INFINITY, -INFINITY}, l[2] = {0.0f, 0.0f};
	int keys_block = pos0 + min(n - 1, t0 + FA_WARPS * 16 - 1) + 1;
	int keys_warp = pos0 + min(n - 1, tw + 15) + 1;

	for (int k0 = 0; k0 < keys_block; k0 += FA_KEYS) {
		int tile = min(FA_KEYS, keys_block - k0);
		__syncthreads(); /* the previous tile is consumed */
		for (int i = threadIdx.x; i < FA_KEYS * HD / 8; i += blockDim.x) {
			int r = i / (HD / 8), c = i % (HD / 8) * 8;
			uint4 kv = make_uint4(0, 0, 0, 0),
			      vv = kv; /* zero rows: 0 x garbage = NaN */
			if (r < tile) {
				kv = *(const uint4 *)(K + (size_t)(k0 + r) * HD + c);
				vv = *(const uint4 *)(V + (size_t)(k0 + r) * HD + c);
			}
			*(uint4 *)(ks + r * PAD + c) = kv;
			*(uint4 *)(vs + r * PAD + c) = vv;
		}
		__syncthreads();
		if (!active || k0 >= keys_warp)
			continue;
		/* S (16 x FA_KEYS) = Q K^T: B(k, n) = K[key 8j + n][dim 16kk + k] */
		float sc[ST][4] = {};
#pragma unroll
		for (int j = 0; j < ST; j++)
#pragma unroll
			for (int kk = 0; kk < KT; kk++) {
				const bf16 *kr = ks + (8 * j + g) * PAD + 16 * kk + 2 * t;
				mma16816(sc[j], qf[kk], *(const uint32_t *)kr,
					 *(const uint32_t *)(kr + 8));
			}
		/* causal mask, the rows' new max (across the 4 lanes of a row), rescale */
		float mx[2] = {m[0], m[1]};
#pragma unroll
		for (int j = 0; j < ST; j++)
#pragma unroll
			for (int e = 0; e < 4; e++) {
				int key = k0 + 8 * j + 2 * t + (e & 1);
				if (key > qpos[e >> 1])
					sc[j][e] = -INFINITY;
				mx[e >> 1] = fmaxf(mx[e >> 1], sc[j][e]);
			}
		float corr[2], sum[2] = {0.0f, 0.0f};
#pragma unroll
		for (int r = 0; r < 2; r++) {
			mx[r] = fmaxf(mx[r], __shfl_xor_sync(0xffffffffu, mx[r], 1));
			mx[r] = fmaxf(mx[r], __shfl_xor_sync(0xffffffffu, mx[r], 2));
			corr[r] = exp2f(m[r] - mx[r]);
			m[r] = mx[r];
		}
#pragma unroll
		for (int j = 0; j < ST; j++)
#pragma unroll
			for (int e = 0; e < 4; e++) {
				sc[j][e] = exp2f(sc[j][e] - m[e >> 1]);
				sum[e >> 1] += sc[j][e];
			}
#pragma unroll
		for (int r = 0; r < 2; r++)
			l[r] = l[r] * corr[r] + sum[r]; /* this lane's share; summed at the end */
#pragma unroll
		for (int d = 0; d < DT; d++)
			o[d][0] *= corr[0], o[d][1] *= corr[0], o[d][2] *= corr[1],
				o[d][3] *= corr[1];
			/* O += P V: P's C fragments are the A fragments of two adjacent 8-key tiles;
		 * B(k, n) = V[key 16kk + k][dim 8d + n] */
#pragma unroll
		for (int kk = 0; kk < FA_KEYS / 16; kk++) {
			uint32_t pa[4] = {pack_bf16(sc[2 * kk][0], sc[2 * kk][1]),
					  pack_bf16(sc[2 * kk][2], sc[2 * kk][3]),
					  pack_bf16(sc[2 * kk + 1][0], sc[2 * kk + 1][1]),
					  pack_bf16(sc[2 * kk + 1][2], sc[2 * kk + 1][3])};
#pragma unroll
			for (int d = 0; d < DT; d++) {
				const bf16 *vr = vs + (16 * kk + 2 * t) * PAD + 8 * d + g;
				mma16816(o[d], pa, pack_raw(vr[0], vr[PAD]),
					 pack_raw(vr[8 * PAD], vr[9 * PAD]));
			}
		}
	}
	if (!active)
		return;
#pragma unroll
	for (int r = 0; r < 2; r++) {
		l[r] += __shfl_xor_sync(0xffffffffu, l[r], 1);
		l[r] += __shfl_xor_sync(0xffffffffu, l[r], 2);
	}
#pragma unroll
	for (int r = 0; r < 2; r++) {
		int row = tw + g + 8 * r;
		if (row >= n)
			continue;
		bf16 *dst = a.out + (size_t)row * a.H * HD + (size_t)h * HD + 2 * t;
#pragma unroll
		for (int d = 0; d < DT; d++)
			*(__nv_bfloat162 *)(dst + 8 * d) =
				__floats2bfloat162_rn(o[d][2 * r] / l[r], o[d][2 * r + 1] / l[r]);
	}
}

/* ---- launchers ---------------------------------------------------------------------- */

static int check_shape(const struct cu_attn_args *a)
{
	if (a->hd > CU_MAX_HEAD_DIM || a->hd % 8)
		return err_set("cuda attention: head_dim %d is not supported (a multiple of 8, "
			       "at most %d)",
			       a->hd, CU_MAX_HEAD_DIM);
	if (a->max_splits > CU_MAX_SPLITS)
		return err_set("cuda attention: %d splits (at most %d)", a->max_splits,
			       CU_MAX_SPLITS);
	if (a->H % a->Hkv || a->H / a->Hkv > DECODE_MAX_GROUP)
		return err_set("cuda attention: %d query heads per kv head (at most %d)",
			       a->H / a->Hkv, DECODE_MAX_GROUP);
	return 0;
}

int cu_attention_setup(int hd, int group)
{
	CUDA_CHECK(cudaFuncSetAttribute(decode_split_kernel,
					cudaFuncAttributeMaxDynamicSharedMemorySize,
					(int)decode_smem_bytes(hd, group)));
	return 0;
}

int cu_attention_decode(const struct cu_attn_args *a, cudaStream_t s)
{
	if (check_shape(a))
		return -1;
	/* A fixed grid (the context is divided among max_splits splits on the device),
	 * so one graph serves every position. */
	size_t smem = decode_smem_bytes(a->hd, a->H / a->Hkv);
	decode_split_kernel<<<dim3(a->Hkv, a->max_splits), DECODE_THREADS, smem, s>>>(*a);
	LAUNCH_CHECK();
	decode_combine_kernel<<<a->H, 128, 0, s>>>(*a);
	LAUNCH_CHECK();
	return 0;
}

int cu_attention_prefill(const struct cu_attn_args *a, cudaStream_t s)
{
	if (check_shape(a))
		return -1;
	/* tensor cores for the usual head sizes; the scalar kernel for any other */
	if (a->hd == 128 || a->hd == 64) {
		dim3 grid(CEIL_DIV(a->n, FA_WARPS * 16), a->H);
		if (a->hd == 128)
			flash_prefill_kernel<128><<<grid, FA_WARPS * 32, 0, s>>>(*a);
		else
			flash_prefill_kernel<64><<<grid, FA_WARPS * 32, 0, s>>>(*a);
		LAUNCH_CHECK();
		return 0;
	}
	dim3 grid(a->H, CEIL_DIV(a->n, PREFILL_WARPS));
	prefill_kernel<<<grid, PREFILL_WARPS * 32, 0, s>>>(*a);
	LAUNCH_CHECK();
	return 0;
}
