/* --save-infer OUT.onnx --outputs NAME[,NAME...]: a model to serve. The
 * original model in eval mode (Dropout the identity, BatchNormalization on
 * its running statistics, as PyTorch's model.eval()), cut down to what the
 * chosen outputs need (labels and the loss go when they are not asked
 * for), with the trained weights and running statistics. */
#ifndef PX_SAVE_INFER_H
#define PX_SAVE_INFER_H

#include "pb_write.h"
#include "px_program.h"

#include <stddef.h>

typedef struct px_infer_plan {
    px_pb_buf model; /* the ModelProto without the trained initializers */
    char
        *var_kept; /* per variable, then per tied copy, of the program: 1 when the model reads it */
} px_infer_plan;

/* The model for the n named values (any value of the model: its outputs,
 * or values inside it such as the logits the loss reads). The same on every
 * rank. 0, or -1 with a message in err naming an unknown value with the
 * model's outputs and the loss node's inputs. */
int px_infer_plan_build(const px_program_desc *p, int n, char *const *names, px_infer_plan *plan,
                        char *err, size_t cap);
void px_infer_plan_free(px_infer_plan *plan);

/* Collective: rank 0 writes plan's model to path with the trained values of
 * the variables it reads (save_onnx.h: inline or external data, the same
 * way --save writes them). */
void px_save_infer(const char *path, const px_program_desc *p, const px_infer_plan *plan,
                   int external);

#endif
