/* hub_token.c — the Hugging Face access token: $HF_TOKEN, else the file
 * `huggingface-cli login` writes. */
#include <stdlib.h>
#include <string.h>

#include "src/base/err.h"
#include "src/base/fileio.h"
#include "src/hub/hub.h"

const char *hub_token(const struct hub_env *env, char **owned)
{
	const char *t = env->token;
	*owned = NULL;
	if (t && *t)
		return t;
	/* The file `huggingface-cli login` writes: $HF_HOME/token, HF_HOME defaulting
	 * to $XDG_CACHE_HOME/huggingface or ~/.cache/huggingface. */
	const char *path = env->token_path, *home = env->hf_home;
	const char *xdg = env->xdg_cache_home, *user = env->home;
	char *p = NULL;
	if (path && *path)
		p = strdup(path);
	else if (home && *home)
		p = fio_join(home, "token");
	else if (xdg && *xdg)
		p = fio_join(xdg, "huggingface/token");
	else if (user && *user)
		p = fio_join(user, ".cache/huggingface/token");
	size_t len;
	char *s = p && fio_is_file(p) ? fio_read_file(p, 4096, &len) : NULL;
	free(p);
	err_clear();
	if (!s)
		return NULL;
	while (len > 0 && strchr(" \t\r\n", s[len - 1]))
		s[--len] = '\0';
	*owned = s;
	return *s ? s : NULL;
}
