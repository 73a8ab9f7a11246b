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
uint64_t px_hash64_u64(uint64_t h, uint64_t v);

#endif
