/* app_held.c — what a saved conversation records of the chat it was held in (the
 * model, the server, thinking and the sampling settings the user chose), so that
 * --resume goes on with them rather than with the defaults of the day. */
#include "src/app/app.h"
#include "src/app/app_state.h"

#include <jansson.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "src/base/err.h"
#include "src/base/fileio.h"

/* The sampling settings by name, in the file and in struct samp_params. */
static const struct {
	const char *name;
	unsigned bit;
} fields[] = {
	{"temperature", SAMP_SET_TEMP},
	{"top_k", SAMP_SET_TOP_K},
	{"top_p", SAMP_SET_TOP_P},
	{"min_p", SAMP_SET_MIN_P},
	{"presence_penalty", SAMP_SET_PRESENCE},
	{"frequency_penalty", SAMP_SET_FREQUENCY},
	{"repetition_penalty", SAMP_SET_REPEAT},
	{"seed", SAMP_SET_SEED},
	{"greedy", SAMP_SET_GREEDY},
};

static double *double_field(struct samp_params *p, unsigned bit)
{
	switch (bit) {
	case SAMP_SET_TEMP: return &p->temperature;
	case SAMP_SET_TOP_P: return &p->top_p;
	case SAMP_SET_MIN_P: return &p->min_p;
	case SAMP_SET_PRESENCE: return &p->presence_penalty;
	case SAMP_SET_FREQUENCY: return &p->frequency_penalty;
	case SAMP_SET_REPEAT: return &p->repetition_penalty;
	default: return NULL;
	}
}

char *app_held_model(const char *model)
{
	/* A path is kept absolute, so that --resume finds it from any directory; a repo
	 * id or an ollama name is kept as given. */
	char *abs =
		model && (fio_is_dir(model) || fio_is_file(model)) ? realpath(model, NULL) : NULL;
	char *s = abs ? abs : strdup(model ? model : "");
	if (!s)
		err_set("out of memory");
	return s;
}

static json_t *sampling_json(const struct app *a)
{
	json_t *o = json_object();
	const struct samp_params *p = &a->params;
	for (size_t i = 0; o && i < sizeof fields / sizeof fields[0]; i++) {
		unsigned bit = fields[i].bit;
		/* a seed drawn at random is not a choice: a resumed chat draws its own */
		if (!(a->user_set & bit) || (bit == SAMP_SET_SEED && a->seed_drawn))
			continue;
		struct samp_params q = *p;
		double *d = double_field(&q, bit);
		json_t *v = d                       ? json_real(*d)
			    : bit == SAMP_SET_TOP_K ? json_integer(p->top_k)
			    : bit == SAMP_SET_SEED  ? json_integer((json_int_t)p->seed)
						    : json_boolean(p->greedy);
		json_object_set_new(o, fields[i].name, v);
	}
	return o;
}

int app_held_record(struct app *a)
{
	json_t *o = json_object();
	if (o && a->remote) {
		json_object_set_new(o, "model", json_string(a->model_name));
		json_object_set_new(o, "url", json_string(remote_url(a->remote)));
	} else if (o) {
		json_object_set_new(o, "model", json_string(a->held_model));
	}
	if (o) {
		json_object_set_new(o, "think", json_boolean(a->think));
		if (a->max_new_set)
			json_object_set_new(o, "max_new", json_integer(a->max_new));
		json_object_set_new(o, "sampling", sampling_json(a));
	}
	char *text = o ? json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER) : NULL;
	json_decref(o);
	int rc = text ? chat_set_meta(a->chat, text) : err_set("out of memory");
	free(text);
	return rc;
}

/* One sampling value of the record into p; 0, or -1 naming it when it is not of its
 * kind. The values themselves are checked with the rest (samp_params_check). */
static int take_sampling(json_t *v, unsigned bit, const char *name, struct samp_params *p)
{
	double *d = double_field(p, bit);
	if (d && json_is_number(v))
		*d = json_number_value(v);
	else if (bit == SAMP_SET_TOP_K && json_is_integer(v) && json_integer_value(v) >= 0)
		/* more than --top-k takes (as /top-k once allowed) keeps them all, as it did */
		p->top_k = json_integer_value(v) > SAMP_MAX_TOP_K ? SAMP_MAX_TOP_K
								  : (int)json_integer_value(v);
	else if (bit == SAMP_SET_SEED && json_is_integer(v) && json_integer_value(v) >= 0)
		p->seed = (uint64_t)json_integer_value(v);
	else if (bit == SAMP_SET_GREEDY && json_is_boolean(v))
		p->greedy = json_is_true(v);
	else
		return err_set("qwenchat.sampling.%s: not a valid value", name);
	return 0;
}

/* The record of the resumed conversation into h. */
static int parse(const char *meta, struct app_held *h)
{
	json_t *o = json_loads(meta, 0, NULL);
	json_t *model = json_object_get(o, "model"), *url = json_object_get(o, "url");
	json_t *think = json_object_get(o, "think"), *max_new = json_object_get(o, "max_new");
	json_t *samp = json_object_get(o, "sampling");
	int rc = 0;
	h->think = think ? json_is_true(think) : -1;
	if ((model && !json_is_string(model)) || (url && !json_is_string(url)))
		rc = err_set("qwenchat.%s: not a string",
			     model && !json_is_string(model) ? "model" : "url");
	else if (think && !json_is_boolean(think))
		rc = err_set("qwenchat.think: not true or false");
	else if (max_new && (!json_is_integer(max_new) || json_integer_value(max_new) < 1 ||
			     json_integer_value(max_new) > INT_MAX))
		rc = err_set("qwenchat.max_new: not a whole number of tokens");
	else if (samp && !json_is_object(samp))
		rc = err_set("qwenchat.sampling: not an object");
	for (size_t i = 0; !rc && samp && i < sizeof fields / sizeof fields[0]; i++) {
		json_t *v = json_object_get(samp, fields[i].name);
		if (!v)
			continue;
		rc = take_sampling(v, fields[i].bit, fields[i].name, &h->sampling);
		h->sampling_set |= fields[i].bit;
	}
	if (!rc) {
		h->max_new = max_new ? (int)json_integer_value(max_new) : 0;
		h->model = model ? strdup(json_string_value(model)) : NULL;
		h->url = url ? strdup(json_string_value(url)) : NULL;
		if ((model && !h->model) || (url && !h->url))
			rc = err_set("out of memory");
	}
	json_decref(o);
	return rc;
}

char *app_last_session(const char *state_dir)
{
	char *lf = fio_join(state_dir, "last-session");
	char *path = lf ? fio_read_file(lf, 4096, NULL) : NULL;
	free(lf);
	if (!path)
		return NULL;
	path[strcspn(path, "\n")] = 0;
	struct stat st;
	if (stat(path, &st) == 0 && !S_ISREG(st.st_mode)) {
		err_set("%s: not a regular file (refused: a conversation is one)", path);
		free(path);
		return NULL;
	}
	return path;
}

char *app_resume_url(const char *state_dir)
{
	char *path = app_last_session(state_dir);
	if (!path)
		return NULL;
	struct chat *c = chat_load(path);
	free(path);
	struct app_held h = {0};
	char *url = NULL;
	if (c && c->meta && parse(c->meta, &h) == 0 && h.url)
		url = strdup(h.url);
	app_held_free(&h);
	chat_free(c);
	return url;
}

void app_held_free(struct app_held *h)
{
	free(h->model);
	free(h->url);
	memset(h, 0, sizeof *h);
}

int app_held_apply(const struct app *a, const struct app_config *cfg, struct app_config *eff,
		   struct app_held *h, void (*notice)(const char *))
{
	memset(h, 0, sizeof *h);
	h->think = -1;
	if (!a->chat->meta) /* saved before the chat recorded anything */
		return 0;
	if (parse(a->chat->meta, h))
		return err_prefix("--resume: %s", a->session_path);
	struct samp_params t; /* the recorded values must make settings of their own */
	samp_params_default(&t);
	samp_params_override(&t, &h->sampling, h->sampling_set);
	if (samp_params_check(&t))
		return err_prefix("--resume: %s: qwenchat.sampling", a->session_path);
	bool remote = cfg->remote.url != NULL;
	bool same_backend = remote ? h->url && !strcmp(h->url, cfg->remote.url) : !h->url;
	char msg[9000];
	if (!cfg->model && same_backend) {
		eff->model = h->model;
	} else if (h->model && notice) {
		/* Said aloud: the conversation goes on with another model than its own. */
		char *now = remote ? NULL
				   : app_held_model(cfg->model ? cfg->model
							       : hub_default_model(cfg->hub));
		const char *cur = remote ? (cfg->model ? cfg->model : "the server's model") : now;
		if (!cur || strcmp(cur, h->model) || !same_backend) {
			snprintf(msg, sizeof msg,
				 "this conversation was held with %s%s%s; it goes on "
				 "with %s%s%s",
				 h->model, h->url ? " at " : "", h->url ? h->url : "",
				 cur ? cur : "?", remote ? " at " : "",
				 remote ? cfg->remote.url : "");
			notice(msg);
		}
		free(now);
	}
	if (cfg->think < 0 && h->think >= 0)
		eff->think = h->think;
	if (cfg->max_new <= 0 && h->max_new > 0)
		eff->max_new = h->max_new;
	/* The recorded choices stand where the command line made none; a seed drawn at
	 * random for this run gives way to a chosen one. */
	unsigned given = cfg->sampling_set & ~(cfg->seed_drawn ? (unsigned)SAMP_SET_SEED : 0u);
	unsigned take = h->sampling_set & ~given;
	if ((given & SAMP_SET_TEMP) && !(given & SAMP_SET_GREEDY) && cfg->sampling.temperature > 0)
		take &= ~(unsigned)SAMP_SET_GREEDY; /* a temperature asked for now samples */
	samp_params_override(&eff->sampling, &h->sampling, take);
	eff->sampling_set |= take;
	if (take & SAMP_SET_SEED)
		eff->seed_drawn = false;
	return 0;
}
