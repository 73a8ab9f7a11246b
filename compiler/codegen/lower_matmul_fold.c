/* Transposes and batch sums folded into one GEMM (see lower_matmul_fold.h).
 *
 * Autodiff writes the gradients of a Linear layer on [batch, seq, in] data
 * as MatMul(X, Transpose(W)) for dX and ReduceSum(MatMul(Transpose(X), dY),
 * batch axes) for dW: a 2-D transpose copied every step, and for dW one small
 * GEMM per batch element into a [batch, in, out] tensor that is then summed.
 * Both are one BLAS call on the untransposed operands: dX = X @ W^T with
 * BLAS's transpose flag, dW = Xflat^T @ dYflat with the batch rows as the
 * inner dimension. */
#include "lower_matmul_fold.h"

#include "lower_nn_internal.h"

#include <limits.h>
#include <string.h>

static int is_float(const px_value *v) {
    return v && (v->dtype == PX_F32 || v->dtype == PX_F64);
}

/* The one live node that reads v (as any input), or NULL when v is a graph
 * output or has another reader. */
static const px_node *only_reader(const px_value *v) {
    if (!v || v->is_output) return NULL;
    const px_node *r = NULL;
    for (int u = 0; u < v->n_uses; u++) {
        const px_node *n = v->uses[u].node;
        if (n->dead) continue;
        if (r) return NULL; /* a second reader, or the same node reading v twice */
        r = n;
    }
    return r;
}

/* Whether t is a live Transpose swapping the last two axes only. */
static int swaps_last_axes(const px_node *t) {
    if (!t || t->dead || t->op != PX_OP_Transpose || t->n_inputs < 1 || !t->inputs[0] ||
        t->n_outputs < 1 || !t->outputs[0])
        return 0;
    int r = t->inputs[0]->shape.rank;
    if (r < 2 || t->outputs[0]->shape.rank != r) return 0;
    int count = 0;
    const int64_t *perm = px_node_attr(t, "perm") ? px_attr_ints(t, "perm", &count) : NULL;
    if (perm && count != r) return 0;
    for (int i = 0; i < r; i++) {
        int64_t want = i < r - 2 ? i : (i == r - 2 ? r - 1 : r - 2);
        int64_t got = perm ? perm[i] : r - 1 - i; /* default: reversed axes */
        if (got != want) return 0;
    }
    return 1;
}

/* Whether MatMul mm multiplies two stacks of matrices of one rank (>= 2)
 * with the same batch dims as its output (no broadcasting): then it is one
 * GEMM per matrix, and any operand may be read transposed. */
static int same_stacks(const px_node *mm) {
    const px_value *a = px_lower_in(mm, 0), *b = px_lower_in(mm, 1), *y = px_lower_out(mm, 0);
    if (!is_float(a) || !is_float(b) || !is_float(y) || a->dtype != b->dtype ||
        y->dtype != a->dtype)
        return 0;
    int r = a->shape.rank;
    if (r < 2 || b->shape.rank != r || y->shape.rank != r) return 0;
    for (int i = 0; i < r - 2; i++)
        if (a->shape.dims[i] != y->shape.dims[i] || b->shape.dims[i] != y->shape.dims[i]) return 0;
    return a->shape.dims[r - 1] == b->shape.dims[r - 2] && a->shape.dims[r - 1] > 0;
}

/* The MatMul whose output Transpose t swaps, when t is its only reader and
 * the product is one of same_stacks: t is then computed as op(B)^T op(A)^T
 * (px_lmm_fold_transpose), never read through by another GEMM. */
static const px_node *transposed_product(const px_node *t) {
    if (!swaps_last_axes(t)) return NULL;
    const px_node *mm = t->inputs[0]->producer;
    if (!mm || mm->dead || mm->op != PX_OP_MatMul || only_reader(t->inputs[0]) != t ||
        !same_stacks(mm))
        return NULL;
    return mm;
}

/* The input of v's producer when that is a live Transpose swapping the
 * last two axes only (and not one computed as a transposed product); else
 * NULL. */
static const px_value *swap_source(const px_value *v) {
    const px_node *t = v ? v->producer : NULL;
    if (!swaps_last_axes(t) || transposed_product(t)) return NULL;
    return t->inputs[0];
}

/* An operand read through up to two last-axes swaps: the value BLAS reads,
 * whether it is transposed, and the Transpose nodes read through (listed in
 * f->absorbed; they still run if something else reads them). */
static const px_value *through_swaps(const px_value *v, int *flip, px_gemm_fold *f) {
    *flip = 0;
    for (int depth = 0; depth < 2; depth++) {
        const px_value *x = swap_source(v);
        if (!x) break;
        f->absorbed[f->n_absorbed++] = v->producer;
        v = x;
        *flip ^= 1;
    }
    return v;
}

static int64_t numel(const px_value *v) {
    return px_shape_numel(&v->shape);
}

/* BLAS takes int sizes; larger products keep the unfolded kernels, whose
 * lowerings report the limit. */
static int blas_sizes(const px_gemm_fold *f) {
    return f->M >= 0 && f->N >= 0 && f->K >= 0 && f->M <= INT_MAX && f->N <= INT_MAX &&
           f->K <= INT_MAX;
}

/* f for the stacks of same_stacks(mm) read through their swaps: one GEMM
 * per matrix; 0 when no transpose was folded (px_k_matmul does the rest). */
static int fold_stacks(const px_node *mm, px_gemm_fold *f) {
    const px_value *a = px_lower_in(mm, 0), *b = px_lower_in(mm, 1);
    int r = a->shape.rank;
    f->a = through_swaps(a, &f->ta, f);
    f->b = through_swaps(b, &f->tb, f);
    f->M = a->shape.dims[r - 2];
    f->K = a->shape.dims[r - 1];
    f->N = b->shape.dims[r - 1];
    f->batch = 1;
    for (int i = 0; i < r - 2; i++) f->batch *= a->shape.dims[i];
    return f->n_absorbed > 0 && blas_sizes(f);
}

int px_lmm_fold_matmul(const px_node *mm, px_gemm_fold *f) {
    memset(f, 0, sizeof *f);
    if (mm->dead || mm->op != PX_OP_MatMul) return 0;
    const px_value *a = px_lower_in(mm, 0), *b = px_lower_in(mm, 1), *y = px_lower_out(mm, 0);
    if (a && b && a->shape.rank > 2 && same_stacks(mm)) return fold_stacks(mm, f);
    if (!is_float(a) || !is_float(b) || !is_float(y) || a->dtype != b->dtype ||
        y->dtype != a->dtype || a->shape.rank < 2 || b->shape.rank != 2)
        return 0;
    /* B is one matrix, so A's batches fold into its rows (as px_k_matmul does) */
    int64_t K = a->shape.dims[a->shape.rank - 1], N = b->shape.dims[1];
    if (b->shape.dims[0] != K || K <= 0) return 0;
    f->a = a->shape.rank == 2 ? through_swaps(a, &f->ta, f) : a;
    f->b = through_swaps(b, &f->tb, f);
    if (!f->n_absorbed) return 0; /* nothing to fold: px_k_matmul */
    f->M = numel(a) / K;
    f->N = N;
    f->K = K;
    f->batch = 1;
    return f->M * f->N == numel(y) && blas_sizes(f);
}

int px_lmm_fold_transpose(const px_node *t, px_gemm_fold *f) {
    memset(f, 0, sizeof *f);
    const px_node *mm = transposed_product(t);
    if (!mm) return 0;
    fold_stacks(mm, f); /* the product itself, transposes read through or not */
    if (!blas_sizes(f)) return 0;
    /* Y^T = op(B)^T op(A)^T: the operands swap and their flags flip */
    const px_value *a = f->a;
    int ta = f->ta;
    int64_t m = f->M;
    f->a = f->b;
    f->ta = !f->tb;
    f->b = a;
    f->tb = !ta;
    f->M = f->N;
    f->N = m;
    f->absorbed[f->n_absorbed++] = mm;
    return 1;
}

/* The reduced axes of ReduceSum node n when they are constant; returns the
 * count, or -1 when they are not known at compile time. */
static int reduce_axes(const px_node *n, int rank, int reduced[PX_MAX_RANK]) {
    memset(reduced, 0, sizeof(int) * PX_MAX_RANK);
    const px_value *av = px_lower_in(n, 1);
    int count = 0;
    int64_t ax[PX_MAX_RANK];
    if (av) {
        if (!px_value_is_const(av) || !av->data) return -1;
        int64_t c = px_tensor_numel(av->data);
        if (c < 0 || c > PX_MAX_RANK) return -1;
        for (int64_t i = 0; i < c; i++) ax[i] = px_tensor_get_i64(av->data, i);
        count = (int)c;
    } else {
        const int64_t *a = px_attr_ints(n, "axes", &count);
        if (count > PX_MAX_RANK) return -1;
        for (int i = 0; i < count; i++) ax[i] = a[i];
    }
    for (int i = 0; i < count; i++) {
        int64_t a = ax[i] < 0 ? ax[i] + rank : ax[i];
        if (a < 0 || a >= rank || reduced[a]) return -1;
        reduced[a] = 1;
    }
    return count;
}

int px_lmm_fold_reduce(const px_node *red, px_gemm_fold *f) {
    memset(f, 0, sizeof *f);
    if (red->dead || red->op != PX_OP_ReduceSum) return 0;
    const px_value *x = px_lower_in(red, 0), *y = px_lower_out(red, 0);
    const px_node *mm = x ? x->producer : NULL;
    if (!mm || mm->dead || mm->op != PX_OP_MatMul || only_reader(x) != red || !is_float(x) ||
        !is_float(y) || y->dtype != x->dtype)
        return 0;
    int r = x->shape.rank, reduced[PX_MAX_RANK];
    if (r < 3 || reduce_axes(red, r, reduced) != r - 2) return 0;
    for (int i = 0; i < r - 2; i++)
        if (!reduced[i]) return 0; /* exactly the batch axes */
    const px_value *a = px_lower_in(mm, 0), *b = px_lower_in(mm, 1);
    if (!is_float(a) || !is_float(b) || a->dtype != x->dtype || b->dtype != x->dtype ||
        a->shape.rank != r || b->shape.rank != r)
        return 0;
    for (int i = 0; i < r - 2; i++) /* no broadcasting between the stacks */
        if (a->shape.dims[i] != x->shape.dims[i] || b->shape.dims[i] != x->shape.dims[i]) return 0;
    /* sum_b XA_b^T B_b with A = Transpose(XA), XA_b [P, M], B_b [P, N]:
     * XAflat^T [M, batch*P] @ Bflat [batch*P, N] */
    int flip = 0;
    const px_value *xa = through_swaps(a, &flip, f);
    int64_t M = a->shape.dims[r - 2], P = a->shape.dims[r - 1], N = b->shape.dims[r - 1];
    if (!flip || f->n_absorbed != 1 || b->shape.dims[r - 2] != P || M * N != numel(y)) {
        memset(f, 0, sizeof *f);
        return 0;
    }
    f->a = xa;
    f->b = b;
    f->ta = 1;
    f->tb = 0;
    f->M = M;
    f->N = N;
    f->K = M > 0 ? numel(a) / M : 0;
    f->batch = 1;
    f->absorbed[f->n_absorbed++] = mm;
    return blas_sizes(f);
}

/* The plain GEMM of MatMul node mm (B 2-D, A's batches folded into rows),
 * transposed operands folded when possible. */
static int plain_matmul(const px_node *mm, px_gemm_fold *f) {
    if (px_lmm_fold_matmul(mm, f)) return f->batch == 1;
    memset(f, 0, sizeof *f);
    const px_value *a = px_lower_in(mm, 0), *b = px_lower_in(mm, 1), *y = px_lower_out(mm, 0);
    if (mm->dead || !is_float(a) || !is_float(b) || !is_float(y) || a->dtype != b->dtype ||
        y->dtype != a->dtype || a->shape.rank < 2 || b->shape.rank != 2)
        return 0;
    int64_t K = a->shape.dims[a->shape.rank - 1];
    if (b->shape.dims[0] != K || K <= 0) return 0;
    f->a = a;
    f->b = b;
    f->M = numel(a) / K;
    f->N = b->shape.dims[1];
    f->K = K;
    f->batch = 1;
    return f->M * f->N == numel(y) && blas_sizes(f);
}

int px_lmm_fold_bias(const px_node *add, px_gemm_fold *f) {
    memset(f, 0, sizeof *f);
    if (add->dead || add->op != PX_OP_Add || add->n_inputs != 2) return 0;
    const px_value *y = px_lower_out(add, 0);
    for (int side = 0; side < 2; side++) {
        const px_value *m = add->inputs[side], *bias = add->inputs[1 - side];
        const px_node *mm = m ? m->producer : NULL;
        if (!mm || mm->dead || mm->op != PX_OP_MatMul || !bias || bias == m ||
            only_reader(m) != add || !is_float(y) || !px_lnn_same_dims(&m->shape, &y->shape) ||
            bias->dtype != y->dtype || !plain_matmul(mm, f) || f->a->dtype != y->dtype)
            continue;
        /* the bias is one row of N values: [N] or [1, ..., 1, N] */
        int rb = bias->shape.rank, row = rb >= 1 && bias->shape.dims[rb - 1] == f->N;
        for (int i = 0; row && i < rb - 1; i++) row = bias->shape.dims[i] == 1;
        if (!row || rb > y->shape.rank) continue;
        f->c = bias;
        f->absorbed[f->n_absorbed++] = mm;
        return 1;
    }
    memset(f, 0, sizeof *f);
    return 0;
}

static int lists(const px_gemm_fold *f, const px_node *n) {
    for (int i = 0; i < f->n_absorbed; i++)
        if (f->absorbed[i] == n) return 1;
    return 0;
}

/* The GEMM that computes node u (u lowered as a fold, or u a MatMul
 * absorbed into its reader's fold); 0 when u is not computed by one. */
static int gemm_of(const px_node *u, px_gemm_fold *f) {
    if (u->dead) return 0;
    if (u->op == PX_OP_ReduceSum) return px_lmm_fold_reduce(u, f);
    if (u->op == PX_OP_Add) return px_lmm_fold_bias(u, f);
    if (u->op == PX_OP_Transpose) return px_lmm_fold_transpose(u, f);
    if (u->op != PX_OP_MatMul) return 0;
    const px_node *r = only_reader(u->outputs[0]);
    if (r && r->op == PX_OP_Transpose && px_lmm_fold_transpose(r, f) && lists(f, u)) return 1;
    if (r && r->op == PX_OP_ReduceSum && px_lmm_fold_reduce(r, f) && lists(f, u)) return 1;
    if (r && r->op == PX_OP_Add && px_lmm_fold_bias(r, f) && lists(f, u)) return 1;
    return px_lmm_fold_matmul(u, f);
}

/* Whether every live reader of v computes node n inside its GEMM; 0 when v
 * has no reader. */
static int readers_fold(const px_value *v, const px_node *n) {
    int readers = 0;
    for (int i = 0; i < v->n_uses; i++) {
        const px_node *u = v->uses[i].node;
        if (u->dead) continue;
        px_gemm_fold f;
        if (!gemm_of(u, &f) || !lists(&f, n)) return 0;
        readers++;
    }
    return readers > 0;
}

int px_lmm_absorbed(const px_node *n) {
    if (n->dead || (n->op != PX_OP_Transpose && n->op != PX_OP_MatMul) || n->n_outputs != 1 ||
        !n->outputs[0] || n->outputs[0]->is_output)
        return 0;
    /* every reader reads through it: a GEMM, or a Transpose whose own readers
     * are GEMMs reading through both (a transpose of a transpose) */
    const px_value *v = n->outputs[0];
    int readers = 0;
    for (int i = 0; i < v->n_uses; i++) {
        const px_node *u = v->uses[i].node;
        if (u->dead) continue;
        px_gemm_fold f;
        readers++;
        if (gemm_of(u, &f) && lists(&f, n)) continue;
        if (u->op == PX_OP_Transpose && u->n_outputs == 1 && u->outputs[0] &&
            !u->outputs[0]->is_output && readers_fold(u->outputs[0], u) &&
            readers_fold(u->outputs[0], n))
            continue;
        return 0;
    }
    return readers > 0;
}

/* buf: A, B, Y.  p: dtype, batch, M, N, K, transA, transB (px_k_gemm_batched). */
static void emit_batched(const px_gemm_fold *f, const px_value *y, px_kcall *k) {
    px_kc_set_kernel(k, "px_k_gemm_batched");
    px_kc_buf(k, f->a);
    px_kc_buf(k, f->b);
    px_kc_buf(k, y);
    px_kc_i64(k, y->dtype);
    px_kc_i64(k, f->batch);
    px_kc_i64(k, f->M);
    px_kc_i64(k, f->N);
    px_kc_i64(k, f->K);
    px_kc_i64(k, f->ta);
    px_kc_i64(k, f->tb);
}

void px_lmm_emit(const px_gemm_fold *f, const px_value *y, px_kcall *k) {
    if (f->batch > 1) {
        emit_batched(f, y, k);
        return;
    }
    px_kc_set_kernel(k, "px_k_gemm");
    px_kc_buf(k, f->a);
    px_kc_buf(k, f->b);
    px_kc_buf(k, f->c);
    px_kc_buf(k, y);
    /* the operands as the 2-D matrices BLAS reads: op(A) is [M, K], op(B) [K, N] */
    int64_t ad[2] = {f->ta ? f->K : f->M, f->ta ? f->M : f->K};
    int64_t bd[2] = {f->tb ? f->N : f->K, f->tb ? f->K : f->N};
    int64_t yd[2] = {f->M, f->N};
    int64_t cd[1] = {f->N};
    px_shape as = px_shape_make(2, ad), bs = px_shape_make(2, bd), ys = px_shape_make(2, yd),
             cs = f->c ? px_shape_make(1, cd) : px_shape_scalar();
    px_kc_shape(k, f->a->dtype, &as);
    px_kc_shape(k, f->b->dtype, &bs);
    px_kc_shape(k, f->c ? f->c->dtype : 0, &cs); /* the bias as one row, broadcast down */
    px_kc_shape(k, y->dtype, &ys);
    px_kc_i64(k, f->ta);
    px_kc_i64(k, f->tb);
    px_kc_f64(k, 1.0);
    px_kc_f64(k, f->c ? 1.0 : 0.0);
}
