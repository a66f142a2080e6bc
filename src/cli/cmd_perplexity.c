/* cmd_perplexity.c — `qwenchat perplexity`: mean NLL and perplexity of a file by the
 * sliding-window loop of transformers' guide (with --sft, of conversations' answers),
 * on the exact path `logits` takes; with --kl-base, how a second model's
 * distributions differ (ppl_report.c prints them). */
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "engine/engine.h"
#include "src/base/clock.h"
#include "src/base/err.h"
#include "src/base/fileio.h"
#include "src/base/proc.h"
#include "src/cli/cli.h"
#include "src/cli/commands.h"
#include "src/cli/conv_data.h"
#include "src/cli/env.h"
#include "src/cli/ppl_report.h"
#include "src/hub/hub.h"
#include "src/hub/loader.h"
#include "src/train/dataset.h"
#include "src/train/ppl.h"
#include "src/train/tokens.h"
#include "src/train/trainstate.h"
#include "tokenizer/tokenizer.h"

/* The default window: the model's context, capped where one window's attention
 * and logits stay cheap (the transformers guide uses GPT-2's 1024). */
enum { DEFAULT_CTX_MAX = 4096 };

enum ppl_key {
	OPT_STRIDE = CLI_OWN,
	OPT_CHUNKS,
	OPT_KL_BASE,
	OPT_JSON,
	OPT_KV_F32,
	OPT_KV_BF16,
	OPT_FAST,
	OPT_NO_EOT,
	OPT_LLAMA_CHUNKS,
	OPT_SFT
};

static const struct cli_opt ppl_opts[] = {
	{"file", 'f', "FILE",
	 "the text (UTF-8, one document), JSON Lines named\n"
	 "*.jsonl of {\"text\": ...} records (a document each)\n"
	 "or, named *.u32, the token ids (little-endian uint32)\n"
	 "to score; - reads text from stdin (with --sft, JSON or\n"
	 "JSON Lines)"},
	{"stride", OPT_STRIDE, "S", "start a window every S tokens, 1..--ctx (default --ctx)"},
	{"chunks", OPT_CHUNKS, "N",
	 "score the first N windows only (llama-perplexity's\n--chunks): a quick estimate on a "
	 "long text"},
	{"kl-base", OPT_KL_BASE, "MODEL2",
	 "also score MODEL2 on the same windows: mean\n"
	 "KL(P_MODEL || P_MODEL2) over the scored positions, the\n"
	 "fraction where both argmaxes agree (top1) and\n"
	 "llama-perplexity's statistics (perplexity ratio, KL\n"
	 "quantiles, p - q of the token)"},
	{"json", OPT_JSON, NULL, "one JSON object instead of the table"},
	{"sft", OPT_SFT, NULL,
	 "FILE holds conversations, as train --sft reads them:\n"
	 "score their answers, each conversation a window of\n"
	 "its own (cut after its last answer within --ctx)"},
	{"llama-chunks", OPT_LLAMA_CHUNKS, NULL,
	 "score as llama-perplexity does: whole chunks of\n--ctx tokens, the second half of each "
	 "scored (the\nfirst is context), no end-of-text token"},
	{"no-eot", OPT_NO_EOT, NULL,
	 "a text's documents without the end-of-text token\nafter each (as Hugging Face's guide "
	 "and\nllama-perplexity score a text)"},
	{"kv-f32", OPT_KV_F32, NULL, "fp32 KV cache (the default here)"},
	{"kv-bf16", OPT_KV_BF16, NULL,
	 "bf16 KV cache, as the chat keeps it: what that\nrounding costs"},
	{"fast", OPT_FAST, NULL,
	 "bf16 products with fp32 sums, as the chat's prefill\n"
	 "(where the CPU has AVX-512 BF16 or AMX): faster, the\n"
	 "logits ~1e-3 of their largest from the exact ones"},
	{0},
};

/* perplexity scores the logits of `logits`, over windows of --ctx tokens */
static const struct cli_opt ppl_shared_help[] = {
	{"exact", 0, NULL,
	 "changes nothing here: the prefill is fp32, as for\n"
	 "logits, unless QWENCHAT_CPU_BF16_PREFILL=1"},
	{"ctx", 0, NULL, "the window in tokens (below)"},
	{0},
};

static const struct cli_command ppl_cmd = {
	.name = "perplexity",
	.synopsis = "-m MODEL -f FILE [--ctx N] [--stride S] [--json] [--kl-base MODEL2] "
		    "[options]",
	.about = "Scores FILE by the model: the mean negative log-likelihood of its tokens (nats)\n"
		 "and the perplexity exp(mean NLL), by the sliding-window loop of Hugging Face\n"
		 "transformers' guide \"Perplexity of fixed-length models\": windows of --ctx\n"
		 "tokens starting every --stride tokens, each run from an empty context, score\n"
		 "the tokens the window before did not reach; the first token of a window is\n"
		 "never scored (nothing before it predicts it). A text file is one document,\n"
		 "encoded as plain text (special-token strings in it are text, ill-formed UTF-8\n"
		 "becomes U+FFFD) with the end-of-text token (<|endoftext|>) appended; each\n"
		 "record of a *.jsonl or *.ndjson file is such a document; a *.u32 file is used\n"
		 "as it is. The logits are those of 'qwenchat logits' (fp32\n"
		 "activations) with an fp32 KV cache, scored in double.\n",
	.groups = CLI_MODEL | CLI_ENGINE,
	.min_ctx = 2, /* a window's first token is never scored */
	.opts = ppl_opts,
	.shared_help = ppl_shared_help,
	.notes = "--ctx N is the window (default: the model's context, at most\n"
		 "4096; for a checkpoint of 'qwenchat train', the run's --ctx + 1 with --stride\n"
		 "--ctx, which scores each token as the run's validation did). --kl-base needs\n"
		 "the same vocab_size and, for a text file, the same token ids from both\n"
		 "tokenizers. KL(P_MODEL || P_MODEL2) = sum_v P(v) (log P(v) -\n"
		 "log Q(v)), P from -m MODEL, Q from MODEL2. --quant applies to MODEL only:\n"
		 "'-m X --quant q4_k_m --kl-base X' measures what quantizing X changes.\n"
		 "The prefill is fp32 whatever --exact says, as for logits, unless --fast.\n",
};

struct ppl_args {
	const char *file, *kl_base;
	long stride; /* 0: --ctx */
	long chunks; /* 0: every window */
	bool json, kv_f32, fast, no_eot, llama, sft;
	int max_ctx;       /* the longest window the models take (window sets it) */
	struct dset convs; /* --sft: the conversations (their ids handed to the caller) */
};

static int ppl_opt(void *user, int key, const char *arg)
{
	struct ppl_args *a = user;
	switch (key) {
	case 'f': a->file = arg; return 0;
	case OPT_STRIDE: return cli_parse_long("stride", arg, 1, 1L << 24, &a->stride);
	case OPT_CHUNKS: return cli_parse_long("chunks", arg, 1, 1L << 40, &a->chunks);
	case OPT_KL_BASE: a->kl_base = arg; return 0;
	case OPT_JSON: a->json = true; return 0;
	case OPT_KV_F32: a->kv_f32 = true; return 0;
	case OPT_KV_BF16: a->kv_f32 = false; return 0;
	case OPT_FAST: a->fast = true; return 0;
	case OPT_NO_EOT: a->no_eot = true; return 0;
	case OPT_LLAMA_CHUNKS: a->llama = a->no_eot = true; return 0;
	case OPT_SFT: a->sft = true; return 0;
	}
	return cli_unhandled(&ppl_cmd, key);
}

/* One model: its directory, weights, tokenizer (text files only) and engine. */
struct side {
	const char *name; /* as given, for messages */
	char *dir;
	struct eng_model *m;
	struct tok *t;
	struct eng *e;
};

static void side_free(struct side *s)
{
	eng_free(s->e);
	tok_free(s->t);
	eng_model_free(s->m);
	free(s->dir);
}

/* Resolves and maps a model, and loads its tokenizer when file is text (or
 * conversations: sft). 0 or -1. */
static int side_open(struct side *s, const char *model, const char *file, bool text, bool sft)
{
	struct hub_env hub;
	cli_env_hub(&hub);
	if (!(s->dir = hub_resolve(&hub, model)) || !(s->m = eng_model_open(s->dir)))
		return -1;
	if (text && (!(s->t = loader_tokenizer(s->dir)) ||
		     loader_check_vocab(s->t, eng_model_config(s->m)->vocab_size, s->dir)))
		return err_prefix("%s: %s encoded with %s's tokenizer", file,
				  sft ? "conversations are" : "a text file is", s->name);
	return 0;
}

/* The token ids of FILE (a text's with an end-of-text token after each document when
 * eot_after); with a base model and text, both tokenizers must agree. */
static int read_ids(const char *file, struct side *s, int vocab, bool eot_after, int32_t **ids,
		    size_t *n)
{
	if (!s[1].t) {
		int rc = tokens_read_file(file, s[0].t, vocab, eot_after, ids, n);
		if (!rc && tokens_is_u32(file) && tokens_check_width(*ids, *n)) {
			free(*ids);
			*ids = NULL;
			return err_prefix("%s", file);
		}
		return rc;
	}
	/* read once: FILE may be a pipe */
	size_t len;
	char *text = fio_read_all(file, TOKENS_MAX_FILE, &len);
	if (!text)
		return -1;
	int32_t *b = NULL;
	size_t nb = 0;
	int rc = 0; /* each side's error names its model: either may lack an end-of-text token */
	if (tokens_from_contents(file, s[0].t, vocab, eot_after, text, len, ids, n))
		rc = err_prefix("%s: with %s's tokenizer", file, s[0].name);
	else if (tokens_from_contents(file, s[1].t, vocab, eot_after, text, len, &b, &nb))
		rc = err_prefix("%s: with --kl-base %s's tokenizer", file, s[1].name);
	free(text);
	size_t i = 0;
	while (!rc && i < *n && i < nb && (*ids)[i] == b[i])
		i++;
	if (!rc && (i < *n || i < nb))
		rc = err_set("%s: the tokenizers of %s and %s give different ids (token %zu: %d "
			     "and %d): --kl-base needs the same tokenizer",
			     file, s[0].name, s[1].name, i, i < *n ? (int)(*ids)[i] : -1,
			     i < nb ? (int)b[i] : -1);
	free(b);
	if (rc) {
		free(*ids);
		*ids = NULL;
	}
	return rc;
}

/* --sft: a file's text, read once (it may be a pipe), and a model's encoder. */
struct conv_text {
	struct conv_encoder e;
	const char *text;
	size_t len;
};

static int read_conv_text(void *user, const char *path, struct dset_convs *out)
{
	struct conv_text *c = user;
	return conv_encode_text(&c->e, path, c->text, c->len, out);
}

/* --sft: the conversations of FILE cut for windows of ctx tokens as train --sft cuts
 * them for rows of ctx - 1, encoded by each model's tokenizer and chat template (the
 * base's must give the same tokens). Their ids go to *ids, the rest to a->convs. */
static int read_convs(struct ppl_args *a, const struct side *s, int vocab, int ctx, int32_t **ids,
		      size_t *n)
{
	struct conv_text c = {.text = fio_read_all(a->file, TOKENS_MAX_FILE, &c.len)};
	if (!c.text)
		return -1;
	char *files[1] = {(char *)a->file};
	struct dset d[2] = {{0}};
	int rc = 0;
	for (int k = 0; !rc && k < 2 && s[k].t; k++) {
		const char *warning = NULL;
		c.e = (struct conv_encoder){
			s[k].t, tmpl_detect(tok_chat_template(s[k].t), &warning), vocab};
		if (warning) {
			char msg[300];
			snprintf(msg, sizeof msg, "--sft: %s: %s, as the chat does", s[k].name,
				 warning);
			cli_notice(msg);
		}
		if (dset_read_sft(&d[k], files, 1, read_conv_text, &c, vocab, ctx - 1))
			rc = k ? err_prefix("with --kl-base %s's tokenizer", s[1].name) : -1;
	}
	size_t i = 0;
	if (!rc && s[1].t) {
		while (i < d[0].len && i < d[1].len && d[0].ids[i] == d[1].ids[i] &&
		       d[0].flags[i] == d[1].flags[i])
			i++;
		if (i < d[0].len || i < d[1].len)
			rc = err_set(
				"%s: %s and %s render or tokenize the conversations otherwise "
				"(token %zu): --kl-base needs the same tokenizer and chat template",
				a->file, s[0].name, s[1].name, i);
	}
	free((char *)c.text);
	dset_free(&d[1]);
	if (rc) {
		dset_free(&d[0]);
		return -1;
	}
	*ids = d[0].ids, *n = d[0].len;
	d[0].ids = NULL;
	a->convs = d[0];
	return 0;
}

/* The progress line on a terminal: "scoring 512 / 2047 tokens", redrawn at most 10
 * times a second (small windows end thousands of times a second), and erased at the
 * end: the result is what stays. */
struct progress {
	bool tty, open; /* open: a line is drawn and not yet ended */
	double last;    /* when it was drawn */
};

static void on_progress(void *user, size_t scored, size_t total)
{
	struct progress *p = user;
	double now = clock_now();
	if (!p->tty || (scored < total && now - p->last < 0.1))
		return;
	p->last = now;
	fprintf(stderr, "\r\033[Kscoring %zu / %zu tokens", scored, total);
	p->open = scored < total;
	if (!p->open)
		fputs("\r\033[K", stderr);
	fflush(stderr);
}

/* The rows of tokens a checkpoint of `qwenchat train` was trained on (the --ctx in its
 * DIR/train-state/state.json), or 0 for another model (or a state that does not read:
 * the model loads without it); *sft: whether it trained on conversations (its
 * validation loss then covers their answers alone). */
static int trained_ctx(const char *dir, bool *sft)
{
	char *path = fio_join(dir, "train-state/state.json");
	size_t len = 0;
	bool there = path && fio_is_file(path);
	char *text = there ? fio_read_file(path, 1 << 20, &len) : NULL;
	struct tstate st;
	int ctx = 0;
	if (text && tstate_parse(&st, text, len, path) == 0) {
		ctx = st.o.ctx;
		*sft = st.o.sft;
		tstate_opts_free(&st.o);
	} else if (there) { /* a damaged record: say the windows are not the run's */
		char msg[ERR_MAX + 100];
		snprintf(msg, sizeof msg,
			 "%s; the windows are not the run's validation windows (--ctx sets them)",
			 err_msg());
		cli_notice(msg);
	}
	err_clear();
	free(text);
	free(path);
	return ctx;
}

/* A checkpoint's training --ctx T (the shorter of the two models'): without --ctx, the
 * windows are the run's validation windows (T + 1 tokens every T score each token with
 * the positions it was trained at); a longer --ctx is said to reach past them. */
static void trained_window(const struct cli_common *cli, const struct ppl_args *a,
			   const struct side *s, int max_pos, int *ctx, int *stride)
{
	const struct side *by = NULL;
	int T = 0;
	bool sft = false;
	for (int i = 0; i < 2; i++) {
		bool conv = false;
		int t = s[i].m ? trained_ctx(s[i].dir, &conv) : 0;
		if (t > 0 && (!T || t < T))
			T = t, by = &s[i], sft = conv;
	}
	char msg[600];
	if (!T)
		return;
	if (!(cli->set & CLI_SET_CTX)) {
		/* a window of T + 1 tokens feeds T positions, as a training row does; the
		   other model may have fewer */
		*ctx = T <= max_pos ? T + 1 : max_pos + 1;
		*stride = a->llama ? *ctx : a->stride ? (int)a->stride : *ctx > 2 ? *ctx - 1 : 1;
		if (*stride > *ctx)
			return; /* refused by the caller, in one line */
		/* the validation loss's windows, unless --stride chose others; a run on
		   conversations scored their answers alone, as --sft does */
		bool as_val = *ctx == T + 1 && !a->llama && !a->stride && sft == a->sft;
		char what[80];
		if (a->sft)
			snprintf(what, sizeof what, "conversations cut to %d tokens", *ctx);
		else
			snprintf(what, sizeof what, "windows of %d tokens every %d", *ctx, *stride);
		snprintf(msg, sizeof msg,
			 "%s was trained on rows of %d tokens (its train-state/state.json): %s%s "
			 "(--ctx chooses others)",
			 by->name, T, what, as_val ? ", as its validation loss" : "");
		cli_notice(msg);
	} else if (*ctx > T + 1) {
		snprintf(msg, sizeof msg,
			 "--ctx %d reaches past the rows of %d tokens %s was trained on (positions "
			 "it was never trained at)",
			 *ctx, T, by->name);
		cli_notice(msg);
	}
}

/* The window and stride from the options and the models' limits; 0, or EXIT_USAGE /
 * EXIT_RUNTIME after printing why. */
static int window(const struct cli_common *cli, struct ppl_args *a, const struct side *s, int *ctx,
		  int *stride)
{
	/* the model with the shorter context bounds the window */
	const struct side *lim = &s[0];
	if (s[1].m &&
	    eng_max_context(eng_model_config(s[1].m)) < eng_max_context(eng_model_config(s[0].m)))
		lim = &s[1];
	const struct eng_config *lc = eng_model_config(lim->m);
	int max_pos = eng_max_context(lc);
	a->max_ctx = max_pos + 1;
	/* by default Hugging Face's window, the model's positions (a model of one
	   position still scores windows of 2) */
	*ctx = cli->set & CLI_SET_CTX      ? cli->ctx
	       : max_pos < 2               ? 2
	       : max_pos < DEFAULT_CTX_MAX ? max_pos
					   : DEFAULT_CTX_MAX;
	if (a->llama && a->stride)
		return cli_usage("perplexity", "--stride with --llama-chunks: its chunks do not "
					       "overlap");
	*stride = a->stride ? (int)a->stride : *ctx;
	trained_window(cli, a, s, max_pos, ctx, stride);
	if (a->llama || a->sft) /* windows that do not overlap */
		*stride = *ctx;
	if (*stride > *ctx)
		return cli_usage("perplexity", "--stride %d is more than the window (--ctx %d)",
				 *stride, *ctx);
	/* a chunk scores its labels from ctx/2 + 1 on: none in a chunk of 2 */
	if (a->llama && *ctx < 3)
		return cli_usage("perplexity",
				 "--ctx %d with --llama-chunks: a chunk scores the "
				 "tokens past its first half and needs 3 or more",
				 *ctx);
	/* a window's last token is only a target: N tokens run at N - 1 positions */
	if (*ctx - 1 > max_pos) {
		cli_error("--ctx %d runs %d positions, more than the %d of %s (%s)", *ctx, *ctx - 1,
			  max_pos, lim->name, eng_max_context_source(lc));
		return EXIT_RUNTIME;
	}
	return 0;
}

/* Checks the arguments before any model is opened; 0, or EXIT_USAGE / EXIT_RUNTIME
 * after printing why. */
static int check_args(const struct cli_common *cli, const struct ppl_args *a)
{
	if (!a->file)
		return cli_usage("perplexity", "-f FILE is required");
	const char *other = a->stride   ? "--stride"
			    : a->chunks ? "--chunks"
			    : a->llama  ? "--llama-chunks"
			    : a->no_eot ? "--no-eot"
					: NULL;
	if (a->sft && conv_refuse_ids(a->file)) {
		cli_error("%s", err_msg());
		return EXIT_RUNTIME;
	}
	if (a->sft && other)
		return cli_usage(
			"perplexity",
			"--sft scores each conversation in a window of its own: not with %s",
			other);
	if ((cli->set & CLI_SET_CTX) && a->stride > cli->ctx)
		return cli_usage("perplexity", "--stride %ld is more than the window (--ctx %d)",
				 a->stride, cli->ctx);
	/* before the models load, which may take long */
	struct stat st;
	if (strcmp(a->file, "-") && stat(a->file, &st)) {
		cli_error("%s: cannot open: %s", a->file, strerror(errno));
		return EXIT_RUNTIME;
	}
	if (strcmp(a->file, "-") && S_ISDIR(st.st_mode)) {
		cli_error("%s: is a directory, not a file", a->file);
		return EXIT_RUNTIME;
	}
	if (fio_check_ends(a->file)) { /* /dev/zero: read until memory ran out */
		cli_error("%s", err_msg());
		return EXIT_RUNTIME;
	}
	return 0;
}

/* Both engines, their caches holding need - 1 positions; 0 or an exit status. */
static int engines(struct side *s, const struct eng_options *eo, int need)
{
	struct eng_options mo = *eo, base = *eo;
	mo.ctx = base.ctx = need - 1;
	base.quant = ENG_FTYPE_NONE; /* MODEL2 is the reference: as stored */
	if (!(s[0].e = eng_new(s[0].m, &mo, cli_notice)) ||
	    (s[1].m && !(s[1].e = eng_new(s[1].m, &base, cli_notice))))
		return cli_error("%s", err_msg()), EXIT_RUNTIME;
	for (int k = 0; k < 2 && s[k].e; k++)
		if (eng_ctx(s[k].e) < need - 1) { /* a GPU short of memory shrinks it */
			cli_error(
				"%s: the %s backend holds %d tokens of context, a window needs %d "
				"(--ctx %d)",
				s[k].name, eng_backend_name(s[k].e), eng_ctx(s[k].e), need - 1,
				eng_ctx(s[k].e) + 1);
			return EXIT_RUNTIME;
		}
	return 0;
}

/* --sft: the conversations, and engines for the longest; 0 or an exit status. */
static int sft_setup(struct ppl_args *a, struct side *s, const struct eng_options *eo, int vocab,
		     int32_t **ids, size_t *n, int ctx)
{
	if (read_convs(a, s, vocab, ctx, ids, n))
		return cli_error("%s", err_msg()), EXIT_RUNTIME;
	const struct dset_sft *f = &a->convs.sft;
	if (f->conversations == 0) {
		char keep[96] = "";
		if (f->left_out)
			ppl_report_keep(keep, sizeof keep, (long long)f->left_out_ctx + 1,
					a->max_ctx);
		cli_error("%s: no conversation to score: %lld without an answer, %lld whose first "
			  "answer ends past --ctx %d%s%s%s",
			  a->file, (long long)f->no_answer, (long long)f->left_out, ctx,
			  *keep ? " (" : "", keep, *keep ? ")" : "");
		return EXIT_RUNTIME;
	}
	size_t need = 0;
	for (int64_t k = 0; k < f->conversations; k++)
		if (a->convs.seq[k + 1] - a->convs.seq[k] > need)
			need = a->convs.seq[k + 1] - a->convs.seq[k];
	return engines(s, eo, (int)need);
}

/* Opens both models, reads the ids and starts the engines; 0 or an exit status. */
static int setup(const struct cli_common *cli, struct ppl_args *a, struct side *s,
		 const struct eng_options *eo, int32_t **ids, size_t *n, int *ctx, int *stride)
{
	bool text = a->sft || !strcmp(a->file, "-") || !tokens_is_u32(a->file);
	if (side_open(&s[0], cli->model, a->file, text, a->sft) ||
	    (a->kl_base && side_open(&s[1], a->kl_base, a->file, text, a->sft)))
		return cli_error("%s", err_msg()), EXIT_RUNTIME;
	int vocab = eng_model_config(s[0].m)->vocab_size;
	if (s[1].m && eng_model_config(s[1].m)->vocab_size != vocab) {
		cli_error("--kl-base: %s has vocab_size %d and %s %d: KL needs the same vocabulary",
			  s[0].name, vocab, s[1].name, eng_model_config(s[1].m)->vocab_size);
		return EXIT_RUNTIME;
	}
	int r = window(cli, a, s, ctx, stride);
	if (r)
		return r;
	if (a->sft)
		return sft_setup(a, s, eo, vocab, ids, n, *ctx);
	if (read_ids(a->file, s, vocab, !a->no_eot, ids, n))
		return cli_error("%s", err_msg()), EXIT_RUNTIME;
	if (*n < 2) {
		bool bare = text && a->no_eot; /* the text's own tokens only */
		cli_error("%s: %s: perplexity needs at least 2 tokens", a->file,
			  !*n && !bare ? "the file is empty"
			  : !*n        ? "the text has no token"
			  : bare       ? "the text is one token"
			  : text ? "the text is empty (its one token is the end-of-text token)"
				 : "one token id");
		return EXIT_RUNTIME;
	}
	if (a->llama && *n < (size_t)*ctx) {
		cli_error("%s: %zu tokens, fewer than one chunk of --ctx %d (--llama-chunks scores "
			  "whole chunks only)",
			  a->file, *n, *ctx);
		return EXIT_RUNTIME;
	}
	/* the cache holds a window's inputs: all its tokens but the last; no window is
	 * longer than the stream */
	return engines(s, eo, *n < (size_t)*ctx ? (int)*n : *ctx);
}

int cmd_perplexity(int argc, char **argv)
{
	struct cli_common cli;
	struct ppl_args a = {.kv_f32 = true}; /* an evaluation: no rounded cache */
	int r = cli_parse(&ppl_cmd, argc, argv, &cli, ppl_opt, &a, NULL);
	if (r)
		return r == CLI_DONE ? EXIT_OK : r;
	if ((r = check_args(&cli, &a)))
		return r;
	cli_notices_hold(); /* until the models and the file are known good, or an error */
	struct eng_options eo;
	if (cli_engine_options(&cli, &eo, NULL))
		return EXIT_USAGE;
	eo.kv_f32 = a.kv_f32;
	eo.bf16_prefill = a.fast; /* else the reference path, as `logits` */
	if (cli_env_fast_prefill(&eo.bf16_prefill)) {
		cli_error("%s", err_msg());
		return EXIT_USAGE;
	}
	eo.exact_decode = !eo.bf16_prefill; /* a few tokens too */
	struct side s[2] = {{.name = cli_model_name(&cli)}, {.name = a.kl_base}};
	int32_t *ids = NULL;
	size_t n = 0;
	int ctx = 0, stride = 0;
	r = setup(&cli, &a, s, &eo, &ids, &n, &ctx, &stride);
	size_t n_all = n;
	/* the first N windows are those of the stream cut where the N-th ends */
	uint64_t cut; /* beyond 64 bits: past any stream's end */
	if (a.chunks && !__builtin_mul_overflow((uint64_t)(a.chunks - 1), (uint64_t)stride, &cut) &&
	    !__builtin_add_overflow(cut, (uint64_t)ctx, &cut) && cut < n &&
	    ppl_count((size_t)cut, ctx, stride, a.llama) < ppl_count(n, ctx, stride, a.llama))
		n = (size_t)cut; /* (not when what it leaves out is a window scoring nothing) */
	cli_notices_flush();
	if (!r) {
		struct progress pr = {.tty = isatty(STDERR_FILENO)};
		struct ppl_options po = {.vocab = eng_model_config(s[0].m)->vocab_size,
					 .ctx = ctx,
					 .stride = stride,
					 .chunks = a.llama,
					 .threads = eo.threads ? eo.threads : proc_online_cpus(),
					 .names = {s[0].name, s[1].name},
					 .progress = on_progress,
					 .user = &pr};
		if (a.sft) /* each conversation a window of its own, its answers scored */
			po.docs = a.convs.seq, po.ndocs = a.convs.sft.conversations,
			po.flags = a.convs.flags;
		struct ppl_result res;
		r = ppl_run(s[0].e, s[1].e, ids, n, &po, &res) ? EXIT_RUNTIME : EXIT_OK;
		if (pr.open) /* an error: the line stays above the message */
			fputc('\n', stderr);
		if (r)
			cli_error("%s", err_msg());
		else
			ppl_report_print(&(struct ppl_report){a.file, a.kl_base, a.json, a.llama,
							      a.sft ? &a.convs.sft : NULL, ctx,
							      stride, a.max_ctx, n, n_all},
					 &res);
		ppl_result_free(&res);
	}
	free(ids);
	dset_free(&a.convs);
	side_free(&s[1]);
	side_free(&s[0]);
	return r;
}
