/* cmd_hub.c — `qwenchat pull` (download a model into the Hugging Face cache) and
 * `qwenchat list` (the Qwen3 models in that cache). */
#include "src/cli/cli.h"
#include "src/cli/commands.h"
#include "src/cli/env.h"
#include "src/base/term.h"
#include "src/base/units.h"
#include "src/base/err.h"
#include "src/hub/hub.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* One row of a listing: names come from a server or from folder names anyone with
 * write access to the cache chose, so their control characters are shown, not sent
 * to the terminal. */
static void safe_row(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* One table row (fmt without its newline): the escapes of names a server or a folder
 * gave shown, not obeyed, and the row kept on one line (a newline in a name: ^J). */
static void safe_row(const char *fmt, ...)
{
	char row[1024];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(row, sizeof row, fmt, ap);
	va_end(ap);
	struct strbuf b = {0};
	term_safe_line(&b, row, strlen(row));
	printf("%s\n", b.oom ? "(out of memory)" : b.p ? b.p : "");
	free(b.p);
}

static const struct cli_command pull_cmd = {
	.name = "pull",
	.synopsis = "REPO[:TAG][@REVISION]",
	.about =
		"Downloads a model (config, tokenizer, generation config and safetensors weights)\n"
		"from the Hugging Face Hub into the Hugging Face cache, where 'qwenchat -m REPO'\n"
		"and the Python tools find it. Files already in the cache are not downloaded "
		"again;\n"
		"a partial download is resumed. Prints the snapshot directory on stdout.\n"
		"REVISION is a branch, tag or commit (default: main). REPO:TAG (or a repo named\n"
		"*-GGUF, tag Q4_K_M) downloads the GGUF file whose name holds TAG (all its parts\n"
		"when split) and prints its path, e.g. Qwen/Qwen3-8B-GGUF:Q5_K_M.\n",
	.notes = "environment: HF_ENDPOINT, HF_TOKEN, HF_HUB_CACHE, HF_HOME, HF_HUB_OFFLINE\n"
		 "(see 'man qwenchat').\n",
	.min_args = 1,
	.max_args = 1,
	.args = "REPO",
};

static const struct cli_command list_cmd = {
	.name = "list",
	.synopsis = "[--url URL]",
	.about = "Lists the Qwen3 models in the Hugging Face cache ($HF_HUB_CACHE, else\n"
		 "$HUGGINGFACE_HUB_CACHE, else $HF_HOME/hub, else\n"
		 "$XDG_CACHE_HOME/huggingface/hub, else ~/.cache/huggingface/hub): repo id,\n"
		 "revision, format (safetensors, or GGUF with its quantization type and file),\n"
		 "size on disk, and whether the snapshot is complete. Never connects to the\n"
		 "network.\n"
		 "With --url, the models an OpenAI-compatible server serves (GET /v1/models),\n"
		 "the names 'qwenchat --url URL -m MODEL' takes, with their context when the\n"
		 "server says it.\n",
	.groups = CLI_REMOTE,
};

/* `list --url`: the models a server serves. */
static int list_remote(struct cli_common *com)
{
	struct remote_options o;
	cli_notices_hold(); /* a warning on the key, then no server: the error alone */
	if (cli_remote_options(com, &o, cli_notice))
		return EXIT_RUNTIME;
	struct remote *r = remote_new(&o);
	cli_remote_free(&o);
	struct remote_model *m;
	size_t n;
	if (!r || remote_models(r, &m, &n, NULL)) {
		cli_error("%s", err_msg());
		remote_free(r);
		return EXIT_RUNTIME;
	}
	cli_notices_flush();
	if (n == 0)
		fprintf(stderr, "%s serves no models\n", remote_url(r));
	else
		printf("%-44s %-16s %10s\n", "MODEL", "OWNED BY", "CONTEXT");
	for (size_t i = 0; i < n; i++) {
		char ctx[24] = "-";
		if (m[i].max_len)
			snprintf(ctx, sizeof ctx, "%ld", m[i].max_len);
		safe_row("%-44s %-16s %10s", m[i].id, m[i].owned_by, ctx);
	}
	remote_models_free(m, n);
	remote_free(r);
	return EXIT_OK;
}

int cmd_pull(int argc, char **argv)
{
	struct cli_common com;
	struct hub_env hub;
	int first;
	int r = cli_parse(&pull_cmd, argc, argv, &com, NULL, NULL, &first);
	if (r)
		return r == CLI_DONE ? EXIT_OK : r;
	if (hub_check_spec(argv[first])) /* written wrong: a usage error, before any lookup */
		return cli_usage("pull", "%s", err_msg());
	cli_env_hub(&hub);
	char *dir = hub_pull(&hub, argv[first]);
	if (!dir) {
		cli_error("%s", err_msg());
		return EXIT_RUNTIME;
	}
	printf("%s\n", dir);
	free(dir);
	return EXIT_OK;
}

int cmd_list(int argc, char **argv)
{
	struct cli_common com;
	struct hub_env hub;
	int r = cli_parse(&list_cmd, argc, argv, &com, NULL, NULL, NULL);
	if (r)
		return r == CLI_DONE ? EXIT_OK : r;
	if (cli_is_remote(&com))
		return list_remote(&com);
	cli_env_hub(&hub);
	struct hub_entry *e;
	size_t n;
	if (hub_list(&hub, &e, &n)) {
		cli_error("%s", err_msg());
		return EXIT_RUNTIME;
	}
	if (n == 0) {
		fprintf(stderr, "no Qwen3 models in the Hugging Face cache; "
				"'qwenchat pull Qwen/Qwen3-0.6B' downloads one\n");
	} else {
		printf("%-36s %-24s %-12s %10s  %s\n", "MODEL", "REVISION", "FORMAT", "SIZE",
		       "STATUS");
	}
	for (size_t i = 0; i < n; i++) {
		char rev[128], size[32];
		snprintf(rev, sizeof rev, "%s%s%.7s%s", e[i].refs, e[i].refs[0] ? " (" : "",
			 e[i].commit, e[i].refs[0] ? ")" : "");
		units_bytes((double)e[i].bytes, size, sizeof size);
		/* a GGUF file: MODEL is what -m takes for it (REPO:TAG, the tag from its
		 * name, which may say more than its type: UD-Q4_K_XL) */
		char model[256], format[32];
		snprintf(model, sizeof model, "%s%s%s", e[i].repo_id, e[i].tag ? ":" : "",
			 e[i].tag ? e[i].tag : "");
		snprintf(format, sizeof format, "%s%s%s", e[i].file ? "GGUF" : "safetensors",
			 e[i].file && e[i].type ? " " : "",
			 e[i].file && e[i].type ? e[i].type : "");
		safe_row("%-36s %-24s %-12s %10s  %s%s%s", model, rev, format, size,
			 e[i].complete ? "complete" : "incomplete", e[i].file ? "  " : "",
			 e[i].file ? e[i].file : "");
	}
	hub_list_free(e, n);
	return EXIT_OK;
}
