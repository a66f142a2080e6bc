/* tojson_filter.c — one JSON value per input line, its tojson text per output line
 * ("ERROR" where jansson refuses the line): the C side of tests/cli/tojson.sh. */
#include <stdio.h>
#include <stdlib.h>

#include "src/chat/tojson.h"

int main(void)
{
	static char line[1 << 20];
	while (fgets(line, sizeof line, stdin)) {
		json_t *v = json_loads(line, JSON_DECODE_ANY, NULL);
		char *text = v ? tojson(v, NULL) : NULL;
		puts(text ? text : "ERROR");
		free(text);
		json_decref(v);
	}
	return 0;
}
