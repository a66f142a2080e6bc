/* cli.c — parsing of the options every subcommand shares. */
#include "src/cli/cli.h"
#include "src/session/sampler.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

const char cli_common_help[] =
	"  -m, --model MODEL        model directory or Hugging Face repo id\n"
	"      --backend B          auto, cpu or cuda (default auto)\n"
	"      --threads N          CPU threads (default: all cores)\n"
	"      --ctx N              context size in tokens\n"
	"  -n, --max-new N          new tokens per answer\n"
	"      --temp T             sampling temperature (0 = greedy)\n"
	"      --top-k K            keep the K most likely tokens (0 = all)\n"
	"      --top-p P            nucleus sampling threshold\n"
	"      --min-p P            drop tokens below P x the top probability\n"
	"      --presence-penalty X subtract X from logits of tokens already present\n"
	"      --repeat-penalty X   divide positive logits of repeated tokens by X\n"
	"      --seed N             random seed (same seed, same text)\n"
	"      --greedy             always take the most likely token\n";

void cli_common_init(struct cli_common *c)
{
	memset(c, 0, sizeof *c);
	c->backend = "auto";
}

void cli_sampling(const struct cli_common *c, struct samp_params *p)
{
	struct samp_params user = {
		.temperature = c->temp,
		.top_k = c->top_k,
		.top_p = c->top_p,
		.min_p = c->min_p,
		.presence_penalty = c->presence_penalty,
		.repetition_penalty = c->repeat_penalty,
		.seed = c->seed,
		.greedy = c->greedy,
	};
	samp_params_override(p, &user, c->set);
}

void cli_notice(const char *msg)
{
	fprintf(stderr, "qwenchat: %s\n", msg);
}

void cli_upload_progress(size_t done_bytes, size_t total_bytes)
{
	if (!isatty(STDERR_FILENO))
		return;
	fprintf(stderr, "\rqwenchat: uploading weights %.1f / %.1f GB%s", done_bytes / 1e9,
		total_bytes / 1e9, done_bytes >= total_bytes ? "\n" : "");
	fflush(stderr);
}

void cli_error(const char *fmt, ...)
{
	va_list ap;
	fputs("qwenchat: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

int cli_usage(const char *cmd, const char *fmt, ...)
{
	va_list ap;
	fputs("qwenchat: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, " (try 'qwenchat %s --help')\n", cmd);
	return EXIT_USAGE;
}

int cli_parse_long(const char *name, const char *s, long lo, long hi, long *out)
{
	char *end;
	errno = 0;
	long v = strtol(s, &end, 10);
	if (errno || end == s || *end) {
		cli_error("--%s: '%s' is not a whole number", name, s);
		return -1;
	}
	if (v < lo || v > hi) {
		cli_error("--%s: %ld is out of range [%ld, %ld]", name, v, lo, hi);
		return -1;
	}
	*out = v;
	return 0;
}

int cli_parse_double(const char *name, const char *s, double lo, double hi, double *out)
{
	char *end;
	errno = 0;
	double v = strtod(s, &end);
	if (errno || end == s || *end || !isfinite(v)) {
		cli_error("--%s: '%s' is not a finite number", name, s);
		return -1;
	}
	if (v < lo || v > hi) {
		cli_error("--%s: %g is out of range [%g, %g]", name, v, lo, hi);
		return -1;
	}
	*out = v;
	return 0;
}

int cli_common_opt(struct cli_common *c, int code, const char *arg)
{
	long l;
	switch (code) {
	case 'm': c->model = arg; return 1;
	case CLI_OPT_BACKEND:
		if (strcmp(arg, "auto") && strcmp(arg, "cpu") && strcmp(arg, "cuda")) {
			cli_error("--backend: '%s' is not one of auto, cpu, cuda", arg);
			return -1;
		}
		c->backend = arg;
		return 1;
	case CLI_OPT_THREADS:
		if (cli_parse_long("threads", arg, 1, 1024, &l))
			return -1;
		c->threads = (int)l;
		return 1;
	case CLI_OPT_CTX:
		if (cli_parse_long("ctx", arg, 1, 1L << 24, &l))
			return -1;
		c->ctx = (int)l;
		c->set |= CLI_SET_CTX;
		return 1;
	case 'n':
		if (cli_parse_long("max-new", arg, 0, 1L << 24, &l))
			return -1;
		c->max_new = (int)l;
		c->set |= CLI_SET_MAX_NEW;
		return 1;
	case CLI_OPT_TEMP:
		c->set |= SAMP_SET_TEMP;
		return cli_parse_double("temp", arg, 0, 100, &c->temp) ? -1 : 1;
	case CLI_OPT_TOP_K:
		if (cli_parse_long("top-k", arg, 0, 1L << 24, &l))
			return -1;
		c->top_k = (int)l;
		c->set |= SAMP_SET_TOP_K;
		return 1;
	case CLI_OPT_TOP_P:
		c->set |= SAMP_SET_TOP_P;
		return cli_parse_double("top-p", arg, 0, 1, &c->top_p) ? -1 : 1;
	case CLI_OPT_MIN_P:
		c->set |= SAMP_SET_MIN_P;
		return cli_parse_double("min-p", arg, 0, 1, &c->min_p) ? -1 : 1;
	case CLI_OPT_PRESENCE:
		c->set |= SAMP_SET_PRESENCE;
		return cli_parse_double("presence-penalty", arg, -2, 2, &c->presence_penalty) ? -1
											      : 1;
	case CLI_OPT_REPEAT:
		c->set |= SAMP_SET_REPEAT;
		return cli_parse_double("repeat-penalty", arg, 0.01, 10, &c->repeat_penalty) ? -1
											     : 1;
	case CLI_OPT_SEED: {
		char *end;
		errno = 0;
		unsigned long long v = strtoull(arg, &end, 10);
		if (errno || end == arg || *end || arg[0] == '-') {
			cli_error("--seed: '%s' is not a non-negative whole number", arg);
			return -1;
		}
		c->seed = v;
		c->set |= SAMP_SET_SEED;
		return 1;
	}
	case CLI_OPT_GREEDY:
		c->greedy = true;
		c->set |= SAMP_SET_GREEDY;
		return 1;
	}
	return 0;
}
