/* tokenize.c — vLLM's /tokenize and /detokenize (tokenize.h): the body read into a
 * request, and its answer made with the model's tokenizer. */
#include "src/serve/tokenize.h"

#include <jansson.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "src/base/err.h"
#include "src/base/jsontype.h"
#include "src/base/strbuf.h"
#include "src/base/utf8.h"

/* The members a /tokenize request shares with none of the completions. */
static int tokenize_flags(struct oai_request *r, json_t *root, struct oai_error *e)
{
	/* vLLM's defaults: a prompt gets the post-processor's tokens, a conversation none */
	bool special = !r->chat, strs = false;
	if (oai_parse_continue(r, root, true, e) ||
	    oai_get_bool(root, "add_special_tokens", "add_special_tokens", &special, e) < 0 ||
	    oai_get_bool(root, "return_token_strs", "return_token_strs", &strs, e) < 0)
		return -1;
	r->token_strs = strs;
	r->no_special = !special;
	return 0;
}

/* {"prompt": STRING}: the request's one prompt, as text (it may be empty). */
static struct oai_request *prompt_request(json_t *p, struct oai_error *e)
{
	if (!json_is_string(p)) {
		oai_bad(e, "prompt", "expected a string, got %s", jsontype_name(p));
		return NULL;
	}
	struct oai_request *r = calloc(1, sizeof *r);
	struct oai_prompt *q = r ? calloc(1, sizeof *q) : NULL;
	size_t len = json_string_length(p);
	char *text = q ? malloc(len + 1) : NULL;
	if (!text) {
		err_set("out of memory");
		free(q);
		free(r);
		return NULL;
	}
	memcpy(text, json_string_value(p), len + 1);
	snprintf(q->name, sizeof q->name, "prompt");
	q->text = text;
	q->len = len;
	r->prompts = q;
	r->n_prompts = 1;
	return r;
}

/* {"tokens": [ids]} (none at all is an empty text). */
static struct oai_request *tokens_request(json_t *t, struct oai_error *e)
{
	if (!json_is_array(t)) {
		oai_bad(e, "tokens", "expected an array of token ids, got %s",
			t ? jsontype_name(t) : "nothing");
		return NULL;
	}
	size_t n = json_array_size(t);
	struct oai_request *r = calloc(1, sizeof *r);
	struct oai_prompt *q = r ? calloc(1, sizeof *q) : NULL;
	int32_t *ids = q ? malloc((n ? n : 1) * sizeof *ids) : NULL;
	if (!ids) {
		err_set("out of memory");
		free(q);
		free(r);
		return NULL;
	}
	snprintf(q->name, sizeof q->name, "tokens");
	q->ids = ids;
	r->prompts = q;
	r->n_prompts = 1;
	for (size_t i = 0; i < n; i++) {
		json_t *v = json_array_get(t, i);
		char at[48];
		snprintf(at, sizeof at, "tokens[%zu]", i);
		json_int_t id = json_is_integer(v) ? json_integer_value(v) : -1;
		if (!json_is_integer(v) || id < 0 || id > INT32_MAX) {
			if (json_is_integer(v))
				oai_bad(e, at, "%lld is not a token id", (long long)id);
			else
				oai_bad(e, at, "expected a token id, got %s", jsontype_name(v));
			oai_request_free(r);
			return NULL;
		}
		ids[q->n_ids++] = (int32_t)id;
	}
	return r;
}

struct oai_request *tokenize_parse(const char *body, size_t len, bool detokenize,
				   struct oai_error *e)
{
	json_t *root = oai_load_body(body, len, e);
	if (!root)
		return NULL;
	struct oai_request *r = NULL;
	json_t *msgs = json_object_get(root, "messages"), *p = json_object_get(root, "prompt");
	if (detokenize) {
		r = tokens_request(json_object_get(root, "tokens"), e);
	} else if (msgs && p) {
		oai_bad(e, "", "give \"prompt\" or \"messages\", not both");
	} else if (!msgs && !p) {
		oai_bad(e, "prompt", "expected \"prompt\" (a string) or \"messages\"");
	} else {
		/* a conversation is read as a chat completion reads it (tools, and
		 * chat_template_kwargs too), so that its ids are the ones that would run */
		r = msgs ? oai_parse_conversation(body, len, e) : prompt_request(p, e);
		if (r && tokenize_flags(r, root, e)) {
			oai_request_free(r);
			r = NULL;
		}
	}
	json_decref(root);
	if (r)
		r->kind = detokenize ? OAI_DETOKENIZE : OAI_TOKENIZE;
	return r;
}

/* Writes the response in b, or 500 when making it ran out of memory. */
static int send(const struct gen_output *out, struct strbuf *b)
{
	int status = b->oom ? gen_fail(out, false, 500, "out of memory", NULL, NULL) : 200;
	if (status == 200) {
		out->start(out->user, 200);
		out->write(out->user, b->p, b->n);
	}
	free(b->p);
	return status;
}

static int detokenize(const struct gen_model *m, const struct oai_prompt *q,
		      const struct gen_output *out)
{
	int bad = gen_check_ids(m, q->ids, q->n_ids, "tokens", out);
	if (bad)
		return bad;
	size_t len = 0;
	char *text = gen_ids_text(m->tok, q->ids, q->n_ids, &len);
	json_t *o = text ? json_pack("{s:s%}", "prompt", text, len) : NULL;
	char *json = o ? json_dumps(o, JSON_COMPACT) : NULL;
	json_decref(o);
	free(text);
	struct strbuf b = {0};
	if (json)
		sb_puts(&b, json);
	else
		b.oom = true;
	free(json);
	return send(out, &b);
}

/* The tokens as tokenizer.json spells them, a JSON array. */
static void token_strs(const struct tok *t, const int32_t *ids, size_t n, struct strbuf *b)
{
	sb_puts(b, "[");
	for (size_t i = 0; i < n; i++) {
		size_t len = 0;
		char *s = tok_spelling(t, ids[i], &len);
		json_t *v = s ? json_stringn(s, len) : NULL;
		char *q = v ? json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY) : NULL;
		if (q)
			sb_printf(b, i ? ",%s" : "%s", q);
		else
			b->oom = true;
		free(q);
		json_decref(v);
		free(s);
	}
	sb_puts(b, "]");
}

int tokenize_run(const struct gen_model *m, const struct oai_request *r,
		 const struct gen_output *out)
{
	if (r->kind == OAI_DETOKENIZE)
		return detokenize(m, &r->prompts[0], out);
	size_t len = 0, n = 0;
	char *text = NULL;
	if (r->chat) {
		int think = r->enable_thinking != TMPL_THINK_ABSENT ? r->enable_thinking
								    : m->absent_think;
		text = r->continue_final ? tmpl_render_continue(r->chat, m->variant, think, &len)
					 : tmpl_render(r->chat, m->variant,
						       r->add_generation_prompt, think, &len);
		if (!text)
			return gen_fail(out, false, 400, err_msg(), "messages", NULL);
	}
	const char *s = r->chat ? text : r->prompts[0].text;
	size_t slen = r->chat ? len : r->prompts[0].len;
	int32_t *ids = r->no_special ? tok_encode(m->tok, s, slen, &n)
				     : tok_encode_ends(m->tok, s, slen, &n);
	free(text);
	if (!ids)
		return gen_fail(out, false, 500, err_msg(), NULL, NULL);
	struct strbuf b = {0};
	sb_printf(&b, "{\"count\":%zu,\"max_model_len\":%d,\"tokens\":[", n, eng_ctx(m->eng));
	for (size_t i = 0; i < n; i++)
		sb_printf(&b, i ? ",%d" : "%d", (int)ids[i]);
	sb_puts(&b, "],\"token_strs\":");
	if (r->token_strs)
		token_strs(m->tok, ids, n, &b);
	else
		sb_puts(&b, "null");
	sb_puts(&b, "}");
	free(ids);
	return send(out, &b);
}

/* Collects an answer: its last status and the body written after it. */
struct collected {
	int status;
	struct strbuf body;
};

static void collect_start(void *user, int status)
{
	struct collected *c = user;
	c->status = status;
	c->body.n = 0; /* a failure after a start replaces what was written */
}

static void collect_write(void *user, const char *text, size_t len)
{
	struct collected *c = user;
	sb_put(&c->body, text, len);
}

char *tokenize_answer(const struct gen_model *m, const struct oai_request *r, int *status)
{
	struct collected c = {0};
	struct gen_output out = {&c, collect_start, collect_write};
	*status = tokenize_run(m, r, &out);
	if (c.body.oom) {
		free(c.body.p);
		return NULL;
	}
	return c.body.p ? c.body.p : strdup("");
}

char *gen_ids_text(const struct tok *t, const int32_t *ids, size_t n, size_t *len)
{
	struct strbuf b = {0};
	for (size_t j = 0; j < n; j++) {
		size_t k = 0;
		const char *piece = tok_piece(t, ids[j], &k);
		sb_put(&b, piece ? piece : "", piece ? k : 0);
	}
	char *text = b.oom ? NULL : utf8_dup_replaced(b.p ? b.p : "", b.n, len);
	free(b.p);
	return text;
}
