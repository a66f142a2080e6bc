/* cmd_template.c — `qwenchat template`: render a --messages conversation with the
 * model's chat template, as Hugging Face's apply_chat_template(tokenize=False) does. */
#include "src/chat/chat.h"
#include "src/cli/cli.h"
#include "src/cli/commands.h"
#include "src/base/err.h"
#include "src/hub/hub.h"
#include "src/hub/loader.h"
#include "src/chat/template.h"
#include "tokenizer/tokenizer.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char help[] =
	"usage: qwenchat template -m MODEL --messages FILE [--add-generation-prompt]\n"
	"                         [--enable-thinking true|false]\n"
	"\n"
	"Renders a conversation with the model's chat template (tokenizer_config.json) and\n"
	"writes the text to stdout, byte for byte what Hugging Face's\n"
	"apply_chat_template(messages, tokenize=False, ...) gives. MODEL may be a directory\n"
	"holding only the tokenizer files.\n"
	"\n"
	"  --messages FILE           JSON array of {\"role\", \"content\"} objects (\"-\" = "
	"stdin);\n"
	"                            roles system, user, assistant, tool; assistant turns may\n"
	"                            carry \"reasoning_content\" and \"tool_calls\"; or an object\n"
	"                            {\"messages\": [...], \"tools\": [...]} with tool "
	"definitions\n"
	"  --add-generation-prompt   end with the opening of an assistant turn\n"
	"  --enable-thinking B       pass enable_thinking=true or false to the template\n"
	"                            (default: not passed)\n"
	"  -h, --help                show this help\n"
	"\n"
	"Templates recognised: Qwen3 (hybrid thinking), Qwen3-*-Instruct-2507,\n"
	"Qwen3-*-Thinking-2507; any other is rendered as plain ChatML, with a warning.\n";

enum { OPT_MESSAGES = CLI_OPT_NEXT, OPT_AGP, OPT_THINK };

static const struct option longopts[] = {
	CLI_COMMON_LONGOPTS,
	{"messages", required_argument, 0, OPT_MESSAGES},
	{"add-generation-prompt", no_argument, 0, OPT_AGP},
	{"enable-thinking", required_argument, 0, OPT_THINK},
	{"help", no_argument, 0, 'h'},
	{0, 0, 0, 0},
};

static int render(const char *model, const char *messages, bool agp, int think)
{
	struct chat *c = chat_load(messages);
	if (!c) {
		cli_error("%s", err_msg());
		return EXIT_RUNTIME;
	}
	if (c->n == 0) {
		cli_error("%s: the conversation has no messages", messages);
		chat_free(c);
		return EXIT_RUNTIME;
	}
	/* The template comes through the tokenizer, so that this command, `run` and the
	 * chat read tokenizer_config.json the same way (named template lists included). */
	char *dir = hub_resolve_tokenizer(model);
	struct tok *t = dir ? loader_tokenizer(dir) : NULL;
	free(dir);
	if (!t) {
		cli_error("%s", err_msg());
		chat_free(c);
		return EXIT_RUNTIME;
	}
	const char *warning;
	enum tmpl_variant v = tmpl_detect(tok_chat_template(t), &warning);
	tok_free(t);
	if (warning)
		cli_error("warning: %s", warning);
	size_t len;
	char *text = tmpl_render(c, v, agp, think, &len);
	chat_free(c);
	if (!text) {
		cli_error("%s: %s", messages, err_msg());
		return EXIT_RUNTIME;
	}
	size_t w = fwrite(text, 1, len, stdout);
	free(text);
	if (w != len || fflush(stdout) != 0) {
		cli_error("writing to stdout failed");
		return EXIT_RUNTIME;
	}
	return EXIT_OK;
}

int cmd_template(int argc, char **argv)
{
	struct cli_common common;
	cli_common_init(&common);
	const char *messages = NULL;
	bool agp = false;
	int think = TMPL_THINK_ABSENT, opt;
	optind = 1;
	while ((opt = getopt_long(argc, argv, "m:n:h", longopts, NULL)) != -1) {
		switch (opt) {
		case 'h':
			fputs(help, stdout);
			fputs("\ncommon options (accepted, unused here):\n", stdout);
			fputs(cli_common_help, stdout);
			return EXIT_OK;
		case OPT_MESSAGES: messages = optarg; break;
		case OPT_AGP: agp = true; break;
		case OPT_THINK:
			if (!strcmp(optarg, "true"))
				think = TMPL_THINK_ON;
			else if (!strcmp(optarg, "false"))
				think = TMPL_THINK_OFF;
			else
				return cli_usage(argv[0],
						 "--enable-thinking: '%s' is not true or false",
						 optarg);
			break;
		case '?': return cli_usage(argv[0], "bad option");
		default:
			if (cli_common_opt(&common, opt, optarg) < 0)
				return EXIT_USAGE;
		}
	}
	if (optind < argc)
		return cli_usage(argv[0], "unexpected argument '%s'", argv[optind]);
	if (!messages)
		return cli_usage(argv[0], "--messages FILE is required");
	return render(common.model, messages, agp, think);
}
