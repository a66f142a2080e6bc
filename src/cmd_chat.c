/* cmd_chat.c — PLACEHOLDER until its issue lands: replace this whole file. */
#include "src/cli.h"
#include "src/commands.h"

int cmd_chat(int argc, char **argv)
{
	(void)argc;
	cli_error("%s: not built yet", argv[0]);
	return EXIT_RUNTIME;
}
