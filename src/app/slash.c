/* slash.c — the slash command table, argument parsing, help text and completion. */
#include "src/app/slash.h"
#include "src/session/sampler.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const think_choices[] = {"on", "off", "hide", "show", NULL};
static const char *const onoff_choices[] = {"on", "off", NULL};
static const char *const debug_choices[] = {"on", "off", "attention", "memory", "probs", NULL};

/* Kept in the order /help lists them. */
const struct slash_cmd slash_table[] = {
	{"help", SLASH_HELP, SLASH_ARG_NONE, false, 0, 0, NULL, "/help",
	 "list the commands and keys"},
	{"think", SLASH_THINK, SLASH_ARG_CHOICE, false, 0, 0, think_choices,
	 "/think [on|off|hide|show]", "thinking on/off (next answer); hide/show the reasoning"},
	{"special", SLASH_SPECIAL, SLASH_ARG_CHOICE, false, 0, 0, onoff_choices,
	 "/special [on|off]",
	 "typed <|im_start|> etc.: control tokens (on) or text (off, default)"},
	{"json", SLASH_JSON, SLASH_ARG_FILE, false, 0, 0, NULL, "/json [on|off|FILE]",
	 "hold the answers to one JSON object each, or to the JSON Schema in FILE"},
	{"temp", SLASH_TEMP, SLASH_ARG_NUMBER, false, 0, 100, NULL, "/temp [T]",
	 "sampling temperature (0 = greedy)"},
	{"top-k", SLASH_TOP_K, SLASH_ARG_INT, false, 0, SAMP_MAX_TOP_K, NULL, "/top-k [K]",
	 "keep the K most likely tokens (0 = all)"},
	{"top-p", SLASH_TOP_P, SLASH_ARG_NUMBER, false, 0, 1, NULL, "/top-p [P]",
	 "nucleus sampling threshold"},
	{"min-p", SLASH_MIN_P, SLASH_ARG_NUMBER, false, 0, 1, NULL, "/min-p [P]",
	 "drop tokens below P x the top probability"},
	{"presence", SLASH_PRESENCE, SLASH_ARG_NUMBER, false, -2, 2, NULL, "/presence [X]",
	 "subtract X from tokens the answer holds"},
	{"frequency", SLASH_FREQUENCY, SLASH_ARG_NUMBER, false, -2, 2, NULL, "/frequency [X]",
	 "subtract X per time a token is in the answer"},
	{"repeat", SLASH_REPEAT, SLASH_ARG_NUMBER, false, 0.01, 10, NULL, "/repeat [X]",
	 "repetition penalty (1 = off)"},
	{"seed", SLASH_SEED, SLASH_ARG_INT, false, 0, 9007199254740992.0, NULL, "/seed [N]",
	 "random seed (same seed, same text)"},
	{"greedy", SLASH_GREEDY, SLASH_ARG_CHOICE, false, 0, 0, onoff_choices, "/greedy [on|off]",
	 "always take the most likely token (toggles without argument)"},
	{"sampling", SLASH_SAMPLING, SLASH_ARG_NONE, false, 0, 0, NULL, "/sampling",
	 "show every sampling setting"},
	{"system", SLASH_SYSTEM, SLASH_ARG_TEXT, false, 0, 0, NULL, "/system [TEXT|-]",
	 "show, set or (with -) remove the system prompt"},
	{"clear", SLASH_CLEAR, SLASH_ARG_NONE, false, 0, 0, NULL, "/clear",
	 "start over (keeps the system prompt)"},
	{"retry", SLASH_RETRY, SLASH_ARG_NONE, false, 0, 0, NULL, "/retry",
	 "regenerate the last answer"},
	{"edit", SLASH_EDIT, SLASH_ARG_NONE, false, 0, 0, NULL, "/edit",
	 "take back the last message to edit it"},
	{"undo", SLASH_UNDO, SLASH_ARG_NONE, false, 0, 0, NULL, "/undo",
	 "remove the last message and its answer"},
	{"save", SLASH_SAVE, SLASH_ARG_FILE, true, 0, 0, NULL, "/save FILE",
	 "save the conversation as JSON"},
	{"copy", SLASH_COPY, SLASH_ARG_INT, false, 1, 999, NULL, "/copy [N]",
	 "the last answer (or its Nth code block) to the terminal's clipboard"},
	{"load", SLASH_LOAD, SLASH_ARG_FILE, true, 0, 0, NULL, "/load FILE",
	 "load a conversation saved with /save"},
	{"ctx", SLASH_CTX, SLASH_ARG_NONE, false, 0, 0, NULL, "/ctx",
	 "context used and free, in tokens"},
	{"stats", SLASH_STATS, SLASH_ARG_NONE, false, 0, 0, NULL, "/stats",
	 "last answer's speed, memory, the end of the rendered prompt"},
	{"debug", SLASH_DEBUG, SLASH_ARG_CHOICE, false, 0, 0, debug_choices,
	 "/debug [on|off|attention|memory|probs]",
	 "toggle the debug pane (attention, memory, token probabilities)"},
	{"quit", SLASH_QUIT, SLASH_ARG_NONE, false, 0, 0, NULL, "/quit",
	 "leave (the conversation is saved)"},
};
const size_t slash_table_len = sizeof slash_table / sizeof slash_table[0];

/* Whether a whole number, written as digits after an optional sign, is above hi,
 * compared as digits: as a double, 2^53 + 1 rounds to 2^53 and would pass the seed's
 * bound. */
static bool digits_above(const char *arg, double hi)
{
	char lim[32];
	snprintf(lim, sizeof lim, "%.0f", hi);
	if (arg[0] == '-')
		return false;
	arg += arg[0] == '+';
	while (arg[0] == '0' && arg[1])
		arg++;
	size_t n = strlen(arg), m = strlen(lim);
	return n != m ? n > m : strcmp(arg, lim) > 0;
}

/* Digits after an optional sign: how a whole number is written ("2.0" and "1e3" are
 * not, so that none is rounded on the way). */
static bool whole_digits(const char *arg)
{
	arg += arg[0] == '+' || arg[0] == '-';
	return arg[0] && !arg[strspn(arg, "0123456789")];
}

bool slash_is_command(const char *line)
{
	return line[0] == '/' && line[1] != '/' &&
	       (line[1] == '\0' || !isspace((unsigned char)line[1]));
}

const char *slash_unescape(const char *line)
{
	return line[0] == '/' && line[1] == '/' ? line + 1 : line;
}

const struct slash_cmd *slash_find(const char *name)
{
	for (size_t i = 0; i < slash_table_len; i++)
		if (!strcmp(slash_table[i].name, name))
			return &slash_table[i];
	return NULL;
}

/* Exact name, else a unique prefix. */
static const struct slash_cmd *lookup(const char *name, size_t len, int *matches)
{
	const struct slash_cmd *found = NULL;
	*matches = 0;
	for (size_t i = 0; i < slash_table_len; i++) {
		if (strncmp(slash_table[i].name, name, len))
			continue;
		if (strlen(slash_table[i].name) == len) {
			*matches = 1;
			return &slash_table[i];
		}
		found = &slash_table[i];
		++*matches;
	}
	return *matches == 1 ? found : NULL;
}

char *slash_expand_home(const char *s, const char *home)
{
	if (s[0] == '~' && s[1] == '/' && home && *home) {
		size_t n = strlen(home) + strlen(s);
		char *p = malloc(n);
		if (p)
			snprintf(p, n, "%s%s", home, s + 1);
		return p;
	}
	return strdup(s);
}

static int parse_arg(const struct slash_cmd *cmd, const char *arg, struct slash_call *out,
		     char *err, size_t errsz)
{
	char *end;
	switch (cmd->arg) {
	case SLASH_ARG_NONE: snprintf(err, errsz, "/%s takes no argument", cmd->name); return -1;
	case SLASH_ARG_CHOICE:
		for (int i = 0; cmd->choices[i]; i++)
			if (!strcmp(cmd->choices[i], arg)) {
				out->choice = i;
				return 0;
			}
		snprintf(err, errsz, "/%s: '%.40s' is not one of: %s", cmd->name, arg,
			 cmd->usage + strlen(cmd->name) + 2);
		return -1;
	case SLASH_ARG_NUMBER:
	case SLASH_ARG_INT:
		errno = 0;
		out->num = strtod(arg, &end);
		/* decimal only: strtod also reads "0x10" (16) and "1p3" */
		if (errno || end == arg || *end || !isfinite(out->num) || strpbrk(arg, "xXpP") ||
		    (cmd->arg == SLASH_ARG_INT && !whole_digits(arg))) {
			snprintf(err, errsz, "/%s: '%.40s' is not a %s", cmd->name, arg,
				 cmd->arg == SLASH_ARG_INT ? "whole number" : "number");
			return -1;
		}
		if (out->num < cmd->lo || out->num > cmd->hi ||
		    (cmd->arg == SLASH_ARG_INT && digits_above(arg, cmd->hi))) {
			/* whole numbers in full: %g writes the seed's bound as 9.0072e+15 */
			if (cmd->arg == SLASH_ARG_INT) /* as typed: a double rounds 20 digits */
				snprintf(err, errsz, "/%s: %.40s is out of range [%.0f, %.0f]",
					 cmd->name, arg, cmd->lo, cmd->hi);
			else
				snprintf(err, errsz, "/%s: %g is out of range [%g, %g]", cmd->name,
					 out->num, cmd->lo, cmd->hi);
			return -1;
		}
		return 0;
	case SLASH_ARG_TEXT: out->text = strdup(arg); break;
	case SLASH_ARG_FILE: {
		/* a name in quotes, as a shell would take it ("my chat.json") */
		size_t n = strlen(arg);
		bool quoted = n >= 2 && (arg[0] == '"' || arg[0] == '\'') && arg[n - 1] == arg[0];
		out->text = quoted ? strndup(arg + 1, n - 2) : strdup(arg);
		break;
	}
	}
	if (!out->text) {
		snprintf(err, errsz, "out of memory");
		return -1;
	}
	return 0;
}

int slash_parse(const char *line, struct slash_call *out, char *err, size_t errsz)
{
	memset(out, 0, sizeof *out);
	if (!slash_is_command(line)) {
		snprintf(err, errsz, "not a command");
		return -1;
	}
	const char *name = line + 1;
	size_t len = strcspn(name, " \t\n");
	if (len == 1 && name[0] == '?')
		name = "help", len = 4;
	if (len == 0) {
		snprintf(err, errsz,
			 "a command's name follows / (try /help; // starts a message "
			 "with /)");
		return -1;
	}
	int matches;
	const struct slash_cmd *cmd = lookup(name, len, &matches);
	if (!cmd && matches > 1) { /* name the candidates: "/t is ambiguous: /think, /temp, ..." */
		int n = snprintf(err, errsz, "/%.*s is ambiguous:", (int)len, name);
		for (size_t i = 0, k = 0; i < slash_table_len && n > 0 && (size_t)n < errsz; i++)
			if (!strncmp(slash_table[i].name, name, len))
				n += snprintf(err + n, errsz - (size_t)n, "%s /%s", k++ ? "," : "",
					      slash_table[i].name);
		return -1;
	}
	if (!cmd) {
		snprintf(err, errsz, "unknown command /%.*s (try /help)",
			 (int)(len > 40 ? 40 : len), name);
		return -1;
	}
	out->cmd = cmd;
	const char *arg = name + len;
	while (*arg == ' ' || *arg == '\t')
		arg++;
	/* Trailing blanks are not part of a value (but stay in free text). */
	size_t alen = strlen(arg);
	if (cmd->arg != SLASH_ARG_TEXT)
		while (alen && isspace((unsigned char)arg[alen - 1]))
			alen--;
	if (alen == 0) {
		if (cmd->arg_required) {
			snprintf(err, errsz, "%s: argument missing", cmd->usage);
			return -1;
		}
		return 0;
	}
	char *a = strndup(arg, alen);
	if (!a) {
		snprintf(err, errsz, "out of memory");
		return -1;
	}
	out->has_arg = true;
	int rc = parse_arg(cmd, a, out, err, errsz);
	free(a);
	if (rc)
		slash_call_free(out);
	return rc;
}

void slash_call_free(struct slash_call *c)
{
	free(c->text);
	c->text = NULL;
}

/* One row of the help: "  NAME  TEXT", TEXT in one column for every row but those
 * whose NAME is too long for its column. Returns the bytes written. */
static size_t help_row(char *s, size_t cap, const char *name, size_t name_n, const char *text,
		       size_t text_n)
{
	enum { COL = 34 };
	int k = snprintf(s, cap, "  %-*.*s %s%.*s\n", COL, (int)name_n, name,
			 name_n < COL ? "" : " ", (int)text_n, text);
	return k < 0 ? 0 : (size_t)k;
}

char *slash_help(const char *keys)
{
	size_t cap = 8192 + (keys ? 2 * strlen(keys) : 0), n = 0;
	char *s = malloc(cap);
	if (!s)
		return NULL;
	n += snprintf(s + n, cap - n, "commands (a unique prefix works, e.g. /sam):\n");
	for (size_t i = 0; i < slash_table_len && n < cap; i++)
		n += help_row(s + n, cap - n, slash_table[i].usage, strlen(slash_table[i].usage),
			      slash_table[i].help, strlen(slash_table[i].help));
	/* the keys: "KEY\tTEXT" lines as rows like the commands', others as they are */
	for (const char *p = keys; p && *p && n < cap;) {
		size_t len = strcspn(p, "\n");
		const char *tab = memchr(p, '\t', len);
		if (tab)
			n += help_row(s + n, cap - n, p, (size_t)(tab - p), tab + 1,
				      len - (size_t)(tab - p) - 1);
		else
			n += (size_t)snprintf(s + n, cap - n, "%.*s\n", (int)len, p);
		p += len + (p[len] == '\n');
	}
	if (n >= cap)
		s[cap - 1] = 0;
	return s;
}

char *slash_complete_name(const char *prefix, int state)
{
	static size_t next;
	if (state == 0)
		next = 0;
	if (prefix[0] != '/')
		return NULL;
	size_t len = strlen(prefix + 1);
	while (next < slash_table_len) {
		const struct slash_cmd *c = &slash_table[next++];
		if (!strncmp(c->name, prefix + 1, len)) {
			char *s = malloc(strlen(c->name) + 2);
			if (s)
				sprintf(s, "/%s", c->name);
			return s;
		}
	}
	return NULL;
}

static const struct slash_cmd *line_cmd(const char *cmd_line)
{
	if (!slash_is_command(cmd_line))
		return NULL;
	int matches;
	return lookup(cmd_line + 1, strcspn(cmd_line + 1, " \t"), &matches);
}

char *slash_complete_arg(const char *cmd_line, const char *prefix, int state)
{
	static int next;
	const struct slash_cmd *c = line_cmd(cmd_line);
	if (state == 0)
		next = 0;
	if (!c || c->arg != SLASH_ARG_CHOICE)
		return NULL;
	size_t len = strlen(prefix);
	while (c->choices[next]) {
		const char *w = c->choices[next++];
		if (!strncmp(w, prefix, len))
			return strdup(w);
	}
	return NULL;
}

bool slash_wants_file(const char *cmd_line)
{
	const struct slash_cmd *c = line_cmd(cmd_line);
	return c && c->arg == SLASH_ARG_FILE;
}
