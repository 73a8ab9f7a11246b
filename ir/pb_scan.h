/* Checks a protobuf message on the wire before protobuf-c's unpacker sees
 * it: nesting depth (the unpacker recurses and overflows the stack on hostile
 * input: a 34 KB model can nest types 5,000 deep) and NUL bytes in string
 * fields (which the unpacker's C strings would silently cut short). */
#ifndef PX_PB_SCAN_H
#define PX_PB_SCAN_H

#include <protobuf-c/protobuf-c.h>
#include <stddef.h>
#include <stdint.h>

/* Deepest message nesting any legitimate model needs is below this: each
 * subgraph level is NodeProto > AttributeProto > GraphProto (3 messages), so
 * the PX_CONTROL_FLOW_MAX_DEPTH (32) levels of If/Loop bodies the importer
 * accepts take ~100, and type nesting (sequence of map of ...) is short.
 * Deeper input is refused before protobuf-c's recursive unpack sees it. */
#define PX_PB_MAX_DEPTH 160

typedef enum px_pb_problem {
    PX_PB_OK = 0,
    PX_PB_TOO_DEEP,      /* submessages nest deeper than max_depth */
    PX_PB_NUL_IN_STRING, /* a string field holds a NUL byte (protobuf-c would cut it there) */
} px_pb_problem;

typedef struct px_pb_scan_result {
    px_pb_problem problem;
    const char *message; /* for PX_PB_NUL_IN_STRING: message type and field */
    const char *field;
} px_pb_scan_result;

/* Scans buf, read as a message of type desc: submessages may nest at most
 * max_depth levels (the top message is level 1) and string fields may not
 * hold NUL bytes. Returns 0 when fine, -1 with *r filled otherwise. Wire
 * errors (bad varints, lengths past the end, groups) are not reported here:
 * scanning stops at them and the unpacker rejects the message. The scan is
 * iterative over fields and recursive only into message fields, at most
 * max_depth frames; each byte is visited once per level it is nested in. */
int px_pb_scan(const ProtobufCMessageDescriptor *desc, const uint8_t *buf, size_t len,
               int max_depth, px_pb_scan_result *r);

#endif
