#include "pb_scan.h"

#include <string.h>

/* Reads a varint at *p (< end). Returns 0 and advances, -1 when malformed. */
static int read_varint(const uint8_t **p, const uint8_t *end, uint64_t *out) {
    uint64_t v = 0;
    for (int shift = 0; shift < 64 && *p < end; shift += 7) {
        uint8_t b = *(*p)++;
        v |= (uint64_t)(b & 0x7f) << shift;
        if (!(b & 0x80)) {
            *out = v;
            return 0;
        }
    }
    return -1;
}

/* 0: fine so far (or malformed, left to the unpacker); -1: problem in *r. */
static int scan(const ProtobufCMessageDescriptor *desc, const uint8_t *p, const uint8_t *end,
                int depth, int max_depth, px_pb_scan_result *r) {
    if (depth > max_depth) {
        r->problem = PX_PB_TOO_DEEP;
        return -1;
    }
    while (p < end) {
        uint64_t key, len;
        if (read_varint(&p, end, &key)) return 0;
        unsigned wire = (unsigned)(key & 7);
        uint64_t number = key >> 3;
        switch (wire) {
        case 0:
            if (read_varint(&p, end, &len)) return 0;
            break;
        case 1:
            if ((size_t)(end - p) < 8) return 0;
            p += 8;
            break;
        case 5:
            if ((size_t)(end - p) < 4) return 0;
            p += 4;
            break;
        case 2: {
            if (read_varint(&p, end, &len) || len > (uint64_t)(end - p)) return 0;
            const ProtobufCFieldDescriptor *f =
                number <= UINT32_MAX
                    ? protobuf_c_message_descriptor_get_field(desc, (unsigned)number)
                    : NULL;
            if (f && f->type == PROTOBUF_C_TYPE_MESSAGE &&
                scan((const ProtobufCMessageDescriptor *)f->descriptor, p, p + len, depth + 1,
                     max_depth, r))
                return -1;
            if (f && f->type == PROTOBUF_C_TYPE_STRING && memchr(p, 0, (size_t)len)) {
                r->problem = PX_PB_NUL_IN_STRING;
                r->message = desc->short_name;
                r->field = f->name;
                return -1;
            }
            p += len;
            break;
        }
        default: /* groups (3, 4) and invalid types: protobuf-c refuses them */ return 0;
        }
    }
    return 0;
}

int px_pb_scan(const ProtobufCMessageDescriptor *desc, const uint8_t *buf, size_t len,
               int max_depth, px_pb_scan_result *r) {
    *r = (px_pb_scan_result){PX_PB_OK, NULL, NULL};
    return scan(desc, buf, buf + len, 1, max_depth, r);
}
