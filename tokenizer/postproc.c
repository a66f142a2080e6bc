/* postproc.c — tokenizer.json's post-processor: the special tokens Hugging Face puts
 * around a text when it is encoded with add_special_tokens=True.
 *
 * Qwen3's chat models have a ByteLevel post-processor, which adds nothing (its offsets
 * are all it changes). Qwen3-Embedding's has a TemplateProcessing that appends
 * <|endoftext|>: the embedding is the hidden state of that last token, so an input
 * encoded without it gives another vector. */
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "src/base/err.h"
#include "tokenizer/tok_impl.h"
#include "tokenizer/tokenizer.h"

static const char *type_name(json_t *v)
{
	const char *s = json_string_value(json_object_get(v, "type"));
	return s ? s : "(no type)";
}

/* The ids of special token `name` from the template's "special_tokens" map, appended
 * to side (0 before the text, 1 after). */
static int push_special(struct tok_ends *t, json_t *specials, const char *name, int side,
			const char *file)
{
	json_t *ids = json_object_get(json_object_get(specials, name), "ids");
	if (!json_is_array(ids) || !json_array_size(ids))
		return err_set("%s: post_processor.special_tokens: \"%.40s\" has no ids", file,
			       name);
	size_t i;
	json_t *e;
	json_array_foreach(ids, i, e)
	{
		if (!json_is_integer(e) || json_integer_value(e) < 0 ||
		    json_integer_value(e) >= INT32_MAX)
			return err_set("%s: post_processor.special_tokens: \"%.40s\": ids[%zu] is "
				       "not a token id",
				       file, name, i);
		if (t->n[side] == TOK_MAX_ENDS)
			return err_set("%s: post_processor.single: more than %d special tokens "
				       "on one side of the text",
				       file, TOK_MAX_ENDS);
		t->ids[side][t->n[side]++] = (int32_t)json_integer_value(e);
	}
	return 0;
}

/* "single": special tokens, one {"Sequence": {"id": "A"}}, special tokens. */
static int read_template(struct tok_ends *t, json_t *v, const char *file)
{
	json_t *single = json_object_get(v, "single"), *e;
	json_t *specials = json_object_get(v, "special_tokens");
	if (!json_is_array(single))
		return err_set("%s: post_processor.single: missing or not an array", file);
	int side = 0;
	size_t i;
	json_array_foreach(single, i, e)
	{
		json_t *seq = json_object_get(e, "Sequence"),
		       *sp = json_object_get(e, "SpecialToken");
		const char *name = json_string_value(json_object_get(sp, "id"));
		const char *text = json_string_value(json_object_get(seq, "id"));
		if (seq && !sp && !side && text && !strcmp(text, "A")) {
			side = 1;
		} else if (sp && !seq && name) {
			if (push_special(t, specials, name, side, file))
				return -1;
		} else {
			return err_set(
				"%s: post_processor.single[%zu]: neither a special token nor "
				"the one text $A",
				file, i);
		}
	}
	if (!side)
		return err_set("%s: post_processor.single: no text ($A) in the template", file);
	return 0;
}

static int parse(json_t *v, const char *file, struct tok_ends *out)
{
	if (json_is_null(v))
		return 0;
	const char *type = type_name(v);
	if (!strcmp(type, "ByteLevel"))
		return 0;
	if (!strcmp(type, "TemplateProcessing")) {
		if (out->n[0] || out->n[1])
			return err_set("%s: post_processor: more than one TemplateProcessing",
				       file);
		return read_template(out, v, file);
	}
	json_t *list = json_object_get(v, "processors"), *e;
	if (strcmp(type, "Sequence") || !json_is_array(list))
		return err_set("%s: post_processor: type \"%s\" is not supported (only "
			       "ByteLevel, TemplateProcessing or a Sequence of them)",
			       file, type);
	size_t i;
	json_array_foreach(list, i, e)
	{
		if (!json_is_object(e))
			return err_set("%s: post_processor.processors[%zu]: not an object", file,
				       i);
		if (!strcmp(type_name(e), "Sequence"))
			return err_set("%s: post_processor.processors[%zu]: a Sequence within a "
				       "Sequence",
				       file, i);
		if (parse(e, file, out))
			return -1;
	}
	return 0;
}

int tok_parse_ends(json_t *v, const char *file, struct tok_ends *out)
{
	memset(out, 0, sizeof *out);
	return parse(v, file, out);
}

const struct tok_ends *tok_get_ends(const struct tok *t)
{
	return &t->ends;
}

int tok_set_ends(struct tok *t, const struct tok_ends *e)
{
	for (int side = 0; side < 2; side++) {
		if (e->n[side] < 0 || e->n[side] > TOK_MAX_ENDS)
			return err_set("tokenizer: more than %d special tokens on one side of a "
				       "text",
				       TOK_MAX_ENDS);
		for (int k = 0; k < e->n[side]; k++) {
			int32_t id = e->ids[side][k];
			if (id < 0 || id >= t->n_ids || !t->flags[id])
				return err_set("tokenizer: special token id %d is not in the "
					       "vocabulary",
					       id);
		}
	}
	t->ends = *e;
	return 0;
}

int32_t *tok_encode_ends(struct tok *t, const char *text, size_t len, size_t *n)
{
	size_t m;
	int32_t *ids = tok_encode(t, text, len, &m);
	if (!ids)
		return NULL;
	int a = t->ends.n[0], b = t->ends.n[1];
	int32_t *out = malloc((m + (size_t)a + (size_t)b) * sizeof *out + 1);
	if (!out) {
		free(ids);
		err_set("out of memory");
		return NULL;
	}
	memcpy(out, t->ends.ids[0], (size_t)a * sizeof *out);
	memcpy(out + a, ids, m * sizeof *out);
	memcpy(out + a + m, t->ends.ids[1], (size_t)b * sizeof *out);
	free(ids);
	*n = m + (size_t)a + (size_t)b;
	return out;
}
