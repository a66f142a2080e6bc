/* main.c — the qwenchat program: picks the subcommand and hands it the arguments. */
#include "src/app/app.h"
#include "src/cli/cli.h"
#include "src/cli/commands.h"
#include "src/base/err.h"
#include "src/app/plain.h"
#if HAVE_TUI
#include "ui/ui.h"
#endif

#include <locale.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char usage[] =
	"usage: qwenchat [COMMAND] [OPTIONS]\n"
	"\n"
	"Chat with Qwen3 models in the terminal, on the GPU (CUDA) or the CPU.\n"
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
	"  list        Qwen3 models in the Hugging Face cache\n"
	"  train-bpe   train a byte-level BPE tokenizer\n"
	"\n"
	"'qwenchat COMMAND --help' describes a command's options.\n"
	"  -h, --help     show this help\n"
	"  -V, --version  show the version\n";

static const char chat_usage[] =
	"usage: qwenchat [chat] [-m MODEL] [options]\n"
	"\n"
	"Chat with the model: the terminal UI, or a plain line mode with --plain or when\n"
	"stdin or stdout is not a terminal. Type /help in the chat for commands and keys.\n"
	"\n"
	"options:\n"
	"      --plain              line mode: no full-screen UI\n"
	"      --resume             reopen the last conversation (it is saved after every turn)\n"
	"      --think, --no-think  start with thinking on (default) or off\n"
	"      --system TEXT        system prompt of a new conversation\n"
	"  -h, --help               show this help\n";

/* Notices from opening the model, shown once the chat is on screen. */
static char notices[2048];

static void keep_notice(const char *msg)
{
	size_t n = strlen(notices);
	snprintf(notices + n, sizeof notices - n, "%s\n", msg);
}

/* Parses the chat options; 0, or an exit status + 1 when done (help or bad usage). */
static int chat_options(int argc, char **argv, struct app_config *cfg, bool *plain)
{
	enum { OPT_PLAIN = CLI_OPT_NEXT, OPT_RESUME, OPT_THINK, OPT_NO_THINK, OPT_SYSTEM };
	static const struct option longopts[] = {
		CLI_COMMON_LONGOPTS,
		{"plain", no_argument, 0, OPT_PLAIN},
		{"resume", no_argument, 0, OPT_RESUME},
		{"think", no_argument, 0, OPT_THINK},
		{"no-think", no_argument, 0, OPT_NO_THINK},
		{"system", required_argument, 0, OPT_SYSTEM},
		{"help", no_argument, 0, 'h'},
		{0, 0, 0, 0},
	};
	int o;
	while ((o = getopt_long(argc, argv, "m:n:h", longopts, NULL)) != -1) {
		int r = cli_common_opt(&cfg->common, o, optarg);
		if (r < 0)
			return EXIT_USAGE + 1;
		if (r)
			continue;
		switch (o) {
		case OPT_PLAIN: *plain = true; break;
		case OPT_RESUME: cfg->resume = true; break;
		case OPT_THINK: cfg->think = 1; break;
		case OPT_NO_THINK: cfg->think = 0; break;
		case OPT_SYSTEM: cfg->system = optarg; break;
		case 'h':
			fputs(chat_usage, stdout);
			fputs(cli_common_help, stdout);
			return EXIT_OK + 1;
		default: fprintf(stderr, "try 'qwenchat chat --help'\n"); return EXIT_USAGE + 1;
		}
	}
	if (optind < argc)
		return cli_usage("chat", "unexpected argument '%s'", argv[optind]) + 1;
	return 0;
}

int cmd_chat(int argc, char **argv)
{
	struct app_config cfg = {0};
	bool plain = false;
	cli_common_init(&cfg.common);
	cfg.think = 1;
	cfg.progress = cli_upload_progress;
	int rc = chat_options(argc, argv, &cfg, &plain);
	if (rc)
		return rc - 1;
	if (!isatty(STDIN_FILENO) || !isatty(STDOUT_FILENO))
		plain = true;
	struct app *a = app_open(&cfg, keep_notice);
	if (!a) {
		cli_error("%s", err_msg());
		return EXIT_RUNTIME;
	}
	if (plain)
		fputs(notices, stderr);
#if HAVE_TUI
	rc = plain ? ui_plain(a) : ui_main(a, notices);
#else
	/* Without the TUI there is no readline either: lines are read with getline. */
	rc = plain_main(a, plain_getline);
#endif
	app_free(a);
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
	{"train-bpe", cmd_train_bpe},
};

int main(int argc, char **argv)
{
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
