#include "dtype.h"

#include <string.h>

static const struct {
    const char *name;
    size_t size;
} dtype_info[PX_DTYPE_COUNT] = {
    [PX_UNDEFINED] = {"undefined", 0},
    [PX_F32] = {"float", 4},
    [PX_U8] = {"uint8", 1},
    [PX_I8] = {"int8", 1},
    [PX_U16] = {"uint16", 2},
    [PX_I16] = {"int16", 2},
    [PX_I32] = {"int32", 4},
    [PX_I64] = {"int64", 8},
    [PX_STRING] = {"string", 0},
    [PX_BOOL] = {"bool", 1},
    [PX_F16] = {"float16", 2},
    [PX_F64] = {"double", 8},
    [PX_U32] = {"uint32", 4},
    [PX_U64] = {"uint64", 8},
    [PX_C64] = {"complex64", 8},
    [PX_C128] = {"complex128", 16},
    [PX_BF16] = {"bfloat16", 2},
};

int px_dtype_valid(int raw) {
    return raw > PX_UNDEFINED && raw < PX_DTYPE_COUNT;
}

size_t px_dtype_size(px_dtype t) {
    return px_dtype_valid((int)t) ? dtype_info[t].size : 0;
}

const char *px_dtype_name(px_dtype t) {
    return ((int)t >= 0 && t < PX_DTYPE_COUNT) ? dtype_info[t].name : "?";
}

px_dtype px_dtype_from_name(const char *name) {
    for (int t = 1; t < PX_DTYPE_COUNT; t++)
        if (strcmp(dtype_info[t].name, name) == 0) return (px_dtype)t;
    if (strcmp(name, "float32") == 0) return PX_F32;
    if (strcmp(name, "float64") == 0) return PX_F64;
    return PX_UNDEFINED;
}

int px_dtype_is_float(px_dtype t) {
    return t == PX_F32 || t == PX_F64 || t == PX_F16 || t == PX_BF16;
}

unsigned px_dtype_class(px_dtype t) {
    if (px_dtype_is_float(t)) return PX_DTC_FLOAT;
    if (px_dtype_is_int(t)) return px_dtype_is_signed(t) ? PX_DTC_SINT : PX_DTC_UINT;
    return t == PX_BOOL ? PX_DTC_BOOL : PX_DTC_OTHER;
}

int px_dtype_is_int(px_dtype t) {
    switch (t) {
    case PX_U8:
    case PX_I8:
    case PX_U16:
    case PX_I16:
    case PX_I32:
    case PX_I64:
    case PX_U32:
    case PX_U64: return 1;
    default: return 0;
    }
}

int px_dtype_is_signed(px_dtype t) {
    return t == PX_I8 || t == PX_I16 || t == PX_I32 || t == PX_I64 || px_dtype_is_float(t);
}
