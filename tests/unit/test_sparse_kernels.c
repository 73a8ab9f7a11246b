/* Masked products (runtime/sparse/spmm.c) against dense references in
 * double: the forward product, the input gradient and the weight gradient
 * at the live entries, for both storage orders of W, batch sizes around the
 * chunk widths, reduction sizes around the panel width, empty and full
 * masks. Then the same bits from every instruction-set path and from 1 and
 * 3 threads. */
#include "sparse/spmm.h"
#include "kernels/thread_pool.h"

#include <criterion/criterion.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static uint64_t rng = 0x9E3779B97F4A7C15ull;
static int cmp_i64(const void *a, const void *b) {
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

static double urand(void) {
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (double)(rng >> 11) / 9007199254740992.0;
}

typedef struct problem {
    int64_t out, in, m, nnz;
    int w_in_major;
    int64_t *pos;
    float *w, *x, *dy;
    px_spm s;
    float *vals;   /* the live entries, traversal order */
    int64_t *tpos; /* their positions in w */
} problem;

/* W with about `density` of its entries live (exactly 0 elsewhere). */
static void make_problem(problem *pb, int64_t out, int64_t in, int64_t m, double density,
                         int w_in_major) {
    memset(pb, 0, sizeof *pb);
    pb->out = out, pb->in = in, pb->m = m, pb->w_in_major = w_in_major;
    int64_t n = out * in;
    pb->pos = malloc(sizeof *pb->pos * (size_t)(n + 1));
    pb->w = calloc((size_t)n + 1, sizeof *pb->w);
    for (int64_t k = 0; k < n; k++)
        if (urand() < density) {
            pb->pos[pb->nnz++] = k;
            pb->w[k] = (float)(urand() * 2 - 1);
        }
    pb->x = malloc(sizeof(float) * (size_t)(m * in + 1));
    pb->dy = malloc(sizeof(float) * (size_t)(m * out + 1));
    for (int64_t k = 0; k < m * in; k++) pb->x[k] = (float)(urand() * 2 - 1);
    for (int64_t k = 0; k < m * out; k++) pb->dy[k] = (float)(urand() * 2 - 1);
    cr_assert_eq(px_spm_build(&pb->s, pb->pos, pb->nnz, out, in, w_in_major), 0);
    pb->vals = malloc(sizeof(float) * (size_t)(pb->nnz + 1));
    pb->tpos = malloc(sizeof(int64_t) * (size_t)(pb->nnz + 1));
    px_spm_pack(&pb->s, pb->w, pb->vals);
    px_spm_positions(&pb->s, pb->tpos);
    /* the traversal holds every live entry once: its positions sorted are pos */
    int64_t *sorted = malloc(sizeof(int64_t) * (size_t)(pb->nnz + 1));
    memcpy(sorted, pb->tpos, sizeof(int64_t) * (size_t)pb->nnz);
    qsort(sorted, (size_t)pb->nnz, sizeof *sorted, cmp_i64);
    cr_assert(pb->nnz == 0 || memcmp(sorted, pb->pos, sizeof(int64_t) * (size_t)pb->nnz) == 0);
    for (int64_t e = 0; e < pb->nnz; e++) cr_assert_eq(pb->vals[e], pb->w[pb->tpos[e]]);
    free(sorted);
    /* unpack puts every value back where it came from */
    float *w2 = calloc((size_t)(out * in) + 1, sizeof(float));
    px_spm_unpack(&pb->s, pb->vals, w2);
    cr_assert(memcmp(w2, pb->w, sizeof(float) * (size_t)(out * in)) == 0);
    free(w2);
}

static void free_problem(problem *pb) {
    px_spm_free(&pb->s);
    free(pb->vals);
    free(pb->tpos);
    free(pb->pos);
    free(pb->w);
    free(pb->x);
    free(pb->dy);
}

static double wl(const problem *pb, int64_t o, int64_t i) {
    return pb->w[pb->w_in_major ? i * pb->out + o : o * pb->in + i];
}

typedef struct results {
    float *y, *dx, *g;
} results;

static void run(const problem *pb, results *r) {
    r->y = malloc(sizeof(float) * (size_t)(pb->m * pb->out + 1));
    r->dx = malloc(sizeof(float) * (size_t)(pb->m * pb->in + 1));
    r->g = malloc(sizeof(float) * (size_t)(pb->nnz + 1));
    /* garbage in the outputs: every element must be written */
    memset(r->y, 0x7f, sizeof(float) * (size_t)(pb->m * pb->out));
    memset(r->dx, 0x7f, sizeof(float) * (size_t)(pb->m * pb->in));
    memset(r->g, 0x7f, sizeof(float) * (size_t)pb->nnz);
    px_spm_forward(&pb->s, pb->vals, pb->x, pb->m, r->y);
    px_spm_grad_input(&pb->s, pb->vals, pb->dy, pb->m, r->dx);
    px_spm_grad_weight(&pb->s, pb->x, pb->dy, pb->m, r->g);
}

static void free_results(results *r) {
    free(r->y);
    free(r->dx);
    free(r->g);
}

/* |got - ref| <= 1e-5 * (sum of |terms|) + 1e-30 */
static void expect_close(double got, double ref, double scale, const char *what, int64_t a,
                         int64_t b) {
    cr_expect(fabs(got - ref) <= 1e-5 * scale + 1e-30, "%s[%lld,%lld]: %.9g, dense %.9g", what,
              (long long)a, (long long)b, got, ref);
}

/* got[m, n_out] against in[m, n_in] times Wl^T (by_input 0: n_in = in) or
 * times Wl (by_input 1: the input gradient, n_in = out). */
static void check_product(const problem *pb, const float *in, const float *got, int by_input,
                          const char *what) {
    int64_t n_in = by_input ? pb->out : pb->in, n_out = by_input ? pb->in : pb->out;
    for (int64_t b = 0; b < pb->m; b++)
        for (int64_t j = 0; j < n_out; j++) {
            double s = 0, sc = 0;
            for (int64_t k = 0; k < n_in; k++) {
                double t = (double)in[b * n_in + k] * (by_input ? wl(pb, k, j) : wl(pb, j, k));
                s += t;
                sc += fabs(t);
            }
            expect_close(got[b * n_out + j], s, sc, what, b, j);
        }
}

static void check_against_dense(const problem *pb) {
    results r;
    run(pb, &r);
    check_product(pb, pb->x, r.y, 0, "Y");
    check_product(pb, pb->dy, r.dx, 1, "dX");
    int64_t minor = pb->w_in_major ? pb->out : pb->in;
    for (int64_t k = 0; k < pb->nnz; k++) {
        int64_t a = pb->tpos[k] / minor, c = pb->tpos[k] % minor;
        int64_t o = pb->w_in_major ? c : a, i = pb->w_in_major ? a : c;
        double s = 0, sc = 0;
        for (int64_t b = 0; b < pb->m; b++) {
            double t = (double)pb->dy[b * pb->out + o] * pb->x[b * pb->in + i];
            s += t;
            sc += fabs(t);
        }
        expect_close(r.g[k], s, sc, "dW", o, i);
    }
    free_results(&r);
}

Test(sparse_kernels, products_equal_dense_references) {
    const int64_t ms[] = {1, 5, 16, 17, 64, 65, 130};
    const double densities[] = {0.0, 0.1, 0.5, 1.0};
    for (int order = 0; order < 2; order++)
        for (size_t mi = 0; mi < sizeof ms / sizeof *ms; mi++)
            for (size_t di = 0; di < sizeof densities / sizeof *densities; di++) {
                problem pb;
                /* 300 inputs: three panels, the last partial */
                make_problem(&pb, 37, 300, ms[mi], densities[di], order);
                check_against_dense(&pb);
                free_problem(&pb);
            }
}

static int same_bits(const float *a, const float *b, int64_t n) {
    return memcmp(a, b, sizeof(float) * (size_t)n) == 0;
}

static void expect_same_results(const problem *pb, const results *a, const results *b,
                                const char *what) {
    cr_expect(same_bits(a->y, b->y, pb->m * pb->out), "Y differs: %s", what);
    cr_expect(same_bits(a->dx, b->dx, pb->m * pb->in), "dX differs: %s", what);
    cr_expect(same_bits(a->g, b->g, pb->nnz), "dW differs: %s", what);
}

Test(sparse_kernels, every_isa_and_thread_count_gives_the_same_bits) {
    const char *const isas[] = {"portable", "avx2", "avx512"};
    const int64_t ms[] = {3, 40, 64, 200};
    for (size_t mi = 0; mi < sizeof ms / sizeof *ms; mi++)
        for (int order = 0; order < 2; order++) {
            problem pb;
            make_problem(&pb, 150, 260, ms[mi], 0.3, order);
            cr_assert_eq(px_spm_use_isa("portable"), 0);
            results ref;
            run(&pb, &ref);
            for (size_t k = 1; k < 3; k++) {
                if (px_spm_use_isa(isas[k]) != 0) continue; /* not on this CPU */
                results r;
                run(&pb, &r);
                expect_same_results(&pb, &ref, &r, isas[k]);
                free_results(&r);
                px_pool_start(3);
                run(&pb, &r);
                px_pool_stop();
                expect_same_results(&pb, &ref, &r, "3 threads");
                free_results(&r);
            }
            free_results(&ref);
            free_problem(&pb);
        }
}
