/* The compiler's heap on transparent huge pages. */
#ifndef PX_HEAP_PAGES_H
#define PX_HEAP_PAGES_H

/* Reserves a large heap from malloc once and asks the kernel to back it
 * with transparent huge pages (madvise), best effort: nothing changes
 * where the kernel or the C library does not allow it. */
void px_heap_use_huge_pages(void);

#endif
