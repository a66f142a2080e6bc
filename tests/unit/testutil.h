/* testutil.h — what the unit tests share: the source and build trees, the real Qwen3
 * tokenizer, and test models written by tests/mkmodel. */
#ifndef QWENCHAT_TESTUTIL_H
#define QWENCHAT_TESTUTIL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* $TOP_SRCDIR and $TOP_BUILDDIR (set by make check), "." when unset. */
const char *tu_srcdir(void);
const char *tu_builddir(void);

/* The real tokenizer's directory (tests/fetch-tokenizer.sh) into out. Exits the test
 * with 77 (SKIP) when it cannot be had (not in CI), 1 when fetching fails. */
void tu_tokenizer_dir(char *out, size_t size);

/* Writes a tests/mkmodel model into dir with these options (a string of mkmodel
 * flags); with the real tokenizer copied in when `tokenizer` is set. 0 or -1 (the
 * command is printed on stderr). */
int tu_make_model(const char *dir, const char *flags, bool tokenizer);

/* n bytes from exactly 2n lower-case hex digits (the goldens' format): 0, or -1
 * when the text is anything else. */
int tu_unhex(const char *s, uint8_t *out, size_t n);

#endif
