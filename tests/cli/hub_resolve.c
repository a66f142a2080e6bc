/* hub_resolve.c — helper for tests/cli/hub.sh: prints what hub_resolve (or, after
 * --tokenizer, hub_resolve_tokenizer) makes of its argument (none: the default
 * model), the way every -m option does, with the same environment. */
#include "src/base/err.h"
#include "src/cli/env.h"
#include "src/hub/hub.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv)
{
	int tok = argc > 1 && !strcmp(argv[1], "--tokenizer");
	const char *model = argc > 1 + tok ? argv[1 + tok] : NULL;
	struct hub_env hub;
	cli_env_hub(&hub);
	char *dir = tok ? hub_resolve_tokenizer(&hub, model) : hub_resolve(&hub, model);
	if (!dir) {
		fprintf(stderr, "qwenchat: %s\n", err_msg());
		return 1;
	}
	printf("%s\n", dir);
	free(dir);
	return 0;
}
