#include "sync_mode.h"

#include <string.h>

static int64_t every(const px_comm_opts *o) {
    return o->sync_every > 1 ? o->sync_every : 1;
}

int px_sync_mode_relaxed(const px_comm_opts *o) {
    return o->wire != PX_WIRE_FP32 || o->wire_error_feedback || every(o) > 1 || o->staleness > 0;
}

/* Appends to out[len..cap) like snprintf, never past cap. */
#define ADD(...)                                                                                   \
    do {                                                                                           \
        if (len < cap) {                                                                           \
            int n_ = snprintf(out + len, cap - len, __VA_ARGS__);                                  \
            if (n_ > 0) len += (size_t)n_;                                                         \
        }                                                                                          \
    } while (0)

void px_sync_mode_name(const px_comm_opts *o, char *out, size_t cap) {
    size_t len = 0;
    out[0] = 0;
    if (!px_sync_mode_relaxed(o)) {
        snprintf(out, cap, "exact");
        return;
    }
    const char *sep = "";
    if (o->wire != PX_WIRE_FP32) {
        ADD("wire %s", px_wire_format_name(o->wire));
        if (o->wire_error_feedback) ADD(" with error feedback");
        sep = ", ";
    }
    if (every(o) > 1) {
        ADD("%s", sep);
        ADD("sync every %lld", (long long)every(o));
        if (o->local_sgd_after > 0) ADD(" (after %lld exact steps)", (long long)o->local_sgd_after);
        sep = ", ";
    }
    if (o->staleness > 0) {
        ADD("%s", sep);
        ADD("staleness %lld", (long long)o->staleness);
    }
}

void px_sync_mode_flags(const px_comm_opts *o, char *out, size_t cap) {
    size_t len = 0;
    out[0] = 0;
    if (o->wire != PX_WIRE_FP32) {
        ADD("--wire %s", px_wire_format_name(o->wire));
    }
    if (o->wire_error_feedback) ADD(" --wire-error-feedback");
    if (every(o) > 1) ADD(" --sync-every %lld", (long long)every(o));
    if (every(o) > 1 && o->local_sgd_after > 0)
        ADD(" --local-sgd-after %lld", (long long)o->local_sgd_after);
    if (o->staleness > 0) ADD(" --staleness %lld", (long long)o->staleness);
    if (out[0] == ' ') memmove(out, out + 1, strlen(out));
}

int px_sync_mode_differs(const px_comm_opts *a, const px_comm_opts *b) {
    return a->wire != b->wire || a->wire_error_feedback != b->wire_error_feedback ||
           every(a) != every(b) || (every(a) > 1 && a->local_sgd_after != b->local_sgd_after) ||
           a->staleness != b->staleness;
}

void px_sync_mode_json(FILE *f, const px_comm_opts *o) {
    char name[256];
    px_sync_mode_name(o, name, sizeof name);
    fprintf(f,
            "\"sync_mode\": {\"name\": \"%s\", \"exact\": %s, \"wire\": \"%s\", "
            "\"wire_error_feedback\": %s, \"sync_every\": %lld, \"local_sgd_after\": %lld, "
            "\"staleness\": %lld}",
            name, px_sync_mode_relaxed(o) ? "false" : "true", px_wire_format_name(o->wire),
            o->wire_error_feedback ? "true" : "false", (long long)every(o),
            (long long)(every(o) > 1 ? o->local_sgd_after : 0), (long long)o->staleness);
}
