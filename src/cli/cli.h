/* cli.h — the skeleton every subcommand shares: its options declared in one table
 * (the shared groups it takes plus its own), parsed by one function, described by one
 * generated --help; number parsing and the one-line error messages. */
#ifndef QWENCHAT_CLI_H
#define QWENCHAT_CLI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "engine/engine.h"
#include "src/remote/remote.h"
#include "src/session/sampler.h"

/* Exit statuses of the command line (man/qwenchat.1, EXIT STATUS). */
enum { EXIT_OK = 0, EXIT_RUNTIME = 1, EXIT_USAGE = 2 };

/* The shared option groups a command may take; its --help lists exactly those. */
enum {
	CLI_MODEL = 1 << 0,    /* -m MODEL */
	CLI_BACKEND = 1 << 1,  /* --backend */
	CLI_THREADS = 1 << 2,  /* --threads */
	CLI_CTX = 1 << 3,      /* --ctx */
	CLI_SAMPLING = 1 << 4, /* --temp --top-k --top-p --min-p --presence-penalty ... --greedy */
	CLI_MAX_NEW = 1 << 5,  /* -n MAX_NEW */
	CLI_REMOTE = 1 << 6,   /* --url --api-key --api-key-file --connect-timeout --timeout,
	                        * and --backend remote */
	CLI_ENGINE = CLI_BACKEND | CLI_THREADS | CLI_CTX,
};

/* Which settings the user gave explicitly, besides the sampling ones (SAMP_SET_* in
 * sampler.h), so that defaults and presets never override them. */
enum {
	CLI_SET_MAX_NEW = 1 << 16,
	CLI_SET_CTX = 1 << 17,
	CLI_SET_THREADS = 1 << 18,
};

/* The shared options' values. */
struct cli_common {
	const char *model;           /* -m: directory or repo id; NULL = default model */
	const char *backend;         /* "auto", "cpu", "cuda" or "remote" */
	int threads;                 /* 0 = all cores */
	int ctx;                     /* context size in tokens; 0 = the engine's default */
	enum eng_ftype quant;        /* --quant; ENG_FTYPE_NONE: as stored */
	bool exact;                  /* --exact: fp32 activations in prefill */
	int max_new;                 /* -n: new tokens per answer */
	struct samp_params sampling; /* the fields whose SAMP_SET_* bit is in `set` */
	unsigned set;                /* SAMP_SET_* and CLI_SET_* bits */
	/* CLI_REMOTE: the server (--url, else $OPENAI_BASE_URL with --backend remote)
	 * and its key (--api-key, --api-key-file, else $OPENAI_API_KEY). */
	const char *url;
	char *api_key; /* points into argv: cli_remote_options copies it and blanks it there */
	const char *api_key_file;
	int connect_timeout, stall_timeout; /* seconds; 0 = the defaults */
};

/* One option of a command's own. */
struct cli_opt {
	const char *name; /* long name, without the dashes */
	int key;          /* a short option letter, or a key from CLI_OWN on */
	const char *arg;  /* the value's name in --help ("FILE"); NULL for a flag */
	const char *help; /* one line; '\n' starts another, indented under it */
};

/* The first key of a command's own options without a letter. Each command names its
 * keys in an enum of its own (enum { OPT_OUT = CLI_OWN, OPT_KV_F32 }), which its table
 * and its handler both use. */
enum { CLI_OWN = 0x100 };

/* A subcommand's interface: what --help shows and what cli_parse accepts. */
struct cli_command {
	const char *name;           /* "run" */
	const char *synopsis;       /* after "usage: qwenchat NAME " */
	const char *about;          /* what it does: a paragraph, lines ending in '\n' */
	unsigned groups;            /* CLI_* shared groups */
	const struct cli_opt *opts; /* own options, {0}-terminated; NULL when none */
	/* Shared options this command words its own way in --help, as their effect or
	 * default differs here: {name, 0, NULL, help}, {0}-terminated; NULL when none. */
	const struct cli_opt *shared_help;
	const char *notes;          /* text after the options, or NULL */
	int min_args, max_args;     /* positional arguments allowed */
	const char *args;           /* what they are, for a missing one: "FILE..." */
	bool text_args;             /* they are text (may be empty), not names */
	int min_ctx;                /* the least --ctx accepted (0: 1) */
};

/* Handles one of the command's own options (key as in its table); 0, or -1 after
 * printing a usage error (cli_usage). */
typedef int (*cli_own_fn)(void *user, int key, const char *arg);

/* What a handler returns for a key it does not handle: the command's table holds an
 * option its handler forgot, a bug in the command line, not in what the user typed.
 * Prints so, naming the option, and returns -1 (cli_parse then fails). */
int cli_unhandled(const struct cli_command *cmd, int key);

/* Parses argv (argv[0] is the command name): the shared groups into c (initialised
 * here: backend "auto", everything else unset), the command's own options through
 * own(user, ...) (NULL when the command has none). Positional arguments are left at argv[*first .. argc).
 * Returns 0 to go on; CLI_DONE after --help was printed (exit 0); EXIT_USAGE after
 * a usage error was printed. */
enum { CLI_DONE = -1 };
int cli_parse(const struct cli_command *cmd, int argc, char **argv, struct cli_common *c,
	      cli_own_fn own, void *user, int *first);

/* threads, or the CPUs online when it is more, said through notice (NULL: stderr):
 * more threads than CPUs only take turns on them. */
int cli_threads_cap(int threads, void (*notice)(const char *msg));

/* The engine options the shared groups give (backend, threads, ctx) plus the engine's
 * environment (QWENCHAT_CPU_ISA and the like, src/cli/env.h); progress is the weight
 * upload's. --threads above the CPUs online is capped, with a notice (through
 * notice, NULL: stderr). 0, or -1 after printing an error naming the variable. */
int cli_engine_options(const struct cli_common *c, struct eng_options *o,
		       void (*notice)(const char *msg));

/* True when the command runs on a server (--backend remote, or --url). */
bool cli_is_remote(const struct cli_common *c);

/* The remote backend's settings from the options and the environment: o->url points
 * into argv or the environment; o->api_key is malloc'd (free it with cli_remote_free)
 * or NULL. A key given on the command line is wiped from argv, so that ps shows it no
 * longer, and notice() gets a warning that it was visible. 0, or -1 after printing
 * the error. */
int cli_remote_options(struct cli_common *c, struct remote_options *o,
		       void (*notice)(const char *msg));
void cli_remote_free(struct remote_options *o);

/* The model -m names (or the default one) opened: resolved through the Hub settings
 * of the environment, the time it took in *seconds (may be NULL). NULL after
 * printing the error. */
struct eng_model *cli_open_model(const struct cli_common *c, double *seconds);
/* As cli_open_model, for a command that writes the file out: out naming one of the
 * model's own files is refused first (cli_check_out). "-" and the system's names
 * (/dev/stdout) are written through, never replaced, and pass. */
struct eng_model *cli_open_model_writing(const struct cli_common *c, const char *out);

/* -m as given, or the default model's name. */
const char *cli_model_name(const struct cli_common *c);

/* The sampling settings the user gave (the SAMP_SET_* bits of c->set) copied into p. */
/* A random sampling seed (getrandom), at most 2^53: the default when --seed is not
 * given, as llama.cpp and ollama do; shown so that --seed can repeat an answer. */
uint64_t cli_random_seed(void);

void cli_sampling(const struct cli_common *c, struct samp_params *p);

/* Parses a whole decimal integer in [lo, hi]; prints "qwenchat: --NAME: ..." on error. */
int cli_parse_long(const char *name, const char *s, long lo, long hi, long *out);

/* An API key from the first line of a file (--api-key-file, which keeps the key out
 * of ps), malloc'd; NULL after printing the error. */
char *cli_read_key_file(const char *path);

/* Prints "qwenchat: MSG" on stderr: the engine's notice callback (eng_new). */
void cli_notice(const char *msg);
/* From cli_notices_hold on, notices wait: cli_notices_flush says them, and an error
 * said first (cli_error, cli_usage) drops them, so that a command that fails while
 * it is still checking what it was given says one line, the error. */
void cli_notices_hold(void);
void cli_notices_flush(void);

/* Prints "qwenchat: MESSAGE" on stderr (one line). */
void cli_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Prints a usage error plus "try 'qwenchat CMD --help'" and returns EXIT_USAGE. */
int cli_usage(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Token ids from f: decimal numbers separated by white space or commas, each in
 * [0, INT32_MAX]. *ids is malloc'd (NULL when *n is 0). 0, or -1 with err_set naming
 * `name` and the offending word. */
int cli_read_ids(FILE *f, const char *name, int32_t **ids, size_t *n);

#endif
