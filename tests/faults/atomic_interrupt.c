/* The fault catalogue's check of interrupted atomic writes: opens an atomic
 * file for PATH, writes into it, then ends the way MODE says while the
 * temporary exists: "term" raises SIGTERM, "int" SIGINT, "fail" calls
 * px_rt_fail (exit 1). faults.sh then checks that PATH is untouched and no
 * temporary is left. Usage: atomic_interrupt PATH MODE */
#include "file_atomic.h"
#include "px_kernel.h"

#include <signal.h>
#include <stdio.h>
#include <string.h>

int main(int argc, char **argv) {
    if (argc != 3) {
        fprintf(stderr, "usage: atomic_interrupt PATH term|int|fail\n");
        return 2;
    }
    char err[512];
    px_atomic_file af;
    if (px_atomic_open(&af, argv[1], err, sizeof err)) px_rt_fail("%s", err);
    fputs("half-written contents\n", af.f);
    fflush(af.f);
    printf("temporary %s\n", af.tmp);
    fflush(stdout);
    if (strcmp(argv[2], "term") == 0) raise(SIGTERM);
    if (strcmp(argv[2], "int") == 0) raise(SIGINT);
    px_rt_fail("giving up on %s (on purpose)", argv[1]);
}
