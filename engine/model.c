/* model.c — opens a Hugging Face Qwen3 directory: config.json plus one or more
 * memory-mapped safetensors files, and binds every weight the config implies; a
 * GGUF file goes to model_gguf.c, which binds its weights through the same
 * model_bind_all, by its own names. */
#include "engine/model.h"
#include "src/base/err.h"
#include "src/base/fileio.h"
#include "src/base/jsonlimit.h"

#include <jansson.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define INDEX_NAME  "model.safetensors.index.json"
#define SINGLE_NAME "model.safetensors"

/* Index file names come from an untrusted file: they must name a file inside
 * the model directory. */
static int check_shard_name(const char *s)
{
	if (!*s || strchr(s, '/') || !strcmp(s, ".") || !strcmp(s, ".."))
		return err_set("%s: weight_map names an invalid file \"%.100s\"", INDEX_NAME, s);
	return 0;
}

static int add_file(struct eng_model *m, const char *dir, const char *name)
{
	for (int i = 0; i < m->nfiles; i++)
		if (!strcmp(m->files[i]->name, name))
			return i;
	struct st_file **files = realloc(m->files, (size_t)(m->nfiles + 1) * sizeof *files);
	bool **used = realloc(m->used, (size_t)(m->nfiles + 1) * sizeof *used);
	if (files)
		m->files = files;
	if (used)
		m->used = used;
	if (!files || !used)
		return err_set("out of memory");
	char *path = fio_join(dir, name);
	if (!path)
		return err_set("out of memory");
	struct st_file *f = st_open(path, name);
	free(path);
	if (!f)
		return -1;
	bool *u = calloc((size_t)f->ntensors + 1, sizeof *u);
	if (!u) {
		st_free(f);
		return err_set("out of memory");
	}
	m->files[m->nfiles] = f;
	m->used[m->nfiles] = u;
	return m->nfiles++;
}

/* Sharded checkpoints: model.safetensors.index.json {"weight_map": {tensor: file}}. */
static int open_sharded(struct eng_model *m, const char *dir)
{
	char *path = fio_join(dir, INDEX_NAME);
	size_t len;
	/* ~2 values per tensor: room for 250k tensors (the largest MoE checkpoints
	 * have ~100k), and a bound on what jansson may allocate (~120 MB) */
	static const struct jlim lim = {.max_depth = 32, .max_values = 1 << 19};
	char *text = path ? jlim_read_file(path, 64u << 20, &lim, &len) : NULL;
	free(path);
	if (!text)
		return -1;
	json_error_t je;
	json_t *root = json_loadb(text, len, JSON_REJECT_DUPLICATES, &je);
	free(text);
	if (!root)
		return err_set("%s: invalid JSON at line %d column %d: %s", INDEX_NAME, je.line,
			       je.column, je.text);
	json_t *wm = json_object_get(root, "weight_map");
	if (!json_is_object(wm)) {
		json_decref(root);
		return err_set("%s: weight_map is missing or not an object", INDEX_NAME);
	}
	m->weight_map = json_incref(wm);
	json_decref(root);
	const char *key;
	json_t *v;
	json_object_foreach(m->weight_map, key, v)
	{
		const char *file = json_string_value(v);
		if (!file)
			return err_set("%s: weight_map: tensor %.200s: file name is not a string",
				       INDEX_NAME, key);
		if (check_shard_name(file) < 0 || add_file(m, dir, file) < 0)
			return -1;
	}
	if (m->nfiles == 0)
		return err_set("%s: weight_map is empty", INDEX_NAME);
	return 0;
}

/* Finds a tensor: in the single file, or in the shard the index names. */
static int locate(struct eng_model *m, const char *name, int *fi, int *ti)
{
	*fi = 0;
	if (m->weight_map) {
		const char *file = json_string_value(json_object_get(m->weight_map, name));
		if (!file)
			return err_set("%s: tensor %s is missing", INDEX_NAME, name);
		while (strcmp(m->files[*fi]->name, file))
			++*fi;
	}
	const struct st_file *f = m->files[*fi];
	const struct st_tensor *t = st_find(f, name);
	if (!t)
		return err_set("%s: tensor %s is missing", f->name, name);
	*ti = (int)(t - f->tensors);
	return 0;
}

static void shape_str(char *buf, size_t n, int ndim, const int64_t *shape)
{
	size_t k = (size_t)snprintf(buf, n, "[");
	for (int i = 0; i < ndim && k < n; i++)
		k += (size_t)snprintf(buf + k, n - k, "%s%lld", i ? "," : "", (long long)shape[i]);
	if (k < n)
		snprintf(buf + k, n - k, "]");
}

/* Binds one weight (model_bind_fn), checking its shape against what config.json
 * implies. Its dtype is its own (F32, F16 or BF16, safetensors.c checked): a
 * checkpoint may keep its norms in F32 beside BF16 matrices, or say another
 * torch_dtype than it holds, and transformers loads either. */
static int bind(void *ctx, const char *name, int ndim, int64_t rows, int64_t cols,
		struct eng_tensor *dst)
{
	struct eng_model *m = ctx;
	const struct eng_config *c = &m->cfg;
	int fi = 0, ti = 0;
	char msg[512];
	if (locate(m, name, &fi, &ti) < 0) {
		if (strcmp(name, "lm_head.weight"))
			return -1;
		snprintf(msg, sizeof msg, "%s", err_msg());
		return err_set("%s (config.json's tie_word_embeddings is not true: the model "
			       "needs an output layer of its own)",
			       msg);
	}
	const struct st_file *f = m->files[fi];
	const struct st_tensor *t = &f->tensors[ti];
	int64_t want[2] = {rows, cols};
	bool ok = t->ndim == ndim && t->shape[0] == rows && (ndim == 1 || t->shape[1] == cols);
	if (!ok) {
		char have_s[200], want_s[64], why[96] = "";
		shape_str(have_s, sizeof have_s, t->ndim, t->shape);
		shape_str(want_s, sizeof want_s, ndim, want);
		if (strstr(name, ".self_attn.")) /* head_dim is 128 where config.json has none */
			snprintf(why, sizeof why,
				 " (%d query and %d key/value heads of head_dim %d)", c->num_heads,
				 c->num_kv_heads, c->head_dim);
		return err_set("%s: tensor %s has shape %s, config.json needs %s%s", f->name, name,
			       have_s, want_s, why);
	}
	m->used[fi][ti] = true;
	dst->data = t->data;
	dst->dtype = t->dtype;
	dst->ndim = ndim;
	dst->shape[0] = rows;
	dst->shape[1] = ndim == 2 ? cols : 0;
	dst->nbytes = t->nbytes;
	m->weight_bytes += t->nbytes;
	return 0;
}

/* Anything in the files that no weight uses is an error: a checkpoint of a
 * different shape or architecture would otherwise load silently. */
static int check_unused(struct eng_model *m)
{
	const struct eng_config *c = &m->cfg;
	for (int fi = 0; fi < m->nfiles; fi++) {
		const struct st_file *f = m->files[fi];
		for (int ti = 0; ti < f->ntensors; ti++) {
			const struct st_tensor *t = &f->tensors[ti];
			if (m->used[fi][ti])
				continue;
			/* transformers ignores a stored lm_head when the config ties it */
			if (c->tie_word_embeddings && !strcmp(t->name, "lm_head.weight") &&
			    t->ndim == 2 && t->shape[0] == c->vocab_size &&
			    t->shape[1] == c->hidden_size)
				continue;
			/* RoPE's frequencies, which older transformers saved as a buffer and
			   every version recomputes from the config */
			size_t n = strlen(t->name), k = strlen("rotary_emb.inv_freq");
			if (t->ndim == 1 && n >= k &&
			    !strcmp(t->name + n - k, "rotary_emb.inv_freq"))
				continue;
			if (c->tie_word_embeddings && !strcmp(t->name, "lm_head.weight"))
				return err_set("%s: tensor lm_head.weight is not the embedding's "
					       "shape [%d,%d], which config.json ties it to",
					       f->name, c->vocab_size, c->hidden_size);
			return err_set("%s: unexpected tensor %s (not part of a Qwen3 model with "
				       "this config.json)",
				       f->name, t->name);
		}
	}
	if (m->weight_map) {
		const char *key;
		json_t *v;
		json_object_foreach(m->weight_map, key, v)
		{
			int fi = 0;
			while (strcmp(m->files[fi]->name, json_string_value(v)))
				fi++;
			if (!st_find(m->files[fi], key))
				return err_set(
					"%s: weight_map lists tensor %s in %s, which does not "
					"hold it",
					INDEX_NAME, key, m->files[fi]->name);
		}
	}
	return 0;
}

/* The names Hugging Face's Qwen3 checkpoints give the weights. */
#define QWEN3_PARTS                                                                             \
	{                                                                                       \
		[MODEL_INPUT_NORM] = "input_layernorm", [MODEL_WQ] = "self_attn.q_proj",        \
		[MODEL_WK] = "self_attn.k_proj", [MODEL_WV] = "self_attn.v_proj",               \
		[MODEL_WO] = "self_attn.o_proj", [MODEL_Q_NORM] = "self_attn.q_norm",           \
		[MODEL_K_NORM] = "self_attn.k_norm",                                            \
		[MODEL_POST_NORM] = "post_attention_layernorm", [MODEL_GATE] = "mlp.gate_proj", \
		[MODEL_UP] = "mlp.up_proj", [MODEL_DOWN] = "mlp.down_proj",                     \
	}
static const struct model_names st_names = {
	.embed = "model.embed_tokens.weight",
	.final_norm = "model.norm.weight",
	.lm_head = "lm_head.weight",
	.layer = "model.layers.",
	.part = QWEN3_PARTS,
};

/* Qwen3-Embedding's checkpoints are the bare Qwen3Model (transformers' AutoModel),
 * saved without the "model." of the causal LM around it and without its lm_head: the
 * same names with that prefix off. */
static const struct model_names st_bare_names = {
	.embed = "embed_tokens.weight",
	.final_norm = "norm.weight",
	.lm_head = "lm_head.weight",
	.layer = "layers.",
	.part = QWEN3_PARTS,
};

/* The causal LM's names, or the bare model's where its embedding is there and the
 * causal LM's is not. The bare model has no output layer even where config.json
 * says tie_word_embeddings false (Qwen3-Embedding-8B's, from Qwen3-8B's config): it
 * is read as tied, the embedding standing in for the layer an embedding model never
 * uses (transformers would make a random one). */
static const struct model_names *names_of(struct eng_model *m)
{
	int fi, ti;
	if (locate(m, st_names.embed, &fi, &ti) == 0 ||
	    locate(m, st_bare_names.embed, &fi, &ti) < 0)
		return &st_names;
	if (!m->cfg.tie_word_embeddings && locate(m, st_bare_names.lm_head, &fi, &ti) < 0)
		m->cfg.tie_word_embeddings = true;
	err_clear();
	return &st_bare_names;
}

static int bind_layer(struct eng_model *m, const struct model_names *names, model_bind_fn bind,
		      void *ctx, int l)
{
	const struct eng_config *c = &m->cfg;
	struct eng_layer *ly = &m->w.layers[l];
	int64_t h = c->hidden_size, inter = c->intermediate_size, hd = c->head_dim;
	int64_t q = (int64_t)c->num_heads * hd, kv = (int64_t)c->num_kv_heads * hd;
	const struct {
		int ndim;
		int64_t rows, cols;
		struct eng_tensor *dst;
	} parts[MODEL_PARTS] = {
		[MODEL_INPUT_NORM] = {1, h, 0, &ly->input_norm},
		[MODEL_WQ] = {2, q, h, &ly->wq},
		[MODEL_WK] = {2, kv, h, &ly->wk},
		[MODEL_WV] = {2, kv, h, &ly->wv},
		[MODEL_WO] = {2, h, q, &ly->wo},
		[MODEL_Q_NORM] = {1, hd, 0, &ly->q_norm},
		[MODEL_K_NORM] = {1, hd, 0, &ly->k_norm},
		[MODEL_POST_NORM] = {1, h, 0, &ly->post_norm},
		[MODEL_GATE] = {2, inter, h, &ly->w_gate},
		[MODEL_UP] = {2, inter, h, &ly->w_up},
		[MODEL_DOWN] = {2, h, inter, &ly->w_down},
	};
	char name[128];
	for (int i = 0; i < MODEL_PARTS; i++) {
		snprintf(name, sizeof name, "%s%d.%s.weight", names->layer, l, names->part[i]);
		if (bind(ctx, name, parts[i].ndim, parts[i].rows, parts[i].cols, parts[i].dst) < 0)
			return -1;
	}
	return 0;
}

int model_bind_all(struct eng_model *m, const struct model_names *names, model_bind_fn bind,
		   void *ctx)
{
	const struct eng_config *c = &m->cfg;
	if (!(m->w.layers = calloc((size_t)c->num_layers, sizeof *m->w.layers)))
		return err_set("out of memory");
	if (bind(ctx, names->embed, 2, c->vocab_size, c->hidden_size, &m->w.embed) < 0)
		return -1;
	for (int l = 0; l < c->num_layers; l++)
		if (bind_layer(m, names, bind, ctx, l) < 0)
			return -1;
	if (bind(ctx, names->final_norm, 1, c->hidden_size, 0, &m->w.final_norm) < 0)
		return -1;
	if (c->tie_word_embeddings)
		m->w.lm_head = m->w.embed;
	else if (bind(ctx, names->lm_head, 2, c->vocab_size, c->hidden_size, &m->w.lm_head) < 0)
		return -1;
	return 0;
}

/* Whether msg starts by naming dir ("dir: ..." or "dir/file: ..."), not merely with the
 * same letters (a directory "model" and a message "model.safetensors: ..."). */
static bool names_dir(const char *msg, const char *dir)
{
	size_t n = strlen(dir);
	return n && !strncmp(msg, dir, n) && (dir[n - 1] == '/' || msg[n] == '/' || msg[n] == ':');
}

struct eng_model *eng_model_open(const char *dir)
{
	struct eng_model *m = calloc(1, sizeof *m);
	if (!m) {
		err_set("out of memory");
		return NULL;
	}
	if (!fio_is_dir(dir)) {
		if (gguf_model_open(m, dir) == 0)
			return m;
		goto fail;
	}
	/* the config is validated before anything sized by it is allocated */
	if (eng_config_load(dir, &m->cfg) < 0)
		goto fail;
	char *single = fio_join(dir, SINGLE_NAME), *index = fio_join(dir, INDEX_NAME);
	int rc;
	if (!single || !index)
		rc = err_set("out of memory");
	else if (fio_exists(single)) /* if not a regular file, refused by name */
		rc = add_file(m, dir, SINGLE_NAME);
	else if (fio_exists(index))
		rc = open_sharded(m, dir);
	else
		rc = err_set("%s: no %s or %s", dir, SINGLE_NAME, INDEX_NAME);
	free(single);
	free(index);
	if (rc < 0 || model_bind_all(m, names_of(m), bind, m) < 0 || check_unused(m) < 0) {
		/* the weights' messages name their file: say in which directory */
		if (!names_dir(err_msg(), dir))
			err_prefix("%s", dir);
		goto fail;
	}
	for (int i = 0; i < m->nfiles; i++)
		m->file_bytes += m->files[i]->size;
	m->cfg.dtype = eng_model_main_type(m); /* what the files hold, not torch_dtype */
	return m;
fail:
	eng_model_free(m);
	return NULL;
}

void eng_model_free(struct eng_model *m)
{
	if (!m)
		return;
	for (int i = 0; i < m->nfiles; i++) {
		st_free(m->files[i]);
		free(m->used[i]);
	}
	free(m->files);
	free(m->used);
	for (int i = 0; i < m->ngg; i++)
		gguf_free(m->gg[i]);
	free(m->gg);
	free(m->w.layers);
	json_decref(m->weight_map);
	if (m->quant_buf)
		munmap(m->quant_buf, m->quant_size);
	free(m);
}

const struct eng_config *eng_model_config(const struct eng_model *m)
{
	return &m->cfg;
}

const struct eng_weights *eng_model_weights(const struct eng_model *m)
{
	return &m->w;
}

size_t eng_model_weight_bytes(const struct eng_model *m)
{
	return m->weight_bytes;
}

size_t eng_model_file_bytes(const struct eng_model *m)
{
	return m->file_bytes;
}

const struct eng_gguf *eng_model_gguf(const struct eng_model *m)
{
	return m->ngg ? m->gg[0] : NULL;
}

/* Calls f on every distinct bound tensor (the lm_head once when tied). */
static void each_tensor(const struct eng_model *m, void (*f)(const struct eng_tensor *, void *),
			void *ud)
{
	const struct eng_weights *w = &m->w;
	f(&w->embed, ud);
	for (int l = 0; w->layers && l < m->cfg.num_layers; l++) {
		const struct eng_layer *L = &w->layers[l];
		const struct eng_tensor *t[] = {
			&L->input_norm, &L->wq,        &L->wk,     &L->wv,   &L->wo,    &L->q_norm,
			&L->k_norm,     &L->post_norm, &L->w_gate, &L->w_up, &L->w_down};
		for (size_t i = 0; i < sizeof t / sizeof t[0]; i++)
			f(t[i], ud);
	}
	f(&w->final_norm, ud);
	if (!m->cfg.tie_word_embeddings)
		f(&w->lm_head, ud);
}

static void count_type(const struct eng_tensor *t, void *ud)
{
	struct eng_type_count *tc = ud;
	if (!t->data || (unsigned)t->dtype >= ENG_DTYPE_COUNT)
		return;
	tc[t->dtype].tensors++;
	tc[t->dtype].weights += t->shape[0] * (t->ndim == 2 ? t->shape[1] : 1);
	tc[t->dtype].bytes += t->nbytes;
}

void eng_model_type_counts(const struct eng_model *m, struct eng_type_count out[ENG_DTYPE_COUNT])
{
	memset(out, 0, ENG_DTYPE_COUNT * sizeof *out);
	each_tensor(m, count_type, out);
}

enum eng_dtype eng_model_main_type(const struct eng_model *m)
{
	struct eng_type_count tc[ENG_DTYPE_COUNT];
	eng_model_type_counts(m, tc);
	int best = 0;
	for (int t = 1; t < ENG_DTYPE_COUNT; t++)
		if (tc[t].weights > tc[best].weights)
			best = t;
	return (enum eng_dtype)best;
}

static void add_bytes(const struct eng_tensor *t, void *ud)
{
	*(size_t *)ud += t->nbytes;
}

struct resident {
	size_t bytes, page, cap;
	unsigned char *vec;
};

/* The pages of one tensor in memory (mincore), in bytes, at most its size. */
static void add_resident(const struct eng_tensor *t, void *ud)
{
	struct resident *r = ud;
	if (!t->data || !t->nbytes)
		return;
	uintptr_t a = (uintptr_t)t->data & ~(uintptr_t)(r->page - 1);
	size_t len = (uintptr_t)t->data + t->nbytes - a, n = (len + r->page - 1) / r->page, in = 0;
	if (n > r->cap) {
		unsigned char *v = realloc(r->vec, n);
		if (!v) {
			r->bytes += t->nbytes; /* unknown: as the plan has it */
			return;
		}
		r->vec = v;
		r->cap = n;
	}
	if (mincore((void *)a, len, r->vec)) {
		r->bytes += t->nbytes;
		return;
	}
	for (size_t i = 0; i < n; i++)
		in += r->vec[i] & 1;
	r->bytes += in * r->page < t->nbytes ? in * r->page : t->nbytes;
}

size_t eng_model_resident_bytes(const struct eng_model *m)
{
	long page = sysconf(_SC_PAGESIZE);
	struct resident r = {.page = page > 0 ? (size_t)page : 4096};
	each_tensor(m, add_resident, &r);
	free(r.vec);
	return r.bytes;
}

size_t eng_model_decode_bytes(const struct eng_model *m)
{
	/* every tensor once (the lm_head is the embedding when tied), plus the one
	 * embedding row the input token reads when the embedding is not read anyway */
	size_t sum = 0;
	each_tensor(m, add_bytes, &sum);
	if (!m->cfg.tie_word_embeddings)
		sum -= m->w.embed.nbytes;
	return sum + eng_row_bytes(m->w.embed.dtype, m->cfg.hidden_size);
}
