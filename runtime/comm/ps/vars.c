/* The parameter-server layer's state (ps.h: px_ps): the program, the
 * options, the PS variables, and the questions every file of the layer
 * asks of them. Calls nothing of the layer, so that every file may use it. */
#include "ps.h"

ps_state px_ps;

ps_var *comm_ps_var(int64_t var, const char *op) {
    if (!px_ps.ready) px_rt_fail("%s: communication is not set up", op);
    const px_program_desc *p = px_ps.prog;
    if (var < 0 || var >= p->n_vars)
        px_rt_fail("%s: variable %lld does not exist", op, (long long)var);
    if (!px_ps.ps_of_var[var])
        px_rt_fail("%s: variable '%s' is not on the parameter servers", op,
                   p->vars[var].name ? p->vars[var].name : "?");
    return px_ps.ps_of_var[var];
}

int comm_push_queued_on(void) {
    return comm_thread_running() && px_ps.opts.async_push && !px_train_updates_deferred();
}
