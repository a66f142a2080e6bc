/* config_limits.h — the limits and cross-field checks a model config must pass,
 * shared by config.json (config.c) and GGUF metadata (model_gguf.c). Internal. */
#ifndef QWENCHAT_CONFIG_LIMITS_H
#define QWENCHAT_CONFIG_LIMITS_H

#include "engine/engine.h"

/* Limits: generous multiples of the largest dense models, small enough that
 * every size computed from them fits in 64 bits and nothing absurd is allocated. */
#define MAX_VOCAB       (1 << 24)
#define MAX_WIDTH       (1 << 20)
#define MAX_LAYERS      1024
#define MAX_HEADS       1024
#define MAX_POSITIONS   (1 << 24)
#define MAX_PARAMS      2000000000000LL /* 2T parameters */
#define MIN_RMS_EPS     1e-30
#define MAX_RMS_EPS     0.1
#define MIN_ROPE_THETA  1e-3
#define MAX_ROPE_THETA  1e12
#define MAX_ROPE_FACTOR 1024

/* GQA divisibility, an even head_dim within ENG_MAX_HEAD_DIM, the parameter count.
 * `name` is the file named in messages (the fields are named as config.json does). */
int cfg_check_consistency(const struct eng_config *c, const char *name);

#endif
