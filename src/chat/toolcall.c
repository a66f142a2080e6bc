/* toolcall.c — <tool_call> blocks out of an answer (see toolcall.h). */
#include "src/chat/toolcall.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "src/base/err.h"
#include "src/chat/tojson.h"

void toolcall_set_free(struct toolcall_set *set)
{
	for (size_t i = 0; i < set->n; i++) {
		free(set->calls[i].name);
		free(set->calls[i].arguments);
	}
	free(set->calls);
	set->calls = NULL;
	set->n = 0;
}

/* One block's JSON into a call appended to set. 1 when added, 0 when the block is not
 * a call, -1 when out of memory. */
static int add_call(struct toolcall_set *set, const char *json, size_t len)
{
	json_t *v = json_loadb(json, len, 0, NULL);
	json_t *name = json_object_get(v, "name"), *args = json_object_get(v, "arguments");
	/* a name holding NUL could not be kept as a C string */
	if (!json_is_string(name) || !args ||
	    strlen(json_string_value(name)) != json_string_length(name)) {
		json_decref(v);
		return 0;
	}
	struct chat_tool_call *grown = realloc(set->calls, (set->n + 1) * sizeof *grown);
	char *n = strdup(json_string_value(name)), *a = tojson(args, NULL);
	json_decref(v);
	if (grown)
		set->calls = grown;
	if (!grown || !n || !a) {
		free(n);
		free(a);
		return err_set("out of memory");
	}
	set->calls[set->n++] = (struct chat_tool_call){n, a, false};
	return 1;
}

int toolcall_parse(const char *text, size_t len, struct toolcall_set *set)
{
	static const size_t lo = sizeof TOOLCALL_OPEN - 1, lc = sizeof TOOLCALL_CLOSE - 1;
	memset(set, 0, sizeof *set);
	set->content_len = len;
	const char *end = text + len, *p = text, *open;
	while ((open = memmem(p, (size_t)(end - p), TOOLCALL_OPEN, lo))) {
		const char *body = open + lo;
		const char *close = memmem(body, (size_t)(end - body), TOOLCALL_CLOSE, lc);
		const char *stop = close ? close : end;
		int r = add_call(set, body, (size_t)(stop - body));
		if (r <= 0) {
			toolcall_set_free(set);
			set->content_len = len;
			return r;
		}
		if (set->n == 1)
			set->content_len = (size_t)(open - text);
		p = close ? close + lc : end;
	}
	return set->n > 0;
}
