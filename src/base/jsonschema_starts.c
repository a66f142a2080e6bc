/* jsonschema_starts.c — what a compiled schema's values may begin with (each node's
 * start bytes), and whether a oneOf's alternatives can match one value together:
 * the checks run once the whole schema is compiled, when every $ref has its node. */
#include "src/base/err.h"
#include "src/base/jsonschema_impl.h"

#include <string.h>

/* Whether lists of string constants a and b (sorted) hold none in common. */
static bool strings_apart(const struct js_words *a, const struct js_words *b)
{
	if (!a->n || !b->n)
		return false;
	for (int i = 0; i < a->n; i++)
		if (a->s[i][0] != '"')
			return false;
	for (int j = 0; j < b->n; j++)
		if (b->s[j][0] != '"')
			return false;
	for (int i = 0, j = 0; i < a->n && j < b->n;) {
		int d = a->len[i] == b->len[j] ? memcmp(a->s[i], b->s[j], a->len[i]) : 1;
		if (!d)
			return false;
		/* sorted by memcmp, a shorter text before those it begins */
		size_t m = a->len[i] < b->len[j] ? a->len[i] : b->len[j];
		int o = memcmp(a->s[i], b->s[j], m);
		if (o < 0 || (o == 0 && a->len[i] < b->len[j]))
			i++;
		else
			j++;
	}
	return true;
}

/* Whether no value matches both objects a and b: a property both require whose string
 * constants differ (a discriminator, as pydantic writes tagged unions). */
static bool objects_apart(const struct js_schema *sc, int a, int b)
{
	const struct js_node *x = &sc->node[a], *y = &sc->node[b];
	if (x->types != JS_T_OBJECT || y->types != JS_T_OBJECT || x->n_branches || y->n_branches ||
	    x->lits.n || y->lits.n)
		return false;
	for (int i = 0; i < x->keys.n; i++) {
		if (!(x->required >> i & 1))
			continue;
		for (int j = 0; j < y->keys.n; j++)
			if ((y->required >> j & 1) && x->keys.len[i] == y->keys.len[j] &&
			    !memcmp(x->keys.s[i], y->keys.s[j], x->keys.len[i]) &&
			    strings_apart(&sc->node[x->prop[i]].lits, &sc->node[y->prop[j]].lits))
				return true;
	}
	return false;
}

/* Whether a oneOf's alternatives k and the ones before it that begin alike can
 * match no value together. */
static bool one_of_apart(const struct js_schema *sc, const struct js_node *nd, int k)
{
	const struct js_node *b = &sc->node[nd->branches[k]];
	for (int j = 0; j < k; j++) {
		const struct js_node *a = &sc->node[nd->branches[j]];
		bool alike = false;
		for (int w = 0; w < 32 && !alike; w++)
			alike = a->start[w] & b->start[w];
		if (alike && !objects_apart(sc, nd->branches[j], nd->branches[k]))
			return false;
	}
	return true;
}

int js_starts_of(struct js_schema *sc, int i, uint8_t *state)
{
	struct js_node *nd = &sc->node[i];
	if (state[i] == 2)
		return 0;
	if (state[i] == 1)
		return err_set("an anyOf or oneOf that is its own alternative");
	state[i] = 1;
	static const char *const first[7] = {"{",           "[",  "\"", "-0123456789",
					     "-0123456789", "tf", "n"};
	for (int t = 0; t < 7; t++)
		if (nd->types >> t & 1)
			for (const char *p = first[t]; *p; p++)
				nd->start[(unsigned char)*p >> 3] |= (uint8_t)(1u << (*p & 7));
	for (int k = 0; k < nd->lits.n; k++) {
		unsigned char b = (unsigned char)nd->lits.s[k][0];
		nd->start[b >> 3] |= (uint8_t)(1u << (b & 7));
	}
	for (int k = 0; k < nd->n_branches; k++) {
		int b = nd->branches[k];
		if (js_starts_of(sc, b, state))
			return -1;
		if (nd->one_of && !one_of_apart(sc, nd, k))
			return err_set(
				"oneOf: alternatives %d and one before it may match the same "
				"value (not supported: the value must match one only; "
				"a required property with different constants tells "
				"objects apart, or use anyOf)",
				k);
		for (int j = 0; j < 32; j++)
			nd->start[j] |= sc->node[b].start[j];
	}
	for (int c = 0; c < 256 && nd->n_branches > JS_MAX_PATHS; c++) {
		int alike = 0; /* each is a path of its own from that byte on */
		for (int k = 0; k < nd->n_branches; k++)
			alike += js_starts(&sc->node[nd->branches[k]], (unsigned char)c);
		if (alike > JS_MAX_PATHS)
			return err_set("%s: %d alternatives may begin with '%c' (at most %d that "
				       "begin alike are supported)",
				       nd->one_of ? "oneOf" : "anyOf", alike, c, JS_MAX_PATHS);
	}
	state[i] = 2;
	return 0;
}
