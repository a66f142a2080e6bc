/* pretok.h — the Qwen2/Qwen3 pre-tokenizer regex as a hand-written scanner.
 *
 * It splits text exactly as Hugging Face `tokenizers` (Oniguruma) splits it with
 *   (?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}
 *   | ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+
 * with \p{L} and \p{N} taken from Unicode 16.0's general categories (pretok_category)
 * and \s being
 * Oniguruma's Unicode White_Space set (U+0009-000D, U+0020, U+0085, U+00A0,
 * U+1680, U+2000-200A, U+2028, U+2029, U+202F, U+205F, U+3000; not U+FEFF nor
 * U+001C-001F, unlike JavaScript and Python). */
#ifndef QWENCHAT_PRETOK_H
#define QWENCHAT_PRETOK_H

#include <stddef.h>
#include <stdint.h>

/* The general category of c (a UTF8PROC_CATEGORY_*) as Hugging Face tokenizers' regex
 * knows it: utf8proc's, and for a letter, mark, number or connector that utf8proc's
 * tables (Debian 12: Unicode 15.0) call unassigned, Unicode 16.0's. */
int pretok_category(int32_t c);

/* The exact pattern string this scanner implements (as found in tokenizer.json). */
extern const char pretok_qwen2_regex[];

/* End offset of the pre-token starting at byte `pos` of valid UTF-8 text[0..len);
 * pos < len. The result is > pos and <= len. (On invalid UTF-8 it still returns a
 * value in (pos, len] without reading outside the buffer.) */
size_t pretok_next(const char *text, size_t len, size_t pos);

#endif
