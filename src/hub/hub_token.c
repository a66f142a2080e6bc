/* hub_token.c — the Hugging Face access token, found and cleaned as huggingface_hub
 * finds it: $HF_TOKEN, else $HUGGING_FACE_HUB_TOKEN, else the file `huggingface-cli
 * login` writes. */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "src/base/err.h"
#include "src/base/fileio.h"
#include "src/hub/hub.h"

/* huggingface_hub's _clean_token, in place: every \r and \n removed, white space
 * stripped at both ends. A token pasted with a stray newline or blank then works
 * here as it does with the Python tools. */
static char *clean(char *s)
{
	size_t n = 0;
	for (char *p = s; *p; p++)
		if (*p != '\r' && *p != '\n')
			s[n++] = *p;
	s[n] = '\0';
	while (n > 0 && strchr(" \t\v\f", s[n - 1]))
		s[--n] = '\0';
	size_t lead = strspn(s, " \t\v\f");
	memmove(s, s + lead, n - lead + 1);
	return s;
}

/* The token file: $HF_TOKEN_PATH, else $HF_HOME/token, HF_HOME defaulting to
 * $XDG_CACHE_HOME/huggingface or ~/.cache/huggingface. */
static char *token_path(const struct hub_env *env)
{
	const char *path = env->token_path, *home = env->hf_home;
	const char *xdg = env->xdg_cache_home, *user = env->home;
	if (path && *path)
		return strdup(path);
	if (home && *home)
		return fio_join(home, "token");
	if (xdg && *xdg)
		return fio_join(xdg, "huggingface/token");
	if (user && *user)
		return fio_join(user, ".cache/huggingface/token");
	return NULL;
}

int hub_token(const struct hub_env *env, struct hub_token *t)
{
	memset(t, 0, sizeof *t);
	/* an empty HF_TOKEN gives way to HUGGING_FACE_HUB_TOKEN; one that cleans to
	 * nothing gives way to the file, as in huggingface_hub */
	bool hf = env->token && *env->token;
	const char *v = hf ? env->token : env->token_legacy;
	if (v && *v) {
		t->value = strdup(v);
		t->source = strdup(hf ? "HF_TOKEN" : "HUGGING_FACE_HUB_TOKEN");
		if (!t->value || !t->source) {
			hub_token_free(t);
			return err_set("out of memory");
		}
		if (*clean(t->value))
			return 0;
		hub_token_free(t);
	}
	size_t len;
	char *p = token_path(env);
	bool there = p && fio_exists(p);
	char *s = there ? fio_read_file(p, 4096, &len) : NULL;
	/* huggingface_hub stops at a token file it cannot read; a download may not need
	 * the token, so this goes on without it, but says so: a gated repository's
	 * "access denied" would otherwise hide the cause */
	if (there && !s)
		fprintf(stderr,
			"qwenchat: warning: the Hugging Face token file: %s; going on "
			"without a token\n",
			err_msg());
	err_clear();
	if (s && *clean(s)) {
		t->value = s;
		t->source = p;
		return 0;
	}
	free(s);
	free(p);
	return 0;
}

void hub_token_free(struct hub_token *t)
{
	free(t->value);
	free(t->source);
	t->value = t->source = NULL;
}
