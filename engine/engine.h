/* engine.h — the Qwen3 model: config, weights, KV cache and the forward pass.
 * The engine knows nothing about text: it maps token ids to logits. */
#ifndef QWENCHAT_ENGINE_H
#define QWENCHAT_ENGINE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#ifndef __cplusplus /* the CUDA module (C++) includes this header too */
#include <stdatomic.h>
#endif

/* ---- Configuration (config.json) ------------------------------------------ */

/* Element types of weights: the float types of safetensors files, and ggml's
 * block-quantized types of GGUF files (a block of 32 or 256 weights stored with its
 * scales, as ggml-common.h lays them out). */
enum eng_dtype {
	ENG_BF16,
	ENG_F16,
	ENG_F32,
	ENG_Q8_0,   /* 32 weights: f16 scale, 32 int8 */
	ENG_Q4_0,   /* 32 weights: f16 scale, 16 bytes of 4-bit values */
	ENG_Q5_0,   /* 32 weights: f16 scale, 4 bytes of high bits, 16 bytes of low nibbles */
	ENG_Q4_K,   /* 256 weights: super-block of 8 x 32, 6-bit scales and mins */
	ENG_Q5_K,   /* 256 weights: as Q4_K plus one high bit per weight */
	ENG_Q6_K,   /* 256 weights: 16 x 16, 8-bit scales, 6-bit values */
	ENG_Q4_1,   /* 32 weights: f16 scale and min, 16 bytes of 4-bit values */
	ENG_Q5_1,   /* 32 weights: as Q4_1 plus 4 bytes of high bits */
	ENG_Q2_K,   /* 256 weights: 16 x 16, 4-bit scales and mins, 2-bit values */
	ENG_Q3_K,   /* 256 weights: 16 x 16, 6-bit scales, 3-bit values (a bit apart) */
	ENG_IQ4_NL, /* 32 weights: f16 scale, 16 bytes of 4-bit indices into a table */
	ENG_IQ4_XS, /* 256 weights: 8 x 32, 6-bit scales, indices as IQ4_NL's */
	ENG_DTYPE_COUNT
};

/* Size in bytes of one element of a float dtype (bf16, f16, f32); for a quantized
 * type, the bytes of one block (eng_dtype_block_bytes). */
size_t eng_dtype_size(enum eng_dtype t);
/* Weights per block: 1 for the float types, 32 or 256 for the quantized ones. */
int eng_dtype_block(enum eng_dtype t);
/* Bytes of one block (of one element for the float types). */
size_t eng_dtype_block_bytes(enum eng_dtype t);
/* Bytes of a row of n weights (n a multiple of the block), 0 when it is not. */
size_t eng_row_bytes(enum eng_dtype t, int64_t n);
/* True for the block-quantized types. */
bool eng_dtype_quantized(enum eng_dtype t);
/* "BF16", "F16", "F32", "Q8_0", "Q4_0", "Q5_0", "Q4_K", "Q5_K", "Q6_K", "Q4_1", "Q5_1",
 * "Q2_K", "Q3_K", "IQ4_NL", "IQ4_XS". */
const char *eng_dtype_name(enum eng_dtype t);

/* The largest head_dim a config may give (rope.h callers size arrays by it). */
#define ENG_MAX_HEAD_DIM 1024

struct eng_config {
	int vocab_size;        /* rows of the embedding and lm_head */
	int hidden_size;       /* model width (dim) */
	int intermediate_size; /* MLP width */
	int num_layers;        /* num_hidden_layers */
	int num_heads;         /* query heads */
	int num_kv_heads;      /* key/value heads (GQA: num_heads % num_kv_heads == 0) */
	int head_dim;          /* per head; num_heads*head_dim may differ from hidden_size */
	double rms_norm_eps;
	double rope_theta;
	/* rope_scaling; rope_type "default" when absent, else "linear" or "yarn" (others
	 * refused) */
	char rope_type[16];
	double rope_factor;             /* linear or YaRN scale factor (1 when absent) */
	int rope_original_max_position; /* YaRN original_max_position_embeddings; 0 when absent */
	double rope_attention_factor;   /* YaRN cos/sin scale; 0: computed from the factor */
	double rope_beta_fast, rope_beta_slow; /* YaRN ramp, in rotations (32 and 1 when absent) */
	double rope_mscale,
		rope_mscale_all_dim; /* DeepSeek-style attention factor; 0 when absent */
	int max_position_embeddings;
	bool tie_word_embeddings;       /* lm_head shares the embedding matrix */
	enum eng_dtype dtype;           /* torch_dtype */
	int bos_token_id, eos_token_id; /* -1 when absent */
};

/* Parses and validates config.json text (`name` is used in messages). Refuses
 * other architectures and absurd or inconsistent values before anything is
 * allocated. 0 or -1 (err_set names the file and the field). */
int eng_config_parse(const char *json, size_t len, const char *name, struct eng_config *cfg);
/* Reads DIR/config.json and parses it. */
int eng_config_load(const char *dir, struct eng_config *cfg);

/* Parameter counts by component, from the config alone (no files needed). */
struct eng_param_counts {
	int64_t embedding;                      /* vocab x hidden */
	int64_t attn_q, attn_k, attn_v, attn_o; /* all layers */
	int64_t qk_norm;                        /* q_norm + k_norm, all layers */
	int64_t layer_norms;                    /* input + post-attention norms, all layers */
	int64_t mlp_gate, mlp_up, mlp_down;     /* all layers */
	int64_t final_norm;
	int64_t lm_head;       /* 0 when tied */
	int64_t total;         /* unique parameters */
	int64_t non_embedding; /* total minus embedding and (untied) lm_head */
};
void eng_count_params(const struct eng_config *cfg, struct eng_param_counts *out);

/* The longest context the model's positions are made for: with YaRN, its factor times
 * original_max_position_embeddings (else max_position_embeddings), as vLLM takes it
 * (Qwen3's recipe, 4 x 32768, gives 131072 where config.json keeps 40960); otherwise,
 * and never less than, max_position_embeddings. At most ENG_MAX_CONTEXT. */
enum { ENG_MAX_CONTEXT = 1 << 24 };
int eng_max_context(const struct eng_config *cfg);
/* What eng_max_context comes from, for messages: "max_position_embeddings" or "YaRN's
 * factor x original_max_position_embeddings". */
const char *eng_max_context_source(const struct eng_config *cfg);
/* 0 when a KV cache of ctx positions is within eng_max_context; -1 and a message if not. */
int eng_check_context(const struct eng_config *cfg, int ctx);
/* 0 when the n ids (at positions pos..) are all in the vocabulary, as eng_forward
 * checks; -1 and a message naming the first that is not. */
int eng_check_ids(const struct eng_config *cfg, const int32_t *ids, int n, int pos);

/* The factor RoPE multiplies cos and sin by: YaRN's attention factor, 1 otherwise. */
double eng_rope_attention_factor(const struct eng_config *cfg);

/* KV cache bytes per token for elements of `elem_size` bytes (2 for bf16). */
size_t eng_kv_bytes_per_token(const struct eng_config *cfg, size_t elem_size);

/* ---- Weights (safetensors, memory-mapped) ---------------------------------- */

struct eng_tensor {
	const void *data; /* points into the mmap; never copied */
	enum eng_dtype dtype;
	int ndim;
	int64_t shape[2]; /* PyTorch order: (rows, cols) for matrices */
	size_t nbytes;
};

struct eng_layer {
	struct eng_tensor input_norm; /* (hidden) */
	struct eng_tensor wq;         /* (num_heads*head_dim, hidden) */
	struct eng_tensor wk;         /* (num_kv_heads*head_dim, hidden) */
	struct eng_tensor wv;         /* (num_kv_heads*head_dim, hidden) */
	struct eng_tensor wo;         /* (hidden, num_heads*head_dim) */
	struct eng_tensor q_norm;     /* (head_dim) */
	struct eng_tensor k_norm;     /* (head_dim) */
	struct eng_tensor post_norm;  /* (hidden) post_attention_layernorm */
	struct eng_tensor w_gate;     /* (intermediate, hidden) */
	struct eng_tensor w_up;       /* (intermediate, hidden) */
	struct eng_tensor w_down;     /* (hidden, intermediate) */
};

struct eng_weights {
	struct eng_tensor embed;      /* (vocab, hidden) */
	struct eng_layer *layers;     /* num_layers entries */
	struct eng_tensor final_norm; /* (hidden) */
	struct eng_tensor lm_head;    /* (vocab, hidden); equals embed when tied */
};

/* A loaded model: config + mapped safetensors or GGUF files + every tensor bound. */
struct eng_model;

/* Opens a model: a directory (config.json, then model.safetensors or
 * model.safetensors.index.json with its shards) or a GGUF file (the config from its
 * qwen3.* keys; a split model NAME-00001-of-0000N.gguf with all its parts). Every
 * tensor the config implies is bound with its expected shape; missing, unexpected or
 * mis-shaped tensors are errors naming the file and tensor. NULL on error (err_set). */
struct eng_model *eng_model_open(const char *path);
void eng_model_free(struct eng_model *m);
const struct eng_config *eng_model_config(const struct eng_model *m);
const struct eng_weights *eng_model_weights(const struct eng_model *m);
/* Total bytes of all mapped tensor data. */
size_t eng_model_weight_bytes(const struct eng_model *m);
/* The part of it in memory now (mincore, one call per tensor): mapped weights enter
 * as they are first read, and the page cache may evict them under pressure. */
size_t eng_model_resident_bytes(const struct eng_model *m);
/* Bytes of the model's files on disk (all shards or splits). */
size_t eng_model_file_bytes(const struct eng_model *m);
/* Bytes of weights read to decode one token with the tensors as stored (quantized
 * or not): every layer tensor and norm once, the lm_head, one embedding row. */
size_t eng_model_decode_bytes(const struct eng_model *m);

/* ---- GGUF metadata ------------------------------------------------------------
 * A GGUF file carries the tokenizer and chat template as key/values; the engine
 * reads them but knows nothing of text: the app layer hands them to the tokenizer. */

/* True when path is a regular file that starts with the GGUF magic. */
bool eng_is_gguf(const char *path);

/* Value types of GGUF key/values (the numbers are the file's). */
enum eng_gguf_type {
	ENG_GGUF_U8,
	ENG_GGUF_I8,
	ENG_GGUF_U16,
	ENG_GGUF_I16,
	ENG_GGUF_U32,
	ENG_GGUF_I32,
	ENG_GGUF_F32,
	ENG_GGUF_BOOL,
	ENG_GGUF_STRING,
	ENG_GGUF_ARRAY,
	ENG_GGUF_U64,
	ENG_GGUF_I64,
	ENG_GGUF_F64,
};

struct eng_gguf;

/* Maps and checks one GGUF file (header, key/values, tensor infos) without binding
 * any weight: for the commands that need only its tokenizer. NULL on error. */
struct eng_gguf *eng_gguf_open(const char *path);
void eng_gguf_free(struct eng_gguf *g);
/* The GGUF a model was opened from (its first split), or NULL for safetensors. */
const struct eng_gguf *eng_model_gguf(const struct eng_model *m);
/* The file name used in messages. */
const char *eng_gguf_name(const struct eng_gguf *g);

/* Typed reads of one key: 0 when found, 1 when absent (nothing set), -1 when it has
 * another type or its value does not fit (err_set names the file and key). Strings
 * point into the file and are not NUL-terminated. Integers accept every integer type
 * and bool; floats accept f32 and f64. */
int eng_gguf_str(const struct eng_gguf *g, const char *key, const char **s, size_t *len);
int eng_gguf_int(const struct eng_gguf *g, const char *key, int64_t *v);
int eng_gguf_float(const struct eng_gguf *g, const char *key, double *v);
/* An array: its element type and count (same return values). */
int eng_gguf_array(const struct eng_gguf *g, const char *key, enum eng_gguf_type *elem,
		   uint64_t *n);
/* Element i of an array of strings, or of integers, found with eng_gguf_array (i is
 * checked: NULL / -1 when out of range or of another type). */
const char *eng_gguf_array_str(const struct eng_gguf *g, const char *key, uint64_t i, size_t *len);
int eng_gguf_array_int(const struct eng_gguf *g, const char *key, uint64_t i, int64_t *v);

/* ---- Writing GGUF files (qwenchat quantize) -------------------------------------
 * llama.cpp's quantization mixes: a base type for the matrices, with the choices
 * its llama-quantize makes per tensor for a Qwen3 (src/llama-quant.cpp,
 * llama_tensor_get_type): the lm_head (the embedding when tied) in Q6_K, and for the
 * _M mixes attn_v and ffn_down in Q6_K on some layers; norms stay F32 (ftype.h has
 * their names and the per-tensor choice). */
enum eng_ftype {
	ENG_FTYPE_NONE, /* no mix: the weights as stored (eng_options.quant) */
	ENG_FTYPE_F32,
	ENG_FTYPE_BF16,
	ENG_FTYPE_Q8_0,
	ENG_FTYPE_Q6_K,
	ENG_FTYPE_Q5_K_M,
	ENG_FTYPE_Q4_K_M,
	ENG_FTYPE_Q4_0,
	ENG_FTYPE_Q4_1,
	ENG_FTYPE_Q5_0,
	ENG_FTYPE_Q5_1,
	ENG_FTYPE_Q2_K,
	ENG_FTYPE_Q3_K_S,
	ENG_FTYPE_Q3_K_M,
	ENG_FTYPE_Q3_K_L,
	ENG_FTYPE_Q4_K_S,
	ENG_FTYPE_Q5_K_S,
	ENG_FTYPE_F16,
	ENG_FTYPE_COUNT
};
/* Quantizes the model's float matrices in memory to mix f, each tensor to its
 * eng_quant_type (the norms stay as they are), with `threads` threads (0: every
 * CPU); progress(done, total) in source bytes after each tensor (may be NULL). The
 * source pages are given back as each tensor is done. Refuses a model whose weights
 * are quantized already. 0 or -1 (err_set). */
int eng_model_quantize(struct eng_model *m, enum eng_ftype f, int threads,
		       void (*progress)(size_t done, size_t total));
/* Whether eng_model_quantize has run on m. */
bool eng_model_quantized_in_memory(const struct eng_model *m);

/* Key/values to write besides the model's own (the tokenizer's, from the app). */
struct eng_gguf_out;
struct eng_gguf_out *eng_gguf_out_new(void);
void eng_gguf_out_free(struct eng_gguf_out *o);
/* Each 0 or -1 (err_set: out of memory, a key given twice). */
int eng_gguf_out_str(struct eng_gguf_out *o, const char *key, const char *s, size_t len);
int eng_gguf_out_u32(struct eng_gguf_out *o, const char *key, uint32_t v);
int eng_gguf_out_i32(struct eng_gguf_out *o, const char *key, int32_t v);
int eng_gguf_out_f32(struct eng_gguf_out *o, const char *key, float v);
int eng_gguf_out_bool(struct eng_gguf_out *o, const char *key, bool v);
int eng_gguf_out_strs(struct eng_gguf_out *o, const char *key, const char *const *s,
		      const size_t *len, size_t n);
int eng_gguf_out_i32s(struct eng_gguf_out *o, const char *key, const int32_t *v, size_t n);
/* Every key/value of g whose key starts with prefix, as g holds it, except those
 * named in skip (NULL-terminated; may be NULL): a GGUF's tokenizer and description
 * carried into a new file. */
int eng_gguf_out_copy(struct eng_gguf_out *o, const struct eng_gguf *g, const char *prefix,
		      const char *const *skip);

/* Writes m as a GGUF v3 file to fd: general.* and qwen3.* keys from its config, then
 * extra's, then every tensor converted to its eng_quant_type for f (llama.cpp's
 * names and layout, 32-byte alignment). name is the file for messages (a failed
 * write: "NAME: write failed: No space left on device"). progress (may be NULL) gets
 * the bytes done and the total after each tensor; *cancel (may be NULL) set stops it.
 * 0 or -1 (err_set); the caller owns fd and removes a partial file. */
int eng_model_write_gguf(const struct eng_model *m, enum eng_ftype f,
			 const struct eng_gguf_out *extra, int fd, const char *name,
			 void (*progress)(size_t done, size_t total), const volatile int *cancel);

/* The tensors of a GGUF model by type, for `info`: how many tensors and weights of
 * each eng_dtype. */
struct eng_type_count {
	int tensors;
	int64_t weights;
	size_t bytes;
};
void eng_model_type_counts(const struct eng_model *m, struct eng_type_count out[ENG_DTYPE_COUNT]);

/* ---- Engine: a backend, a KV cache and the forward pass --------------------- */

enum eng_backend_kind { ENG_BACKEND_AUTO, ENG_BACKEND_CPU, ENG_BACKEND_CUDA };

struct eng_options {
	enum eng_backend_kind backend;
	int threads; /* CPU threads; 0 = all cores */
	int ctx;     /* KV cache capacity in tokens; 0: the default (eng_new) */
	bool kv_f32; /* fp32 KV cache (reference tests); default bf16 */
	/* Called now and then while a GPU backend uploads the weights (may be NULL). */
	void (*progress)(size_t done_bytes, size_t total_bytes);
	/* The CPU backend's kernel set, "c", "avx2", "avx512", "avx512bf16" or "amx"
	 * (eng_cpu_isa_check); NULL: the best this CPU runs. */
	const char *cpu_isa;
	/* --quant: quantize the weights to this mix as the engine loads them
	 * (eng_model_quantize); ENG_FTYPE_NONE (zero): keep them as stored. */
	enum eng_ftype quant;
	void (*quant_progress)(size_t done_bytes, size_t total_bytes); /* may be NULL */
	/* Prefill matrix products with bf16 activations where the CPU has AVX-512 BF16
	 * (faster, ~1e-3 relative error); other backends ignore it. */
	bool bf16_prefill;
	/* With bf16_prefill false: a few tokens' products (decode) with fp32 activations
	 * too, the block-quantized weights dequantized where they would meet int8
	 * activations: every logit the exact reference's (logits, perplexity), at several
	 * times the decode time. */
	bool exact_decode;
	/* The CUDA backend module; NULL: qwenchat-cuda.so beside the program, then in the
	 * install's library folder, and only where an NVIDIA driver is present (a path
	 * given here is loaded without that check). */
	const char *cuda_module;
	bool cuda_no_graph;    /* launch the decode kernels one by one, not as a CUDA graph */
	bool cuda_no_sampling; /* copy the logits back and sample on the host */
};

/* Whether name is a CPU kernel set this CPU runs: 0, or -1 with err_set ("'NAME': not
 * one of c, avx2, avx512, avx512bf16, amx" or "'NAME': this CPU cannot run it"). */
int eng_cpu_isa_check(const char *name);

struct eng;

/* The largest default context (eng_options.ctx = 0): Qwen suggests up to 32K tokens
 * of output for hard reasoning. */
enum { ENG_DEFAULT_CTX_MAX = 32768 };

/* Creates an engine on the requested backend. AUTO picks CUDA when an NVIDIA driver
 * is present and the CUDA module loads and finds a device; else the CPU, silently
 * without a driver, with a one-line notice saying why otherwise (`notice` may be
 * NULL). CUDA alone fails with an error naming what is missing.
 * With opt->quant set, the model's float weights are quantized in memory first
 * (eng_model_quantize; once per model). The default context (opt->ctx 0) is the
 * model's eng_max_context, at most ENG_DEFAULT_CTX_MAX; on the CPU, when its
 * KV cache would take over half the available memory, the most that fits in half, in
 * multiples of 256 tokens, with a notice. A GPU backend whose memory cannot hold the
 * requested context shrinks it and says so through `notice` (eng_ctx tells the
 * result). The model must outlive the engine. NULL on error (err_set). */
struct eng *eng_new(struct eng_model *m, const struct eng_options *opt,
		    void (*notice)(const char *msg));
void eng_free(struct eng *e);

/* "cpu" or "cuda". */
const char *eng_backend_name(const struct eng *e);
/* The backend kind for "auto", "cpu" or "cuda" (anything else: AUTO). */
enum eng_backend_kind eng_backend_kind(const char *name);
/* KV capacity in tokens, and how many positions the cache holds now. */
int eng_ctx(const struct eng *e);
int eng_cached(const struct eng *e);

/* Runs ids[0..n) at positions pos..pos+n-1, writing their K/V into the cache.
 * pos must be <= eng_cached(e); entries from pos on are replaced (an implicit
 * truncate). pos+n must be <= eng_ctx(e); every id must be < vocab_size.
 * logits: vocab_size floats for the last position, or n*vocab_size (row per
 * position) when all_logits. 0, -1 (err_set) or ENG_CANCELLED (eng_set_cancel); on
 * either the cache holds pos tokens. Large n is processed in chunks internally. */
enum { ENG_CANCELLED = 1 };
int eng_forward(struct eng *e, const int32_t *ids, int n, int pos, float *logits, bool all_logits);

/* eng_forward, except that it writes the hidden state of the last position after
 * the final norm (hidden_size floats) instead of logits: what an embedding model
 * (Qwen3-Embedding) pools. -1 (err_set) where the backend does not compute it. */
int eng_hidden(struct eng *e, const int32_t *ids, int n, int pos, float *out);
/* An embedding of ids as sentence-transformers computes Qwen3-Embedding's: the cache
 * replaced by ids from position 0, the last position's hidden state (eng_hidden) cut
 * to its first dims values (Matryoshka: 1..hidden_size) and, where normalize, divided
 * by its L2 norm. 0, -1 (err_set) or ENG_CANCELLED. */
int eng_embed(struct eng *e, const int32_t *ids, int n, int dims, bool normalize, float *out);

#ifndef __cplusplus /* C callers only: the CUDA module does not call it */
/* A forward of several tokens (a prefill) on the CPU looks at *cancel between layers:
 * once it is set, the forward stops there and returns ENG_CANCELLED, so that a stop
 * during a long prompt on a slow machine waits for one layer, not for a whole chunk.
 * A forward of one token runs whole, as every forward on CUDA does (a chunk takes
 * milliseconds there). cancel may be NULL (the default: forwards run whole). */
void eng_set_cancel(struct eng *e, const atomic_int *cancel);
#endif

/* Forgets cache entries from position n on (n <= eng_cached). */
int eng_truncate(struct eng *e, int n);

/* The fewest tokens one eng_forward computes the way a long prefill does: below it,
 * the backend takes its decode path (other kernels, activations rounded otherwise),
 * whose logits and K/V differ in the last bits from a prefill's of the same tokens.
 * From it on, the CPU backend's results for a position do not depend on how the
 * tokens before it were split into forwards, so a prompt prefilled after a cached
 * prefix in forwards of at least this many gives a cold prefill's logits, bit for
 * bit. 1 where the backend does not say (CUDA: no such promise). */
int eng_prefill_min(const struct eng *e);

/* Attention capture for the UI: while on, each forward records the softmax row of
 * the last query for every layer and head. */
void eng_set_capture(struct eng *e, bool on);
/* The captured row (length *len == keys attended) or NULL when none. */
const float *eng_attention(const struct eng *e, int layer, int head, int *len);

struct eng_stats {
	size_t weight_bytes;       /* weights resident for this backend */
	size_t kv_bytes_allocated; /* whole KV cache */
	size_t kv_bytes_used;      /* eng_cached() tokens */
	/* What the KV cache holds in memory now: the CPU backend's pages are touched as
	 * positions first arrive (and stay when the cache is cut back); a GPU's cache is
	 * allocated whole. */
	size_t kv_bytes_resident;
	size_t scratch_bytes;             /* activations, logits, workspaces */
	size_t graph_bytes;               /* instantiated CUDA graphs (0 on the CPU backend) */
	size_t device_free, device_total; /* GPU memory (0 on the CPU backend) */
	double prefill_seconds;           /* time in forwards of n > 1, cumulative */
	double decode_seconds;            /* time in forwards of n == 1, cumulative */
	int64_t prefill_tokens, decode_tokens;
	/* What a prefill's matrix products multiply the weights with: "fp32" (exact),
	 * "bf16" (bf16-rounded activations) or "int8" (quantized weights: the activations
	 * rounded to int8 per 32, as in decode); NULL where the backend does not say. */
	const char *prefill_inputs;
};
void eng_get_stats(const struct eng *e, struct eng_stats *st);

/* ---- Sampling on the backend ------------------------------------------------
 * A GPU backend can pick the next token itself, so that one id crosses PCIe per
 * step instead of a row of logits. The settings mean what src/session/sampler.h's do and
 * act in the same order (penalties, temperature, top-k, top-p, min-p, one draw);
 * the draw is the caller's uniform number, so the random sequence stays the
 * caller's and a seed gives the same tokens on either path. */

enum { ENG_SAMPLE_MAX_K = 64, ENG_SAMPLE_MAX_RECENT = 64 };

struct eng_sampling {
	bool greedy;        /* the most likely id after the penalties */
	double temperature; /* > 0 unless greedy */
	int top_k;          /* 1..ENG_SAMPLE_MAX_K unless greedy */
	double top_p, min_p;
	double presence_penalty, repetition_penalty;
	const int32_t *recent; /* ids the penalties look at, n_recent <= ENG_SAMPLE_MAX_RECENT */
	int n_recent;
	int vocab_limit; /* ids from here on are never picked (padding rows) */
	double uniform;  /* the draw, in [0, 1) */
};

/* True when this engine's backend can sample with these settings (the CUDA
 * backend, greedy or top_k within ENG_SAMPLE_MAX_K); the caller samples from
 * eng_forward's logits otherwise. */
bool eng_can_sample(const struct eng *e, const struct eng_sampling *sp);

/* eng_forward of one token (id at pos), then the next id picked on the backend
 * into *next; *used_uniform says whether the draw decided it (a candidate set of
 * one uses none, as samp_next draws nothing then). The logits stay on the device.
 * 0 or -1 (err_set: bad arguments, a non-finite logit, a device error). */
int eng_forward_sample(struct eng *e, int32_t id, int pos, const struct eng_sampling *sp,
		       int32_t *next, bool *used_uniform);

/* ---- The machine's limits, for the benchmark ------------------------------------ */

/* What to measure: the GEMM shape (a prefill's largest product) for a GPU, the
 * buffer a CPU reads. */
struct eng_measure_request {
	int gemm_m, gemm_n, gemm_k; /* (m x k) . (k x n) */
	size_t read_bytes;          /* CPU: bytes read per pass; 0: 1 GiB */
	int reps;                   /* passes, the best counts; 0: 5 */
};

struct eng_peaks {
	bool device;                /* a GPU's figures (copy, GEMM), else the CPU's (read) */
	double read_gb_s;           /* CPU: memory read bandwidth, the engine's threads */
	double copy_gb_s;           /* GPU: device-to-device copy, (read + written bytes) / s */
	double gemm_tflop_s;        /* GPU: bf16 GEMM through cuBLAS, fp32 accumulation */
	int gemm_m, gemm_n, gemm_k; /* the shape that was timed */
};

/* Measures the backend's limits now (a fraction of a second to a few seconds): the
 * bandwidth decoding is held to and, on a GPU, the GEMM rate prefill is. 0 or -1
 * (err_set). */
int eng_measure(struct eng *e, const struct eng_measure_request *rq, struct eng_peaks *out);

/* Bytes of weights read to decode one token (every matrix once, plus the
 * embedding row), the figure bandwidth ratios are computed against. */
size_t eng_decode_weight_bytes(const struct eng_config *cfg, size_t weight_elem_size);

#endif
