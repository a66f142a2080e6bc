/* hugemem.c — large zeroed arrays on 2 MB pages (hugemem.h).
 *
 * A training step walks gigabytes of weights, gradients, moments and activations, and
 * a scored request writes hundreds of MB of logits. On 4 KB pages their first touch
 * costs a page fault per 4 KB (millions for the 0.6B shape's training, each a trap
 * into the kernel, dearer still in a virtual machine), and every later pass a TLB miss
 * per 4 KB. calloc's memory gets 4 KB pages whenever THP is in its default "madvise"
 * mode, so these arrays are mapped here instead: anonymous (zero by the kernel's
 * guarantee), 2 MB aligned and marked MADV_HUGEPAGE. */
#include "src/base/hugemem.h"

#include <stdint.h>
#include <sys/mman.h>
#include <unistd.h>

enum { HUGE = 2 << 20 };

static size_t page_round(size_t bytes)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	return (bytes + page - 1) / page * page;
}

void *huge_reserve(size_t bytes, int prot)
{
	if (!bytes || bytes > SIZE_MAX - 2 * (size_t)HUGE)
		return NULL;
	size_t size = page_round(bytes);
	char *span = mmap(NULL, size + HUGE, prot, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (span == MAP_FAILED)
		return NULL;
	/* keep the 2 MB-aligned part; give back the head and the tail */
	char *at = (char *)(((uintptr_t)span + HUGE - 1) & ~(uintptr_t)(HUGE - 1));
	if (at > span)
		munmap(span, (size_t)(at - span));
	if (at + size < span + size + HUGE)
		munmap(at + size, (size_t)(span + size + HUGE - (at + size)));
	return at;
}

void *huge_zalloc(size_t bytes)
{
	void *at = huge_reserve(bytes, PROT_READ | PROT_WRITE);
#ifdef MADV_HUGEPAGE
	if (at) /* a hint: 4 KB pages where refused */
		madvise(at, page_round(bytes), MADV_HUGEPAGE);
#endif
	return at;
}

void huge_free(void *p, size_t bytes)
{
	if (p)
		munmap(p, page_round(bytes));
}
