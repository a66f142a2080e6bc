/* model.h — struct eng_model, shared by the safetensors loader (model.c) and the GGUF
 * loader (model_gguf.c). Internal to the engine. */
#ifndef QWENCHAT_MODEL_H
#define QWENCHAT_MODEL_H

#include "engine/engine.h"
#include "engine/gguf.h"
#include "engine/safetensors.h"

#include <jansson.h>
#include <stdbool.h>

struct eng_model {
	struct eng_config cfg;
	struct eng_weights w;
	/* safetensors */
	struct st_file **files; /* nfiles mapped safetensors files */
	bool **used;            /* per file, per tensor: bound to a weight */
	int nfiles;
	json_t *weight_map; /* sharded: tensor name -> file name; else NULL */
	/* GGUF */
	struct eng_gguf **gg; /* ngg mapped GGUF files: the splits in order */
	int ngg;
	size_t weight_bytes, file_bytes;
	/* --quant: the quantized tensors (an anonymous mapping), or NULL */
	void *quant_buf;
	size_t quant_size;
};

/* A layer's weights, in the order the loaders bind them. */
enum model_part {
	MODEL_INPUT_NORM,
	MODEL_WQ,
	MODEL_WK,
	MODEL_WV,
	MODEL_WO,
	MODEL_Q_NORM,
	MODEL_K_NORM,
	MODEL_POST_NORM,
	MODEL_GATE,
	MODEL_UP,
	MODEL_DOWN,
	MODEL_PARTS
};

/* What one file format calls a Qwen3's weights: a layer's weight l is named
 * "<layer><l>.<part>.weight". */
struct model_names {
	const char *embed, *final_norm, *lm_head;
	const char *layer;
	const char *part[MODEL_PARTS];
};

/* Binds one weight of the files, `name`, into dst: a vector (ndim 1) of rows, or a
 * matrix (rows, cols) in PyTorch's order, its shape and type checked. 0 or -1
 * (err_set naming the file). */
typedef int (*model_bind_fn)(void *ctx, const char *name, int ndim, int64_t rows, int64_t cols,
			     struct eng_tensor *dst);

/* Allocates m->w.layers and binds every weight m->cfg implies through bind, named as
 * `names` says: the embedding, each layer, the final norm, then the lm_head (the
 * embedding itself when tied). What the files hold besides is the loader's to check.
 * 0 or -1 (err_set). */
int model_bind_all(struct eng_model *m, const struct model_names *names, model_bind_fn bind,
		   void *ctx);

/* The type most of the weights have (what `info` and the status bar show). */
enum eng_dtype eng_model_main_type(const struct eng_model *m);

/* Opens a GGUF model into m (allocated and zeroed by the caller). 0 or -1 (err_set). */
int gguf_model_open(struct eng_model *m, const char *path);
/* The config and every weight of m->gg[0..ngg) (already parsed): what gguf_model_open
 * does once the files are open (the fuzz target's entry). 0 or -1 (err_set). */
int gguf_model_bind(struct eng_model *m);

#endif
