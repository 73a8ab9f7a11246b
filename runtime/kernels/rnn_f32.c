/* LSTM / GRU / RNN cells in float (see rnn_cells.inc).
 *
 * Without -fno-trapping-math GCC keeps the selects of px_rnn_expf and
 * px_rnn_tanhf as branches (evaluating both sides might raise a floating-point
 * exception), so the activation loops, most of an LSTM's time, stay scalar.
 * Nothing here reads the exception flags. */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("no-trapping-math")
#endif
#include "rnn_internal.h"
#include "rnn_math.h"
#include "stash.h"

#include "gemm_split.h"

#include <cblas.h>
#include <math.h>
#include <string.h>

#define RT float
#define RT_FN(name) name##_f32
#define RT_GEMM px_sgemm
#define RT_EXP px_rnn_expf
#define RT_TANH px_rnn_tanhf
#define RT_SIGMOID px_rnn_sigmoidf
#define RT_EXPM1 expm1f
#define RT_LOG1P log1pf
/* The runtime is built for the baseline x86-64 (SSE2); the activation loops
 * also get an AVX2 clone, picked at load time where the CPU has it. */
#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__)
#define RT_HOT_CLONES __attribute__((target_clones("avx2", "default")))
#else
#define RT_HOT_CLONES
#endif
#include "rnn_cells.inc"
