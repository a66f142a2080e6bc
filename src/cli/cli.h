/* cli.h — options shared by every subcommand, number parsing and error reporting. */
#ifndef QWENCHAT_CLI_H
#define QWENCHAT_CLI_H

#include <getopt.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Exit statuses of the command-line contract (DESIGN.md). */
enum { EXIT_OK = 0, EXIT_RUNTIME = 1, EXIT_USAGE = 2 };

/* Which settings the user gave explicitly, besides the sampling ones (SAMP_SET_* in
 * sampler.h), so that defaults and presets never override them. */
enum {
	CLI_SET_MAX_NEW = 1 << 16,
	CLI_SET_CTX = 1 << 17,
};

struct cli_common {
	const char *model;   /* -m: directory or repo id; NULL = default model */
	const char *backend; /* "auto", "cpu" or "cuda" */
	int threads;         /* 0 = all cores */
	int ctx;             /* context size in tokens; 0 = model's maximum, capped */
	int max_new;         /* -n: new tokens per answer */
	double temp, top_p, min_p, presence_penalty, repeat_penalty;
	int top_k;
	uint64_t seed;
	bool greedy;
	unsigned set; /* SAMP_SET_* and CLI_SET_* bits */
};

/* getopt_long codes of the common options; command-specific codes start at CLI_OPT_NEXT. */
enum {
	CLI_OPT_BACKEND = 0x100,
	CLI_OPT_THREADS,
	CLI_OPT_CTX,
	CLI_OPT_TEMP,
	CLI_OPT_TOP_K,
	CLI_OPT_TOP_P,
	CLI_OPT_MIN_P,
	CLI_OPT_PRESENCE,
	CLI_OPT_REPEAT,
	CLI_OPT_SEED,
	CLI_OPT_GREEDY,
	CLI_OPT_NEXT = 0x200
};

/* Paste into a struct option array (before the terminating zero entry). The short
 * options -m MODEL and -n MAX_NEW are handled by cli_common_opt too: add "m:n:" to
 * the optstring. */
#define CLI_COMMON_LONGOPTS                                                                       \
	{"model", required_argument, 0, 'm'}, {"backend", required_argument, 0, CLI_OPT_BACKEND}, \
		{"threads", required_argument, 0, CLI_OPT_THREADS},                               \
		{"ctx", required_argument, 0, CLI_OPT_CTX},                                       \
		{"max-new", required_argument, 0, 'n'},                                           \
		{"temp", required_argument, 0, CLI_OPT_TEMP},                                     \
		{"top-k", required_argument, 0, CLI_OPT_TOP_K},                                   \
		{"top-p", required_argument, 0, CLI_OPT_TOP_P},                                   \
		{"min-p", required_argument, 0, CLI_OPT_MIN_P},                                   \
		{"presence-penalty", required_argument, 0, CLI_OPT_PRESENCE},                     \
		{"repeat-penalty", required_argument, 0, CLI_OPT_REPEAT},                         \
		{"seed", required_argument, 0, CLI_OPT_SEED},                                     \
	{                                                                                         \
		"greedy", no_argument, 0, CLI_OPT_GREEDY                                          \
	}

/* Defaults: backend "auto", everything else unset/zero. */
void cli_common_init(struct cli_common *c);

/* Handles one getopt_long result. Returns 1 when it was a common option, 0 when it
 * is not one of ours, -1 on a bad value (message already printed to stderr). */
int cli_common_opt(struct cli_common *c, int code, const char *arg);

/* The help lines for the common options, for each command's --help. */
extern const char cli_common_help[];

/* Parses a whole decimal integer in [lo, hi]; prints "qwenchat: --NAME: ..." on error. */
int cli_parse_long(const char *name, const char *s, long lo, long hi, long *out);

/* Parses a finite double in [lo, hi]; NaN and infinities are refused. */
int cli_parse_double(const char *name, const char *s, double lo, double hi, double *out);

/* The sampling settings the user gave (the SAMP_SET_* bits of c->set) copied into p. */
struct samp_params;
void cli_sampling(const struct cli_common *c, struct samp_params *p);

/* Prints "qwenchat: MSG" on stderr: the engine's notice callback (eng_new). */
void cli_notice(const char *msg);

/* The weight upload's progress (eng_options.progress): on a terminal, one stderr
 * line rewritten in place ("uploading weights 3.1 / 16.4 GB"), ended at the end;
 * nothing when stderr is not a terminal. */
void cli_upload_progress(size_t done_bytes, size_t total_bytes);

/* Prints "qwenchat: MESSAGE" on stderr (one line). */
void cli_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Prints a usage error plus "try 'qwenchat CMD --help'" and returns EXIT_USAGE. */
int cli_usage(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif
