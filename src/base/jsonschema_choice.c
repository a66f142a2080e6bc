/* jsonschema_choice.c — a text that is one of given strings, read by the schema
 * machinery (jsonschema.h): one node whose fixed texts are the strings themselves,
 * matched from the first byte with no quotes, as an enum's values are. */
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "src/base/err.h"
#include "src/base/jsonschema_impl.h"

/* The most strings: an enum's bound (the matcher's indices are 16 bits). */
enum { MAX_CHOICES = 1024 };

struct js_schema *js_choice(json_t *choices, const char *name)
{
	size_t n = json_array_size(choices);
	if (!json_is_array(choices) || !n) {
		err_set("%s: expected a non-empty array of strings", name);
		return NULL;
	}
	if (n > MAX_CHOICES) {
		err_set("%s: more than %d choices", name, MAX_CHOICES);
		return NULL;
	}
	struct js_schema *sc = calloc(1, sizeof *sc);
	struct js_node *nd = calloc(1, sizeof *nd);
	char **s = calloc(n, sizeof *s);
	if (!sc || !nd || !s) {
		free(sc), free(nd), free(s);
		err_set("out of memory");
		return NULL;
	}
	*nd = (struct js_node){.types = JS_T_STRING, .compiled = true, .extra = -1, .items = -1};
	nd->lits.s = s;
	sc->node = nd, sc->n = sc->cap = 1, sc->bare = true;
	for (size_t i = 0; i < n; i++) {
		json_t *v = json_array_get(choices, i);
		const char *t = json_string_value(v);
		if (!t || strlen(t) != json_string_length(v)) {
			err_set("%s[%zu]: %s", name, i,
				t ? "a NUL character is not supported" : "expected a string");
			goto fail;
		}
		if (!(s[nd->lits.n] = strdup(t))) {
			err_set("out of memory");
			goto fail;
		}
		nd->lits.n++;
	}
	if (js_words_sort(&nd->lits, NULL))
		goto fail;
	int d = 0; /* one of each: the matcher needs them apart */
	for (int i = 0; i < nd->lits.n; i++)
		if (d && !strcmp(s[i], s[d - 1]))
			free(s[i]);
		else
			s[d] = s[i], nd->lits.len[d++] = nd->lits.len[i];
	nd->lits.n = d;
	return sc;
fail:
	js_free(sc);
	return NULL;
}
