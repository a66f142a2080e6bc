/* cli.c — the subcommand skeleton: one option table per command (shared groups plus
 * its own), parsed with getopt_long, its --help generated from the same table. What
 * the parsed options set up (the engine, the model, the remote backend): cli_setup.c. */
#include "src/cli/cli.h"
#include "engine/ftype.h"
#include "src/base/err.h"
#include "src/base/strbuf.h"
#include "src/base/term.h"
#include "src/cli/env.h"
#include "src/cli/hint.h"
#include "src/cli/wrap.h"
#include "src/remote/remote.h"

#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Codes of the shared options without a letter, above every command's own. */
enum {
	K_BACKEND = 0x1000,
	K_QUANT,
	K_EXACT,
	K_THREADS,
	K_CTX,
	K_TEMP,
	K_TOP_K,
	K_TOP_P,
	K_MIN_P,
	K_PRESENCE,
	K_FREQUENCY,
	K_REPEAT,
	K_SEED,
	K_GREEDY,
	K_URL,
	K_API_KEY,
	K_API_KEY_FILE,
	K_CONNECT_TIMEOUT,
	K_TIMEOUT,
};

static const struct {
	unsigned group;
	struct cli_opt opt;
} shared[] = {
	{CLI_MODEL, {"model", 'm', "MODEL", "model directory, .gguf file or Hugging Face repo id"}},
	{CLI_BACKEND,
	 {"backend", K_BACKEND, "B",
	  "auto, cpu or cuda (default auto); remote: a server\n(chat and run, with --url)"}},
	{CLI_BACKEND,
	 {"quant", K_QUANT, "T",
	  "quantize the weights in memory as they load in one\n"
	  "of llama.cpp's mixes: " ENG_FTYPE_QUANT_NAMES}},
	{CLI_BACKEND,
	 {"exact", K_EXACT, NULL,
	  "prefill with fp32 activations, the exact reference\n"
	  "(default: bf16 activations where the CPU has AVX-512\n"
	  "BF16, ~1.7x faster, logits ~1e-3 of the largest off,\n"
	  "at most ~1e-2; int8 ones over quantized weights with\n"
	  "AVX2 alone, 1.3-1.7x faster, ~2e-2 relative)"}},
	{CLI_THREADS,
	 {"threads", K_THREADS, "N", "CPU threads (default and at most: the CPUs online)"}},
	{CLI_CTX,
	 {"ctx", K_CTX, "N",
	  "context size in tokens (default: the model's maximum,\n"
	  "at most 32768, on the CPU at most what half the\n"
	  "available memory holds of KV cache)"}},
	{CLI_MAX_NEW, {"max-new", 'n', "N", "new tokens per answer"}},
	{CLI_SAMPLING, {"temp", K_TEMP, "T", "sampling temperature (0 = greedy)"}},
	{CLI_SAMPLING, {"top-k", K_TOP_K, "K", "keep the K most likely tokens (0 = all)"}},
	{CLI_SAMPLING, {"top-p", K_TOP_P, "P", "nucleus sampling threshold"}},
	{CLI_SAMPLING, {"min-p", K_MIN_P, "P", "drop tokens below P x the top probability"}},
	{CLI_SAMPLING,
	 {"presence-penalty", K_PRESENCE, "X",
	  "subtract X from the logits of tokens the answer holds"}},
	{CLI_SAMPLING,
	 {"frequency-penalty", K_FREQUENCY, "X", "subtract X per time a token is in the answer"}},
	{CLI_SAMPLING,
	 {"repeat-penalty", K_REPEAT, "X", "divide positive logits of repeated tokens by X"}},
	{CLI_SAMPLING,
	 {"seed", K_SEED, "N",
	  "random seed (default: a random one). The same seed, prompt\n"
	  "and settings give the same text on the CPU backend, from the\n"
	  "KV cache or not, unless the cache holds tokens the model\n"
	  "wrote (a follow-up turn): see the manual"}},
	{CLI_SAMPLING,
	 {"greedy", K_GREEDY, NULL,
	  "always take the most likely token (a temperature chosen with it\n"
	  "too: serve's requests that set one sample)"}},
	{CLI_REMOTE,
	 {"url", K_URL, "URL",
	  "the remote backend: an OpenAI-compatible server's API base,\n"
	  "http://HOST:PORT/v1 (vLLM, SGLang, llama-server, ollama,\nqwenchat serve); with chat "
	  "and run, -m "
	  "names a model it serves"}},
	{CLI_REMOTE,
	 {"api-key", K_API_KEY, "KEY",
	  "the server's API key (other users can see it with ps:\nprefer OPENAI_API_KEY or "
	  "--api-key-file)"}},
	{CLI_REMOTE,
	 {"api-key-file", K_API_KEY_FILE, "FILE", "the API key, from FILE's first line"}},
	{CLI_REMOTE,
	 {"connect-timeout", K_CONNECT_TIMEOUT, "S",
	  "give up connecting after S seconds (default 10)"}},
	{CLI_REMOTE,
	 {"timeout", K_TIMEOUT, "S",
	  "give up when the server sends nothing for S seconds\n(default 120)"}},
};
#define N_SHARED (sizeof shared / sizeof shared[0])

static const struct cli_opt help_opt = {"help", 'h', NULL, "show this help"};

/* ---- --help ------------------------------------------------------------------ */

enum { HELP_COLUMN = 28 };

static void help_line(const struct cli_opt *o, FILE *f)
{
	char left[64];
	int n;
	if (o->key > 0 && o->key < 128)
		n = snprintf(left, sizeof left, "  -%c, --%s%s%s", o->key, o->name,
			     o->arg ? " " : "", o->arg ? o->arg : "");
	else
		n = snprintf(left, sizeof left, "      --%s%s%s", o->name, o->arg ? " " : "",
			     o->arg ? o->arg : "");
	fputs(left, f);
	if (n >= HELP_COLUMN - 1)
		fprintf(f, "\n%*s", HELP_COLUMN, "");
	else
		fprintf(f, "%*s", HELP_COLUMN - n, "");
	wrap_paragraph(f, o->help, HELP_COLUMN, HELP_COLUMN);
	fputc('\n', f);
}

/* A shared option as cmd's --help describes it: with cmd's own wording, if it has one. */
static struct cli_opt shared_as_worded(const struct cli_command *cmd, const struct cli_opt *o)
{
	struct cli_opt worded = *o;
	for (const struct cli_opt *w = cmd->shared_help; w && w->name; w++)
		if (!strcmp(w->name, o->name))
			worded.help = w->help;
	return worded;
}

/* Prints the command's --help to f. */
static void cli_help(const struct cli_command *cmd, FILE *f)
{
	struct strbuf usage = {0};
	sb_printf(&usage, "usage: qwenchat %s %s\n", cmd->name, cmd->synopsis);
	if (usage.oom)
		fprintf(f, "usage: qwenchat %s %s\n", cmd->name, cmd->synopsis);
	else
		wrap_lines(f, usage.p, (int)strlen("usage: "));
	free(usage.p);
	fputc('\n', f);
	if (cmd->about) {
		wrap_lines(f, cmd->about, 0);
		fputc('\n', f);
	}
	fputs("options:\n", f);
	for (const struct cli_opt *o = cmd->opts; o && o->name; o++)
		help_line(o, f);
	for (size_t i = 0; i < N_SHARED; i++) {
		if (!(cmd->groups & shared[i].group))
			continue;
		struct cli_opt o = shared_as_worded(cmd, &shared[i].opt);
		help_line(&o, f);
	}
	help_line(&help_opt, f);
	if (cmd->notes) {
		fputc('\n', f);
		wrap_lines(f, cmd->notes, 0);
	}
}

/* ---- messages and numbers ------------------------------------------------------ */

/* Notices held back by cli_notices_hold, each with its NUL. */
static struct strbuf g_held;
static bool g_holding;

static void drop_held(void)
{
	free(g_held.p);
	g_held = (struct strbuf){0};
	g_holding = false;
}

void cli_notices_hold(void)
{
	g_holding = true;
}

void cli_notices_flush(void)
{
	struct strbuf held = g_held;
	g_held = (struct strbuf){0};
	g_holding = false;
	for (size_t i = 0; i < held.n; i += strlen(held.p + i) + 1)
		cli_error("%s", held.p + i);
	free(held.p);
}

void cli_notice(const char *msg)
{
	if (g_holding) {
		sb_put(&g_held, msg, strlen(msg) + 1);
		if (!g_held.oom)
			return;
		cli_notices_flush(); /* what was kept, then this one */
	}
	cli_error("%s", msg); /* a notice is one line, shown as safely as an error */
}

/* Messages quote file names, arguments, server answers and file contents: whatever
 * escape sequences those hold are shown, never obeyed, and an error stays one line (a
 * quoted newline shows as ^J, a carriage return as ^M). */
static void say_error(const char *fmt, va_list ap, const char *tail)
{
	if (g_holding) /* an error first: it is the one line said */
		drop_held();
	char *msg = NULL;
	if (vasprintf(&msg, fmt, ap) < 0)
		msg = NULL;
	struct strbuf b = {0};
	if (msg)
		term_safe_line(&b, msg, strlen(msg));
	fprintf(stderr, "qwenchat: %s%s\n",
		!msg || b.oom ? "(out of memory)"
		: b.p         ? b.p
			      : "",
		tail);
	free(b.p);
	free(msg);
}

void cli_error(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	say_error(fmt, ap, "");
	va_end(ap);
}

int cli_usage(const char *cmd, const char *fmt, ...)
{
	char tail[64];
	snprintf(tail, sizeof tail, " (try 'qwenchat %s --help')", cmd);
	va_list ap;
	va_start(ap, fmt);
	say_error(fmt, ap, tail);
	va_end(ap);
	return EXIT_USAGE;
}

int cli_unhandled(const struct cli_command *cmd, int key)
{
	const char *name = "?";
	for (const struct cli_opt *o = cmd->opts; o && o->name; o++)
		if (o->key == key)
			name = o->name;
	cli_error("internal error: 'qwenchat %s' does not handle its option --%s (key %d)",
		  cmd->name, name, key);
	return -1;
}

int cli_parse_long(const char *name, const char *s, long lo, long hi, long *out)
{
	char *end;
	errno = 0;
	long v = strtol(s, &end, 10);
	/* strtol skips leading blanks, where a trailing one is refused: " 5" is not "5" */
	if ((errno && errno != ERANGE) || end == s || *end || isspace((unsigned char)*s)) {
		cli_error("--%s: '%s' is not a whole number", name, s);
		return -1;
	}
	if (errno == ERANGE) { /* beyond a long: beyond any range here too */
		cli_error("--%s: %s is out of range [%ld, %ld]", name, s, lo, hi);
		return -1;
	}
	if (v < lo || v > hi) {
		cli_error("--%s: %ld is out of range [%ld, %ld]", name, v, lo, hi);
		return -1;
	}
	*out = v;
	return 0;
}

/* Parses a finite double in [lo, hi]; NaN and infinities are refused. */
static int cli_parse_double(const char *name, const char *s, double lo, double hi, double *out)
{
	char *end;
	errno = 0;
	double v = strtod(s, &end);
	bool overflow = errno == ERANGE && fabs(v) >= 1;
	/* an underflow (1e-400) is the value strtod rounded it to; the range judges it.
	 * Decimal only: strtod also reads "0x10" (16) and "1p3". */
	if ((errno && errno != ERANGE) || end == s || *end || (!overflow && !isfinite(v)) ||
	    strpbrk(s, "xXpP") || isspace((unsigned char)*s)) {
		cli_error("--%s: '%s' is not a finite decimal number", name, s);
		return -1;
	}
	if (overflow || v < lo || v > hi) {
		cli_error("--%s: %s is out of range [%g, %g]", name, s, lo, hi);
		return -1;
	}
	*out = v;
	return 0;
}

/* The largest seed: 2^53, as /seed and train's --seed take (a JSON number any reader
 * holds exactly, as the saved conversation records it). */
#define SEED_MAX 9007199254740992ULL

static int parse_seed(const char *arg, uint64_t *out)
{
	char *end;
	errno = 0;
	unsigned long long v = strtoull(arg, &end, 10);
	if ((errno && errno != ERANGE) || end == arg || *end || arg[0] == '-' ||
	    isspace((unsigned char)arg[0])) { /* strtoull takes " -1" as 2^64 - 1 */
		cli_error("--seed: '%s' is not a non-negative whole number", arg);
		return -1;
	}
	if (errno == ERANGE || v > SEED_MAX) {
		cli_error("--seed: %s is out of range [0, %llu]", arg, SEED_MAX);
		return -1;
	}
	*out = v;
	return 0;
}

/* ---- the shared options ---------------------------------------------------------- */

/* A sampling option's value into c->sampling; 0 or -1. */
static int sampling_opt(struct cli_common *c, int key, const char *arg)
{
	struct samp_params *p = &c->sampling;
	long l;
	switch (key) {
	case K_TEMP:
		c->set |= SAMP_SET_TEMP;
		return cli_parse_double("temp", arg, 0, 100, &p->temperature);
	case K_TOP_K:
		if (cli_parse_long("top-k", arg, 0, 1L << 24, &l))
			return -1;
		p->top_k = (int)l;
		c->set |= SAMP_SET_TOP_K;
		return 0;
	case K_TOP_P:
		c->set |= SAMP_SET_TOP_P;
		return cli_parse_double("top-p", arg, 0, 1, &p->top_p);
	case K_MIN_P:
		c->set |= SAMP_SET_MIN_P;
		return cli_parse_double("min-p", arg, 0, 1, &p->min_p);
	case K_PRESENCE:
		c->set |= SAMP_SET_PRESENCE;
		return cli_parse_double("presence-penalty", arg, -2, 2, &p->presence_penalty);
	case K_FREQUENCY:
		c->set |= SAMP_SET_FREQUENCY;
		return cli_parse_double("frequency-penalty", arg, -2, 2, &p->frequency_penalty);
	case K_REPEAT:
		c->set |= SAMP_SET_REPEAT;
		return cli_parse_double("repeat-penalty", arg, 0.01, 10, &p->repetition_penalty);
	case K_SEED: c->set |= SAMP_SET_SEED; return parse_seed(arg, &p->seed);
	case K_GREEDY:
		p->greedy = true;
		c->set |= SAMP_SET_GREEDY;
		return 0;
	}
	return -1;
}

/* The commands that run on a server, for messages. */
static const char remote_commands[] = "the remote backend works with chat, run and list";

/* A remote option's value into c; 0 or -1 (message printed). */
static int remote_opt(struct cli_common *c, int key, char *arg)
{
	long l;
	switch (key) {
	case K_URL: c->url = arg; return 0;
	case K_API_KEY: c->api_key = arg; return 0;
	case K_API_KEY_FILE: c->api_key_file = arg; return 0;
	case K_CONNECT_TIMEOUT:
		if (cli_parse_long("connect-timeout", arg, 1, REMOTE_MAX_TIMEOUT, &l))
			return -1;
		c->connect_timeout = (int)l;
		return 0;
	}
	if (cli_parse_long("timeout", arg, 1, REMOTE_MAX_TIMEOUT, &l))
		return -1;
	c->stall_timeout = (int)l;
	return 0;
}

/* One shared option's value into c; 0 or -1 (message printed). */
static int shared_opt(const struct cli_command *cmd, struct cli_common *c, int key, char *arg)
{
	long l;
	switch (key) {
	case 'm': c->model = arg; return 0;
	case K_EXACT: c->exact = true; return 0;
	case K_QUANT: {
		enum eng_ftype f;
		if (eng_ftype_parse(arg, &f) || f == ENG_FTYPE_F32 || f == ENG_FTYPE_BF16 ||
		    f == ENG_FTYPE_F16) {
			cli_error("--quant: '%s' is not one of " ENG_FTYPE_QUANT_NAMES, arg);
			return -1;
		}
		c->quant = f;
		return 0;
	}
	case K_BACKEND:
		if (!strcmp(arg, "remote") && !(cmd->groups & CLI_REMOTE)) {
			cli_error("--backend remote: 'qwenchat %s' runs on this machine, not on a "
				  "server (%s)",
				  cmd->name, remote_commands);
			return -1;
		}
		if (strcmp(arg, "auto") && strcmp(arg, "cpu") && strcmp(arg, "cuda") &&
		    strcmp(arg, "remote")) {
			cli_error("--backend: '%s' is not one of auto, cpu, cuda%s", arg,
				  cmd->groups & CLI_REMOTE ? ", remote" : "");
			return -1;
		}
		c->backend = arg;
		return 0;
	case K_THREADS:
		if (cli_parse_long("threads", arg, 1, 1024, &l))
			return -1;
		c->threads = (int)l;
		c->set |= CLI_SET_THREADS;
		return 0;
	case K_CTX:
		if (cli_parse_long("ctx", arg, cmd->min_ctx > 1 ? cmd->min_ctx : 1, 1L << 24, &l))
			return -1;
		c->ctx = (int)l;
		c->set |= CLI_SET_CTX;
		return 0;
	case 'n':
		if (cli_parse_long("max-new", arg, 0, 1L << 24, &l))
			return -1;
		c->max_new = (int)l;
		c->set |= CLI_SET_MAX_NEW;
		return 0;
	case K_URL:
	case K_API_KEY:
	case K_API_KEY_FILE:
	case K_CONNECT_TIMEOUT:
	case K_TIMEOUT: return remote_opt(c, key, arg);
	}
	return sampling_opt(c, key, arg);
}

/* ---- parsing ---------------------------------------------------------------------- */

enum { MAX_OPTS = 64 };

/* The getopt_long table and short-option string for a command. 0 or -1 (too many). */
static int build_table(const struct cli_command *cmd, struct option *lo, char *shorts)
{
	int n = 0;
	char *s = shorts;
	*s++ = ':'; /* a missing value returns ':' rather than '?' */
	const struct cli_opt *all[MAX_OPTS];
	for (const struct cli_opt *o = cmd->opts; o && o->name && n < MAX_OPTS - 2; o++)
		all[n++] = o;
	for (size_t i = 0; i < N_SHARED && n < MAX_OPTS - 2; i++)
		if (cmd->groups & shared[i].group)
			all[n++] = &shared[i].opt;
	all[n++] = &help_opt;
	for (int i = 0; i < n; i++) {
		lo[i] = (struct option){all[i]->name, all[i]->arg ? required_argument : no_argument,
					NULL, all[i]->key};
		if (all[i]->key > 0 && all[i]->key < 128) {
			*s++ = (char)all[i]->key;
			if (all[i]->arg)
				*s++ = ':';
		}
	}
	*s = '\0';
	lo[n] = (struct option){0, 0, 0, 0};
	return 0;
}

static bool is_shared(const struct cli_command *cmd, int key)
{
	for (size_t i = 0; i < N_SHARED; i++)
		if (shared[i].opt.key == key && (cmd->groups & shared[i].group))
			return true;
	return false;
}

/* The command's option with this key (its own or a shared one). */
static const struct cli_opt *find_opt(const struct cli_command *cmd, int key)
{
	for (const struct cli_opt *o = cmd->opts; o && o->name; o++)
		if (o->key == key)
			return o;
	for (size_t i = 0; i < N_SHARED; i++)
		if (shared[i].opt.key == key && (cmd->groups & shared[i].group))
			return &shared[i].opt;
	return NULL;
}

/* What an empty value of option o is, or NULL where one may be empty. An empty name of a
 * file, a directory, a model or a host names none of them (and would be taken for "not
 * given", the default model or the current directory); an empty URL or key reaches no
 * server. */
static const char *empty_value(const struct cli_opt *o)
{
	static const char *const names[] = {"MODEL", "MODEL2", "DIR", "FILE", "FILE...", "ADDR"};
	if (!o || !o->arg)
		return NULL;
	for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
		if (!strcmp(o->arg, names[i]))
			return "an empty name";
	if (!strcmp(o->arg, "URL"))
		return "an empty URL (the API base, http://HOST:PORT/v1)";
	if (!strcmp(o->arg, "KEY"))
		return "the key is empty";
	return NULL;
}

/* An option of the remote backend (given to a command that has none). */
static bool remote_option(const char *arg)
{
	static const char *const names[] = {"--url", "--api-key", "--api-key-file",
					    "--connect-timeout", "--timeout"};
	for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
		size_t n = strlen(names[i]);
		if (!strncmp(arg, names[i], n) && (arg[n] == '\0' || arg[n] == '='))
			return true;
	}
	return false;
}

/* The remote options together: --url makes the backend remote, the others need it,
 * and what only the local engine uses is refused. */
static int remote_check(const struct cli_command *cmd, struct cli_common *c)
{
	if (!(cmd->groups & CLI_REMOTE))
		return 0;
	if (c->url && !strcmp(c->backend, "auto"))
		c->backend = "remote";
	bool remote = !strcmp(c->backend, "remote");
	if (c->url && !remote)
		return cli_usage(cmd->name, "--url is the remote backend's: not with --backend %s",
				 c->backend);
	if (!remote) {
		const char *o = c->api_key           ? "--api-key"
				: c->api_key_file    ? "--api-key-file"
				: c->connect_timeout ? "--connect-timeout"
				: c->stall_timeout   ? "--timeout"
						     : NULL;
		return o ? cli_usage(cmd->name, "%s is for the remote backend (--url)", o) : 0;
	}
	const char *from = c->url ? "--url" : "OPENAI_BASE_URL";
	if (!c->url && !(c->url = cli_env_openai_base_url()))
		return cli_usage(cmd->name, "--backend remote needs --url http://HOST:PORT/v1 "
					    "(or OPENAI_BASE_URL)");
	if (remote_check_url(c->url, from))
		return cli_usage(cmd->name, "%s", err_msg());
	if (c->set & (CLI_SET_THREADS | CLI_SET_CTX) || c->quant != ENG_FTYPE_NONE || c->exact)
		return cli_usage(cmd->name,
				 "%s does not apply to the remote backend: the server "
				 "runs the model",
				 c->set & CLI_SET_THREADS     ? "--threads"
				 : c->set & CLI_SET_CTX       ? "--ctx"
				 : c->quant != ENG_FTYPE_NONE ? "--quant"
							      : "--exact");
	if (c->api_key && c->api_key_file)
		return cli_usage(cmd->name, "--api-key and --api-key-file both give the key: use "
					    "one");
	return 0;
}

/* Whether arg ("--re", "--re=x") abbreviates two long options or more (getopt_long
 * says '?' as for an unknown one); their names, comma separated, go into out. */
static bool ambiguous(const struct option *lo, const char *arg, char *out, size_t size)
{
	if (strncmp(arg, "--", 2) != 0)
		return false;
	arg += 2;
	size_t n = strcspn(arg, "="), used = 0;
	int hits = 0;
	out[0] = '\0';
	for (; lo->name; lo++)
		if (n && !strncmp(lo->name, arg, n)) {
			int w = snprintf(out + used, size - used, "%s--%s", hits ? ", " : "",
					 lo->name);
			used = w > 0 && used + (size_t)w < size ? used + (size_t)w : used;
			hits++;
		}
	return hits > 1;
}

/* The option a "--NAME=VALUE" (or an abbreviation of NAME) given to a flag that takes
 * no value names, or NULL (getopt_long reports it as unknown). */
static const char *flag_with_value(const struct option *lo, const char *arg)
{
	if (strncmp(arg, "--", 2) != 0 || !strchr(arg, '='))
		return NULL;
	size_t n = strcspn(arg + 2, "=");
	const struct option *hit = NULL;
	int hits = 0;
	for (; lo->name; lo++)
		if (n && !strncmp(lo->name, arg + 2, n)) {
			if (strlen(lo->name) == n) { /* exact: it, whatever else it begins */
				hit = lo, hits = 1;
				break;
			}
			hit = lo, hits++;
		}
	return hits == 1 && hit->has_arg == no_argument ? hit->name : NULL;
}

/* The chat reached without naming it: its options came first ("qwenchat -m M"). */
static bool implicit_chat(const struct cli_command *cmd, char **argv)
{
	return !strcmp(cmd->name, "chat") && strcmp(argv[0], "chat") != 0;
}

/* The usage error for the unknown option bad, with what it likely meant. */
static int unknown_option(const struct cli_command *cmd, const struct option *lo, const char *bad,
			  int argc, char **argv)
{
	char said[64];
	/* a letter inside a cluster (-Zm) leaves optind on the cluster: the previous
	   argument is not the one that was wrong, optopt is */
	if (optopt > ' ' && optopt < 127 && strncmp(bad, "--", 2))
		snprintf(said, sizeof said, "-%c", optopt);
	else
		snprintf(said, sizeof said, "%s", bad);
	const char *command =
		implicit_chat(cmd, argv) ? hint_misplaced_command(lo, argc, argv) : NULL;
	if (command)
		return cli_usage(command,
				 "unknown option '%s': '%s' is a command, and comes first "
				 "('qwenchat %s ...')",
				 said, command, command);
	const char *meant = hint_option(lo, said);
	if (meant)
		return cli_usage(cmd->name, "unknown option '%s'; did you mean %s?", said, meant);
	return cli_usage(cmd->name, "unknown option '%s'", said);
}

int cli_parse(const struct cli_command *cmd, int argc, char **argv, struct cli_common *c,
	      cli_own_fn own, void *user, int *first)
{
	struct option lo[MAX_OPTS + 1];
	char shorts[2 * MAX_OPTS + 4];
	memset(c, 0, sizeof *c);
	c->backend = "auto";
	build_table(cmd, lo, shorts);
	opterr = 0;
	optind = 0;
	int key;
	while ((key = getopt_long(argc, argv, shorts, lo, NULL)) != -1) {
		const char *bad = argv[optind - 1];
		if (key == 'h') {
			cli_help(cmd, stdout);
			return CLI_DONE;
		}
		if (key == ':')
			return cli_usage(cmd->name, "%s needs a value", bad);
		if (key == '?' && remote_option(bad) && !(cmd->groups & CLI_REMOTE))
			return cli_usage(cmd->name,
					 "%s: 'qwenchat %s' runs on this machine, not on a "
					 "server (%s)",
					 bad, cmd->name, remote_commands);
		char names[512];
		if (key == '?' && ambiguous(lo, bad, names, sizeof names))
			return cli_usage(cmd->name, "option '%s' is ambiguous: %s", bad, names);
		const char *flag = key == '?' ? flag_with_value(lo, bad) : NULL;
		if (flag)
			return cli_usage(cmd->name, "--%s takes no value ('%s')", flag, bad);
		if (key == '?')
			return unknown_option(cmd, lo, bad, argc, argv);
		const char *empty = optarg && !*optarg ? empty_value(find_opt(cmd, key)) : NULL;
		if (empty)
			return cli_usage(cmd->name, "--%s: %s", find_opt(cmd, key)->name, empty);
		if (is_shared(cmd, key)) {
			if (shared_opt(cmd, c, key, optarg))
				return EXIT_USAGE;
		} else if (own && own(user, key, optarg)) {
			return EXIT_USAGE;
		}
	}
	int npos = argc - optind;
	if (npos > cmd->max_args) {
		const char *command =
			implicit_chat(cmd, argv) ? hint_misplaced_command(lo, argc, argv) : NULL;
		if (command)
			return cli_usage(command,
					 "'%s' is a command: it comes first ('qwenchat %s ...')",
					 command, command);
		return cli_usage(cmd->name, "unexpected argument '%s'",
				 argv[optind + cmd->max_args]);
	}
	if (npos < cmd->min_args)
		return cli_usage(cmd->name, "missing %s (usage: qwenchat %s %s)",
				 cmd->args ? cmd->args : "argument", cmd->name, cmd->synopsis);
	for (int i = optind; i < argc && !cmd->text_args; i++) /* names: a file, a model */
		if (!argv[i][0])
			return cli_usage(cmd->name, "argument %d is an empty name", i - optind + 1);
	if (remote_check(cmd, c))
		return EXIT_USAGE;
	if (first)
		*first = optind;
	return 0;
}

/* ---- token ids ---------------------------------------------------------------------- */

static bool id_separator(int ch)
{
	return ch == ' ' || ch == '\t' || ch == '\n' || ch == '\r' || ch == '\v' || ch == '\f' ||
	       ch == ',';
}

int cli_read_ids(FILE *f, const char *name, int32_t **ids, size_t *n)
{
	size_t cap = 0, len = 0;
	int32_t *v = NULL;
	char word[24];
	int ch, wl = 0;
	*ids = NULL;
	*n = 0;
	do {
		ch = fgetc(f);
		if (ch == '\0') { /* it would end the word for strtoll: "12\0003" read as 12 */
			free(v);
			return err_set("%s: a NUL byte at position %zu is not a token id", name,
				       len);
		}
		if (ch != EOF && !id_separator(ch)) {
			if (wl < (int)sizeof word - 1)
				word[wl++] = (char)ch;
			continue;
		}
		if (wl == 0)
			continue;
		word[wl] = '\0';
		char *end;
		errno = 0;
		long long x = strtoll(word, &end, 10);
		if (*end || errno || x < 0 || x > INT32_MAX || word[0] < '0' || word[0] > '9' ||
		    wl == (int)sizeof word - 1) {
			free(v);
			return err_set("%s: '%s' at position %zu is not a token id", name, word,
				       len);
		}
		if (len == cap) {
			size_t nc = cap ? 2 * cap : 256;
			int32_t *g = realloc(v, nc * sizeof *v);
			if (!g) {
				free(v);
				return err_set("%s: out of memory", name);
			}
			v = g;
			cap = nc;
		}
		v[len++] = (int32_t)x;
		wl = 0;
	} while (ch != EOF);
	if (ferror(f)) {
		free(v);
		return err_set("%s: read error", name);
	}
	*ids = v;
	*n = len;
	return 0;
}
