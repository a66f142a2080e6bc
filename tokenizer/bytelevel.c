/* bytelevel.c — the byte-level alphabet (see bytelevel.h). */
#include "tokenizer/bytelevel.h"

/* Bytes that stand for themselves: '!'..'~', U+00A1..U+00AC, U+00AE..U+00FF. The
 * other 68 bytes (0..32, 127..160, 173), in order, take U+0100..U+0143. */
static int is_self(unsigned b)
{
	return (b >= 33 && b <= 126) || (b >= 161 && b <= 172) || (b >= 174 && b <= 255);
}

/* The byte a character of the alphabet stands for, or -1 when c is not in it. */
static int bl_char_to_byte(uint32_t c)
{
	if (c < 256)
		return is_self(c) ? (int)c : -1;
	if (c <= 256 + 32)
		return (int)(c - 256); /* bytes 0..32 */
	if (c <= 256 + 32 + 34)
		return (int)(c - 256 - 33 + 127); /* bytes 127..160 */
	if (c == 256 + 67)
		return 173;
	return -1;
}

uint32_t bl_byte_to_char(unsigned b)
{
	if (is_self(b))
		return b;
	if (b <= 32)
		return 256 + b;
	if (b >= 127 && b <= 160)
		return 256 + 33 + (b - 127);
	return 256 + 67; /* 173 */
}

long bl_decode(const char *s, size_t n, char *out)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t i = 0, o = 0;
	while (i < n) {
		uint32_t c;
		if (p[i] < 0x80) {
			c = p[i++];
		} else if ((p[i] & 0xE0) == 0xC0 && i + 1 < n && (p[i + 1] & 0xC0) == 0x80) {
			c = (uint32_t)(p[i] & 0x1F) << 6 | (p[i + 1] & 0x3F);
			i += 2;
		} else {
			return -1; /* the alphabet is below U+0800 */
		}
		int b = bl_char_to_byte(c);
		if (b < 0)
			return -1;
		out[o++] = (char)b;
	}
	return (long)o;
}
