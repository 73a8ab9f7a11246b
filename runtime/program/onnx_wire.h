/* A small reader of the protobuf wire format of an ONNX model, enough to find
 * the initializers' bytes and to fingerprint the graph. Generated programs
 * read their weights with it at start (runtime/program/weights.c) without
 * linking protobuf; the compiler uses the same code for the fingerprint it
 * records, so both sides hash the same bytes the same way. Works over a
 * buffer (usually the mmap'd model file); tensors point into it. Every
 * length is checked: corrupt or truncated input gives an error, never a read
 * outside the buffer. */
#ifndef PX_ONNX_WIRE_H
#define PX_ONNX_WIRE_H

#include <stddef.h>
#include <stdint.h>

#define PX_WIRE_MAX_RANK 16

/* A byte string inside the buffer (not NUL-terminated). */
typedef struct px_wire_str {
    const uint8_t *p;
    size_t len;
} px_wire_str;

/* One GraphProto.initializer (TensorProto) as found in the buffer. */
typedef struct px_wire_tensor {
    px_wire_str name;
    int32_t dtype; /* TensorProto.DataType */
    int rank;
    int64_t dims[PX_WIRE_MAX_RANK];
    px_wire_str msg; /* the whole TensorProto (typed fields are decoded from it) */
    int has_raw;
    px_wire_str raw; /* raw_data */
    int typed_field; /* field number of the typed data seen (4, 5, 7, 10, 11), 0: none */
    int external;    /* data_location == EXTERNAL */
    px_wire_str location;
    int64_t ext_offset; /* 0 if absent */
    int64_t ext_length; /* -1 if absent */
} px_wire_tensor;

/* A node: its hash (op type, domain, inputs and outputs in order) and, for
 * messages, its name and op type. */
typedef struct px_wire_node {
    uint64_t hash;
    px_wire_str name, op_type;
} px_wire_node;

/* The parts of a ModelProto the runtime needs. Repeated `graph` fields are
 * merged as protobuf does (a --save'd model appends its trained initializers
 * in a second one). */
typedef struct px_wire_model {
    int n_inits;
    px_wire_tensor *inits; /* model order */
    int64_t n_nodes;
    px_wire_node *nodes; /* graph order */
} px_wire_model;

/* One field of a message: its number, wire type (0 varint, 1 fixed64, 2
 * length-delimited, 5 fixed32), value (varint, fixed) or bytes (s), and the
 * whole field as encoded (key included), for copying it as it is. */
typedef struct px_wire_field {
    int num, wire;
    uint64_t v;
    px_wire_str s, whole;
} px_wire_field;
/* The field of msg at offset *pos, which moves past it: 1, 0 at the end of
 * the message, -1 when it is malformed. */
int px_wire_next_field(px_wire_str msg, size_t *pos, px_wire_field *f);

/* Parses buf. Returns 0, or -1 with a message in err. */
int px_wire_parse_model(const uint8_t *buf, size_t len, px_wire_model *m, char *err, size_t cap);
void px_wire_model_free(px_wire_model *m);

/* 1 if the tensor's name equals the NUL-terminated s. */
int px_wire_name_is(const px_wire_tensor *t, const char *s);
/* Bytes of one element of an ONNX dtype (0: not a fixed-size type). */
size_t px_wire_dtype_size(int32_t dtype);
/* Elements the dims describe (-1 on overflow or a negative dim). */
int64_t px_wire_numel(const px_wire_tensor *t);

/* Copies elements [first, first + count) of an inline tensor (raw_data or
 * the typed fields, packed or not) into dst in the dtype's little-endian
 * storage. -1 with a message when the tensor holds fewer elements, keeps
 * its data externally, or its typed field does not fit the dtype. */
int px_wire_read_inline(const px_wire_tensor *t, int64_t first, int64_t count, void *dst, char *err,
                        size_t cap);

#endif
