/* LSTM / GRU / RNN cells in float (see rnn_cells.inc). */
#include "rnn_internal.h"
#include "rnn_math.h"

#include <cblas.h>
#include <math.h>
#include <string.h>

#define RT float
#define RT_FN(name) name##_f32
#define RT_GEMM cblas_sgemm
#define RT_EXP px_rnn_expf
#define RT_TANH px_rnn_tanhf
#define RT_SIGMOID px_rnn_sigmoidf
#define RT_EXPM1 expm1f
#define RT_LOG1P log1pf
#include "rnn_cells.inc"
