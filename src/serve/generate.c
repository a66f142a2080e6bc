/* generate.c — one request on the model: settings, prompt, KV sync, the decode loop
 * feeding a completion, and the response written out (generate.h). */
#include "src/serve/generate.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

#include "src/base/err.h"

/* State of one answer while the session generates it. */
struct run {
	const struct gen_model *m;
	const struct oai_request *r;
	const struct gen_output *out;
	struct completion *c;
	struct strbuf buf; /* scratch for stream events */
};

static uint64_t random64(void)
{
	uint64_t x = 0;
	if (getrandom(&x, sizeof x, 0) != sizeof x) /* never short for 8 bytes; the clock else */
		x = (uint64_t)time(NULL) ^ (uint64_t)clock();
	return x;
}

/* Writes an error response: the status and the error object. Returns the status. */
static int fail(const struct gen_output *out, bool started, int status, const char *message,
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
	int stop = completion_add_text(x->c, part, text, len);
	if (x->r->stream)
		flush(x);
	return stop;
}

static void on_token(void *user, int32_t id, const struct samp *sp)
{
	struct run *x = user;
	struct samp_logprob top[OAI_MAX_TOP_LOGPROBS];
	struct completion_token t, tt[OAI_MAX_TOP_LOGPROBS];
	float lp;
	int n = x->r->top_logprobs;
	if (samp_logprobs(sp, id, &lp, top, n))
		return;
	t.bytes = tok_piece(x->m->tok, id, &t.len);
	t.logprob = lp;
	for (int i = 0; i < n; i++) {
		tt[i].bytes = tok_piece(x->m->tok, top[i].id, &tt[i].len);
		tt[i].logprob = top[i].logprob;
		if (!tt[i].bytes) /* a padding row past the tokenizer: never sampled */
			tt[i].bytes = "", tt[i].len = 0;
	}
	if (t.bytes)
		completion_add_token(x->c, &t, tt, n);
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
	if (thinking(m, r) == TMPL_THINK_OFF && tmpl_has_think_switch(m->variant))
		samp_params_preset(&p, false, m->params_set | r->samp_set);
	samp_params_apply(&p, &r->samp, r->samp_set);
	if (!((m->params_set | r->samp_set) & SAMP_SET_SEED))
		p.seed = random64();
	if (samp_set_params(m->samp, &p))
		return -1;
	samp_reseed(m->samp, p.seed); /* the same seed twice must give the same text */
	return 0;
}

/* The prompt's ids, checked against the context and max_tokens; *max_new is the
 * answer's limit. NULL after writing the error response. */
static int32_t *prompt(const struct gen_model *m, const struct oai_request *r,
		       const struct gen_output *out, int *n, int *max_new)
{
	char msg[256];
	size_t len, k = 0;
	char *text = tmpl_render(r->chat, m->variant, true, thinking(m, r), &len);
	int32_t *ids = text ? tok_encode(m->tok, text, len, &k) : NULL;
	free(text);
	if (!ids) {
		fail(out, false, 400, err_msg(), "messages", NULL);
		return NULL;
	}
	int ctx = eng_ctx(m->eng), room = (size_t)ctx > k ? ctx - (int)k : 0;
	int cap = m->max_tokens ? m->max_tokens : ctx;
	const char *code = "context_length_exceeded";
	const char *key = r->max_tokens_key ? r->max_tokens_key : "max_tokens";
	if (room == 0) {
		snprintf(msg, sizeof msg,
			 "messages: the conversation is %zu tokens, the model's context holds %d "
			 "(with room for at least one new token)",
			 k, ctx);
	} else if (r->max_tokens > cap) {
		snprintf(msg, sizeof msg, "%s: %d is above this server's limit of %d", key,
			 r->max_tokens, cap);
		code = NULL;
	} else if (r->max_tokens > room) {
		snprintf(msg, sizeof msg,
			 "%s: the messages are %zu tokens and %s %d, more than the model's context "
			 "of %d",
			 key, k, key, r->max_tokens, ctx);
	} else {
		*n = (int)k;
		*max_new = r->max_tokens ? r->max_tokens : cap < room ? cap : room;
		return ids;
	}
	free(ids);
	fail(out, false, 400, msg, room == 0 ? "messages" : key, code);
	return NULL;
}

/* The decode loop and the end of the answer; the completion is set up. */
static int answer(struct run *x, int n, int max_new, struct completion_usage *usage)
{
	const struct gen_model *m = x->m;
	enum sess_split split = tmpl_prompt_opens_think(m->variant, thinking(m, x->r))
					? SESS_SPLIT_REASONING_FIRST
					: SESS_SPLIT_ANSWER_FIRST;
	sess_set_token_hook(m->sess, x->r->logprobs ? on_token : NULL, x);
	int rc = sess_generate(m->sess, m->samp, max_new, split, on_text, x);
	sess_set_token_hook(m->sess, NULL, NULL);
	const struct sess_stats *st = sess_stats(m->sess);
	usage->prompt = n;
	usage->cached = st->reused;
	usage->completion = st->generated + (rc == 0 && st->stop == SESS_STOP_EOS);
	if (rc < 0)
		return fail(x->out, x->r->stream, 500, err_msg(), NULL, NULL);
	if (st->stop == SESS_STOP_CANCEL)
		return 0;
	bool length = st->stop == SESS_STOP_MAX || st->stop == SESS_STOP_CTX;
	x->buf.n = 0;
	completion_finish(x->c, length ? COMPLETION_LENGTH : COMPLETION_STOP, usage, &x->buf);
	if (x->buf.oom)
		return fail(x->out, x->r->stream, 500, "out of memory", NULL, NULL);
	x->out->write(x->out->user, x->buf.p, x->buf.n);
	return 200;
}

int gen_run(const struct gen_model *m, const struct oai_request *r, const struct gen_output *out,
	    struct completion_usage *usage)
{
	memset(usage, 0, sizeof *usage);
	if (set_sampling(m, r))
		return fail(out, false, 400, err_msg(), NULL, NULL);
	int n = 0, max_new = 0;
	int32_t *ids = prompt(m, r, out, &n, &max_new);
	if (!ids)
		return 400;
	uint64_t a = random64(), b = random64();
	char id[48];
	snprintf(id, sizeof id, "chatcmpl-%016llx%08llx", (unsigned long long)a,
		 (unsigned long long)(b & 0xffffffffu));
	struct completion_options co = {
		.id = id,
		.model = m->name,
		.created = (long long)time(NULL),
		.stop = r->stop,
		.n_stop = r->n_stop,
		.parse_tools = r->parse_tools,
		.logprobs = r->logprobs,
		.stream = r->stream,
		.include_usage = r->include_usage,
	};
	struct run x = {m, r, out, completion_new(&co), {0}};
	int status;
	if (!x.c) {
		status = fail(out, false, 500, err_msg(), NULL, NULL);
		goto done;
	}
	/* the request is good: a stream's role chunk goes out before the prompt is read */
	out->start(out->user, 200);
	if (r->stream)
		flush(&x);
	int s = sess_sync(m->sess, ids, n);
	usage->prompt = n;
	usage->cached = sess_stats(m->sess)->reused;
	if (s == 1)
		status = 0;
	else if (s < 0)
		status = fail(out, r->stream, 500, err_msg(), NULL, NULL);
	else
		status = answer(&x, n, max_new, usage);
done:
	completion_free(x.c);
	free(x.buf.p);
	free(ids);
	return status;
}
