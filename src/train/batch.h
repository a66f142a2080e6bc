/* batch.h — which windows of the token stream a step trains on: random windows from
 * a seeded generator whose state is saved with the checkpoint (nanoGPT's get_batch),
 * or consecutive windows in order (--sequential). A window at offset o gives the
 * inputs stream[o, o+T) and the targets stream[o+1, o+T+1). */
#ifndef QWENCHAT_BATCH_H
#define QWENCHAT_BATCH_H

#include <stddef.h>
#include <stdint.h>

/* xoshiro256** seeded through splitmix64: small, fast, and its whole state is four
 * words a checkpoint stores. */
struct batch_rng {
	uint64_t s[4];
};

void batch_rng_seed(struct batch_rng *r, uint64_t seed);
uint64_t batch_rng_next(struct batch_rng *r);
/* Uniform in [0, n) for n >= 1, without modulo bias (rejection of the top partial
 * range, Lemire's method). */
uint64_t batch_rng_below(struct batch_rng *r, uint64_t n);

/* The state as 64 hex digits (four words, most significant digit first, NUL-terminated
 * in out[65]) and back: 0, or -1 (err_set naming `what`) when the text is not 64 hex
 * digits or is all zero (a state xoshiro never leaves). */
void batch_rng_format(const struct batch_rng *r, char out[65]);
int batch_rng_parse(struct batch_rng *r, const char *hex, const char *what);

/* Random windows: `rows` offsets, each drawn in turn as batch_rng_below(len - T),
 * i.e. uniform in [0, len - T - 1]. inputs and targets are (rows, T). Needs
 * len >= T + 1. */
void batch_random(struct batch_rng *r, const int32_t *stream, size_t len, int rows, int T,
		  int32_t *inputs, int32_t *targets);

/* Whole windows of the stream for --sequential: W = floor((len - 1) / T), window k
 * at offset k*T (each needs T + 1 tokens: its inputs and the targets one further);
 * 0 when len < T + 1. */
int64_t batch_windows(size_t len, int T);

/* Sequential windows: row b of micro-batch a of step s (A micro-batches of B rows a
 * step) is window k = ((s*A + a)*B + b) mod W, at offset k*T: the run reads the
 * stream in order and starts again at window 0 after the last whole one (the tokens
 * after it are never read). Needs W >= 1. */
int64_t batch_seq_window(int64_t step, int accum, int micro, int rows, int row, int64_t windows);
void batch_sequential(const int32_t *stream, size_t len, int64_t step, int accum, int micro,
		      int rows, int T, int32_t *inputs, int32_t *targets);

/* Consecutive windows for evaluation: rows [first, first + rows) of the W windows; rows
 * past the last window get inputs 0 and targets -1 (not scored). Returns how many
 * rows were real. */
int batch_eval(const int32_t *stream, size_t len, int T, int64_t first, int rows,
	       int32_t *inputs, int32_t *targets);

/* --sft: one conversation a row. Conversation k is the tokens ids[seq[k], seq[k+1])
 * (m <= T + 1 of them) with their flags (dataset.h's DSET_SCORED); its row's inputs
 * are its first m - 1 tokens and its targets the tokens one further where scored,
 * else -1. The rest of the row is padding: input 0, target -1; in causal attention
 * positions after the conversation's change nothing before them. */
struct batch_convs {
	const int32_t *ids;
	const uint8_t *flags;
	const size_t *seq; /* (n + 1) */
	int64_t n;         /* conversations, >= 1 */
};

/* Conversation k's row; returns its real (non-padding) positions, m - 1. */
int batch_conv_row(const struct batch_convs *c, int64_t k, int T, int32_t *in, int32_t *tg);

/* Rows drawn as batch_random draws windows: conversation batch_rng_below(n) each. The
 * real positions are added to *real. */
void batch_conv_random(struct batch_rng *r, const struct batch_convs *c, int rows, int T,
		       int32_t *inputs, int32_t *targets, int64_t *real);

/* --sequential: row b of micro-batch a of step s is conversation
 * batch_seq_window(s, A, a, B, b, n), i.e. ((s*A + a)*B + b) mod n. */
void batch_conv_sequential(const struct batch_convs *c, int64_t step, int accum, int micro,
			   int rows, int T, int32_t *inputs, int32_t *targets, int64_t *real);

/* Evaluation: conversations [first, first + rows) in order, rows past the last one
 * padding throughout. Returns how many rows were real. */
int batch_conv_eval(const struct batch_convs *c, int64_t first, int rows, int T,
		    int32_t *inputs, int32_t *targets);

/* --sft --pack: several conversations a row. The conversations are packed once, for
 * the whole run, by first-fit decreasing: in order of length (the longest first, ties
 * in the files' order) each goes into the first row, in the order rows were opened,
 * with room for it, or a new row. A row's conversations lie one after the other, each at
 * positions 0, 1, ... (a document of its own: train.h), and the rest of the row is
 * padding (a document of its own, never scored). Rows are numbered in the order they
 * were opened; they are drawn, read in order (--sequential) and evaluated as
 * conversations are without --pack. */
struct batch_pack {
	int64_t rows;
	int64_t *start;  /* (rows + 1) into order */
	int64_t *order;  /* (conversations placed) conversation indices, row by row */
	int64_t real;    /* positions that are not padding, over all rows */
};

/* Packs c's conversations in rows of T positions. 0 or -1 (err_set: out of memory). */
int batch_pack_make(struct batch_pack *p, const struct batch_convs *c, int T);
void batch_pack_free(struct batch_pack *p);

/* Packed row r: inputs, targets and positions (T each); returns its real positions. */
int batch_pack_row(const struct batch_convs *c, const struct batch_pack *p, int64_t r, int T,
		   int32_t *in, int32_t *tg, int32_t *pos);

/* As batch_conv_random, batch_conv_sequential and batch_conv_eval, over packed rows. */
void batch_pack_random(struct batch_rng *rng, const struct batch_convs *c,
		       const struct batch_pack *p, int rows, int T, int32_t *inputs,
		       int32_t *targets, int32_t *pos, int64_t *real);
void batch_pack_sequential(const struct batch_convs *c, const struct batch_pack *p, int64_t step,
			   int accum, int micro, int rows, int T, int32_t *inputs, int32_t *targets,
			   int32_t *pos, int64_t *real);
int batch_pack_eval(const struct batch_convs *c, const struct batch_pack *p, int64_t first,
		    int rows, int T, int32_t *inputs, int32_t *targets, int32_t *pos);

#endif
