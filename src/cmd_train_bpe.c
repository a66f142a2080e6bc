/* cmd_train_bpe.c — PLACEHOLDER until its issue lands: replace this whole file. */
#include "src/cli.h"
#include "src/commands.h"

int cmd_train_bpe(int argc, char **argv)
{
	(void)argc;
	cli_error("%s: not built yet", argv[0]);
	return EXIT_RUNTIME;
}
