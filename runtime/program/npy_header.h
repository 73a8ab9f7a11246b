/* The .npy header (NumPy's format, versions 1 to 3): parsing and writing,
 * apart from any file access, so that readers that map a whole file, read a
 * header with pread (shards) or write arrays row by row (the converters) use
 * one definition. */
#ifndef PX_NPY_HEADER_H
#define PX_NPY_HEADER_H

#include <stddef.h>
#include <stdint.h>

#define PX_NPY_MAX_RANK 16

typedef struct px_array {
    int dtype; /* ONNX TensorProto.DataType; 0 if unsupported */
    int rank;
    int64_t dims[PX_NPY_MAX_RANK];
    int64_t numel;
    size_t nbytes;
    void *data; /* points into the mapping, or malloc'd for .pb */
    void *map;  /* mmap base (NULL when malloc'd) */
    size_t map_len;
} px_array;

/* Parses the header at the start of b (len bytes: the whole file, or at
 * least its header): dtype, rank, dims, numel and nbytes (checked against
 * overflow) into a, the offset of the data into *data_offset. It does not
 * check that the data is present. -1 with a message naming path. */
int px_npy_header_parse(const unsigned char *b, size_t len, px_array *a, size_t *data_offset,
                        const char *path, char *err, size_t cap);
/* Writes a version 1 header for a C-order array into out, padded with spaces
 * to a multiple of 64 bytes and to at least min_len bytes (so that a header
 * rewritten later with other dims keeps its length). Returns its length, 0
 * when dtype has no .npy spelling or cap is too small. */
size_t px_npy_header_format(unsigned char *out, size_t cap, int dtype, int rank,
                            const int64_t *dims, size_t min_len);
/* Longest version 1 header px_npy_header_format writes: 10 + 65535 bytes;
 * in practice far less (PX_NPY_HEADER_ROOM fits any shape of rank <= 16). */
#define PX_NPY_HEADER_ROOM 512

size_t px_rt_dtype_size(int dtype);
const char *px_rt_dtype_name(int dtype);
/* The ONNX dtype of a name px_rt_dtype_name gives ("float32"), 0 if none. */
int px_rt_dtype_from_name(const char *name);

#endif
