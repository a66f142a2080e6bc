/* sha.h — streaming SHA-256 and SHA-1 (FIPS 180-4), to check downloads against the
 * Hub's ETags: SHA-256 for LFS files, the git blob SHA-1 for small files. */
#ifndef QWENCHAT_SHA_H
#define QWENCHAT_SHA_H

#include <stddef.h>
#include <stdint.h>

struct sha256 {
	uint32_t h[8];
	uint64_t len;      /* bytes hashed so far */
	uint8_t buf[64];
	size_t n;          /* bytes waiting in buf */
	int accel;         /* 1: the CPU's SHA instructions (set by init; 0 forces plain C) */
};

struct sha1 {
	uint32_t h[5];
	uint64_t len;
	uint8_t buf[64];
	size_t n;
};

void sha256_init(struct sha256 *s);
void sha256_update(struct sha256 *s, const void *data, size_t len);
/* Writes the digest as 64 lowercase hex digits plus NUL into hex[65]. */
void sha256_hex(struct sha256 *s, char hex[65]);

void sha1_init(struct sha1 *s);
void sha1_update(struct sha1 *s, const void *data, size_t len);
/* Writes the digest as 40 lowercase hex digits plus NUL into hex[41]. */
void sha1_hex(struct sha1 *s, char hex[41]);

#endif
