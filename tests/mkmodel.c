/* mkmodel.c — writes a deterministic random-weight Qwen3 model directory of any
 * shape (config.json, generation_config.json, bf16/f16/f32 safetensors, single
 * file or sharded) for tests and benchmarks. Usage: tests/mkmodel --help. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

enum dtype { DT_BF16, DT_F16, DT_F32 };

struct opts {
	long vocab, hidden, inter, layers, heads, kv_heads, head_dim, max_pos;
	double theta, eps, yarn_factor, linear_factor, std;
	long yarn_orig;
	double yarn_opt
		[5]; /* attention_factor, beta_fast, beta_slow, mscale, mscale_all_dim; -1: absent */
	bool tie, config_only;
	long bos, eos, shards;
	uint64_t seed;
	enum dtype dtype;
	const char *tokenizer, *out;
};

struct tensor {
	char name[96];
	int ndim;
	int64_t shape[2];
	bool norm; /* 1 + N(0, std) instead of N(0, std) */
	int shard;
	uint64_t offset; /* within its shard's data section */
};

static const char *dtype_st[] = {"BF16", "F16", "F32"};
static const char *dtype_torch[] = {"bfloat16", "float16", "float32"};
static const int dtype_size[] = {2, 2, 4};

static void die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
static void die(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fputs("mkmodel: ", stderr);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
	exit(1);
}

static uint64_t splitmix64(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ULL);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

/* Inverse of the standard normal CDF (Acklam's rational approximation,
 * relative error < 1.2e-9: far below bf16 resolution). */
static double norm_quantile(double p)
{
	static const double a[] = {-3.969683028665376e+01, 2.209460984245205e+02,
				   -2.759285104469687e+02, 1.383577518672690e+02,
				   -3.066479806614716e+01, 2.506628277459239e+00};
	static const double b[] = {-5.447609879822406e+01, 1.615858368580409e+02,
				   -1.556989798598866e+02, 6.680131188771972e+01,
				   -1.328068155288572e+01};
	static const double c[] = {-7.784894002430293e-03, -3.223964580411365e-01,
				   -2.400758277161838e+00, -2.549732539343734e+00,
				   4.374664141464968e+00,  2.938163982698783e+00};
	static const double d[] = {7.784695709041462e-03, 3.224671290700398e-01,
				   2.445134137142996e+00, 3.754408661907416e+00};
	double q, r;
	if (p < 0.02425) {
		q = sqrt(-2 * log(p));
		return (((((c[0] * q + c[1]) * q + c[2]) * q + c[3]) * q + c[4]) * q + c[5]) /
		       ((((d[0] * q + d[1]) * q + d[2]) * q + d[3]) * q + 1);
	}
	if (p > 1 - 0.02425)
		return -norm_quantile(1 - p);
	q = p - 0.5;
	r = q * q;
	return (((((a[0] * r + a[1]) * r + a[2]) * r + a[3]) * r + a[4]) * r + a[5]) * q /
	       (((((b[0] * r + b[1]) * r + b[2]) * r + b[3]) * r + b[4]) * r + 1);
}

static uint16_t f32_to_bf16(float f)
{
	uint32_t u;
	memcpy(&u, &f, 4);
	u += 0x7fff + ((u >> 16) & 1); /* round to nearest even (values are finite) */
	return (uint16_t)(u >> 16);
}

static uint16_t f32_to_f16(float f)
{
	/* Our values lie in [-1, 2.2], well inside the f16 normal range or zero-ish;
	 * subnormal results are flushed to zero, which is harmless for test weights. */
	uint32_t u, sign, mant;
	int exp;
	memcpy(&u, &f, 4);
	sign = (u >> 16) & 0x8000;
	exp = (int)((u >> 23) & 0xff) - 127 + 15;
	mant = u & 0x7fffff;
	if (exp <= 0)
		return (uint16_t)sign;
	uint32_t h = sign | ((uint32_t)exp << 10) | (mant >> 13);
	uint32_t rest = mant & 0x1fff;
	if (rest > 0x1000 || (rest == 0x1000 && (h & 1)))
		h++;
	return (uint16_t)h;
}

/* Sampling is a lookup in a 65536-entry table of normal quantiles: one 64-bit
 * random number gives four samples. Box-Muller cost ~6 s for the 0.6B shape;
 * the table brings the whole write to about the speed of the disk. At bf16
 * resolution the table is the N(0, std) distribution (tails cut at 4.4 sigma). */
#define TABLE_N 65536
static unsigned char table_w[TABLE_N * 4], table_n[TABLE_N * 4];

static void put_value(unsigned char *dst, int i, float v, enum dtype dt)
{
	if (dt == DT_F32) {
		memcpy(dst + 4 * (size_t)i, &v, 4);
	} else {
		uint16_t h = dt == DT_BF16 ? f32_to_bf16(v) : f32_to_f16(v);
		memcpy(dst + 2 * (size_t)i, &h, 2);
	}
}

static void build_tables(double std, enum dtype dt)
{
	for (int i = 0; i < TABLE_N; i++) {
		double z = norm_quantile((i + 0.5) / TABLE_N) * std;
		put_value(table_w, i, (float)z, dt);
		put_value(table_n, i, (float)(1.0 + z), dt);
	}
}

/* Buffered stream output: the model is never held in memory. */
struct out {
	int fd;
	const char *path;
	unsigned char *buf;
	size_t len, cap;
};

static void out_flush(struct out *o)
{
	size_t off = 0;
	while (off < o->len) {
		ssize_t w = write(o->fd, o->buf + off, o->len - off);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			die("%s: write: %s", o->path, strerror(errno));
		off += (size_t)w;
	}
	o->len = 0;
}

static void out_bytes(struct out *o, const void *p, size_t n)
{
	const unsigned char *s = p;
	while (n) {
		size_t k = o->cap - o->len < n ? o->cap - o->len : n;
		memcpy(o->buf + o->len, s, k);
		o->len += k;
		s += k;
		n -= k;
		if (o->len == o->cap)
			out_flush(o);
	}
}

static uint64_t fnv1a(const char *s)
{
	uint64_t h = 0xcbf29ce484222325ULL;
	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 0x100000001b3ULL;
	return h;
}

/* Each tensor's values depend only on the seed and its name, so the sharding
 * and the order of tensors in the files never change the model. */
static void out_tensor(struct out *o, const struct tensor *t, const struct opts *op)
{
	const unsigned char *tab = t->norm ? table_n : table_w;
	size_t es = (size_t)dtype_size[op->dtype];
	uint64_t n = (uint64_t)t->shape[0] * (t->ndim == 2 ? (uint64_t)t->shape[1] : 1);
	uint64_t state = op->seed ^ fnv1a(t->name);
	uint64_t r = 0;
	for (uint64_t i = 0; i < n; i++) {
		if ((i & 3) == 0)
			r = splitmix64(&state);
		if (o->cap - o->len < es)
			out_flush(o);
		memcpy(o->buf + o->len, tab + es * (r & 0xffff), es);
		o->len += es;
		r >>= 16;
	}
}

static uint64_t tensor_bytes(const struct tensor *t, const struct opts *op)
{
	uint64_t n = (uint64_t)t->shape[0] * (t->ndim == 2 ? (uint64_t)t->shape[1] : 1);
	return n * (uint64_t)dtype_size[op->dtype];
}

static int add(struct tensor *ts, int n, const char *name, int ndim, int64_t r, int64_t c,
	       bool norm)
{
	struct tensor *t = &ts[n];
	memset(t, 0, sizeof *t);
	snprintf(t->name, sizeof t->name, "%s", name);
	t->ndim = ndim;
	t->shape[0] = r;
	t->shape[1] = c;
	t->norm = norm;
	return n + 1;
}

/* The tensors of a Qwen3ForCausalLM checkpoint, with Hugging Face's names and shapes. */
static struct tensor *list_tensors(const struct opts *o, int *count)
{
	int cap = (int)o->layers * 11 + 3, n = 0;
	struct tensor *ts = calloc((size_t)cap, sizeof *ts);
	char name[96];
	int64_t h = o->hidden, q = o->heads * o->head_dim, kv = o->kv_heads * o->head_dim;
	if (!ts)
		die("out of memory");
	n = add(ts, n, "model.embed_tokens.weight", 2, o->vocab, h, false);
	for (long l = 0; l < o->layers; l++) {
		static const struct {
			const char *s;
			int kind;
		} parts[] = {
			{"input_layernorm", 0},  {"self_attn.q_proj", 1},
			{"self_attn.k_proj", 2}, {"self_attn.v_proj", 2},
			{"self_attn.o_proj", 3}, {"self_attn.q_norm", 4},
			{"self_attn.k_norm", 4}, {"post_attention_layernorm", 0},
			{"mlp.gate_proj", 5},    {"mlp.up_proj", 5},
			{"mlp.down_proj", 6},
		};
		for (size_t p = 0; p < sizeof parts / sizeof parts[0]; p++) {
			snprintf(name, sizeof name, "model.layers.%ld.%s.weight", l, parts[p].s);
			switch (parts[p].kind) {
			case 0: n = add(ts, n, name, 1, h, 0, true); break;
			case 1: n = add(ts, n, name, 2, q, h, false); break;
			case 2: n = add(ts, n, name, 2, kv, h, false); break;
			case 3: n = add(ts, n, name, 2, h, q, false); break;
			case 4: n = add(ts, n, name, 1, o->head_dim, 0, true); break;
			case 5: n = add(ts, n, name, 2, o->inter, h, false); break;
			default: n = add(ts, n, name, 2, h, o->inter, false); break;
			}
		}
	}
	n = add(ts, n, "model.norm.weight", 1, h, 0, true);
	if (!o->tie)
		n = add(ts, n, "lm_head.weight", 2, o->vocab, h, false);
	*count = n;
	return ts;
}

/* A growable string for JSON text. */
struct str {
	char *p;
	size_t len, cap;
};

static void str_addf(struct str *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void str_addf(struct str *s, const char *fmt, ...)
{
	for (;;) {
		va_list ap;
		va_start(ap, fmt);
		int k = vsnprintf(s->p ? s->p + s->len : NULL, s->p ? s->cap - s->len : 0, fmt, ap);
		va_end(ap);
		if (k < 0)
			die("formatting failed");
		if (s->p && s->len + (size_t)k < s->cap) {
			s->len += (size_t)k;
			return;
		}
		s->cap = (s->cap + (size_t)k + 1) * 2;
		if (!(s->p = realloc(s->p, s->cap)))
			die("out of memory");
	}
}

static void write_text(const char *dir, const char *name, const char *text)
{
	char path[4096];
	snprintf(path, sizeof path, "%s/%s", dir, name);
	FILE *f = fopen(path, "w");
	if (!f || fputs(text, f) == EOF || fclose(f) != 0)
		die("%s: %s", path, strerror(errno));
}

static void shard_name(char *buf, size_t n, int shard, int shards)
{
	if (shards == 1)
		snprintf(buf, n, "model.safetensors");
	else
		snprintf(buf, n, "model-%05d-of-%05d.safetensors", shard + 1, shards);
}

/* Writes one safetensors file: 8-byte little-endian header length, the JSON
 * header padded with spaces to a multiple of 8 (so data stays aligned), data. */
static void write_shard(const struct opts *o, struct tensor *ts, int n, int shard,
			unsigned char *buf, size_t bufsize)
{
	char name[64], path[4096];
	struct str h = {0};
	uint64_t off = 0;
	shard_name(name, sizeof name, shard, (int)o->shards);
	snprintf(path, sizeof path, "%s/%s", o->out, name);
	str_addf(&h, "{\"__metadata__\":{\"format\":\"pt\"}");
	for (int i = 0; i < n; i++) {
		if (ts[i].shard != shard)
			continue;
		ts[i].offset = off;
		uint64_t nb = tensor_bytes(&ts[i], o);
		str_addf(&h, ",\"%s\":{\"dtype\":\"%s\",\"shape\":[%" PRId64, ts[i].name,
			 dtype_st[o->dtype], ts[i].shape[0]);
		if (ts[i].ndim == 2)
			str_addf(&h, ",%" PRId64, ts[i].shape[1]);
		str_addf(&h, "],\"data_offsets\":[%" PRIu64 ",%" PRIu64 "]}", off, off + nb);
		off += nb;
	}
	str_addf(&h, "}");
	while (h.len % 8)
		str_addf(&h, " ");

	struct out out = {.path = path, .buf = buf, .cap = bufsize};
	out.fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (out.fd < 0)
		die("%s: %s", path, strerror(errno));
	unsigned char len8[8];
	for (int i = 0; i < 8; i++)
		len8[i] = (unsigned char)((uint64_t)h.len >> (8 * i));
	out_bytes(&out, len8, 8);
	out_bytes(&out, h.p, h.len);
	for (int i = 0; i < n; i++)
		if (ts[i].shard == shard)
			out_tensor(&out, &ts[i], o);
	out_flush(&out);
	if (close(out.fd) != 0)
		die("%s: %s", path, strerror(errno));
	free(h.p);
}

/* Splits the tensors, in order, into o->shards files of roughly equal size. */
static void assign_shards(const struct opts *o, struct tensor *ts, int n)
{
	uint64_t total = 0, acc = 0;
	int shard = 0;
	for (int i = 0; i < n; i++)
		total += tensor_bytes(&ts[i], o);
	for (int i = 0; i < n; i++) {
		/* keep at least one tensor for each remaining shard */
		if (shard < o->shards - 1 && i > 0 &&
		    (acc >= total / (uint64_t)o->shards * (uint64_t)(shard + 1) ||
		     n - i <= o->shards - 1 - shard))
			shard++;
		ts[i].shard = shard;
		acc += tensor_bytes(&ts[i], o);
	}
}

static void write_index(const struct opts *o, const struct tensor *ts, int n)
{
	struct str s = {0};
	uint64_t total = 0;
	char name[64];
	for (int i = 0; i < n; i++)
		total += tensor_bytes(&ts[i], o);
	str_addf(&s,
		 "{\n  \"metadata\": {\n    \"total_size\": %" PRIu64 "\n  },\n"
		 "  \"weight_map\": {",
		 total);
	for (int i = 0; i < n; i++) {
		shard_name(name, sizeof name, ts[i].shard, (int)o->shards);
		str_addf(&s, "%s\n    \"%s\": \"%s\"", i ? "," : "", ts[i].name, name);
	}
	str_addf(&s, "\n  }\n}\n");
	write_text(o->out, "model.safetensors.index.json", s.p);
	free(s.p);
}

/* config.json with the fields (and their order) of the published Qwen3 configs. */
static void write_configs(const struct opts *o)
{
	struct str s = {0};
	str_addf(&s,
		 "{\n  \"architectures\": [\n    \"Qwen3ForCausalLM\"\n  ],\n"
		 "  \"attention_bias\": false,\n  \"attention_dropout\": 0.0,\n"
		 "  \"bos_token_id\": %ld,\n  \"eos_token_id\": %ld,\n  \"head_dim\": %ld,\n"
		 "  \"hidden_act\": \"silu\",\n  \"hidden_size\": %ld,\n"
		 "  \"initializer_range\": 0.02,\n  \"intermediate_size\": %ld,\n"
		 "  \"max_position_embeddings\": %ld,\n  \"max_window_layers\": %ld,\n"
		 "  \"model_type\": \"qwen3\",\n  \"num_attention_heads\": %ld,\n"
		 "  \"num_hidden_layers\": %ld,\n  \"num_key_value_heads\": %ld,\n"
		 "  \"rms_norm_eps\": %.17g,\n",
		 o->bos, o->eos, o->head_dim, o->hidden, o->inter, o->max_pos, o->layers, o->heads,
		 o->layers, o->kv_heads, o->eps);
	if (o->linear_factor > 0) {
		str_addf(&s,
			 "  \"rope_scaling\": {\n    \"rope_type\": \"linear\",\n"
			 "    \"factor\": %.17g\n  },\n",
			 o->linear_factor);
	} else if (o->yarn_factor > 0) {
		str_addf(&s,
			 "  \"rope_scaling\": {\n    \"rope_type\": \"yarn\",\n"
			 "    \"factor\": %.17g,\n    \"original_max_position_embeddings\": %ld",
			 o->yarn_factor, o->yarn_orig);
		/* the optional members, written as reals (as Hugging Face configs have them) */
		static const char *const key[] = {"attention_factor", "beta_fast", "beta_slow",
						  "mscale", "mscale_all_dim"};
		for (int i = 0; i < 5; i++)
			if (o->yarn_opt[i] >= 0)
				str_addf(&s, ",\n    \"%s\": %.17g%s", key[i], o->yarn_opt[i],
					 o->yarn_opt[i] == floor(o->yarn_opt[i]) ? ".0" : "");
		str_addf(&s, "\n  },\n");
	} else
		str_addf(&s, "  \"rope_scaling\": null,\n");
	str_addf(&s,
		 "  \"rope_theta\": %.17g,\n  \"sliding_window\": null,\n"
		 "  \"tie_word_embeddings\": %s,\n  \"torch_dtype\": \"%s\",\n"
		 "  \"transformers_version\": \"4.51.0\",\n  \"use_cache\": true,\n"
		 "  \"use_sliding_window\": false,\n  \"vocab_size\": %ld\n}\n",
		 o->theta, o->tie ? "true" : "false", dtype_torch[o->dtype], o->vocab);
	write_text(o->out, "config.json", s.p);
	s.len = 0;
	str_addf(&s,
		 "{\n  \"bos_token_id\": %ld,\n  \"do_sample\": true,\n"
		 "  \"eos_token_id\": [\n    %ld,\n    %ld\n  ],\n  \"pad_token_id\": %ld,\n"
		 "  \"temperature\": 0.6,\n  \"top_k\": 20,\n  \"top_p\": 0.95,\n"
		 "  \"transformers_version\": \"4.51.0\"\n}\n",
		 o->bos, o->eos, o->bos, o->bos);
	write_text(o->out, "generation_config.json", s.p);
	free(s.p);
}

static void copy_file(const char *from_dir, const char *to_dir, const char *name, bool need)
{
	char src[4096], dst[4096], buf[65536];
	snprintf(src, sizeof src, "%s/%s", from_dir, name);
	snprintf(dst, sizeof dst, "%s/%s", to_dir, name);
	FILE *in = fopen(src, "rb");
	if (!in) {
		if (need)
			die("%s: %s", src, strerror(errno));
		return;
	}
	FILE *out = fopen(dst, "wb");
	if (!out)
		die("%s: %s", dst, strerror(errno));
	size_t k;
	while ((k = fread(buf, 1, sizeof buf, in)) > 0)
		if (fwrite(buf, 1, k, out) != k)
			die("%s: %s", dst, strerror(errno));
	if (ferror(in) || fclose(out) != 0)
		die("copying %s: %s", src, strerror(errno));
	fclose(in);
}

static const char usage[] =
	"usage: mkmodel --out DIR [options]\n"
	"Writes a deterministic random-weight Qwen3 model (Hugging Face layout).\n"
	"  --preset NAME             published shape: 0.6B 1.7B 4B 8B 14B 32B (flags after it "
	"override)\n"
	"  --vocab-size N            (default 1024)\n"
	"  --hidden-size N           (default 64)\n"
	"  --intermediate-size N     (default 128)\n"
	"  --layers N                num_hidden_layers (default 2)\n"
	"  --heads N                 num_attention_heads (default 4)\n"
	"  --kv-heads N              num_key_value_heads (default 2)\n"
	"  --head-dim N              (default 16)\n"
	"  --rope-theta X            (default 1000000)\n"
	"  --rms-norm-eps X          (default 1e-6)\n"
	"  --max-position N          max_position_embeddings (default 40960)\n"
	"  --tie | --no-tie          tie_word_embeddings (default tied)\n"
	"  --linear-factor X         rope_scaling linear factor (default: no rope_scaling)\n"
	"  --yarn-factor X           rope_scaling YaRN factor (default: no rope_scaling)\n"
	"  --yarn-original-max N     YaRN original_max_position_embeddings (default 32768)\n"
	"  --yarn-attention-factor X, --yarn-beta-fast X, --yarn-beta-slow X,\n"
	"  --yarn-mscale X, --yarn-mscale-all-dim X\n"
	"                            YaRN's optional members (default: absent)\n"
	"  --bos-id N, --eos-id N    (default 151643/151645, or vocab-2/vocab-1 for small vocabs)\n"
	"  --dtype bf16|f16|f32      (default bf16)\n"
	"  --std X                   weight standard deviation (default 0.02; norms 1 + N(0, X))\n"
	"  --seed N                  (default 1)\n"
	"  --shards N                write N shards + model.safetensors.index.json (default 1)\n"
	"  --tokenizer DIR           copy DIR/tokenizer.json (and tokenizer_config.json)\n"
	"  --config-only             write config.json and generation_config.json only\n";

struct preset {
	const char *name;
	long hidden, inter, layers, heads;
	bool tie;
};

/* From the published config.json of each Qwen/Qwen3-* repository (all: vocab
 * 151936, 8 KV heads, head_dim 128, rope_theta 1e6, eps 1e-6, 40960 positions). */
static const struct preset presets[] = {
	{"0.6B", 1024, 3072, 28, 16, true},  {"1.7B", 2048, 6144, 28, 16, true},
	{"4B", 2560, 9728, 36, 32, true},    {"8B", 4096, 12288, 36, 32, false},
	{"14B", 5120, 17408, 40, 40, false}, {"32B", 5120, 25600, 64, 64, false},
};

static void apply_preset(struct opts *o, const char *name)
{
	for (size_t i = 0; i < sizeof presets / sizeof presets[0]; i++) {
		const struct preset *p = &presets[i];
		if (strcmp(p->name, name) &&
		    !(strncmp(name, "Qwen3-", 6) == 0 && strcmp(p->name, name + 6) == 0))
			continue;
		o->vocab = 151936, o->hidden = p->hidden, o->inter = p->inter;
		o->layers = p->layers, o->heads = p->heads, o->kv_heads = 8, o->head_dim = 128;
		o->theta = 1e6, o->eps = 1e-6, o->max_pos = 40960, o->tie = p->tie;
		return;
	}
	die("--preset: unknown shape '%s' (0.6B 1.7B 4B 8B 14B 32B)", name);
}

static long num(const char *opt, const char *s, long lo, long hi)
{
	char *end;
	errno = 0;
	long long v = strtoll(s, &end, 10);
	if (errno || end == s || *end || v < lo || v > hi)
		die("--%s: '%s' is not an integer in [%ld, %ld]", opt, s, lo, hi);
	return (long)v;
}

static double real(const char *opt, const char *s, double lo, double hi)
{
	char *end;
	double v = strtod(s, &end);
	if (end == s || *end || !isfinite(v) || v < lo || v > hi)
		die("--%s: '%s' is not a number in [%g, %g]", opt, s, lo, hi);
	return v;
}

static void parse(int argc, char **argv, struct opts *o)
{
	static const struct option lo[] = {
		{"preset", 1, 0, 'P'},
		{"vocab-size", 1, 0, 'V'},
		{"hidden-size", 1, 0, 'H'},
		{"intermediate-size", 1, 0, 'I'},
		{"layers", 1, 0, 'L'},
		{"heads", 1, 0, 'A'},
		{"kv-heads", 1, 0, 'K'},
		{"head-dim", 1, 0, 'D'},
		{"rope-theta", 1, 0, 'T'},
		{"rms-norm-eps", 1, 0, 'E'},
		{"max-position", 1, 0, 'M'},
		{"tie", 0, 0, 't'},
		{"no-tie", 0, 0, 'u'},
		{"yarn-factor", 1, 0, 'Y'},
		{"yarn-original-max", 1, 0, 'y'},
		{"linear-factor", 1, 0, 'F'},
		{"yarn-attention-factor", 1, 0, '0'},
		{"yarn-beta-fast", 1, 0, '1'},
		{"yarn-beta-slow", 1, 0, '2'},
		{"yarn-mscale", 1, 0, '3'},
		{"yarn-mscale-all-dim", 1, 0, '4'},
		{"bos-id", 1, 0, 'b'},
		{"eos-id", 1, 0, 'e'},
		{"dtype", 1, 0, 'd'},
		{"std", 1, 0, 's'},
		{"seed", 1, 0, 'S'},
		{"shards", 1, 0, 'N'},
		{"tokenizer", 1, 0, 'k'},
		{"config-only", 0, 0, 'c'},
		{"out", 1, 0, 'o'},
		{"help", 0, 0, 'h'},
		{0, 0, 0, 0},
	};
	const long big = 1L << 30;
	int c, li = 0;
	while ((c = getopt_long(argc, argv, "o:h", lo, &li)) != -1) {
		switch (c) {
		case 'P': apply_preset(o, optarg); break;
		case 'V': o->vocab = num("vocab-size", optarg, 1, big); break;
		case 'H': o->hidden = num("hidden-size", optarg, 1, big); break;
		case 'I': o->inter = num("intermediate-size", optarg, 1, big); break;
		case 'L': o->layers = num("layers", optarg, 1, 100000); break;
		case 'A': o->heads = num("heads", optarg, 1, 100000); break;
		case 'K': o->kv_heads = num("kv-heads", optarg, 1, 100000); break;
		case 'D': o->head_dim = num("head-dim", optarg, 1, 100000); break;
		case 'T': o->theta = real("rope-theta", optarg, 1e-9, 1e30); break;
		case 'E': o->eps = real("rms-norm-eps", optarg, 1e-30, 1); break;
		case 'M': o->max_pos = num("max-position", optarg, 1, big); break;
		case 't': o->tie = true; break;
		case 'u': o->tie = false; break;
		case 'Y': o->yarn_factor = real("yarn-factor", optarg, 1, 1e6); break;
		case 'F': o->linear_factor = real("linear-factor", optarg, 1, 1e6); break;
		case 'y': o->yarn_orig = num("yarn-original-max", optarg, 1, big); break;
		case '0':
		case '1':
		case '2':
		case '3':
		case '4': o->yarn_opt[c - '0'] = real(lo[li].name, optarg, 0, 1e6); break;
		case 'b': o->bos = num("bos-id", optarg, 0, big); break;
		case 'e': o->eos = num("eos-id", optarg, 0, big); break;
		case 'd':
			if (!strcmp(optarg, "bf16"))
				o->dtype = DT_BF16;
			else if (!strcmp(optarg, "f16"))
				o->dtype = DT_F16;
			else if (!strcmp(optarg, "f32"))
				o->dtype = DT_F32;
			else
				die("--dtype: '%s' is not bf16, f16 or f32", optarg);
			break;
		case 's': o->std = real("std", optarg, 0, 1); break;
		case 'S': o->seed = (uint64_t)num("seed", optarg, 0, LONG_MAX); break;
		case 'N': o->shards = num("shards", optarg, 1, 99999); break;
		case 'k': o->tokenizer = optarg; break;
		case 'c': o->config_only = true; break;
		case 'o': o->out = optarg; break;
		case 'h': fputs(usage, stdout); exit(0);
		default: fputs(usage, stderr); exit(2);
		}
	}
	if (optind < argc || !o->out) {
		fputs(usage, stderr);
		exit(2);
	}
}

int main(int argc, char **argv)
{
	struct opts o = {
		.vocab = 1024,
		.hidden = 64,
		.inter = 128,
		.layers = 2,
		.heads = 4,
		.kv_heads = 2,
		.head_dim = 16,
		.max_pos = 40960,
		.theta = 1e6,
		.eps = 1e-6,
		.std = 0.02,
		.yarn_orig = 32768,
		.yarn_opt = {-1, -1, -1, -1, -1},
		.tie = true,
		.bos = -1,
		.eos = -1,
		.shards = 1,
		.seed = 1,
		.dtype = DT_BF16,
	};
	parse(argc, argv, &o);
	if (o.heads % o.kv_heads)
		die("--heads %ld is not a multiple of --kv-heads %ld", o.heads, o.kv_heads);
	if (o.bos < 0)
		o.bos = o.vocab > 151645 ? 151643 : (o.vocab >= 2 ? o.vocab - 2 : 0);
	if (o.eos < 0)
		o.eos = o.vocab > 151645 ? 151645 : o.vocab - 1;
	if (mkdir(o.out, 0755) != 0 && errno != EEXIST)
		die("%s: %s", o.out, strerror(errno));
	write_configs(&o);
	if (o.tokenizer) {
		copy_file(o.tokenizer, o.out, "tokenizer.json", true);
		copy_file(o.tokenizer, o.out, "tokenizer_config.json", false);
	}
	if (o.config_only)
		return 0;

	int n;
	struct tensor *ts = list_tensors(&o, &n);
	if (o.shards > n)
		die("--shards %ld: the model has only %d tensors", o.shards, n);
	/* a directory holds one layout: drop the other one's entry point */
	char path[4096];
	snprintf(path, sizeof path, "%s/%s", o.out,
		 o.shards > 1 ? "model.safetensors" : "model.safetensors.index.json");
	unlink(path);
	build_tables(o.std, o.dtype);
	assign_shards(&o, ts, n);
	size_t bufsize = 8u << 20;
	unsigned char *buf = malloc(bufsize);
	if (!buf)
		die("out of memory");
	for (int s = 0; s < o.shards; s++)
		write_shard(&o, ts, n, s, buf, bufsize);
	if (o.shards > 1)
		write_index(&o, ts, n);
	free(buf);
	free(ts);
	return 0;
}
