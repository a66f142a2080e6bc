/* kernels.c — the CPU kernels' run-time dispatch (kernels_avx512.c, kernels_avx2.c,
 * or the portable C here) and the element-wise steps every set shares.
 * Each ISA's functions carry __attribute__((target)) so the rest of the program is
 * built for the baseline x86-64 and still runs anywhere.
 *
 * The weights stay bf16; each kernel widens them to fp32 in registers and
 * accumulates in fp32, so results match an fp32 reference to rounding. AVX-512
 * BF16's vdpbf16ps serves only the opt-in bf16 prefill (matmul_bf16): it multiplies
 * bf16 by bf16, which rounds the activations to 8 bits of mantissa (~4e-3 relative
 * error per product, far outside the 1e-4 agreement with transformers the exact
 * path keeps). */
#include "engine/cpu/amx.h"
#include "engine/cpu/tiling.h"

#include <math.h>

#if defined(__x86_64__)
#define CPU_X86 1
#include <cpuid.h>
#endif

/* ---- portable C --------------------------------------------------------------- */

static void matmul_c(float *out, int ldo, const float *xp, int ldx, int n, const uint16_t *w, int K,
		     int m0, int m1, bool acc, uint32_t *panel)
{
	(void)panel;
	for (int m = m0; m < m1; m++) {
		const uint16_t *wr = w + (size_t)m * K;
		for (int t = 0; t < n; t++) {
			const float *x = xp + (size_t)t * ldx;
			float s = 0;
			for (int k = 0; k < K; k++)
				s += cpu_bf16_to_f32(wr[k]) * x[k];
			float *o = out + (size_t)t * ldo + m;
			*o = acc ? *o + s : s;
		}
	}
}


static void scores_c(float *s, const float *q, const void *keys, int nk, int hd, bool bf16,
		     float scale)
{
	for (int j = 0; j < nk; j++) {
		float d = 0;
		for (int i = 0; i < hd; i++)
			d += q[i] * kv_at(keys, (size_t)j * hd + i, bf16);
		s[j] = d * scale;
	}
}

static void mix_c(float *out, int ldo, const float *p, int ldp, int T, const void *vals, int nk,
		  int hd, bool bf16)
{
	for (int t = 0; t < T; t++) {
		float *o = out + (size_t)t * ldo;
		const float *pt = p + (size_t)t * ldp;
		for (int i = 0; i < hd; i++)
			o[i] = 0;
		for (int j = 0; j < nk; j++)
			for (int i = 0; i < hd; i++)
				o[i] += pt[j] * kv_at(vals, (size_t)j * hd + i, bf16);
	}
}


static void matmul_panel_c(float *out, int ldo, const float *xp, int ldx, int n,
			   const uint32_t *panel, int K, int rows)
{
	for (int t = 0; t < n; t++)
		for (int r = 0; r < rows; r++) {
			const float *x = xp + (size_t)t * ldx; /* pack 1: natural order */
			float s = 0;
			for (int p = 0; p < K / 2; p++) {
				uint32_t w = panel[(size_t)p * CPU_PANEL_ROWS + r];
				s += cpu_bf16_to_f32((uint16_t)w) * x[2 * p];
				s += cpu_bf16_to_f32((uint16_t)(w >> 16)) * x[2 * p + 1];
			}
			out[(size_t)t * ldo + r] = s;
		}
}

static void pack_row_c(float *xp, const float *x, int K)
{
	cpu_pack_row(xp, x, K, 1);
}

static const struct cpu_kernels kernels_c = {
	.name = "c",
	.pack = 1,
	.matmul = matmul_c,
	.matmul_panel = matmul_panel_c,
	.scores = scores_c,
	.mix = mix_c,
	.pack_row = pack_row_c,
	.softmax = cpu_softmax,
	.swiglu = cpu_swiglu,
	.swiglu_back = cpu_swiglu_back,
	.scale_sq = cpu_scale_sq,
	.adamw = cpu_adamw_c,
	.rmsnorm = cpu_rmsnorm,
	.to_bf16 = cpu_bf16_row,
	.quantize_act = cpu_quantize_act,
	.qmatvec = cpu_qmatvec_c,
	.dequant_bf16 = cpu_dequant_bf16_c,
	.dequant_f32p = cpu_dequant_f32p_c,
	.matmul_f32w = cpu_matmul_f32w_c,
};

/* ---- dispatch ------------------------------------------------------------------ */

#ifdef CPU_X86
/* From CPUID: clang's __builtin_cpu_supports does not know "f16c". */
static bool has_f16c(void)
{
	unsigned a, b, c, d;
	return __get_cpuid(1, &a, &b, &c, &d) && (c & bit_F16C);
}
#endif

bool cpu_isa_supported(enum cpu_isa isa)
{
#ifdef CPU_X86
	__builtin_cpu_init();
	switch (isa) {
	case CPU_ISA_AMX: return cpu_isa_supported(CPU_ISA_AVX512BF16) && cpu_amx_usable();
	case CPU_ISA_AVX512BF16:
		return cpu_isa_supported(CPU_ISA_AVX512) && __builtin_cpu_supports("avx512bf16");
	case CPU_ISA_AVX512: /* its table also holds the AVX2 quantized kernels */
		return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
		       __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq") &&
		       cpu_isa_supported(CPU_ISA_AVX2);
	case CPU_ISA_AVX2: /* F16C: the quantized kernels' block scales */
		return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && has_f16c();
	case CPU_ISA_C: return true;
	}
	return false;
#else
	return isa == CPU_ISA_C;
#endif
}

enum cpu_isa cpu_isa_best(void)
{
	if (cpu_isa_supported(CPU_ISA_AMX))
		return CPU_ISA_AMX;
	if (cpu_isa_supported(CPU_ISA_AVX512BF16))
		return CPU_ISA_AVX512BF16;
	if (cpu_isa_supported(CPU_ISA_AVX512))
		return CPU_ISA_AVX512;
	if (cpu_isa_supported(CPU_ISA_AVX2))
		return CPU_ISA_AVX2;
	return CPU_ISA_C;
}

bool cpu_isa_from_name(const char *name, enum cpu_isa *isa)
{
	for (int i = CPU_ISA_C; i <= CPU_ISA_AMX; i++)
		if (!strcmp(name, cpu_kernels_get((enum cpu_isa)i)->name)) {
			*isa = (enum cpu_isa)i;
			return true;
		}
	return false;
}

const struct cpu_kernels *cpu_kernels_get(enum cpu_isa isa)
{
#ifdef CPU_X86
	if (isa == CPU_ISA_AMX)
		return &cpu_kernels_amx;
	if (isa == CPU_ISA_AVX512BF16)
		return &cpu_kernels_avx512bf16;
	if (isa == CPU_ISA_AVX512)
		return &cpu_kernels_avx512;
	if (isa == CPU_ISA_AVX2)
		return &cpu_kernels_avx2;
#endif
	(void)isa;
	return &kernels_c;
}

void cpu_bf16_row(uint16_t *xb, const float *x, int K)
{
	for (int k = 0; k < K; k++)
		xb[k] = cpu_f32_to_bf16(x[k]);
}

void cpu_pack_row(float *xp, const float *x, int K, int pack)
{
	int kb = pack > 1 ? K / pack * pack : 0;
	int h = pack / 2;
	for (int b = 0; b < kb; b += pack)
		for (int i = 0; i < h; i++) {
			xp[b + i] = x[b + 2 * i];
			xp[b + h + i] = x[b + 2 * i + 1];
		}
	for (int k = kb; k < K; k++)
		xp[k] = x[k];
}

void cpu_unpack_row(float *x, const float *xp, int K, int pack)
{
	int kb = pack > 1 ? K / pack * pack : 0;
	int h = pack / 2;
	for (int b = 0; b < kb; b += pack)
		for (int i = 0; i < h; i++) {
			x[b + 2 * i] = xp[b + i];
			x[b + 2 * i + 1] = xp[b + h + i];
		}
	for (int k = kb; k < K; k++)
		x[k] = xp[k];
}

/* ---- element-wise steps ---------------------------------------------------------- */

void cpu_rmsnorm(float *out, const float *x, const float *w, int n, float eps)
{
	double ss = 0;
	for (int i = 0; i < n; i++)
		ss += (double)x[i] * x[i];
	float r = 1.0f / sqrtf((float)(ss / n) + eps);
	for (int i = 0; i < n; i++)
		out[i] = w[i] * (x[i] * r);
}

void cpu_rope(float *x, const float *cos, const float *sin, int hd)
{
	int h = hd / 2;
	for (int i = 0; i < h; i++) {
		float a = x[i], b = x[i + h];
		x[i] = a * cos[i] - b * sin[i];
		x[i + h] = b * cos[i] + a * sin[i];
	}
}

void cpu_softmax(float *s, int n, float scale, double *lse)
{
	float mx = -INFINITY;
	for (int i = 0; i < n; i++) {
		s[i] *= scale;
		mx = s[i] > mx ? s[i] : mx;
	}
	/* one chain of float adds loses ~sqrt(n) ulps over a long row (2e-6 at 1,000);
	 * the vector kernels sum in many lanes, this one in double */
	double sum = 0;
	for (int i = 0; i < n; i++) {
		s[i] = expf(s[i] - mx);
		sum += s[i];
	}
	float inv = (float)(1.0 / sum);
	for (int i = 0; i < n; i++)
		s[i] *= inv;
	if (lse)
		*lse = (double)mx + log(sum);
}

void cpu_swiglu(float *g, const float *u, int n)
{
	for (int i = 0; i < n; i++)
		g[i] = g[i] / (1.0f + expf(-g[i])) * u[i];
}

/* h = g sigma(g) u: dg = dh u sigma (1 + g (1 - sigma)), du = dh g sigma. For g > 0,
 * 1 - sigma is taken as e^-g sigma: 1 - sigma in floats cancels (at g = 16 it is all
 * rounding), and g times it is not small there. */
void cpu_swiglu_back(float *dh, float *du, const float *g, const float *u, int n)
{
	for (int i = 0; i < n; i++) {
		float x = g[i], e = expf(-x), sg = 1.0f / (1.0f + e), d = dh[i];
		float rest = x > 80 ? 0.0f : x > 0 ? e * sg : 1.0f - sg; /* as the vector ones */
		du[i] = d * x * sg;
		dh[i] = d * u[i] * sg * (1.0f + x * rest);
	}
}

/* Four partial sums: one would chain every add on the add's latency. */
double cpu_scale_sq(float *g, size_t n, float scale)
{
	double s[4] = {0, 0, 0, 0};
	for (size_t k = 0; k < n; k++) {
		g[k] *= scale;
		s[k & 3] += (double)g[k] * g[k];
	}
	return (s[0] + s[1]) + (s[2] + s[3]);
}

void cpu_adamw_c(float *w, float *m, float *v, const float *g, size_t n,
		 const struct cpu_adamw *h)
{
	for (size_t k = 0; k < n; k++) {
		float gk = g[k], wk = w[k] * h->decay;
		float mk = h->b1 * m[k] + h->c1 * gk;
		float vk = h->b2 * v[k] + h->c2 * gk * gk;
		m[k] = mk, v[k] = vk;
		w[k] = wk - h->step * mk / (sqrtf(vk) * h->rbc2 + h->eps);
	}
}
