/* Minimal protobuf encoding for the files the training runtime writes
 * (--save appends a GraphProto to the model's bytes). Only what those files
 * need: varints, tags, length-delimited fields, into a growable buffer. */
#ifndef PX_PB_WRITE_H
#define PX_PB_WRITE_H

#include <stddef.h>
#include <stdint.h>

enum { PX_PB_VARINT = 0, PX_PB_LEN = 2 };

typedef struct px_pb_buf {
    uint8_t *data;
    size_t len, cap;
    int oom; /* an allocation failed: the contents are incomplete */
} px_pb_buf;

/* Bytes the varint encoding of v takes (1..10). */
size_t px_pb_varint_size(uint64_t v);
void px_pb_put_raw(px_pb_buf *b, const void *data, size_t n);
void px_pb_put_varint(px_pb_buf *b, uint64_t v);
void px_pb_put_tag(px_pb_buf *b, int field, int wire);
/* field as a varint (int64, enum) */
void px_pb_put_int64(px_pb_buf *b, int field, int64_t v);
/* field as length-delimited bytes (string, bytes, a serialized message) */
void px_pb_put_bytes(px_pb_buf *b, int field, const void *data, size_t n);
void px_pb_put_string(px_pb_buf *b, int field, const char *s);
void px_pb_free(px_pb_buf *b);

#endif
