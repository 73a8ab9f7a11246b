/* The layout of a sharded checkpoint (checkpoint.h), shared by its writer
 * and its reader: which segments a variable has, how a segment's rows are
 * laid out and hashed, and the pieces' file names. */
#ifndef PX_CKPT_LAYOUT_H
#define PX_CKPT_LAYOUT_H

#include "px_train.h"

#include <stddef.h>
#include <stdint.h>

/* A segment is hashed in blocks of about this many bytes (at least a row):
 * a reader reads (and checks) at most one block beyond its rows at each end;
 * the manifest holds 8 bytes per block (32 KiB per GiB). */
#define PX_CK_BLOCK_BYTES ((int64_t)256 << 10)

/* A variable's rows (dims[0], 1 for a scalar), floats per row and bytes
 * (float32), from its shape: the data a rank holds of a parameter-server
 * variable may be smaller. */
int64_t px_ck_rows(const px_var_desc *d);
int64_t px_ck_dim(const px_var_desc *d);
int64_t px_ck_var_bytes(const px_var_desc *d);
/* Bytes of one stored row: its weights and the same row of each slot. */
int64_t px_ck_row_bytes(int64_t dim, int n_slots);
int64_t px_ck_block_rows(int64_t dim, int n_slots);
int64_t px_ck_n_blocks(int64_t rows, int64_t block_rows);
/* The segments of variable v in row order, as held now: the partitions of
 * a parameter-server variable (arrays on their owner only), or one segment
 * [0, rows) of a replicated one (the replica and its slots, owner rank 0).
 * Returns a malloc'ed array; *n segments. */
px_row_block *px_ck_segments(const px_program_desc *p, int64_t v, int n_slots, int64_t *n);
/* Rows [r0, r0 + n) of a segment (counted from its first row) in the
 * stored layout, into / out of buf. */
void px_ck_pack(const px_row_block *s, int n_slots, int64_t r0, int64_t n, float *buf);
void px_ck_unpack(const px_row_block *s, int n_slots, int64_t r0, int64_t n, const float *buf);
/* The piece of `rank` for the checkpoint at base path `path`:
 * "<path>.<nonce, 16 hex digits>.<rank>". */
void px_ck_piece_path(char *out, size_t cap, const char *path, uint64_t nonce, int rank);
/* px_hash64 over data in 1 MiB pieces (how manifests are checksummed). */
uint64_t px_ck_hash(uint64_t h, const void *data, size_t n);

#endif
