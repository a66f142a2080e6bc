/* hugemem.h — large zeroed arrays on 2 MB pages where the kernel grants them. */
#ifndef QWENCHAT_HUGEMEM_H
#define QWENCHAT_HUGEMEM_H

#include <stddef.h>

/* bytes of zeroes, 2 MB aligned, asked for as transparent huge pages (granted in THP's
 * "madvise" and "always" modes; 4 KB pages otherwise). NULL when out of memory. */
void *huge_zalloc(size_t bytes);

/* bytes of address space (rounded up to whole pages) at a 2 MB-aligned address,
 * anonymous and private, with protection prot (PROT_NONE to reserve a span that a
 * file is then mapped over with MAP_FIXED). NULL when it cannot be had. Freed by
 * huge_free. */
void *huge_reserve(size_t bytes, int prot);

/* Frees what huge_zalloc(bytes) or huge_reserve(bytes, ...) returned (NULL: nothing). */
void huge_free(void *p, size_t bytes);

#endif
