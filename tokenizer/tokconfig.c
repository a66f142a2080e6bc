/* tokconfig.c — what tokload.c reads besides tokenizer.json: tokenizer_config.json (the
 * added tokens transformers adds, the eos and pad tokens, the chat template) and
 * chat_template.jinja. */
#include "tokenizer/tokenizer.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "src/base/err.h"
#include "src/base/fileio.h"
#include "src/base/jsonlimit.h"
#include "tokenizer/tok_impl.h"

/* "eos_token": "<|im_end|>" or {"content": "<|im_end|>", ...} or null. */
static int config_token(json_t *cfg, const char *key, char **out, const char *file)
{
	json_t *v = json_object_get(cfg, key);
	if (json_is_object(v))
		v = json_object_get(v, "content");
	if (!v || json_is_null(v))
		return 0;
	if (!json_is_string(v))
		return err_set("%s: %s: not a string", file, key);
	*out = strdup(json_string_value(v));
	return *out ? 0 : err_set("tokenizer: out of memory");
}

/* chat_template: a string, or a list of {"name", "template"} (the "default" one). */
static int config_template(struct tok *t, json_t *cfg, const char *file)
{
	json_t *v = json_object_get(cfg, "chat_template");
	if (json_is_array(v)) {
		size_t i;
		json_t *o, *pick = NULL;
		json_array_foreach(v, i, o)
		{
			const char *name = json_string_value(json_object_get(o, "name"));
			if (name && !strcmp(name, "default"))
				pick = json_object_get(o, "template");
		}
		v = pick;
	}
	if (!v || json_is_null(v))
		return 0;
	if (!json_is_string(v))
		return err_set("%s: chat_template: not a string", file);
	t->chat_template = strdup(json_string_value(v));
	return t->chat_template ? 0 : err_set("tokenizer: out of memory");
}

/* added_tokens_decoder: {"151643": {"content": ..., flags}, ...}. Tokens tokenizer.json
 * already has must agree with it; others are added, as transformers does. */
static int config_added(struct tok *t, json_t *cfg, const char *file)
{
	json_t *dec = json_object_get(cfg, "added_tokens_decoder"), *o;
	const char *key;
	if (!dec || json_is_null(dec))
		return 0;
	if (!json_is_object(dec))
		return err_set("%s: added_tokens_decoder: not an object", file);
	json_object_foreach(dec, key, o)
	{
		char field[64], *end;
		snprintf(field, sizeof field, "added_tokens_decoder.\"%.20s\"", key);
		long long id = strtoll(key, &end, 10);
		json_t *c = json_object_get(o, "content");
		if (!*key || *end || id < 0 || id >= BPE_MAX_ID)
			return err_set("%s: %s: the key is not a token id", file, field);
		if (!json_is_string(c))
			return err_set("%s: %s.content: missing or not a string", file, field);
		bool found = false;
		for (size_t k = 0; k < t->added.n && !found; k++) {
			if (t->added.t[k].id != id)
				continue;
			if (strcmp(t->added.t[k].content, json_string_value(c)) != 0)
				return err_set("%s: %s.content: \"%.40s\" but tokenizer.json has "
					       "\"%.40s\"",
					       file, field, json_string_value(c),
					       t->added.t[k].content);
			found = true;
		}
		if (!found && tok_add_added(t, json_string_value(c), json_string_length(c), id, o,
					    file, field))
			return -1;
	}
	return 0;
}

int tok_read_config(struct tok *t, const char *path)
{
	/* Qwen3's is 10 KB (26 added tokens and the chat template); room for thousands
	 * of added tokens, and a bound on what jansson may allocate (~60 MB) */
	static const struct jlim lim = {.max_depth = 32, .max_values = 1 << 18};
	size_t len;
	char *text = jlim_read_file(path, 16u << 20, &lim, &len);
	if (!text)
		return -1;
	json_error_t je;
	json_t *cfg = json_loadb(text, len, JSON_REJECT_DUPLICATES, &je);
	free(text);
	if (!cfg)
		return err_set("%s: line %d: %s", path, je.line, je.text);
	int rc = -1;
	if (!json_is_object(cfg))
		err_set("%s: (top level): not an object", path);
	else if (!config_added(t, cfg, path) && !config_token(cfg, "eos_token", &t->eos, path) &&
		 !config_token(cfg, "pad_token", &t->pad, path) && !config_template(t, cfg, path))
		rc = 0;
	json_decref(cfg);
	return rc;
}

char *tok_read_template_file(const char *dir, bool *missing)
{
	char *path = fio_join(dir, "chat_template.jinja"), *text = NULL;
	size_t len;
	*missing = path && !fio_exists(path);
	if (!path)
		err_set("tokenizer: out of memory");
	else if (!*missing && (text = fio_read_file(path, 1u << 20, &len)) &&
		 memchr(text, 0, len)) {
		err_set("%s: holds a NUL byte (not a template)", path);
		free(text);
		text = NULL;
	}
	free(path);
	return text;
}
