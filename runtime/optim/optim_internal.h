/* What the update kernels need from optim.c beyond px_train.h. */
#ifndef PX_OPTIM_INTERNAL_H
#define PX_OPTIM_INTERNAL_H

#include "px_train.h"

/* px_optim_rows, with the gradient of row rows[i] read at g + i*dim
 * (g_by_row 0: packed rows, as px_optim_rows) or at g + rows[i]*dim
 * (g_by_row 1: a dense gradient of which only these rows are used). */
void px_optim_rows_at(const px_optim_desc *o, int64_t t, float *w,
                      float *const slots[PX_OPTIM_MAX_SLOTS], int64_t dim, const int64_t *rows,
                      const float *g, int64_t n_rows, int g_by_row);

#endif
