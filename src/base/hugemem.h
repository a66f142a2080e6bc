/* hugemem.h — large zeroed arrays on 2 MB pages where the kernel grants them. */
#ifndef QWENCHAT_HUGEMEM_H
#define QWENCHAT_HUGEMEM_H

#include <stddef.h>

/* bytes of zeroes, 2 MB aligned, asked for as transparent huge pages (granted in THP's
 * "madvise" and "always" modes; 4 KB pages otherwise). NULL when out of memory. */
void *huge_zalloc(size_t bytes);

/* Frees what huge_zalloc(bytes) returned (NULL: nothing). */
void huge_free(void *p, size_t bytes);

#endif
