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

/* The type most of the weights have (what `info` and the status bar show). */
enum eng_dtype eng_model_main_type(const struct eng_model *m);

/* Opens a GGUF model into m (allocated and zeroed by the caller). 0 or -1 (err_set). */
int gguf_model_open(struct eng_model *m, const char *path);
/* The config and every weight of m->gg[0..ngg) (already parsed): what gguf_model_open
 * does once the files are open (the fuzz target's entry). 0 or -1 (err_set). */
int gguf_model_bind(struct eng_model *m);

/* Reads the config from a GGUF's qwen3.* keys (the vocabulary size from
 * token_embd.weight, tied when output.weight is absent), validated as config.json
 * is. 0 or -1 (err_set naming the file and key). */
int gguf_config(const struct eng_gguf *g, const struct gguf_tensor *embed, bool tied,
		struct eng_config *cfg);

#endif
