/* app.c — the chat controller: opening the model, one turn at a time and the worker
 * thread the curses UI generates on. Slash commands: app_slash.c; the conversation's
 * file and its autosave: app_session.c. */
#include "src/app/app.h"
#include "src/app/app_state.h"

#include <errno.h>
#include <stdio.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "src/chat/fit.h"
#include "src/base/array.h"
#include "src/base/err.h"
#include "src/base/clock.h"
#include "src/base/fileio.h"
#include "src/base/jsonschema.h"
#include "src/base/proc.h"
#include "src/base/utf8.h"
#include "src/hub/hub.h"
#include "src/hub/loader.h"

/* The memory figures now (engine statistics, parameter counts, RSS); lock held or
 * no worker running. */
static void memory_update(struct app *a)
{
	if (!a->eng) { /* the remote backend: only this process's own memory */
		a->fig.mem.host_rss = proc_rss_bytes();
		return;
	}
	const struct eng_config *c = eng_model_config(a->model);
	struct eng_stats st;
	struct eng_param_counts pc;
	eng_get_stats(a->eng, &st);
	eng_count_params(c, &pc);
	struct app_memory *m = &a->fig.mem;
	m->weights = st.weight_bytes;
	m->tied = pc.lm_head == 0;
	/* the tensors' own bytes: a GGUF mixes types */
	const struct eng_weights *w = eng_model_weights(a->model);
	m->embedding = w->embed.nbytes;
	m->lm_head = w->lm_head.nbytes;
	m->attention = m->mlp = 0;
	m->norms = w->final_norm.nbytes;
	for (int l = 0; l < c->num_layers; l++) {
		const struct eng_layer *L = &w->layers[l];
		m->attention += L->wq.nbytes + L->wk.nbytes + L->wv.nbytes + L->wo.nbytes;
		m->mlp += L->w_gate.nbytes + L->w_up.nbytes + L->w_down.nbytes;
		m->norms += L->input_norm.nbytes + L->post_norm.nbytes + L->q_norm.nbytes +
			    L->k_norm.nbytes;
	}
	snprintf(m->weight_type, sizeof m->weight_type, "%s%s", eng_dtype_name(c->dtype),
		 eng_model_gguf(a->model) ? " GGUF" : "");
	m->kv_used = st.kv_bytes_used;
	m->kv_allocated = st.kv_bytes_allocated;
	m->kv_in_memory = st.kv_bytes_resident;
	/* mincore walks every page of every tensor: too slow for every token */
	double now = clock_now();
	if (!m->weights_in_memory || now - a->weights_checked > 0.5) {
		m->weights_in_memory = eng_model_resident_bytes(a->model);
		a->weights_checked = now;
	}
	m->layers = c->num_layers;
	m->scratch = st.scratch_bytes;
	m->graphs = st.graph_bytes;
	m->device_free = st.device_free;
	m->device_total = st.device_total;
	m->host_rss = proc_rss_bytes();
}

/* One character of well-formed text as the pane shows it: \n and \t written so,
 * other control characters (C0, DEL, C1: drawn as nothing, or as a blank) \xNN or
 * \u00NN. Returns the bytes of p it stands for. */
static size_t shown_char(const unsigned char *p, char *buf, const char **s, size_t *len)
{
	size_t bytes = p[0] >= 0xf0 ? 4 : p[0] >= 0xe0 ? 3 : p[0] >= 0xc0 ? 2 : 1;
	*s = (const char *)p;
	*len = bytes;
	if (p[0] == '\n' || p[0] == '\t') {
		*s = p[0] == '\n' ? "\\n" : "\\t";
		*len = 2;
	} else if (p[0] < 0x20 || p[0] == 0x7f) {
		*len = (size_t)snprintf(buf, 8, "\\x%02x", p[0]);
		*s = buf;
	} else if (p[0] == 0xc2 && p[1] < 0xa0) { /* U+0080..U+009F */
		*len = (size_t)snprintf(buf, 8, "\\u%04x", p[1]);
		*s = buf;
	}
	return bytes;
}

/* Writes the shown text of p[0..n) into out while it fits in room bytes; returns its
 * whole length (out NULL: measures only). */
static size_t shown_text(const char *p, size_t n, char *out, size_t room)
{
	size_t k = 0;
	for (size_t i = 0; i < n;) {
		size_t valid, bad;
		utf8_next_piece(p + i, n - i, &valid, &bad);
		for (size_t j = 0; j < valid;) {
			char buf[8];
			const char *s;
			size_t len;
			j += shown_char((const unsigned char *)p + i + j, buf, &s, &len);
			if (out && k + len <= room)
				memcpy(out + k, s, len);
			else
				out = NULL; /* a character cut: none after it either */
			k += len;
		}
		i += valid;
		if (i < n) { /* an ill-formed part: U+FFFD */
			if (out && k + 3 <= room)
				memcpy(out + k, UTF8_REPLACEMENT, 3);
			else
				out = NULL;
			k += 3;
			i += bad;
		}
	}
	return k;
}

void app_token_text(const struct app *a, int32_t id, char *out, size_t sz)
{
	size_t n = 0;
	const char *p = id >= 0 && a->tok ? tok_piece(a->tok, id, &n) : NULL;
	if (sz < 8) {
		if (sz)
			out[0] = 0;
		return;
	}
	size_t whole = p ? shown_text(p, n, NULL, 0) : 0;
	if (whole < sz) {
		if (p)
			shown_text(p, n, out, sz - 1);
		out[whole] = 0;
		return;
	}
	/* too long: the characters that fit before "…" */
	memset(out, 0, sz);
	shown_text(p, n, out, sz - 1 - 3); /* escapes hold no NUL: strlen finds its end */
	memcpy(out + strlen(out), "\xe2\x80\xa6", 4);
}

static int open_engine(struct app *a, const struct app_config *cfg, void (*notice)(const char *))
{
	a->model = eng_model_open(a->dir);
	if (!a->model)
		return -1;
	a->eng = eng_new(a->model, &cfg->engine, notice);
	if (!a->eng)
		return -1;
	loader_warn_fn was = notice ? loader_warn_to(notice) : NULL; /* shown with the rest */
	a->tok = loader_tokenizer(a->dir);
	if (notice)
		loader_warn_to(was);
	if (!a->tok || loader_check_vocab(a->tok, eng_model_config(a->model)->vocab_size, a->dir))
		return -1;
	const char *warn = NULL;
	a->variant = tmpl_detect(tok_chat_template(a->tok), &warn);
	if (warn && notice)
		notice(warn);
	if (cfg->think < 0 && tmpl_absent_think(tok_chat_template(a->tok)) == TMPL_THINK_OFF)
		a->think = false; /* the template's default, as --think or /think changes */
	samp_params_default(&a->params);
	a->n_eos = 0;
	if (loader_generation(a->dir, &a->params, a->eos, &a->n_eos))
		return -1;
	/* the model's values stand for thinking mode (as in run and serve); Qwen's
	 * non-thinking preset replaces them without it */
	a->model_params = a->params;
	if (!a->think)
		samp_params_preset(&a->params, false, cfg->sampling_set);
	samp_params_apply(&a->params, &cfg->sampling, cfg->sampling_set);
	a->samp = samp_new(&a->params, eng_model_config(a->model)->vocab_size);
	if (!a->samp)
		return -1;
	struct sess_options so = {0};
	so.eos = a->eos;
	so.n_eos = a->n_eos;
	so.cancel = &a->cancel;
	a->sess = sess_new(a->eng, a->model, a->tok, &so);
	return a->sess ? 0 : -1;
}

/* The settings, then the backend: the remote one, or the model and the engine. cfg is
 * the command line's, completed with what a resumed conversation records. */
static int open_with(struct app *a, const struct app_config *cfg, void (*notice)(const char *))
{
	a->think = cfg->think != 0;
	a->user_set = cfg->sampling_set;
	a->seed_drawn = cfg->seed_drawn;
	a->max_new = cfg->max_new > 0 ? cfg->max_new : INT_MAX; /* default: the context */
	a->max_new_set = cfg->max_new > 0;
	if (cfg->remote.url)
		return app_remote_open(a, cfg, notice);
	const char *model = cfg->model ? cfg->model : hub_default_model(cfg->hub);
	if (!(a->held_model = app_held_model(model)))
		return -1;
	a->dir = hub_resolve(cfg->hub, cfg->model);
	if (!a->dir || open_engine(a, cfg, notice))
		return -1;
	const char *slash = strrchr(a->dir, '/');
	a->model_name = strdup(slash && slash[1] ? slash + 1 : a->dir);
	/* A snapshot directory of the HF cache is a commit hash: name the repo instead. */
	if (cfg->model && strchr(cfg->model, '/') && !fio_is_dir(cfg->model)) {
		free(a->model_name);
		a->model_name = strdup(cfg->model);
	}
	a->fig.ctx_max = eng_ctx(a->eng);
	memory_update(a);
	return 0;
}

struct app *app_open(const struct app_config *cfg, void (*notice)(const char *msg))
{
	struct app *a = calloc(1, sizeof *a);
	if (!a) {
		err_set("out of memory");
		return NULL;
	}
	a->lock_fd = -1;
	pthread_mutex_init(&a->lock, NULL);
	a->parse_special = cfg->parse_special;
	a->show_reasoning = true;
	a->chat = chat_new();
	a->state_dir = cfg->state_dir ? strdup(cfg->state_dir) : NULL;
	a->home = cfg->home ? strdup(cfg->home) : NULL;
	if (!a->chat || !a->state_dir || (cfg->home && !a->home)) {
		err_set("out of memory");
		goto fail;
	}
	if (fio_private_dir(a->state_dir))
		goto fail;
	if (cfg->resume ? app_resume_last(a, notice) : app_new_session_file(a))
		goto fail;
	if (!cfg->resume && cfg->system && chat_set_system(a->chat, cfg->system))
		goto fail;
	struct app_config eff = *cfg;
	struct app_held held = {0};
	int rc = cfg->resume ? app_held_apply(a, cfg, &eff, &held, notice) : 0;
	if (!rc)
		rc = open_with(a, &eff, notice);
	app_held_free(&held);
	if (!rc)
		return a;
fail:
	app_free(a);
	return NULL;
}

void app_free(struct app *a)
{
	if (!a)
		return;
	if (a->worker_running) {
		app_cancel(a);
		pthread_join(a->worker, NULL);
	}
	remote_free(a->remote);
	sess_free(a->sess);
	js_free(a->any_object);
	js_free(a->schema);
	json_decref(a->schema_json);
	samp_free(a->samp);
	tok_free(a->tok);
	eng_free(a->eng);
	eng_model_free(a->model);
	chat_free(a->chat);
	free(a->probs);
	free(a->dir);
	free(a->model_name);
	free(a->held_model);
	free(a->state_dir);
	free(a->home);
	app_release_lock(a->session_path, a->lock_fd);
	free(a->session_path);
	free(a->reasoning.s);
	free(a->answer.s);
	free(a->queue.s);
	free(a->segs);
	free(a->att.rows);
	free(a->att.ids);
	pthread_mutex_destroy(&a->lock);
	free(a);
}

const struct chat *app_chat(const struct app *a)
{
	return a->chat;
}
const char *app_model_name(const struct app *a)
{
	return a->model_name;
}
const char *app_backend(const struct app *a)
{
	return a->remote ? "remote" : eng_backend_name(a->eng);
}
const char *app_remote_url(const struct app *a)
{
	return a->remote ? remote_url(a->remote) : NULL;
}
bool app_thinking(const struct app *a)
{
	return a->think;
}
bool app_show_reasoning(const struct app *a)
{
	return a->show_reasoning;
}
void app_set_show_reasoning(struct app *a, bool show)
{
	a->show_reasoning = show;
}
const char *app_session_path(const struct app *a)
{
	return a->session_path;
}
const char *app_state_dir(const struct app *a)
{
	return a->state_dir;
}
void app_cancel(struct app *a)
{
	atomic_store(&a->cancel, 1);
}

int app_add_user(struct app *a, const char *text)
{
	if (app_replaces_last(a))
		chat_truncate(a->chat, a->chat->n - 1);
	int rc = chat_add(a->chat, CHAT_USER, text, NULL);
	a->own_unanswered = rc == 0;
	return rc;
}

char *app_take_refused(struct app *a)
{
	bool refused = a->refused;
	a->refused = false;
	if (!refused || !app_replaces_last(a))
		return NULL;
	char *text = strdup(a->chat->turns[a->chat->n - 1].content);
	if (!text)
		return NULL;
	chat_truncate(a->chat, a->chat->n - 1);
	app_conversation_changed(a, true);
	app_autosave(a);
	return text;
}

bool app_replaces_last(const struct app *a)
{
	size_t n = a->chat->n;
	return a->own_unanswered && n && a->chat->turns[n - 1].role == CHAT_USER;
}

int app_buf_add(struct app_buf *b, const char *s, size_t n)
{
	if (arr_reserve(&b->s, &b->cap, b->n + n + 1, 1))
		return -1;
	memcpy(b->s + b->n, s, n);
	b->n += n;
	b->s[b->n] = 0;
	return 0;
}

/* Refreshes the live figures (caller holds the lock; the worker is between forwards). */
static void figures_update(struct app *a)
{
	a->fig.turn = *sess_stats(a->sess);
	a->fig.ctx_used = sess_n(a->sess);
	a->fig.prefilling = a->fig.turn.generated == 0;
	/* The session gives the decode speed at the end of a turn; meanwhile it is
	 * measured here from the first token on. */
	double now = clock_now();
	if (a->fig.turn.generated <= 1)
		a->first_token_time = now;
	else if (a->fig.turn.decode_tps == 0 && now > a->first_token_time)
		a->fig.turn.decode_tps = (a->fig.turn.generated - 1) / (now - a->first_token_time);
	memory_update(a);
	if (a->capture)
		app_capture_layer(a);
}

/* The room kept for the answer when older turns must go (see fitted). */
static int fit_reserve(const struct app *a, int ctx)
{
	int room = a->max_new_set ? a->max_new : ctx / 8;
	return room < ctx / 2 ? room : ctx / 2;
}

/* The conversation as the model will see it (with the generation prompt), fitted
 * into the context: *n ids, malloc'd, and *dropped, the turns left out. A copy is
 * fitted: turns dropped for the context stay in the saved conversation. Room is kept
 * for the answer when older turns must go: what -n asks for (at most half the
 * context), else an eighth of it; the answer may then run on until the context is
 * full. When turns must go, a quarter of the context is freed besides, so that the
 * next turns reuse the cache instead of each moving the start and prefilling it
 * all. NULL with err_set. */
static int32_t *fitted(struct app *a, int *n, int *dropped)
{
	int ctx = eng_ctx(a->eng);
	int reserve = fit_reserve(a, ctx);
	int think = tmpl_has_think_switch(a->variant) ? a->think : TMPL_THINK_ABSENT;
	struct chat *fit = chat_dup(a->chat);
	*dropped = a->fit_dropped;
	int32_t *ids = fit ? chat_render_fit(a->tok, fit, a->variant, think, !a->parse_special, ctx,
					     reserve, ctx / 4, n, dropped)
			   : NULL;
	chat_free(fit);
	if (ids)
		a->fit_dropped = *dropped;
	return ids;
}

/* Whether the conversation with the answer's room fits the context without leaving a
 * turn out, as a fit afresh finds on its first pass: one rendering, not a fit (whose
 * drops render the conversation again each). */
static bool fits_whole(struct app *a, int ctx)
{
	int think = tmpl_has_think_switch(a->variant) ? a->think : TMPL_THINK_ABSENT;
	size_t n = 0;
	int32_t *ids = chat_encode(a->tok, a->chat, a->variant, true, think, !a->parse_special, &n);
	bool whole = ids && n + (size_t)fit_reserve(a, ctx) <= (size_t)ctx;
	free(ids);
	return whole;
}

void app_conversation_changed(struct app *a, bool kept_start)
{
	a->saved_copy = false;
	/* The context the conversation on screen takes, as the next turn will render it
	 * (without the answer's opening): the cache may still hold what was cleared. */
	int used = 0;
	if (a->tok && (chat_count(a->chat) || chat_system(a->chat))) {
		int think = tmpl_has_think_switch(a->variant) ? a->think : TMPL_THINK_ABSENT;
		size_t n = 0;
		int32_t *ids = chat_encode(a->tok, a->chat, a->variant, false, think,
					   !a->parse_special, &n);
		used = ids ? (int)n : 0;
		free(ids);
	}
	/* what the next turn will keep of a conversation longer than the context */
	int ctx = a->eng ? eng_ctx(a->eng) : 0, dropped = 0, m = 0;
	a->own_unanswered = false;
	if (!kept_start)
		a->fit_dropped = a->dropped_told = 0;
	else if (ctx && a->fit_dropped && a->tok && fits_whole(a, ctx))
		a->fit_dropped = a->dropped_told = 0; /* short again: seen whole */
	if (ctx && (used >= ctx || a->fit_dropped)) {
		int32_t *ids = fitted(a, &m, &dropped);
		used = ids ? m : ctx;
		free(ids);
	}
	pthread_mutex_lock(&a->lock);
	a->fig.ctx_used = used;
	a->fig.dropped = dropped;
	pthread_mutex_unlock(&a->lock);
}

struct turn_ctx {
	struct app *a;
	sess_emit_fn emit;
	void *user;
};

static int turn_emit(void *u, enum sess_part part, const char *text, size_t len)
{
	struct turn_ctx *t = u;
	struct app *a = t->a;
	if (app_buf_add(part == SESS_REASONING ? &a->reasoning : &a->answer, text, len))
		return 1;
	pthread_mutex_lock(&a->lock);
	figures_update(a);
	pthread_mutex_unlock(&a->lock);
	return t->emit ? t->emit(t->user, part, text, len) : 0;
}

int app_turn(struct app *a, sess_emit_fn emit, void *user)
{
	if (!a->chat->n || a->chat->turns[a->chat->n - 1].role != CHAT_USER)
		return err_set("nothing to answer: the last turn is not a message");
	/* before the save below, which may take a while: a stop pressed then counts */
	atomic_store(&a->cancel, 0);
	a->refused = false;
	/* The message is saved before the answer starts: a crash, a kill or a closed
	 * terminal mid-answer loses at most the answer. */
	app_autosave(a);
	if (a->remote)
		return app_remote_turn(a, emit, user);
	int n = 0, dropped = 0;
	int32_t *ids = fitted(a, &n, &dropped);
	if (!ids) {
		a->refused = a->own_unanswered;
		return -1;
	}
	pthread_mutex_lock(&a->lock);
	a->fig.dropped = dropped;
	a->fig.dropped_more = dropped > a->dropped_told;
	a->fig.prefilling = true;
	a->answer_gone = false; /* the panes follow this turn's forwards */
	pthread_mutex_unlock(&a->lock);
	if (dropped)
		a->dropped_told = dropped;
	int rc = sess_sync(a->sess, ids, n);
	free(ids);
	pthread_mutex_lock(&a->lock);
	figures_update(a);
	pthread_mutex_unlock(&a->lock);
	if (rc)
		return rc < 0 ? -1 : 0; /* cancelled while prefilling: no answer to keep */
	a->reasoning.n = a->answer.n = 0;
	app_buf_add(&a->reasoning, "", 0);
	app_buf_add(&a->answer, "", 0);
	int think = tmpl_has_think_switch(a->variant) ? a->think : TMPL_THINK_ABSENT;
	enum sess_split split = tmpl_prompt_opens_think(a->variant, think)
					? SESS_SPLIT_REASONING_FIRST
					: SESS_SPLIT_ANSWER_FIRST;
	struct turn_ctx t = {a, emit, user};
	app_probs_turn(a);
	if (a->json && !a->any_object && !(a->any_object = js_object()))
		return -1;
	if (sess_set_json(a->sess, !a->json ? NULL : a->schema ? a->schema : a->any_object))
		return -1;
	rc = sess_generate(a->sess, a->samp, a->max_new, split, turn_emit, &t);
	pthread_mutex_lock(&a->lock);
	figures_update(a);
	a->fig.prefilling = false;
	pthread_mutex_unlock(&a->lock);
	/* Kept even when stopped early (or by an error after some text): the partial
	 * answer is part of the conversation. */
	if (rc && !a->answer.n && !a->reasoning.n)
		return -1;
	char err[ERR_MAX];
	snprintf(err, sizeof err, "%s", rc ? err_msg() : "");
	/* An answer that wrote its own </think> where no part opened keeps it in its
	   text, with no reasoning: the template then splits it as Hugging Face splits the
	   model's text (an empty reasoning would have it drawn whole). */
	bool own_tags = !a->reasoning.n && strstr(a->answer.s, "</think>");
	if (chat_add(a->chat, CHAT_ASSISTANT, a->answer.s, own_tags ? NULL : a->reasoning.s))
		return -1;
	app_autosave(a);
	return rc ? err_set("%s (the partial answer is kept)", err) : 0;
}

int app_prefill(struct app *a)
{
	/* A server keeps its own cache (vLLM's and SGLang's prefix caching). */
	if (a->remote || (!chat_count(a->chat) && !chat_system(a->chat)))
		return 0;
	atomic_store(&a->cancel, 0);
	int think = tmpl_has_think_switch(a->variant) ? a->think : TMPL_THINK_ABSENT;
	size_t n;
	int32_t *ids = chat_encode_start(a->tok, a->chat, a->variant, think, !a->parse_special, &n);
	if (!ids)
		return -1;
	int rc = 0, m = 0, dropped = 0;
	if (n >= (size_t)eng_ctx(a->eng)) { /* too long: what the next turn will keep */
		free(ids);
		ids = fitted(a, &m, &dropped);
		n = (size_t)m;
		if (!ids)
			return -1;
	}
	if (n > 0)
		rc = sess_sync(a->sess, ids, (int)n);
	free(ids);
	pthread_mutex_lock(&a->lock);
	figures_update(a);
	pthread_mutex_unlock(&a->lock);
	return rc;
}

/* ---- worker thread ---------------------------------------------------------- */

static int queue_emit(void *u, enum sess_part part, const char *text, size_t len)
{
	struct app *a = u;
	pthread_mutex_lock(&a->lock);
	if (!a->n_segs || a->segs[a->n_segs - 1].part != part) {
		if (arr_reserve(&a->segs, &a->cap_segs, a->n_segs + 1, sizeof *a->segs)) {
			pthread_mutex_unlock(&a->lock);
			return 1;
		}
		a->segs[a->n_segs++] = (struct app_seg){part, 0};
	}
	int rc = app_buf_add(&a->queue, text, len);
	if (!rc)
		a->segs[a->n_segs - 1].len += len;
	pthread_mutex_unlock(&a->lock);
	return rc ? 1 : 0;
}

static void *worker_main(void *u)
{
	struct app *a = u;
	int rc = a->worker_prefill ? app_prefill(a) : app_turn(a, queue_emit, a);
	pthread_mutex_lock(&a->lock);
	a->worker_rc = rc < 0 ? -1 : 0;
	snprintf(a->worker_err, sizeof a->worker_err, "%s", rc < 0 ? err_msg() : "");
	a->worker_done = true;
	a->fig.busy = false;
	pthread_mutex_unlock(&a->lock);
	return NULL;
}

int app_start(struct app *a, bool prefill_only)
{
	if (a->worker_running)
		return err_set("a reply is already being generated");
	a->worker_prefill = prefill_only;
	a->worker_done = false;
	a->fig.busy = true;
	a->fig.prefilling = true;
	a->fig.dropped = 0; /* this turn's, set once the prompt is fitted */
	a->fig.dropped_more = false;
	atomic_store(&a->cancel, 0);
	if (proc_thread_create(&a->worker, worker_main, a)) {
		a->fig.busy = false;
		return err_set("cannot start the generation thread");
	}
	a->worker_running = true;
	return 0;
}

bool app_busy(const struct app *a)
{
	return a->worker_running;
}

bool app_busy_prefilling(const struct app *a)
{
	return a->worker_running && a->worker_prefill;
}

bool app_drain(struct app *a, void (*piece)(void *u, enum sess_part p, const char *s, size_t n),
	       void *u, int *rc, char *err, size_t errsz)
{
	pthread_mutex_lock(&a->lock);
	size_t off = 0;
	for (size_t i = 0; i < a->n_segs; i++) {
		piece(u, a->segs[i].part, a->queue.s + off, a->segs[i].len);
		off += a->segs[i].len;
	}
	a->n_segs = 0;
	a->queue.n = 0;
	bool done = a->worker_running && a->worker_done;
	if (done) {
		*rc = a->worker_rc;
		snprintf(err, errsz, "%s", a->worker_err);
	}
	pthread_mutex_unlock(&a->lock);
	if (done) {
		pthread_join(a->worker, NULL);
		a->worker_running = false;
	}
	return done;
}

void app_figures(struct app *a, struct app_figures *f)
{
	pthread_mutex_lock(&a->lock);
	*f = a->fig;
	pthread_mutex_unlock(&a->lock);
	f->mem.host_rss = proc_rss_bytes();
}
