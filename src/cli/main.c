/* main.c — the qwenchat program: picks the subcommand and hands it the arguments. */
#include "src/app/app.h"
#include "src/cli/cli.h"
#include "src/cli/commands.h"
#include "src/cli/env.h"
#include "src/cli/sigbus.h"
#include "src/base/err.h"
#include "src/app/plain.h"
#if HAVE_TUI
#include "ui/ui.h"
#endif

#include <locale.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char usage[] =
	"usage: qwenchat [COMMAND] [OPTIONS]\n"
	"\n"
	"Chat with Qwen3 models in the terminal, on the GPU (CUDA) or the CPU, or on an\n"
	"OpenAI-compatible server such as vLLM or SGLang (--url http://HOST:PORT/v1).\n"
	"\n"
	"commands:\n"
	"  chat        interactive chat UI (the default command)\n"
	"  run         one chat turn, the answer streamed to stdout\n"
	"  tokenize    text on stdin -> token ids\n"
	"  detokenize  token ids on stdin -> text\n"
	"  template    render a conversation with the Qwen3 chat template\n"
	"  logits      token ids on stdin -> float32 logits file\n"
	"  bench       prefill and decode throughput\n"
	"  info        model configuration, parameters and memory plan\n"
	"  pull        download a model into the Hugging Face cache\n"
	"  list        Qwen3 models in the Hugging Face cache (--url: a server's)\n"
	"  train-bpe   train a byte-level BPE tokenizer\n"
	"  serve       OpenAI-compatible API (chat completions) on the model\n"
	"  quantize    write a model as a GGUF file (q8_0, q6_k, q5_k_m, q4_k_m, q4_0)\n"
	"  perplexity  mean NLL and perplexity of a file; KL against a second model\n"
	"  train       train a Qwen3 model (from a model's weights or from scratch)\n"
	"\n"
	"'qwenchat COMMAND --help' describes a command's options.\n"
	"  -h, --help     show this help\n"
	"  -V, --version  show the version\n";

static const struct cli_opt chat_opts[] = {
	{"plain", CLI_OWN + 1, NULL, "line mode: no full-screen UI"},
	{"resume", CLI_OWN + 2, NULL,
	 "reopen the last conversation (it is saved after every turn)\n"
	 "with the model (or server), thinking and sampling choices it\n"
	 "was held with; options given here win, and a different -m\n"
	 "is said aloud"},
	{"think", CLI_OWN + 3, NULL, "start with thinking on (the default)"},
	{"no-think", CLI_OWN + 4, NULL, "start with thinking off"},
	{"system", CLI_OWN + 5, "TEXT", "system prompt of a new conversation"},
	{"parse-special", CLI_OWN + 6, NULL,
	 "special tokens typed in messages (<|im_start|>, ...) are\n"
	 "control tokens, as Hugging Face parses them by default\n"
	 "(else they are text; /special switches it)"},
	{0},
};

static const struct cli_command chat_cmd = {
	.name = "chat",
	.synopsis = "[-m MODEL] [options]",
	.about = "Chat with the model: the terminal UI, or a plain line mode with --plain or when\n"
		 "stdin or stdout is not a terminal. Type /help in the chat for commands and "
		 "keys.\n"
		 "With --url the model runs on an OpenAI-compatible server (the remote backend):\n"
		 "-m names a model it serves ('qwenchat list --url URL' lists them).\n",
	.groups = CLI_MODEL | CLI_ENGINE | CLI_SAMPLING | CLI_MAX_NEW | CLI_REMOTE,
	.opts = chat_opts,
};

struct chat_args {
	struct app_config cfg;
	bool plain;
};

static int chat_opt(void *user, int key, const char *arg)
{
	struct chat_args *a = user;
	switch (key) {
	case CLI_OWN + 1: a->plain = true; break;
	case CLI_OWN + 2: a->cfg.resume = true; break;
	case CLI_OWN + 3: a->cfg.think = 1; break;
	case CLI_OWN + 4: a->cfg.think = 0; break;
	case CLI_OWN + 5: a->cfg.system = arg; break;
	case CLI_OWN + 6: a->cfg.parse_special = true; break;
	}
	return 0;
}

/* Notices from opening the model, shown once the chat is on screen. */
static char notices[2048];

static void keep_notice(const char *msg)
{
	size_t n = strlen(notices);
	snprintf(notices + n, sizeof notices - n, "%s\n", msg);
}

int cmd_chat(int argc, char **argv)
{
	struct chat_args a = {.cfg.think = -1};
	struct cli_common com;
	struct hub_env hub;
	int rc = cli_parse(&chat_cmd, argc, argv, &com, chat_opt, &a, NULL);
	if (rc)
		return rc == CLI_DONE ? EXIT_OK : rc;
	char *state = cli_env_state_dir();
	if (!state) {
		cli_error("out of memory");
		return EXIT_RUNTIME;
	}
	/* --resume alone goes back to the server the conversation was held on */
	char *held_url = a.cfg.resume && !com.model && !com.url && !strcmp(com.backend, "auto")
				 ? app_resume_url(state)
				 : NULL;
	if (held_url) {
		com.url = held_url;
		com.backend = "remote";
	}
	if (cli_is_remote(&com) ? cli_remote_options(&com, &a.cfg.remote, keep_notice)
				: cli_engine_options(&com, &a.cfg.engine, keep_notice)) {
		free(state);
		free(held_url);
		return cli_is_remote(&com) ? EXIT_RUNTIME : EXIT_USAGE;
	}
	cli_env_hub(&hub);
	a.cfg.model = com.model;
	a.cfg.hub = &hub;
	a.cfg.sampling = com.sampling;
	a.cfg.sampling_set = com.set;
	/* a random seed unless --seed (a server picks its own) */
	if (!cli_is_remote(&com) && !(com.set & SAMP_SET_SEED)) {
		a.cfg.sampling.seed = cli_random_seed();
		a.cfg.sampling_set |= SAMP_SET_SEED;
		a.cfg.seed_drawn = true;
	}
	a.cfg.max_new = com.set & CLI_SET_MAX_NEW ? com.max_new : 0;
	a.cfg.home = cli_env_home();
	a.cfg.state_dir = state;
	if (!isatty(STDIN_FILENO) || !isatty(STDOUT_FILENO))
		a.plain = true;
	/* The remote backend's socket may be closed by the server while we write to it:
	 * that is an error to report, not a reason to die (libcurl runs with NOSIGNAL,
	 * as the chat has threads, so it does not ignore SIGPIPE itself). */
	if (cli_is_remote(&com))
		signal(SIGPIPE, SIG_IGN);
	struct app *app = app_open(&a.cfg, keep_notice);
	free(state);
	free(held_url);
	cli_remote_free(&a.cfg.remote); /* the client keeps its own copy of the key */
	if (!app) {
		cli_error("%s", err_msg());
		return EXIT_RUNTIME;
	}
	if (a.plain)
		fputs(notices, stderr);
#if HAVE_TUI
	sigbus_fullscreen(!a.plain);
	rc = a.plain ? ui_plain(app) : ui_main(app, notices);
	sigbus_fullscreen(false);
#else
	/* Without the TUI there is no readline either: lines are read with getline. */
	rc = plain_main(app, plain_getline);
#endif
	app_free(app);
	return rc;
}

static const struct {
	const char *name;
	int (*run)(int argc, char **argv);
} commands[] = {
	{"chat", cmd_chat},           {"run", cmd_run},
	{"tokenize", cmd_tokenize},   {"detokenize", cmd_detokenize},
	{"template", cmd_template},   {"logits", cmd_logits},
	{"bench", cmd_bench},         {"info", cmd_info},
	{"pull", cmd_pull},           {"list", cmd_list},
	{"train-bpe", cmd_train_bpe}, {"serve", cmd_serve},
	{"quantize", cmd_quantize},   {"perplexity", cmd_perplexity}, {"train", cmd_train},
};

int main(int argc, char **argv)
{
	sigbus_guard();
	setlocale(LC_ALL, "");
	if (argc >= 2 && (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help"))) {
		fputs(usage, stdout);
		return EXIT_OK;
	}
	if (argc >= 2 && (!strcmp(argv[1], "-V") || !strcmp(argv[1], "--version"))) {
		printf("qwenchat %s\n", PACKAGE_VERSION);
		return EXIT_OK;
	}
	/* No command, or options first: the chat UI. */
	if (argc < 2 || argv[1][0] == '-')
		return cmd_chat(argc, argv);
	for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
		if (!strcmp(argv[1], commands[i].name))
			return commands[i].run(argc - 1, argv + 1);
	cli_error("unknown command '%s' (try 'qwenchat --help')", argv[1]);
	return EXIT_USAGE;
}
