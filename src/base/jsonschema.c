/* jsonschema.c — a JSON Schema compiled into the nodes jsonschema_match.c reads text
 * against (see jsonschema.h for what is followed). Each schema object becomes a node;
 * a $ref becomes the node of the place it names, compiled once, so that recursive
 * schemas are a cycle of nodes rather than an endless tree. */
#include "src/base/jsonschema_impl.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "src/base/err.h"
#include "src/base/fileio.h"
#include "src/base/jsontype.h"

/* Bounds on what a request may make us build: nodes, nesting of the schema text,
 * values of one enum. */
enum { MAX_NODES = 4096, MAX_NESTING = 64, MAX_LITS = 1024 };

struct ctx {
	struct js_schema *sc;
	json_t *doc;  /* the whole schema: where a $ref looks */
	json_t *refs; /* $ref -> its node (an integer) */
	int any;      /* the node of {} (any value), once made */
	int nesting;
	int patterns; /* compiled so far (JS_MAX_PATTERNS at most) */
	char path[512];
};

static const char *const annotations[] = {
	"title", "description", "default",    "examples",         "$schema",
	"$id",   "$comment",    "deprecated", "readOnly",         "writeOnly",
	"$defs", "definitions", "$anchor",    "contentMediaType", "discriminator",
};
static const char *const followed[] = {
	"type",
	"enum",
	"const",
	"properties",
	"required",
	"additionalProperties",
	"items",
	"prefixItems",
	"uniqueItems",
	"minItems",
	"maxItems",
	"minLength",
	"maxLength",
	"anyOf",
	"oneOf",
	"allOf",
	"$ref",
	"minimum",
	"maximum",
	"exclusiveMinimum",
	"exclusiveMaximum",
	"multipleOf",
	"format",
	"pattern",
};

static bool listed(const char *key, const char *const *list, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (!strcmp(key, list[i]))
			return true;
	return false;
}

#define N_OF(a) (sizeof(a) / sizeof *(a))

/* Schema v has no keyword but `key` and annotations. */
static bool alone(json_t *v, const char *key)
{
	const char *k;
	json_t *x;
	json_object_foreach(v, k, x)
	{
		if (strcmp(k, key) && !listed(k, annotations, N_OF(annotations)))
			return false;
	}
	return true;
}

static int fail(struct ctx *c, const char *what)
{
	return err_set("%s: %s", c->path, what);
}

/* Appends ".key" to the path; the length to put back. */
static size_t push(struct ctx *c, const char *key)
{
	size_t n = strlen(c->path);
	snprintf(c->path + n, sizeof c->path - n, ".%s", key);
	return n;
}

static void pop(struct ctx *c, size_t n)
{
	c->path[n] = 0;
}

static int new_node(struct ctx *c)
{
	struct js_schema *sc = c->sc;
	if (sc->n >= MAX_NODES)
		return fail(c, "the schema is too large (more than 4096 schemas in it)");
	if (sc->n == sc->cap) {
		int cap = sc->cap ? 2 * sc->cap : 16;
		struct js_node *nd = realloc(sc->node, (size_t)cap * sizeof *nd);
		if (!nd)
			return err_set("out of memory");
		sc->node = nd, sc->cap = cap;
	}
	sc->node[sc->n] = (struct js_node){
		.extra = -1, .items = -1, .max_items = UINT32_MAX, .max_len = UINT32_MAX};
	return sc->n++;
}

/* {} or true: any value; objects of any keys, arrays of any values. */
static int any_node(struct ctx *c)
{
	if (c->any >= 0)
		return c->any;
	int i = new_node(c);
	if (i >= 0) {
		struct js_node *nd = &c->sc->node[i];
		nd->types = JS_T_ALL, nd->extra = i, nd->items = i, nd->compiled = true;
		c->any = i;
	}
	return i;
}

static int by_bytes(const void *a, const void *b)
{
	const char *const *x = a, *const *y = b;
	size_t lx = strlen(*x), ly = strlen(*y);
	int d = memcmp(*x, *y, lx < ly ? lx : ly);
	return d ? d : (lx > ly) - (lx < ly);
}

/* Sorts w (and perm alongside, when given) and sets the lengths. */
static int words_sort(struct js_words *w, uint16_t *perm)
{
	if (!(w->len = malloc((size_t)(w->n ? w->n : 1) * sizeof *w->len)))
		return err_set("out of memory");
	if (perm) { /* a property's schema follows its key: sort pairs by the key */
		for (int i = 1; i < w->n; i++)
			for (int j = i; j > 0 && by_bytes(&w->s[j - 1], &w->s[j]) > 0; j--) {
				char *t = w->s[j];
				w->s[j] = w->s[j - 1], w->s[j - 1] = t;
				uint16_t p = perm[j];
				perm[j] = perm[j - 1], perm[j - 1] = p;
			}
	} else {
		qsort(w->s, (size_t)w->n, sizeof *w->s, by_bytes);
	}
	for (int i = 0; i < w->n; i++)
		w->len[i] = (uint32_t)strlen(w->s[i]);
	return 0;
}

int js_words_set(struct js_words *w)
{
	if (words_sort(w, NULL))
		return -1;
	int d = 0; /* one of each */
	for (int i = 0; i < w->n; i++)
		if (d && w->len[i] == w->len[d - 1] && !memcmp(w->s[i], w->s[d - 1], w->len[i]))
			free(w->s[i]);
		else
			w->s[d] = w->s[i], w->len[d++] = w->len[i];
	w->n = d;
	return 0;
}

/* What the type keyword allows (a name or a list of them), into *types. */
static int parse_type(struct ctx *c, json_t *t, uint8_t *types)
{
	static const char *const names[] = {"object",  "array",   "string", "number",
					    "integer", "boolean", "null"};
	json_t *one[1] = {t};
	size_t n = json_is_array(t) ? json_array_size(t) : 1;
	*types = 0;
	for (size_t i = 0; i < n; i++) {
		const char *s = json_string_value(json_is_array(t) ? json_array_get(t, i) : one[0]);
		size_t k = 0;
		while (s && k < N_OF(names) && strcmp(s, names[k]))
			k++;
		if (!s || k == N_OF(names))
			return fail(c, "type: expected \"object\", \"array\", \"string\", "
				       "\"number\", \"integer\", \"boolean\", \"null\" or a list");
		*types |= (uint8_t)(1u << k);
	}
	if (!*types)
		return fail(c, "type: an empty list allows no value");
	return 0;
}

/* Whether literal v is of one of the types. */
static bool lit_fits(json_t *v, uint8_t types)
{
	switch (json_typeof(v)) {
	case JSON_OBJECT: return types & JS_T_OBJECT;
	case JSON_ARRAY: return types & JS_T_ARRAY;
	case JSON_STRING: return types & JS_T_STRING;
	case JSON_INTEGER: return types & (JS_T_INTEGER | JS_T_NUMBER);
	case JSON_REAL: return types & JS_T_NUMBER;
	case JSON_TRUE:
	case JSON_FALSE: return types & JS_T_BOOLEAN;
	default: return types & JS_T_NULL;
	}
}

/* enum or const: the values as written, those of the allowed types. */
static int parse_lits(struct ctx *c, json_t *v, uint8_t types, struct js_words *w)
{
	json_t *e = json_object_get(v, "enum"), *k = json_object_get(v, "const");
	if (e && k)
		return fail(c, "enum and const together are not supported");
	if (e && !json_is_array(e))
		return fail(c, "enum: expected an array");
	size_t n = e ? json_array_size(e) : 1;
	if (n > MAX_LITS)
		return fail(c, "enum: more than 1024 values");
	if (!(w->s = calloc(n ? n : 1, sizeof *w->s)))
		return err_set("out of memory");
	for (size_t i = 0; i < n; i++) {
		json_t *x = e ? json_array_get(e, i) : k;
		if (!lit_fits(x, types))
			continue;
		if (!(w->s[w->n] = json_dumps(x, JSON_COMPACT | JSON_ENCODE_ANY)))
			return err_set("out of memory");
		w->n++;
	}
	if (!w->n)
		return fail(c, e ? "enum: no value of the schema's type"
				 : "const: not of the schema's type");
	return js_words_set(w);
}

static int compile(struct ctx *c, json_t *v);

/* A keyword that must be a count (a non-negative integer), into *out when given. */
static int count_of(struct ctx *c, json_t *v, const char *key, uint32_t *out)
{
	json_t *x = json_object_get(v, key);
	if (!x)
		return 0;
	if (!json_is_integer(x) || json_integer_value(x) < 0 ||
	    json_integer_value(x) > UINT32_MAX - 1) {
		size_t at = push(c, key);
		fail(c, "expected a count (an integer, 0 or more)");
		return pop(c, at), -1;
	}
	*out = (uint32_t)json_integer_value(x);
	return 0;
}

/* properties, required, additionalProperties into node i. */
static int parse_object(struct ctx *c, json_t *v, int i)
{
	json_t *props = json_object_get(v, "properties"), *req = json_object_get(v, "required");
	json_t *extra = json_object_get(v, "additionalProperties");
	if ((props && !json_is_object(props)) || (req && !json_is_array(req)))
		return fail(c, props && !json_is_object(props) ? "properties: expected an object"
							       : "required: expected an array");
	size_t n = json_object_size(props);
	if (n > JS_MAX_PROPERTIES)
		return fail(c, "properties: more than 64 are not supported");
	struct js_words keys = {0};
	uint16_t perm[JS_MAX_PROPERTIES];
	if (!(keys.s = calloc(n ? n : 1, sizeof *keys.s)))
		return err_set("out of memory");
	c->sc->node[i].keys = keys; /* freed with the node from here on */
	const char *name;
	json_t *sub;
	size_t at = push(c, "properties");
	json_object_foreach(props, name, sub)
	{
		json_t *s = json_string(name);
		char *w = s ? json_dumps(s, JSON_ENCODE_ANY) : NULL;
		json_decref(s);
		if (!(c->sc->node[i].keys.s[keys.n] = w))
			return err_set("out of memory");
		keys.n++, c->sc->node[i].keys.n = keys.n;
		size_t at2 = push(c, name);
		int k = compile(c, sub);
		if (k < 0)
			return -1;
		pop(c, at2);
		perm[keys.n - 1] = (uint16_t)k; /* its node, sorted with it below */
	}
	pop(c, at);
	struct js_node *nd = &c->sc->node[i];
	if (words_sort(&nd->keys, perm))
		return -1;
	if (!(nd->prop = malloc((n ? n : 1) * sizeof *nd->prop)))
		return err_set("out of memory");
	memcpy(nd->prop, perm, n * sizeof *perm);
	for (size_t r = 0; r < json_array_size(req); r++) {
		const char *want = json_string_value(json_array_get(req, r));
		if (!want)
			return fail(c, "required: expected names (strings)");
		json_t *s = json_string(want);
		char *w = s ? json_dumps(s, JSON_ENCODE_ANY) : NULL;
		json_decref(s);
		int k = 0;
		while (w && k < nd->keys.n && strcmp(nd->keys.s[k], w))
			k++;
		free(w);
		if (k == nd->keys.n) {
			at = push(c, "required");
			fail(c, "a required name that properties does not list is not supported");
			return pop(c, at), -1;
		}
		nd->required |= (uint64_t)1 << k;
	}
	if (json_is_false(extra) || n) /* keys listed: only those */
		return 0;
	at = push(c, "additionalProperties");
	int k = !extra || json_is_true(extra) ? any_node(c) : compile(c, extra);
	pop(c, at);
	return k < 0 ? -1 : (c->sc->node[i].extra = k, 0);
}

/* A list of 1 to 64 schemas (keyword `key`) compiled into node i: its anyOf or oneOf
 * alternatives, or its prefixItems (a tuple's first values, tuple true). The node is
 * found anew after each: compiling one adds nodes, and the array may move. */
static int parse_list(struct ctx *c, json_t *list, const char *key, int i, bool tuple)
{
	size_t n = json_array_size(list), at = push(c, key);
	if (!json_is_array(list) || n == 0 || n > 64)
		return fail(c, "expected a list of 1 to 64 schemas"), pop(c, at), -1;
	uint16_t *b = calloc(n, sizeof *b);
	if (!b)
		return err_set("out of memory");
	*(tuple ? &c->sc->node[i].prefix : &c->sc->node[i].branches) = b;
	c->sc->node[i].one_of = !strcmp(key, "oneOf");
	for (size_t k = 0; k < n; k++) {
		char idx[24];
		snprintf(idx, sizeof idx, "%zu", k);
		size_t at2 = push(c, idx);
		int r = compile(c, json_array_get(list, k));
		if (r < 0)
			return -1;
		pop(c, at2);
		struct js_node *nd = &c->sc->node[i];
		(tuple ? nd->prefix : nd->branches)[k] = (uint16_t)r;
		*(tuple ? &nd->n_prefix : &nd->n_branches) = (int)k + 1;
	}
	pop(c, at);
	return 0;
}

/* Whether no two texts of w are numbers of one value (1 and 1.0 are one value to a
 * validator, two texts here). */
static bool numbers_apart(const struct js_words *w)
{
	for (int i = 0; i < w->n; i++)
		for (int j = i + 1; j < w->n; j++)
			if (strchr("-0123456789", w->s[i][0]) &&
			    strchr("-0123456789", w->s[j][0]) &&
			    strtod(w->s[i], NULL) == strtod(w->s[j], NULL))
				return false;
	return true;
}

/* uniqueItems into node i (its items compiled): followed where the values are an
 * enum's (or a const), at most 64 of them, each written at most once; as many values
 * as they are at most. */
static int parse_unique(struct ctx *c, json_t *v, int i)
{
	json_t *u = json_object_get(v, "uniqueItems");
	struct js_node *nd = &c->sc->node[i];
	if (!u || json_is_false(u) || !(nd->types & JS_T_ARRAY))
		return 0;
	const struct js_node *it = &c->sc->node[nd->items];
	const char *why = !json_is_true(u) ? "expected a boolean"
			  : nd->n_prefix || !it->lits.n || it->n_branches || it->lits.n > 64
				  ? "supported for arrays of the values of an enum (at most 64) or "
				    "a const only: others would have to be remembered whole"
			  : nd->min_items > (uint32_t)it->lits.n
				  ? "minItems is above the number of different values"
			  : !numbers_apart(&it->lits)
				  ? "the enum holds one number twice (1 and 1.0): not supported"
				  : NULL;
	if (why) {
		size_t at = push(c, "uniqueItems");
		fail(c, why);
		return pop(c, at), -1;
	}
	nd->unique = true;
	if (nd->max_items > (uint32_t)it->lits.n)
		nd->max_items = (uint32_t)it->lits.n;
	return 0;
}

/* prefixItems, items, minItems, maxItems, minLength, maxLength into node i; items
 * false: no values past the prefix. */
static int parse_array_string(struct ctx *c, json_t *v, int i)
{
	json_t *items = json_object_get(v, "items"), *prefix = json_object_get(v, "prefixItems");
	if (items && json_is_array(items))
		return fail(c, "items: a list of schemas (a tuple) is not supported: give "
			       "prefixItems");
	if (prefix && parse_list(c, prefix, "prefixItems", i, true))
		return -1;
	size_t at = push(c, "items");
	int k = items && !json_is_false(items) ? compile(c, items) : any_node(c);
	pop(c, at);
	if (k < 0)
		return -1;
	struct js_node *nd = &c->sc->node[i];
	nd->items = k;
	if (count_of(c, v, "minItems", &nd->min_items) ||
	    count_of(c, v, "maxItems", &nd->max_items) ||
	    count_of(c, v, "minLength", &nd->min_len) || count_of(c, v, "maxLength", &nd->max_len))
		return -1;
	if (json_is_false(items) && nd->max_items > (uint32_t)nd->n_prefix)
		nd->max_items = (uint32_t)nd->n_prefix;
	if (json_is_false(items) && nd->min_items > nd->max_items)
		return fail(c, "minItems is above the prefixItems' count (items is false)");
	if (parse_unique(c, v, i))
		return -1;
	if (nd->min_items > nd->max_items || nd->min_len > nd->max_len)
		return fail(c, nd->min_items > nd->max_items ? "minItems is above maxItems"
							     : "minLength is above maxLength");
	return 0;
}

/* One bound keyword, a number, into *out (given: *set). */
static int bound_of(struct ctx *c, json_t *v, const char *key, double *out, bool *set)
{
	json_t *x = json_object_get(v, key);
	if (!x)
		return 0;
	if (!json_is_number(x)) {
		size_t at = push(c, key);
		fail(c, json_is_boolean(x) ? "the boolean form (draft 4's) is not supported: "
					     "give the bound itself"
					   : "expected a number");
		return pop(c, at), -1;
	}
	*out = json_number_value(x), *set = true;
	return 0;
}

/* multipleOf into *step: of integers only, by a whole number, whose values then stay
 * within 2^53 (a double holds them exactly: the remainder is the one Python's
 * integers give). */
static int step_of(struct ctx *c, json_t *v, uint8_t types, double *step, bool *any)
{
	json_t *x = json_object_get(v, "multipleOf");
	*step = 0;
	if (!x || !(types & (JS_T_NUMBER | JS_T_INTEGER)))
		return 0;
	double m = json_number_value(x);
	if (!json_is_number(x) || (types & JS_T_NUMBER) || m < 1 || m != floor(m) || m > 1e15) {
		size_t at = push(c, "multipleOf");
		fail(c, "supported for integers, by a whole number (at most 10^15), only");
		return pop(c, at), -1;
	}
	*step = m, *any = true;
	return 0;
}

/* minimum, maximum and the exclusive ones into node i: the tighter of each side;
 * an integer's as whole closed bounds, multipleOf's within 2^53. */
static int parse_bounds(struct ctx *c, json_t *v, int i)
{
	double min = -INFINITY, xmin = -INFINITY, max = INFINITY, xmax = INFINITY, step;
	bool any = false;
	if (bound_of(c, v, "minimum", &min, &any) || bound_of(c, v, "maximum", &max, &any) ||
	    bound_of(c, v, "exclusiveMinimum", &xmin, &any) ||
	    bound_of(c, v, "exclusiveMaximum", &xmax, &any) ||
	    step_of(c, v, c->sc->node[i].types, &step, &any))
		return -1;
	if (step) {
		const double safe = 9007199254740991.0; /* 2^53 - 1 */
		min = fmax(min, -safe), max = fmin(max, safe);
	}
	struct js_node *nd = &c->sc->node[i];
	if (!any || !(nd->types & (JS_T_NUMBER | JS_T_INTEGER)))
		return 0; /* bounds are of numbers only */
	nd->bounded = true;
	nd->lo = xmin >= min ? xmin : min, nd->lo_open = xmin >= min && xmin > -INFINITY;
	nd->hi = xmax <= max ? xmax : max, nd->hi_open = xmax <= max && xmax < INFINITY;
	if (!(nd->types & JS_T_NUMBER)) { /* whole numbers: [ceil, floor] */
		nd->lo = nd->lo_open ? floor(nd->lo) + 1 : ceil(nd->lo);
		nd->hi = nd->hi_open ? ceil(nd->hi) - 1 : floor(nd->hi);
		nd->lo_open = nd->hi_open = false;
	}
	if (nd->lo > nd->hi || (nd->lo == nd->hi && (nd->lo_open || nd->hi_open)))
		return fail(c, "no number lies between the minimum and the maximum");
	nd->step = step;
	if (step && ceil(nd->lo / step) * step > nd->hi)
		return fail(c,
			    "no multiple of multipleOf lies between the minimum and the maximum");
	return 0;
}

/* format, of strings: the ones followed. */
static int parse_format(struct ctx *c, json_t *v, int i)
{
	json_t *f = json_object_get(v, "format");
	if (!f || !(c->sc->node[i].types & JS_T_STRING))
		return 0;
	int id = json_is_string(f) ? js_format_id(json_string_value(f)) : 0;
	if (!id) {
		size_t at = push(c, "format");
		fail(c, "not followed (date, time, date-time, uuid, email and ipv4 are)");
		return pop(c, at), -1;
	}
	/* the shortest and longest text of each: a length limit between them could leave a
	 * begun value no way to end */
	static const uint32_t shortest[] = {0, 10, 9, 20, 36, 6, 7},
			      longest[] = {0, 10, 24, 35, 36, JS_MAX_TEXT, 15};
	struct js_node *nd = &c->sc->node[i];
	if (nd->min_len > shortest[id] || nd->max_len < longest[id])
		return fail(c, "minLength or maxLength with this format is not supported (it "
			       "fixes the length)");
	nd->format = (uint8_t)id;
	return 0;
}

/* pattern, of strings: with minLength (up to 128) and maxLength, kept so that no begun
 * string is left unable to end within them; not with a format (no string of the
 * pattern might be one). */
static int parse_pattern(struct ctx *c, json_t *v, int i)
{
	json_t *f = json_object_get(v, "pattern");
	struct js_node *nd = &c->sc->node[i];
	if (!f || !(nd->types & JS_T_STRING))
		return 0;
	size_t at = push(c, "pattern");
	const char *why = NULL;
	if (!json_is_string(f))
		why = "expected a string";
	else if (++c->patterns > JS_MAX_PATTERNS)
		why = "more patterns in one schema than are supported (256)";
	else if (nd->format)
		why = "a pattern beside a format is not supported";
	else if (nd->min_len > JS_RX_LENS / 2)
		why = "a pattern beside a minLength above 128 is not supported";
	else if (!(nd->rx = js_regex_compile(json_string_value(f), json_string_length(f), &why)))
		;
	else if (!js_regex_fits(nd->rx, 0, UINT32_MAX))
		why = "matches no string";
	else if (!js_regex_fits(nd->rx, nd->min_len, nd->max_len))
		why = "no string of it has a length within minLength and maxLength";
	if (why)
		fail(c, why);
	return pop(c, at), why ? -1 : 0;
}

/* Schema object v into node i. */
static int compile_into(struct ctx *c, json_t *v, int i)
{
	const char *key;
	json_t *x;
	json_object_foreach(v, key, x)
	{
		if (!listed(key, annotations, N_OF(annotations)) &&
		    !listed(key, followed, N_OF(followed))) {
			size_t at = push(c, key);
			fail(c, "this keyword is not supported (not followed, an answer could "
				"break it)");
			return pop(c, at), -1;
		}
	}
	json_t *any = json_object_get(v, "anyOf"), *one = json_object_get(v, "oneOf");
	if (any || one) {
		if (any && one)
			return fail(c, "anyOf and oneOf together are not supported");
		if (!alone(v, any ? "anyOf" : "oneOf")) /* each would bind every alternative */
			return fail(c, "keywords beside anyOf or oneOf are not supported "
				       "(put them in each alternative)");
		int r = parse_list(c, any ? any : one, any ? "anyOf" : "oneOf", i, false);
		return r ? r : (c->sc->node[i].compiled = true, 0);
	}
	uint8_t types = JS_T_ALL;
	json_t *t = json_object_get(v, "type");
	if (t && parse_type(c, t, &types))
		return -1;
	if (!t && (json_object_get(v, "properties") || json_object_get(v, "required") ||
		   json_object_get(v, "additionalProperties")))
		types = JS_T_OBJECT;
	else if (!t && (json_object_get(v, "items") || json_object_get(v, "minItems") ||
			json_object_get(v, "maxItems") || json_object_get(v, "prefixItems")))
		types = JS_T_ARRAY;
	else if (!t && (json_object_get(v, "minLength") || json_object_get(v, "maxLength")))
		types = JS_T_STRING;
	if ((types & JS_T_NUMBER) && (types & JS_T_INTEGER))
		types &= (uint8_t)~JS_T_INTEGER; /* a number of either kind */
	if (json_object_get(v, "enum") || json_object_get(v, "const")) {
		static const char *const beside[] = {"minLength",
						     "maxLength",
						     "minimum",
						     "maximum",
						     "exclusiveMinimum",
						     "exclusiveMaximum",
						     "multipleOf",
						     "format",
						     "pattern",
						     "items",
						     "prefixItems",
						     "uniqueItems",
						     "minItems",
						     "maxItems",
						     "properties",
						     "required",
						     "additionalProperties"};
		for (size_t k = 0; k < N_OF(beside); k++)
			if (json_object_get(v, beside[k])) /* the values are not checked by them */
				return fail(c, "keywords beside enum or const are not supported "
					       "(but type)");
		if (parse_lits(c, v, types, &c->sc->node[i].lits))
			return -1;
		types = 0; /* the value is one of them */
	}
	c->sc->node[i].types = types;
	if (((types & JS_T_OBJECT) && parse_object(c, v, i)) || parse_array_string(c, v, i) ||
	    parse_bounds(c, v, i) || parse_format(c, v, i) || parse_pattern(c, v, i))
		return -1;
	c->sc->node[i].compiled = true;
	return 0;
}

/* The node of the place a $ref names: "#" and a JSON pointer in the document. */
static int ref_node(struct ctx *c, json_t *v, const char *ref)
{
	json_t *memo = json_object_get(c->refs, ref);
	if (memo)
		return (int)json_integer_value(memo);
	if (ref[0] != '#' || (ref[1] && ref[1] != '/'))
		return fail(c, "$ref: only places in this schema (\"#/...\") are supported");
	json_t *at = c->doc;
	for (const char *p = ref + 1; at && *p == '/';) {
		char seg[256];
		size_t n = 0;
		for (p++; *p && *p != '/' && n + 1 < sizeof seg; p++)
			if (*p == '~' && (p[1] == '0' || p[1] == '1'))
				seg[n++] = p[1] == '0' ? '~' : '/', p++;
			else
				seg[n++] = *p;
		seg[n] = 0;
		bool index = n && strspn(seg, "0123456789") == n;
		at = !json_is_array(at) ? json_object_get(at, seg)
		     : index && n < 10  ? json_array_get(at, (size_t)strtoul(seg, NULL, 10))
					: NULL;
		if (*p && *p != '/') /* a name past 255 bytes */
			at = NULL;
	}
	if (!at)
		return fail(c, "$ref: names no place in the schema");
	if (!alone(v, "$ref"))
		return fail(c, "keywords beside $ref are not supported");
	if (json_is_object(at) && json_object_get(at, "$ref"))
		return compile(c, at); /* a $ref to a $ref: the memo of the last one */
	int i = new_node(c);
	json_t *num = json_integer(i);
	if (i < 0 || !num || json_object_set_new(c->refs, ref, num))
		return i < 0 ? -1 : err_set("out of memory");
	if (json_is_true(at) || (json_is_object(at) && json_object_size(at) == 0)) {
		int a = any_node(c);
		if (a < 0)
			return -1;
		c->sc->node[i] = c->sc->node[a]; /* the same, pointing at a */
		c->sc->node[i].extra = a, c->sc->node[i].items = a;
		return i;
	}
	if (!json_is_object(at))
		return fail(c, "$ref: names no schema (an object)");
	return compile_into(c, at, i) ? -1 : i;
}

static int compile(struct ctx *c, json_t *v)
{
	if (json_is_false(v))
		return fail(c, "false allows no value");
	if (json_is_true(v))
		return any_node(c);
	if (!json_is_object(v))
		return fail(c, "expected a schema (an object or a boolean)");
	if (++c->nesting > MAX_NESTING) {
		c->nesting--;
		return fail(c, "the schema nests more than 64 levels");
	}
	int r;
	json_t *ref = json_object_get(v, "$ref"), *all = json_object_get(v, "allOf");
	if (ref) {
		r = json_is_string(ref) ? ref_node(c, v, json_string_value(ref))
					: fail(c, "$ref: expected a string");
	} else if (all) {
		r = json_array_size(all) == 1 && alone(v, "allOf")
			    ? compile(c, json_array_get(all, 0))
			    : fail(c, "allOf: only a list of one schema, alone, is supported");
	} else if (alone(v, "")) { /* annotations only: any value */
		r = any_node(c);
	} else if ((r = new_node(c)) >= 0 && compile_into(c, v, r)) {
		r = -1;
	}
	c->nesting--;
	return r;
}

struct js_schema *js_compile(json_t *v, const char *name)
{
	struct js_schema *sc = calloc(1, sizeof *sc);
	struct ctx c = {.sc = sc, .doc = v, .refs = json_object(), .any = -1};
	snprintf(c.path, sizeof c.path, "%s", name);
	uint8_t *state = NULL;
	if (!sc || !c.refs) {
		err_set("out of memory");
		goto fail;
	}
	if ((sc->root = compile(&c, v)) < 0)
		goto fail;
	if (!(state = calloc((size_t)sc->n, 1))) {
		err_set("out of memory");
		goto fail;
	}
	for (int i = 0; i < sc->n; i++)
		if (!sc->node[i].compiled || js_starts_of(sc, i, state)) {
			if (!sc->node[i].compiled)
				err_set("%s: a $ref that reaches only itself", name);
			else
				err_prefix("%s", name);
			goto fail;
		}
	free(state);
	json_decref(c.refs);
	return sc;
fail:
	free(state);
	json_decref(c.refs);
	js_free(sc);
	return NULL;
}

struct js_schema *js_load(const char *path, json_t **json)
{
	enum { MAX_FILE = 1 << 20 };
	size_t len;
	char *text = fio_read_file(path, MAX_FILE, &len);
	json_error_t je;
	*json = NULL;
	if (text && !(*json = json_loadb(text, len, JSON_DECODE_ANY, &je)))
		err_set("%s: line %d: %s", path, je.line, jsontype_error(&je));
	free(text);
	char name[4096];
	snprintf(name, sizeof name, "%s: schema", path);
	struct js_schema *sc = *json ? js_compile(*json, name) : NULL;
	if (!sc) {
		json_decref(*json);
		*json = NULL;
	}
	return sc;
}

struct js_schema *js_object(void)
{
	json_t *v = json_pack("{s:s}", "type", "object");
	struct js_schema *sc = v ? js_compile(v, "json_object") : NULL;
	json_decref(v);
	return sc;
}

static void words_free(struct js_words *w)
{
	for (int i = 0; i < w->n; i++)
		free(w->s[i]);
	free(w->s);
	free(w->len);
}

void js_free(struct js_schema *sc)
{
	if (!sc)
		return;
	for (int i = 0; i < sc->n; i++) {
		struct js_node *nd = &sc->node[i];
		words_free(&nd->lits);
		words_free(&nd->keys);
		free(nd->prop);
		free(nd->branches);
		free(nd->prefix);
		js_regex_free(nd->rx);
	}
	free(sc->node);
	free(sc);
}
