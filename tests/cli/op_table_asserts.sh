#!/usr/bin/env bash
# The op table's build-time checks fire: ir/ops.def lines whose flags and
# rule columns disagree stop the compile of ir/op.c naming the op, and a
# gradient rule or lowering that no ops.def line names stops the compile of
# its file (-Wmissing-prototypes in passes/ and compiler/codegen/). Each
# case edits a copy of ops.def; the unedited copy must compile.
. "$(dirname "$0")/lib.sh" "$@"

cc=${CC:-cc}
ir=$src/ir

# compile_op_c DIR: ir/op.c against DIR's op.h/ops.def, syntax only.
compile_op_c() {
    "$cc" -std=c11 -Wall -Wextra -Werror -fsyntax-only -I"$1" -I"$ir" "$1/op.c"
}

mkdir -p "$tmp/ok"
cp "$ir/op.c" "$ir/op.h" "$ir/ops.def" "$tmp/ok/"
check "the unedited op table compiles" compile_op_c "$tmp/ok"

# expect_refused LABEL SED_SCRIPT WANT: the edited table must not compile,
# and the error must contain WANT.
expect_refused() {
    local label=$1 edit=$2 want=$3 dir=$tmp/case$((passed + failed))
    mkdir -p "$dir"
    cp "$ir/op.c" "$ir/op.h" "$dir/"
    sed -e "$edit" "$ir/ops.def" >"$dir/ops.def"
    if cmp -s "$ir/ops.def" "$dir/ops.def"; then
        fail "$label: the edit '$edit' changed nothing"
        return
    fi
    if compile_op_c "$dir" >"$dir/log" 2>&1; then
        fail "$label: compiled"
    elif ! grep -qF "$want" "$dir/log"; then
        fail "$label: the error does not say '$want': $(head -c 600 "$dir/log")"
    else
        pass "$label refused: $(grep -m1 -o "ops.def: [^\"]*" "$dir/log")"
    fi
}

# Relu without PX_F_DIFF but naming its rule; Relu with PX_F_DIFF and no rule.
expect_refused "a gradient rule without PX_F_DIFF" \
    's/^OP(Relu, *"", EWD,/OP(Relu, "", EW,/' "Relu must name a gradient rule"
expect_refused "PX_F_DIFF without a gradient rule" \
    '/^OP(Relu,/s/relu, *unary, *unary)$/none, unary, unary)/' "Relu must name a gradient rule"
# Conv with no lowering and not compile-time; Einsum compile-time but lowered.
expect_refused "an op with no lowering that is not compile-time" \
    '/^OP(Conv,/s/conv, *none)$/none, none)/' "Conv must name a lowering"
expect_refused "a compile-time op with a lowering" \
    '/^OP(Einsum,/s/none, *none, *none)$/none, einsum, none)/' "Einsum must name a lowering"
# An elementwise op without its dtype signature (its fused loop's operands).
expect_refused "an elementwise op without a dtype signature" \
    '/^OP(Sigmoid,/s/"f>f"/""/' "PX_F_ELEMWISE op Sigmoid needs a dtype signature"

# A rule that no ops.def line names has no declaration: its file fails.
cat >"$tmp/orphan_rule.c" <<'EOF'
#include "grad_internal.h"
int px_grad_orphan(px_ad *a, px_node *n, px_value *const *dy) {
    (void)a, (void)n, (void)dy;
    return 0;
}
EOF
if "$cc" -std=c11 -Wall -Wextra -Werror -Wmissing-prototypes -fsyntax-only -I"$ir" \
    -I"$src/passes" -I"$src/runtime" -I"$src/common" "$tmp/orphan_rule.c" >"$tmp/orphan.log" 2>&1; then
    fail "a gradient rule no ops.def line names compiled"
elif grep -q "px_grad_orphan" "$tmp/orphan.log"; then
    pass "a gradient rule no ops.def line names is refused"
else
    fail "orphan rule: unexpected error: $(head -c 600 "$tmp/orphan.log")"
fi
if ! grep -q -- "-Wmissing-prototypes" "$src/passes/CMakeLists.txt" ||
    ! grep -q -- "-Wmissing-prototypes" "$src/compiler/codegen/CMakeLists.txt"; then
    fail "passes/ and compiler/codegen/ no longer build with -Wmissing-prototypes"
fi

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ] && [ "$passed" -ge 7 ]
