/* Lowering: each node of a folded graph becomes one call of a runtime kernel
 * (runtime/px_kernel.h) with its buffers and int64 parameters. The LLVM
 * emitter turns the calls into code; tests can also run them in-process. */
#ifndef PX_LOWER_H
#define PX_LOWER_H

#include "graph.h"

#define PX_KCALL_MAX_BUFS 32

struct px_fusion;

/* One per lowered node, hundreds of thousands in a large model: the kernel
 * name is interned and the buffers and parameters live in arrays of their
 * own size, so that a call takes a few dozen bytes, not the hundreds that
 * room for PX_KCALL_MAX_BUFS buffers inline would. */
typedef struct px_kcall {
    const char *kernel; /* runtime symbol, e.g. "px_k_conv" (px_intern); NULL: none yet */
    int n_bufs, cap_bufs;
    const px_value **bufs; /* NULL entries: absent optional tensors */
    int n_params, cap_params;
    int64_t *params;
    const px_node *node; /* the node it implements (for messages) */
    /* Set for a fused group of elementwise nodes (fuse.h): the emitter writes
     * the loop inline instead of calling `kernel`. bufs = group inputs, then
     * the group output. */
    struct px_fusion *fusion;
} px_kcall;

/* Parameter writers (mirror px_kp_* readers in runtime/px_kernel.h). */
void px_kc_i64(px_kcall *k, int64_t v);
void px_kc_f64(px_kcall *k, double v);
/* dtype, rank, dims of a value with a static shape (or of a shape given directly). */
void px_kc_tensor(px_kcall *k, const px_value *v);
void px_kc_shape(px_kcall *k, int dtype, const px_shape *s);
void px_kc_ints(px_kcall *k, int n, const int64_t *v);
/* Appends a buffer; returns its index. */
int px_kc_buf(px_kcall *k, const px_value *v);
void px_kc_set_kernel(px_kcall *k, const char *name);
void px_kcall_free(px_kcall *k);

/* Lowers one node. Returns 0, or -1 with an error naming the node, op,
 * attribute or dtype the code generator does not support. */
typedef int px_lower_rule(const px_graph *g, const px_node *n, px_kcall *k, px_diag *d);
typedef px_lower_rule *px_lower_fn;

/* px_lower_<lower> for every lowering ops.def's lower column names, defined
 * in compiler/codegen/lower_*.c. */
#define OP(name, domain, flags, sig, shape, grad, lower, eval)                                     \
    PX_OP_RULE_DECLARE(px_lower_rule, px_lower_, lower)
#include "ops.def"
#undef OP

/* Helpers shared by the lowerings. */
/* Records "node 'NAME' (Op): MESSAGE" and returns -1. */
int px_lower_error(px_diag *d, const px_node *n, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Input/output i of n, or NULL when absent or out of range. */
const px_value *px_lower_in(const px_node *n, int i);
const px_value *px_lower_out(const px_node *n, int i);
/* Input 0 and output 0 of n present and float32; else an error naming the
 * input, its dtype and why (what needs float32). */
int px_lower_need_f32(const px_node *n, const char *why, px_diag *d);
/* The opening of a lowering that reads one float32 tensor into another:
 * px_lower_need_f32, then the kernel, buffers {in, out} and the parameter
 * numel(in); the caller adds the rest of its parameters. */
int px_lower_f32_in_out(const px_node *n, px_kcall *k, const char *kernel, const char *why,
                        px_diag *d);
/* Default-domain opset of g's model (19 when the model names none). */
int64_t px_lower_opset(const px_graph *g);

/* The lowering of op, or NULL when the code generator has none. */
px_lower_fn px_lowering_for(px_op op);
int px_lower_node(const px_graph *g, const px_node *n, px_kcall *k, px_diag *d);

#endif
