/* Export pitfalls that make a training program train a different model than
 * the PyTorch module (passes/export_checks.c): initializers tied through
 * Identity, eval-mode exports (BatchNormalization in inference mode, Dropout
 * off, BatchNorm folded into Conv), an all-zero (padding) row in an
 * embedding table. */
#ifndef PX_EXPORT_CHECKS_H
#define PX_EXPORT_CHECKS_H

#include "graph.h"

/* Appends one "warning: ..." line per problem found in the imported graph
 * g to w->text (w is used as a text buffer; its error count is not
 * touched). Returns the number of warnings. */
int px_check_export(const px_graph *g, px_diag *w);

#endif
