/* hub.c — model resolution. For now: directories only (downloads come with issue 7). */
#include "src/hub.h"
#include "src/err.h"
#include "src/fileio.h"

#include <stdlib.h>
#include <string.h>

char *hub_resolve(const char *model)
{
	if (!model)
		model = getenv("QWENCHAT_MODEL");
	if (!model || !*model) {
		err_set("no model given: use -m DIR");
		return NULL;
	}
	if (!fio_is_dir(model)) {
		err_set("%s: no such model directory", model);
		return NULL;
	}
	return strdup(model);
}
