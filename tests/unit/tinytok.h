/* tinytok.h — a small byte-level BPE tokenizer built in memory, for the tests of the
 * token readers (unit test and fuzz target): the 256 byte tokens, the merge "a b",
 * and the added tokens <|endoftext|> and <|im_end|> (special) and <think> (not). */
#ifndef QWENCHAT_TINYTOK_H
#define QWENCHAT_TINYTOK_H

#include <stdbool.h>

/* Ids of its tokens beyond the bytes. */
enum { TT_AB = 256, TT_EOT = 257, TT_IM_END = 258, TT_THINK = 259, TT_VOCAB = 260 };

struct tok;

/* The tokenizer; without_eot: <|endoftext|> left out (its id unused), and eos_token
 * set to `eos` (may be NULL). NULL on error (err_set). */
struct tok *tt_tokenizer(bool without_eot, const char *eos);

#endif
