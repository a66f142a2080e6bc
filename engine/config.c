/* config.c — config.json of a dense Qwen3 model: parsing, validation, and the
 * arithmetic that follows from it (parameter counts, KV and decode bytes). */
#include "engine/engine.h"
#include "engine/config_limits.h"
#include "src/base/err.h"
#include "src/base/fileio.h"
#include "src/base/jsonlimit.h"

#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Every dtype's block: weights per block, bytes per block, name (ggml-common.h). */
static const struct {
	int block;
	size_t bytes;
	const char *name;
} dtypes[ENG_DTYPE_COUNT] = {
	[ENG_BF16] = {1, 2, "BF16"},         [ENG_F16] = {1, 2, "F16"},
	[ENG_F32] = {1, 4, "F32"},           [ENG_Q8_0] = {32, 34, "Q8_0"},
	[ENG_Q4_0] = {32, 18, "Q4_0"},       [ENG_Q5_0] = {32, 22, "Q5_0"},
	[ENG_Q4_K] = {256, 144, "Q4_K"},     [ENG_Q5_K] = {256, 176, "Q5_K"},
	[ENG_Q6_K] = {256, 210, "Q6_K"},     [ENG_Q4_1] = {32, 20, "Q4_1"},
	[ENG_Q5_1] = {32, 24, "Q5_1"},       [ENG_Q2_K] = {256, 84, "Q2_K"},
	[ENG_Q3_K] = {256, 110, "Q3_K"},     [ENG_IQ4_NL] = {32, 18, "IQ4_NL"},
	[ENG_IQ4_XS] = {256, 136, "IQ4_XS"},
};

size_t eng_dtype_size(enum eng_dtype t)
{
	return eng_dtype_block_bytes(t);
}

int eng_dtype_block(enum eng_dtype t)
{
	return (unsigned)t < ENG_DTYPE_COUNT ? dtypes[t].block : 1;
}

size_t eng_dtype_block_bytes(enum eng_dtype t)
{
	return (unsigned)t < ENG_DTYPE_COUNT ? dtypes[t].bytes : 0;
}

size_t eng_row_bytes(enum eng_dtype t, int64_t n)
{
	int b = eng_dtype_block(t);
	if (n < 0 || n % b)
		return 0;
	return (size_t)(n / b) * eng_dtype_block_bytes(t);
}

bool eng_dtype_quantized(enum eng_dtype t)
{
	return eng_dtype_block(t) > 1;
}

const char *eng_dtype_name(enum eng_dtype t)
{
	return (unsigned)t < ENG_DTYPE_COUNT ? dtypes[t].name : "?";
}

/* Reads an integer field into [lo, hi]. Absent: *out = def, or an error when
 * def is below lo (required field). */
static int get_int(json_t *root, const char *name, const char *pfx, const char *key, long long lo,
		   long long hi, long long def, int *out)
{
	json_t *v = json_object_get(root, key);
	if (!v || json_is_null(v)) {
		if (def < lo)
			return err_set("%s: %s%s is missing", name, pfx, key);
		*out = (int)def;
		return 0;
	}
	if (!json_is_integer(v))
		return err_set("%s: %s%s must be an integer", name, pfx, key);
	json_int_t x = json_integer_value(v);
	if (x < lo || x > hi)
		return err_set("%s: %s%s = %lld is out of range [%lld, %lld]", name, pfx, key,
			       (long long)x, lo, hi);
	*out = (int)x;
	return 0;
}

/* Reads a number field (integer or real) into [lo, hi]; absent gives def. */
static int get_num(json_t *obj, const char *name, const char *pfx, const char *key, double lo,
		   double hi, double def, double *out)
{
	json_t *v = json_object_get(obj, key);
	if (!v || json_is_null(v)) {
		if (isnan(def))
			return err_set("%s: %s%s is missing", name, pfx, key);
		*out = def;
		return 0;
	}
	if (!json_is_number(v))
		return err_set("%s: %s%s must be a number", name, pfx, key);
	double x = json_number_value(v);
	if (!isfinite(x) || x < lo || x > hi)
		return err_set("%s: %s%s = %g is out of range [%g, %g]", name, pfx, key, x, lo, hi);
	*out = x;
	return 0;
}

/* Only dense Qwen3 is implemented: anything else (Qwen3-MoE, Llama, Qwen2...)
 * would load but compute garbage, so it is refused by name. */
static int check_architecture(json_t *root, const char *name)
{
	json_t *arch = json_object_get(root, "architectures");
	json_t *type = json_object_get(root, "model_type");
	if (!arch && !type)
		return err_set("%s: architectures and model_type are missing "
			       "(not a Hugging Face Qwen3 config)",
			       name);
	if (arch) {
		if (!json_is_array(arch) || json_array_size(arch) == 0)
			return err_set("%s: architectures must be a non-empty array", name);
		for (size_t i = 0; i < json_array_size(arch); i++) {
			const char *a = json_string_value(json_array_get(arch, i));
			if (!a)
				return err_set("%s: architectures[%zu] must be a string", name, i);
			if (strcmp(a, "Qwen3ForCausalLM") != 0)
				return err_set("%s: architectures: %.64s is not supported "
					       "(only dense Qwen3ForCausalLM)",
					       name, a);
		}
	}
	if (type) {
		const char *t = json_string_value(type);
		if (!t)
			return err_set("%s: model_type must be a string", name);
		if (strcmp(t, "qwen3") != 0)
			return err_set("%s: model_type: %.64s is not supported (only qwen3)", name,
				       t);
	}
	/* features of the Qwen3 code path that the published models leave off */
	json_t *bias = json_object_get(root, "attention_bias");
	if (bias && !json_is_false(bias) && !json_is_null(bias))
		return err_set("%s: attention_bias must be false (Qwen3 has no attention biases)",
			       name);
	json_t *act = json_object_get(root, "hidden_act");
	if (act && (!json_is_string(act) || strcmp(json_string_value(act), "silu") != 0))
		return err_set("%s: hidden_act must be \"silu\"", name);
	json_t *sw = json_object_get(root, "use_sliding_window");
	if (sw && !json_is_false(sw) && !json_is_null(sw))
		return err_set("%s: use_sliding_window is not supported", name);
	return 0;
}

static int parse_dtype(json_t *root, const char *name, struct eng_config *cfg)
{
	/* transformers >= 4.56 writes "dtype", older versions "torch_dtype" */
	const char *key = "torch_dtype";
	json_t *v = json_object_get(root, key);
	if (!v || json_is_null(v)) {
		key = "dtype";
		v = json_object_get(root, key);
	}
	cfg->dtype = ENG_BF16;
	if (!v || json_is_null(v))
		return 0;
	const char *s = json_string_value(v);
	if (!s)
		return err_set("%s: %s must be a string", name, key);
	if (!strcmp(s, "bfloat16"))
		cfg->dtype = ENG_BF16;
	else if (!strcmp(s, "float16"))
		cfg->dtype = ENG_F16;
	else if (!strcmp(s, "float32"))
		cfg->dtype = ENG_F32;
	else
		return err_set("%s: %s: %.32s is not supported (bfloat16, float16, float32)", name,
			       key, s);
	return 0;
}


/* The scaling of rope_scaling or rope_parameters (rs; p its name and a dot). */
static int parse_rope_scaling(json_t *rs, bool legacy, const char *name, const char *p,
			      struct eng_config *cfg)
{
	snprintf(cfg->rope_type, sizeof cfg->rope_type, "default");
	cfg->rope_factor = 1;
	cfg->rope_original_max_position = 0;
	cfg->rope_attention_factor = 0;
	cfg->rope_beta_fast = 32;
	cfg->rope_beta_slow = 1;
	cfg->rope_mscale = cfg->rope_mscale_all_dim = 0;
	if (!rs || json_is_null(rs))
		return 0;
	if (!json_is_object(rs))
		return err_set("%s: rope_scaling must be an object or null", name);
	json_t *t = json_object_get(rs, "rope_type");
	if (!t)
		t = json_object_get(rs, "type");
	const char *type = t || legacy ? json_string_value(t) : "default";
	if (!type)
		return err_set("%s: %srope_type is %s", name, p, t ? "not a string" : "missing");
	if (!strcmp(type, "default"))
		return 0;
	if (!strcmp(type, "linear")) { /* positions divided by the factor */
		snprintf(cfg->rope_type, sizeof cfg->rope_type, "linear");
		return get_num(rs, name, p, "factor", 1, MAX_ROPE_FACTOR, NAN, &cfg->rope_factor);
	}
	if (strcmp(type, "yarn") != 0)
		return err_set("%s: %srope_type: %.32s is not supported (default, linear or yarn)",
			       name, p, type);
	snprintf(cfg->rope_type, sizeof cfg->rope_type, "yarn");
	/* The optional fields default as transformers' _compute_yarn_parameters does; a
	 * beta of 0 means the default there too (`beta_fast or 32`). */
	if (get_num(rs, name, p, "factor", 1, MAX_ROPE_FACTOR, NAN, &cfg->rope_factor) ||
	    get_num(rs, name, p, "attention_factor", 1e-6, 1e6, 0, &cfg->rope_attention_factor) ||
	    get_num(rs, name, p, "beta_fast", 0, 1e6, 0, &cfg->rope_beta_fast) ||
	    get_num(rs, name, p, "beta_slow", 0, 1e6, 0, &cfg->rope_beta_slow) ||
	    get_num(rs, name, p, "mscale", 0, 1e6, 0, &cfg->rope_mscale) ||
	    get_num(rs, name, p, "mscale_all_dim", 0, 1e6, 0, &cfg->rope_mscale_all_dim))
		return -1;
	if (cfg->rope_beta_fast == 0)
		cfg->rope_beta_fast = 32;
	if (cfg->rope_beta_slow == 0)
		cfg->rope_beta_slow = 1;
	if (cfg->rope_beta_fast < cfg->rope_beta_slow)
		return err_set("%s: %sbeta_fast = %g is below beta_slow = %g", name, p,
			       cfg->rope_beta_fast, cfg->rope_beta_slow);
	/* transformers rounds the correction range out to whole dimensions unless told
	 * "truncate": false (gpt-oss); rope.c always rounds */
	json_t *trunc = json_object_get(rs, "truncate");
	if (trunc && !json_is_null(trunc) && !json_is_true(trunc))
		return err_set("%s: %struncate: %s", name, p,
			       json_is_false(trunc) ? "false (an unrounded correction range) is "
						      "not supported"
						    : "must be true or false");
	/* absent stays 0: transformers then uses `factor` as given (rope.c) */
	json_t *orig = json_object_get(rs, "original_max_position_embeddings");
	if (!orig || json_is_null(orig))
		return 0;
	return get_int(rs, name, p, "original_max_position_embeddings", 1, MAX_POSITIONS, 1,
		       &cfg->rope_original_max_position);
}

/* RoPE's settings. transformers 4 writes rope_theta and rope_scaling (null, or an
 * object naming its rope_type); transformers 5 writes one object, rope_parameters,
 * with rope_theta, rope_type and the scaling's fields, and reads either form so: the
 * object is rope_scaling where that is a non-empty object, else rope_parameters; the
 * base is the object's rope_theta, else the top-level one, else 10000; the type is
 * the object's rope_type (or "type"), else "default" (a rope_scaling without one has
 * no reading in transformers 4, a KeyError, and is refused). A rope_parameters keyed
 * by layer type gives the full-attention layers' object, the only layers of a dense
 * Qwen3 (use_sliding_window is refused). */
static int parse_rope(json_t *root, const char *name, struct eng_config *cfg)
{
	json_t *rs = json_object_get(root, "rope_scaling");
	const char *p = "rope_scaling.";
	bool legacy = rs && !json_is_null(rs) && (!json_is_object(rs) || json_object_size(rs));
	if (!legacy) {
		rs = json_object_get(root, "rope_parameters");
		p = "rope_parameters.";
		if (rs && !json_is_null(rs) && !json_is_object(rs))
			return err_set("%s: rope_parameters must be an object or null", name);
		json_t *full = json_object_get(rs, "full_attention");
		if (json_is_object(full)) {
			rs = full;
			p = "rope_parameters.full_attention.";
		}
		const char *key;
		json_t *v;
		json_object_foreach(rs, key, v)
		{
			if (json_is_object(v))
				return err_set(
					"%s: %s%.32s: only full-attention layers are supported",
					name, p, key);
		}
	}
	double top, partial; /* RoPE on part of each head only: not in Qwen3 */
	if (get_num(root, name, "", "rope_theta", MIN_ROPE_THETA, MAX_ROPE_THETA, 10000, &top) ||
	    get_num(rs, name, p, "rope_theta", MIN_ROPE_THETA, MAX_ROPE_THETA, top,
		    &cfg->rope_theta) ||
	    get_num(rs, name, p, "partial_rotary_factor", 1, 1, 1, &partial))
		return -1;
	return parse_rope_scaling(rs, legacy, name, p, cfg);
}

/* bos/eos: an id, a list of ids (the first one counts) or null. */
static int parse_token_id(json_t *root, const char *name, const char *key, int vocab, int *out)
{
	json_t *v = json_object_get(root, key), *e;
	*out = -1;
	if (!v || json_is_null(v))
		return 0;
	/* a list (the first is the id; every one must be a token) or one id */
	size_t n = json_is_array(v) ? json_array_size(v) : 1;
	for (size_t i = 0; i < n; i++) {
		e = json_is_array(v) ? json_array_get(v, i) : v;
		if (!json_is_integer(e) || json_integer_value(e) < 0 ||
		    json_integer_value(e) >= vocab)
			return err_set("%s: %s%s must be a token id below vocab_size %d", name, key,
				       json_is_array(v) ? "[...]" : "", vocab);
		if (i == 0)
			*out = (int)json_integer_value(e);
	}
	return 0;
}

static int parse_fields(json_t *root, const char *name, struct eng_config *c)
{
	if (get_int(root, name, "", "vocab_size", 1, MAX_VOCAB, -1, &c->vocab_size) ||
	    get_int(root, name, "", "hidden_size", 1, MAX_WIDTH, -1, &c->hidden_size) ||
	    get_int(root, name, "", "intermediate_size", 1, MAX_WIDTH, -1, &c->intermediate_size) ||
	    get_int(root, name, "", "num_hidden_layers", 1, MAX_LAYERS, -1, &c->num_layers) ||
	    get_int(root, name, "", "num_attention_heads", 1, MAX_HEADS, -1, &c->num_heads) ||
	    get_int(root, name, "", "num_key_value_heads", 1, MAX_HEADS,
		    json_object_get(root, "num_key_value_heads") ? c->num_heads : 32,
		    &c->num_kv_heads))
		return -1;
	/* Absent keys take Qwen3Config's defaults in transformers: 32 KV heads (null: one
	 * per query head, its backward-compatible reading), head_dim 128 whatever the hidden
	 * size, 32,768 positions. A null head_dim has no reading there (it fails to build). */
	if (json_is_null(json_object_get(root, "head_dim")))
		return err_set("%s: head_dim must be an integer, not null", name);
	if (get_int(root, name, "", "head_dim", 1, ENG_MAX_HEAD_DIM, 128, &c->head_dim) ||
	    get_num(root, name, "", "rms_norm_eps", MIN_RMS_EPS, MAX_RMS_EPS, 1e-6,
		    &c->rms_norm_eps) ||
	    get_int(root, name, "", "max_position_embeddings", 1, MAX_POSITIONS, 32768,
		    &c->max_position_embeddings))
		return -1;
	json_t *tie = json_object_get(root, "tie_word_embeddings");
	if (tie && !json_is_boolean(tie) && !json_is_null(tie))
		return err_set("%s: tie_word_embeddings must be true or false", name);
	c->tie_word_embeddings = json_is_true(tie); /* Qwen3Config defaults to false */
	if (parse_dtype(root, name, c) || parse_rope(root, name, c) ||
	    parse_token_id(root, name, "bos_token_id", c->vocab_size, &c->bos_token_id) ||
	    parse_token_id(root, name, "eos_token_id", c->vocab_size, &c->eos_token_id))
		return -1;
	return 0;
}

int cfg_check_consistency(const struct eng_config *c, const char *name)
{
	if (c->num_heads % c->num_kv_heads)
		return err_set("%s: num_attention_heads %d is not a multiple of "
			       "num_key_value_heads %d",
			       name, c->num_heads, c->num_kv_heads);
	if (c->head_dim % 2)
		return err_set("%s: head_dim %d must be even (rotary embedding pairs)", name,
			       c->head_dim);
	/* YaRN's correction range divides by ln(rope_theta) (transformers: a ZeroDivisionError) */
	if (!strcmp(c->rope_type, "yarn") && c->rope_theta == 1)
		return err_set("%s: rope_theta 1 leaves YaRN's correction range undefined (it "
			       "divides by ln rope_theta)",
			       name);
	if (c->head_dim > ENG_MAX_HEAD_DIM) /* a GGUF without key_length: hidden / heads */
		return err_set("%s: head_dim %d is out of range [1, %d]", name, c->head_dim,
			       ENG_MAX_HEAD_DIM);
	struct eng_param_counts pc;
	eng_count_params(c, &pc);
	if (pc.total > MAX_PARAMS)
		return err_set("%s: the config implies %lld parameters (more than %lld)", name,
			       (long long)pc.total, MAX_PARAMS);
	return 0;
}

int eng_config_parse(const char *json, size_t len, const char *name, struct eng_config *cfg)
{
	json_error_t je;
	memset(cfg, 0, sizeof *cfg);
	json_t *root = json_loadb(json, len, JSON_REJECT_DUPLICATES, &je);
	if (!root)
		return err_set("%s: invalid JSON at line %d column %d: %s", name, je.line,
			       je.column, je.text);
	int rc = -1;
	if (!json_is_object(root))
		err_set("%s: the top level must be a JSON object", name);
	else if (check_architecture(root, name) == 0 && parse_fields(root, name, cfg) == 0 &&
		 cfg_check_consistency(cfg, name) == 0)
		rc = 0;
	json_decref(root);
	return rc;
}

int eng_config_load(const char *dir, struct eng_config *cfg)
{
	char *path = fio_join(dir, "config.json");
	size_t len;
	if (!path)
		return err_set("out of memory");
	/* Qwen3's is 1 KB; the values cap bounds what jansson may allocate (~15 MB) */
	static const struct jlim lim = {.max_depth = 32, .max_values = 1 << 16};
	char *text = jlim_read_file(path, 16u << 20, &lim, &len);
	int rc = text ? eng_config_parse(text, len, path, cfg) : -1;
	free(text);
	free(path);
	return rc;
}

void eng_count_params(const struct eng_config *c, struct eng_param_counts *p)
{
	int64_t L = c->num_layers, h = c->hidden_size, hd = c->head_dim;
	int64_t q = (int64_t)c->num_heads * hd, kv = (int64_t)c->num_kv_heads * hd;
	int64_t inter = c->intermediate_size;
	memset(p, 0, sizeof *p);
	p->embedding = (int64_t)c->vocab_size * h;
	p->attn_q = L * q * h;
	p->attn_k = L * kv * h;
	p->attn_v = L * kv * h;
	p->attn_o = L * h * q;
	p->qk_norm = L * 2 * hd;
	p->layer_norms = L * 2 * h;
	p->mlp_gate = L * inter * h;
	p->mlp_up = L * inter * h;
	p->mlp_down = L * h * inter;
	p->final_norm = h;
	p->lm_head = c->tie_word_embeddings ? 0 : p->embedding;
	p->non_embedding = p->attn_q + p->attn_k + p->attn_v + p->attn_o + p->qk_norm +
			   p->layer_norms + p->mlp_gate + p->mlp_up + p->mlp_down + p->final_norm;
	p->total = p->non_embedding + p->embedding + p->lm_head;
}

size_t eng_kv_bytes_per_token(const struct eng_config *c, size_t elem_size)
{
	/* K and V, every layer, every KV head */
	return 2 * (size_t)c->num_layers * (size_t)c->num_kv_heads * (size_t)c->head_dim *
	       elem_size;
}

size_t eng_decode_weight_bytes(const struct eng_config *c, size_t weight_elem_size)
{
	struct eng_param_counts p;
	eng_count_params(c, &p);
	/* every layer matrix and norm once, the whole lm_head (the embedding matrix
	 * when tied), and one embedding row for the input token */
	int64_t elems = p.non_embedding + p.embedding + c->hidden_size;
	return (size_t)elems * weight_elem_size;
}
