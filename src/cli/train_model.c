/* train_model.c — the model of a training run, from the flags or from a checkpoint. */
#include "src/cli/train_model.h"
#include "src/base/err.h"
#include "src/base/fileio.h"
#include "src/cli/cli.h"
#include "src/cli/conv_data.h"
#include "src/cli/env.h"
#include "src/hub/hub.h"
#include "src/hub/loader.h"
#include "src/session/sampler.h"
#include "src/train/dataset.h"
#include "src/train/modeldir.h"
#include "src/train/tokens.h"

#include <assert.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void remark(struct train_model *p, const char *msg)
{
	if (p->n_remarks < (int)(sizeof p->remarks / sizeof p->remarks[0]))
		p->remarks[p->n_remarks++] = msg;
}

void train_model_free(struct train_model *p)
{
	for (int i = 0; i < LOOP_MAX_FILES; i++)
		free(p->texts[i]);
	tok_free(p->m.tk);
	eng_model_free(p->m.init);
	free(p->init_path);
}

static void add_file(struct train_model *p, const char *name, char *text, size_t len)
{
	int i = p->m.n_files++;
	assert(i < LOOP_MAX_FILES);
	p->texts[i] = text;
	p->m.files[i] = (struct save_file){name, text, len};
}

/* Whether the checkpoint's files hold one called name. */
static bool has_file(const struct train_model *p, const char *name)
{
	for (int i = 0; i < p->m.n_files; i++)
		if (!strcmp(p->m.files[i].name, name))
			return true;
	return false;
}

/* DIR/name's bytes into the checkpoint's files; absent is fine unless `need`. */
static int copy_file(struct train_model *p, const char *dir, const char *name, bool need)
{
	char *path = fio_join(dir, name);
	if (!path)
		return err_set("out of memory");
	size_t len = 0;
	char *text = NULL;
	int rc = 0;
	if (fio_is_file(path) || need)
		rc = (text = fio_read_all(path, 256u << 20, &len)) ? 0 : -1;
	free(path);
	if (text)
		add_file(p, name, text, len);
	return rc;
}

/* The checkpoint's tokenizer_config.json: `existing` (its text, or NULL) with the chat
 * template `tmpl` (NULL: Qwen3's, which the remarks then say). `name` is for messages. */
static int config_file(struct train_model *p, const char *existing, const char *name,
		       const char *tmpl)
{
	bool markers;
	char *text = mdir_tokenizer_config(existing, name, p->m.tk, tmpl, &markers);
	if (!text)
		return -1;
	add_file(p, "tokenizer_config.json", text, strlen(text));
	if (tmpl)
		return 0;
	p->template_added = true;
	remark(p, "the tokenizer has no chat template: the checkpoint's tokenizer_config.json "
		  "gets Qwen3's");
	if (!markers)
		remark(p, "the tokenizer has no <|im_start|> and <|im_end|> tokens: the chat "
			  "template's turn markers will be plain text (train-bpe --special "
			  "'<|im_start|>' --special '<|im_end|>' adds them)");
	return 0;
}

/* vocab.json and merges.txt where dir has them: the files of the slow tokenizer
 * (Qwen2Tokenizer, use_fast=False), which the Qwen3 repositories ship beside
 * tokenizer.json. */
static int slow_tokenizer_files(struct train_model *p, const char *dir)
{
	return copy_file(p, dir, "vocab.json", false) || copy_file(p, dir, "merges.txt", false) ? -1
												: 0;
}

/* The tokenizer of dir (tokenizer.json and tokenizer_config.json), its files for the
 * checkpoint, with the Qwen3 chat template added where it has none. */
static int tokenizer_from_dir(struct train_model *p, const char *dir)
{
	if (!(p->m.tk = tok_load(dir)) || copy_file(p, dir, "tokenizer.json", true) ||
	    slow_tokenizer_files(p, dir))
		return -1;
	/* chat_template.jinja, where transformers 4.47 on saves the template (and the
	 * tokenizer loads it from, before tokenizer_config.json's): the checkpoint chats
	 * with the template it was trained on. */
	if (copy_file(p, dir, "chat_template.jinja", false))
		return -1;
	if (tok_chat_template(p->m.tk))
		return copy_file(p, dir, "tokenizer_config.json", false);
	char *cfg_path = fio_join(dir, "tokenizer_config.json"), *existing = NULL;
	if (!cfg_path)
		return err_set("out of memory");
	if (fio_is_file(cfg_path) && !(existing = fio_read_all(cfg_path, 64u << 20, NULL))) {
		free(cfg_path);
		return -1;
	}
	int rc = config_file(p, existing, cfg_path, NULL);
	free(existing);
	free(cfg_path);
	return rc;
}

/* A GGUF file's tokenizer, and the tokenizer.json and tokenizer_config.json (its chat
 * template, else Qwen3's) that make the checkpoints directories the chat loads. */
static int tokenizer_from_gguf(struct train_model *p, const char *path)
{
	char *json = NULL;
	size_t len = 0;
	if (!(p->m.tk = loader_tokenizer_json(path, &json, &len)))
		return -1;
	add_file(p, "tokenizer.json", json, len);
	return config_file(p, NULL, "tokenizer_config.json", tok_chat_template(p->m.tk));
}

/* ---- conversations (--sft) ------------------------------------------------------------ */

/* The conversations of a file, with the run's tokenizer and template. */
static int read_conversations(void *user, const char *path, struct dset_convs *out)
{
	struct train_model *p = user;
	struct conv_encoder e = {p->m.tk, p->variant, p->m.cfg.vocab_size};
	return conv_encode_file(&e, path, out);
}

/* The chat template the checkpoints carry, and the reader of conversations with it. */
static void conversations(struct train_model *p, bool sft)
{
	if (!p->m.tk)
		return;
	const char *t = tok_chat_template(p->m.tk), *warning;
	if (!t && p->template_added)
		t = mdir_qwen3_template;
	p->variant = tmpl_detect(t, &warning);
	if (sft && warning) {
		snprintf(p->template_remark, sizeof p->template_remark,
			 "--sft: %s, as the chat does", warning);
		remark(p, p->template_remark);
	}
	p->m.read_convs = read_conversations;
	p->m.read_convs_user = p;
}

/* generation_config.json for a model without one: the end of text ends a turn, and
 * <|im_end|> too where the tokenizer has it (a tokenizer with neither gets the
 * sampling defaults alone). */
static int generation_file(struct train_model *p, const struct eng_config *c)
{
	if (!p->m.tk)
		return 0;
	int eot = tokens_eot(p->m.tk), im_end = tok_id(p->m.tk, "<|im_end|>"), eos[2], n = 0;
	if (im_end >= 0)
		eos[n++] = im_end;
	if (eot >= 0 && eot != im_end)
		eos[n++] = eot;
	err_clear(); /* tokens_eot's, when there is none */
	char *text = mdir_generation_json(c->bos_token_id >= 0 ? c->bos_token_id : eot, eos, n, eot,
					  &p->sampling);
	if (!text)
		return -1;
	add_file(p, "generation_config.json", text, strlen(text));
	return 0;
}

static void hash_tokenizer(struct train_model *p)
{
	const char *texts[LOOP_MAX_FILES];
	size_t lens[LOOP_MAX_FILES];
	int n = 0;
	/* the chat template too: --sft's streams are the conversations it renders */
	for (int i = 0; i < p->m.n_files; i++)
		if (strncmp(p->m.files[i].name, "tokenizer", 9) == 0 ||
		    strcmp(p->m.files[i].name, "chat_template.jinja") == 0) {
			texts[n] = p->m.files[i].data;
			lens[n++] = p->m.files[i].len;
		}
	if (n == 0 && p->m.tk && p->init_path) { /* a GGUF's tokenizer: the file stands for it */
		texts[n] = p->init_path;
		lens[n++] = strlen(p->init_path);
	}
	dset_hash(texts, lens, n, p->tok_hash);
	p->m.tok_hash = p->tok_hash;
}

/* config.json's token ids for tk, as Qwen3's chat models have them: bos the end of
 * text, eos <|im_end|> where tk has it (the eos_token of tokenizer_config.json),
 * else the end of text; -1 without tk or such a token. */
static void token_ids(const struct tok *tk, struct eng_config *c)
{
	int eot = tk ? tokens_eot(tk) : -1, im_end = tk ? tok_id(tk, "<|im_end|>") : -1;
	c->bos_token_id = eot;
	c->eos_token_id = im_end >= 0 ? im_end : eot;
}

/* A model from scratch: the config the shape flags give, checked as config.json is. */
static int scratch_config(const struct tstate_opts *o, const struct tok *tk, struct eng_config *c)
{
	memset(c, 0, sizeof *c);
	c->vocab_size = tk ? tok_vocab_size(tk) : o->vocab;
	c->hidden_size = o->hidden;
	c->intermediate_size = o->intermediate ? o->intermediate : 3 * o->hidden;
	c->num_layers = o->layers;
	c->num_heads = o->heads;
	c->num_kv_heads = o->kv_heads ? o->kv_heads : o->heads;
	if (!o->head_dim && o->hidden % o->heads)
		return err_set("--hidden-size %d is not a multiple of --heads %d: give --head-dim",
			       o->hidden, o->heads);
	c->head_dim = o->head_dim ? o->head_dim : o->hidden / o->heads;
	c->rms_norm_eps = 1e-6;
	c->rope_theta = o->rope_theta > 0 ? o->rope_theta : 1e6;
	snprintf(c->rope_type, sizeof c->rope_type, "default");
	c->rope_factor = 1;
	c->rope_beta_fast = 32;
	c->rope_beta_slow = 1;
	c->max_position_embeddings = o->ctx > 40960 ? o->ctx : 40960;
	c->tie_word_embeddings = o->tie != 0;
	c->dtype = ENG_F32;
	token_ids(tk, c);
	char *text = mdir_config_json(c);
	if (!text)
		return -1;
	int rc = eng_config_parse(text, strlen(text), "the model's shape", c);
	free(text);
	return rc;
}

/* Refuses a model with quantized tensors, all of them or some (llama-quantize's
 * --token-embedding-type makes a bf16 file with a Q8_0 embedding). */
/* A model whose weights cannot be trained; LoRA adapters can be, beside them. */
static int quantized(const struct eng_model *m, const char *path)
{
	struct eng_type_count tc[ENG_DTYPE_COUNT];
	eng_model_type_counts(m, tc);
	enum eng_dtype main = eng_model_config(m)->dtype;
	if (eng_dtype_quantized(main))
		return err_set("%s: its weights are %s: train from the bf16 model (quantized "
			       "weights cannot be trained), or train LoRA adapters beside them "
			       "(--lora R)",
			       path, eng_dtype_name(main));
	for (int t = 0; t < ENG_DTYPE_COUNT; t++)
		if (tc[t].tensors && eng_dtype_quantized((enum eng_dtype)t))
			return err_set("%s: %d of its tensors %s %s: train from the bf16 model "
				       "(quantized weights cannot be trained), or LoRA adapters "
				       "beside them (--lora R)",
				       path, tc[t].tensors, tc[t].tensors == 1 ? "is" : "are",
				       eng_dtype_name((enum eng_dtype)t));
	return 0;
}

/* A GGUF's sampling defaults (general.sampling.*, from the generation_config.json it
 * was made from), over Qwen3's where it has none. */
static int gguf_sampling(struct train_model *p, const char *path)
{
	struct samp_params s;
	samp_params_default(&s);
	s.temperature = p->sampling.temperature;
	s.top_k = p->sampling.top_k;
	s.top_p = p->sampling.top_p;
	if (loader_generation(path, &s, NULL, NULL))
		return -1;
	p->sampling = (struct mdir_sampling){s.temperature, s.top_p, s.min_p, s.repetition_penalty,
					     s.top_k};
	return 0;
}

int train_model_new(const struct tstate_opts *o, struct train_model *p)
{
	p->sampling = mdir_qwen3_sampling;
	if (o->init) {
		struct hub_env hub;
		cli_env_hub(&hub);
		if (!(p->init_path = hub_resolve(&hub, o->init)) ||
		    !(p->m.init = eng_model_open(p->init_path)))
			return -1;
		p->m.cfg = *eng_model_config(p->m.init);
		if (!o->lora && quantized(p->m.init, p->init_path)) /* before the data, the plan */
			return -1;
		if (o->ctx > eng_max_context(&p->m.cfg))
			return err_set("--ctx %d is beyond %s's %d positions (%s)", o->ctx, o->init,
				       eng_max_context(&p->m.cfg),
				       eng_max_context_source(&p->m.cfg));
		const char *tdir = o->tokenizer ? o->tokenizer : p->init_path;
		char *tj = fio_join(tdir, "tokenizer.json");
		bool has = tj && fio_is_file(tj);
		free(tj);
		if (o->tokenizer || has) {
			if (tokenizer_from_dir(p, tdir) ||
			    loader_check_vocab(p->m.tk, p->m.cfg.vocab_size, tdir))
				return -1;
			if (o->tokenizer) /* the ids of the model's own tokenizer mean nothing now */
				token_ids(p->m.tk, &p->m.cfg);
		} else if (eng_is_gguf(p->init_path) && tokenizer_from_gguf(p, p->init_path)) {
			return -1;
		}
		if (eng_is_gguf(p->init_path) && gguf_sampling(p, p->init_path))
			return -1;
		if (!o->tokenizer && !eng_is_gguf(p->init_path) &&
		    copy_file(p, p->init_path, "generation_config.json", false))
			return -1;
	} else {
		if (o->tokenizer && tokenizer_from_dir(p, o->tokenizer))
			return -1;
		if (scratch_config(o, p->m.tk, &p->m.cfg)) {
			p->usage = true;
			return -1;
		}
	}
	if (!has_file(p, "generation_config.json") && generation_file(p, &p->m.cfg))
		return -1;
	hash_tokenizer(p);
	conversations(p, o->sft);
	return 0;
}

int train_model_resume(const char *dir, struct train_model *p)
{
	if (eng_config_load(dir, &p->m.cfg))
		return -1;
	char *tj = fio_join(dir, "tokenizer.json");
	bool has = tj && fio_is_file(tj);
	free(tj);
	if (has &&
	    (!(p->m.tk = tok_load(dir)) || copy_file(p, dir, "tokenizer.json", true) ||
	     copy_file(p, dir, "tokenizer_config.json", false) ||
	     copy_file(p, dir, "chat_template.jinja", false) || slow_tokenizer_files(p, dir)))
		return -1;
	char *cache = fio_join(dir, "train-state/data");
	bool tokenized = cache && dset_tokenized(cache);
	free(cache);
	if (!has && tokenized)
		return err_set("%s/tokenizer.json: missing, but the run's data were encoded by a "
			       "tokenizer (train-state/data.json says so): put its tokenizer files "
			       "back, as the run's checkpoints had them",
			       dir);
	if (copy_file(p, dir, "generation_config.json", false))
		return -1;
	/* written anew with the defaults a new run from scratch gets (the model it started
	 * from, whose own they may have been, may be gone) */
	p->sampling = mdir_qwen3_sampling;
	if (!has_file(p, "generation_config.json") && p->m.tk) {
		if (generation_file(p, &p->m.cfg))
			return -1;
		char msg[PATH_MAX + 128];
		snprintf(msg, sizeof msg,
			 "%s/generation_config.json was missing: the checkpoints have it again, "
			 "with Qwen3's sampling defaults",
			 dir);
		cli_notice(msg);
	}
	hash_tokenizer(p);
	conversations(p, false);
	return 0;
}
