/* main.c — the qwenchat program: picks the subcommand and hands it the arguments. */
#include "src/cli/cli.h"
#include "src/cli/commands.h"
#include "src/cli/hint.h"
#include "src/cli/sigbus.h"
#include "src/hub/loader.h"

#include <errno.h>
#include <fcntl.h>
#include <locale.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <utf8proc.h>

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
	"  template    render a conversation with the model's chat template\n"
	"  logits      token ids on stdin -> float32 logits file\n"
	"  embed       text embeddings (Qwen3-Embedding)\n"
	"  bench       prefill and decode throughput\n"
	"  info        model configuration, parameters and memory plan\n"
	"  pull        download a model into the Hugging Face cache\n"
	"  list        Qwen3 models in the Hugging Face cache (--url: a server's)\n"
	"  train-bpe   train a byte-level BPE tokenizer\n"
	"  serve       OpenAI-compatible API (chat and text completions) on the model\n"
	"  quantize    write a model as a GGUF file (llama.cpp's mixes q8_0 ... q2_k, or\n"
	"              bf16, f16, f32)\n"
	"  perplexity  mean NLL and perplexity of a file; KL against a second model\n"
	"  train       train a Qwen3 model (from a model's weights or from scratch)\n"
	"\n"
	"'qwenchat COMMAND --help' (or 'qwenchat help COMMAND') describes a command's\n"
	"options; 'man qwenchat' all of them.\n"
	"  -h, --help     show this help\n"
	"  -V, --version  show the version\n";

static const struct {
	const char *name;
	int (*run)(int argc, char **argv);
} commands[] = {
	{"chat", cmd_chat},
	{"run", cmd_run},
	{"tokenize", cmd_tokenize},
	{"detokenize", cmd_detokenize},
	{"template", cmd_template},
	{"logits", cmd_logits},
	{"embed", cmd_embed},
	{"bench", cmd_bench},
	{"info", cmd_info},
	{"pull", cmd_pull},
	{"list", cmd_list},
	{"train-bpe", cmd_train_bpe},
	{"serve", cmd_serve},
	{"quantize", cmd_quantize},
	{"perplexity", cmd_perplexity},
	{"train", cmd_train},
};

static int dispatch(int argc, char **argv)
{
	static const char *names[sizeof commands / sizeof commands[0]];
	for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
		names[i] = commands[i].name;
	hint_commands(names, sizeof commands / sizeof commands[0]);
	bool help = argc >= 2 && !strcmp(argv[1], "help");
	if (argc >= 2 && (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help") ||
			  (help && (argc == 2 || !strcmp(argv[2], "-h") ||
				    !strcmp(argv[2], "--help") || !strcmp(argv[2], "help"))))) {
		fputs(usage, stdout);
		return EXIT_OK;
	}
	if (help && argc > 3) {
		cli_error("help: one command at most (try 'qwenchat --help')");
		return EXIT_USAGE;
	}
	if (help && argc == 3) { /* help COMMAND: its --help */
		for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
			if (!strcmp(argv[2], commands[i].name))
				return commands[i].run(2, (char *[]){argv[2], "--help", NULL});
		cli_error("help: unknown command '%s' (try 'qwenchat --help')", argv[2]);
		return EXIT_USAGE;
	}
	if (argc >= 2 && (!strcmp(argv[1], "-V") || !strcmp(argv[1], "--version"))) {
		/* the tokenizer's letters and digits are this Unicode version's, with those
		   of 15.1 and 16.0 it lacks (tokenizer/unicode16.h) */
		printf("qwenchat %s\nutf8proc %s (Unicode %s)\n", PACKAGE_VERSION,
		       utf8proc_version(), utf8proc_unicode_version());
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

/* A descriptor 0, 1 or 2 that the caller closed (`2>&-`) would be the next file the
 * program opens, and messages meant for stderr would land in a checkpoint or a log:
 * each one is taken by /dev/null first, opened the other way round (stdin for
 * writing, stdout and stderr for reading) so that using it still fails with EBADF,
 * as on the closed descriptor. */
static void hold_std_fds(void)
{
	for (int fd = 0; fd <= 2; fd++)
		if (fcntl(fd, F_GETFD) < 0 && errno == EBADF) {
			int n = open("/dev/null", fd == 0 ? O_WRONLY : O_RDONLY);
			if (n >= 0 && n != fd) /* fd is the lowest free one: n == fd */
				close(n);
		}
}

int main(int argc, char **argv)
{
	hold_std_fds();
	sigbus_guard();
	setlocale(LC_ALL, ""); /* the terminal's character set, for the UI's text */
	/* numbers read and written with a '.': JSON, the files other programs read, and
	 * the options' values (--temp 0.5) mean the same in every locale */
	setlocale(LC_NUMERIC, "C");
	/* past a file-size limit (ulimit -f) a write fails with EFBIG, which every
	 * writer reports and cleans up after as for a full disk, instead of the signal
	 * ending the program with its temporary file left behind */
	signal(SIGXFSZ, SIG_IGN);
	loader_warn_to(cli_notice); /* escaped, and held where a command holds notices */
	int rc = dispatch(argc, argv);
	/* output that never reached stdout (a full disk, /dev/full) is a failure; one the
	 * command saw is said once, by the command */
	errno = 0;
	int flush_errno = fflush(stdout) != 0 ? (errno ? errno : EIO) : 0;
	if ((flush_errno || ferror(stdout)) && rc == EXIT_OK) {
		if (flush_errno) /* else an earlier write failed, for a reason not kept */
			cli_error("standard output: write failed: %s", strerror(flush_errno));
		else
			cli_error("standard output: write failed");
		return EXIT_RUNTIME;
	}
	return rc;
}
