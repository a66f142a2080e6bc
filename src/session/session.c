/* session.c — the KV cache across turns: common-prefix reuse, chunked prefill with
 * cancel, the decode loop with streamed reasoning/answer text, context overflow. */
#include "src/session/session.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "src/base/hugemem.h"
#include "src/base/utf8.h"
#include "src/base/err.h"
#include "src/base/clock.h"
#include "src/base/jsonschema.h"

enum { SESS_MAX_STOP = SAMP_MAX_EOS + 2 };

struct sess {
	struct eng *e;
	struct tok *t;
	int chunk;
	int vocab;        /* the model's logits row length */
	int sample_vocab; /* ids the tokenizer can decode: min(vocab, tokenizer's) */
	int ctx;          /* eng_ctx */
	int32_t stop[SESS_MAX_STOP];
	int n_stop;
	int32_t think_open, think_close; /* <think>, </think> ids or -1 */
	atomic_int *cancel;
	void (*progress)(void *user, int done, int total);
	void *progress_user;
	int32_t *ids; /* (ctx) ids[0..n) are the cache contents */
	int n;
	float *logits; /* (vocab) after ids[n-1], when logits_ok */
	bool logits_ok;
	double t_sync; /* when the current turn's sess_sync began */
	sess_token_fn hook;
	void *hook_user;
	bool hook_stops; /* the hook sees stop tokens too */
	struct sess_ends ends;               /* sess_set_ends (its stop ids: stop_ids below) */
	int32_t stop_ids[SESS_MAX_STOP_IDS]; /* ... more ids that stop */
	int n_stop_ids;
	float banned[SESS_MAX_STOP + SESS_MAX_STOP_IDS]; /* their logits while masked */
	const struct js_schema *json; /* sess_set_json: the answer is held to a value of it */
	bool json_free;     /* ... no longer (no token fitted: the grammar let go) */
	struct js_state jp; /* ... the answer's text so far, as the grammar read it */
	struct js_state jp_try; /* ... and with a token more, tried by the mask */
	const char **piece; /* (sample_vocab) each id's bytes; NULL: an added token or none */
	uint32_t *piece_len;
	uint16_t *piece_chars; /* (sample_vocab) js_string_chars: a string may hold it as it is */
	uint8_t *piece_first;  /* (sample_vocab) its first byte (kept apart: read in order) */
	int32_t *allowed;  /* (n_allowed) sess_set_allowed: the only ids drawn (0: all) */
	int n_allowed;
	float *row; /* (sample_vocab) the row before the masks of whole rows (the allowed ids,
		     * the grammar), put back after the draw */
	int32_t *bias_ids; /* (n_bias) sess_set_bias: ids, what is added to their */
	float *bias;       /* logits, and (biased) those logits as the model gave them */
	float *biased;
	int n_bias;
	float *pad;      /* (vocab - sample_vocab) the padding rows' logits while masked */
	struct sess_stats st;
};

static bool cancelled(const struct sess *s)
{
	return s->cancel && atomic_load(s->cancel) != 0;
}

static void add_stop(struct sess *s, int32_t id)
{
	if (id < 0 || id >= s->vocab || s->n_stop == SESS_MAX_STOP)
		return;
	for (int i = 0; i < s->n_stop; i++)
		if (s->stop[i] == id)
			return;
	s->stop[s->n_stop++] = id;
}

struct sess *sess_new(struct eng *e, const struct eng_model *m, struct tok *t,
		      const struct sess_options *opt)
{
	struct sess_options none = {0};
	if (!e || !m || !t) {
		err_set("session: no engine, model or tokenizer");
		return NULL;
	}
	if (!opt)
		opt = &none;
	if (opt->chunk < 0 || opt->n_eos < 0 || opt->n_eos > SAMP_MAX_EOS) {
		err_set("session: bad options (chunk %d, %d eos ids)", opt->chunk, opt->n_eos);
		return NULL;
	}
	struct sess *s = calloc(1, sizeof *s);
	if (!s) {
		err_set("session: out of memory");
		return NULL;
	}
	s->e = e;
	s->t = t;
	s->chunk = opt->chunk ? opt->chunk : SESS_DEFAULT_CHUNK;
	s->vocab = eng_model_config(m)->vocab_size;
	/* Qwen3 pads its embedding past the tokenizer (151,936 rows, 151,669 ids): the
	 * padding rows are never sampled, so every generated id can be decoded (a random
	 * test model would otherwise pick them now and then). */
	s->sample_vocab = tok_vocab_size(t) < s->vocab ? tok_vocab_size(t) : s->vocab;
	s->ctx = eng_ctx(e);
	s->cancel = opt->cancel;
	s->progress = opt->progress;
	s->progress_user = opt->progress_user;
	sess_set_ends(s, NULL);
	add_stop(s, tok_id(t, "<|im_end|>"));
	add_stop(s, tok_id(t, "<|endoftext|>"));
	for (int i = 0; i < opt->n_eos; i++)
		add_stop(s, opt->eos[i]);
	s->think_open = tok_id(t, "<think>");
	s->think_close = tok_id(t, "</think>");
	s->ids = malloc((size_t)s->ctx * sizeof *s->ids);
	s->logits = malloc((size_t)s->vocab * sizeof *s->logits);
	s->pad = malloc((size_t)(s->vocab - s->sample_vocab + 1) * sizeof *s->pad);
	if (!s->ids || !s->logits || !s->pad) {
		sess_free(s);
		err_set("session: out of memory");
		return NULL;
	}
	if (eng_truncate(e, 0)) {
		sess_free(s);
		return NULL;
	}
	eng_set_cancel(e, s->cancel); /* a stop ends a prefill between layers */
	return s;
}

void sess_free(struct sess *s)
{
	if (!s)
		return;
	if (s->cancel)
		eng_set_cancel(s->e, NULL);
	free(s->ids);
	free(s->logits);
	free(s->pad);
	free(s->bias_ids);
	free(s->bias);
	free(s->biased);
	free(s->piece);
	free(s->piece_len);
	free(s->piece_chars);
	free(s->piece_first);
	free(s->allowed);
	free(s->row);
	free(s);
}

int sess_n(const struct sess *s)
{
	return s->n;
}
const int32_t *sess_ids(const struct sess *s)
{
	return s->ids;
}
const struct sess_stats *sess_stats(const struct sess *s)
{
	return &s->st;
}
const float *sess_logits(const struct sess *s)
{
	return s->logits_ok ? s->logits : NULL;
}

void sess_set_token_hook(struct sess *s, sess_token_fn fn, void *user)
{
	s->hook = fn;
	s->hook_user = user;
	s->hook_stops = false;
}

void sess_set_token_hook_stops(struct sess *s, bool stops)
{
	s->hook_stops = stops;
}

void sess_reset(struct sess *s)
{
	eng_truncate(s->e, 0);
	s->n = 0;
	s->logits_ok = false;
}

/* A sync begins: a new turn's statistics, and the checks (at least one token, within
 * the context and the vocabulary). 0 or -1. */
static int begin_sync(struct sess *s, const int32_t *ids, int n)
{
	memset(&s->st, 0, sizeof s->st);
	s->t_sync = clock_now();
	if (n < 1)
		return err_set("session: nothing to run (0 tokens)");
	if (n > s->ctx)
		return err_set("session: %d tokens do not fit the context of %d", n, s->ctx);
	for (int i = 0; i < n; i++)
		if (ids[i] < 0 || ids[i] >= s->vocab)
			return err_set("session: token %d: id %d is not below the vocabulary "
				       "size %d",
				       i, (int)ids[i], s->vocab);
	return 0;
}

/* Prefills ids[keep..n) after the cache was cut to keep, in chunks of at most `chunk`
 * tokens, none shorter than eng_prefill_min where that can be helped. With fn, each
 * forward's logits come back for every position (rows holds chunk of them) and are
 * passed on in order. 0, 1 (cancelled) or -1. */
static int prefill(struct sess *s, const int32_t *ids, int n, int keep, int chunk, float *rows,
		   sess_row_fn fn, void *user)
{
	int least = eng_prefill_min(s->e);
	for (int pos = keep; pos < n;) {
		if (cancelled(s))
			return 1;
		int c = n - pos < chunk ? n - pos : chunk;
		if (n - pos > c && n - pos - c < least && n - pos > least)
			c = n - pos - least; /* no short last chunk either */
		int frc = eng_forward(s->e, ids + pos, c, pos, fn ? rows : s->logits, fn != NULL);
		if (frc) {
			s->n = eng_cached(s->e) < pos ? eng_cached(s->e) : pos;
			return frc == ENG_CANCELLED ? 1 : -1;
		}
		memcpy(s->ids + pos, ids + pos, (size_t)c * sizeof *ids);
		s->n = pos + c;
		s->st.prefilled += c;
		for (int j = 0; fn && j < c; j++)
			fn(user, pos + j, rows + (size_t)j * s->vocab);
		if (fn)
			memcpy(s->logits, rows + (size_t)(c - 1) * s->vocab,
			       (size_t)s->vocab * sizeof *s->logits);
		pos += c;
		if (s->progress)
			s->progress(s->progress_user, pos - keep, n - keep);
	}
	return 0;
}

/* Cuts the cache to keep tokens and prefills the rest (see prefill). */
static int sync_from(struct sess *s, const int32_t *ids, int n, int keep, int chunk, float *rows,
		     sess_row_fn fn, void *user)
{
	if (eng_truncate(s->e, keep))
		return -1;
	s->n = keep;
	s->logits_ok = false;
	s->st.reused = keep;
	double t0 = clock_now();
	int rc = prefill(s, ids, n, keep, chunk, rows, fn, user);
	s->logits_ok = rc == 0;
	s->st.prefill_seconds = clock_now() - t0;
	if (s->st.prefill_seconds > 0)
		s->st.prefill_tps = s->st.prefilled / s->st.prefill_seconds;
	return rc;
}

/* The tokens of the cache that ids[0..n) can keep: the common prefix, never the
 * last token (its logits are needed), at most `most`. */
static int common(const struct sess *s, const int32_t *ids, int n, int most)
{
	int keep = 0;
	while (keep < s->n && keep < n - 1 && keep < most && s->ids[keep] == ids[keep])
		keep++;
	return keep;
}

/* keep lowered so that the prefill runs at least eng_prefill_min tokens: a lone last
 * token would take the decode path, and a repeated request (all but one token cached)
 * would get other logits, so another text for the same seed, than the first time. */
static int prefill_keep(const struct sess *s, int keep, int n)
{
	int least = eng_prefill_min(s->e);
	if (n - keep < least)
		keep = n > least ? n - least : 0;
	return keep;
}

int sess_sync(struct sess *s, const int32_t *ids, int n)
{
	if (begin_sync(s, ids, n))
		return -1;
	int keep = common(s, ids, n, n);
	/* Nothing to do: the same tokens, and their logits are still at hand. */
	if (keep == n - 1 && s->n == n && s->logits_ok && s->ids[n - 1] == ids[n - 1]) {
		s->st.reused = n;
		return 0;
	}
	/* a prompt is computed in forwards of at least eng_prefill_min tokens, even
	 * when that recomputes a few cached ones */
	return sync_from(s, ids, n, prefill_keep(s, keep, n), s->chunk, NULL, NULL, NULL);
}

int sess_sync_scored(struct sess *s, const int32_t *ids, int n, int from, sess_row_fn fn,
		     void *user)
{
	if (begin_sync(s, ids, n))
		return -1;
	/* Rows of logits come back a forward at a time: forwards of at most
	 * SESS_SCORE_BYTES of them (for Qwen3's vocabulary, ~440 tokens), never fewer
	 * than the backend's prefill takes at once. Each forward packs every weight
	 * again on the CPU: a quarter of that budget made scoring slower (BENCHMARKS.md). */
	size_t row = (size_t)s->vocab * sizeof(float);
	int chunk = (int)(SESS_SCORE_BYTES / row), least = eng_prefill_min(s->e);
	if (chunk > s->chunk)
		chunk = s->chunk;
	if (chunk < least)
		chunk = least;
	if (chunk > n)
		chunk = n;
	/* on 2 MB pages: a request's hundreds of MB of rows faulted in 4 KB at a time cost
	 * a trap into the kernel per page, each request anew */
	float *rows = huge_zalloc((size_t)chunk * row);
	if (!rows)
		return err_set("session: out of memory for %d rows of logits", chunk);
	int keep = prefill_keep(s, common(s, ids, n, from > 0 ? from : 0), n);
	int rc = sync_from(s, ids, n, keep, chunk, rows, fn, user);
	huge_free(rows, (size_t)chunk * row);
	return rc;
}

void sess_router_init(struct sess_router *r, sess_emit_fn emit, void *user)
{
	*r = (struct sess_router){
		.emit = emit, .user = user, .part = SESS_ANSWER, .part_start = true};
}

void sess_route(struct sess_router *r, const char *text, size_t len)
{
	static const char nl[16] = "\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n";
	if (r->part_start) {
		while (len && *text == '\n')
			text++, len--;
		if (!len)
			return;
		r->part_start = false;
	}
	if (!r->emit || r->stop)
		return;
	size_t body = len;
	if (r->part == SESS_REASONING) {
		while (body && text[body - 1] == '\n')
			body--;
		if (!body) {
			r->held_nl += len;
			return;
		}
		while (r->held_nl && !r->stop) {
			size_t k = r->held_nl < sizeof nl ? r->held_nl : sizeof nl;
			r->stop = r->emit(r->user, r->part, nl, k);
			r->held_nl -= k;
		}
	}
	if (!r->stop)
		r->stop = r->emit(r->user, r->part, text, body);
	if (r->part == SESS_REASONING)
		r->held_nl = len - body;
}

void sess_router_switch(struct sess_router *r, enum sess_part part)
{
	r->part = part;
	r->part_start = true;
	r->held_nl = 0;
}

/* Routes decoded text with every ill-formed UTF-8 sequence (a token ending inside
 * a character, bytes the model put in an order that spells none) replaced by
 * U+FFFD, so that the screen, a pipe and the saved conversation get the same valid
 * text. (The stream holds back a sequence a later token may still complete.) */
static void route_text(struct sess_router *r, const char *text, size_t len)
{
	while (len > 0) {
		size_t valid, bad;
		utf8_next_piece(text, len, &valid, &bad);
		if (valid)
			sess_route(r, text, valid);
		if (bad)
			sess_route(r, UTF8_REPLACEMENT, 3);
		text += valid + bad;
		len -= valid + bad;
	}
}

static void switch_part(struct sess_router *r, struct tok_stream *ts, enum sess_part part)
{
	size_t len;
	const char *rest = tok_stream_flush(ts, &len);
	if (rest && len)
		route_text(r, rest, len);
	sess_router_switch(r, part);
}

static bool is_stop(const struct sess *s, int32_t id)
{
	for (int i = 0; i < s->n_stop && !s->ends.ignore_eos; i++)
		if (s->stop[i] == id)
			return true;
	for (int i = 0; i < s->n_stop_ids; i++)
		if (s->stop_ids[i] == id)
			return true;
	return false;
}

void sess_set_ends(struct sess *s, const struct sess_ends *ends)
{
	struct sess_ends none = {.repeat_last_n = SAMP_PENALTY_LAST_N};
	ends = ends ? ends : &none;
	s->ends = *ends;
	s->ends.stop_ids = NULL;
	s->n_stop_ids = 0;
	for (int i = 0; i < ends->n_stop_ids && s->n_stop_ids < SESS_MAX_STOP_IDS; i++)
		if (ends->stop_ids[i] >= 0 && ends->stop_ids[i] < s->vocab)
			s->stop_ids[s->n_stop_ids++] = ends->stop_ids[i];
}

int sess_set_bias(struct sess *s, const int32_t *ids, const float *bias, int n)
{
	free(s->bias_ids);
	free(s->bias);
	free(s->biased);
	s->bias_ids = NULL, s->bias = NULL, s->biased = NULL, s->n_bias = 0;
	if (n <= 0)
		return 0;
	if (!(s->bias_ids = malloc((size_t)n * sizeof *s->bias_ids)) ||
	    !(s->bias = malloc((size_t)n * sizeof *s->bias)) ||
	    !(s->biased = malloc((size_t)n * sizeof *s->biased))) {
		sess_set_bias(s, NULL, NULL, 0);
		return err_set("out of memory");
	}
	for (int i = 0; i < n; i++)
		if (ids[i] >= 0 && ids[i] < s->vocab) {
			s->bias_ids[s->n_bias] = ids[i];
			s->bias[s->n_bias++] = bias[i];
		}
	return 0;
}

int sess_set_allowed(struct sess *s, const int32_t *ids, int n)
{
	s->n_allowed = 0;
	if (n <= 0)
		return 0;
	int32_t *a = realloc(s->allowed, (size_t)n * sizeof *a);
	if (!a)
		return err_set("out of memory");
	s->allowed = a;
	if (!s->row && !(s->row = malloc((size_t)s->sample_vocab * sizeof *s->row)))
		return err_set("out of memory");
	for (int i = 0; i < n; i++)
		if (ids[i] >= 0 && ids[i] < s->sample_vocab)
			s->allowed[s->n_allowed++] = ids[i];
	return s->n_allowed ? 0 : 1; /* only padding rows, which stay masked */
}

/* Every id but the allowed ones masked, their logits taken from s->row. */
static void mask_allowed(struct sess *s)
{
	if (!s->n_allowed)
		return;
	for (int i = 0; i < s->sample_vocab; i++)
		s->logits[i] = -1e30f;
	for (int i = 0; i < s->n_allowed; i++)
		s->logits[s->allowed[i]] = s->row[s->allowed[i]];
}

/* The bias added before a draw, and the model's logits put back after it (in the
 * reverse order, so that an id given twice comes back as it was). */
static void apply_bias(struct sess *s, bool on)
{
	if (on)
		for (int i = 0; i < s->n_bias; i++) {
			s->biased[i] = s->logits[s->bias_ids[i]];
			s->logits[s->bias_ids[i]] += s->bias[i];
		}
	else
		for (int i = s->n_bias - 1; i >= 0; i--)
			s->logits[s->bias_ids[i]] = s->biased[i];
}

int sess_set_json(struct sess *s, const struct js_schema *sc)
{
	s->json = NULL;
	if (!sc || s->piece)
		return (s->json = sc), 0;
	int n = s->sample_vocab;
	s->piece = malloc((size_t)n * sizeof *s->piece);
	s->piece_len = malloc((size_t)n * sizeof *s->piece_len);
	s->piece_chars = malloc((size_t)n * sizeof *s->piece_chars);
	s->piece_first = malloc((size_t)n);
	if (!s->row)
		s->row = malloc((size_t)n * sizeof *s->row);
	if (!s->piece || !s->piece_len || !s->row || !s->piece_chars || !s->piece_first) {
		free(s->piece), free(s->piece_len), free(s->piece_chars), free(s->piece_first);
		s->piece = NULL, s->piece_len = NULL, s->piece_chars = NULL, s->piece_first = NULL;
		return err_set("out of memory");
	}
	for (int id = 0; id < n; id++) {
		size_t len = 0;
		const char *p = tok_is_added(s->t, id) ? NULL : tok_piece(s->t, id, &len);
		s->piece[id] = p && len ? p : NULL; /* an empty piece would write nothing */
		s->piece_len[id] = (uint32_t)len;
		size_t chars = s->piece[id] ? js_string_chars(p, len) : 0;
		s->piece_chars[id] = chars <= UINT16_MAX ? (uint16_t)chars : 0;
		s->piece_first[id] = s->piece[id] ? (uint8_t)p[0] : 0;
	}
	s->json = sc;
	return 0;
}

/* Whether the grammar takes the token: ids whose first byte it refuses are out at
 * once (most of them, outside strings), words inside a string whose length allows
 * them pass unfed, the rest are fed to a copy. */
static bool json_takes(struct sess *s, int id, const bool *first_ok, uint32_t room)
{
	if (!first_ok[s->piece_first[id]])
		return false;
	if (s->piece_chars[id] && s->piece_chars[id] <= room)
		return true;
	js_copy(&s->jp_try, &s->jp);
	return js_feed(&s->jp_try, s->piece[id], s->piece_len[id]);
}

/* Masks every id that would take the answer out of the grammar: stop ids until the
 * value is whole, every other id once it is closed; <think> passes where allow_think.
 * False, with the row as it was before (s->row, the allowed ids masked again) and the
 * grammar let go, when nothing passes (a stop id masked by min_tokens, ignore_eos). */
static bool json_mask(struct sess *s, bool allow_think)
{
	bool done = js_done(&s->jp), closed = js_closed(&s->jp);
	uint32_t room = js_string_room(&s->jp);
	bool first_ok[256];
	for (int c = 0; c < 256; c++) {
		char b = (char)c;
		js_copy(&s->jp_try, &s->jp);
		first_ok[c] = js_feed(&s->jp_try, &b, 1);
	}
	int passed = 0;
	for (int id = 0; id < s->sample_vocab; id++) {
		bool ok;
		if (is_stop(s, id))
			ok = done;
		else if (id == s->think_open && allow_think)
			ok = true;
		else
			ok = !closed && s->piece[id] && json_takes(s, id, first_ok, room);
		passed += ok && s->logits[id] > -1e30f; /* drawable before the grammar */
		if (!ok)
			s->logits[id] = -1e30f;
	}
	if (!passed) {
		memcpy(s->logits, s->row, (size_t)s->sample_vocab * sizeof *s->logits);
		mask_allowed(s);
		s->json_free = true;
	}
	return passed > 0;
}

/* Before min_new tokens, the stop ids cannot be drawn (their logits are kept in
 * s->banned to be put back: the hook sees the row as the model computed it). */
static void mask_stops(struct sess *s, bool mask)
{
	if (s->st.generated >= s->ends.min_new)
		return;
	int k = 0;
	for (int i = 0; i < s->n_stop + s->n_stop_ids; i++) {
		int32_t id = i < s->n_stop ? s->stop[i] : s->stop_ids[i - s->n_stop];
		if (i < s->n_stop && s->ends.ignore_eos)
			continue;
		if (mask) {
			s->banned[k++] = s->logits[id];
			s->logits[id] = -1e30f;
		} else {
			s->logits[id] = s->banned[k++];
		}
	}
}

/* Where a think tag still switches the part; anywhere else it is text of the part it
 * falls in. Only the opening a template expects splits the answer: <think> as the
 * first token (or the prompt's own, when a <think> written first is dropped, as the
 * template drops it), then the first </think>. A tag out of place
 * stays in the text where the model wrote it, so that the template splits the saved
 * answer as Hugging Face's does the model's text (the reasoning between <think> and
 * </think>, the answer after), instead of the two parts being spliced. */
enum tag_phase { TAGS_OPEN_FIRST, TAGS_CLOSE_NEXT, TAGS_TEXT };

/* Routes one sampled (non-stop) id to the text streams. -1 on a decode error. */
static int emit_token(struct sess *s, struct sess_router *r, struct tok_stream *ts,
		      enum tag_phase *tags, int32_t id)
{
	/* past the first token: an answer that no tag opened keeps its tags as text, a
	   reasoning the prompt opened still ends at </think> */
	if (*tags == TAGS_OPEN_FIRST && s->st.generated > 1)
		*tags = r->part == SESS_REASONING ? TAGS_CLOSE_NEXT : TAGS_TEXT;
	if (*tags == TAGS_OPEN_FIRST && id == s->think_open) {
		switch_part(r, ts, SESS_REASONING);
		*tags = TAGS_CLOSE_NEXT;
		return 0;
	}
	if (*tags == TAGS_CLOSE_NEXT && id == s->think_close) {
		switch_part(r, ts, SESS_ANSWER);
		*tags = TAGS_TEXT;
		return 0;
	}
	size_t len;
	const char *text = tok_stream_push(ts, id, &len);
	if (!text)
		return -1;
	if (len)
		route_text(r, text, len);
	return 0;
}

/* How many of the last n tokens of the context the repetition penalty looks at. */
static int penalty_window(const struct sess *s, int n)
{
	return s->ends.repeat_last_n < 0 || s->ends.repeat_last_n > n ? n : s->ends.repeat_last_n;
}

/* Draws the next id from s->logits: the padding rows, the stop ids before min_new
 * tokens and, where gate, what leaves the JSON grammar masked, the bias added; the row
 * is put back as the model computed it afterwards, for the hook. A drawn id that is
 * answer text goes into the grammar. The id, or -1 (err_set). */
static int32_t draw(struct sess *s, struct samp *sp, bool gate, bool allow_think)
{
	int nr = penalty_window(s, s->n);
	/* ids past the tokenizer can never be picked (see sample_vocab) */
	size_t npad = (size_t)(s->vocab - s->sample_vocab);
	memcpy(s->pad, s->logits + s->sample_vocab, npad * sizeof *s->pad);
	for (int i = s->sample_vocab; i < s->vocab; i++)
		s->logits[i] = -1e30f;
	/* the answer's tokens so far are the last ones in the cache */
	struct samp_history h = {s->ids + s->n - nr, nr, s->ids + s->n - s->st.generated,
				 s->st.generated};
	apply_bias(s, true);
	mask_stops(s, true);
	bool whole = s->n_allowed || gate; /* masks that rewrite the whole row: kept first */
	if (whole)
		memcpy(s->row, s->logits, (size_t)s->sample_vocab * sizeof *s->row);
	mask_allowed(s);
	bool masked = gate && json_mask(s, allow_think);
	int32_t id = samp_next(sp, s->logits, s->vocab, &h);
	if (whole)
		memcpy(s->logits, s->row, (size_t)s->sample_vocab * sizeof *s->logits);
	mask_stops(s, false);
	apply_bias(s, false);
	memcpy(s->logits + s->sample_vocab, s->pad, npad * sizeof *s->pad);
	if (masked && id >= 0 && !is_stop(s, id) && !(id == s->think_open && allow_think))
		s->json_free = !js_feed(&s->jp, s->piece[id], s->piece_len[id]);
	return id;
}

/* The settings for the backend to pick the token after `id` itself (it then goes to
 * position s->n), or false when it cannot: the CPU backend, or a top-k it does not
 * handle. The penalty window is the one samp_next would see after id. */
static bool device_sampling(struct sess *s, struct samp *sp, int32_t id, struct eng_sampling *es)
{
	const struct samp_params *p = samp_get_params(sp);
	/* the stop ids are masked on the host, and the bias and the grammar applied there */
	if (s->st.generated < s->ends.min_new || s->n_bias || s->json || s->n_allowed)
		return false;
	/* the device's penalties see one list, the recent tokens: the answer's (presence,
	 * frequency) are the CPU sampler's */
	if (p->presence_penalty != 0 || p->frequency_penalty != 0)
		return false;
	/* a window longer than the device takes is the host's, unless it does nothing */
	int nr = penalty_window(s, s->n + 1);
	if (nr > ENG_SAMPLE_MAX_RECENT && p->repetition_penalty != 1)
		return false;
	nr = nr < ENG_SAMPLE_MAX_RECENT ? nr : ENG_SAMPLE_MAX_RECENT;
	s->ids[s->n] = id; /* in the window; s->n moves only once the forward succeeds */
	*es = (struct eng_sampling){
		.greedy = p->greedy || p->temperature == 0,
		.temperature = p->temperature,
		.top_k = p->top_k,
		.top_p = p->top_p,
		.min_p = p->min_p,
		.presence_penalty = 0,
		.repetition_penalty = p->repetition_penalty,
		.recent = s->ids + s->n + 1 - nr,
		.n_recent = nr,
		.vocab_limit = s->sample_vocab,
		.uniform = samp_peek_uniform(sp),
	};
	return eng_can_sample(s->e, es);
}

int sess_generate(struct sess *s, struct samp *sp, int max_new, enum sess_split split,
		  sess_emit_fn emit, void *user)
{
	if (!s->logits_ok || s->n < 1)
		return err_set("session: no logits to sample from (sess_sync first)");
	if (max_new < 0)
		return err_set("session: max_new %d is negative", max_new);
	struct tok_stream *ts = tok_stream_new(s->t, true);
	if (!ts)
		return -1;
	struct sess_router r;
	sess_router_init(&r, emit, user);
	enum tag_phase tags = split == SESS_SPLIT_NONE ? TAGS_TEXT : TAGS_OPEN_FIRST;
	if (split == SESS_SPLIT_REASONING_FIRST) /* a <think> written first again is dropped */
		r.part = SESS_REASONING;
	else /* an answer that no tag opened is kept whole, as Hugging Face keeps it */
		r.part_start = false;
	s->st.generated = 0;
	if (s->json)
		js_init(&s->jp, s->json);
	s->json_free = false;
	double t_first = 0;
	int forwards = 0, rc = 0;
	int32_t next = -1; /* the id the backend picked in the last forward, or -1 */
	enum sess_stop why = SESS_STOP_MAX;
	for (;;) {
		if (s->st.generated >= max_new) {
			why = SESS_STOP_MAX;
			break;
		}
		if (cancelled(s)) {
			why = SESS_STOP_CANCEL;
			break;
		}
		int32_t id = next;
		next = -1;
		if (id < 0) {
			/* the grammar holds the answer's text, not the reasoning's: a first
			 * <think> may still open that */
			bool gate = s->json && !s->json_free && r.part == SESS_ANSWER;
			bool open = tags == TAGS_OPEN_FIRST && !s->st.generated;
			if ((id = draw(s, sp, gate, open && !s->ends.no_think)) < 0) {
				rc = -1;
				break;
			}
		}
		if (!t_first) {
			t_first = clock_now();
			s->st.ttft = t_first - s->t_sync;
		}
		bool stop = is_stop(s, id);
		s->st.generated += !stop;
		if (s->hook && (!stop || s->hook_stops))
			s->hook(s->hook_user, id, sp);
		if (!stop && emit_token(s, &r, ts, &tags, id)) {
			rc = -1;
			break;
		}
		/* Every sampled token goes into the cache, the stop token too: the next
		 * render holds it (<|im_end|> closes the turn), and ids then say exactly
		 * what was generated. Only a full cache leaves one out. */
		if (s->n >= s->ctx) {
			why = SESS_STOP_CTX;
			break;
		}
		/* Where the backend can, it picks the next id itself and only that id comes
		 * back; the last forward of the answer brings its logits back as before, so
		 * that they stay at hand (sess_logits). */
		bool last = stop || s->st.generated >= max_new;
		struct eng_sampling es;
		int frc;
		if (!last && !s->hook && device_sampling(s, sp, id, &es)) {
			bool used = false;
			frc = eng_forward_sample(s->e, id, s->n, &es, &next, &used);
			if (frc == 0 && used)
				samp_take_uniform(sp);
		} else {
			frc = eng_forward(s->e, &id, 1, s->n, s->logits, false);
		}
		s->logits_ok = frc == 0 && next < 0;
		if (frc) {
			rc = -1;
			break;
		}
		s->ids[s->n++] = id;
		forwards++;
		if (stop) {
			why = SESS_STOP_EOS;
			break;
		}
		if (r.stop) {
			why = SESS_STOP_CALLER;
			break;
		}
	}
	if (rc == 0) {
		size_t len;
		const char *rest = tok_stream_flush(ts, &len);
		if (rest && len)
			route_text(&r, rest, len);
		s->st.stop = why;
	}
	tok_stream_free(ts);
	if (t_first) {
		s->st.decode_seconds = clock_now() - t_first;
		if (forwards && s->st.decode_seconds > 0)
			s->st.decode_tps = forwards / s->st.decode_seconds;
	}
	return rc;
}
