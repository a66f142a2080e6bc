/* hint.c — "did you mean" for options spelled as other tools spell them. */
#include "src/cli/hint.h"

#include <stdbool.h>
#include <stdio.h>
#include <string.h>

static const char *const *g_commands;
static size_t g_ncommands;

void hint_commands(const char *const *names, size_t n)
{
	g_commands = names;
	g_ncommands = n;
}

/* Other tools' names of our options: llama.cpp's (llama-cli, llama-server), ollama's
 * parameters, transformers' generate() and OpenAI's request fields. */
static const struct {
	const char *theirs, *ours;
} g_aliases[] = {
	{"-c", "ctx"},
	{"--ctx-size", "ctx"},
	{"--context", "ctx"},
	{"--context-size", "ctx"},
	{"--n-ctx", "ctx"},
	{"--num-ctx", "ctx"},
	{"--max-seq-len", "ctx"},
	{"-t", "threads"},
	{"--n-threads", "threads"},
	{"--num-thread", "threads"},
	{"--num-threads", "threads"},
	{"--n-predict", "max-new"},
	{"--num-predict", "max-new"},
	{"--max-tokens", "max-new"},
	{"--max-new-tokens", "max-new"},
	{"--temperature", "temp"},
	{"--random-seed", "seed"},
	{"--system-prompt", "system"},
	{"--repetition-penalty", "repeat-penalty"},
	{"--host-address", "host"},
};

static const struct option *find_long(const struct option *lo, const char *name, size_t n)
{
	for (; lo->name; lo++)
		if (strlen(lo->name) == n && !strncmp(lo->name, name, n))
			return lo;
	return NULL;
}

const char *hint_option(const struct option *lo, const char *arg)
{
	static char out[64];
	size_t n = strcspn(arg, "=");
	char name[64];
	if (n >= sizeof name)
		return NULL;
	memcpy(name, arg, n);
	name[n] = '\0';
	bool underscore = false;
	for (size_t i = 0; i < n; i++) /* --top_k, --repeat_penalty */
		if (name[i] == '_')
			name[i] = '-', underscore = true;
	const struct option *hit = NULL;
	for (size_t i = 0; i < sizeof g_aliases / sizeof g_aliases[0] && !hit; i++)
		if (!strcmp(name, g_aliases[i].theirs))
			hit = find_long(lo, g_aliases[i].ours, strlen(g_aliases[i].ours));
	if (!hit && !strncmp(name, "--", 2) && underscore)
		hit = find_long(lo, name + 2, strlen(name + 2)); /* only the underscores differ */
	if (!hit)
		return NULL;
	/* -n's long name is --max-new: the letter is what people type */
	if (hit->val > 0 && hit->val < 128 && hit->val != 'h')
		snprintf(out, sizeof out, "-%c", hit->val);
	else
		snprintf(out, sizeof out, "--%s", hit->name);
	return out;
}

const char *hint_misplaced_command(int argc, char **argv)
{
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--"))
			return NULL;
		for (size_t k = 0; k < g_ncommands; k++)
			if (!strcmp(argv[i], g_commands[k]))
				return g_commands[k];
	}
	return NULL;
}
