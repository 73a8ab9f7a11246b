/* Static shapes and tensors with owned data. */
#ifndef PX_TENSOR_H
#define PX_TENSOR_H

#include "diag.h"
#include "dtype.h"

#include <stdint.h>

#define PX_MAX_RANK 16

/* A shape. rank == -1: rank unknown. dims[i] == -1: dim unknown; then
 * px_shape_sym(s, i) may name it, e.g. "batch" for an ONNX dim_param.
 * Shapes are plain values: copy freely. The names are held as ids of 4
 * bytes, not pointers of 8: every value and tensor of a graph holds a
 * shape, and a model of 100k initializers has about a million of them.
 * Equal ids, equal names; 0: no name. */
typedef struct px_shape {
    int rank;
    uint32_t sym_id[PX_MAX_RANK];
    int64_t dims[PX_MAX_RANK];
} px_shape;

/* The name of dim i (an interned string, px_intern), or NULL. */
const char *px_shape_sym(const px_shape *s, int i);
/* Names dim i (NULL: no name); the name is interned. Out of memory, the dim
 * is left without a name. */
void px_shape_set_sym(px_shape *s, int i, const char *name);

px_shape px_shape_unknown(void);
px_shape px_shape_scalar(void);
px_shape px_shape_make(int rank, const int64_t *dims);
int px_shape_is_static(const px_shape *s);                /* rank known and every dim >= 0 */
int px_shape_equal(const px_shape *a, const px_shape *b); /* same rank & dims (and syms) */
/* Number of elements; -1 if not static or if the product overflows int64. */
int64_t px_shape_numel(const px_shape *s);
/* Writes e.g. "[batch,3,224,224]", "[?]" for unknown rank, "[]" for scalars. */
const char *px_shape_str(const px_shape *s, char *buf, size_t cap);
/* a*b with overflow detection: returns 0 and sets *out, or -1 on overflow/negative. */
int px_mul_checked(int64_t a, int64_t b, int64_t *out);

/* Interns a string for the process lifetime (symbolic dims, op names). */
const char *px_intern(const char *s);

/* One element of a STRING tensor: ONNX strings are arbitrary bytes. */
typedef struct px_bytes {
    size_t len;
    char *data; /* owned, NUL-terminated for convenience */
} px_bytes;

enum px_tensor_storage { PX_STORAGE_MALLOC = 0, PX_STORAGE_MMAP = 1, PX_STORAGE_BORROWED = 2 };

/* A tensor with static shape. data holds numel elements, row-major,
 * little-endian, of px_dtype_size(dtype) bytes each (px_bytes for STRING;
 * f16/bf16 as raw uint16 bits). */
typedef struct px_tensor {
    px_dtype dtype;
    px_shape shape;
    size_t nbytes;
    void *data;
    int storage;    /* enum px_tensor_storage: how data is released */
    size_t map_len; /* for MMAP: length passed to munmap (data is page-aligned base + map_off) */
    size_t map_off;
} px_tensor;

/* Zero-filled tensor; NULL (with diag error) if the shape is not static or too large. */
px_tensor *px_tensor_new(px_dtype dtype, const px_shape *shape, px_diag *d);
px_tensor *px_tensor_clone(const px_tensor *t, px_diag *d);
void px_tensor_free(px_tensor *t);
int64_t px_tensor_numel(const px_tensor *t);
/* Element access converting through double / int64 (not for STRING). */
double px_tensor_get_f64(const px_tensor *t, int64_t i);
int64_t px_tensor_get_i64(const px_tensor *t, int64_t i);
void px_tensor_set_f64(px_tensor *t, int64_t i, double v);
void px_tensor_set_i64(px_tensor *t, int64_t i, int64_t v);
/* Bit-exact equality of dtype, shape and contents. */
int px_tensor_equal(const px_tensor *a, const px_tensor *b);
float px_f16_to_f32(uint16_t h);
uint16_t px_f32_to_f16(float f);
float px_bf16_to_f32(uint16_t h);
uint16_t px_f32_to_bf16(float f);

#endif
