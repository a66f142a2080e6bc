/* generate.c — one request on the model: settings, prompt, KV sync, the decode loop
 * feeding a completion, and the response written out (generate.h); a text
 * completion's prompts one after the other, each a choice. */
#include "src/serve/generate.h"

#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

#include "src/base/err.h"
#include "src/base/utf8.h"

/* State of one answer while the session generates it. */
struct run {
	const struct gen_model *m;
	const struct oai_request *r;
	const struct gen_output *out;
	struct completion *c;
	json_t *choices;   /* not streamed: the choices made so far */
	struct strbuf buf; /* scratch for stream events */
	size_t held;       /* not streamed: log-probabilities listed so far */
	bool too_big;      /* ... past GEN_MAX_HELD: the request fails */
	const struct completion_usage *usage; /* the request's so far */
	int prompt_now;                       /* the prompt tokens of the choice being made */
	json_t *prompt_lp; /* not streamed: the prompt's prompt_logprobs, where asked */
};

/* Log-probabilities (a token's own and each of its top_logprobs) an answer that is not
 * streamed may hold until it is written: about a kilobyte each as JSON values, so that
 * n choices of long answers with top_logprobs 20 cannot take the machine's memory. A
 * stream sends them as they come and has no such bound. */
#define GEN_MAX_HELD ((size_t)1 << 18)

/* Counts a token's n + 1 log-probabilities against GEN_MAX_HELD. */
static void hold(struct run *x, int n)
{
	x->held += (size_t)n + 1;
	if (!x->r->stream && x->held > GEN_MAX_HELD)
		x->too_big = true;
}

/* The failure of a request whose answer passed GEN_MAX_HELD. */
static int too_big(struct run *x)
{
	char msg[256];
	snprintf(msg, sizeof msg,
		 "logprobs: an answer that is not streamed holds at most %zu log-probabilities "
		 "(a token's own and its top_logprobs, for every choice): ask with \"stream\": "
		 "true, or for fewer tokens, choices or top_logprobs",
		 GEN_MAX_HELD);
	return gen_fail(x->out, false, 400, msg, "logprobs", "response_too_large");
}

/* The log-probabilities the prompt_logprobs of a prompt of n tokens list: each
 * token's own and its likeliest, the first token's none (0 when not asked for). */
static size_t prompt_entries(const struct oai_request *r, int n)
{
	if (r->prompt_logprobs < 0 || r->stream || n < 2)
		return 0;
	return (size_t)(n - 1) * (size_t)(r->prompt_logprobs + 1);
}

/* Whether a response would list more than GEN_MAX_HELD of them (sum): then the
 * failure is written. */
static bool prompt_too_big(const struct gen_output *out, size_t sum)
{
	if (sum <= GEN_MAX_HELD)
		return false;
	char msg[256];
	snprintf(msg, sizeof msg,
		 "prompt_logprobs: a response holds at most %zu log-probabilities (each prompt "
		 "token's own and its likeliest, for every choice of a text completion): ask for "
		 "fewer, or for shorter prompts",
		 GEN_MAX_HELD);
	gen_fail(out, false, 400, msg, "prompt_logprobs", "response_too_large");
	return true;
}

static uint64_t random64(void)
{
	uint64_t x = 0;
	if (getrandom(&x, sizeof x, 0) != sizeof x) /* never short for 8 bytes; the clock else */
		x = (uint64_t)time(NULL) ^ (uint64_t)clock();
	return x;
}

int gen_fail(const struct gen_output *out, bool started, int status, const char *message,
	     const char *param, const char *code)
{
	char *body = oai_error_json(
		message, status >= 500 ? "server_error" : "invalid_request_error", param, code);
	if (!started)
		out->start(out->user, status);
	if (body && started) { /* mid-stream: an error event, then the end */
		struct strbuf b = {0};
		oai_sse(&b, body);
		oai_sse(&b, "[DONE]");
		if (!b.oom)
			out->write(out->user, b.p, b.n);
		free(b.p);
	} else if (body) {
		out->write(out->user, body, strlen(body));
	}
	free(body);
	return status;
}

/* The usage of the choice being made, for a stream that carries it in every chunk:
 * its prompt and the completion tokens so far. */
static void live_usage(struct run *x, int completion)
{
	if (!x->r->continuous_usage || !x->c)
		return;
	struct completion_usage u = {
		.prompt = x->prompt_now, .cached = x->usage->cached, .completion = completion};
	completion_set_usage(x->c, &u);
}

/* The end of an answer (sess_generate returned rc): its tokens, the one that ended it
 * included as usage counts it, added to *usage and to the stream's live usage; the
 * stop token that ended it, unless the tokenizer's eos, named as vLLM's stop_reason. */
static void answer_done(struct run *x, int rc, struct completion_usage *usage)
{
	const struct gen_model *m = x->m;
	const struct sess_stats *st = sess_stats(m->sess);
	bool eos = rc == 0 && st->stop == SESS_STOP_EOS;
	int made = st->generated + eos;
	usage->completion += made;
	live_usage(x, made);
	if (eos && sess_n(m->sess) > 0) {
		int32_t id = sess_ids(m->sess)[sess_n(m->sess) - 1];
		const char *name = tok_eos_token(m->tok);
		if (!name || tok_id(m->tok, name) != id)
			completion_set_stop_id(x->c, id);
	}
}

/* Streams what the completion can send now. */
static void flush(struct run *x)
{
	x->buf.n = 0;
	completion_stream(x->c, &x->buf);
	if (x->buf.n && !x->buf.oom)
		x->out->write(x->out->user, x->buf.p, x->buf.n);
}

static int on_text(void *user, enum sess_part part, const char *text, size_t len)
{
	struct run *x = user;
	if (x->too_big)
		return 1;
	/* as vLLM, no stop string is looked for in the first min_tokens tokens' text */
	bool stops = sess_stats(x->m->sess)->generated > x->r->min_tokens;
	int stop = completion_add_text(x->c, part, text, len, stops);
	if (x->r->stream) {
		live_usage(x, sess_stats(x->m->sess)->generated);
		flush(x);
	}
	return stop;
}

/* A token's entry into the choice: id's log-probability and the n likeliest, each
 * by its bytes (a padding row past the tokenizer, never sampled but among the
 * likeliest now and then, reads as nothing), or as "token_id:ID" where the request
 * says return_tokens_as_token_ids (vLLM's). 0, or -1 out of memory. */
static int add_entry(struct run *x, int32_t id, double logprob, const struct samp_logprob *top,
		     int n)
{
	char names[OAI_MAX_TOP_LOGPROBS + 1][24];
	struct completion_token tt[OAI_MAX_TOP_LOGPROBS], t;
	for (int i = 0; i <= n; i++) {
		struct completion_token *c = i < n ? &tt[i] : &t;
		int32_t k = i < n ? top[i].id : id;
		*c = (struct completion_token){.logprob = i < n ? top[i].logprob : logprob};
		if (x->r->tokens_as_ids) {
			c->len = (size_t)snprintf(names[i], sizeof names[i], "token_id:%d", (int)k);
			c->bytes = names[i];
		} else if (!(c->bytes = tok_piece(x->m->tok, k, &c->len))) {
			c->bytes = "", c->len = 0;
		}
	}
	hold(x, n);
	return completion_add_token(x->c, &t, tt, n);
}

/* A generated token's log-probability and the top_logprobs most likely, into the
 * choice: by default of the model's own distribution (the row as computed: no
 * penalties, temperature 1; vLLM's raw_logprobs, as a prompt's tokens are scored),
 * with --logprobs-mode processed_logprobs of the one it was drawn from. */
static void on_token(void *user, int32_t id, const struct samp *sp)
{
	struct run *x = user;
	struct scores_entry e;
	int n = x->r->top_logprobs;
	if (x->m->processed_logprobs) {
		if (samp_logprobs(sp, id, &e.logprob, e.top, n))
			return;
	} else {
		const float *raw = sess_logits(x->m->sess);
		if (!raw || scores_entry_of(raw, x->m->vocab, id, false, &e))
			return;
		while (n > 0 && e.top[n - 1].id < 0) /* a vocabulary under top_logprobs */
			n--;
	}
	add_entry(x, id, e.logprob, e.top, n);
}

/* The request's enable_thinking, or the template's default. */
static int thinking(const struct gen_model *m, const struct oai_request *r)
{
	return r->enable_thinking != TMPL_THINK_ABSENT ? r->enable_thinking : m->absent_think;
}

/* The sampler set for this request. 0 or -1 (err_set: a value out of range). */
static int set_sampling(const struct gen_model *m, const struct oai_request *r)
{
	struct samp_params p = m->params;
	if (r->kind == OAI_CHAT && thinking(m, r) == TMPL_THINK_OFF &&
	    tmpl_has_think_switch(m->variant))
		samp_params_preset(&p, false, m->params_set | r->samp_set);
	samp_params_apply(&p, &r->samp, r->samp_set);
	if (!((m->params_set | r->samp_set) & SAMP_SET_SEED))
		p.seed = random64();
	if (samp_set_params(m->samp, &p))
		return -1;
	samp_reseed(m->samp, p.seed); /* the same seed twice must give the same text */
	return 0;
}

/* A max_tokens the request gave against this server's limit (cap) and the room a
 * prompt of k tokens leaves in the context of ctx: NULL when it fits, else the message
 * (written into msg) and its *code. subject says what the prompt is ("the messages
 * are", "prompt[2] is"). */
static const char *over_limit(const struct oai_request *r, const char *subject, size_t k, int cap,
			      int room, int ctx, char *msg, size_t size, const char **code)
{
	const char *key = r->max_tokens_key ? r->max_tokens_key : "max_tokens";
	*code = NULL;
	if (r->max_tokens > cap) {
		snprintf(msg, size, "%s: %d is above this server's limit of %d", key, r->max_tokens,
			 cap);
	} else if (r->max_tokens > room) {
		snprintf(msg, size,
			 "%s: %s %zu tokens and %s %d, more than the model's context of %d", key,
			 subject, k, key, r->max_tokens, ctx);
		*code = "context_length_exceeded";
	} else {
		return NULL;
	}
	return msg;
}

int gen_truncate(const struct gen_model *m, const struct oai_request *r, int32_t *ids, size_t *k,
		 const struct gen_output *out)
{
	int ctx = eng_ctx(m->eng), keep = r->truncate < 0 ? ctx : r->truncate;
	if (keep > ctx) {
		char msg[160];
		snprintf(msg, sizeof msg,
			 "truncate_prompt_tokens: %d is more than the model's context of %d", keep,
			 ctx);
		return gen_fail(out, false, 400, msg, "truncate_prompt_tokens", NULL);
	}
	if (r->truncate && *k > (size_t)keep) {
		memmove(ids, ids + (*k - (size_t)keep), (size_t)keep * sizeof *ids);
		*k = (size_t)keep;
	}
	return 0;
}

/* The prompt's ids, checked against the context and max_tokens; *max_new is the
 * answer's limit. NULL after writing the error response. */
static int32_t *prompt(const struct gen_model *m, const struct oai_request *r,
		       const struct gen_output *out, int *n, int *max_new)
{
	char msg[256];
	size_t len, k = 0;
	char *text = r->continue_final
			     ? tmpl_render_continue(r->chat, m->variant, thinking(m, r), &len)
			     : tmpl_render(r->chat, m->variant, true, thinking(m, r), &len);
	int32_t *ids = text ? tok_encode(m->tok, text, len, &k) : NULL;
	free(text);
	if (!ids) {
		gen_fail(out, false, 400, err_msg(), "messages", NULL);
		return NULL;
	}
	if (gen_truncate(m, r, ids, &k, out)) {
		free(ids);
		return NULL;
	}
	int ctx = eng_ctx(m->eng), room = (size_t)ctx > k ? ctx - (int)k : 0;
	int cap = m->max_tokens ? m->max_tokens : ctx;
	const char *code = "context_length_exceeded";
	if (room == 0)
		snprintf(msg, sizeof msg,
			 "messages: the conversation is %zu tokens, the model's context holds %d "
			 "(with room for at least one new token)",
			 k, ctx);
	else if (!over_limit(r, "the messages are", k, cap, room, ctx, msg, sizeof msg, &code)) {
		*n = (int)k;
		*max_new = r->max_tokens ? r->max_tokens : cap < room ? cap : room;
		return ids;
	}
	free(ids);
	const char *key = r->max_tokens_key ? r->max_tokens_key : "max_tokens";
	gen_fail(out, false, 400, msg, room == 0 ? "messages" : key, code);
	return NULL;
}

/* The end of one choice: streamed, or added to x->choices. 200, or the failure
 * written. */
static int end_choice(struct run *x, enum completion_end why)
{
	if (!x->r->stream) {
		json_t *choice = completion_choice(x->c, why);
		if (choice && x->prompt_lp && x->r->kind == OAI_TEXT &&
		    json_object_set(choice, "prompt_logprobs", x->prompt_lp)) {
			json_decref(choice);
			choice = NULL;
		}
		if (!choice || json_array_append_new(x->choices, choice))
			return gen_fail(x->out, false, 500, "out of memory", NULL, NULL);
		return 200;
	}
	x->buf.n = 0;
	completion_finish(x->c, why, &x->buf);
	if (x->buf.oom)
		return gen_fail(x->out, true, 500, "out of memory", NULL, NULL);
	x->out->write(x->out->user, x->buf.p, x->buf.n);
	return 200;
}

/* The whole response object of the choices (streamed: the usage chunk when asked, and
 * the end), written out. */
static int end_response(struct run *x, const struct completion_options *co,
			const struct completion_usage *usage)
{
	if (x->r->stream) {
		x->buf.n = 0;
		completion_stream_end(co, usage, &x->buf);
		x->out->write(x->out->user, x->buf.p, x->buf.n);
		return 200;
	}
	json_t *root = json_pack("{s:s, s:s, s:I, s:s, s:O, s:o}", "id", co->id, "object",
				 co->text ? "text_completion" : "chat.completion", "created",
				 (json_int_t)co->created, "model", co->model, "choices", x->choices,
				 "usage", completion_usage_json(usage));
	/* a chat's prompt_logprobs are the response's, a text completion's its choices' */
	if (root && x->prompt_lp && !co->text &&
	    json_object_set(root, "prompt_logprobs", x->prompt_lp)) {
		json_decref(root);
		root = NULL;
	}
	char *text = root ? json_dumps(root, JSON_COMPACT) : NULL;
	json_decref(root);
	if (!text)
		return gen_fail(x->out, false, 500, "out of memory", NULL, NULL);
	x->out->write(x->out->user, text, strlen(text));
	free(text);
	return 200;
}

/* A prompt token's entry: its scores (none for the first token) and the top ones. */
static int add_scored(struct run *x, int32_t id, const struct scores_entry *e)
{
	int n = 0;
	while (e && n < x->r->top_logprobs && e->top[n].id >= 0)
		n++;
	return add_entry(x, id, e ? e->logprob : NAN, e ? e->top : NULL, n);
}

static void on_row(void *user, int pos, const float *logits)
{
	struct run *x = user;
	scores_row(x->m->scores, pos, logits, x->m->vocab);
}

/* Syncs the session to the prompt ids[0..n), scoring each of its tokens: the
 * positions the last scored prompt shares are taken from it, the rest computed. Where
 * the answer is not streamed, its prompt_logprobs are kept in x when asked for.
 * sess_sync's 0, 1 (cancelled) or -1. */
static int sync_scored(struct run *x, const int32_t *ids, int n)
{
	struct scores *sc = x->m->scores;
	bool listed = x->r->prompt_logprobs >= 0 && !x->r->stream; /* with their ranks */
	int known = scores_known(sc, ids, n, listed);
	if (scores_begin(sc, ids, n, known, listed))
		return -1;
	int s = sess_sync_scored(x->m->sess, ids, n, known, on_row, x);
	scores_end(sc, s == 0);
	if (s || !listed)
		return s;
	json_decref(x->prompt_lp);
	x->prompt_lp = scores_prompt_logprobs(sc, x->r->prompt_logprobs, x->m->tok);
	return x->prompt_lp ? 0 : -1;
}

/* Syncs the session to the prompt, scored where the request asks for the prompt's
 * log-probabilities; the text completion's echo lists each token's. */
static int sync_prompt(struct run *x, const int32_t *ids, int n)
{
	bool echo = x->r->echo && x->r->logprobs;
	if (!echo && x->r->prompt_logprobs < 0)
		return sess_sync(x->m->sess, ids, n);
	int s = sync_scored(x, ids, n);
	if (s || !echo)
		return s;
	int rc = add_scored(x, ids[0], NULL);
	for (int i = 0; i + 1 < n && !rc; i++)
		rc = add_scored(x, ids[i + 1], scores_get(x->m->scores, i));
	return rc;
}

/* The decode loop and the end of one answer; the completion is set up. */
static int answer(struct run *x, int max_new, struct completion_usage *usage)
{
	const struct gen_model *m = x->m;
	/* a continued message goes on as it was cut: its tags, if any, are text */
	enum sess_split split = x->r->continue_final ? SESS_SPLIT_NONE
				: tmpl_prompt_opens_think(m->variant, thinking(m, x->r))
					? SESS_SPLIT_REASONING_FIRST
					: SESS_SPLIT_ANSWER_FIRST;
	/* the token that ends the answer is listed too, as usage counts it (vLLM's way) */
	sess_set_token_hook(m->sess, x->r->logprobs ? on_token : NULL, x);
	sess_set_token_hook_stops(m->sess, true);
	int rc = sess_generate(m->sess, m->samp, max_new, split, on_text, x);
	sess_set_token_hook(m->sess, NULL, NULL);
	const struct sess_stats *st = sess_stats(m->sess);
	answer_done(x, rc, usage);
	if (rc < 0)
		return gen_fail(x->out, x->r->stream, 500, err_msg(), NULL, NULL);
	if (st->stop == SESS_STOP_CANCEL)
		return 0;
	if (x->too_big)
		return too_big(x);
	bool length = st->stop == SESS_STOP_MAX || st->stop == SESS_STOP_CTX;
	return end_choice(x, length ? COMPLETION_LENGTH : COMPLETION_STOP);
}

/* A request id: PREFIX-(24 hex digits). */
static void request_id(char *id, size_t size, const char *prefix)
{
	uint64_t a = random64(), b = random64();
	snprintf(id, size, "%s-%016llx%08llx", prefix, (unsigned long long)a,
		 (unsigned long long)(b & 0xffffffffu));
}

/* Choice j of n: the prompt synced (its cache reused after the first) and answered,
 * with the seed the request's plus j, as vLLM seeds its n samples. */
static int chat_choice(struct run *x, struct completion_options *co, const int32_t *ids, int n,
		       int max_new, struct completion_usage *usage)
{
	const struct gen_model *m = x->m;
	if (!(x->c = completion_new(co)))
		return gen_fail(x->out, x->r->stream, 500, err_msg(), NULL, NULL);
	x->prompt_now = n;
	live_usage(x, 0);
	if (x->r->stream)
		flush(x); /* the choice's role chunk goes out before the prompt is read */
	if (co->index)
		samp_reseed(m->samp, samp_get_params(m->samp)->seed + (uint64_t)co->index);
	/* the prompt is scored once: its later choices find it in the cache */
	int s = co->index ? sess_sync(m->sess, ids, n) : sync_prompt(x, ids, n), status;
	if (co->index == 0)
		usage->cached = sess_stats(m->sess)->reused;
	if (s == 1)
		status = 0;
	else if (s < 0)
		status = gen_fail(x->out, x->r->stream, 500, err_msg(), NULL, NULL);
	else
		status = answer(x, max_new, usage);
	completion_free(x->c);
	x->c = NULL;
	return status;
}

static int run_chat(const struct gen_model *m, const struct oai_request *r,
		    const struct gen_output *out, struct completion_usage *usage)
{
	int n = 0, max_new = 0;
	int32_t *ids = prompt(m, r, out, &n, &max_new);
	if (!ids)
		return 400;
	char id[48];
	request_id(id, sizeof id, "chatcmpl");
	struct completion_options co = {
		.id = id,
		.model = m->name,
		.created = (long long)time(NULL),
		.stop = r->stop,
		.n_stop = r->n_stop,
		.include_stop = r->include_stop,
		.parse_tools = r->parse_tools,
		.forced_tool = r->forced_tool,
		.forced_pick = r->forced_pick,
		.logprobs = r->logprobs,
		.stream = r->stream,
		.include_usage = r->include_usage,
		.continuous_usage = r->continuous_usage,
	};
	struct run x = {.m = m, .r = r, .out = out, .choices = json_array(), .usage = usage};
	x.held = prompt_entries(r, n); /* counted against the bound with the answers' */
	int status = !x.choices ? gen_fail(out, false, 500, "out of memory", NULL, NULL)
		     : prompt_too_big(out, x.held) ? 400
						   : 200;
	/* a max_tokens given that would pass the bound is refused before any work */
	if (status == 200 && !r->stream && r->logprobs && r->max_tokens > 0 &&
	    x.held + (size_t)r->n_choices * (size_t)max_new * (size_t)(r->top_logprobs + 1) >
		    GEN_MAX_HELD)
		status = too_big(&x);
	if (status == 200)
		out->start(out->user, 200); /* the request is good */
	usage->prompt = n;
	for (int j = 0; j < r->n_choices && status == 200; j++) {
		co.index = j;
		status = chat_choice(&x, &co, ids, n, max_new, usage);
	}
	if (status == 200)
		status = end_response(&x, &co, usage);
	json_decref(x.choices);
	json_decref(x.prompt_lp);
	free(x.buf.p);
	free(ids);
	return status;
}

/* ---- text completions ---------------------------------------------------------- */

/* One prompt of a text completion, tokenized and held to the context. */
struct text_prompt {
	int32_t *ids;
	int n;
	int max_new; /* tokens it may generate */
	char *echo;  /* its text, for echo (malloc'd) */
	size_t echo_len;
};

static void free_prompts(struct text_prompt *p, size_t n)
{
	for (size_t i = 0; p && i < n; i++) {
		free(p[i].ids);
		free(p[i].echo);
	}
	free(p);
}

/* gen_check_ids; an id past the vocabulary named name[j] where indexed (a list), else
 * name (logit_bias, whose ids are keys). */
static int check_ids(const struct gen_model *m, const int32_t *ids, size_t n, const char *name,
		     bool indexed, const struct gen_output *out)
{
	for (size_t j = 0; j < n; j++)
		if (ids[j] >= m->vocab) { /* named as the parser names an id below 0 */
			char where[64], msg[160];
			if (indexed)
				snprintf(where, sizeof where, "%s[%zu]", name, j);
			else
				snprintf(where, sizeof where, "%s", name);
			snprintf(msg, sizeof msg,
				 "%s: token id %d is not below the vocabulary size %d", where,
				 (int)ids[j], m->vocab);
			return gen_fail(out, false, 400, msg, where, NULL);
		}
	return 0;
}

int gen_check_ids(const struct gen_model *m, const int32_t *ids, size_t n, const char *name,
		  const struct gen_output *out)
{
	return check_ids(m, ids, n, name, true, out);
}

/* Prompt i's ids and limits into *p. 0, or the HTTP status after writing the error. */
static int text_prompt(const struct gen_model *m, const struct oai_request *r, size_t i,
		       const struct gen_output *out, struct text_prompt *p)
{
	const struct oai_prompt *q = &r->prompts[i];
	const char *at = q->name;
	char msg[256];
	size_t k = q->n_ids;
	p->ids = q->text ? tok_encode(m->tok, q->text, q->len, &k) : malloc(k * sizeof *p->ids);
	if (!p->ids)
		return gen_fail(out, false, 500, q->text ? err_msg() : "out of memory", at, NULL);
	if (!q->text)
		memcpy(p->ids, q->ids, k * sizeof *p->ids);
	size_t given = k;
	int bad = gen_check_ids(m, p->ids, k, at, out);
	if (bad || (bad = gen_truncate(m, r, p->ids, &k, out)))
		return bad;
	int ctx = eng_ctx(m->eng), cap = m->max_tokens ? m->max_tokens : ctx;
	int room = (size_t)ctx >= k ? ctx - (int)k : 0;
	p->n = (int)k;
	if (k > (size_t)ctx) {
		snprintf(msg, sizeof msg,
			 "%s: the prompt is %zu tokens, the model's context holds %d", at, k, ctx);
		return gen_fail(out, false, 400, msg, at, "context_length_exceeded");
	}
	p->max_new = r->max_tokens < room ? r->max_tokens : room;
	if (p->max_new > cap)
		p->max_new = cap;
	char subject[48];
	const char *code;
	snprintf(subject, sizeof subject, "%s is", at);
	if (!r->max_tokens_default &&
	    over_limit(r, subject, k, cap, room, ctx, msg, sizeof msg, &code))
		return gen_fail(out, false, 400, msg, "max_tokens", code);
	if (!r->echo)
		return 0;
	/* the echo is the prompt as given */
	p->echo = q->text && k == given ? utf8_dup_replaced(q->text, q->len, &p->echo_len)
					: gen_ids_text(m->tok, p->ids, k, &p->echo_len);
	return p->echo ? 0 : gen_fail(out, false, 500, "out of memory", NULL, NULL);
}

/* Prompt p run and continued into x->c; adds to *usage. The HTTP status (200), or 0
 * when cancelled; a failure is written. */
static int text_choice(struct run *x, const struct text_prompt *p, bool first,
		       struct completion_usage *usage, enum completion_end *why)
{
	const struct gen_model *m = x->m;
	int s = sync_prompt(x, p->ids, p->n);
	const struct sess_stats *st = sess_stats(m->sess);
	if (first) { /* the prompt counts once however many samples it has */
		usage->prompt += p->n;
		usage->cached += st->reused;
	}
	if (s)
		return s == 1 ? 0 : gen_fail(x->out, x->r->stream, 500, err_msg(), NULL, NULL);
	if (x->too_big)
		return too_big(x);
	x->prompt_now = p->n;
	live_usage(x, 0);
	if (x->r->stream)
		flush(x); /* the echo, with its tokens' logprobs */
	*why = COMPLETION_LENGTH;
	if (p->max_new == 0)
		return 200;
	sess_set_token_hook(m->sess, x->r->logprobs ? on_token : NULL, x);
	sess_set_token_hook_stops(m->sess, true);
	int rc = sess_generate(m->sess, m->samp, p->max_new, SESS_SPLIT_NONE, on_text, x);
	sess_set_token_hook(m->sess, NULL, NULL);
	answer_done(x, rc, usage);
	if (rc < 0)
		return gen_fail(x->out, x->r->stream, 500, err_msg(), NULL, NULL);
	if (st->stop == SESS_STOP_CANCEL)
		return 0;
	if (x->too_big)
		return too_big(x);
	*why = st->stop == SESS_STOP_MAX || st->stop == SESS_STOP_CTX ? COMPLETION_LENGTH
								      : COMPLETION_STOP;
	return 200;
}

/* Each prompt in turn, n choices each (the choice of prompt i and sample j has index
 * i * n + j), the sampler reseeded with the request's seed plus j for each, so that
 * a prompt's answers do not depend on the other prompts. */
static int text_choices(struct run *x, const struct text_prompt *p, uint64_t seed,
			struct completion_options *co, struct completion_usage *usage)
{
	int n = x->r->n_choices;
	for (size_t i = 0; i < x->r->n_prompts; i++) {
		for (int j = 0; j < n; j++) {
			co->index = (int)i * n + j;
			co->echo = p[i].echo;
			co->echo_len = p[i].echo_len;
			if (!(x->c = completion_new(co)))
				return gen_fail(x->out, x->r->stream, 500, err_msg(), NULL, NULL);
			samp_reseed(x->m->samp, seed + (uint64_t)j);
			enum completion_end why = COMPLETION_STOP;
			int status = text_choice(x, &p[i], j == 0, usage, &why);
			if (status == 200)
				status = end_choice(x, why);
			completion_free(x->c);
			x->c = NULL;
			if (status != 200)
				return status;
		}
	}
	return 200;
}

/* Whether a text completion that is not streamed is sure to list more than
 * GEN_MAX_HELD log-probabilities: `held` (its prompt_logprobs'), its echoed prompts'
 * (the first token has no alternatives) and, where max_tokens was given, its
 * answers' at that length. */
static bool text_too_big(const struct oai_request *r, const struct text_prompt *p, size_t held)
{
	if (r->stream || !r->logprobs)
		return false;
	size_t per = (size_t)r->top_logprobs + 1, sum = 0;
	for (size_t i = 0; i < r->n_prompts; i++) {
		if (r->echo && p[i].n > 0)
			sum += ((size_t)p[i].n - 1) * per + 1;
		if (!r->max_tokens_default)
			sum += (size_t)p[i].max_new * per;
	}
	return held + (size_t)r->n_choices * sum > GEN_MAX_HELD;
}

static int run_text(const struct gen_model *m, const struct oai_request *r,
		    const struct gen_output *out, struct completion_usage *usage)
{
	struct text_prompt *p = calloc(r->n_prompts, sizeof *p);
	if (!p)
		return gen_fail(out, false, 500, "out of memory", NULL, NULL);
	int status = 0;
	for (size_t i = 0; i < r->n_prompts && !status; i++)
		status = text_prompt(m, r, i, out, &p[i]);
	if (status) {
		free_prompts(p, r->n_prompts);
		return status;
	}
	char id[48];
	request_id(id, sizeof id, "cmpl");
	struct completion_options co = {
		.text = true,
		.id = id,
		.model = m->name,
		.created = (long long)time(NULL),
		.stop = r->stop,
		.n_stop = r->n_stop,
		.include_stop = r->include_stop,
		.logprobs = r->logprobs,
		.stream = r->stream,
		.include_usage = r->include_usage,
		.continuous_usage = r->continuous_usage,
	};
	struct run x = {.m = m, .r = r, .out = out, .choices = json_array(), .usage = usage};
	for (size_t i = 0; i < r->n_prompts; i++) /* listed with every choice of the prompt */
		x.held += prompt_entries(r, p[i].n) * (size_t)r->n_choices;
	/* refused before any work, as a chat's is */
	status = prompt_too_big(out, x.held) ? 400 : text_too_big(r, p, x.held) ? too_big(&x) : 0;
	if (status) {
		json_decref(x.choices);
		free_prompts(p, r->n_prompts);
		return status;
	}
	out->start(out->user, 200);
	status = !x.choices ? gen_fail(out, r->stream, 500, "out of memory", NULL, NULL)
			    : text_choices(&x, p, samp_get_params(m->samp)->seed, &co, usage);
	if (status == 200)
		status = end_response(&x, &co, usage);
	json_decref(x.choices);
	json_decref(x.prompt_lp);
	free(x.buf.p);
	free_prompts(p, r->n_prompts);
	return status;
}

int gen_run(const struct gen_model *m, const struct oai_request *r, const struct gen_output *out,
	    struct completion_usage *usage)
{
	memset(usage, 0, sizeof *usage);
	if (set_sampling(m, r))
		return gen_fail(out, false, 400, err_msg(), NULL, NULL);
	int status = gen_check_ids(m, r->stop_ids, r->n_stop_ids, "stop_token_ids", out);
	if (status ||
	    (status = gen_check_ids(m, r->allowed_ids, r->n_allowed, "allowed_token_ids", out)) ||
	    /* logit_bias's ids too (vLLM's 400 otherwise) */
	    (status = check_ids(m, r->bias_ids, r->n_bias, "logit_bias", false, out)))
		return status;
	int allowed = sess_set_allowed(m->sess, r->allowed_ids, (int)r->n_allowed);
	if (allowed == 1)
		return gen_fail(
			out, false, 400,
			"allowed_token_ids: none of the ids is a token the tokenizer writes",
			"allowed_token_ids", NULL);
	if (allowed < 0 || sess_set_bias(m->sess, r->bias_ids, r->bias, (int)r->n_bias) ||
	    sess_set_json(m->sess, r->format)) {
		sess_set_allowed(m->sess, NULL, 0);
		sess_set_bias(m->sess, NULL, NULL, 0);
		return gen_fail(out, false, 500, err_msg(), NULL, NULL);
	}
	struct sess_ends ends = {
		.ignore_eos = r->ignore_eos,
		.min_new = r->min_tokens,
		.stop_ids = r->stop_ids,
		.n_stop_ids = (int)r->n_stop_ids,
		.repeat_last_n =
			r->repeat_last_n == OAI_REPEAT_SERVER ? m->repeat_last_n : r->repeat_last_n,
		/* the prompt closed the think block, or has none: a format holds at once */
		.no_think = r->kind == OAI_TEXT || thinking(m, r) == TMPL_THINK_OFF,
	};
	sess_set_ends(m->sess, &ends);
	status = r->kind == OAI_TEXT ? run_text(m, r, out, usage) : run_chat(m, r, out, usage);
	sess_set_ends(m->sess, NULL);
	sess_set_bias(m->sess, NULL, NULL, 0);
	sess_set_json(m->sess, NULL);
	sess_set_allowed(m->sess, NULL, 0);
	return status;
}
