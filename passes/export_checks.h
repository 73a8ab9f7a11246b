/* Export pitfalls that make a training program train a different model than
 * the PyTorch module (passes/export_checks.c): initializers tied through
 * Identity, eval-mode exports (BatchNormalization in inference mode, Dropout
 * off, BatchNorm folded into Conv), an all-zero (padding) row in an
 * embedding table; and, without metadata, what will be trained. */
#ifndef PX_EXPORT_CHECKS_H
#define PX_EXPORT_CHECKS_H

#include "graph.h"
#include "var_plan.h"

/* Appends one "warning: ..." line per problem found in the imported graph
 * g to w->text (w is used as a text buffer; its error count is not
 * touched). A padding row that the metadata m (or NULL) declares is no
 * problem. Returns the number of warnings. */
int px_check_export(const px_graph *g, const px_model_meta *m, px_diag *w);

/* Without parallax.trainable metadata in spec->meta (trained_set_checks.c):
 * with list != 0 a note listing every float initializer that training will
 * update (all that spec does not freeze, BatchNorm running statistics
 * aside), and a
 * warning for each that looks like a buffer (a PyTorch buffer name, read
 * only through Slice) and for each pair holding the same values or one the
 * other's transpose (an untied copy). Returns the number of warnings. */
int px_check_trained_set(const px_graph *g, const px_train_spec *spec, int list, px_diag *w);

#endif
