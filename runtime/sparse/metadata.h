/* The masks of the masked weights as the saved model's metadata:
 * metadata_props "parallax.sparsity" = one JSON object
 *   {"version": 1, "weights": [{"name", "sparsity" (of the mask), "pattern",
 *     "live", "total", "mask"}...]}
 * where "mask" is the storage-order bitmap of the live entries (bit k of
 * byte k/8, least significant first: 1 = live), base64. The pruned entries
 * are also the exact zeros of the saved initializer; the bitmap keeps the
 * mask where a live weight happens to be zero (a RigL weight grown at zero). */
#ifndef PX_SPARSE_METADATA_H
#define PX_SPARSE_METADATA_H

#define PX_SPARSITY_METADATA_KEY "parallax.sparsity"

/* The JSON value (malloc'd), or NULL when the program has no masked weight. */
char *px_sparse_metadata_json(void);

#endif
