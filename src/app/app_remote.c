/* app_remote.c — the chat controller on the remote backend: the conversation goes to an
 * OpenAI-compatible server (src/remote/) and its answer comes back through the same
 * emit callback, live figures, conversation and autosave as a local turn, so the UI
 * and the plain mode drive either the same way. */
#include "src/app/app.h"
#include "src/app/app_state.h"

#include <stdio.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "src/base/clock.h"
#include "src/base/err.h"
#include "src/base/proc.h"

/* A wait for a busy server: in the figures (the UI's status bar and notices), and told
 * to the front end's busy_notice, else while the model is picked to app_open's. */
static void busy_wait(void *u, const char *msg)
{
	struct app *a = u;
	pthread_mutex_lock(&a->lock);
	snprintf(a->fig.waiting, sizeof a->fig.waiting, "%s", msg);
	a->fig.waits++;
	pthread_mutex_unlock(&a->lock);
	if (a->busy_notice)
		a->busy_notice(msg);
	else if (a->open_notice)
		a->open_notice(msg);
}

int app_remote_open(struct app *a, const struct app_config *cfg, void (*notice)(const char *))
{
	long ctx = 0;
	struct remote_options o = cfg->remote;
	o.on_retry = busy_wait, o.retry_user = a;
	a->busy_notice = cfg->busy_notice;
	a->open_notice = notice;
	a->remote = remote_new(&o);
	if (a->remote)
		a->model_name = remote_pick_model(a->remote, cfg->model, &ctx, NULL);
	a->open_notice = NULL; /* a turn runs on a thread of its own */
	if (!a->model_name)
		return -1;
	/* The server renders the template; the hybrid Qwen3 one is assumed, whose
	 * enable_thinking switch /think asks the server for. */
	a->variant = TMPL_QWEN3;
	samp_params_default(&a->params);
	samp_params_preset(&a->params, a->think, cfg->sampling_set);
	samp_params_override(&a->params, &cfg->sampling, cfg->sampling_set);
	if (samp_params_check(&a->params))
		return -1;
	a->fig.ctx_max = ctx < (1L << 30) ? (int)ctx : 0;
	a->fig.mem.host_rss = proc_rss_bytes();
	if (notice) {
		char m[640];
		if (ctx)
			snprintf(m, sizeof m, "remote: %s at %s, context %ld tokens", a->model_name,
				 remote_url(a->remote), ctx);
		else
			snprintf(m, sizeof m, "remote: %s at %s", a->model_name,
				 remote_url(a->remote));
		notice(m);
		if (remote_key_in_clear(a->remote))
			notice("the API key travels unencrypted (http) to a host beyond this "
			       "machine: "
			       "prefer https");
	}
	return 0;
}

unsigned app_remote_sent(const struct app *a)
{
	unsigned preset = SAMP_SET_TEMP | SAMP_SET_TOP_K | SAMP_SET_TOP_P | SAMP_SET_MIN_P;
	return a->user_set | (a->think ? 0 : preset);
}

/* One remote turn in progress. */
struct rturn {
	struct app *a;
	sess_emit_fn emit;
	void *user;
	struct reply reply;
	double start; /* clock_now() when the request went out */
};

/* The turn's figures from what the stream said so far (lock held). */
static void figures(struct app *a, const struct rturn *t)
{
	const struct reply *r = &t->reply;
	reply_stats(r, t->start, &a->fig.turn);
	if (r->prompt_tokens >= 0) { /* each up to 2^30, as the server says: their sum in range */
		long long used = (long long)r->prompt_tokens +
				 (r->completion_tokens > 0 ? r->completion_tokens : 0);
		a->fig.ctx_used = used < INT_MAX ? (int)used : INT_MAX;
	}
	a->fig.prefilling = r->deltas == 0;
	a->fig.mem.host_rss = proc_rss_bytes();
}

static int remote_emit(void *u, enum sess_part part, const char *text, size_t len)
{
	struct rturn *t = u;
	struct app *a = t->a;
	if (app_buf_add(part == SESS_REASONING ? &a->reasoning : &a->answer, text, len))
		return 1;
	pthread_mutex_lock(&a->lock);
	figures(a, t);
	pthread_mutex_unlock(&a->lock);
	return t->emit ? t->emit(t->user, part, text, len) : 0;
}

/* The calls go into the new assistant turn and, a line each, to the front end, the
 * way a loaded conversation shows them. */
static int add_calls(struct rturn *t)
{
	struct app *a = t->a;
	size_t turn = a->chat->n - 1;
	for (size_t i = 0; i < t->reply.n_calls; i++) {
		const struct reply_call *c = &t->reply.calls[i];
		const char *args = c->arguments.n ? c->arguments.p : "";
		if (!c->name.n) /* a stream cut inside the call */
			continue;
		if (chat_add_tool_call(a->chat, turn, c->name.p, args, true))
			return -1;
		if (!t->emit)
			continue;
		struct strbuf line = {0};
		sb_printf(&line, "%stool call: %s %s", a->answer.n || i ? "\n" : "", c->name.p,
			  args);
		if (!line.oom)
			t->emit(t->user, SESS_ANSWER, line.p, line.n);
		free(line.p);
	}
	return 0;
}

static enum sess_stop stop_reason(struct app *a, const struct reply *r)
{
	if (atomic_load(&a->cancel))
		return SESS_STOP_CANCEL;
	if (r->out.stop)
		return SESS_STOP_CALLER;
	return r->finish == REPLY_LENGTH ? SESS_STOP_MAX : SESS_STOP_EOS;
}

int app_remote_turn(struct app *a, sess_emit_fn emit, void *user)
{
	struct rturn t = {.a = a, .emit = emit, .user = user}; /* app_turn reset cancel */
	reply_init(&t.reply, remote_emit, &t);
	a->reasoning.n = a->answer.n = 0;
	if (app_buf_add(&a->reasoning, "", 0) || app_buf_add(&a->answer, "", 0))
		return -1;
	pthread_mutex_lock(&a->lock);
	memset(&a->fig.turn, 0, sizeof a->fig.turn);
	a->fig.prefilling = true;
	a->fig.dropped = 0;
	a->fig.waiting[0] = 0;
	pthread_mutex_unlock(&a->lock);
	struct remote_request q = {
		.model = a->model_name,
		.chat = a->chat,
		.think = a->think ? 1 : 0,
		.sampling = a->params,
		.sampling_set = app_remote_sent(a),
		.max_tokens = a->max_new_set ? a->max_new : 0,
		.json = a->json,
		.schema = a->schema_json,
	};
	t.start = clock_now();
	int rc = remote_chat(a->remote, &q, &t.reply, &a->cancel);
	pthread_mutex_lock(&a->lock);
	figures(a, &t);
	a->fig.prefilling = false;
	a->fig.turn.stop = stop_reason(a, &t.reply);
	/* known once a stream ended whole: usage comes in its last chunk */
	if (rc == 0)
		a->fig.no_counts = t.reply.prompt_tokens < 0;
	pthread_mutex_unlock(&a->lock);
	bool nothing = !a->answer.n && !a->reasoning.n && !t.reply.n_calls;
	/* Nothing came: a failure leaves the conversation as it was, and so does a stop
	 * before the first token (as a local turn stopped while prefilling). */
	if (nothing && (rc || a->fig.turn.stop == SESS_STOP_CANCEL)) {
		reply_free(&t.reply);
		return rc ? -1 : 0;
	}
	char err[ERR_MAX];
	snprintf(err, sizeof err, "%s", rc ? err_msg() : "");
	if (chat_add(a->chat, CHAT_ASSISTANT, a->answer.s, a->reasoning.s) || add_calls(&t)) {
		reply_free(&t.reply);
		return -1;
	}
	reply_free(&t.reply);
	app_autosave(a);
	return rc ? err_set("%s (the partial answer is kept)", err) : 0;
}
