#include "px_kernel.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

/* Set by the MPI layer when it is up, so a failing rank takes the job down
 * instead of leaving the others waiting. */
void (*px_rt_abort_hook)(int code) = NULL;
int px_rt_rank = -1;

void px_rt_fail(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fflush(stdout);
    if (px_rt_rank >= 0)
        fprintf(stderr, "error (rank %d): ", px_rt_rank);
    else
        fprintf(stderr, "error: ");
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    if (px_rt_abort_hook) px_rt_abort_hook(1);
    exit(1);
}
