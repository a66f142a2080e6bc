/* scores.c — the last scored prompt's positions (scores.h). */
#include "src/serve/scores.h"

#include <stdlib.h>
#include <string.h>

#include "src/base/err.h"

struct scores {
	int32_t *ids; /* the prompt scored last ... */
	int n;        /* ... of n tokens */
	int cap;      /* room in ids and entry */
	int known;    /* its positions 0..known-1 have their entry */
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

int scores_known(const struct scores *s, const int32_t *ids, int n)
{
	int same = 0;
	while (same < s->n && same < n && s->ids[same] == ids[same])
		same++;
	/* position i scores the token at i + 1: both must be shared */
	int k = same - 1;
	if (k > s->known)
		k = s->known;
	return k > 0 ? k : 0;
}

int scores_begin(struct scores *s, const int32_t *ids, int n, int known)
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
	return 0;
}

int scores_entry_of(const float *logits, int vocab, int32_t id, struct scores_entry *e)
{
	int top = SCORES_TOP < vocab ? SCORES_TOP : vocab;
	if (samp_row_logprobs(logits, vocab, id, &e->logprob, e->top, top))
		return -1;
	for (int i = top; i < SCORES_TOP; i++)
		e->top[i] = (struct samp_logprob){-1, 0};
	return 0;
}

void scores_row(struct scores *s, int pos, const float *logits, int vocab)
{
	/* an id past the row cannot be: the prompt was checked against the vocabulary */
	if (pos >= 0 && pos + 1 < s->n)
		scores_entry_of(logits, vocab, s->ids[pos + 1], &s->entry[pos]);
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
