/* cli_setup.c — what a command builds from its parsed shared options: the engine's
 * options, the model, the sampling settings and the remote backend's connection. */
#include "src/cli/cli.h"
#include "src/base/clock.h"
#include "src/base/err.h"
#include "src/base/proc.h"
#include "src/base/units.h"
#include "src/base/fileio.h"
#include "src/cli/env.h"
#include "src/cli/outfile.h"
#include "src/hub/hub.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/random.h>
#include <unistd.h>

/* ---- the engine and the model ----------------------------------------------------- */

/* "qwenchat: VERB weights 1.20 GB / 4.70 GB" on a terminal, redrawn in place. */
static void weights_progress(const char *verb, size_t done_bytes, size_t total_bytes)
{
	if (!isatty(STDERR_FILENO))
		return;
	char done[16], total[16];
	/* the blanks after it wipe a longer figure drawn before */
	fprintf(stderr, "\rqwenchat: %s weights %s / %s  %s", verb,
		units_bytes((double)done_bytes, done, sizeof done),
		units_bytes((double)total_bytes, total, sizeof total),
		done_bytes >= total_bytes ? "\n" : "");
	fflush(stderr);
}

/* The weight upload's progress (eng_options.progress): on a terminal, one stderr
 * line rewritten in place ("uploading weights 3.10 GB / 16.4 GB"), ended at the end;
 * nothing when stderr is not a terminal. */
static void cli_upload_progress(size_t done_bytes, size_t total_bytes)
{
	weights_progress("uploading", done_bytes, total_bytes);
}

static void quant_progress(size_t done_bytes, size_t total_bytes)
{
	weights_progress("quantizing", done_bytes, total_bytes);
}

int cli_threads_cap(int threads, void (*notice)(const char *msg))
{
	/* More threads than CPUs only take turns on them: each waits at every barrier
	 * of the forward pass for one that is not running, and decoding slows down
	 * several times over. */
	int cpus = proc_online_cpus();
	if (threads <= cpus)
		return threads;
	char msg[128];
	snprintf(msg, sizeof msg, "--threads %d is more than the %d CPUs online; using %d", threads,
		 cpus, cpus);
	(notice ? notice : cli_notice)(msg);
	return cpus;
}

int cli_engine_options(const struct cli_common *c, struct eng_options *o,
		       void (*notice)(const char *msg))
{
	memset(o, 0, sizeof *o);
	o->backend = eng_backend_kind(c->backend);
	o->threads = cli_threads_cap(c->threads, notice);
	o->ctx = c->ctx;
	o->progress = cli_upload_progress;
	o->quant = c->quant;
	o->bf16_prefill = !c->exact; /* QWENCHAT_CPU_BF16_PREFILL overrides */
	o->quant_progress = quant_progress;
	if (cli_env_engine(o)) {
		cli_error("%s", err_msg());
		return -1;
	}
	return 0;
}

/* The model -m names, opened; out: a file the command will write, refused when it is
 * one of the model's (NULL: none). */
static struct eng_model *open_model(const struct cli_common *c, const char *out, double *seconds)
{
	struct hub_env hub;
	cli_env_hub(&hub);
	char *dir = hub_resolve(&hub, c->model);
	if (!dir || (out && cli_check_out(out, dir, eng_is_gguf(dir)))) {
		cli_error("%s", err_msg());
		free(dir);
		return NULL;
	}
	double t0 = clock_now();
	struct eng_model *m = eng_model_open(dir);
	if (seconds)
		*seconds = clock_now() - t0;
	if (!m)
		cli_error("%s", err_msg());
	free(dir);
	return m;
}

struct eng_model *cli_open_model(const struct cli_common *c, double *seconds)
{
	return open_model(c, NULL, seconds);
}

struct eng_model *cli_open_model_writing(const struct cli_common *c, const char *out)
{
	/* standard output and the system's names (/dev/stdout) are written through */
	bool through = !strcmp(out, "-") || fio_in_system_dir(out);
	return open_model(c, through ? NULL : out, NULL);
}

const char *cli_model_name(const struct cli_common *c)
{
	struct hub_env hub;
	cli_env_hub(&hub);
	return c->model ? c->model : hub_default_model(&hub);
}

/* ---- sampling --------------------------------------------------------------------- */

uint64_t cli_random_seed(void)
{
	uint64_t s = 0;
	if (getrandom(&s, sizeof s, 0) != (ssize_t)sizeof s) /* no entropy: the clock */
		s = (uint64_t)time(NULL) * 6364136223846793005ull ^ (uint64_t)getpid();
	return s >> 11; /* 53 bits: the seed prints and types back as a plain number */
}

void cli_sampling(const struct cli_common *c, struct samp_params *p)
{
	samp_params_apply(p, &c->sampling, c->set);
}

/* ---- the remote backend ----------------------------------------------------------- */

bool cli_is_remote(const struct cli_common *c)
{
	return !strcmp(c->backend, "remote");
}

char *cli_read_key_file(const char *path)
{
	size_t len;
	char *text = fio_read_all(path, 64 << 10, &len);
	if (!text) {
		cli_error("--api-key-file: %s", err_msg());
		return NULL;
	}
	/* the first line, without the blanks an editor or echo leaves around it (a server
	   compares the key exactly; curl drops a header's trailing blanks too) */
	size_t end = 0;
	while (end < len && text[end] != '\r' && text[end] != '\n')
		end++;
	bool ctrl = false;
	for (size_t i = 0; i < end; i++)
		ctrl |= ((unsigned char)text[i] < 0x20 && text[i] != '\t') || text[i] == 0x7f;
	size_t b = 0;
	while (b < end && (text[b] == ' ' || text[b] == '\t'))
		b++;
	while (end > b && (text[end - 1] == ' ' || text[end - 1] == '\t'))
		end--;
	memmove(text, text + b, end - b);
	text[end - b] = '\0';
	if (!*text || ctrl) {
		cli_error("--api-key-file: %s: the first line %s", path,
			  ctrl ? "holds a control character" : "is empty");
		free(text);
		return NULL;
	}
	return text;
}

int cli_remote_options(struct cli_common *c, struct remote_options *o,
		       void (*notice)(const char *msg))
{
	memset(o, 0, sizeof *o);
	o->url = c->url;
	o->connect_timeout = c->connect_timeout;
	o->stall_timeout = c->stall_timeout;
	char *key = NULL;
	const char *env = cli_env_openai_api_key();
	if (c->api_key) {
		key = strdup(c->api_key);
		/* Out of sight of ps from now on; it was visible until here. */
		memset(c->api_key, 'x', strlen(c->api_key));
		notice("--api-key: other users of this machine can read a key given on the "
		       "command line (ps); OPENAI_API_KEY or --api-key-file keep it private");
	} else if (c->api_key_file) {
		if (!(key = cli_read_key_file(c->api_key_file)))
			return -1;
	} else if (env) {
		key = strdup(env);
	}
	if ((c->api_key || env) && !key) {
		cli_error("out of memory");
		return -1;
	}
	o->api_key = key;
	return 0;
}

void cli_remote_free(struct remote_options *o)
{
	char *key = (char *)o->api_key;
	if (key) {
		memset(key, 0, strlen(key));
		free(key);
	}
	o->api_key = NULL;
}
