/* embed.c — OpenAI's /v1/embeddings (embed.h): the body read into a request, and each
 * input's vector made on the engine. */
#include "src/serve/embed.h"

#include <jansson.h>
#include <nettle/base64.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/engine.h"
#include "src/base/err.h"
#include "src/base/strbuf.h"
#include "src/session/session.h"
#include "tokenizer/tokenizer.h"

struct oai_request *embed_parse(const char *body, size_t len, struct oai_error *e)
{
	json_t *root = oai_load_body(body, len, e);
	if (!root)
		return NULL;
	struct oai_request *r = calloc(1, sizeof *r);
	if (!r) {
		err_set("out of memory");
		json_decref(root);
		return NULL;
	}
	r->kind = OAI_EMBED;
	json_t *fmt = json_object_get(root, "encoding_format");
	json_t *user = json_object_get(root, "user");
	json_int_t dims = 0, cut = 0;
	bool special = true, normalize = true;
	int rc = oai_parse_prompts(r, root, "input", true, e);
	if (!rc && fmt && !json_is_null(fmt) && !json_is_string(fmt))
		rc = oai_bad(e, "encoding_format", "expected \"float\" or \"base64\"");
	else if (!rc && json_is_string(fmt) && strcmp(json_string_value(fmt), "float") &&
		 strcmp(json_string_value(fmt), "base64"))
		rc = oai_bad(e, "encoding_format", "\"%.40s\": expected \"float\" or \"base64\"",
			     json_string_value(fmt));
	else if (!rc && user && !json_is_null(user) && !json_is_string(user))
		rc = oai_bad(e, "user", "expected a string");
	if (!rc &&
	    (oai_get_int(root, "dimensions", 1, 1 << 20, &dims, e) < 0 ||
	     oai_get_int(root, "truncate_prompt_tokens", -1, OAI_MAX_TOKENS, &cut, e) < 0 ||
	     oai_get_bool(root, "add_special_tokens", "add_special_tokens", &special, e) < 0 ||
	     oai_get_bool(root, "normalize", "normalize", &normalize, e) < 0))
		rc = -1;
	if (!rc && cut == 0 && json_is_number(json_object_get(root, "truncate_prompt_tokens")))
		rc = oai_bad(e, "truncate_prompt_tokens", "0 keeps no token (-1 or at least 1)");
	r->base64 = json_is_string(fmt) && !strcmp(json_string_value(fmt), "base64");
	json_decref(root);
	if (rc) {
		oai_request_free(r);
		return NULL;
	}
	r->dimensions = (int)dims;
	r->truncate = (int)cut;
	r->no_special = !special;
	r->raw = !normalize;
	return r;
}

/* Input i's ids, checked and truncated, into *ids (*n of them). 0, or the HTTP status
 * after writing the error. */
static int input_ids(const struct gen_model *m, const struct oai_request *r, size_t i,
		     const struct gen_output *out, int32_t **ids, size_t *n)
{
	const struct oai_prompt *q = &r->prompts[i];
	*n = q->n_ids;
	*ids = !q->text        ? malloc(*n * sizeof **ids)
	       : r->no_special ? tok_encode(m->tok, q->text, q->len, n)
			       : tok_encode_ends(m->tok, q->text, q->len, n);
	if (!*ids)
		return gen_fail(out, false, 500, q->text ? err_msg() : "out of memory", q->name,
				NULL);
	if (!q->text)
		memcpy(*ids, q->ids, *n * sizeof **ids);
	int bad = gen_check_ids(m, *ids, *n, q->name, out);
	if (bad || (bad = gen_truncate(m, r, *ids, n, out)))
		return bad;
	char msg[200];
	if (*n > (size_t)eng_ctx(m->eng)) {
		snprintf(msg, sizeof msg, "%s: %zu tokens, the model's context holds %d", q->name,
			 *n, eng_ctx(m->eng));
		return gen_fail(out, false, 400, msg, q->name, "context_length_exceeded");
	}
	return 0;
}

/* One entry of "data": the vector as numbers, or its float32 bytes in base64. */
static void put_entry(struct strbuf *b, const struct oai_request *r, size_t i, const float *v,
		      int d)
{
	sb_printf(b, "%s{\"object\":\"embedding\",\"index\":%zu,\"embedding\":", i ? "," : "", i);
	if (r->base64) {
		size_t bytes = (size_t)d * sizeof *v;
		char *text = malloc(BASE64_ENCODE_RAW_LENGTH(bytes) + 1);
		if (!text) {
			b->oom = true;
			return;
		}
		base64_encode_raw(text, bytes, (const uint8_t *)v); /* little-endian floats */
		sb_puts(b, "\"");
		sb_put(b, text, BASE64_ENCODE_RAW_LENGTH(bytes));
		sb_puts(b, "\"");
		free(text);
	} else {
		sb_puts(b, "[");
		for (int k = 0; k < d; k++)
			sb_printf(b, k ? ",%.9g" : "%.9g", v[k]); /* float32 written back exactly */
		sb_puts(b, "]");
	}
	sb_puts(b, "}");
}

/* The response's end: the model's name and the usage. */
static void put_tail(struct strbuf *b, const struct gen_model *m, int tokens)
{
	sb_puts(b, "],\"model\":");
	json_t *name = json_string(m->name ? m->name : "");
	char *quoted = name ? json_dumps(name, JSON_ENCODE_ANY) : NULL;
	json_decref(name);
	sb_puts(b, quoted ? quoted : "\"\"");
	free(quoted);
	sb_printf(b, ",\"usage\":{\"prompt_tokens\":%d,\"total_tokens\":%d}}", tokens, tokens);
}

/* Every input's vector into b, after each input's ids were checked and the 200 told
 * (a client that hangs up is then seen at once, as for a completion). The HTTP status,
 * or 0 when cancelled. */
static int run_inputs(const struct gen_model *m, const struct oai_request *r,
		      const struct gen_output *out, int32_t **ids, const size_t *n, int d,
		      struct strbuf *b)
{
	float *v = malloc((size_t)d * sizeof *v);
	if (!v)
		return gen_fail(out, false, 500, "out of memory", NULL, NULL);
	out->start(out->user, 200);
	int status = 0;
	for (size_t i = 0; i < r->n_prompts && !status; i++) {
		if (m->cancel && atomic_load(m->cancel)) { /* one-token inputs run whole */
			status = -1;
			break;
		}
		/* the cache is the session's: emptied before, and after, so that it holds
		 * what the session says it does */
		sess_reset(m->sess);
		int rc = eng_embed(m->eng, ids[i], (int)n[i], d, !r->raw, v);
		sess_reset(m->sess);
		if (rc == ENG_CANCELLED)
			status = -1;
		else if (rc)
			status = gen_fail(out, true, 500, err_msg(), r->prompts[i].name, NULL);
		else
			put_entry(b, r, i, v, d);
	}
	free(v);
	return status;
}

int embed_run(const struct gen_model *m, const struct oai_request *r, const struct gen_output *out,
	      struct completion_usage *usage)
{
	memset(usage, 0, sizeof *usage);
	if (m->embed_refusal)
		return gen_fail(out, false, 400, m->embed_refusal, NULL, NULL);
	if (!m->embed_ok)
		return gen_fail(out, false, 400,
				"the cuda backend does not give embeddings: start the server "
				"with --backend cpu",
				NULL, NULL);
	int hidden = m->hidden;
	int d = r->dimensions ? r->dimensions : hidden;
	char msg[200];
	if (d > hidden) {
		snprintf(msg, sizeof msg, "%d is more than the model's %d (its hidden_size)", d,
			 hidden);
		return gen_fail(out, false, 400, msg, "dimensions", NULL);
	}
	int32_t **ids = calloc(r->n_prompts, sizeof *ids);
	size_t *n = calloc(r->n_prompts, sizeof *n);
	int status = ids && n ? 0 : gen_fail(out, false, 500, "out of memory", NULL, NULL);
	for (size_t i = 0; i < r->n_prompts && !status; i++) {
		status = input_ids(m, r, i, out, &ids[i], &n[i]);
		if (!status && !n[i])
			status = gen_fail(out, false, 400,
					  "an empty text, and the tokenizer adds no token to it",
					  r->prompts[i].name, NULL);
		usage->prompt += (int)n[i];
	}
	struct strbuf b = {0};
	sb_puts(&b, "{\"object\":\"list\",\"data\":[");
	if (!status)
		status = run_inputs(m, r, out, ids, n, d, &b);
	if (!status) {
		put_tail(&b, m, usage->prompt);
		status = b.oom ? gen_fail(out, true, 500, "out of memory", NULL, NULL) : 200;
		if (status == 200)
			out->write(out->user, b.p, b.n);
	}
	for (size_t i = 0; ids && i < r->n_prompts; i++)
		free(ids[i]);
	free(ids);
	free(n);
	free(b.p);
	return status < 0 ? 0 : status;
}
