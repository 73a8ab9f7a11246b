/* Tensor kernels that take a window of their input: Slice and Pad (a pad is
 * a window larger than the input, a negative pad a smaller one). Each has a
 * static form, where the compiler resolved starts / pads, and a dynamic
 * form, where they arrive in buffers computed at run time and must produce
 * the output shape the program was compiled for. */
#include "px_enums.h"
#include "px_slice_clamp.h"
#include "tensor_internal.h"

#include <stdio.h>
#include <string.h>

/* Reads an optional 1-D integer list (int32 or int64) described by t. */
static int read_list(const void *p, const px_kt *t, int64_t *out, int cap) {
    if (!p || !t->dtype) return -1;
    int n = (int)(t->numel < cap ? t->numel : cap);
    for (int i = 0; i < n; i++) out[i] = pxk_get_i64(p, t->dtype, i);
    return (int)t->numel;
}

static void shape_str(const px_kt *t, const int64_t *dims, char *buf, size_t cap) {
    size_t len = 0;
    buf[len++] = '[';
    for (int i = 0; i < t->rank && len + 24 < cap; i++)
        len += (size_t)snprintf(buf + len, cap - len, "%s%lld", i ? "," : "", (long long)dims[i]);
    snprintf(buf + len, cap - len, "]");
}

/* ---- Slice ---- */

/* out[i] = in[start + i*step] on every axis. Trailing axes taken whole are
 * merged into one block, so the innermost sliced axis copies blocks (one
 * memcpy when its step is 1). */
static void slice_core(const px_kt *in, const px_kt *out, const int64_t *starts,
                       const int64_t *steps, const char *src, char *dst) {
    int64_t es = pxt_esize(out->dtype);
    if (out->numel == 0) return;
    if (in->rank == 0) {
        memcpy(dst, src, (size_t)es);
        return;
    }
    int64_t stride[PX_K_MAX_RANK] = {0}, s = es;
    for (int d = in->rank - 1; d >= 0; d--) {
        stride[d] = s;
        s *= in->dims[d];
    }
    /* k: the innermost axis that is not taken whole; blk: bytes below it */
    int k = in->rank - 1;
    int64_t blk = es;
    while (k > 0 && starts[k] == 0 && steps[k] == 1 && out->dims[k] == in->dims[k]) {
        blk *= in->dims[k];
        k--;
    }
    int64_t count = out->dims[k], src_step = steps[k] * stride[k];
    int64_t base = 0;
    for (int d = 0; d <= k; d++) base += starts[d] * stride[d];
    int64_t idx[PX_K_MAX_RANK] = {0}, off = base, rows = 1;
    for (int d = 0; d < k; d++) rows *= out->dims[d];
    for (int64_t row = 0; row < rows; row++) {
        pxt_strided_copy(dst, src + off, count, blk, src_step);
        dst += count * blk;
        for (int d = k - 1; d >= 0; d--) {
            off += steps[d] * stride[d];
            if (++idx[d] < out->dims[d]) break;
            off -= steps[d] * stride[d] * out->dims[d];
            idx[d] = 0;
        }
    }
}

/* px_k_slice — Slice with starts/steps resolved by the compiler (clamped,
 * one per axis).
 * buf: [in, out]
 * p:   in tensor, out tensor, starts[rank], steps[rank] */
void px_k_slice(void *const *buf, const int64_t *p) {
    px_kcur c = {p};
    px_kt in = px_kp_tensor(&c), out = px_kp_tensor(&c);
    int64_t starts[PX_K_MAX_RANK] = {0}, steps[PX_K_MAX_RANK] = {0};
    px_kp_ints(&c, starts, in.rank);
    px_kp_ints(&c, steps, in.rank);
    slice_core(&in, &out, starts, steps, buf[0], buf[1]);
}

/* px_k_slice_dyn — Slice whose starts/ends/axes/steps are computed at run
 * time (int32 or int64 lists). They must give the output shape the program
 * was compiled with; anything else ends the program naming the node.
 * buf: [in, out, starts, ends, axes or NULL, steps or NULL]
 * p:   in tensor, out tensor, starts, ends, axes, steps tensors (dtype 0,
 *      rank 0 when absent), node name (packed) */
void px_k_slice_dyn(void *const *buf, const int64_t *p) {
    px_kcur c = {p};
    px_kt in = px_kp_tensor(&c), out = px_kp_tensor(&c);
    px_kt ts = px_kp_tensor(&c), te = px_kp_tensor(&c), ta = px_kp_tensor(&c),
          tt = px_kp_tensor(&c);
    int r = in.rank;
    int64_t starts[PX_K_MAX_RANK] = {0}, ends[PX_K_MAX_RANK] = {0}, axes[PX_K_MAX_RANK] = {0},
            steps[PX_K_MAX_RANK] = {0};
    int n = read_list(buf[2], &ts, starts, PX_K_MAX_RANK);
    int ne = read_list(buf[3], &te, ends, PX_K_MAX_RANK);
    int na = read_list(buf[4], &ta, axes, PX_K_MAX_RANK);
    int nt = read_list(buf[5], &tt, steps, PX_K_MAX_RANK);
    int64_t first[PX_K_MAX_RANK] = {0}, step[PX_K_MAX_RANK] = {0}, len[PX_K_MAX_RANK] = {0};
    int seen[PX_K_MAX_RANK] = {0};
    const char *why = NULL;
    if (n > r || ne != n || (na >= 0 && na != n) || (nt >= 0 && nt != n))
        why = "starts, ends, axes and steps must have the same length, at most the rank";
    for (int a = 0; a < r; a++) {
        first[a] = 0;
        step[a] = 1;
        len[a] = in.dims[a];
    }
    for (int i = 0; !why && i < n; i++) {
        int64_t a = na >= 0 ? axes[i] : i;
        if (a < 0) a += r;
        if (a < 0 || a >= r || seen[a]++)
            why = "axes has an entry out of range or repeated";
        else if (nt >= 0 && steps[i] == 0)
            why = "steps has a zero";
        else {
            step[a] = nt >= 0 ? steps[i] : 1;
            px_slice_axis(in.dims[a], starts[i], ends[i], step[a], &first[a], &len[a]);
        }
    }
    for (int a = 0; !why && a < r; a++)
        if (len[a] != out.dims[a]) why = "the slice has another shape than the compiled output";
    if (why) {
        char name[256], got[256], want[256];
        pxt_read_name(&c, name, sizeof name);
        shape_str(&out, len, got, sizeof got);
        shape_str(&out, out.dims, want, sizeof want);
        px_rt_fail("Slice node '%s': %s (slice shape %s, compiled for %s)", name, why, got, want);
    }
    slice_core(&in, &out, first, step, buf[0], buf[1]);
}

/* ---- Pad ---- */

/* Input coordinate of output coordinate o on an axis of n elements padded
 * by `begin` in front; -1 where constant padding applies. */
static int64_t pad_map(int mode, int64_t o, int64_t begin, int64_t n) {
    int64_t i = o - begin;
    if (i >= 0 && i < n) return i;
    switch (mode) {
    case PX_PAD_EDGE: return i < 0 ? 0 : n - 1;
    case PX_PAD_REFLECT: {
        if (n == 1) return 0;
        int64_t period = 2 * (n - 1);
        i %= period;
        if (i < 0) i += period;
        return i < n ? i : period - i;
    }
    case PX_PAD_WRAP: i %= n; return i < 0 ? i + n : i;
    default: return -1;
    }
}

/* Each output row (innermost axis) is the input row in the middle (one
 * memcpy) with its ends constant (one fill each) or mapped element by
 * element, or all constant when an outer coordinate falls in constant
 * padding. */
static void pad_core(const px_kt *in, const px_kt *out, int mode, const int64_t *begin,
                     const unsigned char *value, const char *src, char *dst) {
    int64_t es = pxt_esize(out->dtype);
    if (out->numel == 0) return;
    if (in->rank == 0) {
        memcpy(dst, src, (size_t)es);
        return;
    }
    int r = in->rank, last = r - 1;
    int64_t stride[PX_K_MAX_RANK] = {0}, s = es;
    for (int d = r - 1; d >= 0; d--) {
        stride[d] = s;
        s *= in->dims[d];
    }
    int64_t n = in->dims[last], width = out->dims[last], b = begin[last];
    /* the output columns [lo, hi) that read input columns lo-b .. hi-b-1 */
    int64_t lo = b > 0 ? b : 0, hi = b + n < width ? b + n : width;
    if (hi < lo) hi = lo;
    int64_t idx[PX_K_MAX_RANK] = {0}, rows = out->numel / width;
    for (int64_t row = 0; row < rows; row++, dst += width * es) {
        int64_t off = 0, inside = 1;
        for (int d = 0; d < last; d++) {
            int64_t i = pad_map(mode, idx[d], begin[d], in->dims[d]);
            if (i < 0) inside = 0;
            off += i * stride[d];
        }
        if (!inside || n == 0) {
            pxt_fill(dst, value, width, es);
        } else if (mode == PX_PAD_CONSTANT) {
            /* constant ends around the middle: one fill each (Slice gradients
             * pad every row; an element-wise memcpy was most of their time) */
            const char *srow = src + off;
            int64_t l = lo < width ? lo : width, h = hi > l ? hi : l;
            pxt_fill(dst, value, l, es);
            if (h > l) memcpy(dst + l * es, srow + (l - b) * es, (size_t)((h - l) * es));
            pxt_fill(dst + h * es, value, width - h, es);
        } else {
            const char *srow = src + off;
            for (int64_t o = 0; o < width; o++) {
                if (o == lo && hi > lo) { /* the middle: one copy */
                    memcpy(dst + lo * es, srow + (lo - b) * es, (size_t)((hi - lo) * es));
                    o = hi - 1;
                    continue;
                }
                int64_t i = pad_map(mode, o, b, n);
                memcpy(dst + o * es, i < 0 ? (const char *)value : srow + i * es, (size_t)es);
            }
        }
        for (int d = last - 1; d >= 0; d--) {
            if (++idx[d] < out->dims[d]) break;
            idx[d] = 0;
        }
    }
}

/* px_k_pad — Pad with the amounts resolved by the compiler. mode: 0
 * constant, 1 reflect, 2 edge, 3 wrap; negative pads crop.
 * buf: [in, out, constant value or NULL (a scalar of out's dtype)]
 * p:   in tensor, out tensor, mode, begins[rank] (pads before each axis),
 *      the constant's bytes in the low bytes of one int64 (used when the
 *      value buffer is NULL) */
void px_k_pad(void *const *buf, const int64_t *p) {
    px_kcur c = {p};
    px_kt in = px_kp_tensor(&c), out = px_kp_tensor(&c);
    int mode = (int)px_kp_i64(&c);
    int64_t begin[PX_K_MAX_RANK] = {0};
    px_kp_ints(&c, begin, in.rank);
    uint64_t w = (uint64_t)px_kp_i64(&c);
    unsigned char value[8];
    for (int b = 0; b < 8; b++) value[b] = (unsigned char)(w >> (8 * b));
    int64_t es = pxt_esize(out.dtype);
    if (buf[2]) memcpy(value, buf[2], (size_t)(es < 8 ? es : 8));
    pad_core(&in, &out, mode, begin, value, buf[0], buf[1]);
}

/* px_k_pad_dyn — Pad whose pads (and axes) are computed at run time (int32
 * or int64). They must give the compiled output shape; anything else ends
 * the program naming the node.
 * buf: [in, out, constant value or NULL, pads, axes or NULL]
 * p:   in tensor, out tensor, mode, pads tensor, axes tensor (dtype 0, rank
 *      0 when absent), constant bytes in one int64, node name (packed) */
void px_k_pad_dyn(void *const *buf, const int64_t *p) {
    px_kcur c = {p};
    px_kt in = px_kp_tensor(&c), out = px_kp_tensor(&c);
    int mode = (int)px_kp_i64(&c);
    px_kt tp = px_kp_tensor(&c), ta = px_kp_tensor(&c);
    uint64_t w = (uint64_t)px_kp_i64(&c);
    unsigned char value[8];
    for (int b = 0; b < 8; b++) value[b] = (unsigned char)(w >> (8 * b));
    int64_t es = pxt_esize(out.dtype);
    if (buf[2]) memcpy(value, buf[2], (size_t)(es < 8 ? es : 8));
    int r = in.rank;
    int64_t pads[2 * PX_K_MAX_RANK] = {0}, axes[PX_K_MAX_RANK] = {0};
    int64_t begin[PX_K_MAX_RANK] = {0}, end[PX_K_MAX_RANK] = {0}, got[PX_K_MAX_RANK] = {0};
    int np = read_list(buf[3], &tp, pads, 2 * PX_K_MAX_RANK);
    int na = read_list(buf[4], &ta, axes, PX_K_MAX_RANK);
    if (na < 0) {
        na = r;
        for (int i = 0; i < r; i++) axes[i] = i;
    }
    const char *why = NULL;
    int seen[PX_K_MAX_RANK] = {0};
    if (na > r || np != 2 * na) why = "pads must have 2 entries per padded axis";
    for (int i = 0; !why && i < na; i++) {
        int64_t a = axes[i] < 0 ? axes[i] + r : axes[i];
        if (a < 0 || a >= r || seen[a]++) {
            why = "axes has an entry out of range or repeated";
            break;
        }
        begin[a] = pads[i];
        end[a] = pads[i + na];
    }
    for (int a = 0; !why && a < r; a++) {
        got[a] = in.dims[a] + begin[a] + end[a];
        if (got[a] != out.dims[a])
            why = "the padded shape differs from the compiled output";
        else if (mode != PX_PAD_CONSTANT && in.dims[a] == 0 && got[a] > 0)
            why = "only constant mode can pad an empty axis";
    }
    if (why) {
        char name[256], gs[256], ws[256];
        pxt_read_name(&c, name, sizeof name);
        shape_str(&out, got, gs, sizeof gs);
        shape_str(&out, out.dims, ws, sizeof ws);
        px_rt_fail("Pad node '%s': %s (padded shape %s, compiled for %s)", name, why, gs, ws);
    }
    pad_core(&in, &out, mode, begin, value, buf[0], buf[1]);
}
