/* scores.c — the last scored prompt's positions (scores.h). */
#include "src/serve/scores.h"

#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "src/base/err.h"
#include "src/base/utf8.h"

struct scores {
	int32_t *ids; /* the prompt scored last ... */
	int n;        /* ... of n tokens */
	int cap;      /* room in ids and entry */
	int known;    /* its positions 0..known-1 have their entry */
	bool ranked;  /* ... with its rank */
	struct scores_entry *entry;
};

struct scores *scores_new(void)
{
	struct scores *s = calloc(1, sizeof *s);
	if (!s)
		err_set("out of memory");
	return s;
}

void scores_free(struct scores *s)
{
	if (!s)
		return;
	free(s->ids);
	free(s->entry);
	free(s);
}

int scores_known(const struct scores *s, const int32_t *ids, int n, bool rank)
{
	if (rank && !s->ranked)
		return 0;
	int same = 0;
	while (same < s->n && same < n && s->ids[same] == ids[same])
		same++;
	/* position i scores the token at i + 1: both must be shared */
	int k = same - 1;
	if (k > s->known)
		k = s->known;
	return k > 0 ? k : 0;
}

int scores_begin(struct scores *s, const int32_t *ids, int n, int known, bool rank)
{
	if (n > s->cap) {
		int32_t *i = realloc(s->ids, (size_t)n * sizeof *i);
		if (i)
			s->ids = i;
		struct scores_entry *e = i ? realloc(s->entry, (size_t)n * sizeof *e) : NULL;
		if (!e) {
			s->n = s->known = 0;
			return err_set("out of memory for the scores of %d tokens", n);
		}
		s->entry = e;
		s->cap = n;
	}
	memcpy(s->ids, ids, (size_t)n * sizeof *ids);
	s->n = n;
	s->known = known;
	s->ranked = rank;
	return 0;
}

int scores_entry_of(const float *logits, int vocab, int32_t id, bool rank, struct scores_entry *e)
{
	int top = SCORES_TOP < vocab ? SCORES_TOP : vocab;
	if (samp_row_logprobs(logits, vocab, id, &e->logprob, e->top, top))
		return -1;
	for (int i = top; i < SCORES_TOP; i++)
		e->top[i] = (struct samp_logprob){-1, 0};
	e->rank = 0;
	for (int i = 0; rank && i < vocab; i++) /* the log-softmax keeps the logits' order */
		e->rank += logits[i] >= logits[id];
	return 0;
}

void scores_row(struct scores *s, int pos, const float *logits, int vocab)
{
	/* an id past the row cannot be: the prompt was checked against the vocabulary */
	if (pos >= 0 && pos + 1 < s->n)
		scores_entry_of(logits, vocab, s->ids[pos + 1], s->ranked, &s->entry[pos]);
}

void scores_end(struct scores *s, bool complete)
{
	if (complete)
		s->known = s->n > 0 ? s->n - 1 : 0;
	else
		s->n = s->known = 0;
}

const struct scores_entry *scores_get(const struct scores *s, int pos)
{
	return &s->entry[pos];
}

/* Sets {"logprob", "rank", "decoded_token"} under id's key in d. 0, or -1 out of memory. */
static int put_logprob(json_t *d, const struct tok *t, int32_t id, float logprob, int rank)
{
	char key[16];
	size_t len = 0, n = 0;
	const char *piece = tok_piece(t, id, &len);
	char *text = utf8_dup_replaced(piece ? piece : "", piece ? len : 0, &n);
	snprintf(key, sizeof key, "%d", (int)id);
	/* -9999 is OpenAI's "no probability at all" */
	json_t *v = text ? json_pack("{s:f, s:i, s:s%}", "logprob",
				     isfinite(logprob) ? (double)logprob : -9999.0, "rank", rank,
				     "decoded_token", text, n)
			 : NULL;
	free(text);
	return v ? json_object_set_new(d, key, v) : -1;
}

json_t *scores_prompt_logprobs(const struct scores *s, int top, const struct tok *t)
{
	json_t *list = json_array();
	if (!list || (s->n > 0 && json_array_append_new(list, json_null())))
		goto oom;
	for (int i = 0; i + 1 < s->n; i++) {
		const struct scores_entry *e = &s->entry[i];
		json_t *d = json_object();
		if (!d || json_array_append_new(list, d) ||
		    put_logprob(d, t, s->ids[i + 1], e->logprob, e->rank))
			goto oom;
		for (int k = 0; k < top && k < SCORES_TOP && e->top[k].id >= 0; k++)
			if (put_logprob(d, t, e->top[k].id, e->top[k].logprob, k + 1))
				goto oom;
	}
	return list;
oom:
	json_decref(list);
	err_set("out of memory");
	return NULL;
}
