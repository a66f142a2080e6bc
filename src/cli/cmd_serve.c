/* cmd_serve.c — `qwenchat serve`: opens the model and serves the OpenAI
 * chat-completions API on it until SIGINT or SIGTERM (src/serve/serve.h). */
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/engine.h"
#include "src/hub/loader.h"
#include "src/base/err.h"
#include "src/base/fileio.h"
#include "src/cli/cli.h"
#include "src/cli/commands.h"
#include "src/cli/env.h"
#include "src/hub/hub.h"
#include "src/serve/origin.h"
#include "src/serve/serve.h"
#include "src/session/sampler.h"
#include "src/session/session.h"
#include "src/chat/template.h"
#include "tokenizer/tokenizer.h"

enum serve_key {
	OPT_HOST = CLI_OWN,
	OPT_PORT,
	OPT_API_KEY,
	OPT_API_KEY_FILE,
	OPT_QUEUE,
	OPT_TIMEOUT,
	OPT_ALLOW_ORIGIN,
	OPT_KV_F32,
	OPT_LOGPROBS_MODE,
	OPT_REPEAT_LAST_N
};

static const struct cli_opt serve_opts[] = {
	{"host", OPT_HOST, "ADDR",
	 "address to listen on (default 127.0.0.1: this machine only;\n0.0.0.0 or :: for every "
	 "interface)"},
	{"port", OPT_PORT, "N", "TCP port (default 8080; 0 picks a free one, printed at start)"},
	{"api-key", OPT_API_KEY, "KEY", "require \"Authorization: Bearer KEY\" on every request"},
	{"api-key-file", OPT_API_KEY_FILE, "FILE",
	 "the same, the key read from FILE's first line (not shown by ps)"},
	{"queue", OPT_QUEUE, "N",
	 "requests that may wait behind the running one (default 16;\nbeyond, 503)"},
	{"timeout", OPT_TIMEOUT, "S",
	 "close a connection silent for S seconds, or whose request\n(headers and body) "
	 "takes longer (default 30)"},
	{"allow-origin", OPT_ALLOW_ORIGIN, "ORIGIN",
	 "web pages of ORIGIN (e.g. https://chat.example:3000; * for\nevery one, null for "
	 "local files) may use the server; pages\nof this machine may always (repeatable)"},
	{"logprobs-mode", OPT_LOGPROBS_MODE, "MODE",
	 "what a generated token's logprobs describe, as vLLM's option:\nraw_logprobs (default: "
	 "the model's own distribution) or\nprocessed_logprobs (the one it was drawn from, "
	 "after\nthe penalties and the temperature)"},
	{"repeat-last-n", OPT_REPEAT_LAST_N, "N",
	 "the tokens of the context the repetition penalty looks at:\nthe last N (64: llama.cpp's "
	 "window), or -1, every one\n(the default: vLLM's and transformers' rule)"},
	{"kv-f32", OPT_KV_F32, NULL,
	 "fp32 KV cache (default bf16): with --exact, a prompt's\nlogprobs as `logits` "
	 "computes them"},
	{0},
};

static const struct cli_command serve_cmd = {
	.name = "serve",
	.synopsis = "-m MODEL [--host 127.0.0.1] [--port 8080] [--api-key KEY] [options]",
	.about = "An OpenAI-compatible API on the model: POST /v1/chat/completions and\n"
		 "/v1/completions (a raw prompt continued; with \"echo\" and \"logprobs\", its "
		 "own\ntokens scored, as lm-evaluation-harness asks), streamed as server-sent "
		 "events\nwith \"stream\": true; POST /v1/embeddings (an embedding model's, such "
		 "as\n"
		 "Qwen3-Embedding, on the CPU engine); POST /tokenize and /detokenize (vLLM's);\n"
		 "GET /v1/models, GET /health.\n"
		 "Requests are answered one at a time in arrival order on one KV cache, so a\n"
		 "client resending its conversation with a new turn pays only for the new "
		 "tokens.\n"
		 "-n N is the default and largest max_tokens (default: the context).\n",
	.groups = CLI_MODEL | CLI_ENGINE | CLI_SAMPLING | CLI_MAX_NEW,
	.opts = serve_opts,
	.notes = "Limits: a body of at most 4 MiB, 2048 messages, 128 tools, JSON nested at most\n"
		 "64 deep with at most 131072 values, unknown members of at most 64 KiB, 16 stop\n"
		 "strings, top_logprobs 0..20, 1024 prompts, 256 connections at once, 64 MiB of\n"
		 "bodies held at once; --timeout also bounds the time a request may take to\n"
		 "arrive.\n"
		 "max_tokens at most the context (or -n) and, with the prompt, within the "
		 "context;\n/v1/completions: 16 when not given, held to the room the prompt "
		 "leaves.\n"
		 "Sampling options set the defaults a request's own fields override; a --seed "
		 "is\n"
		 "used by every request that gives none (else each draws a random one). One "
		 "line\n"
		 "per request goes to stderr. SIGINT or SIGTERM stops the server.\n",
};

struct serve_args {
	struct cli_common cli;
	const char *host;
	int port, queue, timeout;
	char *key;            /* malloc'd */
	const char *key_file; /* read once the options are parsed */
	const char *origins[SERVE_MAX_ORIGINS];
	int n_origins;
	bool kv_f32;
	bool processed_logprobs;
	int repeat_last_n;
};

static int serve_opt(void *user, int key, const char *arg)
{
	struct serve_args *a = user;
	long l;
	switch (key) {
	case OPT_HOST: a->host = arg; return 0;
	case OPT_KV_F32: a->kv_f32 = true; return 0;
	case OPT_REPEAT_LAST_N:
		if (cli_parse_long("repeat-last-n", arg, -1, 1 << 24, &l))
			return -1;
		a->repeat_last_n = (int)l;
		return 0;
	case OPT_LOGPROBS_MODE:
		if (strcmp(arg, "raw_logprobs") && strcmp(arg, "processed_logprobs"))
			return cli_usage("serve",
					 "--logprobs-mode: raw_logprobs or processed_logprobs, not "
					 "'%s'",
					 arg);
		a->processed_logprobs = !strcmp(arg, "processed_logprobs");
		return 0;
	case OPT_PORT:
		if (cli_parse_long("port", arg, 0, 65535, &l))
			return -1;
		a->port = (int)l;
		return 0;
	case OPT_API_KEY:
		free(a->key);
		a->key = strdup(arg);
		/* out of sight of ps from now on */
		memset((char *)arg, 'x', strlen(arg));
		return 0;
	case OPT_API_KEY_FILE: a->key_file = arg; return 0;
	case OPT_QUEUE:
		if (cli_parse_long("queue", arg, 0, 1024, &l))
			return -1;
		a->queue = (int)l;
		return 0;
	case OPT_TIMEOUT:
		if (cli_parse_long("timeout", arg, 1, 86400, &l))
			return -1;
		a->timeout = (int)l;
		return 0;
	case OPT_ALLOW_ORIGIN:
		if (a->n_origins == SERVE_MAX_ORIGINS)
			return cli_usage("serve", "--allow-origin: at most %d origins",
					 SERVE_MAX_ORIGINS);
		if (origin_check(arg))
			return cli_usage("serve", "--allow-origin: %s", err_msg());
		a->origins[a->n_origins++] = arg;
		return 0;
	}
	return cli_unhandled(&serve_cmd, key);
}

/* 0, CLI_DONE, or an exit status after printing the problem. */
static int parse_args(int argc, char **argv, struct serve_args *a)
{
	a->host = "127.0.0.1";
	a->port = 8080;
	a->queue = SERVE_DEFAULT_QUEUE;
	a->timeout = SERVE_DEFAULT_TIMEOUT;
	a->repeat_last_n = -1;
	int r = cli_parse(&serve_cmd, argc, argv, &a->cli, serve_opt, a, NULL);
	if (r)
		return r;
	if ((a->cli.set & CLI_SET_MAX_NEW) && a->cli.max_new < 1)
		return cli_usage("serve", "-n: the server's max_tokens limit must be at least 1");
	if (a->key && a->key_file)
		return cli_usage("serve", "--api-key and --api-key-file both give the key: use "
					  "one");
	/* a file that cannot be read is a runtime error, as for the remote backend */
	if (a->key_file && !(a->key = cli_read_key_file(a->key_file)))
		return EXIT_FAILURE;
	return 0;
}

static void log_line(const char *line)
{
	fprintf(stderr, "qwenchat: %s\n", line);
}

/* The model's id in responses: the repo id as given, or a directory's last name. */
static const char *model_name(const char *arg, const char *dir)
{
	if (arg && !fio_is_dir(arg) && !fio_is_file(arg))
		return arg;
	const char *p = dir + strlen(dir);
	while (p > dir && p[-1] == '/')
		p--;
	const char *end = p;
	while (p > dir && p[-1] != '/')
		p--;
	static char name[256];
	snprintf(name, sizeof name, "%.*s", (int)(end - p), p);
	/* "-m ." or "-m ..": the name of the directory it is */
	char *real = !strcmp(name, ".") || !strcmp(name, "..") ? realpath(dir, NULL) : NULL;
	if (real) {
		const char *slash = strrchr(real, '/');
		snprintf(name, sizeof name, "%s", slash && slash[1] ? slash + 1 : "qwenchat");
		free(real);
	}
	return name[0] ? name : "qwenchat";
}

/* Opens everything the server needs into m. 0 or -1 (err_set). */
static int open_model(const struct serve_args *a, const struct eng_options *eo, atomic_int *cancel,
		      struct gen_model *m, struct eng_model **em, char **dir)
{
	int32_t eos[SAMP_MAX_EOS];
	int n_eos = 0;
	struct hub_env hub;
	cli_env_hub(&hub);
	/* the loader reads a directory's JSON files or a GGUF's keys alike */
	if (!(*dir = hub_resolve(&hub, a->cli.model)) || !(m->tok = loader_tokenizer(*dir)))
		return -1;
	samp_params_default(&m->params);
	if (loader_generation(*dir, &m->params, eos, &n_eos))
		return -1;
	cli_sampling(&a->cli, &m->params);
	m->params_set = a->cli.set & ~(unsigned)(CLI_SET_MAX_NEW | CLI_SET_CTX); /* SAMP_SET_* */
	/* an embedding model (its pooling said) may have fewer rows than the tokenizer ids
	 * (Qwen3-Embedding-8B: 151,665 of 151,669): a request with one is a 400 */
	enum loader_pooling pool = LOADER_POOL_NONE;
	if (loader_pooling(*dir, &pool) < 0)
		pool = LOADER_POOL_OTHER; /* the embeddings are refused below, with why */
	if (loader_check_last_pooling(*dir) && !(m->embed_refusal = strdup(err_msg())))
		return err_set("out of memory");
	if (samp_params_check(&m->params) || !(*em = eng_model_open(*dir)) ||
	    (pool == LOADER_POOL_NONE &&
	     loader_check_vocab(m->tok, eng_model_config(*em)->vocab_size, *dir)))
		return -1;
	if (!(m->eng = eng_new(*em, eo, cli_notice)) ||
	    !(m->samp = samp_new(&m->params, eng_model_config(*em)->vocab_size)))
		return -1;
	struct sess_options so = {.eos = eos, .n_eos = n_eos, .cancel = cancel};
	if (!(m->sess = sess_new(m->eng, *em, m->tok, &so)))
		return -1;
	const char *warning = NULL;
	m->variant = tmpl_detect(tok_chat_template(m->tok), &warning);
	m->absent_think = tmpl_absent_think(tok_chat_template(m->tok));
	if (warning)
		cli_error("warning: %s", warning);
	m->vocab = eng_model_config(*em)->vocab_size;
	m->hidden = eng_model_config(*em)->hidden_size;
	m->embed_ok = !strcmp(eng_backend_name(m->eng), "cpu");
	m->cancel = cancel;
	if (!(m->scores = scores_new()))
		return -1;
	m->processed_logprobs = a->processed_logprobs;
	m->repeat_last_n = a->repeat_last_n;
	m->max_tokens = a->cli.set & CLI_SET_MAX_NEW ? a->cli.max_new : 0;
	m->name = model_name(cli_model_name(&a->cli), *dir);
	return 0;
}

int cmd_serve(int argc, char **argv)
{
	struct serve_args a = {0};
	struct eng_options eo;
	int rc = parse_args(argc, argv, &a);
	cli_notices_hold(); /* a notice on the options, then an error: the error alone */
	if (!rc && cli_engine_options(&a.cli, &eo, NULL))
		rc = EXIT_USAGE;
	eo.kv_f32 = a.kv_f32;
	if (rc) {
		free(a.key);
		return rc == CLI_DONE ? EXIT_OK : rc;
	}
	static atomic_int cancel;
	struct gen_model m = {0};
	struct eng_model *em = NULL;
	char *dir = NULL;
	struct serve *s = NULL;
	rc = EXIT_RUNTIME;
	/* The signals are taken by sigwait below: blocked before any thread starts, so
	 * that every thread inherits the mask. A client that hangs up must not kill us. */
	sigset_t set;
	sigemptyset(&set);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGTERM);
	pthread_sigmask(SIG_BLOCK, &set, NULL);
	signal(SIGPIPE, SIG_IGN);
	if (open_model(&a, &eo, &cancel, &m, &em, &dir))
		goto fail;
	struct serve_options o = {a.host,    a.port,      a.key,   a.queue, a.timeout,
				  a.origins, a.n_origins, &cancel, log_line};
	if (!(s = serve_start(&m, &o)))
		goto fail;
	cli_notices_flush(); /* the server is up: before it says where */
	bool v6 = strchr(a.host, ':') != NULL;
	fprintf(stderr,
		"qwenchat: serving %s on http://%s%s%s:%d/v1 (%s backend, context %d, queue "
		"%d%s)\n",
		m.name, v6 ? "[" : "", a.host, v6 ? "]" : "", serve_port(s),
		eng_backend_name(m.eng), eng_ctx(m.eng), a.queue,
		a.key ? ", API key required" : "");
	int sig;
	sigwait(&set, &sig);
	fprintf(stderr, "qwenchat: %s: stopping\n", sig == SIGINT ? "interrupted" : "terminated");
	rc = EXIT_OK;
	goto done;
fail:
	cli_error("%s", err_msg());
done:
	serve_stop(s);
	sess_free(m.sess);
	samp_free(m.samp);
	scores_free(m.scores);
	free(m.embed_refusal);
	eng_free(m.eng);
	eng_model_free(em);
	tok_free(m.tok);
	free(dir);
	free(a.key);
	cli_notices_flush();
	return rc;
}
