/* conv_data.c — conversation files encoded as `train --sft` and `perplexity --sft`
 * read them. */
#include "src/cli/conv_data.h"
#include "src/base/err.h"
#include "src/chat/sft.h"
#include "src/train/tokens.h"

#include <stdlib.h>
#include <string.h>

struct conv_read {
	const struct conv_encoder *e;
	struct dset_convs *out;
};

/* One conversation of a file, rendered and tokenized as the chat does. */
static int add_conversation(void *user, const struct chat *c, const char *where)
{
	struct conv_read *r = user;
	if (chat_last(c, CHAT_ASSISTANT) < 0) {
		r->out->no_answer++;
		return 0;
	}
	int32_t *ids;
	unsigned char *scored;
	size_t n;
	if (sft_encode(r->e->tk, c, r->e->variant, &ids, &scored, &n))
		return err_prefix("%s", where);
	int rc = 0, vocab = r->e->vocab;
	for (size_t i = 0; !rc && i < n; i++)
		if (ids[i] < 0 || ids[i] >= vocab)
			rc = err_set(
				"%s: token %zu: the tokenizer gave id %d, not below the model's "
				"vocab_size %d (the tokenizer is not this model's)",
				where, i, (int)ids[i], vocab);
	size_t trained = 0;
	for (size_t i = 0; i < n; i++)
		trained += scored[i] != 0;
	if (!rc && !trained) /* every answer "weight": 0 */
		r->out->no_answer++;
	else if (!rc)
		rc = dset_convs_add(r->out, ids, scored, n);
	free(ids);
	free(scored);
	return rc;
}

int conv_refuse_ids(const char *path)
{
	if (strcmp(path, "-") && tokens_is_u32(path))
		return err_set("%s: --sft reads conversations (JSON Lines, a conversation file "
			       "the chat saved, or paragraphs of *.txt), not token ids",
			       path);
	return 0;
}

int conv_encode_file(void *encoder, const char *path, struct dset_convs *out)
{
	if (conv_refuse_ids(path))
		return -1;
	struct conv_read r = {encoder, out};
	return sft_read_file(path, add_conversation, &r);
}

int conv_encode_text(const struct conv_encoder *e, const char *path, const char *text, size_t len,
		     struct dset_convs *out)
{
	struct conv_read r = {e, out};
	return sft_read_text(path, text, len, add_conversation, &r);
}
