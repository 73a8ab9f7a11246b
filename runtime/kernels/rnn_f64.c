/* LSTM / GRU / RNN cells in double (see rnn_cells.inc): libm's exp and tanh,
 * since double is for accuracy rather than speed. */
#include "rnn_internal.h"
#include "stash.h"

#include "gemm_split.h"

#include <cblas.h>
#include <math.h>
#include <string.h>

static inline double sigmoid_f64(double x) {
    return 1.0 / (1.0 + exp(-x));
}

#define RT double
#define RT_FN(name) name##_f64
#define RT_GEMM px_dgemm
#define RT_EXP exp
#define RT_TANH tanh
#define RT_SIGMOID sigmoid_f64
#define RT_EXPM1 expm1
#define RT_LOG1P log1p
#define RT_HOT_CLONES
#include "rnn_cells.inc"
