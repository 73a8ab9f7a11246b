#include "px_kernel.h"

#include <string.h>

/* One table per kernel family (runtime/kernels/<family>.c). */
extern const px_kernel_entry px_kernels_elementwise[];
extern const px_kernel_entry px_kernels_reduce[];
extern const px_kernel_entry px_kernels_topk[];
extern const px_kernel_entry px_kernels_tensor[];
extern const px_kernel_entry px_kernels_nn[];
extern const px_kernel_entry px_kernels_rnn[];
extern const px_kernel_entry px_kernels_training[];
extern const px_kernel_entry px_kernels_grad[];
extern const px_kernel_entry px_kernels_rnn_grad[];
extern const px_kernel_entry px_kernels_dropout_train[];
extern const px_kernel_entry px_kernels_embedding_bag[];
extern const px_kernel_entry px_kernels_optim[];  /* runtime/optim/kernels_update.c */
extern const px_kernel_entry px_kernels_comm[];   /* runtime/comm/sched/kernels.c */
extern const px_kernel_entry px_kernels_sparse[]; /* runtime/sparse/kernels.c */

static const px_kernel_entry *const families[] = {
    px_kernels_elementwise, px_kernels_reduce,   px_kernels_tensor,        px_kernels_nn,
    px_kernels_rnn,         px_kernels_training, px_kernels_grad,          px_kernels_rnn_grad,
    px_kernels_optim,       px_kernels_comm,     px_kernels_dropout_train, px_kernels_embedding_bag,
    px_kernels_topk,        px_kernels_sparse,
};

px_kernel_fn px_kernel_find(const char *name) {
    for (size_t f = 0; f < sizeof families / sizeof *families; f++)
        for (const px_kernel_entry *e = families[f]; e->name; e++)
            if (strcmp(e->name, name) == 0) return e->fn;
    return NULL;
}
