/* The op table's flags are the truth: an op carries PX_F_DIFF exactly when
 * autodiff has a gradient rule for it (passes/grad_*.c). Every disagreement
 * is listed, so a new op or rule that breaks the invariant names itself. */
#include "autodiff.h"
#include "op.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

Test(op_flags, diff_iff_gradient_rule) {
    char bad[4096] = "";
    size_t used = 0;
    int n_bad = 0, n_diff = 0;
    for (int op = PX_OP_UNKNOWN + 1; op < PX_OP_COUNT; op++) {
        int diff = (px_op_table[op].flags & PX_F_DIFF) != 0, rule = px_ad_has_rule((px_op)op);
        n_diff += diff;
        if (diff == rule) continue;
        n_bad++;
        if (used < sizeof bad - 80)
            used +=
                (size_t)snprintf(bad + used, sizeof bad - used, " %s (%s)", px_op_table[op].name,
                                 diff ? "PX_F_DIFF, no rule" : "rule, no PX_F_DIFF");
    }
    cr_assert_eq(n_bad, 0, "%d ops disagree:%s", n_bad, bad);
    cr_assert_gt(n_diff, 80, "only %d differentiable ops: is the table read?", n_diff);
}

Test(op_flags, unknown_op_has_no_rule) {
    cr_assert_eq(px_ad_has_rule(PX_OP_UNKNOWN), 0);
}
