/* A fast non-cryptographic 64-bit hash for integrity checks: checkpoint
 * checksums, data fingerprints compared across ranks, model identity. The
 * result depends on how the data is split into calls: writers and readers
 * must feed the same pieces in the same order. */
#ifndef PX_HASH64_H
#define PX_HASH64_H

#include <stddef.h>
#include <stdint.h>

#define PX_HASH64_INIT 0x6a09e667f3bcc909ULL

uint64_t px_hash64(uint64_t h, const void *data, size_t n);

/* One round: mixes the 64-bit word w into h. Inline: converters hash a
 * value per field, where a call costs as much as the round. */
static inline uint64_t px_hash64_round(uint64_t h, uint64_t w) {
    h ^= w * 0x9e3779b97f4a7c15ULL;
    return ((h << 27) | (h >> 37)) * 0xff51afd7ed558ccdULL + 0x52dce729ULL;
}

static inline uint64_t px_hash64_u64(uint64_t h, uint64_t v) {
    return px_hash64_round(h, v);
}

#endif
