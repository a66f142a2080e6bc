/* env.c — every environment variable qwenchat reads, and what it becomes. */
#include "src/cli/env.h"
#include "src/base/fileio.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* The value of a variable, NULL when unset or empty. */
static const char *var(const char *name)
{
	const char *v = getenv(name);
	return v && *v ? v : NULL;
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
	h->hub_cache = var("HF_HUB_CACHE");
	if (!h->hub_cache)
		h->hub_cache = var("HUGGINGFACE_HUB_CACHE");
	h->hf_home = var("HF_HOME");
	h->xdg_cache_home = var("XDG_CACHE_HOME");
	h->home = var("HOME");
	h->endpoint = var("HF_ENDPOINT");
	h->token = var("HF_TOKEN");
	h->token_path = var("HF_TOKEN_PATH");
	h->offline = var_true("HF_HUB_OFFLINE");
	h->no_progress = var_true("HF_HUB_DISABLE_PROGRESS_BARS");
	const char *a = var("QWENCHAT_DOWNLOAD_ATTEMPTS");
	h->attempts = a ? atoi(a) : 0;
	h->default_model = var("QWENCHAT_MODEL");
	h->ollama_models = var("OLLAMA_MODELS");
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

const char *cli_env_home(void)
{
	return var("HOME");
}

const char *cli_env_openai_api_key(void)
{
	return var("OPENAI_API_KEY");
}

const char *cli_env_openai_base_url(void)
{
	return var("OPENAI_BASE_URL");
}
