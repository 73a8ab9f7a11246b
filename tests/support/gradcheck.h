/* Test support for finite-difference gradient checks of whole models. */
#ifndef PX_TEST_GRADCHECK_H
#define PX_TEST_GRADCHECK_H

#include "plan.h"

/* A small graph under construction for gradient tests, with the data of its
 * runtime inputs (g->inputs order). */
typedef struct tg {
    px_graph *g;
    px_diag d;
    px_tensor *in[8];
} tg;

tg *tg_new(void);
void tg_free(tg *t);
/* Deterministic uniform numbers in [0, 1) (xorshift; same sequence every run). */
double tg_urand(void);
/* A tensor of dtype dt with values uniform in [lo, hi) (from tg_urand). */
px_tensor *tg_rand_tensor(px_dtype dt, int rank, const int64_t *dims, double lo, double hi);
/* Adds node `op` with fresh outputs (shape-inferred later by tg_out). */
px_node *tg_node(tg *t, const char *op, int n_in, px_value *const *in, int n_out);
/* Infers n's output shapes (asserting success) and returns output 0. */
px_value *tg_out(tg *t, px_node *n);
px_value *tg_op1(tg *t, const char *op, px_value *x);
px_value *tg_op2(tg *t, const char *op, px_value *x, px_value *y);
/* Runs plan in-process on t->in and returns output 0 (the loss); *outs gets
 * all outputs (free with tg_free_outs) when non-NULL. */
double tg_run_loss(tg *t, const px_plan *plan, px_tensor ***outs);
void tg_free_outs(tg *t, px_tensor **o);

/* examples/NAME/model.onnx folded at the given batch, promoted to float64,
 * with random inputs: floats in [-1, 1), indices in px_test_index_range. */
tg *tg_load_example(const char *name, int64_t batch);

/* Largest |autodiff - finite difference| seen, absolute and relative (to
 * max(|fd|, 1e-3)). */
typedef struct tg_fd_err {
    double abs, rel;
} tg_fd_err;

/* Differentiates t's graph (every float initializer), asserts that n_expect
 * variables got a gradient (n_expect < 0: every float initializer), n_sparse
 * of them row sets with valid ascending rows, and compares up to max_coords
 * coordinates of each with central finite differences of step eps (every
 * coordinate when the variable is that small; for a big table, half the
 * samples in rows the batch touched): |autodiff - fd| <= atol + rtol*|fd|. */
tg_fd_err tg_check_grads(tg *t, int n_expect, int n_sparse, int max_coords, double eps, double atol,
                         double rtol);

/* Every float32 value, initializer and constant of g becomes float64 (and
 * Cast-to-float casts to double), so finite differences reach ~1e-9. */
void px_test_promote_f64(px_graph *g);
/* Valid index range of an integer input: the rows of the table it gathers
 * from, the classes of the loss it labels, else 2. */
int64_t px_test_index_range(const px_value *v);

#endif
