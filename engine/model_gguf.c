/* model_gguf.c — opens a GGUF Qwen3 model (llama.cpp's layout: general.architecture
 * "qwen3", qwen3.* hyperparameters, token_embd / blk.N.* / output tensors), split
 * files joined, and binds every weight into the same struct eng_weights as the
 * safetensors loader. GGUF shapes are ggml's: ne[0] is the row length. */
#include "engine/config_limits.h"
#include "engine/model.h"
#include "src/base/err.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define ARCH      "qwen3"
#define MAX_SPLIT 9999 /* the "-%05d-of-%05d" names hold up to 99999; be less generous */

/* An integer key into [lo, hi]; absent: *out = def, or an error when def < lo. */
static int get_int(const struct eng_gguf *g, const char *key, long long lo, long long hi,
		   long long def, int *out)
{
	int64_t v;
	int r = eng_gguf_int(g, key, &v);
	if (r < 0)
		return -1;
	if (r == 1) {
		if (def < lo)
			return err_set("%s: key %s is missing", g->name, key);
		*out = (int)def;
		return 0;
	}
	if (v < lo || v > hi)
		return err_set("%s: key %s = %lld is out of range [%lld, %lld]", g->name, key,
			       (long long)v, lo, hi);
	*out = (int)v;
	return 0;
}

/* A per-layer size: llama.cpp lets feed_forward_length and the head counts be arrays of
 * one value per layer (as some converters write them). A dense Qwen3 has one value:
 * an array is read when all its layers agree. */
static int get_layer_int(const struct eng_gguf *g, const char *key, long long lo, long long hi,
			 long long def, int layers, int *out)
{
	enum eng_gguf_type elem;
	uint64_t n;
	const struct gguf_kv *kv = gguf_find(g, key);
	if (!kv || kv->type != ENG_GGUF_ARRAY)
		return get_int(g, key, lo, hi, def, out);
	if (eng_gguf_array(g, key, &elem, &n))
		return -1;
	if (n != (uint64_t)layers)
		return err_set("%s: key %s is an array of %llu values, not one per layer (%d)",
			       g->name, key, (unsigned long long)n, layers);
	int64_t first = 0, v;
	for (uint64_t i = 0; i < n; i++) {
		if (eng_gguf_array_int(g, key, i, &v))
			return err_set("%s: key %s[%llu] is not an integer", g->name, key,
				       (unsigned long long)i);
		if (i == 0)
			first = v;
		else if (v != first)
			return err_set("%s: key %s differs between layers (%lld in layer 0, %lld "
				       "in layer %llu): only models with one size in every layer "
				       "are supported",
				       g->name, key, (long long)first, (long long)v,
				       (unsigned long long)i);
	}
	if (first < lo || first > hi)
		return err_set("%s: key %s = %lld is out of range [%lld, %lld]", g->name, key,
			       (long long)first, lo, hi);
	*out = (int)first;
	return 0;
}

static int get_num(const struct eng_gguf *g, const char *key, double lo, double hi, double def,
		   double *out)
{
	double v;
	int r = eng_gguf_float(g, key, &v);
	if (r < 0)
		return -1;
	if (r == 1) {
		if (isnan(def))
			return err_set("%s: key %s is missing", g->name, key);
		*out = def;
		return 0;
	}
	if (!isfinite(v) || v < lo || v > hi)
		return err_set("%s: key %s = %g is out of range [%g, %g]", g->name, key, v, lo, hi);
	*out = v;
	return 0;
}

/* Only dense Qwen3 is implemented: anything else is refused by name. */
static int check_arch(const struct eng_gguf *g)
{
	const char *a;
	size_t n;
	int r = eng_gguf_str(g, "general.architecture", &a, &n);
	if (r < 0)
		return -1;
	if (r == 1)
		return err_set("%s: key general.architecture is missing", g->name);
	if (n != strlen(ARCH) || memcmp(a, ARCH, n))
		return err_set("%s: general.architecture is \"%.*s\"; only qwen3 (dense Qwen3) "
			       "is supported",
			       g->name, (int)(n < 64 ? n : 64), a);
	return 0;
}

/* The scaling factor: rope.scaling.factor, else the older rope.scale_linear (as
 * llama.cpp reads them); 0 where neither is there or it is 0, which scales nothing. */
static int rope_factor(const struct eng_gguf *g, double *factor)
{
	const char *key = ARCH ".rope.scaling.factor";
	double v;
	int r = eng_gguf_float(g, key, &v);
	if (r == 1) {
		key = ARCH ".rope.scale_linear";
		r = eng_gguf_float(g, key, &v);
	}
	*factor = 0;
	if (r < 0)
		return -1;
	if (r == 1 || v == 0)
		return 0;
	if (!isfinite(v) || v < 1 || v > MAX_ROPE_FACTOR)
		return err_set("%s: key %s = %g is out of range [1, %g]", g->name, key, v,
			       (double)MAX_ROPE_FACTOR);
	*factor = v;
	return 0;
}

/* rope.scaling.*: none, linear or yarn (as convert_hf_to_gguf.py writes them). A
 * file with a factor and no type is linear, as llama.cpp reads it. */
static int rope_scaling(const struct eng_gguf *g, struct eng_config *c)
{
	const char *t;
	size_t n;
	snprintf(c->rope_type, sizeof c->rope_type, "default");
	c->rope_factor = 1;
	c->rope_beta_fast = 32;
	c->rope_beta_slow = 1;
	int r = eng_gguf_str(g, ARCH ".rope.scaling.type", &t, &n);
	if (r < 0)
		return -1;
	if (r == 0 && n == 4 && !memcmp(t, "none", 4))
		return 0;
	bool linear = r == 1 || (n == 6 && !memcmp(t, "linear", 6)),
	     yarn = r == 0 && n == 4 && !memcmp(t, "yarn", 4);
	if (!linear && !yarn)
		return err_set("%s: key " ARCH ".rope.scaling.type: \"%.*s\" is not supported "
			       "(none, linear or yarn)",
			       g->name, (int)(n < 32 ? n : 32), t);
	double factor;
	if (rope_factor(g, &factor))
		return -1;
	if (factor == 0) /* nothing to scale by: the plain rotation */
		return 0;
	snprintf(c->rope_type, sizeof c->rope_type, "%s", linear ? "linear" : "yarn");
	c->rope_factor = factor;
	if (linear)
		return 0;
	/* optional, as in llama.cpp; 0 (absent) takes the factor as given (rope.c) */
	return get_int(g, ARCH ".rope.scaling.original_context_length", 0, MAX_POSITIONS, 0,
		       &c->rope_original_max_position) ||
			       get_num(g, ARCH ".rope.scaling.yarn_attn_factor", 1e-6, 1e6, 0,
				       &c->rope_attention_factor) ||
			       get_num(g, ARCH ".rope.scaling.yarn_beta_fast", 1e-6, 1e6, 32,
				       &c->rope_beta_fast) ||
			       get_num(g, ARCH ".rope.scaling.yarn_beta_slow", 1e-6, 1e6, 1,
				       &c->rope_beta_slow)
		       ? -1
		       : 0;
}

/* bos/eos from the tokenizer keys, when they name a row of the embedding. */
static int token_id(const struct eng_gguf *g, const char *key, int vocab, int *out)
{
	int64_t v;
	int r = eng_gguf_int(g, key, &v);
	*out = -1;
	if (r < 0)
		return -1;
	/* an id of the token list beyond the embedding: the list is what is wrong */
	const struct gguf_kv *toks = gguf_find(g, "tokenizer.ggml.tokens");
	if (r == 0 && v >= vocab && toks && toks->type == ENG_GGUF_ARRAY &&
	    toks->n > (uint64_t)vocab && (uint64_t)v < toks->n)
		return err_set("%s: key tokenizer.ggml.tokens has %llu tokens but "
			       "token_embd.weight has %d rows (the vocabulary): %s = %lld has no "
			       "row",
			       g->name, (unsigned long long)toks->n, vocab, key, (long long)v);
	if (r == 0 && (v < 0 || v >= vocab))
		return err_set("%s: key %s = %lld is not a token id below %d", g->name, key,
			       (long long)v, vocab);
	if (r == 0)
		*out = (int)v;
	return 0;
}

/* Reads the config from a GGUF's qwen3.* keys (the vocabulary size from
 * token_embd.weight, tied when output.weight is absent), validated as config.json
 * is. 0 or -1 (err_set naming the file and key). */
static int gguf_config(const struct eng_gguf *g, const struct gguf_tensor *embed, bool tied,
		       struct eng_config *c)
{
	memset(c, 0, sizeof *c);
	if (check_arch(g))
		return -1;
	/* the vocabulary is the embedding's rows: ne[1] of token_embd.weight */
	if (embed->ne[2] != 1 || embed->ne[3] != 1 || embed->ne[1] < 1 || embed->ne[1] > MAX_VOCAB)
		return err_set("%s: tensor token_embd.weight must be a matrix of 1 to %d rows",
			       g->name, MAX_VOCAB);
	c->vocab_size = (int)embed->ne[1];
	if (get_int(g, ARCH ".embedding_length", 1, MAX_WIDTH, -1, &c->hidden_size) ||
	    get_int(g, ARCH ".block_count", 1, MAX_LAYERS, -1, &c->num_layers) ||
	    get_layer_int(g, ARCH ".feed_forward_length", 1, MAX_WIDTH, -1, c->num_layers,
			  &c->intermediate_size) ||
	    get_layer_int(g, ARCH ".attention.head_count", 1, MAX_HEADS, -1, c->num_layers,
			  &c->num_heads) ||
	    get_layer_int(g, ARCH ".attention.head_count_kv", 1, MAX_HEADS, c->num_heads,
			  c->num_layers, &c->num_kv_heads))
		return -1;
	/* llama.cpp's default head size is embedding_length / head_count, as transformers' */
	int value_len = 0, rope_dims = 0;
	if (get_int(g, ARCH ".attention.key_length", 1, ENG_MAX_HEAD_DIM,
		    c->hidden_size % c->num_heads ? -1 : c->hidden_size / c->num_heads,
		    &c->head_dim) ||
	    get_int(g, ARCH ".attention.value_length", 1, ENG_MAX_HEAD_DIM, c->head_dim,
		    &value_len) ||
	    get_int(g, ARCH ".rope.dimension_count", 1, ENG_MAX_HEAD_DIM, c->head_dim, &rope_dims))
		return -1;
	if (value_len != c->head_dim || rope_dims != c->head_dim)
		return err_set("%s: key %s = %d differs from the head size %d (not supported)",
			       g->name,
			       value_len != c->head_dim ? ARCH ".attention.value_length"
							: ARCH ".rope.dimension_count",
			       value_len != c->head_dim ? value_len : rope_dims, c->head_dim);
	if (get_num(g, ARCH ".attention.layer_norm_rms_epsilon", MIN_RMS_EPS, MAX_RMS_EPS, NAN,
		    &c->rms_norm_eps) ||
	    get_num(g, ARCH ".rope.freq_base", MIN_ROPE_THETA, MAX_ROPE_THETA, 10000,
		    &c->rope_theta) ||
	    get_int(g, ARCH ".context_length", 1, MAX_POSITIONS, -1, &c->max_position_embeddings) ||
	    rope_scaling(g, c))
		return -1;
	c->tie_word_embeddings = tied;
	c->dtype = embed->dtype; /* gguf_model_bind sets the most common type once bound */
	if (token_id(g, "tokenizer.ggml.bos_token_id", c->vocab_size, &c->bos_token_id) ||
	    token_id(g, "tokenizer.ggml.eos_token_id", c->vocab_size, &c->eos_token_id))
		return -1;
	return cfg_check_consistency(c, g->name);
}

/* ---- split files: NAME-00001-of-00003.gguf, split.no / split.count keys ---- */

/* The number of splits the first file announces (1 when it has no split keys, and
 * when split.count is 0: llama-gguf-split --merge writes that into a merged file, which
 * llama.cpp then loads as one). */
static int split_count(const struct eng_gguf *g)
{
	int count = 1, no = 0;
	if (get_int(g, "split.count", 0, MAX_SPLIT, 1, &count) ||
	    get_int(g, "split.no", 0, MAX_SPLIT, 0, &no))
		return -1;
	if (count == 0)
		count = 1;
	if (no != 0)
		return err_set("%s: this is part %d of a split model; open its first part "
			       "(-00001-of-%05d.gguf)",
			       g->name, no + 1, count);
	return count;
}

/* path of split k (1-based) of n, from the first one's path ending "-00001-of-0000N.gguf". */
static char *split_path(const char *first, int k, int n)
{
	char tail[32];
	size_t len = strlen(first);
	snprintf(tail, sizeof tail, "-%05d-of-%05d.gguf", 1, n);
	size_t tl = strlen(tail);
	if (len < tl || strcmp(first + len - tl, tail)) {
		err_set("%s: split.count is %d but the name does not end in %s", first, n, tail);
		return NULL;
	}
	char *p = malloc(len + 1);
	if (!p) {
		err_set("out of memory");
		return NULL;
	}
	memcpy(p, first, len - tl);
	snprintf(p + len - tl, tl + 1, "-%05d-of-%05d.gguf", k, n);
	return p;
}

/* The file name of a part, for a message that names the path of another: the parts
 * are in one directory. */
static const char *part_name(const struct eng_gguf *g)
{
	const char *s = strrchr(g->name, '/');
	return s && s[1] ? s + 1 : g->name;
}

/* The parts hold each tensor once, and as many as the first part's split.tensors.count
 * says (where given): a part of another model's split set has the same names. */
static int check_split_tensors(const struct eng_model *m)
{
	int want = 0;
	if (get_int(m->gg[0], "split.tensors.count", 0, INT_MAX, 0, &want))
		return -1;
	int64_t total = 0;
	for (int k = 0; k < m->ngg; k++) {
		const struct eng_gguf *g = m->gg[k];
		int own = 0;
		if (get_int(g, "split.tensors.count", 0, INT_MAX, 0, &own))
			return -1;
		if (own && want && own != want)
			return err_set("%s: split.tensors.count %d, but %s says %d: the parts are "
				       "of different models",
				       g->name, own, part_name(m->gg[0]), want);
		for (int64_t i = 0; i < g->ntensors; i++)
			for (int j = 0; j < k; j++)
				if (gguf_tensor(m->gg[j], g->tensors[i].name))
					return err_set(
						"%s: tensor %s is in %s too: the parts are of "
						"different models",
						g->name, g->tensors[i].name, part_name(m->gg[j]));
		total += g->ntensors;
	}
	if (want && total != want)
		return err_set("%s: split.tensors.count is %d but the %d parts hold %lld "
			       "tensors: a part is of another model",
			       m->gg[0]->name, want, m->ngg, (long long)total);
	return 0;
}

static int open_splits(struct eng_model *m, const char *path)
{
	struct eng_gguf *first = gguf_open(path, path);
	if (!first)
		return -1;
	m->gg = calloc(1, sizeof *m->gg);
	if (!m->gg) {
		gguf_free(first);
		return err_set("out of memory");
	}
	m->gg[m->ngg++] = first;
	int n = split_count(first);
	if (n < 0)
		return -1;
	if (n == 1)
		return 0;
	struct eng_gguf **all = realloc(m->gg, (size_t)n * sizeof *all);
	if (!all)
		return err_set("out of memory");
	m->gg = all;
	for (int k = 2; k <= n; k++) {
		char *p = split_path(path, k, n);
		if (p && access(p, F_OK) && errno == ENOENT) {
			err_set("%s: split.count is %d but part %d, %s, is missing", first->name, n,
				k, p);
			free(p);
			return -1;
		}
		struct eng_gguf *g = p ? gguf_open(p, p) : NULL;
		free(p);
		if (!g)
			return -1;
		m->gg[m->ngg++] = g;
		int no = -1, count = 0;
		if (get_int(g, "split.no", 0, MAX_SPLIT, -1, &no) ||
		    get_int(g, "split.count", 1, MAX_SPLIT, -1, &count))
			return -1;
		if (no != k - 1 || count != n)
			return err_set("%s: split.no %d of split.count %d; expected %d of %d",
				       g->name, no, count, k - 1, n);
	}
	return check_split_tensors(m);
}

/* ---- binding the tensors ---- */

/* Which tensors of which file were bound, to refuse the ones a Qwen3 does not have. */
struct binder {
	struct eng_model *m;
	bool **used; /* per file, per tensor */
};

static const struct gguf_tensor *locate(const struct eng_model *m, const char *name, int *fi)
{
	for (*fi = 0; *fi < m->ngg; ++*fi) {
		const struct gguf_tensor *t = gguf_tensor(m->gg[*fi], name);
		if (t)
			return t;
	}
	return NULL;
}

/* Q, K or V of a layer stored fused, as blk.N.attn_qkv.weight with their rows one after
 * the other (llama.cpp loads such a file): the rows of `name` in it, as a tensor of
 * its own (the rows are whole blocks, so any type slices by rows). NULL when the
 * file has no such tensor; on a fused one of the wrong shape, NULL with *bad set. */
static const struct gguf_tensor *fused_part(struct binder *b, const char *name, int64_t rows,
					    int64_t cols, struct gguf_tensor *part, int *fi,
					    bool *bad)
{
	const struct eng_config *c = &b->m->cfg;
	const char *dot = strstr(name, ".attn_");
	int which = !dot                             ? -1
		    : !strcmp(dot, ".attn_q.weight") ? 0
		    : !strcmp(dot, ".attn_k.weight") ? 1
		    : !strcmp(dot, ".attn_v.weight") ? 2
						     : -1;
	char fused[GGUF_MAX_NAME];
	*bad = false;
	if (which < 0 || snprintf(fused, sizeof fused, "%.*s.attn_qkv.weight", (int)(dot - name),
				  name) >= (int)sizeof fused)
		return NULL;
	const struct gguf_tensor *t = locate(b->m, fused, fi);
	if (!t)
		return NULL;
	int64_t q = (int64_t)c->num_heads * c->head_dim,
		kv = (int64_t)c->num_kv_heads * c->head_dim;
	int64_t first = which == 0 ? 0 : which == 1 ? q : q + kv, all = q + 2 * kv;
	if (t->ne[0] != cols || t->ne[1] != all || t->ne[2] != 1 || t->ne[3] != 1 ||
	    t->nbytes % (size_t)all) {
		*bad = true;
		err_set("%s: tensor %s has shape [%lld,%lld] (ne0 first), the " ARCH
			".* keys need [%lld,%lld]: Q, K and V rows",
			b->m->gg[*fi]->name, fused, (long long)t->ne[0], (long long)t->ne[1],
			(long long)cols, (long long)all);
		return NULL;
	}
	size_t row = t->nbytes / (size_t)all;
	*part = *t;
	part->ne[1] = rows;
	part->data = (const uint8_t *)t->data + row * (size_t)first;
	part->nbytes = row * (size_t)rows;
	b->used[*fi][t - b->m->gg[*fi]->tensors] = true;
	return part;
}

/* Binds one weight (model_bind_fn): (rows, cols) in PyTorch's order is ne = [cols, rows]
 * in ggml's. */
static int bind(void *ctx, const char *name, int ndim, int64_t rows, int64_t cols,
		struct eng_tensor *dst)
{
	struct binder *b = ctx;
	struct eng_model *m = b->m;
	int fi;
	struct gguf_tensor part;
	bool bad = false;
	const struct gguf_tensor *t = locate(m, name, &fi);
	if (!t && ndim == 2)
		t = fused_part(b, name, rows, cols, &part, &fi, &bad);
	if (bad)
		return -1;
	if (!t)
		return err_set("%s: tensor %s is missing", m->gg[0]->name, name);
	const char *fn = m->gg[fi]->name;
	/* ggml's dimensions past a tensor's own are 1, and a writer may store those 1s
	 * (a norm as [n, 1]): compare all four, as llama.cpp does */
	int64_t want0 = ndim == 1 ? rows : cols, want1 = ndim == 1 ? 1 : rows;
	if (t->ne[0] != want0 || t->ne[1] != want1 || t->ne[2] != 1 || t->ne[3] != 1) {
		char have[96], want[48];
		int k = snprintf(have, sizeof have, "[%lld", (long long)t->ne[0]);
		for (int i = 1; i < t->ndim; i++)
			k += snprintf(have + k, sizeof have - (size_t)k, ",%lld",
				      (long long)t->ne[i]);
		snprintf(have + k, sizeof have - (size_t)k, "]");
		if (ndim == 1)
			snprintf(want, sizeof want, "[%lld]", (long long)want0);
		else
			snprintf(want, sizeof want, "[%lld,%lld]", (long long)want0,
				 (long long)want1);
		return err_set("%s: tensor %s has shape %s (ne0 first), the " ARCH
			       ".* keys need %s",
			       fn, name, have, want);
	}
	if (ndim == 1 && eng_dtype_quantized(t->dtype))
		return err_set("%s: tensor %s is a norm stored as %s (only F32, F16 or BF16)", fn,
			       name, eng_dtype_name(t->dtype));
	if (t != &part) /* fused_part marks the fused tensor */
		b->used[fi][t - m->gg[fi]->tensors] = true;
	dst->data = t->data;
	dst->dtype = t->dtype;
	dst->ndim = ndim;
	dst->shape[0] = rows;
	dst->shape[1] = ndim == 2 ? cols : 0;
	dst->nbytes = t->nbytes;
	m->weight_bytes += t->nbytes;
	return 0;
}

/* llama.cpp's names for the Hugging Face ones (convert_hf_to_gguf.py permutes nothing
 * for qwen3: Q and K keep Hugging Face's rotary layout). */
static const struct model_names gguf_names = {
	.embed = "token_embd.weight",
	.final_norm = "output_norm.weight",
	.lm_head = "output.weight",
	.layer = "blk.",
	.part =
		{
			[MODEL_INPUT_NORM] = "attn_norm",
			[MODEL_WQ] = "attn_q",
			[MODEL_WK] = "attn_k",
			[MODEL_WV] = "attn_v",
			[MODEL_WO] = "attn_output",
			[MODEL_Q_NORM] = "attn_q_norm",
			[MODEL_K_NORM] = "attn_k_norm",
			[MODEL_POST_NORM] = "ffn_norm",
			[MODEL_GATE] = "ffn_gate",
			[MODEL_UP] = "ffn_up",
			[MODEL_DOWN] = "ffn_down",
		},
};

/* Every tensor in the files must be bound, and no name may be in two splits. */
static int check_unused(const struct binder *b)
{
	const struct eng_model *m = b->m;
	for (int fi = 0; fi < m->ngg; fi++)
		for (int64_t ti = 0; ti < m->gg[fi]->ntensors; ti++) {
			const struct gguf_tensor *t = &m->gg[fi]->tensors[ti];
			if (!b->used[fi][ti])
				return err_set(
					"%s: unexpected tensor %s (not part of a Qwen3 model "
					"with these " ARCH ".* keys%s)",
					m->gg[fi]->name, t->name,
					fi ? ", or given in two splits" : "");
		}
	return 0;
}

int gguf_model_open(struct eng_model *m, const char *path)
{
	return open_splits(m, path) ? -1 : gguf_model_bind(m);
}

int gguf_model_bind(struct eng_model *m)
{
	int fi;
	const struct gguf_tensor *embed = locate(m, "token_embd.weight", &fi);
	if (!embed)
		return err_set("%s: tensor token_embd.weight is missing", m->gg[0]->name);
	if (gguf_config(m->gg[0], embed, !locate(m, "output.weight", &fi), &m->cfg))
		return -1;
	struct binder b = {m, calloc((size_t)m->ngg, sizeof *b.used)};
	int rc = b.used ? 0 : err_set("out of memory");
	for (int i = 0; rc == 0 && i < m->ngg; i++)
		if (!(b.used[i] = calloc((size_t)m->gg[i]->ntensors + 1, sizeof **b.used)))
			rc = err_set("out of memory");
	if (rc == 0)
		rc = (model_bind_all(m, &gguf_names, bind, &b) || check_unused(&b)) ? -1 : 0;
	for (int i = 0; b.used && i < m->ngg; i++)
		free(b.used[i]);
	free(b.used);
	for (int i = 0; i < m->ngg; i++)
		m->file_bytes += m->gg[i]->size;
	if (rc == 0)
		m->cfg.dtype = eng_model_main_type(m);
	return rc;
}
