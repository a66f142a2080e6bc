/* cmd_hub.c — `qwenchat pull` (download a model into the Hugging Face cache) and
 * `qwenchat list` (the Qwen3 models in that cache). */
#include "src/cli/cli.h"
#include "src/cli/commands.h"
#include "src/base/err.h"
#include "src/hub/hub.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char pull_help[] =
	"usage: qwenchat pull REPO[:TAG][@REVISION]\n"
	"\n"
	"Downloads a model (config, tokenizer, generation config and safetensors weights)\n"
	"from the Hugging Face Hub into the Hugging Face cache, where 'qwenchat -m REPO'\n"
	"and the Python tools find it. Files already in the cache are not downloaded again;\n"
	"a partial download is resumed. Prints the snapshot directory on stdout.\n"
	"REVISION is a branch, tag or commit (default: main). REPO:TAG (or a repo named\n"
	"*-GGUF, tag Q4_K_M) downloads the GGUF file whose name holds TAG (all its parts\n"
	"when split) and prints its path, e.g. Qwen/Qwen3-8B-GGUF:Q5_K_M.\n"
	"\n"
	"environment: HF_ENDPOINT, HF_TOKEN, HF_HUB_CACHE, HF_HOME, HF_HUB_OFFLINE\n"
	"(see 'man qwenchat').\n"
	"  -h, --help     show this help\n";

static const char list_help[] =
	"usage: qwenchat list\n"
	"\n"
	"Lists the Qwen3 models in the Hugging Face cache ($HF_HUB_CACHE, else\n"
	"$HF_HOME/hub, else ~/.cache/huggingface/hub): repo id, revision, format\n"
	"(safetensors, or GGUF with its quantization type and file), size on disk, and\n"
	"whether the snapshot is complete. Never connects to the network.\n"
	"  -h, --help     show this help\n";

/* Parses only --help; returns -1 to go on, else the exit status. */
static int only_help(int argc, char **argv, const char *help)
{
	static const struct option opts[] = {{"help", no_argument, 0, 'h'}, {0, 0, 0, 0}};
	int c;
	opterr = 0;
	optind = 1;
	while ((c = getopt_long(argc, argv, "+h", opts, NULL)) != -1) {
		if (c == 'h') {
			fputs(help, stdout);
			return EXIT_OK;
		}
		return cli_usage(argv[0], "unknown option '%s'", argv[optind - 1]);
	}
	return -1;
}

int cmd_pull(int argc, char **argv)
{
	int r = only_help(argc, argv, pull_help);
	if (r >= 0)
		return r;
	if (optind != argc - 1)
		return cli_usage(argv[0],
				 "expected one REPO[:TAG][@REVISION], e.g. Qwen/Qwen3-0.6B");
	char *dir = hub_pull(argv[optind]);
	if (!dir) {
		cli_error("%s", err_msg());
		return EXIT_RUNTIME;
	}
	printf("%s\n", dir);
	free(dir);
	return EXIT_OK;
}

static void human(char *out, size_t cap, double b)
{
	const char *unit[] = {"B", "kB", "MB", "GB", "TB"};
	int u = 0;
	while (b >= 1000 && u < 4) {
		b /= 1000;
		u++;
	}
	snprintf(out, cap, u ? "%.2f %s" : "%.0f %s", b, unit[u]);
}

int cmd_list(int argc, char **argv)
{
	int r = only_help(argc, argv, list_help);
	if (r >= 0)
		return r;
	if (optind != argc)
		return cli_usage(argv[0], "takes no arguments");
	struct hub_entry *e;
	size_t n;
	if (hub_list(&e, &n)) {
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
		human(size, sizeof size, (double)e[i].bytes);
		/* a GGUF file: MODEL is what -m takes for it (REPO:TYPE) */
		char model[256], format[32];
		snprintf(model, sizeof model, "%s%s%s", e[i].repo_id, e[i].type ? ":" : "",
			 e[i].type ? e[i].type : "");
		snprintf(format, sizeof format, "%s%s%s", e[i].file ? "GGUF" : "safetensors",
			 e[i].file && e[i].type ? " " : "",
			 e[i].file && e[i].type ? e[i].type : "");
		printf("%-36s %-24s %-12s %10s  %s%s%s\n", model, rev, format, size,
		       e[i].complete ? "complete" : "incomplete", e[i].file ? "  " : "",
		       e[i].file ? e[i].file : "");
	}
	hub_list_free(e, n);
	return EXIT_OK;
}
