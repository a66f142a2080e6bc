/* trainstate.c — the option table of `qwenchat train` and state.json. */
#include "src/train/trainstate.h"
#include "engine/train.h"
#include "src/base/err.h"
#include "src/train/dataset.h"

#include <ctype.h>
#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum kind { K_INT, K_I64, K_REAL, K_BOOL, K_STR, K_LIST, K_TIE };

/* May differ when resumed: how long and how the run goes on, not what it computes.
 * OPTIONAL: state.json may lack it (a run saved before the option existed: its
 * default). UNSET0: 0 stands for "not given" (a shape taken from --init or derived).
 * SAVED0: state.json may hold 0, which the command line refuses (--threads: an older
 * state's "every CPU"). */
enum { CHANGE = 1, OPTIONAL = 2, UNSET0 = 4, SAVED0 = 8 };

struct field {
	const char *name;
	enum kind kind;
	size_t off, count_off; /* count_off: a list's length */
	double lo, hi;         /* numbers: the range, on the command line and in state.json
				* (which holds min-lr and cosine-steps resolved, never unset) */
	unsigned flags;
	const char *choices;   /* strings: the values allowed, space separated; NULL: any */
};

#define F(name, kind, member, lo, hi, flags)                                                    \
	{name, kind, offsetof(struct tstate_opts, member), 0, lo, hi, flags, NULL}
#define S(name, member, flags, choices)                                                         \
	{name, K_STR, offsetof(struct tstate_opts, member), 0, 0, 0, flags, choices}
#define L(name, member, count)                                                                  \
	{name, K_LIST, offsetof(struct tstate_opts, member), offsetof(struct tstate_opts, count), \
	 0, 0, 0, NULL}

/* The most steps a run takes (and warm-up, cosine, evaluation and save intervals). */
#define STEPS_MAX 1e12

static const struct field fields[] = {
	S("init", init, 0, NULL),
	S("tokenizer", tokenizer, 0, NULL),
	F("layers", K_INT, layers, 1, 1024, UNSET0), /* config.json's limits (config_limits.h) */
	F("hidden-size", K_INT, hidden, 2, 1 << 20, UNSET0),
	F("heads", K_INT, heads, 1, 1024, UNSET0),
	F("kv-heads", K_INT, kv_heads, 1, 1024, UNSET0),
	F("head-dim", K_INT, head_dim, 2, 1024, UNSET0),
	F("intermediate-size", K_INT, intermediate, 1, 1 << 20, UNSET0),
	F("vocab-size", K_INT, vocab, 1, 1 << 24, UNSET0),
	F("tie", K_TIE, tie, 0, 1, 0),
	F("rope-theta", K_REAL, rope_theta, 1, 1e12, UNSET0),
	L("data", data, n_data),
	L("val", val, n_val),
	F("ctx", K_INT, ctx, 1, 1 << 20, 0),
	F("batch", K_INT, batch, 1, 1 << 16, 0),
	F("accum", K_INT, accum, 1, 1 << 16, 0),
	F("steps", K_I64, steps, 0, STEPS_MAX, CHANGE),
	F("lr", K_REAL, lr, 0, 10, 0),
	F("min-lr", K_REAL, min_lr, 0, 10, 0),
	F("warmup", K_I64, warmup, 0, STEPS_MAX, 0),
	F("cosine-steps", K_I64, cosine_steps, 0, STEPS_MAX, 0),
	F("cosine-follows-steps", K_BOOL, cosine_follows, 0, 1, OPTIONAL),
	F("weight-decay", K_REAL, weight_decay, 0, 10, 0),
	F("beta1", K_REAL, beta1, 0, 0.999999, 0),
	F("beta2", K_REAL, beta2, 0, 0.999999999, 0),
	F("eps", K_REAL, eps, 1e-30, 1, 0),
	F("clip", K_REAL, clip, 0, 1e9, 0),
	F("seed", K_I64, seed, 0, 9007199254740992.0, 0),
	F("sft", K_BOOL, sft, 0, 1, OPTIONAL),
	F("pack", K_BOOL, pack, 0, 1, OPTIONAL),
	F("sequential", K_BOOL, sequential, 0, 1, 0),
	F("exact", K_BOOL, exact, 0, 1, 0),
	F("recompute", K_BOOL, recompute, 0, 1, CHANGE),
	F("eval-every", K_I64, eval_every, 1, STEPS_MAX, CHANGE),
	F("eval-tokens", K_I64, eval_tokens, 0, 1e15, CHANGE | OPTIONAL),
	F("save-every", K_I64, save_every, 1, STEPS_MAX, CHANGE),
	S("save-dtype", save_dtype, CHANGE, "f32 bf16"),
	S("backend", backend, CHANGE, "auto cpu cuda"),
	F("threads", K_INT, threads, 1, 1024, CHANGE | SAVED0),
	F("lora", K_INT, lora, 0, 4096, OPTIONAL),
	F("lora-alpha", K_REAL, lora_alpha, 1e-6, 1e6, OPTIONAL | UNSET0),
	S("lora-targets", lora_targets, OPTIONAL, NULL),
	S("lora-init", lora_init, OPTIONAL, NULL),
};
#define N_FIELDS ((int)(sizeof fields / sizeof fields[0]))

unsigned tstate_lora_targets(const struct tstate_opts *o)
{
	const char *s = o->lora_targets ? o->lora_targets : "all";
	unsigned mask = 0;
	if (!strcmp(s, "all") || !strcmp(s, "all-linear"))
		return ENG_LORA_ALL;
	size_t len = strlen(s);
	if (len && s[len - 1] == ',') {
		err_set("--lora-targets: '%s' ends in a comma", s);
		return 0;
	}
	while (*s) {
		size_t n = strcspn(s, ",");
		int k = 0;
		for (; k < ENG_LORA_TARGETS; k++) {
			const char *name = eng_lora_target_name((enum eng_lora_target)k);
			size_t short_len = strlen(name) - strlen("_proj");
			if ((n == strlen(name) && !strncmp(s, name, n)) ||
			    (n == short_len && !strncmp(s, name, n)))
				break;
		}
		if (k == ENG_LORA_TARGETS) {
			err_set("--lora-targets: '%.*s' is not one of q, k, v, o, gate, up, down "
				"(or "
				"q_proj ... down_proj, or all)",
				(int)(n < 64 ? n : 64), s);
			return 0;
		}
		mask |= 1u << k;
		s += n + (s[n] == ',');
	}
	if (!mask)
		err_set("--lora-targets: no matrix named");
	return mask;
}

static int set_str(char **dst, const char *s);

int tstate_lora_canonical(struct tstate_opts *o)
{
	unsigned mask = tstate_lora_targets(o);
	char names[128] = "";
	if (!mask)
		return -1;
	for (int k = 0; k < ENG_LORA_TARGETS; k++)
		if (mask >> k & 1)
			snprintf(names + strlen(names), sizeof names - strlen(names), "%s%s",
				 names[0] ? "," : "",
				 eng_lora_target_name((enum eng_lora_target)k));
	return set_str(&o->lora_targets, names);
}

int64_t tstate_cosine_default(const struct tstate_opts *o)
{
	return o->steps > o->warmup ? o->steps : o->warmup;
}

int tstate_field_count(void)
{
	return N_FIELDS;
}

const char *tstate_field_name(int i)
{
	return fields[i].name;
}

int tstate_field(const char *name)
{
	for (int i = 0; i < N_FIELDS; i++)
		if (!strcmp(fields[i].name, name))
			return i;
	return -1;
}

bool tstate_may_change(int i)
{
	return fields[i].flags & CHANGE;
}

/* A list member, so that const applies to it and not to the strings: const list_t *. */
typedef char **list_t;

#define AT(o, f, type) ((type *)((char *)(o) + (f)->off))
#define CAT(o, f, type) ((const type *)((const char *)(o) + (f)->off))

int tstate_opts_default(struct tstate_opts *o)
{
	memset(o, 0, sizeof *o);
	o->tie = -1;
	o->ctx = 256;
	o->batch = 8;
	o->accum = 1;
	o->steps = 1000;
	o->cosine_steps = -1;
	o->lr = 6e-4;
	o->min_lr = -1;
	o->weight_decay = 0.1;
	o->beta1 = 0.9;
	o->beta2 = 0.95;
	o->eps = 1e-8;
	o->clip = 1.0;
	o->seed = 1337;
	o->eval_every = 100;
	o->save_every = 500;
	o->save_dtype = strdup("f32");
	o->backend = strdup("auto");
	return o->save_dtype && o->backend ? 0 : err_set("out of memory");
}

static void free_list(char **l, int n)
{
	for (int i = 0; i < n; i++)
		free(l[i]);
	free(l);
}

void tstate_opts_free(struct tstate_opts *o)
{
	for (int i = 0; i < N_FIELDS; i++) {
		const struct field *f = &fields[i];
		if (f->kind == K_STR)
			free(*AT(o, f, char *));
		else if (f->kind == K_LIST)
			free_list(*AT(o, f, char **), *(int *)((char *)o + f->count_off));
	}
	memset(o, 0, sizeof *o);
}

static int set_str(char **dst, const char *s)
{
	char *c = s ? strdup(s) : NULL;
	if (s && !c)
		return err_set("out of memory");
	free(*dst);
	*dst = c;
	return 0;
}

static int append(char ***list, int *n, const char *s)
{
	char **g = realloc(*list, (size_t)(*n + 1) * sizeof *g);
	if (!g)
		return err_set("out of memory");
	*list = g;
	if (!(g[*n] = strdup(s)))
		return err_set("out of memory");
	(*n)++;
	return 0;
}

/* A number of field f from text: 0 or -1 (err_set "--NAME: ..."). */
static int parse_number(const struct field *f, const char *s, double *out)
{
	char *end;
	errno = 0;
	size_t sign = *s == '-', digits = strspn(s + sign, "0123456789");
	if (f->kind != K_REAL && digits && !s[sign + digits]) {
		/* digits alone are read as a whole number: 2^53 + 1 as a double is 2^53 */
		long long x = strtoll(s, &end, 10);
		if (errno == ERANGE || x < (long long)f->lo || x > (long long)f->hi)
			return err_set("--%s: %s is out of range [%.10g, %.10g]", f->name, s, f->lo,
				       f->hi);
		*out = (double)x;
		return 0;
	}
	double v = strtod(s, &end);
	/* an underflow (1e-310) is the value strtod rounded it to; the range judges it */
	/* decimal only: strtod also reads "0x10" (16) and "0x1p-10" */
	bool overflow = errno == ERANGE && fabs(v) >= 1;
	if ((errno && errno != ERANGE) || end == s || *end || (!overflow && !isfinite(v)) ||
	    strpbrk(s, "xXpP") || isspace((unsigned char)*s)) /* strtod skips leading blanks */
		return err_set("--%s: '%s' is not a %s", f->name, s,
			       f->kind == K_REAL ? "finite decimal number" : "whole number");
	if (overflow)
		return err_set("--%s: %s is out of range [%.10g, %.10g]", f->name, s, f->lo, f->hi);
	if (f->kind != K_REAL && (v != floor(v) || strpbrk(s, ".eE")))
		return err_set("--%s: '%s' is not a whole number", f->name, s);
	if (v < f->lo || v > f->hi)
		return err_set("--%s: %s is out of range [%.10g, %.10g]", f->name, s, f->lo, f->hi);
	*out = v;
	return 0;
}

int64_t tstate_eval_rows(const struct tstate_opts *o)
{
	return o->eval_tokens > 0 ? (o->eval_tokens + o->ctx - 1) / o->ctx : 0;
}

/* Whether a string is one of field f's choices (any string when it has none). */
static bool in_choices(const struct field *f, const char *value)
{
	if (!f->choices)
		return true;
	size_t n = strlen(value);
	const char *c = strstr(f->choices, value);
	return n && c && (c == f->choices || c[-1] == ' ') && (c[n] == ' ' || c[n] == '\0');
}

int tstate_set(struct tstate_opts *o, int i, const char *value)
{
	const struct field *f = &fields[i];
	double v = 0;
	switch (f->kind) {
	case K_STR:
		if (!in_choices(f, value))
			return err_set("--%s: '%s' is not one of %s", f->name, value, f->choices);
		return set_str(AT(o, f, char *), value);
	case K_LIST:
		return append(AT(o, f, char **), (int *)((char *)o + f->count_off), value);
	case K_BOOL: *AT(o, f, bool) = strcmp(value, "false") != 0; return 0;
	case K_TIE: *AT(o, f, int) = strcmp(value, "false") != 0; return 0;
	default: break;
	}
	if (parse_number(f, value, &v))
		return -1;
	if (f->kind == K_INT)
		*AT(o, f, int) = (int)v;
	else if (f->kind == K_I64)
		*AT(o, f, int64_t) = (int64_t)v;
	else
		*AT(o, f, double) = v;
	return 0;
}

bool tstate_eval_due(const struct tstate_opts *o, int64_t step)
{
	return o->n_val > 0 && (step % o->eval_every == 0 || step == o->steps);
}

bool tstate_unset(const struct tstate_opts *o, int i)
{
	const struct field *f = &fields[i];
	if (f->kind == K_TIE)
		return *CAT(o, f, int) < 0;
	if (!(f->flags & UNSET0))
		return false;
	return f->kind == K_REAL ? *CAT(o, f, double) == 0 : *CAT(o, f, int) == 0;
}

static bool str_eq(const char *a, const char *b)
{
	return a == b || (a && b && !strcmp(a, b));
}

/* The same to 15 significant digits, as tstate_format and the run's banner write them:
 * the default --min-lr of --lr 6e-4, lr / 10 = 5.9999999999999995e-05, shows as 6e-05,
 * and giving that value back is no change. */
static bool same_real(double a, double b)
{
	char x[32], y[32];
	snprintf(x, sizeof x, "%.15g", a);
	snprintf(y, sizeof y, "%.15g", b);
	return a == b || !strcmp(x, y);
}

bool tstate_equal(const struct tstate_opts *a, const struct tstate_opts *b, int i)
{
	const struct field *f = &fields[i];
	switch (f->kind) {
	case K_INT:
	case K_TIE: return *CAT(a, f, int) == *CAT(b, f, int);
	case K_I64: return *CAT(a, f, int64_t) == *CAT(b, f, int64_t);
	case K_REAL: return same_real(*CAT(a, f, double), *CAT(b, f, double));
	case K_BOOL: return *CAT(a, f, bool) == *CAT(b, f, bool);
	case K_STR: return str_eq(*CAT(a, f, char *), *CAT(b, f, char *));
	case K_LIST: break;
	}
	int na = *(const int *)((const char *)a + f->count_off),
	    nb = *(const int *)((const char *)b + f->count_off);
	char *const *la = *CAT(a, f, list_t), *const *lb = *CAT(b, f, list_t);
	if (na != nb)
		return false;
	for (int k = 0; k < na; k++)
		if (strcmp(la[k], lb[k]))
			return false;
	return true;
}

void tstate_format(const struct tstate_opts *o, int i, char *out, size_t n)
{
	const struct field *f = &fields[i];
	out[0] = '\0';
	switch (f->kind) {
	case K_INT: snprintf(out, n, "%d", *CAT(o, f, int)); return;
	case K_TIE: snprintf(out, n, "%s", *CAT(o, f, int) ? "--tie" : "--no-tie"); return;
	case K_I64: snprintf(out, n, "%lld", (long long)*CAT(o, f, int64_t)); return;
	case K_REAL: snprintf(out, n, "%.15g", *CAT(o, f, double)); return;
	case K_BOOL: snprintf(out, n, "%s", *CAT(o, f, bool) ? "on" : "off"); return;
	case K_STR: snprintf(out, n, "%s", *CAT(o, f, char *) ? *CAT(o, f, char *) : "(none)"); return;
	case K_LIST: break;
	}
	int cnt = *(const int *)((const char *)o + f->count_off);
	size_t len = 0;
	for (int k = 0; k < cnt && len < n; k++)
		len += (size_t)snprintf(out + len, n - len, "%s%s", k ? " " : "",
					(*CAT(o, f, list_t))[k]);
	if (!cnt)
		snprintf(out, n, "(none)");
}

int tstate_copy(struct tstate_opts *dst, const struct tstate_opts *src, int i)
{
	const struct field *f = &fields[i];
	if (f->kind == K_STR)
		return set_str(AT(dst, f, char *), *CAT(src, f, char *));
	if (f->kind != K_LIST) {
		size_t size = f->kind == K_INT || f->kind == K_TIE ? sizeof(int)
			      : f->kind == K_BOOL		  ? sizeof(bool)
			      : f->kind == K_I64		  ? sizeof(int64_t)
								  : sizeof(double);
		memcpy((char *)dst + f->off, (const char *)src + f->off, size);
		return 0;
	}
	int *dn = (int *)((char *)dst + f->count_off);
	int sn = *(const int *)((const char *)src + f->count_off);
	free_list(*AT(dst, f, char **), *dn);
	*AT(dst, f, char **) = NULL;
	*dn = 0;
	for (int k = 0; k < sn; k++)
		if (append(AT(dst, f, char **), dn, (*CAT(src, f, list_t))[k]))
			return -1;
	return 0;
}

/* ---- state.json ---------------------------------------------------------------------- */

static json_t *field_json(const struct tstate_opts *o, const struct field *f)
{
	switch (f->kind) {
	case K_INT: return json_integer(*CAT(o, f, int));
	case K_TIE: return *CAT(o, f, int) < 0 ? json_null() : json_boolean(*CAT(o, f, int));
	case K_I64: return json_integer((json_int_t)*CAT(o, f, int64_t));
	case K_REAL: return json_real(*CAT(o, f, double));
	case K_BOOL: return json_boolean(*CAT(o, f, bool));
	case K_STR: return *CAT(o, f, char *) ? json_string(*CAT(o, f, char *)) : json_null();
	case K_LIST: break;
	}
	json_t *a = json_array();
	int n = *(const int *)((const char *)o + f->count_off);
	for (int k = 0; a && k < n; k++)
		if (json_array_append_new(a, json_string((*CAT(o, f, list_t))[k]))) {
			json_decref(a); /* a path JSON cannot hold (not UTF-8) */
			return NULL;
		}
	return a;
}

/* Rows read so far, state.json's "windows_read": derived, written for a reader; -1 where
 * the product leaves 64 bits (a step count no run reaches, refused when read). */
static int64_t windows_read(const struct tstate *s)
{
	int64_t rows;
	if (__builtin_mul_overflow(s->step, (int64_t)s->o.accum * s->o.batch, &rows))
		return -1;
	return rows;
}

/* The options' checksum: sha256 of their JSON with sorted keys, so that what a
 * reader parsed gives the text the writer hashed. 0, or -1 out of memory. */
static int options_sha256(json_t *opts, char out[72])
{
	char *text = json_dumps(opts, JSON_COMPACT | JSON_SORT_KEYS | JSON_REAL_PRECISION(17));
	if (!text)
		return -1;
	const char *t = text;
	size_t n = strlen(text);
	dset_hash(&t, &n, 1, out);
	free(text);
	return 0;
}

char *tstate_json(const struct tstate *s)
{
	json_t *opts = json_object();
	for (int i = 0; opts && i < N_FIELDS; i++)
		if (json_object_set_new(opts, fields[i].name, field_json(&s->o, &fields[i]))) {
			/* a state a resume could not read is not written: a string that is not
			 * UTF-8 (a path) has no JSON form */
			json_decref(opts);
			err_set("state.json: options.%s: not valid UTF-8 (JSON cannot hold it)",
				fields[i].name);
			return NULL;
		}
	char rng[65];
	batch_rng_format(&s->rng, rng);
	/* the data position, for a reader: rows read so far (with --sequential the next one
	 * reads window windows_read mod W; at random, rng is the position) */
	json_int_t rows = windows_read(s);
	json_t *root = json_pack("{s:i, s:I, s:I, s:f, s:s, s:I, s:I, s:b, s:o}", "format", 1, "step",
				 (json_int_t)s->step, "tokens", (json_int_t)s->tokens, "seconds",
				 s->seconds, "rng", rng, "windows_read", rows, "data_tokens",
				 (json_int_t)s->data_tokens, "master_in_state", s->master_in_state,
				 "options", opts);
	char sum[72];
	if (root && options_sha256(opts, sum) == 0)
		json_object_set_new(root, "options_sha256", json_string(sum));
	if (root && s->data_sha256[0])
		json_object_set_new(root, "data_sha256", json_string(s->data_sha256));
	if (root && s->config_sha256[0])
		json_object_set_new(root, "config_sha256", json_string(s->config_sha256));
	if (root && s->ran_on[0])
		json_object_set_new(root, "ran_on", json_string(s->ran_on));
	if (root && s->kernels[0])
		json_object_set_new(root, "kernels", json_string(s->kernels));
	if (root && s->base_digest[0])
		json_object_set_new(root, "base_digest", json_string(s->base_digest));
	char *text = root ? json_dumps(root, JSON_INDENT(2) | JSON_REAL_PRECISION(17)) : NULL;
	json_decref(root);
	if (!text)
		err_set("state.json: out of memory");
	return text;
}

/* Whether a saved number is one the command line could have given (or left unset). */
static bool in_range(const struct field *f, double v)
{
	return isfinite(v) &&
	       ((v >= f->lo && v <= f->hi) || (v == 0 && (f->flags & (UNSET0 | SAVED0))));
}

static int field_from_json(struct tstate_opts *o, const struct field *f, json_t *v,
			   const char *name)
{
	if (!v && (f->flags & OPTIONAL))
		return 0;
	switch (f->kind) {
	case K_INT:
	case K_I64:
		if (!json_is_integer(v))
			break;
		if (!in_range(f, (double)json_integer_value(v)))
			break;
		if (f->kind == K_INT)
			*AT(o, f, int) = (int)json_integer_value(v);
		else
			*AT(o, f, int64_t) = json_integer_value(v);
		return 0;
	case K_TIE:
		if (!json_is_boolean(v) && !json_is_null(v))
			break;
		*AT(o, f, int) = json_is_null(v) ? -1 : json_is_true(v);
		return 0;
	case K_REAL:
		if (!json_is_number(v) || !in_range(f, json_number_value(v)))
			break;
		*AT(o, f, double) = json_number_value(v);
		return 0;
	case K_BOOL:
		if (!json_is_boolean(v))
			break;
		*AT(o, f, bool) = json_is_true(v);
		return 0;
	case K_STR:
		if (json_is_null(v))
			return set_str(AT(o, f, char *), NULL);
		if (!json_is_string(v) || !in_choices(f, json_string_value(v)))
			break;
		return set_str(AT(o, f, char *), json_string_value(v));
	case K_LIST: {
		size_t k;
		json_t *e;
		if (!json_is_array(v))
			break;
		json_array_foreach(v, k, e)
		{
			if (!json_is_string(e))
				return err_set("%s: options.%s: not a list of paths", name, f->name);
			if (append(AT(o, f, char **), (int *)((char *)o + f->count_off),
				   json_string_value(e)))
				return -1;
		}
		return 0;
	}
	}
	return err_set("%s: options.%s: missing or not a valid value", name, f->name);
}

/* Values the table's ranges let through but a run cannot have been started with. */
static int check_opts(const struct tstate_opts *o, const char *name)
{
	if (o->n_data < 1)
		return err_set("%s: options.data: no training files", name);
	if (o->min_lr < 0 || o->cosine_steps < o->warmup)
		return err_set("%s: options: min-lr or cosine-steps is not resolved", name);
	if (!o->save_dtype || !o->backend)
		return err_set("%s: options: save-dtype or backend is missing", name);
	/* --pack without --sft is refused on the command line: the packer's rows are of
	 * conversations, which a text stream has none of (reading them would overrun) */
	if (o->pack && !o->sft)
		return err_set("%s: options.pack: true without sft (a run packs conversations "
			       "alone)",
			       name);
	if (o->lora && (!o->init || !tstate_lora_targets(o)))
		return err_set("%s: options.lora-targets or init: not what a LoRA run has", name);
	return 0;
}

/* A kernel set's name as state.json keeps it: a short word of lowercase letters and
 * digits (the set itself need not be one this CPU has: a run may move). */
static bool kernel_set_name(const char *s)
{
	size_t n = strlen(s);
	if (n == 0 || n >= sizeof((struct tstate *)0)->kernels)
		return false;
	for (size_t i = 0; i < n; i++)
		if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= '0' && s[i] <= '9')))
			return false;
	return true;
}

/* A checksum (key) absent in states written before it was kept: "sha256:" and 64 hex
 * digits into out, or "". */
static int parse_sha256(json_t *root, const char *key, char out[72], const char *name)
{
	json_t *v = json_object_get(root, key);
	const char *t = json_string_value(v);
	out[0] = 0;
	if (!v)
		return 0;
	if (!t || strlen(t) != 71 || strncmp(t, "sha256:", 7) ||
	    strspn(t + 7, "0123456789abcdef") != 64)
		return err_set("%s: %s: expected \"sha256:\" and 64 hex digits", name, key);
	memcpy(out, t, 72);
	return 0;
}

int tstate_parse(struct tstate *s, const char *text, size_t len, const char *name)
{
	memset(s, 0, sizeof *s);
	json_error_t je;
	json_t *root = json_loadb(text, len, JSON_REJECT_DUPLICATES, &je);
	json_t *opts = json_object_get(root, "options");
	json_t *step = json_object_get(root, "step"), *tokens = json_object_get(root, "tokens"),
	       *dt = json_object_get(root, "data_tokens");
	int rc = -1;
	if (!root) {
		err_set("%s: invalid JSON at line %d: %s", name, je.line, je.text);
		goto out;
	}
	if (json_integer_value(json_object_get(root, "format")) != 1 || !json_is_object(opts)) {
		err_set("%s: not a state.json of this version (format 1 with options)", name);
		goto out;
	}
	if (!json_is_integer(step) || json_integer_value(step) < 0 || !json_is_integer(tokens) ||
	    json_integer_value(tokens) < 0 || !json_is_integer(dt) || json_integer_value(dt) < 0 ||
	    !json_is_number(json_object_get(root, "seconds")) ||
	    !json_is_boolean(json_object_get(root, "master_in_state"))) {
		err_set("%s: step, tokens, seconds, data_tokens or master_in_state is missing or "
			"invalid",
			name);
		goto out;
	}
	s->step = json_integer_value(step);
	s->tokens = json_integer_value(tokens);
	s->data_tokens = json_integer_value(dt);
	char want[72], have[72];
	if (parse_sha256(root, "data_sha256", s->data_sha256, name) ||
	    parse_sha256(root, "config_sha256", s->config_sha256, name) ||
	    parse_sha256(root, "options_sha256", want, name))
		goto out;
	json_t *ran = json_object_get(root, "ran_on"); /* absent in older states */
	const char *ran_s = json_string_value(ran);
	if (ran && (!ran_s || (strcmp(ran_s, "cpu") && strcmp(ran_s, "cuda")))) {
		err_set("%s: ran_on: expected \"cpu\" or \"cuda\"", name);
		goto out;
	}
	snprintf(s->ran_on, sizeof s->ran_on, "%s", ran_s ? ran_s : "");
	json_t *kern = json_object_get(root, "kernels"); /* absent: older states */
	const char *kern_s = json_string_value(kern);
	if (kern && (!kern_s || !kernel_set_name(kern_s))) {
		err_set("%s: kernels: expected the name of a kernel set, such as \"avx2\"", name);
		goto out;
	}
	snprintf(s->kernels, sizeof s->kernels, "%s", kern_s ? kern_s : "");
	const char *digest = json_string_value(json_object_get(root, "base_digest"));
	if (json_object_get(root, "base_digest") &&
	    (!digest || strlen(digest) != 16 || strspn(digest, "0123456789abcdef") != 16)) {
		err_set("%s: base_digest: expected 16 hex digits", name);
		goto out;
	}
	snprintf(s->base_digest, sizeof s->base_digest, "%s", digest ? digest : "");
	s->seconds = json_number_value(json_object_get(root, "seconds"));
	json_t *rows = json_object_get(root, "windows_read");
	if (!(s->seconds >= 0) || !isfinite(s->seconds)) {
		err_set("%s: seconds: %g is not a duration", name, s->seconds);
		goto out;
	}
	s->master_in_state = json_is_true(json_object_get(root, "master_in_state"));
	char what[300];
	snprintf(what, sizeof what, "%s: rng", name);
	if (batch_rng_parse(&s->rng, json_string_value(json_object_get(root, "rng")), what))
		goto out;
	for (int i = 0; i < N_FIELDS; i++)
		if (field_from_json(&s->o, &fields[i], json_object_get(opts, fields[i].name),
				    name))
			goto out;
	rc = check_opts(&s->o, name);
	/* the options a run was saved with, not edited since (a value out of range is
	 * named above): an edit would resume another run than the one trained (another
	 * --ctx reads other windows) */
	if (!rc && want[0] && (options_sha256(opts, have) || strcmp(want, have)))
		rc = err_set("%s: options: edited since the checkpoint was saved (options_sha256 "
			     "differs): give --resume the flags that may change instead",
			     name);
	if (!rc && (s->step > STEPS_MAX || windows_read(s) < 0))
		rc = err_set("%s: step: %lld is beyond any run's length", name, (long long)s->step);
	int64_t most; /* targets in the windows read: "tokens" counts those it scored */
	if (!rc &&
	    (__builtin_mul_overflow(windows_read(s), (int64_t)s->o.ctx, &most) || s->tokens > most))
		rc = err_set("%s: tokens: %lld is more than the %lld windows read hold", name,
			     (long long)s->tokens, (long long)windows_read(s));
	if (!rc && rows && json_integer_value(rows) != windows_read(s))
		rc = err_set("%s: windows_read: not step x accum x batch (%lld)", name,
			     (long long)windows_read(s));
out:
	if (rc)
		tstate_opts_free(&s->o);
	json_decref(root);
	return rc;
}
