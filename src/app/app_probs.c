/* app_probs.c — how sure the model was: for each token of the answer being
 * generated, its probability in the distribution the sampler drew from (after the
 * penalties, the temperature and the top-k/top-p/min-p cut) and in the plain softmax
 * of the logits, with the most likely alternatives of each. Recorded through the
 * session's token hook, only while the view is open (the hook makes every token be
 * sampled on the host), and kept for the last answer. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "src/app/app_state.h"
#include "src/base/array.h"
#include "src/base/rowexp.h"

/* The token's text for the pane, in quotes so that its spaces show (a token of
 * spaces alone was a blank), as the attention pane writes it (app_token_text). */
static void token_text(const struct app *a, int32_t id, char *out, size_t cap)
{
	out[0] = '\'';
	app_token_text(a, id, out + 1, cap - 2);
	size_t n = strlen(out);
	out[n] = '\'';
	out[n + 1] = 0;
}

/* The plain softmax of the logits (the padding rows past the tokenizer included, with
 * the model's values): id's probability and the n most likely. */
static int raw_probs(const float *l, int vocab, int32_t id, float *p, int32_t *top_id, float *top_p,
		     int n)
{
	float m = l[0];
	for (int i = 1; i < vocab; i++)
		m = l[i] > m ? l[i] : m;
	double z = rowexp_sum(l, vocab, m, 1, NULL);
	*p = (float)(exp((double)l[id] - m) / z);
	int k = 0;
	for (int i = 0; i < vocab; i++) { /* the n largest by insertion */
		if (k == n && l[i] <= l[top_id[n - 1]])
			continue;
		int j = k < n ? k++ : n - 1;
		while (j > 0 && l[i] > l[top_id[j - 1]]) {
			top_id[j] = top_id[j - 1];
			j--;
		}
		top_id[j] = i;
	}
	for (int i = 0; i < k; i++)
		top_p[i] = (float)(exp((double)l[top_id[i]] - m) / z);
	return k;
}

static void on_token(void *user, int32_t id, const struct samp *sp)
{
	struct app *a = user;
	struct app_token_prob t = {.id = id};
	struct samp_logprob top[APP_PROB_TOP];
	int k = samp_drawn(sp, id, &t.p, top, APP_PROB_TOP);
	for (int i = 0; i < k; i++) {
		t.top[i].id = top[i].id;
		t.top[i].p = expf(top[i].logprob);
		token_text(a, top[i].id, t.top[i].text, sizeof t.top[i].text);
	}
	t.n_top = k > 0 ? k : 0;
	int32_t rid[APP_PROB_TOP];
	float rp[APP_PROB_TOP];
	const float *l = sess_logits(a->sess);
	int vocab = eng_model_config(a->model)->vocab_size;
	t.n_top_raw = l ? raw_probs(l, vocab, id, &t.p_raw, rid, rp, APP_PROB_TOP) : 0;
	for (int i = 0; i < t.n_top_raw; i++) {
		t.top_raw[i].id = rid[i];
		t.top_raw[i].p = rp[i];
		token_text(a, rid[i], t.top_raw[i].text, sizeof t.top_raw[i].text);
	}
	token_text(a, id, t.text, sizeof t.text);
	pthread_mutex_lock(&a->lock);
	if (!arr_reserve(&a->probs, &a->cap_probs, a->n_probs + 1, sizeof *a->probs))
		a->probs[a->n_probs++] = t;
	pthread_mutex_unlock(&a->lock);
}

void app_set_probs(struct app *a, bool on)
{
	a->probs_on = on && !a->remote; /* the server samples: nothing to see here */
}

void app_probs_turn(struct app *a)
{
	pthread_mutex_lock(&a->lock);
	a->n_probs = 0;
	pthread_mutex_unlock(&a->lock);
	sess_set_token_hook(a->sess, a->probs_on ? on_token : NULL, a);
}

int app_token_probs(struct app *a, struct app_token_prob *out, int first, int max)
{
	pthread_mutex_lock(&a->lock);
	int n = (int)a->n_probs;
	for (int i = 0; i < max && first + i < n; i++)
		out[i] = a->probs[first + i];
	pthread_mutex_unlock(&a->lock);
	return n;
}
