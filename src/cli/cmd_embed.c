/* cmd_embed.c — `qwenchat embed`: text embeddings from an embedding model such as
 * Qwen3-Embedding, as sentence-transformers, vLLM and llama.cpp compute them: each
 * text encoded with the tokenizer's special tokens (Qwen3-Embedding appends
 * <|endoftext|>), the hidden state of its last token after the final norm, cut to
 * --dimensions values (Matryoshka) and scaled to unit length. */
#include <errno.h>
#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/engine.h"
#include "src/base/err.h"
#include "src/base/strbuf.h"
#include "src/base/utf8.h"
#include "src/cli/cli.h"
#include "src/cli/commands.h"
#include "src/cli/env.h"
#include "src/hub/hub.h"
#include "src/hub/loader.h"
#include "tokenizer/tokenizer.h"

enum embed_key { OPT_INSTRUCT = CLI_OWN, OPT_DIMENSIONS, OPT_NO_NORMALIZE, OPT_JSON };

/* stdin's inputs: at most this many bytes in all */
enum { EMBED_MAX_INPUT = 64 << 20 };

static const struct cli_opt embed_opts[] = {
	{"instruct", OPT_INSTRUCT, "TASK",
	 "a query for retrieval: each text becomes\n"
	 "\"Instruct: TASK\\nQuery:TEXT\" (Qwen3-Embedding's query\n"
	 "form; documents go without it)"},
	{"dimensions", OPT_DIMENSIONS, "N",
	 "keep the first N values (Matryoshka), then normalize\n(default: all, hidden_size)"},
	{"no-normalize", OPT_NO_NORMALIZE, NULL,
	 "leave the vectors as pooled (default: unit length)"},
	{"json", OPT_JSON, NULL, "OpenAI's /v1/embeddings response on stdout"},
	{0},
};

static const struct cli_command embed_cmd = {
	.name = "embed",
	.synopsis = "-m MODEL [options] [TEXT...]",
	.about = "Embeds each TEXT (with none: each line of stdin) and prints one vector a line,\n"
		 "its values separated by spaces: the last token's final hidden state, the\n"
		 "tokenizer's special tokens added (Qwen3-Embedding's <|endoftext|>), normalized\n"
		 "to unit length. Runs on the CPU.\n",
	.groups = CLI_MODEL | CLI_THREADS | CLI_CTX | CLI_BACKEND,
	.opts = embed_opts,
	.max_args = 1 << 20,
	.args = "TEXT...",
	.text_args = true,
};

struct embed_args {
	const char *instruct;
	long dimensions;
	bool raw, json;
};

static int embed_opt(void *user, int key, const char *arg)
{
	struct embed_args *a = user;
	switch (key) {
	case OPT_INSTRUCT: a->instruct = arg; return 0;
	case OPT_DIMENSIONS: return cli_parse_long("dimensions", arg, 1, 1 << 20, &a->dimensions);
	case OPT_NO_NORMALIZE: a->raw = true; return 0;
	case OPT_JSON: a->json = true; return 0;
	}
	return cli_unhandled(&embed_cmd, key);
}

/* The texts: the arguments, else stdin's lines, every one (an empty one too), ended by
 * LF or CR LF (a last newline ends the last one). */
static char **read_inputs(int argc, char **argv, int first, int *n)
{
	if (first < argc) {
		*n = argc - first;
		return argv + first;
	}
	static struct strbuf all; /* lives until exit, as argv does */
	char buf[65536];
	size_t got;
	while ((got = fread(buf, 1, sizeof buf, stdin)) > 0) {
		if (all.n + got > EMBED_MAX_INPUT) {
			err_set("stdin: more than %d MB of text", EMBED_MAX_INPUT >> 20);
			return NULL;
		}
		sb_put(&all, buf, got);
	}
	if (ferror(stdin) || all.oom) {
		err_set("stdin: %s", all.oom ? "out of memory" : strerror(errno));
		return NULL;
	}
	if (!all.n) {
		err_set("stdin: no text to embed (give TEXT arguments or lines on stdin)");
		return NULL;
	}
	if (memchr(all.p, 0, all.n)) {
		err_set("stdin: holds a NUL byte (text only)");
		return NULL;
	}
	int lines = 0;
	for (size_t i = 0; i < all.n; i++)
		lines += all.p[i] == '\n' || i + 1 == all.n;
	char **v = calloc((size_t)lines + 1, sizeof *v);
	if (!v) {
		err_set("out of memory");
		return NULL;
	}
	char *p = all.p;
	for (int k = 0; k < lines; k++) {
		char *nl = strchr(p, '\n');
		if (nl)
			*nl = 0;
		size_t len = strlen(p);
		if (len &&
		    p[len - 1] == '\r') /* a CR LF ending, as a text editor on Windows saves */
			p[len - 1] = 0;
		v[k] = p;
		p = nl ? nl + 1 : p + strlen(p);
	}
	*n = lines;
	return v;
}

/* The ids of text (with the instruction around it), the tokenizer's ends added. */
static int32_t *encode(struct tok *t, const char *instruct, const char *text, size_t *n)
{
	if (!instruct)
		return tok_encode_ends(t, text, strlen(text), n);
	struct strbuf b = {0};
	sb_printf(&b, "Instruct: %s\nQuery:%s", instruct, text);
	int32_t *ids = b.oom ? NULL : tok_encode_ends(t, b.p, b.n, n);
	if (b.oom)
		err_set("out of memory");
	free(b.p);
	return ids;
}

static void print_vector(const float *v, int d)
{
	for (int i = 0; i < d; i++)
		printf(i ? " %.9g" : "%.9g", v[i]);
	putchar('\n');
}

static int print_json(const float *vecs, int n, int d, const char *model, long tokens)
{
	json_t *data = json_array();
	for (int k = 0; k < n; k++) {
		json_t *v = json_array();
		for (int i = 0; i < d; i++)
			json_array_append_new(v, json_real(vecs[(size_t)k * d + i]));
		json_array_append_new(data, json_pack("{s:s, s:i, s:o}", "object", "embedding",
						      "index", k, "embedding", v));
	}
	size_t len = 0;
	char *name = utf8_dup_replaced(model, strlen(model), &len); /* a path may be any bytes */
	json_t *o = json_pack("{s:s, s:o, s:s%, s:{s:I, s:I}}", "object", "list", "data", data,
			      "model", name ? name : "", len, "usage", "prompt_tokens",
			      (json_int_t)tokens, "total_tokens", (json_int_t)tokens);
	free(name);
	int rc = o && json_dumpf(o, stdout, JSON_COMPACT | JSON_REAL_PRECISION(9)) == 0 ? 0 : -1;
	putchar('\n');
	json_decref(o);
	return rc ? err_set("--json: out of memory") : 0;
}

/* Every input's ids (ids[k], len[k]); *longest: the most of them. */
static int encode_all(struct tok *t, const struct eng_config *c, const char *instruct, char **texts,
		      int n, int32_t **ids, size_t *len, size_t *longest)
{
	for (int k = 0; k < n; k++) {
		if (!(ids[k] = encode(t, instruct, texts[k], &len[k])))
			return err_prefix("input %d", k + 1);
		if (len[k] == 0)
			return err_set("input %d: no tokens (an empty text, and the tokenizer adds "
				       "none)",
				       k + 1);
		if (len[k] > (size_t)eng_max_context(c))
			return err_set("input %d: %zu tokens, more than the model's %d positions "
				       "(%s)",
				       k + 1, len[k], eng_max_context(c),
				       eng_max_context_source(c));
		if (eng_check_ids(c, ids[k], (int)len[k], 0))
			return err_prefix("input %d", k + 1);
		if (len[k] > *longest)
			*longest = len[k];
	}
	return 0;
}

/* Every input's vector into vecs (n x d). */
static int embed_all(struct eng *e, const struct embed_args *a, int32_t **ids, const size_t *len,
		     int n, int d, float *vecs)
{
	for (int k = 0; k < n; k++) {
		if ((int)len[k] > eng_ctx(e))
			return err_set("input %d: %zu tokens, more than the context of %d (--ctx)",
				       k + 1, len[k], eng_ctx(e));
		if (eng_embed(e, ids[k], (int)len[k], d, !a->raw, vecs + (size_t)k * d))
			return err_prefix("input %d", k + 1);
	}
	return 0;
}

int cmd_embed(int argc, char **argv)
{
	struct cli_common cli;
	struct embed_args a = {0};
	int first = argc;
	int r = cli_parse(&embed_cmd, argc, argv, &cli, embed_opt, &a, &first);
	if (r)
		return r == CLI_DONE ? EXIT_OK : r;
	struct eng_options eo;
	cli_notices_hold();
	if (cli_engine_options(&cli, &eo, NULL))
		return EXIT_USAGE;
	eo.exact_decode = cli.exact;        /* a short text runs the decode kernels */
	if (eo.backend == ENG_BACKEND_CUDA) /* before the weights go to the GPU for nothing */
		return cli_usage("embed", "--backend cuda: embeddings run on the CPU engine");
	eo.backend = ENG_BACKEND_CPU; /* the hidden states come from the CPU engine */
	int n = 0;
	char **texts = read_inputs(argc, argv, first, &n);
	if (!texts) {
		cli_error("%s", err_msg());
		return EXIT_RUNTIME;
	}
	struct hub_env hub;
	cli_env_hub(&hub);
	char *dir = NULL;
	struct tok *t = NULL;
	struct eng_model *m = NULL;
	struct eng *e = NULL;
	float *vecs = NULL;
	int32_t **ids = calloc((size_t)n, sizeof *ids);
	size_t *len = calloc((size_t)n, sizeof *len), tokens = 0, longest = 0;
	int rc = EXIT_RUNTIME, d = 0;
	if (!ids || !len) {
		err_set("out of memory");
		goto fail;
	}
	if (!(dir = hub_resolve(&hub, cli.model)) || loader_check_last_pooling(dir) ||
	    !(t = loader_tokenizer(dir)) || !(m = eng_model_open(dir)))
		goto fail;
	const struct eng_config *c = eng_model_config(m);
	d = a.dimensions ? (int)a.dimensions : c->hidden_size;
	if (d > c->hidden_size) {
		err_set("--dimensions %d: more than the model's %d (hidden_size)", d,
			c->hidden_size);
		goto fail;
	}
	if (encode_all(t, c, a.instruct, texts, n, ids, len, &longest))
		goto fail;
	for (int k = 0; k < n; k++)
		tokens += len[k];
	if (!(vecs = malloc((size_t)n * (size_t)d * sizeof *vecs))) {
		err_set("out of memory");
		goto fail;
	}
	/* one text at a time from position 0: a cache of the longest, in fp32 (it is
	   small, and the vectors are then the exact path's with --exact) */
	eo.kv_f32 = true;
	if (!eo.ctx)
		eo.ctx = (int)longest;
	if (!(e = eng_new(m, &eo, cli_notice)))
		goto fail;
	cli_notices_flush();
	if (embed_all(e, &a, ids, len, n, d, vecs))
		goto fail;
	if (a.json) {
		if (print_json(vecs, n, d, cli_model_name(&cli), (long)tokens))
			goto fail;
	} else {
		for (int k = 0; k < n; k++)
			print_vector(vecs + (size_t)k * d, d);
	}
	rc = fflush(stdout) == 0 ? EXIT_OK : (err_set("stdout: %s", strerror(errno)), EXIT_RUNTIME);
	if (rc == EXIT_OK)
		goto done;
fail:
	cli_error("%s", err_msg());
done:
	cli_notices_flush();
	free(vecs);
	eng_free(e);
	eng_model_free(m);
	tok_free(t);
	free(dir);
	for (int k = 0; ids && k < n; k++)
		free(ids[k]);
	free(ids);
	free(len);
	if (texts != argv + first)
		free(texts);
	return rc;
}
