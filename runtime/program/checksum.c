#include "checksum.h"

#include "hash64.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define CHUNK ((size_t)16 << 20)
#define MAX_THREADS 8

static inline uint64_t rotl(uint64_t x, int r) {
    return (x << r) | (x >> (64 - r));
}

static inline uint64_t mix(uint64_t h, uint64_t w) {
    h ^= w * 0x9e3779b97f4a7c15ULL;
    return rotl(h, 31) * 0xff51afd7ed558ccdULL;
}

/* Four lanes over 32-byte blocks (independent multiply chains the CPU
 * overlaps), then the tail through the serial hash. */
static uint64_t chunk_hash(const unsigned char *p, size_t n) {
    uint64_t l[4] = {0x243f6a8885a308d3ULL, 0x13198a2e03707344ULL, 0xa4093822299f31d0ULL,
                     0x082efa98ec4e6c89ULL};
    size_t blocks = n / 32;
    for (size_t b = 0; b < blocks; b++) {
        uint64_t w[4];
        memcpy(w, p + 32 * b, 32);
        for (int k = 0; k < 4; k++) l[k] = mix(l[k], w[k]);
    }
    uint64_t h = PX_HASH64_INIT;
    for (int k = 0; k < 4; k++) h = px_hash64_u64(h, l[k]);
    return px_hash64(h, p + 32 * blocks, n - 32 * blocks);
}

typedef struct job {
    const unsigned char *data;
    size_t n, chunks;
    uint64_t *out;
    int first, step; /* this thread hashes chunks first, first + step, ... */
} job;

static void *run_job(void *arg) {
    job *j = arg;
    for (size_t c = (size_t)j->first; c < j->chunks; c += (size_t)j->step) {
        size_t off = c * CHUNK, len = j->n - off < CHUNK ? j->n - off : CHUNK;
        j->out[c] = chunk_hash(j->data + off, len);
    }
    return NULL;
}

uint64_t px_checksum(const void *data, size_t n) {
    size_t chunks = n / CHUNK + 1;
    uint64_t one, *out = chunks == 1 ? &one : calloc(chunks, sizeof *out);
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    int threads = (int)(cpus < 1 ? 1 : cpus > MAX_THREADS ? MAX_THREADS : cpus);
    if ((size_t)threads > chunks) threads = (int)chunks;
    if (!out) threads = 0; /* no memory for the table: serial fallback below */
    job jobs[MAX_THREADS];
    pthread_t tid[MAX_THREADS];
    int started = 0;
    for (int t = 0; t < threads; t++) {
        jobs[t] = (job){data, n, chunks, out, t, threads};
        if (t > 0 && pthread_create(&tid[t], NULL, run_job, &jobs[t]) == 0) started |= 1 << t;
    }
    if (threads > 0) {
        run_job(&jobs[0]);
        for (int t = 1; t < threads; t++)
            if (started & (1 << t))
                pthread_join(tid[t], NULL);
            else
                run_job(&jobs[t]); /* could not start: do its share here */
    }
    uint64_t h = px_hash64_u64(PX_HASH64_INIT, (uint64_t)n);
    if (!out) {
        for (size_t c = 0; c < chunks; c++) {
            size_t off = c * CHUNK, len = n - off < CHUNK ? n - off : CHUNK;
            h = px_hash64_u64(h, chunk_hash((const unsigned char *)data + off, len));
        }
        return h;
    }
    for (size_t c = 0; c < chunks; c++) h = px_hash64_u64(h, out[c]);
    if (out != &one) free(out);
    return h;
}
