/* nfc.h — Unicode NFC as Hugging Face tokenizers computes it (internal to
 * tokenizer/): its normalizer's tables are Unicode 9.0's, so a character assigned
 * since (a combining mark of a newer script, say) is left as it is and neither
 * reorders nor composes with its neighbours, where utf8proc's current tables would. */
#ifndef QWENCHAT_NFC_H
#define QWENCHAT_NFC_H

#include <stddef.h>

/* NFC of the valid UTF-8 s[0..n), malloc'd (NUL-terminated, *out_n bytes). NULL with
 * err_set when s is not valid UTF-8 or memory runs out. */
char *tok_nfc(const char *s, size_t n, size_t *out_n);

#endif
