/* cmd_bench.c — `qwenchat bench`: prefill and decode throughput against the limits
 * the backend measures in the same run (memory read bandwidth, or a GPU's copy
 * bandwidth and GEMM rate). */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "engine/engine.h"
#include "src/base/clock.h"
#include "src/base/err.h"
#include "src/base/proc.h"
#include "src/base/units.h"
#include "src/cli/cli.h"
#include "src/cli/commands.h"

enum bench_key { OPT_KV_F32 = CLI_OWN, OPT_BW_BUFFER, OPT_JSON };

static const struct cli_opt bench_opts[] = {
	{"prompt-tokens", 'p', "N", "prompt tokens (default 512)"},
	{"decode-tokens", 'n', "N", "decode tokens (default 128)"},
	{"reps", 'r', "N", "repetitions (default 3)"},
	{"depth", 'd', "N",
	 "tokens already in the KV cache before the timed prefill\n"
	 "and decode (default 0), filled untimed each repetition:\n"
	 "-d 4096 -p 100 -n 0 times a follow-up turn's first token"},
	{"kv-f32", OPT_KV_F32, NULL, "fp32 KV cache (default bf16)"},
	{"bw-buffer", OPT_BW_BUFFER, "MIB",
	 "buffer read to measure the bandwidth (default 1024;\n"
	 "it must be far larger than the CPU caches)"},
	{"json", OPT_JSON, NULL, "one JSON object instead of the table"},
	{0},
};

static const struct cli_command bench_cmd = {
	.name = "bench",
	.synopsis = "-m MODEL [-p 512] [-n 128] [-d 0] [-r REPS] [options]",
	.about = "Times a prefill of -p tokens and -n decode steps after it (-r times, after one\n"
		 "untimed warm-up prefill), and reports tokens/s, the weight bytes read per\n"
		 "decoded token, the GB/s and GFLOP/s that implies, and the memory read bandwidth\n"
		 "of this machine measured in the same run (vector read loop on 2 MB pages, as\n"
		 "many threads as decoding, best of 5 runs before and 5 after the timed ones),\n"
		 "with the decode/bandwidth ratio. On the CUDA backend the limits are the GPU's,\n"
		 "measured in the same run: the device-to-device copy bandwidth and the cuBLAS\n"
		 "bf16 GEMM rate at the prefill's largest shape; decode picks each next token on\n"
		 "the GPU (greedy), as the chat does.\n",
	.groups = CLI_MODEL | CLI_BACKEND | CLI_THREADS,
	.opts = bench_opts,
};

struct bench_args {
	long np, nd, reps, bw_mib, depth;
	bool kv_f32, json;
};

static int bench_opt(void *user, int key, const char *arg)
{
	struct bench_args *a = user;
	switch (key) {
	case 'p': return cli_parse_long("prompt-tokens", arg, 0, 1 << 20, &a->np);
	case 'n': return cli_parse_long("decode-tokens", arg, 0, 1 << 20, &a->nd);
	case 'r': return cli_parse_long("reps", arg, 1, 1000, &a->reps);
	case 'd': return cli_parse_long("depth", arg, 0, 1 << 20, &a->depth);
	case OPT_KV_F32: a->kv_f32 = true; return 0;
	case OPT_BW_BUFFER: return cli_parse_long("bw-buffer", arg, 1, 1 << 20, &a->bw_mib);
	case OPT_JSON: a->json = true; return 0;
	}
	return cli_unhandled(&bench_cmd, key);
}


struct bench_result {
	double load_s, load_rss, bw_gbs; /* load_rss: RSS growth while opening the model */
	double pp_tps, pp_sd, tg_tps, tg_sd;
	double pp_gflop, tg_gflop; /* per prefill, per decoded token (average) */
	double tg_bytes;           /* bytes read per decoded token (weights + KV) */
	size_t weight_bytes, graph_bytes;
	int threads, depth;     /* depth: tokens cached before the timed prefill */
	const char *prefill_inputs; /* eng_stats': "fp32", "bf16", "int8"; NULL (GPU) */
	bool device;            /* a GPU backend: peaks below, not bw_gbs */
	bool sampled;           /* decode picked the ids on the device */
	struct eng_peaks peaks; /* best of the runs before and after */
};

static void mean_sd(const double *v, int n, double *mean, double *sd)
{
	double s = 0, q = 0;
	for (int i = 0; i < n; i++)
		s += v[i];
	*mean = s / n;
	for (int i = 0; i < n; i++)
		q += (v[i] - *mean) * (v[i] - *mean);
	*sd = n > 1 ? sqrt(q / (n - 1)) : 0;
}

/* FLOPs of the matrix products for one token, and of attention over `keys` keys. */
static double token_flops(const struct eng_config *c, int keys, bool lm_head)
{
	struct eng_param_counts p;
	eng_count_params(c, &p);
	double mm = (double)(p.attn_q + p.attn_k + p.attn_v + p.attn_o + p.mlp_gate + p.mlp_up +
			     p.mlp_down);
	double f = 2 * mm + 4.0 * c->num_layers * c->num_heads * c->head_dim * keys;
	if (lm_head)
		f += 2.0 * c->vocab_size * c->hidden_size;
	return f;
}

/* One decode step as the chat runs it: the next id picked on the device where the
 * backend can (greedy), else the logits row copied back. */
static int decode_one(struct eng *e, int vocab, int32_t id, int pos, float *logits, bool *sampled)
{
	struct eng_sampling sp = {.greedy = true, .vocab_limit = vocab};
	if (eng_can_sample(e, &sp)) {
		int32_t next;
		bool used;
		*sampled = true;
		return eng_forward_sample(e, id, pos, &sp, &next, &used);
	}
	return eng_forward(e, &id, 1, pos, logits, false);
}

/* decode_bytes: the weights one decoded token reads, as stored (a quantized GGUF's
 * are fewer than its parameters x 2). */
static int bench_run(struct eng *e, const struct eng_config *c, size_t decode_bytes, int depth,
		     int np, int nd, int reps, struct bench_result *r)
{
	int32_t *ids = malloc((size_t)(depth + np + nd) * sizeof *ids);
	float *logits = malloc((size_t)c->vocab_size * sizeof *logits);
	double *pp = calloc((size_t)reps, sizeof *pp), *tg = calloc((size_t)reps, sizeof *tg);
	int rc = -1;
	if (!ids || !logits || !pp || !tg) {
		err_set("bench: out of memory");
		goto done;
	}
	uint64_t x = 12345;
	for (int i = 0; i < depth + np + nd; i++) { /* fixed pseudo-random ids */
		x = x * 6364136223846793005ull + 1442695040888963407ull;
		ids[i] = (int32_t)((x >> 33) % (uint64_t)c->vocab_size);
	}
	/* warm-up, as llama-bench does: one untimed prefill touches every weight and the
	 * KV cache and scratch pages the timed ones use (else the first repetition pays
	 * their page faults) */
	if (eng_forward(e, ids, depth + np > 1 ? depth + np : 1, 0, logits, false))
		goto done;
	for (int rep = 0; rep < reps; rep++) {
		if (depth > 0 && eng_forward(e, ids, depth, 0, logits, false))
			goto done;
		double t0 = clock_now();
		if (np > 0 && eng_forward(e, ids + depth, np, depth, logits, false))
			goto done;
		double t1 = clock_now();
		for (int i = 0; i < nd; i++) {
			int at = depth + np + i;
			if (decode_one(e, c->vocab_size, ids[at], at, logits, &r->sampled))
				goto done;
		}
		double t2 = clock_now();
		pp[rep] = np > 0 ? np / (t1 - t0) : 0;
		tg[rep] = nd > 0 ? nd / (t2 - t1) : 0;
	}
	mean_sd(pp, reps, &r->pp_tps, &r->pp_sd);
	mean_sd(tg, reps, &r->tg_tps, &r->tg_sd);
	r->pp_gflop = 0;
	for (int i = 0; i < np; i++)
		r->pp_gflop += token_flops(c, depth + i + 1, i == np - 1) / 1e9;
	r->tg_gflop = token_flops(c, depth + np + nd / 2 + 1, true) / 1e9;
	struct eng_stats st;
	eng_get_stats(e, &st);
	double kv_tok = eng_cached(e) ? (double)st.kv_bytes_used / eng_cached(e) : 0;
	r->tg_bytes = (double)decode_bytes + kv_tok * (depth + np + nd / 2.0 + 1);
	r->weight_bytes = st.weight_bytes;
	r->graph_bytes = st.graph_bytes;
	rc = 0;
done:
	free(ids);
	free(logits);
	free(pp);
	free(tg);
	return rc;
}

/* The limits the ratios are held against, measured now, keeping the best of this
 * and any earlier measurement (on a shared machine they drift). A GPU backend
 * measures its copy bandwidth and the GEMM rate at the prefill's largest projection
 * (gate and up: 2F x tokens x D); the CPU, the memory read bandwidth. */
static int measure_limits(struct eng *e, const struct eng_config *c, int gemm_n, long bw_mib,
			  struct bench_result *r)
{
	struct eng_measure_request rq = {.gemm_m = 2 * c->intermediate_size,
					 .gemm_n = gemm_n,
					 .gemm_k = c->hidden_size,
					 .read_bytes = (size_t)bw_mib << 20,
					 .reps = 5};
	struct eng_peaks pk;
	if (eng_measure(e, &rq, &pk))
		return -1;
	r->device = pk.device;
	if (r->device) {
		double copy = r->peaks.copy_gb_s, gemm = r->peaks.gemm_tflop_s;
		r->peaks = pk;
		r->peaks.copy_gb_s = copy > pk.copy_gb_s ? copy : pk.copy_gb_s;
		r->peaks.gemm_tflop_s = gemm > pk.gemm_tflop_s ? gemm : pk.gemm_tflop_s;
		r->bw_gbs = r->peaks.copy_gb_s;
	} else {
		r->bw_gbs = pk.read_gb_s > r->bw_gbs ? pk.read_gb_s : r->bw_gbs;
	}
	return 0;
}

static void bench_print(const struct bench_result *r, const char *model, const char *backend,
			int np, int nd, int reps, bool json)
{
	double tg_gbs = r->tg_bytes * r->tg_tps / 1e9;
	double ratio = r->bw_gbs > 0 ? tg_gbs / r->bw_gbs : 0;
	double pp_tflops = r->pp_gflop * r->pp_tps / (np > 0 ? np : 1) / 1e3;
	double gemm_ratio = r->peaks.gemm_tflop_s > 0 ? pp_tflops / r->peaks.gemm_tflop_s : 0;
	const char *inputs = r->prefill_inputs;
	char label[32] = "";
	if (inputs && strcmp(inputs, "fp32"))
		snprintf(label, sizeof label, " (%s activations)", inputs);
	if (json) {
		printf("{\"model\": \"%s\", \"backend\": \"%s\", \"threads\": %d, \"load_s\": "
		       "%.3f, \"load_rss_bytes\": %.0f, "
		       "\"depth\": %d, \"prompt_tokens\": %d, \"decode_tokens\": %d, \"reps\": %d, "
		       "\"prefill_ms\": %.3f, \"prefill_tok_s\": %.2f, \"prefill_tok_s_sd\": %.2f, "
		       "\"prefill_gflop_s\": "
		       "%.1f, "
		       "\"decode_tok_s\": %.2f, \"decode_tok_s_sd\": %.2f, "
		       "\"decode_bytes_per_token\": %.0f, "
		       "\"decode_gb_s\": %.2f, \"decode_gflop_s\": %.2f, \"read_bandwidth_gb_s\": "
		       "%.2f, "
		       "\"decode_bandwidth_ratio\": %.3f, \"bf16_prefill\": %s, "
		       "\"prefill_inputs\": \"%s\", \"device\": %s, "
		       "\"device_copy_gb_s\": %.1f, \"gemm_tflop_s\": %.2f, "
		       "\"prefill_gemm_ratio\": %.3f, "
		       "\"decode_sampled_on_device\": %s, \"graph_bytes\": %zu}\n",
		       model, backend, r->threads, r->load_s, r->load_rss, r->depth, np, nd, reps,
		       r->pp_tps > 0 ? 1e3 * np / r->pp_tps : 0, r->pp_tps, r->pp_sd,
		       r->pp_gflop * r->pp_tps / (np > 0 ? np : 1), r->tg_tps, r->tg_sd,
		       r->tg_bytes, tg_gbs, r->tg_gflop * r->tg_tps, r->bw_gbs, ratio,
		       inputs && !strcmp(inputs, "bf16") ? "true" : "false",
		       inputs ? inputs : "device", r->device ? "true" : "false",
		       r->peaks.copy_gb_s, r->peaks.gemm_tflop_s, gemm_ratio,
		       r->sampled ? "true" : "false", r->graph_bytes);
		return;
	}
	char weights[16], rss[16], per_token[16];
	printf("model      %s\n", model);
	printf("backend    %s, %d thread%s; weights %s mapped in %.3f s (RSS +%s)\n", backend,
	       r->threads, r->threads == 1 ? "" : "s",
	       units_bytes((double)r->weight_bytes, weights, sizeof weights), r->load_s,
	       units_bytes(r->load_rss, rss, sizeof rss));
	if (r->depth > 0)
		printf("depth      %d tokens in the KV cache before the timed prefill and decode\n",
		       r->depth);
	if (np > 0)
		printf("prefill    %d tokens: %.1f ± %.1f tok/s (%.2f ms), %.1f GFLOP/s%s\n", np,
		       r->pp_tps, r->pp_sd, 1e3 * np / r->pp_tps, r->pp_gflop * r->pp_tps / np,
		       label);
	if (nd > 0)
		printf("decode     %d tokens: %.2f ± %.2f tok/s, %s read per token, "
		       "%.1f GB/s, %.1f GFLOP/s\n",
		       nd, r->tg_tps, r->tg_sd,
		       units_bytes(r->tg_bytes, per_token, sizeof per_token), tg_gbs,
		       r->tg_gflop * r->tg_tps);
	if (r->device) {
		printf("device     copy bandwidth %.1f GB/s (device to device, read + written "
		       "bytes, "
		       "best of 10); cuBLAS bf16 GEMM %dx%dx%d %.1f TFLOP/s (best of 10)\n",
		       r->peaks.copy_gb_s, r->peaks.gemm_m, r->peaks.gemm_n, r->peaks.gemm_k,
		       r->peaks.gemm_tflop_s);
		if (nd > 0)
			printf("ratio      decode reads at %.0f%% of the copy bandwidth%s\n",
			       100 * ratio, r->sampled ? " (ids picked on the device)" : "");
		if (np > 0)
			printf("ratio      prefill at %.0f%% of the GEMM rate\n", 100 * gemm_ratio);
	} else {
		printf("memory     read bandwidth %.1f GB/s (%d thread%s, vector read loop, best "
		       "of "
		       "10)\n",
		       r->bw_gbs, r->threads, r->threads == 1 ? "" : "s");
		if (nd > 0)
			printf("ratio      decode reads at %.0f%% of the measured bandwidth\n",
			       100 * ratio);
	}
	printf("repeats    %d (mean ± standard deviation)\n", reps);
}

int cmd_bench(int argc, char **argv)
{
	struct cli_common cli;
	struct bench_args ba = {.np = 512, .nd = 128, .reps = 3, .bw_mib = 1024};
	int r = cli_parse(&bench_cmd, argc, argv, &cli, bench_opt, &ba, NULL);
	if (r)
		return r == CLI_DONE ? EXIT_OK : r;
	long np = ba.np, reps = ba.reps, bw_mib = ba.bw_mib, depth = ba.depth;
	int nd = (int)ba.nd;
	if (np + nd == 0)
		return cli_usage("bench", "nothing to time: -p and -n are both 0");
	struct eng_options eo;
	cli_notices_hold(); /* a notice on the options, then an error: the error alone */
	if (cli_engine_options(&cli, &eo, NULL))
		return EXIT_USAGE;
	eo.kv_f32 = ba.kv_f32;
	eo.ctx = (int)(depth + np) + nd; /* positions 0 .. d+p+n-1 */

	struct bench_result res = {0};
	double rss0 = (double)proc_rss_bytes();
	struct eng_model *m = cli_open_model(&cli, &res.load_s);
	res.load_rss = (double)proc_rss_bytes() - rss0;
	if (!m)
		return EXIT_RUNTIME;
	const struct eng_config *c = eng_model_config(m);
	struct eng *e = NULL;
	int rc = EXIT_RUNTIME;
	if (eo.ctx > eng_max_context(c)) {
		err_set("bench: -d + -p + -n = %ld exceeds the model's %d positions (%s)",
			depth + np + nd, eng_max_context(c), eng_max_context_source(c));
		goto fail;
	}
	if (!(e = eng_new(m, &eo, cli_notice)))
		goto fail;
	cli_notices_flush(); /* the engine is up: before the runs */
	long cores = sysconf(_SC_NPROCESSORS_ONLN);
	res.threads = eo.threads ? eo.threads : cores > 0 ? (int)cores : 1;
	struct eng_stats st;
	eng_get_stats(e, &st);
	res.prefill_inputs = st.prefill_inputs;
	res.depth = (int)depth;
	/* best of 5 runs before and 5 after the timed ones */
	int gemm_n = np > 0 ? (int)np : 512;
	if (measure_limits(e, c, gemm_n, bw_mib, &res) ||
	    bench_run(e, c, eng_model_decode_bytes(m), (int)depth, (int)np, nd, (int)reps, &res) ||
	    measure_limits(e, c, gemm_n, bw_mib, &res))
		goto fail;
	bench_print(&res, cli_model_name(&cli), eng_backend_name(e), (int)np, nd, (int)reps,
		    ba.json);
	rc = EXIT_OK;
	goto done;
fail:
	cli_error("%s", err_msg());
done:
	eng_free(e);
	eng_model_free(m);
	cli_notices_flush();
	return rc;
}
