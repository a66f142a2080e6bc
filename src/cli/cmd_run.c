/* cmd_run.c — `qwenchat run`: one chat turn (or a raw continuation) streamed to the
 * terminal: the answer to stdout, the reasoning to stderr, statistics on request. */
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "engine/engine.h"
#include "src/chat/chat.h"
#include "src/cli/cli.h"
#include "src/cli/commands.h"
#include "src/base/err.h"
#include "src/base/fileio.h"
#include "src/hub/hub.h"
#include "src/hub/loader.h"
#include "src/session/sampler.h"
#include "src/session/session.h"
#include "src/chat/template.h"
#include "tokenizer/tokenizer.h"

static const char run_help[] =
	"usage: qwenchat run -m MODEL [-p TEXT | -f FILE] [options]\n"
	"One chat turn: the prompt (-p, -f FILE, or stdin when neither is given) is sent\n"
	"as a user message and the answer is streamed to stdout. The model's reasoning\n"
	"(its <think> block) is streamed to stderr between <think> and </think> lines,\n"
	"so stdout holds the answer alone.\n"
	"  -p, --prompt TEXT        the user message\n"
	"  -f, --file FILE          read the user message from FILE ('-' = stdin)\n"
	"      --system TEXT        a system prompt\n"
	"      --think, --no-think  enable_thinking true or false (default: the template's,\n"
	"                           thinking for Qwen3); --no-think also switches the\n"
	"                           sampling defaults to Qwen's non-thinking preset\n"
	"      --raw                no chat template: continue the prompt text as it is\n"
	"                           (everything generated goes to stdout)\n"
	"      --stats              tokens reused/prefilled/generated, time to first token,\n"
	"                           prefill and decode tokens/s, on stderr\n"
	"  -n, --max-new N          stop after N new tokens (default: until the context is full)\n"
	"      --help               this text\n"
	"Sampling defaults come from the model's generation_config.json (Qwen3: temperature\n"
	"0.6, top-k 20, top-p 0.95); with --no-think Qwen's non-thinking preset (temperature\n"
	"0.7, top-k 20, top-p 0.8, min-p 0). Options given explicitly always win.\n"
	"Common options:\n";

enum { OPT_SYSTEM = CLI_OPT_NEXT, OPT_THINK, OPT_NO_THINK, OPT_RAW, OPT_STATS, OPT_HELP };

struct run_args {
	struct cli_common cli;
	const char *prompt, *file, *system;
	int think; /* TMPL_THINK_* */
	bool raw, stats;
};

static atomic_int g_cancel; /* set by SIGINT: stops the turn, the session stays sane */

static void on_sigint(int sig)
{
	(void)sig;
	atomic_store(&g_cancel, 1);
}


/* 0, or an exit status after printing the problem. */
static int parse_args(int argc, char **argv, struct run_args *a)
{
	static const struct option longopts[] = {CLI_COMMON_LONGOPTS,
						 {"prompt", required_argument, 0, 'p'},
						 {"file", required_argument, 0, 'f'},
						 {"system", required_argument, 0, OPT_SYSTEM},
						 {"think", no_argument, 0, OPT_THINK},
						 {"no-think", no_argument, 0, OPT_NO_THINK},
						 {"raw", no_argument, 0, OPT_RAW},
						 {"stats", no_argument, 0, OPT_STATS},
						 {"help", no_argument, 0, OPT_HELP},
						 {0, 0, 0, 0}};
	int code, r;
	memset(a, 0, sizeof *a);
	cli_common_init(&a->cli);
	a->think = TMPL_THINK_ABSENT;
	opterr = 0; /* one message of ours instead of getopt's plus ours */
	while ((code = getopt_long(argc, argv, "m:n:p:f:", longopts, NULL)) != -1) {
		if ((r = cli_common_opt(&a->cli, code, optarg)) == 1)
			continue;
		if (r < 0)
			return EXIT_USAGE;
		switch (code) {
		case 'p': a->prompt = optarg; break;
		case 'f': a->file = optarg; break;
		case OPT_SYSTEM: a->system = optarg; break;
		case OPT_THINK: a->think = TMPL_THINK_ON; break;
		case OPT_NO_THINK: a->think = TMPL_THINK_OFF; break;
		case OPT_RAW: a->raw = true; break;
		case OPT_STATS: a->stats = true; break;
		case OPT_HELP: printf("%s%s", run_help, cli_common_help); return -1;
		default:
			return cli_usage(argv[0], "unknown option or missing value: '%s'",
					 argv[optind - 1]);
		}
	}
	if (optind < argc)
		return cli_usage(argv[0], "unexpected argument '%s'", argv[optind]);
	if (a->prompt && a->file)
		return cli_usage(argv[0], "-p and -f both give the prompt: use one");
	if (!a->prompt && !a->file && isatty(STDIN_FILENO))
		return cli_usage(argv[0],
				 "no prompt: give -p TEXT or -f FILE, or pipe it to stdin");
	if (a->raw && (a->system || a->think != TMPL_THINK_ABSENT))
		return cli_usage(argv[0], "--raw uses no template: --system, --think and "
					  "--no-think do not apply");
	return 0;
}

/* The prompt text, malloc'd; NULL after printing the error. */
static char *read_prompt(const struct run_args *a)
{
	if (a->prompt)
		return strdup(a->prompt);
	size_t len;
	char *text = fio_read_all(a->file ? a->file : "-", (size_t)64 << 20, &len);
	if (!text)
		cli_error("%s", err_msg());
	else if (strlen(text) != len) {
		cli_error("%s: the prompt holds a NUL byte", a->file ? a->file : "stdin");
		free(text);
		text = NULL;
	}
	return text;
}

struct out_state {
	enum sess_part part; /* what was printed last */
	bool any_reasoning;
	bool write_failed;
};

static int emit(void *user, enum sess_part part, const char *text, size_t len)
{
	struct out_state *o = user;
	if (part == SESS_REASONING) {
		if (!o->any_reasoning)
			fputs("<think>\n", stderr);
		o->any_reasoning = true;
		fwrite(text, 1, len, stderr);
	} else {
		if (o->part == SESS_REASONING && o->any_reasoning)
			fputs("\n</think>\n", stderr);
		if (fwrite(text, 1, len, stdout) != len || fflush(stdout)) {
			o->write_failed = true;
			return 1;
		}
	}
	o->part = part;
	return 0;
}

static const char *stop_name(enum sess_stop s)
{
	static const char *names[] = {"end of turn", "max new tokens", "context full",
				      "interrupted", "output error"};
	return names[s];
}

static void print_stats(const struct sess_stats *st)
{
	fprintf(stderr,
		"stats: %d tokens reused, %d prefilled in %.3f s (%.1f tok/s), "
		"time to first token %.3f s\n"
		"stats: %d generated in %.3f s (%.1f tok/s), stopped: %s\n",
		st->reused, st->prefilled, st->prefill_seconds, st->prefill_tps, st->ttft,
		st->generated, st->decode_seconds, st->decode_tps, stop_name(st->stop));
}

/* The prompt's token ids: the raw text, or the one-turn conversation rendered. */
static int32_t *prompt_ids(const struct run_args *a, struct tok *t, const char *prompt, int ctx,
			   enum sess_split *split, int *n)
{
	if (a->raw) {
		size_t k;
		int32_t *ids = tok_encode(t, prompt, strlen(prompt), &k);
		if (ids && k > (size_t)ctx - 1) {
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
		fprintf(stderr, "qwenchat: %s\n", warning);
	struct chat *c = chat_new();
	int32_t *ids = NULL;
	int dropped;
	if (c && (!a->system || chat_set_system(c, a->system) == 0) &&
	    chat_add(c, CHAT_USER, prompt, NULL) == 0)
		ids = sess_render_fit(t, c, v, a->think, ctx, 1, n, &dropped);
	chat_free(c);
	*split = tmpl_prompt_opens_think(v, a->think) ? SESS_SPLIT_REASONING_FIRST
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
	if (!a->raw && a->think == TMPL_THINK_OFF && tmpl_has_think_switch(v))
		samp_params_preset(p, false, a->cli.set);
	cli_sampling(&a->cli, p);
	return samp_params_check(p);
}

int cmd_run(int argc, char **argv)
{
	struct run_args a;
	int rc = parse_args(argc, argv, &a);
	if (rc)
		return rc < 0 ? EXIT_OK : rc;
	char *prompt = read_prompt(&a);
	if (!prompt)
		return EXIT_RUNTIME;
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
	if (!(dir = hub_resolve(a.cli.model)) || !(t = loader_tokenizer(dir)) ||
	    sampling(&a, dir, t, &params, eos, &n_eos) || !(m = eng_model_open(dir)))
		goto fail;
	struct eng_options eo = {eng_backend_kind(a.cli.backend), a.cli.threads, a.cli.ctx, false,
				 cli_upload_progress};
	if (!(e = eng_new(m, &eo, cli_notice)) ||
	    !(sp = samp_new(&params, eng_model_config(m)->vocab_size)))
		goto fail;
	struct sess_options so = {.eos = eos, .n_eos = n_eos, .cancel = &g_cancel};
	if (!(s = sess_new(e, m, t, &so)) ||
	    !(ids = prompt_ids(&a, t, prompt, eng_ctx(e), &split, &n)))
		goto fail;
	signal(SIGINT, on_sigint);
	int r = sess_sync(s, ids, n);
	if (r < 0)
		goto fail;
	struct out_state out = {SESS_ANSWER, false, false};
	int room = eng_ctx(e) - n;
	int max_new = (a.cli.set & CLI_SET_MAX_NEW) && a.cli.max_new < room ? a.cli.max_new : room;
	if (r == 0 && sess_generate(s, sp, max_new, split, emit, &out))
		goto fail;
	if (out.part == SESS_REASONING && out.any_reasoning)
		fputs("\n</think>\n", stderr);
	else if (!a.raw)
		putchar('\n');
	fflush(stdout);
	signal(SIGINT, SIG_DFL);
	if (a.stats)
		print_stats(sess_stats(s));
	if (out.write_failed)
		cli_error("stdout: write failed");
	else if (r == 1 || sess_stats(s)->stop == SESS_STOP_CANCEL)
		cli_error("interrupted");
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
