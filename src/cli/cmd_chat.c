/* cmd_chat.c — `qwenchat chat`, the default command: the interactive chat, in the
 * terminal UI or in plain line mode, on the local engine or a remote server. */
#include "src/app/app.h"
#include "src/app/plain.h"
#include "src/base/err.h"
#include "src/base/term.h"
#include "src/cli/cli.h"
#include "src/cli/commands.h"
#include "src/cli/env.h"
#include "src/cli/sigbus.h"
#if HAVE_TUI
#include "ui/ui.h"
#endif

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

enum chat_key {
	OPT_PLAIN = CLI_OWN,
	OPT_RESUME,
	OPT_THINK,
	OPT_NO_THINK,
	OPT_SYSTEM,
	OPT_PARSE_SPECIAL
};

static const struct cli_opt chat_opts[] = {
	{"plain", OPT_PLAIN, NULL, "line mode: no full-screen UI"},
	{"resume", OPT_RESUME, NULL,
	 "reopen the last conversation (it is saved after every turn)\n"
	 "with the model (or server), thinking and sampling choices it\n"
	 "was held with; options given here win, and a different -m\n"
	 "is said aloud"},
	{"think", OPT_THINK, NULL, "start with thinking on (the default)"},
	{"no-think", OPT_NO_THINK, NULL, "start with thinking off"},
	{"system", OPT_SYSTEM, "TEXT", "system prompt of a new conversation"},
	{"parse-special", OPT_PARSE_SPECIAL, NULL,
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
	case OPT_PLAIN: a->plain = true; return 0;
	case OPT_RESUME: a->cfg.resume = true; return 0;
	case OPT_THINK:
	case OPT_NO_THINK:
		if (a->cfg.think >= 0 && a->cfg.think != (key == OPT_THINK))
			return cli_usage("chat", "--think and --no-think: give one"), -1;
		a->cfg.think = key == OPT_THINK;
		return 0;
	case OPT_SYSTEM: a->cfg.system = arg; return 0;
	case OPT_PARSE_SPECIAL: a->cfg.parse_special = true; return 0;
	}
	return cli_unhandled(&chat_cmd, key);
}

/* Notices from opening the model, shown once the chat is on screen. */
static char notices[2048];

static void keep_notice(const char *msg)
{
	size_t n = strlen(notices);
	snprintf(notices + n, sizeof notices - n, "%s\n", msg);
}

/* The notices kept, said (a line each, as every command says them: cli_notice shows
 * a server's escapes in a model id, never obeys them) and forgotten. */
static void say_kept(void)
{
	for (char *p = notices, *nl; *p; p = nl ? nl + 1 : p + strlen(p)) {
		if ((nl = strchr(p, '\n')))
			*nl = '\0';
		cli_notice(p); /* the last one may be cut short by the buffer: said all the same */
	}
	notices[0] = '\0';
}

/* A wait for a busy server in the line mode, said when it starts, after what was
 * kept (the UI shows its waits itself). */
static void plain_busy(const char *msg)
{
	say_kept();
	cli_notice(msg);
}

int cmd_chat(int argc, char **argv)
{
	struct chat_args a = {.cfg.think = -1};
	struct cli_common com;
	struct hub_env hub;
	int rc = cli_parse(&chat_cmd, argc, argv, &com, chat_opt, &a, NULL);
	if (rc)
		return rc == CLI_DONE ? EXIT_OK : rc;
	if (a.cfg.resume && a.cfg.system)
		return cli_usage("chat", "--system is a new conversation's: --resume reopens one "
					 "with its own (change it there with /system)");
	/* (run's -n 0 reads a prompt and answers nothing: no use in a chat) */
	if ((com.set & CLI_SET_MAX_NEW) && com.max_new < 1)
		return cli_usage("chat", "-n 0: an answer needs at least 1 new token");
	char *state = cli_env_state_dir();
	if (!state) {
		cli_error("out of memory");
		return EXIT_RUNTIME;
	}
	const char *ignored = cli_env_state_home_ignored();
	if (ignored) {
		char msg[2200];
		snprintf(msg, sizeof msg,
			 "XDG_STATE_HOME=%.1024s is not an absolute path: ignored, as the XDG "
			 "spec says; the chat's files are in %.1024s",
			 ignored, state);
		cli_notice(msg);
	}
	/* --resume alone goes back to the server the conversation was held on */
	char *held_url = a.cfg.resume && !com.model && !com.url && !strcmp(com.backend, "auto")
				 ? app_resume_url(state)
				 : NULL;
	if (held_url) {
		com.url = held_url;
		com.backend = "remote";
	}
	if (cli_is_remote(&com) && a.cfg.parse_special) {
		free(state);
		free(held_url);
		return cli_usage("chat", "--parse-special needs the local engine: a server "
					 "tokenizes the messages");
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
#if HAVE_TUI
	char why[128];
	if (!a.plain && !ui_term_usable(cli_env_term(), why, sizeof why)) {
		cli_error("%s: the line mode instead (as with --plain)", why);
		a.plain = true;
	}
#else
	a.plain = true; /* the line mode is the only one */
#endif
	/* A closed pipe (standard output read by `head`, or the remote backend's socket
	 * closed by the server while we write to it) is an error to report and the
	 * conversation saved, not a reason to die (libcurl runs with NOSIGNAL, as the
	 * chat has threads, so it does not ignore SIGPIPE itself). */
	signal(SIGPIPE, SIG_IGN);
	if (a.plain)
		a.cfg.busy_notice = plain_busy;
	struct app *app = app_open(&a.cfg, keep_notice);
	free(state);
	free(held_url);
	cli_remote_free(&a.cfg.remote); /* the client keeps its own copy of the key */
	if (!app) {
		cli_error("%s", err_msg());
		return EXIT_RUNTIME;
	}
	if (a.plain)
		say_kept();
	sigbus_note("the conversation was saved after the last turn");
#if HAVE_TUI
	sigbus_fullscreen(!a.plain);
	struct ui_options uo = {.no_color = cli_env_no_color()};
	rc = a.plain ? ui_plain(app) : ui_main(app, notices, &uo);
	sigbus_fullscreen(false);
#else
	/* Without the TUI there is no readline either: lines are read with getline. */
	rc = plain_main(app, plain_getline);
#endif
	app_free(app);
	return rc;
}
