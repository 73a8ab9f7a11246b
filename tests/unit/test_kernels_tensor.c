/* Tensor-family kernels called directly (runtime/kernels/tensor*.c), against
 * hand-computed numbers or a naive index-formula reference, plus the
 * lowerings' refusals (strings, training-mode Dropout). */
#include "graph.h"
#include "lower.h"
#include "px_kernel.h"

#include <criterion/criterion.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* ---------- parameter builder (mirrors px_kc_* in compiler/codegen/lower.c) ---------- */

typedef struct params {
    int n;
    int64_t v[256];
} params;

static void p_i64(params *p, int64_t v) {
    cr_assert_lt(p->n, 256);
    p->v[p->n++] = v;
}

static void p_tensor(params *p, int dtype, int rank, const int64_t *dims) {
    p_i64(p, dtype);
    p_i64(p, rank);
    for (int i = 0; i < rank; i++) p_i64(p, dims[i]);
}

static void p_ints(params *p, int n, const int64_t *v) {
    for (int i = 0; i < n; i++) p_i64(p, v[i]);
}

static void p_name(params *p, const char *s) {
    int64_t len = (int64_t)strlen(s);
    p_i64(p, len);
    for (int64_t i = 0; i < len; i += 8) {
        uint64_t w = 0;
        for (int64_t b = 0; b < 8 && i + b < len; b++)
            w |= (uint64_t)(unsigned char)s[i + b] << (8 * b);
        p_i64(p, (int64_t)w);
    }
}

static void call(const char *name, void *const *buf, const params *p) {
    px_kernel_fn fn = px_kernel_find(name);
    cr_assert_not_null(fn, "kernel %s is not registered", name);
    fn(buf, p->v);
}

enum { F32 = 1, U8 = 2, I32 = 6, I64 = 7, BOOL = 9, F16 = 10, F64 = 11 };

/* ---------- Transpose ---------- */

Test(kernels_tensor, transpose_2d) {
    float in[6] = {1, 2, 3, 4, 5, 6}, out[6] = {0};
    const float want[6] = {1, 4, 2, 5, 3, 6}; /* [[1,2,3],[4,5,6]]^T */
    int64_t di[2] = {2, 3}, dout[2] = {3, 2}, perm[2] = {1, 0};
    params p = {0};
    p_tensor(&p, F32, 2, di);
    p_tensor(&p, F32, 2, dout);
    p_ints(&p, 2, perm);
    void *buf[2] = {in, out};
    call("px_k_transpose", buf, &p);
    cr_assert_arr_eq(out, want, sizeof want);
}

Test(kernels_tensor, transpose_keeps_inner_axis) {
    /* [2,2,3] perm (1,0,2): rows of 3 move as a block */
    int32_t in[12] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}, out[12] = {0};
    const int32_t want[12] = {0, 1, 2, 6, 7, 8, 3, 4, 5, 9, 10, 11};
    int64_t di[3] = {2, 2, 3}, dout[3] = {2, 2, 3}, perm[3] = {1, 0, 2};
    params p = {0};
    p_tensor(&p, I32, 3, di);
    p_tensor(&p, I32, 3, dout);
    p_ints(&p, 3, perm);
    void *buf[2] = {in, out};
    call("px_k_transpose", buf, &p);
    cr_assert_arr_eq(out, want, sizeof want);
}

Test(kernels_tensor, transpose_size1_axis_is_a_copy_or_2d) {
    /* [1,2,3] perm (2,0,1) -> [3,1,2]: after dropping the 1 it is a 2-D transpose */
    uint8_t in[6] = {1, 2, 3, 4, 5, 6}, out[6] = {0};
    const uint8_t want[6] = {1, 4, 2, 5, 3, 6};
    int64_t di[3] = {1, 2, 3}, dout[3] = {3, 1, 2}, perm[3] = {2, 0, 1};
    params p = {0};
    p_tensor(&p, U8, 3, di);
    p_tensor(&p, U8, 3, dout);
    p_ints(&p, 3, perm);
    void *buf[2] = {in, out};
    call("px_k_transpose", buf, &p);
    cr_assert_arr_eq(out, want, sizeof want);
    /* [2,1,3] perm (1,0,2): only the size-1 axis moves: same bytes */
    int64_t d2[3] = {2, 1, 3}, o2[3] = {1, 2, 3}, perm2[3] = {1, 0, 2};
    params q = {0};
    p_tensor(&q, U8, 3, d2);
    p_tensor(&q, U8, 3, o2);
    p_ints(&q, 3, perm2);
    call("px_k_transpose", buf, &q);
    cr_assert_arr_eq(out, in, sizeof in);
}

/* Every permutation of a [2,3,4,5] float16 tensor against the index formula
 * out[i0,i1,i2,i3] = in[j] with j_perm[k] = i_k. */
Test(kernels_tensor, transpose_all_perms_4d_f16) {
    const int64_t di[4] = {2, 3, 4, 5};
    uint16_t in[120], out[120];
    for (int i = 0; i < 120; i++) in[i] = (uint16_t)(0x3c00 + i);
    int64_t perm[4];
    int tested = 0;
    for (int a = 0; a < 4; a++)
        for (int b = 0; b < 4; b++)
            for (int c = 0; c < 4; c++)
                for (int e = 0; e < 4; e++) {
                    if (a == b || a == c || a == e || b == c || b == e || c == e) continue;
                    perm[0] = a, perm[1] = b, perm[2] = c, perm[3] = e;
                    int64_t dout[4];
                    for (int k = 0; k < 4; k++) dout[k] = di[perm[k]];
                    params p = {0};
                    p_tensor(&p, F16, 4, di);
                    p_tensor(&p, F16, 4, dout);
                    p_ints(&p, 4, perm);
                    memset(out, 0, sizeof out);
                    void *buf[2] = {in, out};
                    call("px_k_transpose", buf, &p);
                    int64_t idx[4];
                    for (int o = 0; o < 120; o++) {
                        int rem = o;
                        for (int k = 3; k >= 0; k--) {
                            idx[k] = rem % dout[k];
                            rem /= (int)dout[k];
                        }
                        int64_t j[4];
                        for (int k = 0; k < 4; k++) j[perm[k]] = idx[k];
                        int64_t src = ((j[0] * 3 + j[1]) * 4 + j[2]) * 5 + j[3];
                        cr_assert_eq(out[o], in[src], "perm %d%d%d%d, element %d", a, b, c, e, o);
                    }
                    tested++;
                }
    cr_assert_eq(tested, 24);
}

/* ---------- Slice ---------- */

Test(kernels_tensor, slice_negative_step) {
    /* x = 0..9, x[8:0:-3] = [8, 5, 2] */
    int64_t in[10], out[3] = {0};
    for (int i = 0; i < 10; i++) in[i] = i;
    const int64_t want[3] = {8, 5, 2};
    int64_t di[1] = {10}, dout[1] = {3}, start[1] = {8}, step[1] = {-3};
    params p = {0};
    p_tensor(&p, I64, 1, di);
    p_tensor(&p, I64, 1, dout);
    p_ints(&p, 1, start);
    p_ints(&p, 1, step);
    void *buf[2] = {in, out};
    call("px_k_slice", buf, &p);
    cr_assert_arr_eq(out, want, sizeof want);
}

Test(kernels_tensor, slice_2d_rows_reversed_cols_whole) {
    /* [[1,2],[3,4],[5,6]][::-1, :] = [[5,6],[3,4],[1,2]] (blocks of whole rows) */
    double in[6] = {1, 2, 3, 4, 5, 6}, out[6] = {0};
    const double want[6] = {5, 6, 3, 4, 1, 2};
    int64_t di[2] = {3, 2}, start[2] = {2, 0}, step[2] = {-1, 1};
    params p = {0};
    p_tensor(&p, F64, 2, di);
    p_tensor(&p, F64, 2, di);
    p_ints(&p, 2, start);
    p_ints(&p, 2, step);
    void *buf[2] = {in, out};
    call("px_k_slice", buf, &p);
    cr_assert_arr_eq(out, want, sizeof want);
}

Test(kernels_tensor, slice_inner_stride) {
    /* [[0..4],[5..9]][:, 1::2] = [[1,3],[6,8]] */
    float in[10], out[4] = {0};
    for (int i = 0; i < 10; i++) in[i] = (float)i;
    const float want[4] = {1, 3, 6, 8};
    int64_t di[2] = {2, 5}, dout[2] = {2, 2}, start[2] = {0, 1}, step[2] = {1, 2};
    params p = {0};
    p_tensor(&p, F32, 2, di);
    p_tensor(&p, F32, 2, dout);
    p_ints(&p, 2, start);
    p_ints(&p, 2, step);
    void *buf[2] = {in, out};
    call("px_k_slice", buf, &p);
    cr_assert_arr_eq(out, want, sizeof want);
}

/* Slice with starts/ends computed at run time: x[-1:-4:-2] of 0..5 = [5, 3]. */
static void slice_dyn_run(int64_t start, int64_t end, int64_t *out) {
    int64_t in[6] = {0, 1, 2, 3, 4, 5}, starts[1] = {start}, ends[1] = {end}, steps[1] = {-2};
    int32_t axes[1] = {-1};
    int64_t di[1] = {6}, dout[1] = {2}, one[1] = {1};
    params p = {0};
    p_tensor(&p, I64, 1, di);
    p_tensor(&p, I64, 1, dout);
    p_tensor(&p, I64, 1, one);
    p_tensor(&p, I64, 1, one);
    p_tensor(&p, I32, 1, one);
    p_tensor(&p, I64, 1, one);
    p_name(&p, "dyn_slice");
    void *buf[6] = {in, out, starts, ends, axes, steps};
    call("px_k_slice_dyn", buf, &p);
}

Test(kernels_tensor, slice_dyn_negative_step) {
    int64_t out[2] = {0};
    const int64_t want[2] = {5, 3};
    slice_dyn_run(-1, -4, out);
    cr_assert_arr_eq(out, want, sizeof want);
}

/* starts/ends that give 3 elements where the program was compiled for 2 */
Test(kernels_tensor, slice_dyn_shape_mismatch_dies, .exit_code = 1) {
    int64_t out[2] = {0};
    slice_dyn_run(-1, -6, out);
    cr_assert_fail("px_k_slice_dyn accepted a slice of another shape");
}

/* ---------- Gather ---------- */

static void gather_params(params *p, int dtype, int r, const int64_t *dd, int q, const int64_t *di,
                          int ro, const int64_t *dout, int axis) {
    p_tensor(p, dtype, r, dd);
    p_tensor(p, I64, q, di);
    p_tensor(p, dtype, ro, dout);
    p_i64(p, axis);
    p_name(p, "embed/Gather");
}

Test(kernels_tensor, gather_rows_axis0) {
    /* table [[1,2],[3,4],[5,6]], indices [2,-3,1] -> rows 2, 0, 1 */
    float table[6] = {1, 2, 3, 4, 5, 6}, out[6] = {0};
    int64_t idx[3] = {2, -3, 1};
    const float want[6] = {5, 6, 1, 2, 3, 4};
    int64_t dd[2] = {3, 2}, di[1] = {3}, dout[2] = {3, 2};
    params p = {0};
    gather_params(&p, F32, 2, dd, 1, di, 2, dout, 0);
    void *buf[3] = {table, idx, out};
    call("px_k_gather", buf, &p);
    cr_assert_arr_eq(out, want, sizeof want);
}

Test(kernels_tensor, gather_axis1_int32_indices) {
    /* [[1,2,3],[4,5,6]] gather columns [[2,0]] on axis 1 -> shape [2,1,2] */
    int64_t data[6] = {1, 2, 3, 4, 5, 6}, out[4] = {0};
    int32_t idx[2] = {2, 0};
    const int64_t want[4] = {3, 1, 6, 4};
    int64_t dd[2] = {2, 3}, di[2] = {1, 2}, dout[3] = {2, 1, 2};
    params p = {0};
    p_tensor(&p, I64, 2, dd);
    p_tensor(&p, I32, 2, di);
    p_tensor(&p, I64, 3, dout);
    p_i64(&p, 1);
    p_name(&p, "g");
    void *buf[3] = {data, idx, out};
    call("px_k_gather", buf, &p);
    cr_assert_arr_eq(out, want, sizeof want);
}

/* px_rt_fail exits with status 1 after naming the node and the index. */
Test(kernels_tensor, gather_out_of_range_dies, .exit_code = 1) {
    float table[6] = {1, 2, 3, 4, 5, 6}, out[4];
    int64_t idx[2] = {0, 3};
    int64_t dd[2] = {3, 2}, di[1] = {2}, dout[2] = {2, 2};
    params p = {0};
    gather_params(&p, F32, 2, dd, 1, di, 2, dout, 0);
    void *buf[3] = {table, idx, out};
    call("px_k_gather", buf, &p);
    cr_assert_fail("px_k_gather returned for index 3 of a dim of size 3");
}

Test(kernels_tensor, gather_negative_out_of_range_dies, .exit_code = 1) {
    float table[6] = {1, 2, 3, 4, 5, 6}, out[2];
    int64_t idx[1] = {-4};
    int64_t dd[2] = {3, 2}, di[1] = {1}, dout[2] = {1, 2};
    params p = {0};
    gather_params(&p, F32, 2, dd, 1, di, 2, dout, 0);
    void *buf[3] = {table, idx, out};
    call("px_k_gather", buf, &p);
    cr_assert_fail("px_k_gather returned for index -4 of a dim of size 3");
}

Test(kernels_tensor, gather_elements_axis1) {
    /* ONNX example: data [[1,2],[3,4]], indices [[0,0],[1,0]], axis 1 -> [[1,1],[4,3]] */
    int32_t data[4] = {1, 2, 3, 4}, out[4] = {0};
    int64_t idx[4] = {0, 0, 1, -2};
    const int32_t want[4] = {1, 1, 4, 3};
    int64_t dims[2] = {2, 2};
    params p = {0};
    p_tensor(&p, I32, 2, dims);
    p_tensor(&p, I64, 2, dims);
    p_tensor(&p, I32, 2, dims);
    p_i64(&p, 1);
    p_name(&p, "ge");
    void *buf[3] = {data, idx, out};
    call("px_k_gather_elements", buf, &p);
    cr_assert_arr_eq(out, want, sizeof want);
}

/* ---------- Concat / Split ---------- */

Test(kernels_tensor, concat_then_split_axis1) {
    /* [[1,2],[3,4]] ++ [[5],[6]] on axis 1 = [[1,2,5],[3,4,6]] */
    float a[4] = {1, 2, 3, 4}, b[2] = {5, 6}, out[6] = {0};
    const float want[6] = {1, 2, 5, 3, 4, 6};
    int64_t da[2] = {2, 2}, db[2] = {2, 1}, dout[2] = {2, 3};
    params p = {0};
    p_i64(&p, 2);
    p_i64(&p, 1);
    p_tensor(&p, F32, 2, dout);
    p_tensor(&p, F32, 2, da);
    p_tensor(&p, F32, 2, db);
    void *buf[3] = {a, b, out};
    call("px_k_concat", buf, &p);
    cr_assert_arr_eq(out, want, sizeof want);

    float a2[4] = {0}, b2[2] = {0};
    params q = {0};
    p_i64(&q, 2);
    p_i64(&q, 1);
    p_tensor(&q, F32, 2, dout);
    p_tensor(&q, F32, 2, da);
    p_tensor(&q, F32, 2, db);
    void *sbuf[3] = {out, a2, b2};
    call("px_k_split", sbuf, &q);
    cr_assert_arr_eq(a2, a, sizeof a);
    cr_assert_arr_eq(b2, b, sizeof b);
}

/* ---------- Pad ---------- */

static void pad_run(int mode, const int64_t *begin, const float *want) {
    /* the ONNX Pad example: data [[1.0,1.2],[2.3,3.4],[4.5,5.7]], pads [0,2,0,0] */
    float in[6] = {1.0f, 1.2f, 2.3f, 3.4f, 4.5f, 5.7f}, out[12] = {0};
    int64_t di[2] = {3, 2}, dout[2] = {3, 4};
    params p = {0};
    p_tensor(&p, F32, 2, di);
    p_tensor(&p, F32, 2, dout);
    p_i64(&p, mode);
    p_ints(&p, 2, begin);
    float v = 0.0f;
    uint32_t bits;
    memcpy(&bits, &v, 4);
    p_i64(&p, bits);
    void *buf[3] = {in, out, NULL};
    call("px_k_pad", buf, &p);
    cr_assert_arr_eq(out, want, 12 * sizeof(float));
}

Test(kernels_tensor, pad_modes) {
    const int64_t begin[2] = {0, 2};
    const float constant[12] = {0, 0, 1.0f, 1.2f, 0, 0, 2.3f, 3.4f, 0, 0, 4.5f, 5.7f};
    const float reflect[12] = {1.0f, 1.2f, 1.0f, 1.2f, 2.3f, 3.4f,
                               2.3f, 3.4f, 4.5f, 5.7f, 4.5f, 5.7f};
    const float edge[12] = {1.0f, 1.0f, 1.0f, 1.2f, 2.3f, 2.3f, 2.3f, 3.4f, 4.5f, 4.5f, 4.5f, 5.7f};
    const float wrap[12] = {1.0f, 1.2f, 1.0f, 1.2f, 2.3f, 3.4f, 2.3f, 3.4f, 4.5f, 5.7f, 4.5f, 5.7f};
    pad_run(0, begin, constant);
    pad_run(1, begin, reflect);
    pad_run(2, begin, edge);
    pad_run(3, begin, wrap);
}

Test(kernels_tensor, pad_negative_crops_and_value_buffer) {
    /* [1,2,3,4] pads [-1, 2] with constant 9 from a buffer -> [2,3,4,9,9] */
    int32_t in[4] = {1, 2, 3, 4}, out[5] = {0}, nine = 9;
    const int32_t want[5] = {2, 3, 4, 9, 9};
    int64_t di[1] = {4}, dout[1] = {5}, begin[1] = {-1};
    params p = {0};
    p_tensor(&p, I32, 1, di);
    p_tensor(&p, I32, 1, dout);
    p_i64(&p, 0);
    p_ints(&p, 1, begin);
    p_i64(&p, 0);
    void *buf[3] = {in, out, &nine};
    call("px_k_pad", buf, &p);
    cr_assert_arr_eq(out, want, sizeof want);
}

/* Rows whose input lies wholly outside the window: all constant. */
static void pad_1d(int64_t n_in, int64_t begin, int64_t width, const int32_t *want) {
    int32_t in[4] = {1, 2, 3, 4}, out[4] = {0, 0, 0, 0}, nine = 9;
    int64_t di[1] = {n_in}, dout[1] = {width};
    params p = {0};
    p_tensor(&p, I32, 1, di);
    p_tensor(&p, I32, 1, dout);
    p_i64(&p, 0);
    p_ints(&p, 1, &begin);
    p_i64(&p, 0);
    void *buf[3] = {in, out, &nine};
    call("px_k_pad", buf, &p);
    cr_assert_arr_eq(out, want, sizeof(int32_t) * (size_t)width);
}

Test(kernels_tensor, pad_input_outside_the_window) {
    const int32_t nines[3] = {9, 9, 9};
    pad_1d(3, -4, 2, nines); /* cropped away in front, then padded */
    pad_1d(2, 5, 3, nines);  /* padded past the end */
    pad_1d(4, 0, 4, (const int32_t[]){1, 2, 3, 4});
    pad_1d(2, 1, 4, (const int32_t[]){9, 1, 2, 9});
    pad_1d(4, -1, 4, (const int32_t[]){2, 3, 4, 9});
}

Test(kernels_tensor, pad_outer_axis_constant_rows) {
    /* [[1,2]] pads [1,0,0,1] (begin rows 1, end cols 1) -> [[0,0,0],[1,2,0]] */
    uint8_t in[2] = {1, 2}, out[6] = {7, 7, 7, 7, 7, 7};
    const uint8_t want[6] = {0, 0, 0, 1, 2, 0};
    int64_t di[2] = {1, 2}, dout[2] = {2, 3}, begin[2] = {1, 0};
    params p = {0};
    p_tensor(&p, BOOL, 2, di);
    p_tensor(&p, BOOL, 2, dout);
    p_i64(&p, 0);
    p_ints(&p, 2, begin);
    p_i64(&p, 0);
    void *buf[3] = {in, out, NULL};
    call("px_k_pad", buf, &p);
    cr_assert_arr_eq(out, want, sizeof want);
}

/* ---------- Expand / Tile ---------- */

Test(kernels_tensor, expand_and_tile) {
    /* expand [3,1] = [[1],[2],[3]] to [2,3,2] */
    int64_t in[3] = {1, 2, 3}, out[12] = {0};
    const int64_t want[12] = {1, 1, 2, 2, 3, 3, 1, 1, 2, 2, 3, 3};
    int64_t di[2] = {3, 1}, dout[3] = {2, 3, 2};
    params p = {0};
    p_tensor(&p, I64, 2, di);
    p_tensor(&p, I64, 3, dout);
    void *buf[2] = {in, out};
    call("px_k_expand", buf, &p);
    cr_assert_arr_eq(out, want, sizeof want);

    /* tile [[1,2],[3,4]] by [2,2] */
    float t[4] = {1, 2, 3, 4}, tout[16] = {0};
    const float twant[16] = {1, 2, 1, 2, 3, 4, 3, 4, 1, 2, 1, 2, 3, 4, 3, 4};
    int64_t ti[2] = {2, 2}, to[2] = {4, 4};
    params q = {0};
    p_tensor(&q, F32, 2, ti);
    p_tensor(&q, F32, 2, to);
    void *tbuf[2] = {t, tout};
    call("px_k_tile", tbuf, &q);
    cr_assert_arr_eq(tout, twant, sizeof twant);
}

Test(kernels_tensor, tile_3d_outer_repeat) {
    /* [2,1,2] = [[[1,2]],[[3,4]]] by [2,3,1] -> [4,3,2] */
    int32_t in[4] = {1, 2, 3, 4}, out[24] = {0};
    int64_t di[3] = {2, 1, 2}, dout[3] = {4, 3, 2};
    params p = {0};
    p_tensor(&p, I32, 3, di);
    p_tensor(&p, I32, 3, dout);
    void *buf[2] = {in, out};
    call("px_k_tile", buf, &p);
    for (int i = 0; i < 4; i++)
        for (int j = 0; j < 3; j++)
            for (int k = 0; k < 2; k++)
                cr_assert_eq(out[(i * 3 + j) * 2 + k], in[(i % 2) * 2 + k], "at %d,%d,%d", i, j, k);
}

/* ---------- Trilu / OneHot / EyeLike / Range / Dropout / const ---------- */

Test(kernels_tensor, trilu_upper_and_lower_with_k) {
    float in[12], out[12];
    for (int i = 0; i < 12; i++) in[i] = (float)(i + 1); /* [[1..4],[5..8],[9..12]] */
    int64_t dims[2] = {3, 4}, k = 1;
    const float upper_k1[12] = {0, 2, 3, 4, 0, 0, 7, 8, 0, 0, 0, 12};
    const float lower_k1[12] = {1, 2, 0, 0, 5, 6, 7, 0, 9, 10, 11, 12};
    for (int upper = 1; upper >= 0; upper--) {
        params p = {0};
        p_tensor(&p, F32, 2, dims);
        p_tensor(&p, F32, 2, dims);
        p_i64(&p, upper);
        void *buf[3] = {in, &k, out};
        call("px_k_trilu", buf, &p);
        cr_assert_arr_eq(out, upper ? upper_k1 : lower_k1, sizeof out);
    }
}

Test(kernels_tensor, onehot_negative_and_out_of_range) {
    /* indices [1, -1, 5] depth 3 axis -1, values [0, 7] -> rows e1, e2, zeros */
    int64_t idx[3] = {1, -1, 5};
    float values[2] = {0, 7}, out[9];
    const float want[9] = {0, 7, 0, 0, 0, 7, 0, 0, 0};
    int64_t di[1] = {3}, dv[1] = {2}, dout[2] = {3, 3};
    params p = {0};
    p_tensor(&p, I64, 1, di);
    p_tensor(&p, F32, 1, dv);
    p_tensor(&p, F32, 2, dout);
    p_i64(&p, 1);
    void *buf[3] = {idx, values, out};
    call("px_k_onehot", buf, &p);
    cr_assert_arr_eq(out, want, sizeof want);
    /* axis 0: out[k][i] */
    const float want0[9] = {0, 0, 0, 7, 0, 0, 0, 7, 0};
    params q = {0};
    p_tensor(&q, I64, 1, di);
    p_tensor(&q, F32, 1, dv);
    p_tensor(&q, F32, 2, dout);
    p_i64(&q, 0);
    call("px_k_onehot", buf, &q);
    cr_assert_arr_eq(out, want0, sizeof want0);
}

Test(kernels_tensor, eyelike_range_dropout_const) {
    int32_t eye[6];
    const int32_t want_eye[6] = {0, 1, 0, 0, 0, 1}; /* 2x3, k = 1 */
    int64_t de[2] = {2, 3};
    params p = {0};
    p_tensor(&p, I32, 2, de);
    p_i64(&p, 1);
    void *ebuf[1] = {eye};
    call("px_k_eyelike", ebuf, &p);
    cr_assert_arr_eq(eye, want_eye, sizeof eye);

    int32_t start = 10, delta = -3, r[4];
    const int32_t want_r[4] = {10, 7, 4, 1}; /* Range(10, -1, -3) */
    int64_t dr[1] = {4};
    params q = {0};
    p_tensor(&q, I32, 0, NULL);
    p_tensor(&q, I32, 0, NULL);
    p_tensor(&q, I32, 1, dr);
    void *rbuf[3] = {&start, &delta, r};
    call("px_k_range", rbuf, &q);
    cr_assert_arr_eq(r, want_r, sizeof r);

    double x[3] = {1.5, -2, 3}, y[3] = {0};
    uint8_t mask[3] = {0};
    const uint8_t want_mask[3] = {1, 1, 1};
    int64_t dx[1] = {3};
    params s = {0};
    p_tensor(&s, F64, 1, dx);
    p_tensor(&s, F64, 1, dx);
    p_tensor(&s, BOOL, 1, dx);
    void *dbuf[3] = {x, y, mask};
    call("px_k_dropout", dbuf, &s);
    cr_assert_arr_eq(y, x, sizeof x);
    cr_assert_arr_eq(mask, want_mask, sizeof mask);

    int64_t shape[3] = {0}, want_shape[3] = {2, 3, 5};
    int64_t ds[1] = {3};
    params c = {0};
    p_tensor(&c, I64, 1, ds);
    p_i64(&c, 24);
    p_ints(&c, 3, want_shape);
    void *cbuf[1] = {shape};
    call("px_k_const", cbuf, &c);
    cr_assert_arr_eq(shape, want_shape, sizeof shape);
}

/* ---------- lowerings refuse what the kernels cannot do ---------- */

Test(kernels_tensor, lowering_rejects_strings_and_training_dropout) {
    px_diag *d = malloc(sizeof *d);
    px_diag_init(d);
    px_graph *g = px_graph_new("t");
    px_graph_set_opset(g, "", 13);
    int64_t dims[1] = {4};
    px_shape s = px_shape_make(1, dims);
    px_value *x = px_graph_add_value(g, "x", PX_STRING, &s, d);
    px_value *y = px_graph_add_value(g, "y", PX_STRING, &s, d);
    px_node *id = px_graph_add_node(g, "Identity", "", "copy_strings", 1, &x, 1, &y);
    px_kcall k;
    cr_assert_eq(px_lower_node(g, id, &k, d), -1);
    cr_assert(strstr(d->text, "copy_strings") && strstr(d->text, "string"), "%s", d->text);

    px_diag_init(d);
    px_value *a = px_graph_add_value(g, "a", PX_F32, &s, d);
    px_value *b = px_graph_add_value(g, "b", PX_F32, &s, d);
    px_tensor *rt = px_tensor_new(PX_F32, &(px_shape){0}, d), *tt;
    ((float *)rt->data)[0] = 0.25f;
    px_value *ratio = px_graph_add_constant(g, "ratio", rt);
    tt = px_tensor_new(PX_BOOL, &(px_shape){0}, d);
    ((uint8_t *)tt->data)[0] = 1;
    px_value *train = px_graph_add_constant(g, "train", tt);
    px_value *ins[3] = {a, ratio, train};
    px_node *dr = px_graph_add_node(g, "Dropout", "", "drop", 3, ins, 1, &b);
    cr_assert_eq(px_lower_node(g, dr, &k, d), -1);
    cr_assert(strstr(d->text, "drop") && strstr(d->text, "seeded generator"), "%s", d->text);

    /* ratio 0 in training mode is the identity: it lowers */
    px_diag_init(d);
    ((float *)rt->data)[0] = 0.0f;
    cr_assert_eq(px_lower_node(g, dr, &k, d), 0, "%s", d->text);
    cr_assert_str_eq(k.kernel, "px_k_dropout");
    px_kcall_free(&k);
    px_graph_free(g);
    free(d);
}
