/* bytelevel.h — GPT-2's byte-level alphabet: each byte 0..255 is written as one
 * printable Unicode character in tokenizer.json (space is "Ġ", newline "Ċ"). */
#ifndef QWENCHAT_BYTELEVEL_H
#define QWENCHAT_BYTELEVEL_H

#include <stddef.h>
#include <stdint.h>

/* The alphabet character for byte b. */
uint32_t bl_byte_to_char(unsigned b);
/* Decodes the alphabet string s[0..n) (UTF-8) into raw bytes out[0..ret) (out holds
 * at least n bytes). Returns -1 if s holds a character outside the alphabet or
 * malformed UTF-8. */
long bl_decode(const char *s, size_t n, char *out);

#endif
