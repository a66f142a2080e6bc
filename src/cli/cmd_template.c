/* cmd_template.c — `qwenchat template`: render a --messages conversation with the
 * model's chat template, as Hugging Face's apply_chat_template(tokenize=False) does. */
#include "src/chat/chat.h"
#include "src/cli/cli.h"
#include "src/cli/commands.h"
#include "src/cli/env.h"
#include "src/base/err.h"
#include "src/hub/hub.h"
#include "src/hub/loader.h"
#include "src/chat/template.h"
#include "tokenizer/tokenizer.h"

#include <stdio.h>
#include <stdlib.h>
#include <errno.h>
#include <string.h>

enum template_key { OPT_MESSAGES = CLI_OWN, OPT_ADD_GENERATION_PROMPT, OPT_ENABLE_THINKING };

static const struct cli_opt template_opts[] = {
	{"messages", OPT_MESSAGES, "FILE",
	 "JSON array of {\"role\", \"content\"} objects (\"-\" = stdin);\n"
	 "roles system, user, assistant, tool; assistant turns may\n"
	 "carry \"reasoning_content\" and \"tool_calls\"; or an object\n"
	 "{\"messages\": [...], \"tools\": [...]} with tool definitions"},
	{"add-generation-prompt", OPT_ADD_GENERATION_PROMPT, NULL,
	 "end with the opening of an assistant turn"},
	{"enable-thinking", OPT_ENABLE_THINKING, "B",
	 "pass enable_thinking=true or false to the template\n(default: not passed)"},
	{0},
};

static const struct cli_command template_cmd = {
	.name = "template",
	.synopsis = "-m MODEL --messages FILE [--add-generation-prompt] [--enable-thinking B]",
	.about = "Renders a conversation with the model's chat template (tokenizer_config.json) "
		 "and\n"
		 "writes the text to stdout, byte for byte what Hugging Face's\n"
		 "apply_chat_template(messages, tokenize=False, ...) gives. MODEL may be a "
		 "directory\n"
		 "holding only the tokenizer files.\n",
	.groups = CLI_MODEL,
	.opts = template_opts,
	.notes = "Templates recognised: Qwen3 (hybrid thinking), Qwen3-*-Instruct-2507,\n"
		 "Qwen3-*-Thinking-2507; any other is rendered as plain ChatML, with a warning.\n",
};

struct template_args {
	const char *messages;
	bool agp;
	int think;
};

static int template_opt(void *user, int key, const char *arg)
{
	struct template_args *a = user;
	switch (key) {
	case OPT_MESSAGES: a->messages = arg; return 0;
	case OPT_ADD_GENERATION_PROMPT: a->agp = true; return 0;
	case OPT_ENABLE_THINKING:
		if (!strcmp(arg, "true"))
			a->think = TMPL_THINK_ON;
		else if (!strcmp(arg, "false"))
			a->think = TMPL_THINK_OFF;
		else
			return cli_usage("template", "--enable-thinking: '%s' is not true or false",
					 arg);
		return 0;
	}
	return cli_unhandled(&template_cmd, key);
}

static int render(const char *model, const char *messages, bool agp, int think)
{
	struct chat *c = chat_load(messages);
	if (!c) {
		cli_error("%s", err_msg());
		return EXIT_RUNTIME;
	}
	if (c->n == 0) {
		cli_error("%s: the conversation has no messages",
			  strcmp(messages, "-") ? messages : "stdin");
		chat_free(c);
		return EXIT_RUNTIME;
	}
	/* The template comes through the tokenizer, so that this command, `run` and the
	 * chat read tokenizer_config.json the same way (named template lists included). */
	struct hub_env hub;
	cli_env_hub(&hub);
	char *dir = hub_resolve_tokenizer(&hub, model);
	struct tok *t = dir ? loader_tokenizer(dir) : NULL;
	free(dir);
	if (!t) {
		cli_error("%s", err_msg());
		chat_free(c);
		return EXIT_RUNTIME;
	}
	const char *warning;
	enum tmpl_variant v = tmpl_detect(tok_chat_template(t), &warning);
	if (think == TMPL_THINK_ABSENT) /* the template's own default */
		think = tmpl_absent_think(tok_chat_template(t));
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
		cli_error("standard output: write failed: %s", strerror(errno ? errno : EIO));
		return EXIT_RUNTIME;
	}
	return EXIT_OK;
}

int cmd_template(int argc, char **argv)
{
	struct cli_common com;
	struct template_args a = {NULL, false, TMPL_THINK_ABSENT};
	int r = cli_parse(&template_cmd, argc, argv, &com, template_opt, &a, NULL);
	if (r)
		return r == CLI_DONE ? EXIT_OK : r;
	if (!a.messages)
		return cli_usage("template", "--messages FILE is required");
	return render(com.model, a.messages, a.agp, a.think);
}
