/* jsonschema_choice.c — texts held to given strings or to a regular expression, read
 * by the schema machinery (jsonschema.h) with no quotes around them: one node, whose
 * fixed texts are the strings themselves (matched as an enum's values are), or a
 * string's pattern, read from the first byte with no escapes. */
#include <jansson.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "src/base/err.h"
#include "src/base/jsonschema_impl.h"

/* The most strings: an enum's bound (the matcher's indices are 16 bits). The most
 * ranges of characters in a pattern's classes: each is tried on every token of the
 * vocabulary at every step, so that they bound what a token costs. */
enum { MAX_CHOICES = 1024, MAX_TEXT_RANGES = 1024 };

/* A schema of the one node nd, read bare; NULL (err_set) out of memory. */
static struct js_schema *bare_schema(struct js_node nd)
{
	struct js_schema *sc = calloc(1, sizeof *sc);
	if (sc && !(sc->node = malloc(sizeof *sc->node)))
		free(sc), sc = NULL;
	if (!sc) {
		err_set("out of memory");
		return NULL;
	}
	nd.types = JS_T_STRING, nd.compiled = true, nd.extra = -1, nd.items = -1;
	sc->node[0] = nd, sc->n = sc->cap = 1, sc->bare = true;
	return sc;
}

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
	char **s = calloc(n, sizeof *s);
	struct js_schema *sc = s ? bare_schema((struct js_node){.lits.s = s}) : NULL;
	if (!sc) {
		free(s);
		err_set("out of memory");
		return NULL;
	}
	struct js_node *nd = &sc->node[0];
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
	if (js_words_set(&nd->lits)) /* one of each: the matcher needs them apart */
		goto fail;
	return sc;
fail:
	js_free(sc);
	return NULL;
}

struct js_schema *js_regex_text(const char *pattern, size_t len, const char *name)
{
	/* anchored at both ends, around the pattern as a group: a ^ or $ of its own at an
	 * end says nothing more (a \$ is a character) */
	size_t from = len && pattern[0] == '^', to = len;
	size_t bs = 0;
	while (to > from + bs + 1 && pattern[to - 2 - bs] == '\\')
		bs++;
	to -= to > from && pattern[to - 1] == '$' && bs % 2 == 0;
	char *full = malloc(to - from + 8);
	struct js_schema *sc = full ? bare_schema((struct js_node){.max_len = UINT32_MAX}) : NULL;
	if (!sc) {
		free(full);
		err_set("out of memory");
		return NULL;
	}
	struct js_node *nd = &sc->node[0];
	int n = snprintf(full, to - from + 8, "^(?:%.*s)$", (int)(to - from), pattern + from);
	const char *why = NULL;
	struct js_regex *alone = NULL; /* the pattern as given must be one (no "a)(b") */
	if (memchr(pattern, 0, len))
		why = "a NUL character is not supported";
	else if (!(alone = js_regex_compile(pattern, len, &why)) ||
		 !(nd->rx = js_regex_compile(full, (size_t)n, &why)))
		why = why ? why : "out of memory";
	js_regex_free(alone);
	/* every position's class is tried on each token of the vocabulary at each step */
	if (!why && js_regex_ranges(nd->rx) > MAX_TEXT_RANGES)
		why = "its classes hold more than 1024 ranges of characters in all";
	free(full);
	if (why) {
		err_set("%s: %s", name, why);
		js_free(sc);
		return NULL;
	}
	return sc;
}
