/* test_hub_resolve.c — helper for tests/hub.sh: prints what hub_resolve makes of
 * its argument (no argument: the default model), the way every -m option does. */
#include "src/err.h"
#include "src/hub.h"

#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv)
{
	char *dir = hub_resolve(argc > 1 ? argv[1] : NULL);
	if (!dir) {
		fprintf(stderr, "qwenchat: %s\n", err_msg());
		return 1;
	}
	printf("%s\n", dir);
	free(dir);
	return 0;
}
