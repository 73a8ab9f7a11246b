/* What the update kernels need from optim.c beyond px_train.h. */
#ifndef PX_OPTIM_INTERNAL_H
#define PX_OPTIM_INTERNAL_H

#include "px_train.h"

/* The update applied at once: px_optim_dense, and px_optim_rows with the
 * gradient of row rows[i] read at g + i*dim (g_by_row 0: packed rows) or at
 * g + rows[i]*dim (g_by_row 1: a dense gradient of which only these rows
 * are used). */
void px_optim_dense_now(const px_optim_desc *o, int64_t t, float *w, const float *g,
                        float *const slots[PX_OPTIM_MAX_SLOTS], int64_t n);
void px_optim_rows_now(const px_optim_desc *o, int64_t t, float *w,
                       float *const slots[PX_OPTIM_MAX_SLOTS], int64_t dim, const int64_t *rows,
                       const float *g, int64_t n_rows, int g_by_row);

/* Every update goes through these (accumulate.c): with --accumulate K > 1
 * the gradients of the step's micro-batches are summed and
 * px_accum_finish hands their mean to the px_clip_submit_* pair; else they
 * go there at once. `replicated` 1: the gradient is the same on every rank
 * (an AllReduce replica), counted once in the global norm; 0: a shard's own
 * rows, summed over the ranks. */
void px_optim_submit_dense(const px_optim_desc *o, int64_t t, float *w, const float *g,
                           float *const slots[PX_OPTIM_MAX_SLOTS], int64_t n, int replicated);
void px_optim_submit_rows(const px_optim_desc *o, int64_t t, float *w,
                          float *const slots[PX_OPTIM_MAX_SLOTS], int64_t dim, const int64_t *rows,
                          const float *g, int64_t n_rows, int g_by_row, int replicated);
/* clip.c: applied at once, or queued until px_clip_finish when clipping is
 * on. */
void px_clip_submit_dense(const px_optim_desc *o, int64_t t, float *w, const float *g,
                          float *const slots[PX_OPTIM_MAX_SLOTS], int64_t n, int replicated);
void px_clip_submit_rows(const px_optim_desc *o, int64_t t, float *w,
                         float *const slots[PX_OPTIM_MAX_SLOTS], int64_t dim, const int64_t *rows,
                         const float *g, int64_t n_rows, int g_by_row, int replicated);

#endif
