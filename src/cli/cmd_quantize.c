/* cmd_quantize.c — `qwenchat quantize`: a safetensors model (or a GGUF file of float
 * weights) written as a GGUF file with llama.cpp's quantization mixes, its tokenizer
 * and chat template included. The
 * file appears whole or not at all: it is written to a new temporary file beside the
 * target, synced, and renamed over it. */
#include "engine/engine.h"
#include "engine/ftype.h"
#include "src/base/clock.h"
#include "src/base/err.h"
#include "src/base/fileio.h"
#include "src/base/proc.h"
#include "src/base/units.h"
#include "src/cli/cli.h"
#include "src/cli/commands.h"
#include "src/cli/sigbus.h"
#include "src/cli/env.h"
#include "src/cli/outfile.h"
#include "src/hub/hub.h"
#include "src/hub/loader.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

enum quantize_key { OPT_TYPE = CLI_OWN };

static const struct cli_opt quantize_opts[] = {
	{"type", OPT_TYPE, "T",
	 "one of llama.cpp's mixes (" ENG_FTYPE_QUANT_NAMES "), or bf16, f16, f32"},
	{"out", 'o', "FILE",
	 "the GGUF file to write, replaced whole, never\npartly (-: standard output)"},
	{0},
};

static const struct cli_opt quantize_shared_help[] = {
	{"model", 0, NULL,
	 "safetensors model directory, Hugging Face repo id, or a GGUF\nfile of F32/F16/BF16 "
	 "weights"},
	{0},
};

static const struct cli_command quantize_cmd = {
	.name = "quantize",
	.synopsis = "-m MODEL --type T --out FILE.gguf",
	.about = "Writes a safetensors model as a GGUF v3 file that llama.cpp and qwenchat load:\n"
		 "tokenizer, chat template and config included, each tensor in the type\n"
		 "llama.cpp's llama-quantize gives it in that mix (the lm_head in Q6_K, for the\n"
		 "_m mixes attn_v and ffn_down in Q6_K on some layers, norms in F32). From a\n"
		 "GGUF file of float weights (a bf16 one), its tokenizer and general.* keys\n"
		 "are carried over, as llama-quantize does; a quantized one is refused.\n",
	.groups = CLI_MODEL,
	.opts = quantize_opts,
	.shared_help = quantize_shared_help,
};

struct quantize_args {
	const char *type, *out;
};

static int quantize_opt(void *user, int key, const char *arg)
{
	struct quantize_args *a = user;
	switch (key) {
	case 'o': a->out = arg; return 0;
	case OPT_TYPE: a->type = arg; return 0;
	}
	return cli_unhandled(&quantize_cmd, key);
}

/* The signal that ends the program, once one came: the write stops at its next batch,
 * the temporary file is removed, and the signal is raised again. */
static volatile int g_cancel;

static void on_signal(int sig)
{
	g_cancel = sig;
}

static bool g_tty;
static double g_t0;

static void progress(size_t done, size_t total)
{
	char a[32], b[32];
	if (!g_tty)
		return;
	fprintf(stderr, "\r\033[Kquantizing %s / %s (%d%%), %.0f s",
		units_bytes((double)done, a, sizeof a), units_bytes((double)total, b, sizeof b),
		total ? (int)(100.0 * done / total) : 100, clock_now() - g_t0);
	if (done == total)
		fputc('\n', stderr);
}

static void told_removed(void *user, const char *dir, const char *name, uint64_t bytes)
{
	(void)user;
	char msg[4600], size[32];
	snprintf(msg, sizeof msg, "removed %s/%s (%s), left by a quantize that was killed", dir,
		 name, units_bytes((double)bytes, size, sizeof size));
	cli_notice(msg);
}

/* The model into /dev/stdout, a pipe or /dev/null: written as it comes. */
static int write_through(const struct eng_model *m, enum eng_ftype f, const struct eng_gguf_out *o,
			 const char *out)
{
	int fd = fio_open_through(out);
	if (fd < 0)
		return -1;
	/* a reader that goes away (| head) is a write that fails, one line and exit 1,
	   not a silent death by SIGPIPE */
	signal(SIGPIPE, SIG_IGN);
	int rc = eng_model_write_gguf(m, f, o, fd, out, progress, &g_cancel);
	if (close(fd) != 0 && rc == 0)
		rc = err_set("%s: write failed: %s", out, strerror(errno));
	if (g_tty && rc)
		fputc('\n', stderr);
	return rc;
}

/* The temporary file being written, for a SIGBUS (the source model truncated under
 * the run) to remove before the program exits. */
static struct fio_replace *volatile g_writing;

static void remove_writing(void)
{
	struct fio_replace *r = g_writing;
	if (r)
		unlinkat(r->dir, r->tmp, 0);
}

/* The other signals whose default is to end the program, which job schedulers and
 * timeouts send (Slurm's --signal=USR1, timeout -s ALRM): caught while the file is
 * written, as the stops are, so that they too leave no temporary file. */
static const int g_also[] = {SIGUSR1, SIGUSR2, SIGALRM, SIGVTALRM, SIGPROF, SIGXCPU, SIGPIPE};
enum { N_ALSO = sizeof g_also / sizeof g_also[0] };

static void catch_also(struct sigaction old[N_ALSO])
{
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_signal;
	sigemptyset(&sa.sa_mask);
	for (int i = 0; i < N_ALSO; i++)
		proc_catch(g_also[i], &sa, &old[i]);
}

/* Writes the model into a temporary file, syncs it and renames it over out (its
 * directory opened once, fio_replace). Ctrl-C, SIGTERM, SIGHUP and the other signals
 * that end a program remove the temporary file (a file of the model's size would be
 * left behind otherwise); 128 + the signal is then the exit status, as the chat's.
 * Those a quantize killed outright left, each as large as a model, are removed first,
 * and said so. */
static int write_model(const struct eng_model *m, enum eng_ftype f, const struct eng_gguf_out *o,
		       const char *out)
{
	struct fio_replace r;
	struct sigaction old[PROC_N_STOPS], old_also[N_ALSO];
	/* before the file exists: no moment leaves it behind; a signal ignored when the
	   program started (nohup's SIGHUP, a background job's SIGINT) stays ignored */
	proc_catch_stops(on_signal, 0, old);
	catch_also(old_also);
	int rc = -1;
	if (fio_replace_begin(&r, out, 0600, told_removed, NULL) >= 0) {
		g_writing = &r;
		sigbus_cleanup(remove_writing);
		int w = eng_model_write_gguf(m, f, o, r.fd, out, progress, &g_cancel);
		g_writing = NULL;
		if (w == 0)
			rc = fio_replace_commit(&r);
		else
			fio_replace_abort(&r);
		if (g_tty && rc)
			fputc('\n', stderr);
	}
	if (rc && g_cancel)
		err_set("%s: not written (%s)", out, strsignal(g_cancel));
	proc_restore_stops(old);
	for (int i = 0; i < N_ALSO; i++)
		sigaction(g_also[i], &old_also[i], NULL);
	return rc;
}

/* general.name: the directory's last component, as the converter takes it (without the
 * trailing slashes of "dir/"); its length. */
static size_t model_name(const char *dir, const char **name)
{
	const char *end = dir + fio_trimmed_len(dir), *s = end;
	while (s > dir && s[-1] != '/')
		s--;
	if (s == end) /* "/" */
		s = dir;
	*name = s;
	return (size_t)(end - s);
}

/* A GGUF source: float weights only (requantizing compounds the losses, and
 * llama-quantize refuses it too). */
static int float_weights(const struct eng_model *m, const char *path)
{
	struct eng_type_count n[ENG_DTYPE_COUNT];
	eng_model_type_counts(m, n);
	enum eng_dtype most = eng_model_config(m)->dtype; /* what most weights are */
	for (int t = 0; t < ENG_DTYPE_COUNT; t++)
		if (n[t].tensors && eng_dtype_quantized((enum eng_dtype)t))
			return err_set(
				"%s: holds %s weights; quantize from the model's F32/F16/BF16 "
				"file or its safetensors directory",
				path,
				eng_dtype_name(eng_dtype_quantized(most) ? most
									 : (enum eng_dtype)t));
	return 0;
}

/* The key/values besides the model's own: from a directory, its tokenizer files and
 * generation_config.json; from a GGUF, its tokenizer.* and general.* keys but those
 * the writer sets itself. */
static int source_keys(struct eng_gguf_out *o, const char *model, const struct eng_model *m,
		       bool gguf)
{
	const char *name;
	size_t len = model_name(model, &name);
	if (!gguf)
		return eng_gguf_out_str(o, "general.name", name, len) ||
		       loader_gguf_keys(model, eng_model_config(m)->vocab_size, o);
	static const char *const own[] = {"general.architecture", "general.type",
					  "general.file_type",    "general.quantization_version",
					  "general.alignment",    NULL};
	const struct eng_gguf *g = eng_model_gguf(m);
	const char *s;
	size_t n;
	if (len > 5 && !strcmp(name + len - 5, ".gguf"))
		len -= 5;
	if (eng_gguf_str(g, "general.name", &s, &n) == 1 &&
	    eng_gguf_out_str(o, "general.name", name, len))
		return -1;
	return eng_gguf_out_copy(o, g, "general.", own) ||
			       eng_gguf_out_copy(o, g, "tokenizer.", NULL)
		       ? -1
		       : 0;
}


int cmd_quantize(int argc, char **argv)
{
	struct cli_common com;
	struct quantize_args qa = {NULL, NULL};
	int r = cli_parse(&quantize_cmd, argc, argv, &com, quantize_opt, &qa, NULL);
	if (r)
		return r == CLI_DONE ? EXIT_OK : r;
	enum eng_ftype f;
	if (!qa.type || !qa.out)
		return cli_usage("quantize", "--type and --out are required");
	if (eng_ftype_parse(qa.type, &f))
		return cli_usage("quantize",
				 "--type %s: not one of " ENG_FTYPE_QUANT_NAMES ", bf16, f16, f32",
				 qa.type);
	if (!strcmp(qa.out, "-")) {
		if (isatty(STDOUT_FILENO))
			return cli_usage("quantize", "--out -: standard output is a terminal (a "
						     "GGUF file is binary)");
		qa.out = "/dev/stdout";
	}
	/* a name of the system's (/dev/stdout, a pipe, /dev/null) is written through:
	 * nothing there is replaced (decided first: it clears the error it meets) */
	bool through = fio_in_system_dir(qa.out);
	struct hub_env hub;
	cli_env_hub(&hub);
	char *dir = hub_resolve(&hub, com.model);
	struct eng_model *m = NULL;
	struct eng_gguf_out *o = NULL;
	int rc = EXIT_RUNTIME;
	bool gguf = dir && eng_is_gguf(dir);
	if (dir && (through || cli_check_out(qa.out, dir, gguf) == 0) &&
	    (m = eng_model_open(dir)) && (!gguf || float_weights(m, dir) == 0) &&
	    (o = eng_gguf_out_new()) && source_keys(o, dir, m, gguf) == 0) {
		g_tty = isatty(STDERR_FILENO);
		g_t0 = clock_now();
		int w = through ? write_through(m, f, o, qa.out) : write_model(m, f, o, qa.out);
		if (w == 0) {
			struct stat st;
			char a[32], size[40] = "";
			/* a pipe's size says nothing */
			if (!through && stat(qa.out, &st) == 0)
				snprintf(size, sizeof size, ": %s",
					 units_bytes((double)st.st_size, a, sizeof a));
			fprintf(stderr, "wrote %s%s (%s) in %.1f s\n", qa.out, size,
				eng_ftype_name(f), clock_now() - g_t0);
			rc = EXIT_OK;
		}
	}
	if (rc != EXIT_OK)
		cli_error("%s", err_msg());
	eng_gguf_out_free(o);
	eng_model_free(m);
	free(dir);
	/* the status a shell shows for the signal (130, 143, 129), unless it came once
	   the file was in place (then the work is done) */
	if (g_cancel && rc != EXIT_OK)
		raise(g_cancel);
	return rc;
}
