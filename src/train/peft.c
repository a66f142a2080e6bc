/* peft.c — a PEFT LoRA adapter_config.json read into the options of a LoRA run. */
#include "src/train/peft.h"
#include "engine/train.h"
#include "src/base/err.h"
#include "src/base/fileio.h"
#include "src/base/strbuf.h"

#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* The target a PEFT module name stands for, or -1. PEFT adapts every module whose
 * path ends in the name: "q_proj" and "self_attn.q_proj" name every layer's, while
 * "layers.3.self_attn.q_proj" would name one layer's, which is not taken. */
static int target_of(const char *name)
{
	const char *dot = strrchr(name, '.');
	const char *last = dot ? dot + 1 : name;
	size_t parent = dot ? (size_t)(dot - name) : 0;
	for (int k = 0; k < ENG_LORA_TARGETS; k++) {
		const char *of = k <= ENG_LORA_O ? "self_attn" : "mlp";
		if (!strcmp(last, eng_lora_target_name((enum eng_lora_target)k)) &&
		    (!dot || (parent == strlen(of) && !strncmp(name, of, parent))))
			return k;
	}
	return -1;
}

/* target_modules: "all-linear", or a list of module names. */
static int read_targets(json_t *v, const char *path, unsigned *mask)
{
	*mask = 0;
	if (json_is_string(v)) {
		if (!strcmp(json_string_value(v), "all-linear")) {
			*mask = ENG_LORA_ALL;
			return 0;
		}
		return err_set("%s: target_modules: \"%.64s\" is a regular expression (a list of "
			       "q_proj ... down_proj, or \"all-linear\", is taken)",
			       path, json_string_value(v));
	}
	size_t i;
	json_t *e;
	if (!json_is_array(v) || json_array_size(v) == 0)
		return err_set("%s: target_modules: expected a list of module names", path);
	json_array_foreach(v, i, e)
	{
		int k = json_is_string(e) ? target_of(json_string_value(e)) : -1;
		if (k < 0)
			return err_set(
				"%s: target_modules: %s%.64s%s is not one of Qwen3's q_proj, "
				"k_proj, v_proj, o_proj, gate_proj, up_proj, down_proj (in "
				"every layer)",
				path, json_is_string(e) ? "\"" : "",
				json_is_string(e) ? json_string_value(e) : "an entry",
				json_is_string(e) ? "\"" : "");
		*mask |= 1u << k;
	}
	return 0;
}

/* Keys whose values other than these change what the adapter computes. */
static int refuse_unsupported(json_t *root, const char *path)
{
	static const struct {
		const char *key, *what;
	} off[] = {{"use_dora", "DoRA"},
		   {"fan_in_fan_out", "fan_in_fan_out (Conv1D weights)"},
		   {"modules_to_save", "modules_to_save (fully trained modules)"},
		   {"layers_to_transform", "layers_to_transform (a subset of the layers)"},
		   {"rank_pattern", "rank_pattern (ranks per module)"},
		   {"alpha_pattern", "alpha_pattern (alphas per module)"},
		   {"exclude_modules", "exclude_modules (modules left out)"},
		   {"layer_replication", "layer_replication (layers repeated)"},
		   {"target_parameters", "target_parameters (parameters adapted)"}};
	for (size_t i = 0; i < sizeof off / sizeof *off; i++) {
		json_t *v = json_object_get(root, off[i].key);
		bool set = v && !json_is_null(v) && !json_is_false(v) &&
			   !(json_is_object(v) && json_object_size(v) == 0) &&
			   !(json_is_array(v) && json_array_size(v) == 0);
		if (set)
			return err_set("%s: %s: %s is not supported", path, off[i].key,
				       off[i].what);
	}
	const char *bias = json_string_value(json_object_get(root, "bias"));
	if (json_object_get(root, "bias") && (!bias || strcmp(bias, "none")))
		return err_set("%s: bias: only \"none\" is supported (Qwen3's layers have no bias)",
			       path);
	return 0;
}

int peft_parse_config(const char *text, size_t len, const char *path, struct tstate_opts *o)
{
	json_error_t je;
	json_t *root = json_loadb(text, len, JSON_REJECT_DUPLICATES, &je);
	int rc = -1;
	unsigned mask = 0;
	json_t *r = json_object_get(root, "r"), *alpha = json_object_get(root, "lora_alpha");
	const char *type = json_string_value(json_object_get(root, "peft_type"));
	if (!root)
		err_set("%s: %s (line %d)", path, je.text, je.line);
	else if (!json_is_object(root) || !type || strcmp(type, "LORA"))
		err_set("%s: peft_type: not \"LORA\"", path);
	else if (!json_is_integer(r) || json_integer_value(r) < 1 || json_integer_value(r) > 4096)
		err_set("%s: r: expected a rank from 1 to 4096", path);
	else if (!json_is_number(alpha) || !(json_number_value(alpha) > 0) ||
		 !(json_number_value(alpha) < 1e6))
		err_set("%s: lora_alpha: expected a number above 0", path);
	else if (!refuse_unsupported(root, path) &&
		 !read_targets(json_object_get(root, "target_modules"), path, &mask))
		rc = 0;
	if (rc == 0) {
		o->lora = (int)json_integer_value(r);
		o->lora_alpha = json_number_value(alpha);
		if (json_is_true(json_object_get(root, "use_rslora"))) /* alpha / sqrt(r) */
			o->lora_alpha *= sqrt((double)o->lora);
		struct strbuf b = {0};
		for (int k = 0; k < ENG_LORA_TARGETS; k++)
			if (mask >> k & 1)
				sb_printf(&b, "%s%s", b.n ? "," : "",
					  eng_lora_target_name((enum eng_lora_target)k));
		free(o->lora_targets);
		o->lora_targets = b.oom ? NULL : b.p;
		if (!o->lora_targets) {
			free(b.p);
			rc = err_set("out of memory");
		}
	}
	json_decref(root);
	return rc;
}

int peft_read_config(const char *dir, struct tstate_opts *o)
{
	char *path = fio_join(dir, "adapter_config.json"), *text = NULL;
	size_t len = 0;
	int rc = !path ? err_set("out of memory")
		 : !(text = fio_read_file(path, 1 << 20, &len))
			 ? -1
			 : peft_parse_config(text, len, path, o);
	free(text);
	free(path);
	return rc;
}

char *peft_weights_path(const char *dir)
{
	return fio_join(dir, "adapter_model.safetensors");
}
