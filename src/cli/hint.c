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

/* Whether the option word a ("--ctx", "-m", "-qm", "--temp=1") takes the next word
 * as its value, by the table lo (as getopt_long reads it, abbreviations too). */
static bool takes_next(const struct option *lo, const char *a)
{
	if (a[1] == '-') {
		if (strchr(a, '='))
			return false;
		size_t n = strlen(a + 2);
		const struct option *hit = NULL;
		int hits = 0;
		for (const struct option *o = lo; o->name; o++)
			if (n && !strncmp(o->name, a + 2, n)) {
				if (strlen(o->name) == n) { /* exact: it, whatever else it begins */
					hit = o, hits = 1;
					break;
				}
				hit = o, hits++;
			}
		return hits == 1 && hit->has_arg == required_argument;
	}
	for (const char *c = a + 1; *c; c++) { /* a cluster: the first letter with a value
						 takes the rest, or the next word */
		const struct option *o = lo;
		while (o->name && o->val != *c)
			o++;
		if (!o->name)
			return false;
		if (o->has_arg == required_argument)
			return c[1] == '\0';
	}
	return false;
}

const char *hint_misplaced_command(const struct option *lo, int argc, char **argv)
{
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		if (!strcmp(a, "--"))
			return NULL;
		if (a[0] == '-' && a[1]) {
			i += takes_next(lo, a); /* a value ('--system list') is no command */
			continue;
		}
		for (size_t k = 0; k < g_ncommands; k++)
			if (!strcmp(a, g_commands[k]))
				return g_commands[k];
	}
	return NULL;
}
