/* train_bench.c — times training steps of a random Qwen3 on the engine alone (no data
 * files, no checkpoints): tokens/s and the model FLOP utilisation against the backend's
 * measured matrix-product rate, for BENCHMARKS.md's training table beside
 * benchmarks/train-torch.py on the same shape.
 *
 *   train_bench [--preset 5m|0.6b] [--backend cpu|cuda] [--exact] [--threads N]
 *               [--batch B] [--ctx T] [--steps N] [--recompute] [--keep-probs]
 *               [--module PATH] [--isa c|avx2|avx512|avx512bf16|amx] [--lora R]
 *
 * On the CPU the attention probabilities are made again in the backward, as `qwenchat
 * train` runs (--recompute-probs, accepted, says so); --keep-probs keeps them instead,
 * B x heads x T x T floats a layer.
 *
 * 5m: 4 layers, hidden 256, 4 heads of 64 (2 kv), MLP 768, vocab 8192, tied; 0.6b: the
 * Qwen3-0.6B shape. Each step: zero, one micro-batch, clipping, AdamW. --lora R trains
 * rank-R adapters of every matrix instead (alpha R), the model frozen. Prints a line
 * per step and a JSON object last. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "engine/train.h"
#include "src/base/err.h"

static double now(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec + t.tv_nsec * 1e-9;
}

static struct eng_config preset(const char *name)
{
	struct eng_config c = {0};
	bool big = !strcmp(name, "0.6b");
	c.vocab_size = big ? 151936 : 8192;
	c.hidden_size = big ? 1024 : 256;
	c.intermediate_size = big ? 3072 : 768;
	c.num_layers = big ? 28 : 4;
	c.num_heads = big ? 16 : 4;
	c.num_kv_heads = big ? 8 : 2;
	c.head_dim = big ? 128 : 64;
	c.rms_norm_eps = 1e-6, c.rope_theta = big ? 1e6 : 10000, c.rope_factor = 1;
	c.max_position_embeddings = 40960, c.tie_word_embeddings = true, c.dtype = ENG_F32;
	c.bos_token_id = -1, c.eos_token_id = -1;
	strcpy(c.rope_type, "default");
	return c;
}

int main(int argc, char **argv)
{
	const char *name = "5m", *module = NULL;
	struct eng_train_options o = {
		.backend = ENG_BACKEND_CPU, .batch = 8, .ctx = 256, .recompute_probs = true};
	int steps = 8;
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : "";
		if (!strcmp(a, "--preset"))
			name = v, i++;
		else if (!strcmp(a, "--backend"))
			o.backend = eng_backend_kind(v), i++;
		else if (!strcmp(a, "--exact"))
			o.exact = true;
		else if (!strcmp(a, "--recompute"))
			o.recompute = true;
		else if (!strcmp(a, "--recompute-probs"))
			o.recompute_probs = true;
		else if (!strcmp(a, "--keep-probs"))
			o.recompute_probs = false;
		else if (!strcmp(a, "--isa"))
			o.cpu_isa = v, i++;
		else if (!strcmp(a, "--threads"))
			o.threads = atoi(v), i++;
		else if (!strcmp(a, "--batch"))
			o.batch = atoi(v), i++;
		else if (!strcmp(a, "--ctx"))
			o.ctx = atoi(v), i++;
		else if (!strcmp(a, "--steps"))
			steps = atoi(v), i++;
		else if (!strcmp(a, "--tiled-attention"))
			o.cuda_tiled_attention = true;
		else if (!strcmp(a, "--lora")) /* rank R adapters of every matrix, alpha R */
			o.lora_rank = atoi(v), o.lora_alpha = o.lora_rank, i++;
		else if (!strcmp(a, "--module"))
			module = v, i++;
		else {
			fprintf(stderr, "train_bench: unknown option %s\n", a);
			return 2;
		}
	}
	o.cuda_module = module;
	o.lora_targets = ENG_LORA_ALL;
	struct eng_config c = preset(name);
	struct eng_trainer *t = eng_trainer_new(&c, &o, NULL);
	if (!t) {
		fprintf(stderr, "train_bench: %s\n", err_msg());
		return 1;
	}
	struct eng_train_plan p;
	eng_trainer_get_plan(t, &p);
	eng_trainer_init_normal(t, 1, 0.02);
	int N = o.batch * o.ctx;
	int32_t *in = malloc(2 * (size_t)N * sizeof *in), *tg = in + N;
	uint64_t s = 1;
	for (int i = 0; i < N; i++) {
		s = s * 6364136223846793005ull + 1442695040888963407ull;
		in[i] = (int32_t)((s >> 33) % c.vocab_size);
		tg[i] = (int32_t)((s >> 11) % c.vocab_size);
	}
	struct eng_adamw h = {1e-3, 0.9, 0.95, 1e-8, 0.1};
	double best = 0, flops = eng_trainer_step_flops(t, NULL);
	for (int k = 0; k < steps; k++) {
		double t0 = now(), loss = 0, norm;
		int64_t n = 0;
		if (eng_trainer_zero_grad(t) || eng_trainer_micro(t, in, tg, NULL, &loss, &n) ||
		    eng_trainer_finish_grads(t, 1.0 / n, 1.0, &norm) || eng_trainer_adamw(t, &h, k + 1)) {
			fprintf(stderr, "train_bench: %s\n", err_msg());
			return 1;
		}
		double sec = now() - t0;
		if (k > 0 && N / sec > best) /* the first step warms up */
			best = N / sec;
		printf("step %d loss %.4f norm %.3f %.1f ms %.0f tok/s\n", k, loss / n, norm, sec * 1e3,
		       N / sec);
	}
	double rate = flops * best / N / 1e9, mfu = eng_trainer_peak_share(t, rate);
	double peak = eng_trainer_peak_gflops(t);
	printf("{\"preset\": \"%s\", \"backend\": \"%s\", \"exact\": %s, \"batch\": %d, \"ctx\": "
	       "%d, "
	       "\"params\": %lld, \"tok_s\": %.1f, \"step_gflop\": %.2f, \"peak_gflop_s\": %.1f, "
	       "\"mfu\": %.3f, \"memory_gb\": %.2f, \"recompute\": %s, \"recompute_probs\": %s}\n",
	       name, eng_trainer_backend(t), eng_trainer_exact(t) ? "true" : "false", o.batch,
	       o.ctx, (long long)p.params, best, flops / 1e9, peak, mfu, p.total / 1e9,
	       p.recompute ? "true" : "false", p.recompute_probs ? "true" : "false");
	free(in);
	eng_trainer_free(t);
	return 0;
}
