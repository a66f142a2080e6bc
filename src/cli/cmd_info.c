/* cmd_info.c — `qwenchat info`: what a model is (config), what it holds
 * (parameters and bytes by component) and what it will cost (decode bytes per
 * token, KV cache, memory plan for the CPU and CUDA backends). */
#include "engine/engine.h"
#include "src/cli/cli.h"
#include "src/cli/wrap.h"
#include "src/cli/commands.h"
#include "src/cli/env.h"
#include "src/base/term.h"
#include "src/base/units.h"
#include "src/base/err.h"
#include "src/hub/hub.h"
#include "src/hub/loader.h"

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <errno.h>
#include <string.h>
#include <unistd.h>

/* The engine's default KV capacity (engine.h: eng_options.ctx = 0). */
#define DEFAULT_CTX_CAP ENG_DEFAULT_CTX_MAX
/* Prefill works on chunks of positions; the scratch estimate assumes this many. */
#define SCRATCH_CHUNK   512

enum info_key { OPT_JSON = CLI_OWN, OPT_CONFIG_ONLY };

static const struct cli_opt info_opts[] = {
	{"json", OPT_JSON, NULL, "one JSON object on stdout instead of the table"},
	{"config-only", OPT_CONFIG_ONLY, NULL,
	 "use config.json alone (no safetensors needed; a GGUF file is always opened: its weights "
	 "are mapped, not read)"},
	{0},
};

/* info computes its figures at --ctx without the engine's memory cap */
static const struct cli_opt info_shared_help[] = {
	{"ctx", 0, NULL,
	 "context of the KV cache figures (default:\n"
	 "min(the model's context, 32768))"},
	{0},
};

static const struct cli_command info_cmd = {
	.name = "info",
	.synopsis = "-m MODEL [--ctx N] [--json] [--config-only]",
	.about = "Shows a model's configuration, its parameters and bytes by component, the\n"
		 "bytes read per decoded token, the KV cache size and a memory plan for the\n"
		 "CPU and CUDA backends. --ctx sets the context of the KV cache figures (default:\n"
		 "min(the model's context, 32768), like the engine before its memory cap). The\n"
		 "model's context is max_position_embeddings or, with YaRN, its factor times\n"
		 "original_max_position_embeddings where that is more.\n",
	.groups = CLI_MODEL | CLI_CTX,
	.opts = info_opts,
	.shared_help = info_shared_help,
};

struct info {
	const char *dir;
	const struct eng_model *m; /* when loaded: bytes come from the tensors as stored */
	bool gguf;                 /* opened from a GGUF file */
	struct eng_type_count types[ENG_DTYPE_COUNT];
	size_t file_bytes;
	double bpw; /* bits per weight of the tensors as stored */
	struct eng_config cfg;
	struct eng_param_counts pc;
	bool loaded;         /* safetensors opened and every tensor bound */
	size_t mapped_bytes; /* eng_model_weight_bytes when loaded */
	size_t es;           /* bytes per weight element */
	int ctx;
	bool ctx_default;
	size_t kv_tok, kv_ctx, kv_max, decode_bytes, scratch, weight_bytes;
	enum loader_pooling pooling; /* an embedding model's, as its files say */
};

/* A count in the unit that suits it: B and M with `digits` decimals (0.596B, 2.10M),
 * K with two. */
static const char *count_in(int64_t p, int digits, char *buf, size_t n)
{
	if (p == 0)
		snprintf(buf, n, "0");
	else if (p >= 100000000)
		snprintf(buf, n, "%.*fB", digits, p / 1e9);
	else if (p >= 100000)
		snprintf(buf, n, "%.*fM", digits, p / 1e6);
	else
		snprintf(buf, n, "%.2fK", p / 1e3);
	return buf;
}

static const char *human_params(int64_t p, char *buf, size_t n)
{
	return count_in(p, 3, buf, n);
}

/* 1234567 -> "1,234,567" */
static const char *grouped(int64_t v, char *buf, size_t n)
{
	char raw[32];
	int len = snprintf(raw, sizeof raw, "%lld", (long long)v), k = 0;
	for (int i = 0; i < len && k + 2 < (int)n; i++) {
		if (i && (len - i) % 3 == 0)
			buf[k++] = ',';
		buf[k++] = raw[i];
	}
	buf[k] = 0;
	return buf;
}

/* fp32 activations of a prefill chunk (residual, normed input, q, k, v,
 * attention output, two MLP halves), the attention scores of every head over
 * the whole context, and one row of logits. An estimate: the backends report
 * their real figure in `eng_get_stats`. */
static size_t scratch_estimate(const struct eng_config *c, int ctx)
{
	size_t q = (size_t)c->num_heads * (size_t)c->head_dim;
	size_t kv = (size_t)c->num_kv_heads * (size_t)c->head_dim;
	size_t per_pos =
		3 * (size_t)c->hidden_size + 2 * q + 2 * kv + 2 * (size_t)c->intermediate_size;
	size_t chunk = (size_t)(ctx < SCRATCH_CHUNK ? ctx : SCRATCH_CHUNK);
	return 4 * (per_pos * chunk + (size_t)c->num_heads * (size_t)ctx + (size_t)c->vocab_size);
}

static void compute(struct info *in, int ctx_opt)
{
	const struct eng_config *c = &in->cfg;
	eng_count_params(c, &in->pc);
	in->es = eng_dtype_size(c->dtype);
	in->ctx_default = ctx_opt == 0;
	int max = eng_max_context(c);
	in->ctx = ctx_opt ? ctx_opt : max < DEFAULT_CTX_CAP ? max : DEFAULT_CTX_CAP;
	in->kv_tok = eng_kv_bytes_per_token(c, 2);
	in->kv_ctx = in->kv_tok * (size_t)in->ctx;
	in->kv_max = in->kv_tok * (size_t)max;
	in->decode_bytes =
		in->m ? eng_model_decode_bytes(in->m) : eng_decode_weight_bytes(c, in->es);
	in->scratch = scratch_estimate(c, in->ctx);
	in->weight_bytes = in->loaded ? in->mapped_bytes : (size_t)in->pc.total * in->es;
}

struct row {
	const char *name;
	int64_t params;
	double bytes;
};

/* Bytes of one part of every layer (offset of the eng_tensor in struct eng_layer). */
static double layer_bytes(const struct eng_model *m, size_t off, size_t off2)
{
	const struct eng_weights *w = eng_model_weights(m);
	double sum = 0;
	for (int l = 0; l < eng_model_config(m)->num_layers; l++) {
		const char *L = (const char *)&w->layers[l];
		sum += (double)((const struct eng_tensor *)(L + off))->nbytes;
		if (off2 != off)
			sum += (double)((const struct eng_tensor *)(L + off2))->nbytes;
	}
	return sum;
}

/* The stored bytes of each row: the tensors' own when loaded (a GGUF mixes types),
 * else parameters x the config's dtype. */
static void row_bytes(const struct info *in, struct row *r, int n)
{
	if (!in->m) {
		for (int i = 0; i < n; i++)
			r[i].bytes = (double)r[i].params * (double)in->es;
		return;
	}
	const struct eng_weights *w = eng_model_weights(in->m);
#define PART(a, b) layer_bytes(in->m, offsetof(struct eng_layer, a), offsetof(struct eng_layer, b))
	double b[] = {(double)w->embed.nbytes,
		      PART(wq, wq),
		      PART(wk, wk),
		      PART(wv, wv),
		      PART(wo, wo),
		      PART(q_norm, k_norm),
		      PART(input_norm, post_norm),
		      PART(w_gate, w_gate),
		      PART(w_up, w_up),
		      PART(w_down, w_down),
		      (double)w->final_norm.nbytes,
		      in->cfg.tie_word_embeddings ? 0 : (double)w->lm_head.nbytes};
#undef PART
	for (int i = 0; i < n; i++)
		r[i].bytes = b[i];
}

static int rows_of(const struct info *in, struct row *r)
{
	const struct eng_param_counts *p = &in->pc;
	int n = 0;
	r[n++] = (struct row){"embedding", p->embedding, 0};
	r[n++] = (struct row){"attention q_proj", p->attn_q, 0};
	r[n++] = (struct row){"attention k_proj", p->attn_k, 0};
	r[n++] = (struct row){"attention v_proj", p->attn_v, 0};
	r[n++] = (struct row){"attention o_proj", p->attn_o, 0};
	r[n++] = (struct row){"q_norm + k_norm", p->qk_norm, 0};
	r[n++] = (struct row){"layer norms", p->layer_norms, 0};
	r[n++] = (struct row){"mlp gate_proj", p->mlp_gate, 0};
	r[n++] = (struct row){"mlp up_proj", p->mlp_up, 0};
	r[n++] = (struct row){"mlp down_proj", p->mlp_down, 0};
	r[n++] = (struct row){"final norm", p->final_norm, 0};
	r[n++] = (struct row){in->cfg.tie_word_embeddings ? "lm_head (tied: embedding)" : "lm_head",
			      p->lm_head, 0};
	row_bytes(in, r, n);
	return n;
}

/* Whether the tensors are of more than one type (norms in F32 beside BF16 matrices). */
static bool mixed_types(const struct info *in)
{
	int kinds = 0;
	for (int t = 0; t < ENG_DTYPE_COUNT; t++)
		kinds += in->types[t].tensors > 0;
	return kinds > 1;
}

static void print_config(FILE *f, const struct info *in)
{
	const struct eng_config *c = &in->cfg;
	fprintf(f, "model         %s\n", in->dir);
	fprintf(f, "architecture  Qwen3ForCausalLM (dense), weights %s%s, %s\n",
		in->gguf || mixed_types(in) ? "mostly " : "", eng_dtype_name(c->dtype),
		in->gguf     ? "GGUF loaded and checked"
		: in->loaded ? "safetensors loaded and checked"
			     : "from config.json only");
	fprintf(f, "shape         vocab %d, hidden %d, intermediate %d, %d layers\n", c->vocab_size,
		c->hidden_size, c->intermediate_size, c->num_layers);
	fprintf(f,
		"attention     %d query heads, %d KV heads (GQA %d:1), head_dim %d "
		"(q width %d%s hidden %d)\n",
		c->num_heads, c->num_kv_heads, c->num_heads / c->num_kv_heads, c->head_dim,
		c->num_heads * c->head_dim,
		c->num_heads * c->head_dim == c->hidden_size ? " =" : " !=", c->hidden_size);
	fprintf(f, "rope          theta %.10g, ", c->rope_theta);
	if (!strcmp(c->rope_type, "yarn")) {
		int orig = c->rope_original_max_position > 0 ? c->rope_original_max_position
							     : c->max_position_embeddings;
		fprintf(f, "YaRN factor %g over %d positions (cos/sin scale %.4g, beta %g/%g)",
			c->rope_factor, orig, eng_rope_attention_factor(c), c->rope_beta_fast,
			c->rope_beta_slow);
	} else if (!strcmp(c->rope_type, "linear"))
		fprintf(f, "linear scaling, factor %g", c->rope_factor);
	else
		fprintf(f, "no scaling");
	fprintf(f, ", max_position_embeddings %d", c->max_position_embeddings);
	if (eng_max_context(c) != c->max_position_embeddings)
		fprintf(f, ",\n              context %d (%s)", eng_max_context(c),
			eng_max_context_source(c));
	fprintf(f, "\n");
	/* transformers 4.51-4.55 took the ratio instead: say so where the two differ
	 * (Qwen3's recipe, 4 over 32768 with 40960) */
	if (!strcmp(c->rope_type, "yarn") && c->rope_original_max_position > 0 &&
	    (double)c->max_position_embeddings / c->rope_original_max_position != c->rope_factor)
		fprintf(f,
			"              (the factor as given, as transformers 4.56+, vLLM and "
			"llama.cpp take it;\n              transformers 4.51-4.55 took "
			"max_position_embeddings / original_max_position_embeddings = %g)\n",
			(double)c->max_position_embeddings / c->rope_original_max_position);
	fprintf(f, "other         rms_norm_eps %g, tie_word_embeddings %s, bos %d, eos %d\n",
		c->rms_norm_eps, c->tie_word_embeddings ? "true" : "false", c->bos_token_id,
		c->eos_token_id);
	if (in->pooling != LOADER_POOL_NONE)
		fprintf(f, "pooling       %s (an embedding model: qwenchat embed%s)\n",
			loader_pooling_name(in->pooling),
			in->pooling == LOADER_POOL_LAST ? ", serve's /v1/embeddings"
							: " computes last-token pooling only");
}

static void print_table(FILE *f, const struct info *in)
{
	struct row r[16];
	int n = rows_of(in, r);
	char a[32], b[32], d[32], e[32];
	snprintf(d, sizeof d, "bytes (%s)", in->gguf ? "as stored" : eng_dtype_name(in->cfg.dtype));
	fprintf(f, "\n%-27s %16s %9s %21s\n", "component", "parameters", "", d);
	for (int i = 0; i < n; i++)
		fprintf(f, "%-27s %16s %9s %10s %10s\n", r[i].name,
			grouped(r[i].params, a, sizeof a), human_params(r[i].params, b, sizeof b),
			units_bytes(r[i].bytes, d, sizeof d),
			units_ibytes(r[i].bytes, e, sizeof e));
	double total = 0, embed = r[0].bytes + r[n - 1].bytes;
	for (int i = 0; i < n; i++)
		total += r[i].bytes;
	fprintf(f, "%-27s %16s %9s %10s %10s\n", "total", grouped(in->pc.total, a, sizeof a),
		human_params(in->pc.total, b, sizeof b), units_bytes(total, d, sizeof d),
		units_ibytes(total, e, sizeof e));
	fprintf(f, "%-27s %16s %9s %10s %10s\n", "non-embedding",
		grouped(in->pc.non_embedding, a, sizeof a),
		human_params(in->pc.non_embedding, b, sizeof b),
		units_bytes(total - embed, d, sizeof d), units_ibytes(total - embed, e, sizeof e));
}

/* A GGUF's tensors by type (a quantized file mixes them) and its size. */
static void print_gguf(FILE *f, const struct info *in)
{
	char a[32], b[32];
	fprintf(f, "file          %s (%zu bytes), %.2f bits per weight\n",
		units_bytes((double)in->file_bytes, a, sizeof a), in->file_bytes, in->bpw);
	fprintf(f, "tensor types ");
	for (int t = 0; t < ENG_DTYPE_COUNT; t++)
		if (in->types[t].tensors)
			fprintf(f, " %s: %d tensors, %s weights, %s;",
				eng_dtype_name((enum eng_dtype)t), in->types[t].tensors,
				human_params(in->types[t].weights, a, sizeof a),
				units_bytes((double)in->types[t].bytes, b, sizeof b));
	fprintf(f, "\n");
}

static void print_costs(FILE *f, const struct info *in)
{
	char a[32], b[32], c[32], d[32];
	if (in->gguf)
		fprintf(f,
			"\nsummary       %s parameters, %s in GGUF (%.2f bits per weight), %s of "
			"KV cache per token (bf16)\n",
			count_in(in->pc.total, 2, c, sizeof c),
			units_bytes((double)in->weight_bytes, a, sizeof a), in->bpw,
			units_ibytes((double)in->kv_tok, b, sizeof b));
	else
		fprintf(f,
			"\nsummary       %s parameters, %s in %s, %s of KV cache per token "
			"(bf16)\n",
			count_in(in->pc.total, 2, c, sizeof c),
			units_bytes((double)in->pc.total * (double)in->es, a, sizeof a),
			eng_dtype_name(in->cfg.dtype),
			units_ibytes((double)in->kv_tok, b, sizeof b));
	if (in->loaded)
		fprintf(f, "mapped        %s of tensor data (%zu bytes), read in place\n",
			units_bytes((double)in->mapped_bytes, a, sizeof a), in->mapped_bytes);
	fprintf(f,
		"decode reads  %s of weights per token (%zu bytes: every matrix once, "
		"lm_head, one embedding row)\n",
		units_bytes((double)in->decode_bytes, a, sizeof a), in->decode_bytes);
	fprintf(f,
		"KV cache      %zu bytes (%s) per token in bf16; %s at ctx %d%s; %s at "
		"the model's %d positions\n",
		in->kv_tok, units_ibytes((double)in->kv_tok, b, sizeof b),
		units_ibytes((double)in->kv_ctx, c, sizeof c), in->ctx,
		in->ctx_default ? " (default: min(the model's context, 32768))" : " (--ctx)",
		units_ibytes((double)in->kv_max, d, sizeof d), eng_max_context(&in->cfg));
	fprintf(f,
		"\nmemory plan at ctx %d (scratch is an estimate: fp32 activations for %d "
		"positions, scores, logits)\n",
		in->ctx, SCRATCH_CHUNK);
	size_t tot = in->weight_bytes + in->kv_ctx + in->scratch;
	units_ibytes((double)in->weight_bytes, a, sizeof a);
	units_ibytes((double)in->kv_ctx, b, sizeof b);
	units_ibytes((double)in->scratch, c, sizeof c);
	units_ibytes((double)tot, d, sizeof d);
	/* The CPU's KV pages come into memory as positions first arrive (2 MB at a time). */
	fprintf(f,
		"  cpu   weights %s mmapped (page cache, not copied) + KV up to %s (in memory as "
		"the context fills) + scratch %s = at most %s of RAM\n",
		a, b, c, d);
	fprintf(f, "  cuda  weights %s uploaded + KV %s + scratch %s = %s of GPU memory\n", a, b, c,
		d);
}

/* The report; on a terminal its lines wider than it are broken at spaces, the rest
 * under the values' column (a terminal's own wrap splits words and numbers). */
static int print_text(const struct info *in)
{
	int cols = term_columns(STDOUT_FILENO);
	char *text = NULL;
	size_t len = 0;
	FILE *f = cols >= 40 ? open_memstream(&text, &len) : NULL;
	FILE *out = f ? f : stdout;
	print_config(out, in);
	if (in->gguf)
		print_gguf(out, in);
	print_table(out, in);
	print_costs(out, in);
	if (f && fclose(f) == 0)
		wrap_lines_width(stdout, text, 14, cols); /* 14: "KV cache      " */
	else if (f)                                       /* out of memory: as it is */
		fputs(text ? text : "", stdout);
	free(text);
	return fflush(stdout) == 0 && !ferror(stdout) ? EXIT_OK : EXIT_RUNTIME;
}

static json_t *jint(int64_t v)
{
	return json_integer((json_int_t)v);
}

static json_t *memory_json(const struct info *in)
{
	json_t *m = json_object();
	size_t tot = in->weight_bytes + in->kv_ctx + in->scratch;
	for (int i = 0; i < 2; i++) {
		json_t *b = json_object();
		json_object_set_new(b, "weights", jint((int64_t)in->weight_bytes));
		json_object_set_new(b, "kv", jint((int64_t)in->kv_ctx));
		json_object_set_new(b, "scratch_estimate", jint((int64_t)in->scratch));
		json_object_set_new(b, "total", jint((int64_t)tot));
		json_object_set_new(m, i ? "cuda" : "cpu", b);
	}
	return m;
}

/* The fewest significant digits (at least `least`) that print every real in v so
 * that it reads back the same: 1e-06 rather than 9.9999999999999995e-07. */
static int real_digits(json_t *v, int least)
{
	if (json_is_real(v)) {
		double x = json_real_value(v);
		char buf[40];
		int d = least;
		for (; d < 17; d++) {
			snprintf(buf, sizeof buf, "%.*g", d, x);
			if (strtod(buf, NULL) == x)
				break;
		}
		return d;
	}
	const char *key;
	json_t *item;
	size_t i;
	if (json_is_object(v))
		json_object_foreach(v, key, item) least = real_digits(item, least);
	else if (json_is_array(v))
		json_array_foreach(v, i, item) least = real_digits(item, least);
	return least;
}

static int print_json(const struct info *in)
{
	const struct eng_config *c = &in->cfg;
	json_t *o = json_object(), *cfg = json_object(), *params = json_object();
	json_object_set_new(o, "model", json_string(in->dir));
	json_object_set_new(o, "architecture", json_string("Qwen3ForCausalLM"));
	json_object_set_new(o, "loaded", json_boolean(in->loaded));
	json_object_set_new(o, "pooling",
			    in->pooling != LOADER_POOL_NONE
				    ? json_string(loader_pooling_name(in->pooling))
				    : json_null());
	json_object_set_new(cfg, "vocab_size", jint(c->vocab_size));
	json_object_set_new(cfg, "hidden_size", jint(c->hidden_size));
	json_object_set_new(cfg, "intermediate_size", jint(c->intermediate_size));
	json_object_set_new(cfg, "num_hidden_layers", jint(c->num_layers));
	json_object_set_new(cfg, "num_attention_heads", jint(c->num_heads));
	json_object_set_new(cfg, "num_key_value_heads", jint(c->num_kv_heads));
	json_object_set_new(cfg, "head_dim", jint(c->head_dim));
	json_object_set_new(cfg, "rms_norm_eps", json_real(c->rms_norm_eps));
	json_object_set_new(cfg, "rope_theta", json_real(c->rope_theta));
	json_object_set_new(cfg, "rope_type", json_string(c->rope_type));
	json_object_set_new(cfg, "rope_factor", json_real(c->rope_factor));
	json_object_set_new(cfg, "rope_original_max_position", jint(c->rope_original_max_position));
	json_object_set_new(cfg, "rope_attention_factor", json_real(eng_rope_attention_factor(c)));
	json_object_set_new(cfg, "rope_beta_fast", json_real(c->rope_beta_fast));
	json_object_set_new(cfg, "rope_beta_slow", json_real(c->rope_beta_slow));
	json_object_set_new(cfg, "max_position_embeddings", jint(c->max_position_embeddings));
	json_object_set_new(cfg, "max_context", jint(eng_max_context(c)));
	json_object_set_new(cfg, "tie_word_embeddings", json_boolean(c->tie_word_embeddings));
	json_object_set_new(cfg, "dtype", json_string(eng_dtype_name(c->dtype)));
	json_object_set_new(cfg, "bos_token_id", jint(c->bos_token_id));
	json_object_set_new(cfg, "eos_token_id", jint(c->eos_token_id));
	json_object_set_new(o, "config", cfg);
	struct row r[16];
	int n = rows_of(in, r);
	static const char *keys[] = {"embedding", "attn_q",   "attn_k",      "attn_v",
				     "attn_o",    "qk_norm",  "layer_norms", "mlp_gate",
				     "mlp_up",    "mlp_down", "final_norm",  "lm_head"};
	for (int i = 0; i < n; i++)
		json_object_set_new(params, keys[i], jint(r[i].params));
	json_object_set_new(params, "total", jint(in->pc.total));
	json_object_set_new(params, "non_embedding", jint(in->pc.non_embedding));
	json_object_set_new(o, "params", params);
	json_object_set_new(o, "format", json_string(in->gguf ? "gguf" : "safetensors"));
	if (in->gguf) {
		json_t *types = json_object();
		for (int t = 0; t < ENG_DTYPE_COUNT; t++) {
			if (!in->types[t].tensors)
				continue;
			json_t *e = json_object();
			json_object_set_new(e, "tensors", jint(in->types[t].tensors));
			json_object_set_new(e, "weights", jint(in->types[t].weights));
			json_object_set_new(e, "bytes", jint((int64_t)in->types[t].bytes));
			json_object_set_new(types, eng_dtype_name((enum eng_dtype)t), e);
		}
		json_object_set_new(o, "tensor_types", types);
		json_object_set_new(o, "file_bytes", jint((int64_t)in->file_bytes));
		json_object_set_new(o, "bits_per_weight", json_real(in->bpw));
	}
	json_object_set_new(o, "weight_bytes", jint((int64_t)in->weight_bytes));
	json_object_set_new(o, "decode_bytes_per_token", jint((int64_t)in->decode_bytes));
	json_object_set_new(o, "kv_bytes_per_token", jint((int64_t)in->kv_tok));
	json_object_set_new(o, "ctx", jint(in->ctx));
	json_object_set_new(o, "kv_bytes_at_ctx", jint((int64_t)in->kv_ctx));
	json_object_set_new(o, "kv_bytes_at_max_position", jint((int64_t)in->kv_max));
	json_object_set_new(o, "memory", memory_json(in));
	int rc = json_dumpf(o, stdout, JSON_INDENT(2) | JSON_REAL_PRECISION(real_digits(o, 1))) ==
			 0 &&
		 fputc('\n', stdout) != EOF;
	json_decref(o);
	return rc ? EXIT_OK : EXIT_RUNTIME;
}

struct info_args {
	bool json, config_only;
};

static int info_opt(void *user, int key, const char *arg)
{
	struct info_args *a = user;
	(void)arg;
	switch (key) {
	case OPT_JSON: a->json = true; return 0;
	case OPT_CONFIG_ONLY: a->config_only = true; return 0;
	}
	return cli_unhandled(&info_cmd, key);
}

/* A GGUF carries its tokenizer; a directory may have a tokenizer.json. */
static bool has_tokenizer(const char *dir)
{
	if (eng_is_gguf(dir))
		return true;
	char path[4096];
	snprintf(path, sizeof path, "%s/tokenizer.json", dir);
	return access(path, F_OK) == 0;
}

int cmd_info(int argc, char **argv)
{
	struct cli_common com;
	struct info_args ia = {false, false};
	int r = cli_parse(&info_cmd, argc, argv, &com, info_opt, &ia, NULL);
	if (r)
		return r == CLI_DONE ? EXIT_OK : r;
	bool json = ia.json, config_only = ia.config_only;
	struct hub_env hub;
	cli_env_hub(&hub);

	struct info in = {0};
	char *dir = hub_resolve(&hub, com.model);
	if (!dir) {
		cli_error("%s", err_msg());
		return EXIT_RUNTIME;
	}
	in.dir = dir;
	struct eng_model *m = NULL;
	int rc = EXIT_OK;
	/* a GGUF is always opened: its config needs its tensors' shapes (and mapping
	 * reads nothing) */
	if (config_only && !eng_is_gguf(dir)) {
		if (eng_config_load(dir, &in.cfg) < 0)
			rc = EXIT_RUNTIME;
	} else if ((m = eng_model_open(dir))) {
		in.cfg = *eng_model_config(m);
		in.loaded = true;
		in.m = m;
		in.mapped_bytes = eng_model_weight_bytes(m);
		in.gguf = eng_model_gguf(m) != NULL;
		in.file_bytes = eng_model_file_bytes(m);
		eng_model_type_counts(m, in.types);
		int64_t weights = 0;
		for (int t = 0; t < ENG_DTYPE_COUNT; t++)
			weights += in.types[t].weights;
		in.bpw = weights ? 8.0 * (double)in.mapped_bytes / (double)weights : 0;
		/* the tokenizer beside the weights, when it loads, must fit them; one that
		 * does not load leaves the weights' figures, said to be without it */
		bool has = has_tokenizer(dir);
		struct tok *t = has ? loader_tokenizer(dir) : NULL;
		/* an embedding model may have fewer rows than tokenizer ids (serve's rule) */
		if (loader_pooling(dir, &in.pooling) ||
		    (t && in.pooling == LOADER_POOL_NONE &&
		     loader_check_vocab(t, in.cfg.vocab_size, dir))) {
			rc = EXIT_RUNTIME;
		} else if (!t && has) {
			char msg[1200];
			snprintf(msg, sizeof msg,
				 "%s; the weights are checked, but chat, run and tokenize refuse "
				 "this model",
				 err_msg());
			cli_notice(msg);
			err_clear();
		}
		tok_free(t);
	} else {
		rc = EXIT_RUNTIME;
	}
	if (rc == EXIT_OK && eng_check_context(&in.cfg, com.ctx)) /* as every engine refuses it */
		rc = EXIT_RUNTIME;
	if (rc != EXIT_OK) {
		cli_error("%s", err_msg());
	} else {
		compute(&in, com.ctx);
		if (json) {
			rc = print_json(&in);
		} else {
			rc = print_text(&in);
		}
		if (rc != EXIT_OK)
			cli_error("standard output: write failed: %s",
				  strerror(errno ? errno : EIO));
	}
	eng_model_free(m);
	free(dir);
	return rc;
}
