/* env.c — every environment variable qwenchat reads, and what it becomes. */
#include "src/cli/env.h"
#include "src/base/err.h"
#include "src/base/fileio.h"
#include "src/base/strbuf.h"

#include <ctype.h>
#include <stdio.h>

#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* The value of a variable, NULL when unset or empty. */
static const char *var(const char *name)
{
	const char *v = getenv(name);
	return v && *v ? v : NULL;
}

/* A path variable as huggingface_hub reads it: os.path.expandvars(os.path.expanduser(v)),
 * "~" and "~/..." as $HOME, $NAME and ${NAME} as their values (unset ones kept as
 * written). NULL when unset or empty. The expansion is kept for the process's life:
 * the environment does not change under it. */
static const char *path_var(const char *name)
{
	static struct {
		const char *name;
		char *value;
	} kept[8];
	const char *v = var(name), *home = var("HOME");
	if (!v || (!strchr(v, '$') && v[0] != '~'))
		return v;
	size_t slot = 0;
	while (slot < 8 && kept[slot].name && strcmp(kept[slot].name, name))
		slot++;
	if (slot < 8 && kept[slot].name)
		return kept[slot].value;
	struct strbuf b = {0};
	if (v[0] == '~' && (v[1] == '/' || !v[1]) && home)
		sb_puts(&b, home), v++;
	for (const char *p = v; *p;) {
		bool brace = p[0] == '$' && p[1] == '{';
		const char *n = p + (brace ? 2 : 1);
		size_t len = 0;
		while (p[0] == '$' && (isalnum((unsigned char)n[len]) || n[len] == '_'))
			len++;
		if (!len || (brace && n[len] != '}')) {
			sb_put(&b, p, 1), p++;
			continue;
		}
		char key[256];
		snprintf(key, sizeof key, "%.*s", (int)len, n);
		const char *val = len < sizeof key ? getenv(key) : NULL;
		size_t whole = (size_t)(n - p) + len + (brace ? 1 : 0);
		if (val)
			sb_puts(&b, val);
		else
			sb_put(&b, p, whole);
		p += whole;
	}
	if (!b.p || b.oom || slot == 8) { /* out of memory: as written */
		free(b.p);
		return v;
	}
	kept[slot].name = name;
	kept[slot].value = b.p;
	return b.p;
}

/* huggingface_hub's notion of a true value. */
static bool var_true(const char *name)
{
	const char *v = var(name);
	return v && (!strcmp(v, "1") || !strcasecmp(v, "on") || !strcasecmp(v, "yes") ||
		     !strcasecmp(v, "true"));
}

void cli_env_hub(struct hub_env *h)
{
	memset(h, 0, sizeof *h);
	h->hub_cache = path_var("HF_HUB_CACHE");
	if (!h->hub_cache)
		h->hub_cache = path_var("HUGGINGFACE_HUB_CACHE");
	h->hf_home = path_var("HF_HOME");
	h->xdg_cache_home = path_var("XDG_CACHE_HOME");
	h->home = var("HOME");
	h->endpoint = var("HF_ENDPOINT");
	h->token = var("HF_TOKEN");
	h->token_legacy = var("HUGGING_FACE_HUB_TOKEN");
	h->token_path = path_var("HF_TOKEN_PATH");
	h->offline = var_true("HF_HUB_OFFLINE");
	h->no_progress = var_true("HF_HUB_DISABLE_PROGRESS_BARS");
	const char *a = var("QWENCHAT_DOWNLOAD_ATTEMPTS");
	h->attempts = a ? atoi(a) : 0;
	h->default_model = var("QWENCHAT_MODEL");
	h->ollama_models = var("OLLAMA_MODELS");
}

const char *cli_env_state_home_ignored(void)
{
	const char *x = var("XDG_STATE_HOME");
	return x && *x && x[0] != '/' ? x : NULL;
}

char *cli_env_state_dir(void)
{
	const char *x = var("XDG_STATE_HOME"), *home = var("HOME");
	if (x && x[0] == '/') /* the XDG spec ignores relative paths */
		return fio_join(x, "qwenchat");
	char *base = fio_join(home ? home : ".", ".local/state");
	char *d = base ? fio_join(base, "qwenchat") : NULL;
	free(base);
	return d;
}

/* A 0/1 switch into *out; absent leaves it alone. */
static int var_switch(const char *name, bool *out)
{
	const char *v = var(name);
	if (!v)
		return 0;
	if (strcmp(v, "0") && strcmp(v, "1"))
		return err_set("%s=%s: not 0 or 1", name, v);
	*out = v[0] == '1';
	return 0;
}

int cli_env_engine(struct eng_options *o)
{
	const char *isa = var("QWENCHAT_CPU_ISA");
	if (isa && eng_cpu_isa_check(isa))
		return err_prefix("QWENCHAT_CPU_ISA");
	o->cpu_isa = isa;
	o->cuda_module = var("QWENCHAT_CUDA_MODULE");
	bool graph = true, sample = true;
	if (var_switch("QWENCHAT_CPU_BF16_PREFILL", &o->bf16_prefill) ||
	    var_switch("QWENCHAT_CUDA_GRAPH", &graph) ||
	    var_switch("QWENCHAT_CUDA_SAMPLE", &sample))
		return -1;
	o->cuda_no_graph = !graph;
	o->cuda_no_sampling = !sample;
	return 0;
}

int cli_env_fast_prefill(bool *fast)
{
	return var_switch("QWENCHAT_CPU_BF16_PREFILL", fast);
}

int cli_env_train_attention(bool *tiled)
{
	const char *v = var("QWENCHAT_CUDA_TRAIN_ATTN");
	*tiled = v && !strcmp(v, "tiled");
	if (v && !*tiled && strcmp(v, "materialised"))
		return err_set("QWENCHAT_CUDA_TRAIN_ATTN=%s: not tiled or materialised", v);
	return 0;
}

const char *cli_env_home(void)
{
	return var("HOME");
}

bool cli_env_no_color(void)
{
	return var("NO_COLOR") != NULL;
}

const char *cli_env_term(void)
{
	return var("TERM");
}

const char *cli_env_openai_api_key(void)
{
	return var("OPENAI_API_KEY");
}

const char *cli_env_openai_base_url(void)
{
	return var("OPENAI_BASE_URL");
}
