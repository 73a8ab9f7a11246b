/* Why: a graph holds a few small objects per node (a value, a node, its
 * attributes), about 10 KiB a node once trained, and the passes walk them
 * by pointer. A model of 100k nodes then touches over a gigabyte of heap
 * in 4 KiB pages: 350k page faults and as many TLB misses, which cost more
 * than the passes themselves on a virtual machine (measured: inspect of a
 * 100k-node chain, 7.1 s of user time on 4 KiB pages, 3.8 s on huge
 * pages). glibc's malloc uses huge pages only under
 * GLIBC_TUNABLES=glibc.malloc.hugetlb=1, read at program start; instead,
 * the heap is grown once by a large top pad (virtual memory: untouched
 * pages cost nothing) and that range is marked MADV_HUGEPAGE. The kernel's
 * setting "never" leaves it on small pages. */
#include "heap_pages.h"

#include <malloc.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

/* Heap reserved at once: a trained 100k-node graph peaks near 1.2 GiB.
 * Beyond it the heap grows on ordinary pages. */
#define HEAP_PAD ((size_t)2 << 30)
#define HUGE_PAGE ((uintptr_t)2 << 20)

void px_heap_use_huge_pages(void) {
    if (mallopt(M_TOP_PAD, (int)(HEAP_PAD - HUGE_PAGE)) != 1) return;
    /* Never give the pad back while compiling: it would come back on
     * small pages. */
    mallopt(M_TRIM_THRESHOLD, (int)(HEAP_PAD - HUGE_PAGE));
    char *lo = sbrk(0);
    if (lo == (char *)-1) return;
    /* Small blocks until malloc extends the heap (by the pad), then free. */
    enum { BLOCK = 64 << 10, MAX_BLOCKS = 64 };
    void *blocks[MAX_BLOCKS];
    int n = 0;
    char *hi = lo;
    while (n < MAX_BLOCKS && hi == lo && (blocks[n] = malloc(BLOCK))) {
        n++;
        hi = sbrk(0);
    }
    while (n > 0) free(blocks[--n]);
    uintptr_t a = ((uintptr_t)lo + HUGE_PAGE - 1) & ~(HUGE_PAGE - 1), b = (uintptr_t)hi;
    if (hi != (char *)-1 && b > a) (void)madvise((void *)a, b - a, MADV_HUGEPAGE);
}
