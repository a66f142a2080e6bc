/* conv_data.h — conversation files as `train --sft` and `perplexity --sft` read them:
 * each conversation rendered with the chat template and tokenized as the chat does
 * (src/chat/sft.h), its answers' tokens flagged, into a dataset's conversations. */
#ifndef QWENCHAT_CONV_DATA_H
#define QWENCHAT_CONV_DATA_H

#include "src/chat/template.h"
#include "src/train/dataset.h"
#include "tokenizer/tokenizer.h"

struct conv_encoder {
	struct tok *tk;
	enum tmpl_variant variant; /* the template the chat renders with */
	int vocab;                 /* the model's vocab_size: every id must be below it */
};

/* -1 with err_set when path names token ids (*.u32), which are no conversations;
 * else 0 (stdin, "-", included). */
int conv_refuse_ids(const char *path);

/* Reads the conversations of path (sft_read_file's files) into out; one without an
 * answer to train on (none, or every one "weight" 0) is counted in out->no_answer.
 * A *.u32 file is refused. The signature of a dset_conv_reader, with encoder a
 * struct conv_encoder. 0 or -1 (err_set naming the file and line). */
int conv_encode_file(void *encoder, const char *path, struct dset_convs *out);
/* The same from the file's text[0..len), already read (path names it). */
int conv_encode_text(const struct conv_encoder *e, const char *path, const char *text, size_t len,
		     struct dset_convs *out);

#endif
