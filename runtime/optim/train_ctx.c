/* The training run-time state the kernels share (px_train.h). It lives here,
 * in px_runtime, so that anything linking the runtime links; the training
 * main (program/train.c) fills it in before the first step. */
#include "px_train.h"

px_train_ctx px_train;
