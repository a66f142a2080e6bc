/* backend.h — the table of functions every compute backend (engine/cpu, engine/cuda)
 * implements; engine.c checks arguments and delegates to it. Internal to engine/. */
#ifndef QWENCHAT_ENGINE_BACKEND_H
#define QWENCHAT_ENGINE_BACKEND_H

#include <stdarg.h>

#include "engine/engine.h"

/* What a backend gets from engine.c: arguments are already validated (ctx >= 1,
 * threads >= 0), so a backend only has to fail on resources (memory, device). */
struct eng_backend_opts {
	int threads; /* CPU threads; 0 = all cores */
	/* KV capacity in tokens (resolved, >= 1). A backend whose memory cannot hold it
	 * may lower it (saying so through notice); engine.c reads it back. */
	int ctx;
	bool kv_f32; /* fp32 KV cache instead of bf16 */
	/* The knobs of eng_options (engine.h), as given: cpu_isa checked by the CPU
	 * backend, the others ignored by the backends they do not concern. */
	const char *cpu_isa;
	bool bf16_prefill, exact_decode, cuda_no_graph, cuda_no_sampling;
	void (*notice)(const char *msg);                         /* may be NULL */
	void (*progress)(size_t done_bytes, size_t total_bytes); /* weight upload; may be NULL */
};

/* Statistics a backend knows; engine.c adds the token counts and timings. */
struct eng_backend_stats {
	size_t weight_bytes, kv_bytes_allocated, kv_bytes_per_token, scratch_bytes, graph_bytes;
	size_t device_free, device_total;
	const char *prefill_inputs; /* as struct eng_stats says; NULL: not told */
	/* The KV cache's pages touched so far, when kv_lazy (the CPU's); else all that is
	 * allocated is resident (device memory). */
	bool kv_lazy;
	size_t kv_bytes_resident;
};

/* One backend. Every function receives the state returned by init. The table is
 * static const data; keep it small: the CUDA backend implements the same one. */
struct eng_backend_ops {
	const char *name; /* "cpu", "cuda" */
	/* NULL on error (err_set). The model outlives the state. */
	void *(*init)(struct eng_model *m, struct eng_backend_opts *o);
	void (*free)(void *st);
	/* ids[0..n) at positions pos..pos+n-1 (all checked: ids < vocab, pos+n <= ctx,
	 * pos <= cached). Writes K/V for those positions; logits as in eng_forward.
	 * 0, -1 (err_set) or ENG_CANCELLED. The backend may split n into chunks itself. */
	int (*forward)(void *st, const int32_t *ids, int n, int pos, float *logits, bool all);
	/* Attention capture (eng_set_capture / eng_attention); the row belongs to the
	 * last query of the last forward; NULL when capture was off. */
	void (*set_capture)(void *st, bool on);
	const float *(*attention)(void *st, int layer, int head, int *len);
	void (*stats)(void *st, struct eng_backend_stats *out);
	/* Optional (NULL on the CPU). sample_ok: whether forward_sample handles these
	 * settings; forward_sample: forward of one token (checked as for forward) and
	 * the next id picked on the device (eng_forward_sample). */
	bool (*sample_ok)(void *st, const struct eng_sampling *sp);
	int (*forward_sample)(void *st, int32_t id, int pos, const struct eng_sampling *sp,
			      int32_t *next, bool *used_uniform);
	/* eng_measure: the backend's limits (engine.c validated the request). */
	int (*measure)(void *st, const struct eng_measure_request *rq, struct eng_peaks *out);
	/* Optional: eng_prefill_min (NULL: 1). */
	int (*prefill_min)(void *st);
	/* Optional (NULL: not computed): eng_hidden, a forward as above that writes the
	 * last position's final-normed hidden state (hidden_size floats) instead of logits. */
	int (*hidden)(void *st, const int32_t *ids, int n, int pos, float *out);
};

/* The CPU backend (engine/cpu/cpu.c). */
const struct eng_backend_ops *eng_cpu_backend(void);
#ifndef __cplusplus
/* eng_set_cancel on the CPU backend's state st. */
void eng_cpu_set_cancel(void *st, const atomic_int *cancel);
#endif

/* The CUDA backend is a shared module, qwenchat-cuda.so (engine/cuda/), that the
 * engine loads at run time (engine/cuda_load.c) only when it is asked for or a driver
 * is present: the program links no CUDA library. The module calls back into the
 * program only through this table, which the program fills; the module checks abi. */
enum { ENG_CUDA_ABI = 5 };

struct eng_host {
	int abi;                                  /* ENG_CUDA_ABI */
	int (*verr)(const char *fmt, va_list ap); /* err_vset */
	const struct eng_config *(*model_config)(const struct eng_model *m);
	const struct eng_weights *(*model_weights)(const struct eng_model *m);
	const char *(*dtype_name)(enum eng_dtype t);
	void (*rope_table)(const struct eng_config *c, int ctx, float *cos_out, float *sin_out);
};

/* The module's exported functions: the backend's table, and the trainer's
 * (train_backend.h), or NULL with the host's error set (a mismatched abi). */
#define ENG_CUDA_ENTRY "qwenchat_cuda_backend"
#define ENG_CUDA_TRAIN_ENTRY "qwenchat_cuda_trainer"
typedef const struct eng_backend_ops *(*eng_cuda_entry_fn)(const struct eng_host *host);
struct train_ops;
typedef const struct train_ops *(*eng_cuda_train_entry_fn)(const struct eng_host *host);

/* Loads the module and asks it for the backend (engine/cuda_load.c). NULL with
 * err_set saying what is missing; *no_driver tells whether that is the driver itself
 * (then `auto` picks the CPU without a word). */
const struct eng_backend_ops *eng_cuda_load(const char *module, bool *no_driver);
/* The same for the trainer's table. */
const struct train_ops *eng_cuda_trainer(const char *module, bool *no_driver);

#endif
