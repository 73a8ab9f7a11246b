/* A fast checksum of a whole buffer (the cross-rank data check hashes every
 * byte of every input file): four independent lanes per thread, the buffer
 * cut into fixed 16 MiB chunks hashed on up to 8 threads and combined in
 * order, so the value never depends on the thread count. Not cryptographic. */
#ifndef PX_CHECKSUM_H
#define PX_CHECKSUM_H

#include <stddef.h>
#include <stdint.h>

uint64_t px_checksum(const void *data, size_t n);

#endif
