/* cmd_run.c — `qwenchat run`: one chat turn (or a raw continuation) streamed to the
 * terminal: the answer to stdout, the reasoning to stderr, statistics on request. */
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <limits.h>
#include <jansson.h>
#include <stdlib.h>
#include <errno.h>
#include <math.h>
#include <string.h>
#include <unistd.h>

#include "engine/engine.h"
#include "src/chat/chat.h"
#include "src/chat/fit.h"
#include "src/cli/cli.h"
#include "src/cli/commands.h"
#include "src/cli/env.h"
#include "src/base/utf8.h"
#include "src/base/clock.h"
#include "src/base/err.h"
#include "src/base/proc.h"
#include "src/base/term.h"
#include "src/base/fileio.h"
#include "src/base/jsonschema.h"
#include "src/hub/hub.h"
#include "src/hub/loader.h"
#include "src/session/sampler.h"
#include "src/session/session.h"
#include "src/chat/template.h"
#include "tokenizer/tokenizer.h"

enum run_key {
	OPT_SYSTEM = CLI_OWN,
	OPT_THINK,
	OPT_NO_THINK,
	OPT_RAW,
	OPT_STATS,
	OPT_LOGPROBS,
	OPT_PARSE_SPECIAL,
	OPT_KV_F32,
	OPT_FORMAT,
};

static const struct cli_opt run_opts[] = {
	{"prompt", 'p', "TEXT", "the user message"},
	{"file", 'f', "FILE", "read the user message from FILE ('-' = stdin)"},
	{"system", OPT_SYSTEM, "TEXT", "a system prompt"},
	{"think", OPT_THINK, NULL,
	 "enable_thinking true (default: the template's,\nthinking for Qwen3)"},
	{"no-think", OPT_NO_THINK, NULL,
	 "enable_thinking false; also switches the sampling defaults to\n"
	 "Qwen's non-thinking preset"},
	{"raw", OPT_RAW, NULL,
	 "no chat template: continue the prompt text as it is\n(everything generated goes to "
	 "stdout)"},
	{"stats", OPT_STATS, NULL,
	 "tokens reused/prefilled/generated, time to first token,\n"
	 "prefill and decode tokens/s, on stderr"},
	{"logprobs", OPT_LOGPROBS, "N",
	 "instead of the text, one JSON object per generated token\n"
	 "on stdout: token, id, logprob and the N likeliest\n"
	 "alternatives (0-20; the distribution after the penalties,\n"
	 "at the temperature, before the top-k/top-p/min-p cut)"},
	{"parse-special", OPT_PARSE_SPECIAL, NULL,
	 "special tokens written in the prompt (<|im_start|>, ...)\n"
	 "are control tokens, as Hugging Face parses them by default\n"
	 "(else they are text; with --raw they always are tokens)"},
	{"format", OPT_FORMAT, "json|FILE",
	 "hold the answer (not the reasoning) to one JSON object,\n"
	 "or to a value of the JSON Schema in FILE: tokens that\n"
	 "would leave it are never drawn (ollama's --format; with\n"
	 "--url, response_format json_object or json_schema)"},
	{"kv-f32", OPT_KV_F32, NULL,
	 "fp32 KV cache (default bf16): with --exact, every product\n"
	 "in fp32, for comparisons with a float32 reference"},
	{0},
};

static const struct cli_command run_cmd = {
	.name = "run",
	.synopsis = "-m MODEL [-p TEXT | -f FILE | TEXT] [options]",
	.about = "One chat turn: the prompt (-p TEXT or an argument TEXT, -f FILE, or stdin when\n"
		 "none is given) is sent as a user message and the answer is streamed to stdout.\n"
		 "The model's reasoning (its <think> block) is streamed to stderr between <think>\n"
		 "and </think> lines, so stdout holds the answer alone. -n N stops after N new\n"
		 "tokens (default: when the model ends its turn or the context is full).\n",
	.groups = CLI_MODEL | CLI_ENGINE | CLI_SAMPLING | CLI_MAX_NEW | CLI_REMOTE,
	.opts = run_opts,
	.max_args = 1,
	.args = "TEXT",
	.text_args = true,
	.notes = "Sampling defaults come from the model's generation_config.json (Qwen3: "
		 "temperature\n"
		 "0.6, top-k 20, top-p 0.95); with --no-think Qwen's non-thinking preset "
		 "(temperature\n"
		 "0.7, top-k 20, top-p 0.8, min-p 0). Options given explicitly always win.\n"
		 "With --url (the remote backend) only the options given, and with --no-think\n"
		 "that preset, are sent: the server's defaults stand for the rest.\n",
};

struct run_args {
	struct cli_common cli;
	const char *prompt, *file, *system;
	int think; /* TMPL_THINK_* */
	bool raw, stats, parse_special, kv_f32, json;
	const char *schema_file; /* --format FILE */
	json_t *schema;          /* ... its schema, and compiled (else, with json, any object) */
	struct js_schema *format;
	long logprobs; /* -1: print the text */
};

/* Set to the signal's number by SIGINT, SIGTERM or SIGHUP: stops the turn, the
 * session stays sane, what was written stays written. */
static atomic_int g_cancel;

static void on_sigint(int sig)
{
	(void)sig;
	atomic_store(&g_cancel, sig);
}

/* The exit status after a stop: 128 + the signal's number, as a shell reports a
 * program the signal ended (130 for Ctrl-C, as the chat and train exit). */
static int stopped_status(void)
{
	int sig = atomic_load(&g_cancel);
	return sig > 0 ? 128 + sig : EXIT_RUNTIME;
}

/* A reader that closed the pipe (`| head`) ends the run as it ends the local one:
 * by SIGPIPE, without a message (the remote path ignores the signal for libcurl's
 * sake, so its write failed with EPIPE instead). */
static int closed_pipe(void)
{
	fflush(stderr);
	signal(SIGPIPE, SIG_DFL);
	raise(SIGPIPE);
	return 128 + SIGPIPE; /* the status a shell shows, should it be blocked */
}

static int run_opt(void *user, int key, const char *arg)
{
	struct run_args *a = user;
	switch (key) {
	case 'p': a->prompt = arg; return 0;
	case 'f': a->file = arg; return 0;
	case OPT_SYSTEM: a->system = arg; return 0;
	case OPT_THINK:
	case OPT_NO_THINK:
		if (a->think != TMPL_THINK_ABSENT &&
		    a->think != (key == OPT_THINK ? TMPL_THINK_ON : TMPL_THINK_OFF))
			return cli_usage("run", "--think and --no-think: give one"), -1;
		a->think = key == OPT_THINK ? TMPL_THINK_ON : TMPL_THINK_OFF;
		return 0;
	case OPT_RAW: a->raw = true; return 0;
	case OPT_STATS: a->stats = true; return 0;
	case OPT_PARSE_SPECIAL: a->parse_special = true; return 0;
	case OPT_KV_F32: a->kv_f32 = true; return 0;
	case OPT_FORMAT:
		a->schema_file = strcmp(arg, "json") ? arg : NULL;
		a->json = true;
		return 0;
	case OPT_LOGPROBS: return cli_parse_long("logprobs", arg, 0, 20, &a->logprobs);
	}
	return cli_unhandled(&run_cmd, key);
}

/* 0, CLI_DONE, or an exit status after printing the problem. */
static int parse_args(int argc, char **argv, struct run_args *a)
{
	memset(a, 0, sizeof *a);
	a->think = TMPL_THINK_ABSENT;
	a->logprobs = -1;
	int first;
	int r = cli_parse(&run_cmd, argc, argv, &a->cli, run_opt, a, &first);
	if (r)
		return r;
	if (first < argc) { /* ollama's way: the prompt after the options */
		if (a->prompt || a->file)
			return cli_usage("run", "the prompt is given twice ('%s' and %s): use one",
					 argv[first], a->prompt ? "-p" : "-f");
		a->prompt = argv[first];
	}
	if (a->prompt && a->file)
		return cli_usage("run", "-p and -f both give the prompt: use one");
	if (!a->prompt && !a->file && isatty(STDIN_FILENO))
		return cli_usage("run", "no prompt: give -p TEXT or -f FILE, or pipe it to stdin");
	if (a->raw && a->json)
		return cli_usage("run", "--format holds a chat answer: --raw has none");
	if (a->raw && (a->system || a->think != TMPL_THINK_ABSENT))
		return cli_usage("run", "--raw uses no template: --system, --think and "
					"--no-think do not apply");
	if (a->logprobs >= 0 && cli_is_remote(&a->cli))
		return cli_usage("run", "--logprobs needs the local engine");
	if (a->kv_f32 && cli_is_remote(&a->cli))
		return cli_usage("run", "--kv-f32 needs the local engine");
	if (a->parse_special && cli_is_remote(&a->cli))
		return cli_usage("run", "--parse-special needs the local engine: a server "
					"tokenizes the messages");
	if (a->raw && cli_is_remote(&a->cli))
		return cli_usage("run", "--raw needs the local engine: a server applies the chat "
					"template");
	if ((a->cli.set & CLI_SET_MAX_NEW) && a->cli.max_new < 1 && cli_is_remote(&a->cli))
		return cli_usage("run", "-n 0 needs the local engine: a server's max_tokens is at "
					"least 1");
	return 0;
}

/* The prompt text, malloc'd; NULL after printing the error. */
static char *read_prompt(const struct run_args *a)
{
	if (a->prompt)
		return strdup(a->prompt);
	size_t len;
	/* -f /dev/zero: refused before 64 MiB of it are read (stdin may be any stream
	 * a caller hands over, a socket too) */
	bool named = a->file && strcmp(a->file, "-");
	char *text = named && fio_check_ends(a->file)
			     ? NULL
			     : fio_read_all(a->file ? a->file : "-", (size_t)64 << 20, &len);
	if (!text)
		cli_error("%s", err_msg());
	else if (strlen(text) != len) {
		cli_error("%s: the prompt holds a NUL byte", a->file ? a->file : "stdin");
		free(text);
		text = NULL;
	}
	return text;
}

struct lp_state;

struct out_state {
	enum sess_part part; /* what was printed last */
	bool any_reasoning, any_answer;
	int write_failed;      /* the errno of a failed write to stdout; 0: none */
	const struct lp_state *lps; /* --logprobs' lines, or NULL */
	bool out_tty, err_tty; /* where escape sequences must be shown, not obeyed */
};

/* Writes the model's text: as it is to a pipe or file (a script gets the bytes),
 * with control characters made visible on a terminal (src/base/term.h). */
static size_t out_write(FILE *f, bool tty, const char *text, size_t len)
{
	if (!tty)
		return fwrite(text, 1, len, f);
	return term_write_safe(f, text, len) == 0 ? len : 0;
}

static int emit(void *user, enum sess_part part, const char *text, size_t len)
{
	struct out_state *o = user;
	if (part == SESS_REASONING) {
		if (!o->any_reasoning)
			fputs("<think>\n", stderr);
		o->any_reasoning = true;
		out_write(stderr, o->err_tty, text, len);
	} else {
		if (o->part == SESS_REASONING && o->any_reasoning)
			fputs("\n</think>\n", stderr);
		if (out_write(stdout, o->out_tty, text, len) != len || fflush(stdout)) {
			o->write_failed = errno ? errno : EIO;
			return 1;
		}
		o->any_answer |= len > 0;
	}
	o->part = part;
	return 0;
}

/* --logprobs: a token's text for JSON (ill-formed UTF-8 as U+FFFD) and, as OpenAI
 * gives it, its bytes. */
static json_t *token_json(const struct tok *t, int32_t id, float logprob)
{
	size_t n = 0;
	const char *p = tok_piece(t, id, &n);
	char text[256];
	size_t o = 0;
	json_t *bytes = json_array();
	for (size_t i = 0; p && i < n && o + 4 < sizeof text;) {
		size_t valid, bad;
		utf8_next_piece(p + i, n - i, &valid, &bad);
		if (valid > sizeof text - 4 - o)
			valid = 0, bad = 1; /* an absurdly long token: cut */
		memcpy(text + o, p + i, valid), o += valid;
		if (bad)
			memcpy(text + o, UTF8_REPLACEMENT, 3), o += 3;
		i += valid + bad;
	}
	for (size_t i = 0; p && i < n; i++)
		json_array_append_new(bytes, json_integer((unsigned char)p[i]));
	/* -9999 for no probability at all, as OpenAI and serve report it (JSON has no -inf) */
	double lp = isfinite(logprob) ? (double)logprob : -9999.0;
	return json_pack("{s:s%,s:i,s:f,s:o}", "token", text, o, "id", (json_int_t)id, "logprob",
			 lp, "bytes", bytes);
}

struct lp_state {
	const struct tok *t;
	int n;
	bool failed;     /* no more lines: the generation stops at the next text */
	int write_errno; /* ... because stdout failed (else the sampler did: err_msg) */
};

/* The session's token hook: one JSON line per token the sampler picked. */
static void on_token(void *user, int32_t id, const struct samp *sp)
{
	struct lp_state *st = user;
	struct samp_logprob top[20];
	float lp;
	if (st->failed || samp_logprobs(sp, id, &lp, top, st->n)) {
		st->failed = true;
		return;
	}
	json_t *o = token_json(st->t, id, lp), *alts = json_array();
	for (int i = 0; i < st->n; i++)
		json_array_append_new(alts, token_json(st->t, top[i].id, top[i].logprob));
	json_object_set_new(o, "top", alts);
	char *line = json_dumps(o, JSON_COMPACT | JSON_REAL_PRECISION(9));
	if (!line || printf("%s\n", line) < 0 || fflush(stdout)) {
		st->failed = true;
		st->write_errno = line ? (errno ? errno : EIO) : ENOMEM;
	}
	free(line);
	json_decref(o);
}

/* With --logprobs the text goes nowhere: the JSON lines say it (and once they cannot,
 * the generation stops). */
static int emit_none(void *user, enum sess_part part, const char *text, size_t len)
{
	const struct lp_state *lps = ((const struct out_state *)user)->lps;
	(void)part, (void)text, (void)len;
	return lps && lps->failed;
}

static const char *stop_name(enum sess_stop s)
{
	static const char *names[] = {"end of turn", "max new tokens", "context full",
				      "interrupted", "output error"};
	return names[s];
}

/* seed: the sampler's, or NULL when a server picked it; failed: the turn ended on an
 * error (said on the next line), whatever st->stop holds */
static void print_seed(const uint64_t *seed)
{
	if (seed)
		fprintf(stderr, "stats: seed %llu (--seed %llu repeats this answer)\n",
			(unsigned long long)*seed, (unsigned long long)*seed);
}

static void print_stats(const struct sess_stats *st, const uint64_t *seed, bool failed)
{
	char rate[48] = "no rate: one token, or all at once"; /* a server's single chunk */
	if (st->decode_tps > 0)
		snprintf(rate, sizeof rate, "%.1f tok/s", st->decode_tps);
	char ttft[48] = "no first token"; /* -n 0, or a stop before one */
	if (st->generated > 0)
		snprintf(ttft, sizeof ttft, "time to first token %.3f s", st->ttft);
	print_seed(seed);
	fprintf(stderr,
		"stats: %d token%s reused, %d prefilled in %.3f s (%.1f tok/s), %s\n"
		"stats: %d generated in %.3f s (%s), stopped: %s\n",
		st->reused, st->reused == 1 ? "" : "s", st->prefilled, st->prefill_seconds,
		st->prefill_tps, ttft, st->generated, st->decode_seconds, rate,
		failed ? "error" : stop_name(st->stop));
}

/* The prompt's token ids: the raw text, or the one-turn conversation rendered. */
/* --think or --no-think, or without either the template's own default. */
static int run_think(const struct run_args *a, const struct tok *t)
{
	return a->think != TMPL_THINK_ABSENT ? a->think : tmpl_absent_think(tok_chat_template(t));
}

static int32_t *prompt_ids(const struct run_args *a, struct tok *t, const char *prompt, int ctx,
			   enum sess_split *split, int *n)
{
	if (a->raw) {
		size_t k;
		int32_t *ids = tok_encode(t, prompt, strlen(prompt), &k);
		if (ids && k > (size_t)ctx) { /* ctx tokens still give one token */
			err_set("the prompt is %zu tokens, the context holds %d", k, ctx);
			free(ids);
			return NULL;
		}
		if (ids && k == 0) {
			err_set("the prompt is empty: nothing to continue");
			free(ids);
			return NULL;
		}
		*split = SESS_SPLIT_NONE;
		*n = (int)k;
		return ids;
	}
	const char *warning = NULL;
	enum tmpl_variant v = tmpl_detect(tok_chat_template(t), &warning);
	if (warning)
		fprintf(stderr, "qwenchat: warning: %s\n", warning);
	else if (a->think != TMPL_THINK_ABSENT && !tmpl_has_think_switch(v))
		fprintf(stderr, "qwenchat: %s: this model's template (%s) has no thinking switch\n",
			a->think ? "--think" : "--no-think", tmpl_variant_name(v));
	struct chat *c = chat_new();
	int32_t *ids = NULL;
	int dropped = 0;
	int think = run_think(a, t);
	if (c && (!a->system || chat_set_system(c, a->system) == 0) &&
	    chat_add(c, CHAT_USER, prompt, NULL) == 0)
		ids = chat_render_fit(t, c, v, think, !a->parse_special, ctx, 1, 0, n, &dropped);
	chat_free(c);
	*split = tmpl_prompt_opens_think(v, think) ? SESS_SPLIT_REASONING_FIRST
						   : SESS_SPLIT_ANSWER_FIRST;
	return ids;
}

/* Sampling settings: generation_config.json, the non-thinking preset when thinking
 * is switched off on a hybrid model, then the user's options. */
static int sampling(const struct run_args *a, const char *dir, struct tok *t, struct samp_params *p,
		    int32_t *eos, int *n_eos)
{
	samp_params_default(p);
	if (loader_generation(dir, p, eos, n_eos))
		return -1;
	enum tmpl_variant v = tmpl_detect(tok_chat_template(t), NULL);
	if (!a->raw && run_think(a, t) == TMPL_THINK_OFF && tmpl_has_think_switch(v))
		samp_params_preset(p, false, a->cli.set);
	cli_sampling(&a->cli, p);
	if (!(a->cli.set & SAMP_SET_SEED))
		p->seed = cli_random_seed();
	return samp_params_check(p);
}

/* The SAMP_SET_* bits among the options' bits. */
enum {
	SAMP_SET_ALL = SAMP_SET_TEMP | SAMP_SET_TOP_K | SAMP_SET_TOP_P | SAMP_SET_MIN_P |
		       SAMP_SET_PRESENCE | SAMP_SET_FREQUENCY | SAMP_SET_REPEAT | SAMP_SET_SEED |
		       SAMP_SET_GREEDY,
	SAMP_SET_PRESET = SAMP_SET_TEMP | SAMP_SET_TOP_K | SAMP_SET_TOP_P | SAMP_SET_MIN_P,
};

/* A wait for a busy server, said when it starts: the notices held until the model
 * is known go out first. */
static void busy_notice(void *unused, const char *msg)
{
	(void)unused;
	cli_notices_flush();
	cli_notice(msg);
}

/* The turn on a server (the remote backend): the same output, from the stream. */
static int run_remote(struct run_args *a, const char *prompt)
{
	struct remote_options o;
	if (cli_remote_options(&a->cli, &o, cli_notice))
		return EXIT_RUNTIME;
	o.on_retry = busy_notice;
	struct remote *r = remote_new(&o);
	cli_remote_free(&o);
	struct chat *c = chat_new();
	struct remote_request q = {
		.chat = c, .think = a->think, .json = a->json, .schema = a->schema};
	char *model = NULL;
	long ctx;
	int rc = EXIT_RUNTIME;
	/* SIGINT, SIGHUP and SIGTERM stop the turn (SA_RESTART: as signal()); one ignored
	   when run started (nohup's SIGHUP, a background job's SIGINT) stays ignored */
	struct sigaction stops[PROC_N_STOPS];
	proc_catch_stops(on_sigint, SA_RESTART, stops);
	/* A server closing the socket while we write is an error to report (libcurl runs
	 * with NOSIGNAL and leaves SIGPIPE alone); stdout's EPIPE is then one too. */
	signal(SIGPIPE, SIG_IGN);
	if (!r || !c || (a->system && chat_set_system(c, a->system)) ||
	    chat_add(c, CHAT_USER, prompt, NULL) ||
	    !(model = remote_pick_model(r, a->cli.model, &ctx, &g_cancel))) {
		bool stopped = atomic_load(&g_cancel);
		cli_error("%s", stopped ? "interrupted" : err_msg());
		if (stopped)
			rc = stopped_status(); /* 130, 143 or 129, as mid-answer */
		goto done;
	}
	cli_notices_flush(); /* the server answers: what was noted on the options */
	/* Only what was given, and the non-thinking preset with --no-think, as locally. */
	samp_params_default(&q.sampling);
	q.sampling_set = a->cli.set & SAMP_SET_ALL;
	if (a->think == TMPL_THINK_OFF) {
		samp_params_preset(&q.sampling, false, a->cli.set);
		q.sampling_set |= SAMP_SET_PRESET;
	}
	cli_sampling(&a->cli, &q.sampling);
	q.model = model;
	q.max_tokens = a->cli.set & CLI_SET_MAX_NEW ? a->cli.max_new : 0;
	struct out_state out = {.part = SESS_ANSWER,
				.out_tty = isatty(STDOUT_FILENO),
				.err_tty = isatty(STDERR_FILENO)};
	struct reply rep;
	reply_init(&rep, emit, &out);
	double t0 = clock_now();
	int r2 = samp_params_check(&q.sampling) ? -1 : remote_chat(r, &q, &rep, &g_cancel);
	/* the answer's line ended; nothing on stdout where none came (an error, calls) */
	if (out.part == SESS_REASONING && out.any_reasoning)
		fputs("\n</think>\n", stderr);
	else if (out.any_answer)
		putchar('\n');
	for (size_t i = 0; i < rep.n_calls; i++) /* as the chat shows a call */
		if (rep.calls[i].name.n) {
			fputs("tool call: ", stdout);
			out_write(stdout, out.out_tty, rep.calls[i].name.p, rep.calls[i].name.n);
			fputc(' ', stdout);
			out_write(stdout, out.out_tty,
				  rep.calls[i].arguments.p ? rep.calls[i].arguments.p : "",
				  rep.calls[i].arguments.n);
			fputc('\n', stdout);
		}
	fflush(stdout);
	struct sess_stats st = {0};
	reply_stats(&rep, t0, &st);
	st.stop = atomic_load(&g_cancel)       ? SESS_STOP_CANCEL
		  : rep.finish == REPLY_LENGTH ? SESS_STOP_MAX
					       : SESS_STOP_EOS;
	const uint64_t *seed = a->cli.set & SAMP_SET_SEED ? &a->cli.sampling.seed : NULL;
	if (a->stats && rep.prompt_tokens < 0) { /* a server that sent no usage */
		print_seed(seed);
		fprintf(stderr,
			"stats: the server sent no token counts; time to first token %.3f s\n"
			"stats: %zu piece%s of text in %.3f s, stopped: %s\n",
			st.ttft, rep.deltas, rep.deltas == 1 ? "" : "s", st.decode_seconds,
			r2 ? "error" : stop_name(st.stop));
	} else if (a->stats) {
		print_stats(&st, seed, r2 != 0);
	}
	if (r2)
		cli_error("%s", err_msg());
	else if (out.write_failed == EPIPE)
		rc = closed_pipe();
	else if (out.write_failed)
		cli_error("standard output: write failed: %s", strerror(out.write_failed));
	else if (st.stop == SESS_STOP_CANCEL)
		cli_error("interrupted"), rc = stopped_status();
	else
		rc = EXIT_OK;
	reply_free(&rep);
done:
	proc_restore_stops(stops);
	free(model);
	chat_free(c);
	remote_free(r);
	return rc;
}

/* --format: JSON mode's schema, or FILE's read and compiled. 0, or -1 after saying
 * what is wrong with FILE. */
static int load_format(struct run_args *a)
{
	a->format = a->schema_file ? js_load(a->schema_file, &a->schema) : js_object();
	return a->format ? 0 : (cli_error("--format: %s", err_msg()), -1);
}

static int run_turn(struct run_args a);

int cmd_run(int argc, char **argv)
{
	struct run_args a;
	int rc = parse_args(argc, argv, &a);
	if (rc)
		return rc == CLI_DONE ? EXIT_OK : rc;
	if (a.json && load_format(&a))
		rc = EXIT_USAGE;
	else
		rc = run_turn(a);
	json_decref(a.schema);
	js_free(a.format);
	return rc;
}

/* The turn, with the arguments parsed. */
static int run_turn(struct run_args a)
{
	int rc;
	struct eng_options eo;
	struct hub_env hub;
	cli_notices_hold(); /* a notice on the options, then an error: the error alone */
	if (!cli_is_remote(&a.cli) && cli_engine_options(&a.cli, &eo, NULL))
		return EXIT_USAGE;
	eo.kv_f32 = a.kv_f32;
	cli_env_hub(&hub);
	char *prompt = read_prompt(&a);
	if (!prompt)
		return EXIT_RUNTIME;
	/* an empty message would be answered until the context is full */
	if (!prompt[strspn(prompt, " \t\r\n")]) {
		free(prompt);
		return cli_usage("run", a.file     ? "the prompt file is empty: nothing to send"
					: a.prompt ? "the prompt is empty: nothing to send"
						   : "stdin gave an empty prompt: nothing to send");
	}
	if (cli_is_remote(&a.cli)) { /* its notices wait for the server's first answer */
		rc = run_remote(&a, prompt);
		free(prompt);
		return rc;
	}
	rc = EXIT_RUNTIME;
	char *dir = NULL;
	struct eng_model *m = NULL;
	struct eng *e = NULL;
	struct tok *t = NULL;
	struct samp *sp = NULL;
	struct sess *s = NULL;
	int32_t *ids = NULL;
	struct samp_params params;
	int32_t eos[SAMP_MAX_EOS];
	int n_eos = 0, n = 0;
	enum sess_split split;
	if (!(dir = hub_resolve(&hub, a.cli.model)) || !(t = loader_tokenizer(dir)) ||
	    sampling(&a, dir, t, &params, eos, &n_eos) || !(m = eng_model_open(dir)) ||
	    loader_check_vocab(t, eng_model_config(m)->vocab_size, dir))
		goto fail;
	if (!(e = eng_new(m, &eo, cli_notice)) ||
	    !(sp = samp_new(&params, eng_model_config(m)->vocab_size)))
		goto fail;
	struct sess_options so = {.eos = eos, .n_eos = n_eos, .cancel = &g_cancel};
	if (!(s = sess_new(e, m, t, &so)) || sess_set_json(s, a.format) ||
	    !(ids = prompt_ids(&a, t, prompt, eng_ctx(e), &split, &n)))
		goto fail;
	cli_notices_flush(); /* the model is up: before its answer */
	struct sigaction stops[PROC_N_STOPS]; /* as run_remote's */
	proc_catch_stops(on_sigint, SA_RESTART, stops);
	int r = sess_sync(s, ids, n);
	if (r < 0)
		goto fail;
	struct out_state out = {.part = SESS_ANSWER,
				.out_tty = isatty(STDOUT_FILENO),
				.err_tty = isatty(STDERR_FILENO)};
	/* without -n the answer runs until the turn ends or the context is full (the
	 * session then says "context full") */
	int max_new = a.cli.set & CLI_SET_MAX_NEW ? a.cli.max_new : INT_MAX;
	struct lp_state lps = {t, (int)a.logprobs, false, 0};
	if (a.logprobs >= 0) {
		sess_set_token_hook(s, on_token, &lps);
		out.lps = &lps;
	}
	if (r == 0 &&
	    sess_generate(s, sp, max_new, split, a.logprobs >= 0 ? emit_none : emit, &out))
		goto fail;
	if (lps.write_errno && !out.write_failed)
		out.write_failed = lps.write_errno;
	if (out.part == SESS_REASONING && out.any_reasoning)
		fputs("\n</think>\n", stderr);
	else if (!a.raw && a.logprobs < 0)
		putchar('\n');
	fflush(stdout);
	proc_restore_stops(stops);
	if (a.stats)
		print_stats(sess_stats(s), &params.seed, false);
	if (out.write_failed)
		cli_error("standard output: write failed: %s", strerror(out.write_failed));
	else if (lps.failed)
		cli_error("--logprobs: %s", err_msg());
	else if (r == 1 || sess_stats(s)->stop == SESS_STOP_CANCEL)
		cli_error("interrupted"), rc = stopped_status();
	else
		rc = EXIT_OK;
	goto done;
fail:
	cli_error("%s", err_msg());
done:
	free(ids);
	sess_free(s);
	samp_free(sp);
	eng_free(e);
	eng_model_free(m);
	tok_free(t);
	free(dir);
	free(prompt);
	return rc;
}
