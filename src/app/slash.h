/* slash.h — the chat's slash commands: one table shared by the curses UI and the
 * plain line mode, argument parsing and checking, help text and completion. */
#ifndef QWENCHAT_SLASH_H
#define QWENCHAT_SLASH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum slash_id {
	SLASH_HELP,
	SLASH_THINK,
	SLASH_SPECIAL,
	SLASH_JSON,
	SLASH_TEMP,
	SLASH_TOP_K,
	SLASH_TOP_P,
	SLASH_MIN_P,
	SLASH_PRESENCE,
	SLASH_FREQUENCY,
	SLASH_REPEAT,
	SLASH_SEED,
	SLASH_GREEDY,
	SLASH_SAMPLING,
	SLASH_SYSTEM,
	SLASH_CLEAR,
	SLASH_RETRY,
	SLASH_EDIT,
	SLASH_UNDO,
	SLASH_SAVE,
	SLASH_COPY,
	SLASH_LOAD,
	SLASH_CTX,
	SLASH_STATS,
	SLASH_DEBUG,
	SLASH_QUIT,
};

/* What follows the command name. */
enum slash_arg {
	SLASH_ARG_NONE,   /* nothing may follow */
	SLASH_ARG_CHOICE, /* one word of cmd->choices */
	SLASH_ARG_NUMBER, /* a finite number in [lo, hi] */
	SLASH_ARG_INT,    /* a whole number in [lo, hi] */
	SLASH_ARG_TEXT,   /* the rest of the line, as typed */
	SLASH_ARG_FILE,   /* a file name (the rest of the line; slash_expand_home for ~/) */
};

struct slash_cmd {
	const char *name; /* without the slash */
	enum slash_id id;
	enum slash_arg arg;
	bool arg_required;          /* else the command without argument shows the value */
	double lo, hi;              /* SLASH_ARG_NUMBER / SLASH_ARG_INT */
	const char *const *choices; /* SLASH_ARG_CHOICE: NULL-terminated */
	const char *usage;          /* e.g. "/temp [T]" */
	const char *help;           /* one line */
};

extern const struct slash_cmd slash_table[];
extern const size_t slash_table_len;

/* A parsed command line. */
struct slash_call {
	const struct slash_cmd *cmd;
	bool has_arg;
	double num; /* SLASH_ARG_NUMBER, SLASH_ARG_INT */
	int choice; /* SLASH_ARG_CHOICE: index into cmd->choices */
	char *text; /* SLASH_ARG_TEXT / SLASH_ARG_FILE: malloc'd (slash_call_free) */
};

/* True when the line is a command: '/' alone or followed by anything but '/' or a
 * blank ("//x" is the message "/x", see slash_unescape; "/ x" is a message). "/?" is
 * /help, as in ollama; "/" or "/1" is an error, never sent to the model. */
bool slash_is_command(const char *line);
/* A line starting with "//" is a message starting with "/": returns line + 1. */
const char *slash_unescape(const char *line);

/* Parses "/name [arg]": a unique prefix of a name is accepted ("/sam" = /sampling).
 * 0, or -1 with a one-line message in err ("unknown command /foo (try /help)",
 * "/temp: 'abc' is not a number", "/top-p: 2 is out of range [0, 1]"). */
int slash_parse(const char *line, struct slash_call *out, char *err, size_t errsz);
void slash_call_free(struct slash_call *c);

/* A file name with a leading "~/" replaced by home/ (when home is set), malloc'd;
 * NULL when out of memory. */
char *slash_expand_home(const char *path, const char *home);

/* Looks a command up by its exact name (without slash); NULL when unknown. */
const struct slash_cmd *slash_find(const char *name);

/* The /help text: one row per command ("  /temp [T]   sampling temperature", the
 * descriptions in one column), then the keys when keys is not NULL: its "KEY\tTEXT"
 * lines as rows like the commands', other lines as they are. malloc'd. */
char *slash_help(const char *keys);

/* Completion. Command names starting with prefix (which includes the '/'): call
 * with state 0, 1, 2... until NULL; returns malloc'd "/name". */
char *slash_complete_name(const char *prefix, int state);
/* Argument words of a CHOICE command (cmd_line is the text before the argument,
 * e.g. "/think "); NULL when the command takes no choice or at the end. malloc'd. */
char *slash_complete_arg(const char *cmd_line, const char *prefix, int state);
/* Whether the command named at the start of cmd_line takes a file argument. */
bool slash_wants_file(const char *cmd_line);

#endif
