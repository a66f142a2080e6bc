/* ppl_report.h — what `qwenchat perplexity` prints: the table, or one JSON object. */
#ifndef QWENCHAT_PPL_REPORT_H
#define QWENCHAT_PPL_REPORT_H

#include <stdbool.h>
#include <stddef.h>

#include "src/train/dataset.h"
#include "src/train/ppl.h"

struct ppl_report {
	const char *file;
	const char *kl_base;          /* MODEL2, or NULL */
	bool json, llama;             /* --json, --llama-chunks */
	const struct dset_sft *convs; /* --sft: what was read of the conversations; NULL */
	int ctx, stride;
	int max_ctx;     /* the longest --ctx the models take */
	size_t n, n_all; /* the tokens run (the first --chunks windows'), and the file's */
};

/* --sft: what keeps the conversations left out, whose first answer ends at token
 * `need`: "--ctx N keeps them", or that the models' context is too short. */
void ppl_report_keep(char *out, size_t size, long long need, int max_ctx);

/* Prints r as the table or the JSON object (with a base, r->kl_each sorted for its
 * quantiles). */
void ppl_report_print(const struct ppl_report *a, struct ppl_result *r);

#endif
