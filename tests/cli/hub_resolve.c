/* hub_resolve.c — helper for tests/cli/hub.sh: prints what hub_resolve (or, after
 * --tokenizer, hub_resolve_tokenizer) makes of its argument (none: the default
 * model), the way every -m option does. */
#include "src/base/err.h"
#include "src/hub/hub.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv)
{
	int tok = argc > 1 && !strcmp(argv[1], "--tokenizer");
	const char *model = argc > 1 + tok ? argv[1 + tok] : NULL;
	char *dir = tok ? hub_resolve_tokenizer(model) : hub_resolve(model);
	if (!dir) {
		fprintf(stderr, "qwenchat: %s\n", err_msg());
		return 1;
	}
	printf("%s\n", dir);
	free(dir);
	return 0;
}
