#include "partition_cache.h"

#include "checkpoint.h"
#include "file_atomic.h"
#include "hash64.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

uint64_t px_partition_cache_key(const px_program_desc *p, int ranks, int ranks_per_node) {
    uint64_t h = px_hash64_u64(PX_HASH64_INIT, px_model_identity(p));
    h = px_hash64_u64(h, (uint64_t)ranks);
    h = px_hash64_u64(h, (uint64_t)p->batch);
    return px_hash64_u64(h, (uint64_t)ranks_per_node);
}

int px_partition_cache_read(const char *path, uint64_t key, int64_t *parts, char *err, size_t cap) {
    FILE *f = fopen(path, "r");
    if (!f) {
        if (errno == ENOENT) return 0;
        snprintf(err, cap, "--partitions-cache %s: %s", path, strerror(errno));
        return -1;
    }
    unsigned long long k = 0;
    long long n = 0;
    char magic[32] = "";
    int ok = fscanf(f, "%31[^\n]\nkey %16llx\npartitions %lld\n", magic, &k, &n) == 3 &&
             !strcmp(magic, "parallax-partitions 1") && n >= 1 && n <= 1000000;
    fclose(f);
    if (!ok) {
        snprintf(err, cap, "--partitions-cache %s is not a partition cache", path);
        return -1;
    }
    if (k != key) {
        snprintf(err, cap,
                 "note: --partitions-cache %s was measured for another model, rank count, batch "
                 "or --ranks-per-node: not used",
                 path);
        return 0;
    }
    *parts = n;
    return 1;
}

int px_partition_cache_write(const char *path, uint64_t key, int64_t parts, char *err, size_t cap) {
    px_atomic_file af;
    if (px_atomic_open(&af, path, err, cap)) return -1;
    fprintf(af.f, "parallax-partitions 1\nkey %016llx\npartitions %lld\n", (unsigned long long)key,
            (long long)parts);
    return px_atomic_commit(&af, err, cap);
}
