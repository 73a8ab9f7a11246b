/* Element types. Values equal ONNX TensorProto.DataType so import/export
 * is a plain cast. */
#ifndef PX_DTYPE_H
#define PX_DTYPE_H

#include <stddef.h>

typedef enum px_dtype {
    PX_UNDEFINED = 0,
    PX_F32 = 1,
    PX_U8 = 2,
    PX_I8 = 3,
    PX_U16 = 4,
    PX_I16 = 5,
    PX_I32 = 6,
    PX_I64 = 7,
    PX_STRING = 8,
    PX_BOOL = 9,
    PX_F16 = 10,
    PX_F64 = 11,
    PX_U32 = 12,
    PX_U64 = 13,
    PX_C64 = 14,
    PX_C128 = 15,
    PX_BF16 = 16,
    PX_DTYPE_COUNT
} px_dtype;

/* Bytes per element; 0 for UNDEFINED and for STRING (stored as px_bytes). */
size_t px_dtype_size(px_dtype t);
/* Lower-case name as in ONNX ("float", "int64", "bool"...); "?" if invalid. */
const char *px_dtype_name(px_dtype t);
/* Parses a px_dtype_name() result; PX_UNDEFINED if unknown. */
px_dtype px_dtype_from_name(const char *name);
int px_dtype_valid(int raw);       /* 1 if raw is one of the enum values above */
int px_dtype_is_float(px_dtype t); /* f16, bf16, f32, f64 */
int px_dtype_is_int(px_dtype t);   /* signed or unsigned integers (not bool) */
int px_dtype_is_signed(px_dtype t);

/* Dtype classes, as bits: what an elementwise dtype rule admits (op.h's
 * signature letters) and what a runtime kernel holds (every class but
 * OTHER). */
enum px_dtype_class {
    PX_DTC_FLOAT = 1u << 0, /* f16, bf16, f32, f64 */
    PX_DTC_SINT = 1u << 1,  /* int8..int64 */
    PX_DTC_UINT = 1u << 2,  /* uint8..uint64 */
    PX_DTC_BOOL = 1u << 3,
    PX_DTC_OTHER = 1u << 4, /* string, complex, undefined: no kernel holds them */
    PX_DTC_NUMERIC = PX_DTC_FLOAT | PX_DTC_SINT | PX_DTC_UINT,
    PX_DTC_KERNEL = PX_DTC_NUMERIC | PX_DTC_BOOL,
    PX_DTC_ALL = PX_DTC_KERNEL | PX_DTC_OTHER,
};
/* The class bit of t. */
unsigned px_dtype_class(px_dtype t);

#endif
