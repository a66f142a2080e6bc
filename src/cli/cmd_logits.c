/* cmd_logits.c — `qwenchat logits`: token ids on stdin, float32 logits of every
 * position in a file (what the reference tests compare with transformers). */
#include <errno.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "engine/engine.h"
#include "src/base/err.h"
#include "src/base/fileio.h"
#include "src/base/proc.h"
#include "src/cli/cli.h"
#include "src/cli/commands.h"
#include "src/cli/env.h"

enum logits_key { OPT_OUT = CLI_OWN, OPT_KV_F32 };

static const struct cli_opt logits_opts[] = {
	{"out", OPT_OUT, "FILE", "where the logits go (-: standard output)"},
	{"kv-f32", OPT_KV_F32, NULL, "fp32 KV cache (default bf16)"},
	{0},
};

/* The signal that stopped the write, once one came. */
static volatile sig_atomic_t g_cancel;

static void on_signal(int sig)
{
	g_cancel = sig;
}

/* "-" or a name in the system's directories (/dev/stdout, a pipe's /dev/fd/N): the
 * logits written through as they are; a stop signal ends the program at once (no
 * file to keep). */
static int write_through(const char *out, const char *data, size_t bytes)
{
	bool std = !strcmp(out, "-");
	const char *name = std ? "standard output" : out;
	int fd = std ? STDOUT_FILENO : fio_open_through(out);
	if (fd < 0)
		return -1;
	int rc = fio_write_fd(fd, data, bytes)
			 ? err_set("%s: write failed: %s", name, strerror(errno))
			 : 0;
	if (!std && close(fd) != 0 && !rc)
		rc = err_set("%s: write failed: %s", name, strerror(errno));
	return rc;
}

/* A file: the logits into a temporary file beside it, a piece at a time, renamed over
 * it once whole. Ctrl-C, SIGTERM and SIGHUP stop the write at the next piece
 * (gigabytes take seconds), keep what was at out and remove the temporary file; one
 * that comes while the file is put in place lets it finish. (Held off for the whole
 * write, they let it replace out and then ended the program as killed.) */
static int write_replacing(const char *out, const char *data, size_t bytes)
{
	enum { PIECE = 64 << 20 };
	struct sigaction old[PROC_N_STOPS];
	proc_catch_stops(on_signal, 0, old);
	struct fio_replace r;
	bool began = fio_replace_begin(&r, out, 0600, NULL, NULL) >= 0;
	int rc = began ? 0 : -1;
	for (size_t done = 0; !rc && done < bytes && !g_cancel; done += PIECE)
		if (fio_write_fd(r.fd, data + done, bytes - done < PIECE ? bytes - done : PIECE))
			rc = err_set("%s: write failed: %s", out, strerror(errno));
	if (!rc && g_cancel)
		rc = err_set("%s: not written (%s)", out, strsignal(g_cancel));
	if (began && rc)
		fio_replace_abort(&r);
	else if (began)
		rc = fio_replace_commit(&r);
	proc_restore_stops(old);
	return rc;
}

/* logits is the reference: its prefill is the exact one, and its context fits the ids */
static const struct cli_opt logits_shared_help[] = {
	{"exact", 0, NULL,
	 "changes nothing here: logits prefills with fp32\n"
	 "activations (unless QWENCHAT_CPU_BF16_PREFILL=1);\n"
	 "with --kv-f32 too, the exact reference"},
	{"ctx", 0, NULL, "context size in tokens (default: the number of ids)"},
	{0},
};

static const struct cli_command logits_cmd = {
	.name = "logits",
	.synopsis = "-m MODEL --out FILE [options]",
	.about = "Reads token ids (decimal, separated by white space or commas) on stdin and\n"
		 "writes float32 little-endian logits to FILE: one row of vocab_size per input\n"
		 "position.\n",
	.groups = CLI_MODEL | CLI_ENGINE,
	.opts = logits_opts,
	.shared_help = logits_shared_help,
};

struct logits_args {
	const char *out;
	bool kv_f32;
};

static int logits_opt(void *user, int key, const char *arg)
{
	struct logits_args *a = user;
	switch (key) {
	case OPT_OUT: a->out = arg; return 0;
	case OPT_KV_F32: a->kv_f32 = true; return 0;
	}
	return cli_unhandled(&logits_cmd, key);
}

int cmd_logits(int argc, char **argv)
{
	struct cli_common cli;
	struct logits_args la = {0};
	int r = cli_parse(&logits_cmd, argc, argv, &cli, logits_opt, &la, NULL);
	if (r)
		return r == CLI_DONE ? EXIT_OK : r;
	if (!la.out)
		return cli_usage("logits", "--out FILE is required");
	const char *out = la.out;
	if (!strcmp(out, "-") && isatty(STDOUT_FILENO))
		return cli_usage("logits", "--out -: standard output is a terminal (the logits are "
					   "binary float32)");
	struct eng_options eo;
	cli_notices_hold(); /* a notice on the options, then an error: the error alone */
	if (cli_engine_options(&cli, &eo, NULL))
		return EXIT_USAGE;
	eo.kv_f32 = la.kv_f32;
	eo.bf16_prefill = false; /* logits are the reference: the exact path */
	if (cli_env_fast_prefill(&eo.bf16_prefill)) {
		cli_error("%s", err_msg());
		return EXIT_USAGE;
	}
	eo.exact_decode = !eo.bf16_prefill; /* a few tokens too */

	int32_t *ids = NULL;
	size_t nids = 0;
	if (cli_read_ids(stdin, "stdin", &ids, &nids)) {
		cli_error("%s", err_msg());
		return EXIT_RUNTIME;
	}
	if (nids > (size_t)1 << 24) {
		free(ids);
		cli_error("stdin: %zu token ids (at most %d)", nids, 1 << 24);
		return EXIT_RUNTIME;
	}
	int n = (int)nids;
	if (n == 0) {
		free(ids);
		cli_error("stdin: no token ids");
		return EXIT_RUNTIME;
	}
	int rc = EXIT_RUNTIME;
	struct eng *e = NULL;
	float *logits = NULL;
	struct eng_model *m = cli_open_model_writing(&cli, out);
	if (!m)
		goto done;
	const struct eng_config *c = eng_model_config(m);
	if (n > eng_max_context(c)) {
		err_set("stdin: %d ids are more than the model's %d positions (%s)", n,
			eng_max_context(c), eng_max_context_source(c));
		goto fail;
	}
	if (eng_check_ids(c, ids, n, 0)) { /* before the engine's notices */
		err_prefix("stdin");
		goto fail;
	}
	if (eo.ctx && n > eo.ctx) {
		err_set("stdin: %d ids do not fit in --ctx %d", n, eo.ctx);
		goto fail;
	}
	if (!eo.ctx)
		eo.ctx = n;
	if (!(e = eng_new(m, &eo, cli_notice)))
		goto fail;
	cli_notices_flush(); /* the engine is up: before the forward */
	size_t bytes = (size_t)n * (size_t)c->vocab_size * sizeof(float);
	if (!(logits = malloc(bytes))) {
		err_set("logits: out of memory for %d rows", n);
		goto fail;
	}
	if (eng_forward(e, ids, n, 0, logits, true))
		goto fail;
	/* a reader that goes away (| head) is a write that fails, one line and exit 1,
	   not a silent death by SIGPIPE */
	signal(SIGPIPE, SIG_IGN);
	if (!strcmp(out, "-") || fio_in_system_dir(out)
		    ? write_through(out, (const char *)logits, bytes)
		    : write_replacing(out, (const char *)logits, bytes))
		goto fail;
	rc = EXIT_OK;
	goto done;
fail:
	cli_error("%s", err_msg());
done:
	free(logits);
	eng_free(e);
	eng_model_free(m);
	free(ids);
	cli_notices_flush(); /* none held past an error; any left are a success's */
	/* the status a shell shows for the signal (130, 143, 129), unless it came once
	   the file was in place (then the work is done) */
	if (g_cancel && rc != EXIT_OK)
		raise(g_cancel);
	return rc;
}
