/* Why: a trained graph of 100k nodes is over a million small objects, and
 * freeing them one by one costs half a second of parallaxc's run just
 * before it exits, when the kernel takes the whole heap back at once. The
 * graph library keeps its complete free path (px_graph_free, which its
 * tests and every in-process caller use); only main, which knows that the
 * process ends with the command, asks to skip it. A graph left to the exit
 * stays reachable from a static slot, so leak checkers (LeakSanitizer,
 * valgrind) do not count it as lost. */
#include "graph_release.h"

/* Graphs one command releases at most (compile: the bases' model and the
 * trained graph); beyond, graphs are freed as usual. */
#define MAX_KEPT 4

static int exiting;
static px_graph *kept[MAX_KEPT];
static int n_kept;

void px_graph_release_at_exit(void) {
    exiting = 1;
}

void px_graph_release(px_graph *g) {
    if (!g) return;
    if (exiting && n_kept < MAX_KEPT) {
        kept[n_kept++] = g;
        return;
    }
    px_graph_free(g);
}
