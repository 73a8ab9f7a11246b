/* For the checkpoint harness only: the reader's malloc/calloc/realloc/free
 * (linked with -Wl,--wrap=...) are tracked while px_fuzz_tracking is set on
 * the fuzzing thread, so the memory a reader abandons when px_rt_fail jumps
 * back can be freed (1 MiB per input otherwise, and the run hits its RSS
 * limit within seconds). */
#include <pthread.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

void *__real_malloc(size_t n);
void *__real_calloc(size_t n, size_t s);
void *__real_realloc(void *p, size_t n);
void __real_free(void *p);

int px_fuzz_tracking;
static pthread_t owner;
static void **live;
static size_t n_live, cap_live;

static int tracking(void) {
    return px_fuzz_tracking && pthread_equal(pthread_self(), owner);
}

static void track(void *p) {
    if (!p) return;
    if (n_live == cap_live) {
        size_t cap = cap_live ? 2 * cap_live : 256;
        void **grown = __real_realloc(live, cap * sizeof *live);
        if (!grown) abort();
        live = grown;
        cap_live = cap;
    }
    live[n_live++] = p;
}

static void untrack(void *p) {
    for (size_t i = n_live; i-- > 0;)
        if (live[i] == p) {
            live[i] = live[--n_live];
            return;
        }
}

void px_fuzz_track_begin(void) {
    owner = pthread_self();
    px_fuzz_tracking = 1;
}

/* Stops tracking and frees what the reader left. */
void px_fuzz_track_end(void) {
    px_fuzz_tracking = 0;
    for (size_t i = 0; i < n_live; i++) __real_free(live[i]);
    n_live = 0;
}

void *__wrap_malloc(size_t n) {
    void *p = __real_malloc(n);
    if (tracking()) track(p);
    return p;
}

void *__wrap_calloc(size_t n, size_t s) {
    void *p = __real_calloc(n, s);
    if (tracking()) track(p);
    return p;
}

void *__wrap_realloc(void *old, size_t n) {
    void *p = __real_realloc(old, n);
    if (tracking() && p) {
        if (old) untrack(old);
        track(p);
    }
    return p;
}

void __wrap_free(void *p) {
    if (tracking() && p) untrack(p);
    __real_free(p);
}
