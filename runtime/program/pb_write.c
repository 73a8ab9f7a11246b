#include "pb_write.h"

#include <stdlib.h>
#include <string.h>

size_t px_pb_varint_size(uint64_t v) {
    size_t n = 1;
    while (v >= 0x80) {
        v >>= 7;
        n++;
    }
    return n;
}

void px_pb_put_raw(px_pb_buf *b, const void *data, size_t n) {
    if (b->oom || n == 0) return;
    if (b->len + n > b->cap) {
        size_t cap = b->cap ? b->cap : 256;
        while (cap < b->len + n) cap *= 2;
        uint8_t *grown = realloc(b->data, cap);
        if (!grown) {
            b->oom = 1;
            return;
        }
        b->data = grown;
        b->cap = cap;
    }
    memcpy(b->data + b->len, data, n);
    b->len += n;
}

void px_pb_put_varint(px_pb_buf *b, uint64_t v) {
    uint8_t out[10];
    size_t n = 0;
    while (v >= 0x80) {
        out[n++] = (uint8_t)(v | 0x80);
        v >>= 7;
    }
    out[n++] = (uint8_t)v;
    px_pb_put_raw(b, out, n);
}

void px_pb_put_tag(px_pb_buf *b, int field, int wire) {
    px_pb_put_varint(b, (uint64_t)field << 3 | (uint64_t)wire);
}

void px_pb_put_int64(px_pb_buf *b, int field, int64_t v) {
    px_pb_put_tag(b, field, PX_PB_VARINT);
    px_pb_put_varint(b, (uint64_t)v); /* negative int64: ten bytes, as protobuf does */
}

void px_pb_put_bytes(px_pb_buf *b, int field, const void *data, size_t n) {
    px_pb_put_tag(b, field, PX_PB_LEN);
    px_pb_put_varint(b, n);
    px_pb_put_raw(b, data, n);
}

void px_pb_put_string(px_pb_buf *b, int field, const char *s) {
    px_pb_put_bytes(b, field, s, strlen(s));
}

void px_pb_free(px_pb_buf *b) {
    free(b->data);
    memset(b, 0, sizeof *b);
}
