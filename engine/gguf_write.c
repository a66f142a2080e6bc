/* gguf_write.c — writes a model as a GGUF v3 file in llama.cpp's layout (qwenchat
 * quantize): the key/values, the tensor infos, then each tensor converted to the type
 * llama.cpp's llama-quantize would give it in the chosen mix, streamed row by row. */
#include "engine/rope.h"
#include "engine/ftype.h"
#include "engine/model.h"
#include "engine/quant.h"
#include "src/base/err.h"
#include "src/base/strbuf.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define ALIGNMENT 32
#define MAX_OUT   (64u << 20) /* bytes converted before they are written */

/* ---- key/values ---- */

struct eng_gguf_out {
	struct strbuf kv; /* the encoded key/values */
	uint64_t n;
	char **keys; /* to refuse a key given twice */
};

struct eng_gguf_out *eng_gguf_out_new(void)
{
	struct eng_gguf_out *o = calloc(1, sizeof *o);
	if (!o)
		err_set("out of memory");
	return o;
}

void eng_gguf_out_free(struct eng_gguf_out *o)
{
	if (!o)
		return;
	for (uint64_t i = 0; i < o->n; i++)
		free(o->keys[i]);
	free(o->keys);
	free(o->kv.p);
	free(o);
}

static void put_u32(struct strbuf *b, uint32_t v)
{
	char le[4] = {(char)v, (char)(v >> 8), (char)(v >> 16), (char)(v >> 24)};
	sb_put(b, le, 4);
}

static void put_u64(struct strbuf *b, uint64_t v)
{
	put_u32(b, (uint32_t)v);
	put_u32(b, (uint32_t)(v >> 32));
}

static void put_str(struct strbuf *b, const char *s, size_t n)
{
	put_u64(b, n);
	sb_put(b, s, n);
}

/* Starts a key/value: the key and the value type. */
static int begin(struct eng_gguf_out *o, const char *key, enum eng_gguf_type t)
{
	for (uint64_t i = 0; i < o->n; i++)
		if (!strcmp(o->keys[i], key))
			return err_set("GGUF writer: key %s given twice", key);
	char **k = realloc(o->keys, (size_t)(o->n + 1) * sizeof *k);
	if (!k || !(k[o->n] = strdup(key))) {
		if (k)
			o->keys = k;
		return err_set("out of memory");
	}
	o->keys = k;
	o->n++;
	put_str(&o->kv, key, strlen(key));
	put_u32(&o->kv, t);
	return 0;
}

static int done(struct eng_gguf_out *o)
{
	return o->kv.oom ? err_set("out of memory") : 0;
}

int eng_gguf_out_str(struct eng_gguf_out *o, const char *key, const char *s, size_t len)
{
	if (begin(o, key, ENG_GGUF_STRING))
		return -1;
	put_str(&o->kv, s, len);
	return done(o);
}

int eng_gguf_out_u32(struct eng_gguf_out *o, const char *key, uint32_t v)
{
	if (begin(o, key, ENG_GGUF_U32))
		return -1;
	put_u32(&o->kv, v);
	return done(o);
}

int eng_gguf_out_i32(struct eng_gguf_out *o, const char *key, int32_t v)
{
	if (begin(o, key, ENG_GGUF_I32))
		return -1;
	put_u32(&o->kv, (uint32_t)v);
	return done(o);
}

int eng_gguf_out_f32(struct eng_gguf_out *o, const char *key, float v)
{
	uint32_t u;
	memcpy(&u, &v, 4);
	if (begin(o, key, ENG_GGUF_F32))
		return -1;
	put_u32(&o->kv, u);
	return done(o);
}

int eng_gguf_out_bool(struct eng_gguf_out *o, const char *key, bool v)
{
	if (begin(o, key, ENG_GGUF_BOOL))
		return -1;
	sb_put(&o->kv, v ? "\1" : "\0", 1);
	return done(o);
}

int eng_gguf_out_strs(struct eng_gguf_out *o, const char *key, const char *const *s,
		      const size_t *len, size_t n)
{
	if (begin(o, key, ENG_GGUF_ARRAY))
		return -1;
	put_u32(&o->kv, ENG_GGUF_STRING);
	put_u64(&o->kv, n);
	for (size_t i = 0; i < n; i++)
		put_str(&o->kv, s[i], len[i]);
	return done(o);
}

int eng_gguf_out_i32s(struct eng_gguf_out *o, const char *key, const int32_t *v, size_t n)
{
	if (begin(o, key, ENG_GGUF_ARRAY))
		return -1;
	put_u32(&o->kv, ENG_GGUF_I32);
	put_u64(&o->kv, n);
	for (size_t i = 0; i < n; i++)
		put_u32(&o->kv, (uint32_t)v[i]);
	return done(o);
}

static uint64_t le64(const uint8_t *p)
{
	uint64_t v = 0;
	for (int i = 7; i >= 0; i--)
		v = v << 8 | p[i];
	return v;
}

/* One key/value of a parsed file, as it is there. */
static int copy_kv(struct eng_gguf_out *o, const struct gguf_kv *kv)
{
	if (begin(o, kv->key, kv->type))
		return -1;
	if (kv->type == ENG_GGUF_ARRAY) {
		put_u32(&o->kv, kv->elem);
		put_u64(&o->kv, kv->n);
		for (uint64_t j = 0; kv->elem == ENG_GGUF_STRING && j < kv->n; j++)
			put_str(&o->kv, (const char *)kv->strs[j] + 8, le64(kv->strs[j]));
		if (kv->elem != ENG_GGUF_STRING)
			sb_put(&o->kv, (const char *)kv->data, kv->n * gguf_scalar_size(kv->elem));
	} else if (kv->type == ENG_GGUF_STRING) {
		put_str(&o->kv, (const char *)kv->data + 8, le64(kv->data));
	} else {
		sb_put(&o->kv, (const char *)kv->data, gguf_scalar_size(kv->type));
	}
	return done(o);
}

int eng_gguf_out_copy(struct eng_gguf_out *o, const struct eng_gguf *g, const char *prefix,
		      const char *const *skip)
{
	for (int64_t i = 0; i < g->nkv; i++) {
		const struct gguf_kv *kv = &g->kv[i];
		bool skipped = strncmp(kv->key, prefix, strlen(prefix)) != 0;
		for (size_t s = 0; skip && skip[s] && !skipped; s++)
			skipped = !strcmp(kv->key, skip[s]);
		if (!skipped && copy_kv(o, kv))
			return -1;
	}
	return 0;
}

static bool has_key(const struct eng_gguf_out *o, const char *key)
{
	for (uint64_t i = 0; o && i < o->n; i++)
		if (!strcmp(o->keys[i], key))
			return true;
	return false;
}

/* The source file's other keys, as llama-quantize copies every one (a tokenizer's
 * qwenchat.tokenizer.normalizer among them: without it the copy would tokenize
 * otherwise): those neither written from the config (o) nor given (extra), less the
 * source's own framing, its alignment and the split.* keys of one file of several. */
static int other_keys(struct eng_gguf_out *o, const struct eng_gguf_out *extra,
		      const struct eng_gguf *g)
{
	for (int64_t i = 0; g && i < g->nkv; i++) {
		const char *k = g->kv[i].key;
		if (!has_key(o, k) && !has_key(extra, k) && strcmp(k, "general.alignment") &&
		    strncmp(k, "split.", 6) && copy_kv(o, &g->kv[i]))
			return -1;
	}
	return 0;
}

/* general.* and qwen3.* from the config, as convert_hf_to_gguf.py writes them. */
static int model_keys(struct eng_gguf_out *o, const struct eng_config *c, enum eng_ftype f)
{
	const char *a = "qwen3";
	char k[96];
#define U32(name, v) (snprintf(k, sizeof k, "%s." name, a), eng_gguf_out_u32(o, k, (uint32_t)(v)))
#define F32(name, v) (snprintf(k, sizeof k, "%s." name, a), eng_gguf_out_f32(o, k, (float)(v)))
	if (eng_gguf_out_str(o, "general.architecture", a, strlen(a)) ||
	    eng_gguf_out_str(o, "general.type", "model", 5) || U32("block_count", c->num_layers) ||
	    U32("context_length", c->max_position_embeddings) ||
	    U32("embedding_length", c->hidden_size) ||
	    U32("feed_forward_length", c->intermediate_size) ||
	    U32("attention.head_count", c->num_heads) ||
	    U32("attention.head_count_kv", c->num_kv_heads) ||
	    F32("rope.freq_base", c->rope_theta) ||
	    F32("attention.layer_norm_rms_epsilon", c->rms_norm_eps) ||
	    U32("attention.key_length", c->head_dim) || U32("attention.value_length", c->head_dim))
		return -1;
	bool yarn = !strcmp(c->rope_type, "yarn");
	if (yarn || !strcmp(c->rope_type, "linear")) {
		snprintf(k, sizeof k, "%s.rope.scaling.type", a);
		if (eng_gguf_out_str(o, k, c->rope_type, strlen(c->rope_type)) ||
		    F32("rope.scaling.factor", c->rope_factor))
			return -1;
	}
	/* The factor on cos and sin is written where it is not the paper's 0.1 ln(factor)
	 * + 1 (a reader's default): given, or DeepSeek's ratio of the two mscales. */
	float inv_freq[ENG_MAX_HEAD_DIM / 2], attn_factor;
	rope_inv_freq(c, inv_freq, &attn_factor);
	bool own_factor = c->rope_attention_factor > 0 ||
			  (c->rope_mscale != 0 && c->rope_mscale_all_dim != 0);
	if (yarn && ((c->rope_original_max_position &&
		      U32("rope.scaling.original_context_length", c->rope_original_max_position)) ||
		     (own_factor && F32("rope.scaling.yarn_attn_factor", attn_factor)) ||
		     F32("rope.scaling.yarn_beta_fast", c->rope_beta_fast) ||
		     F32("rope.scaling.yarn_beta_slow", c->rope_beta_slow)))
		return -1;
#undef U32
#undef F32
	return eng_gguf_out_u32(o, "general.quantization_version", 2) ||
			       eng_gguf_out_u32(o, "general.file_type",
						(uint32_t)eng_ftype_file_type(f))
		       ? -1
		       : 0;
}

/* ---- the tensors ---- */

struct planned {
	char name[GGUF_MAX_NAME];
	const struct eng_tensor *src;
	enum eng_dtype type;
	int64_t ne0, ne1; /* row length, rows */
	size_t nbytes, offset;
};

static int write_all(int fd, const void *p, size_t n, const char *name)
{
	const char *c = p;
	while (n > 0) {
		ssize_t w = write(fd, c, n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return err_set("%s: write failed: %s", name,
				       w < 0 ? strerror(errno) : "nothing written");
		c += w;
		n -= (size_t)w;
	}
	return 0;
}

static int add_plan(struct planned *p, int *n, const struct eng_config *c, enum eng_ftype f,
		    const char *name, enum eng_tensor_role role, int layer,
		    const struct eng_tensor *src)
{
	struct planned *e = &p[(*n)++];
	snprintf(e->name, sizeof e->name, "%s", name);
	e->src = src;
	e->ne0 = src->ndim == 2 ? src->shape[1] : src->shape[0];
	e->ne1 = src->ndim == 2 ? src->shape[0] : 1;
	e->type = eng_quant_type(c, f, role, layer, e->ne0);
	e->nbytes = eng_row_bytes(e->type, e->ne0) * (size_t)e->ne1;
	if (!e->nbytes) /* llama-quantize stops there too */
		return err_set("tensor %s: rows of %lld weights are not whole %s blocks, and the "
			       "%s mix has no other type for it",
			       name, (long long)e->ne0, eng_dtype_name(e->type), eng_ftype_name(f));
	return 0;
}

/* Every tensor in llama.cpp's names, in the order the layers are read. */
static int plan(const struct eng_model *m, enum eng_ftype f, struct planned *p, int *n)
{
	const struct eng_config *c = &m->cfg;
	const struct eng_weights *w = &m->w;
	static const struct {
		const char *part;
		enum eng_tensor_role role;
		size_t off;
	} parts[] = {
		{"attn_norm", ENG_ROLE_NORM, offsetof(struct eng_layer, input_norm)},
		{"attn_q", ENG_ROLE_ATTN_Q, offsetof(struct eng_layer, wq)},
		{"attn_k", ENG_ROLE_ATTN_K, offsetof(struct eng_layer, wk)},
		{"attn_v", ENG_ROLE_ATTN_V, offsetof(struct eng_layer, wv)},
		{"attn_output", ENG_ROLE_ATTN_O, offsetof(struct eng_layer, wo)},
		{"attn_q_norm", ENG_ROLE_NORM, offsetof(struct eng_layer, q_norm)},
		{"attn_k_norm", ENG_ROLE_NORM, offsetof(struct eng_layer, k_norm)},
		{"ffn_norm", ENG_ROLE_NORM, offsetof(struct eng_layer, post_norm)},
		{"ffn_gate", ENG_ROLE_FFN_GATE, offsetof(struct eng_layer, w_gate)},
		{"ffn_up", ENG_ROLE_FFN_UP, offsetof(struct eng_layer, w_up)},
		{"ffn_down", ENG_ROLE_FFN_DOWN, offsetof(struct eng_layer, w_down)},
	};
	char name[GGUF_MAX_NAME + 16];
	*n = 0;
	if (add_plan(p, n, c, f, "token_embd.weight", ENG_ROLE_EMBED, 0, &w->embed))
		return -1;
	for (int l = 0; l < c->num_layers; l++)
		for (size_t i = 0; i < sizeof parts / sizeof parts[0]; i++) {
			snprintf(name, sizeof name, "blk.%d.%s.weight", l, parts[i].part);
			const struct eng_tensor *t =
				(const struct eng_tensor *)((const char *)&w->layers[l] +
							    parts[i].off);
			if (add_plan(p, n, c, f, name, parts[i].role, l, t))
				return -1;
		}
	if (add_plan(p, n, c, f, "output_norm.weight", ENG_ROLE_NORM, 0, &w->final_norm) ||
	    (!c->tie_word_embeddings &&
	     add_plan(p, n, c, f, "output.weight", ENG_ROLE_OUTPUT, 0, &w->lm_head)))
		return -1;
	return 0;
}

/* The header: magic, version, counts, key/values (the model's, then the caller's, as
 * the converter orders them), tensor infos, padding. */
static int write_header(int fd, const char *name, const struct eng_gguf_out *o,
			const struct eng_gguf_out *extra, struct planned *p, int n)
{
	struct strbuf b = {0};
	size_t off = 0;
	sb_put(&b, "GGUF", 4);
	put_u32(&b, 3);
	put_u64(&b, (uint64_t)n);
	put_u64(&b, o->n + (extra ? extra->n : 0));
	sb_put(&b, o->kv.p ? o->kv.p : "", o->kv.n);
	if (extra)
		sb_put(&b, extra->kv.p ? extra->kv.p : "", extra->kv.n);
	for (int i = 0; i < n; i++) {
		put_str(&b, p[i].name, strlen(p[i].name));
		put_u32(&b, (uint32_t)p[i].src->ndim);
		put_u64(&b, (uint64_t)p[i].ne0);
		if (p[i].src->ndim == 2)
			put_u64(&b, (uint64_t)p[i].ne1);
		static const int ggml[] = {
			[ENG_BF16] = 30, [ENG_F16] = 1,     [ENG_F32] = 0,    [ENG_Q8_0] = 8,
			[ENG_Q4_0] = 2,  [ENG_Q5_0] = 6,    [ENG_Q4_K] = 12,  [ENG_Q5_K] = 13,
			[ENG_Q6_K] = 14, [ENG_Q4_1] = 3,    [ENG_Q5_1] = 7,   [ENG_Q2_K] = 10,
			[ENG_Q3_K] = 11, [ENG_IQ4_NL] = 20, [ENG_IQ4_XS] = 23};
		put_u32(&b, (uint32_t)ggml[p[i].type]);
		p[i].offset = off;
		put_u64(&b, off);
		off += (p[i].nbytes + ALIGNMENT - 1) / ALIGNMENT * ALIGNMENT;
	}
	static const char zeros[ALIGNMENT];
	sb_put(&b, zeros, (ALIGNMENT - b.n % ALIGNMENT) % ALIGNMENT);
	int rc = b.oom ? err_set("out of memory") : write_all(fd, b.p, b.n, name);
	free(b.p);
	return rc;
}

/* One tensor: rows converted in batches of up to MAX_OUT bytes by every CPU (the
 * K-quants' reference quantizers search each block's scales, too slow on one thread
 * for a large model), then its padding. */
static int write_tensor(int fd, const char *name, const struct planned *t, uint8_t *buf,
			const volatile int *cancel)
{
	if (t->ne0 % eng_dtype_block(t->type))
		return err_set("tensor %s: rows of %lld weights are not whole %s blocks", t->name,
			       (long long)t->ne0, eng_dtype_name(t->type));
	size_t rb = t->nbytes / (size_t)t->ne1, per = MAX_OUT / rb ? MAX_OUT / rb : 1;
	for (int64_t r = 0; r < t->ne1;) {
		int64_t n = t->ne1 - r < (int64_t)per ? t->ne1 - r : (int64_t)per;
		if (quant_convert_rows(t->src, t->ne0, r, n, t->type, buf, 0))
			return err_prefix("tensor %s", t->name);
		r += n;
		if (cancel && *cancel)
			return err_set("interrupted");
		if (write_all(fd, buf, (size_t)n * rb, name))
			return -1;
	}
	static const char zeros[ALIGNMENT];
	return write_all(fd, zeros, (ALIGNMENT - t->nbytes % ALIGNMENT) % ALIGNMENT, name);
}

int eng_model_write_gguf(const struct eng_model *m, enum eng_ftype f,
			 const struct eng_gguf_out *extra, int fd, const char *name,
			 void (*progress)(size_t done, size_t total), const volatile int *cancel)
{
	const struct eng_config *c = &m->cfg;
	int n = 0, rc = -1;
	size_t total = 0, done = 0, widest = 1;
	struct planned *p = calloc((size_t)c->num_layers * 11 + 3, sizeof *p);
	struct eng_gguf_out *o = eng_gguf_out_new();
	uint8_t *buf = NULL;
	if (!p || !o) {
		err_set("out of memory");
		goto out;
	}
	if (plan(m, f, p, &n)) { /* the file it was to be */
		err_prefix("%s", name);
		goto out;
	}
	if (model_keys(o, c, f) || other_keys(o, extra, eng_model_gguf(m)))
		goto out;
	for (int i = 0; i < n; i++) {
		total += p[i].nbytes;
		widest = p[i].ne0 > (int64_t)widest ? (size_t)p[i].ne0 : widest;
	}
	buf = malloc(MAX_OUT + widest * 4);
	if (!buf || o->kv.oom) {
		err_set("out of memory");
		goto out;
	}
	if (write_header(fd, name, o, extra, p, n))
		goto out;
	for (int i = 0; i < n; i++) {
		if (write_tensor(fd, name, &p[i], buf, cancel))
			goto out;
		done += p[i].nbytes;
		if (progress)
			progress(done, total);
	}
	rc = 0;
out:
	free(buf);
	eng_gguf_out_free(o);
	free(p);
	return rc;
}
