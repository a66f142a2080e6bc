/* rope.h — the rotary position table (cos/sin per position and frequency) every
 * backend uses, computed on the host exactly as transformers does. */
#ifndef QWENCHAT_ENGINE_ROPE_H
#define QWENCHAT_ENGINE_ROPE_H

#include "engine/engine.h"

/* The head_dim/2 inverse frequencies and the factor cos/sin are multiplied by
 * (1 unless YaRN). inv_freq holds head_dim/2 floats. */
void rope_inv_freq(const struct eng_config *c, float *inv_freq, float *attention_factor);

/* cos/sin (ctx, head_dim/2) for positions 0..ctx-1, attention factor applied. */
void rope_table(const struct eng_config *c, int ctx, float *cos_out, float *sin_out);

#endif
