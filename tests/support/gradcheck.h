/* Test support for finite-difference gradient checks of whole models. */
#ifndef PX_TEST_GRADCHECK_H
#define PX_TEST_GRADCHECK_H

#include "graph.h"

/* Every float32 value, initializer and constant of g becomes float64 (and
 * Cast-to-float casts to double), so finite differences reach ~1e-9. */
void px_test_promote_f64(px_graph *g);
/* Valid index range of an integer input: the rows of the table it gathers
 * from, the classes of the loss it labels, else 2. */
int64_t px_test_index_range(const px_value *v);

#endif
