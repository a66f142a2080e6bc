/* rope.c — rotary embedding frequencies: default RoPE, linear scaling and YaRN,
 * following transformers' _compute_default_rope_parameters,
 * _compute_linear_scaling_rope_parameters and _compute_yarn_parameters
 * including their float32 arithmetic, so positions rotate identically. */
#include "engine/rope.h"
#include "src/base/err.h"

#include <math.h>
#include <string.h>

static double yarn_mscale(double scale, double mscale)
{
	return scale <= 1 ? 1.0 : 0.1 * mscale * log(scale) + 1.0;
}

/* The dimension at which `rotations` full turns fit in the original context. */
static double correction_dim(double rotations, int dim, double base, double max_pos)
{
	return (dim * log(max_pos / (rotations * 2 * M_PI))) / (2 * log(base));
}

void rope_inv_freq(const struct eng_config *c, float *inv_freq, float *attention_factor)
{
	int dim = c->head_dim, half = dim / 2;
	float base = (float)c->rope_theta;
	/* pos_freqs = base ** (arange(0, dim, 2).float() / dim), in float32 */
	for (int i = 0; i < half; i++)
		inv_freq[i] = 1.0f / powf(base, (float)(2 * i) / (float)dim);
	*attention_factor = 1.0f;
	if (!strcmp(c->rope_type, "linear")) { /* inv_freq /= factor, in float32 */
		for (int i = 0; i < half; i++)
			inv_freq[i] /= (float)c->rope_factor;
		return;
	}
	if (strcmp(c->rope_type, "yarn") != 0)
		return;

	/* YaRN's factor as given, over original_max_position_embeddings (else
	 * max_position_embeddings). transformers 4.51-4.55 replaced the factor by
	 * max_position_embeddings / original_max_position_embeddings where the latter was
	 * given: 1.25 for Qwen3's documented recipe (4 over 32768, 40960 left as it is).
	 * Later transformers, vLLM, SGLang and llama.cpp use the factor as given. */
	double factor = c->rope_factor, orig = c->max_position_embeddings;
	if (c->rope_original_max_position > 0)
		orig = c->rope_original_max_position;
	/* The factor on cos and sin: given, or DeepSeek's ratio when both mscales are
	 * given, else the paper's 0.1 ln(factor) + 1. */
	if (c->rope_attention_factor > 0)
		*attention_factor = (float)c->rope_attention_factor;
	else if (c->rope_mscale != 0 && c->rope_mscale_all_dim != 0)
		*attention_factor = (float)(yarn_mscale(factor, c->rope_mscale) /
					    yarn_mscale(factor, c->rope_mscale_all_dim));
	else
		*attention_factor = (float)yarn_mscale(factor, 1);
	/* Dimensions turning more than beta_fast times over the original context keep
	 * their frequency, those under beta_slow are interpolated, a ramp in between. */
	double low = floor(correction_dim(c->rope_beta_fast, dim, c->rope_theta, orig));
	double high = ceil(correction_dim(c->rope_beta_slow, dim, c->rope_theta, orig));
	if (low < 0)
		low = 0;
	if (high > dim - 1)
		high = dim - 1;
	if (low == high)
		high += 0.001;
	for (int i = 0; i < half; i++) {
		float pos_freq = powf(base, (float)(2 * i) / (float)dim);
		float extra = 1.0f / pos_freq;                   /* inv_freq_extrapolation */
		float inter = 1.0f / ((float)factor * pos_freq); /* inv_freq_interpolation */
		float ramp = ((float)i - (float)low) / (float)(high - low);
		ramp = ramp < 0 ? 0 : ramp > 1 ? 1 : ramp;
		float extra_factor = 1.0f - ramp;
		inv_freq[i] = inter * (1.0f - extra_factor) + extra * extra_factor;
	}
}

void rope_table(const struct eng_config *c, int ctx, float *cos_out, float *sin_out)
{
	int half = c->head_dim / 2;
	float inv[half], af;
	rope_inv_freq(c, inv, &af);
	for (int p = 0; p < ctx; p++)
		for (int i = 0; i < half; i++) {
			/* freqs = inv_freq * position in float32, then cos/sin, then * factor */
			float f = inv[i] * (float)p;
			cos_out[(size_t)p * half + i] = (float)cos((double)f) * af;
			sin_out[(size_t)p * half + i] = (float)sin((double)f) * af;
		}
}

int eng_max_context(const struct eng_config *c)
{
	if (strcmp(c->rope_type, "yarn") != 0 || c->rope_factor <= 1)
		return c->max_position_embeddings;
	double orig = c->rope_original_max_position > 0 ? c->rope_original_max_position
							: c->max_position_embeddings;
	double window = floor(orig * c->rope_factor);
	if (window > ENG_MAX_CONTEXT)
		window = ENG_MAX_CONTEXT;
	return window > c->max_position_embeddings ? (int)window : c->max_position_embeddings;
}

const char *eng_max_context_source(const struct eng_config *c)
{
	if (eng_max_context(c) == c->max_position_embeddings)
		return "max_position_embeddings";
	return c->rope_original_max_position > 0
		       ? "YaRN's factor x original_max_position_embeddings"
		       : "YaRN's factor x max_position_embeddings";
}

int eng_check_context(const struct eng_config *c, int ctx)
{
	if (ctx <= eng_max_context(c))
		return 0;
	return err_set("a context of %d tokens is more than the model's %d positions (%s)", ctx,
		       eng_max_context(c), eng_max_context_source(c));
}

double eng_rope_attention_factor(const struct eng_config *c)
{
	float inv_freq[ENG_MAX_HEAD_DIM / 2], scale;
	rope_inv_freq(c, inv_freq, &scale);
	return scale;
}
