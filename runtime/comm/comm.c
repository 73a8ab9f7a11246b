/* The orchestrator of the communication runtime: start-up, setup, the step
 * brackets, teardown and the memory summary. The only file that knows
 * every layer:
 *   transport/    MPI, point-to-point, tags, progress record, counters
 *   collectives/  bucketed AllReduce, small collectives
 *   ps/           parameter server: layout, pull, push, prefetch
 *   sched/        comm thread and its jobs, kernels, automatic partitions
 *   watchdog/     the stall watchdog, observing transport/'s record
 * Each layer includes only the ones above it in this list. */
#include "comm/sched/sched.h"
#include "comm/watchdog/watchdog.h"

static int setup_done;
static double step_t0;

void px_comm_init(int *argc, char ***argv) {
    if (px_world.initialized) return;
    comm_world_init(argc, argv);
}

static void teardown(void) {
    if (!setup_done) return;
    comm_watchdog_stop();
    comm_thread_teardown();
    comm_push_teardown();
    comm_allreduce_jobs_teardown();
    comm_allreduce_teardown();
    comm_prefetch_teardown();
    ps_push_inbox_teardown();
    ps_rowset_scratch_free();
    comm_ps_teardown();
    comm_nodes_teardown();
    setup_done = 0;
}

void px_comm_setup(const px_program_desc *p, const px_comm_opts *o) {
    if (!px_world.initialized) px_rt_fail("px_comm_setup called before px_comm_init");
    teardown(); /* a second setup (tests) starts over */
    px_comm_opts defaults = {.local_aggregation = 1};
    px_comm_opts opts = o ? *o : defaults;
    if (opts.ranks_per_node < 0 || opts.partitions_override < 0)
        px_rt_fail("communication options: ranks_per_node and partitions must not be negative");
    comm_step_set(-1);
    comm_step_set_inside(0);
    comm_nodes_setup(opts.ranks_per_node);
    comm_allreduce_setup(p);
    comm_ps_setup(p, &opts);
    /* The comm thread's waits answer prefetched pulls (ps/prefetch_serve.c). */
    comm_set_comm_wait_hook(comm_prefetch_early_serve);
    comm_allreduce_jobs_setup();
    comm_push_setup();
    comm_thread_setup();
    comm_autotune_setup();
    px_comm_stats_reset();
    setup_done = 1;
    if (opts.stall_timeout_s > 0) comm_watchdog_start(opts.stall_timeout_s);
    MPI_Barrier(px_world.coll_comm); /* every shard is ready before the first pull */
}

void px_comm_finalize(void) {
    if (!px_world.initialized) return;
    teardown();
    comm_world_finalize();
}

void px_comm_step_begin(int64_t step) {
    comm_step_set(step);
    step_t0 = comm_now();
    comm_stats_step_begin();
    comm_prefetch_poll();
    comm_prefetch_step_begin();
    comm_progress();
    comm_step_set_inside(1);
}

void px_comm_step_end(void) {
    comm_step_set_inside(0);
    comm_push_wait_all();
    comm_progress();
    /* Before the partitions may move: answers deferred for clipping. */
    comm_prefetch_step_end();
    /* With --accumulate the partitions move, and the step counts, only
     * between updates (the summed rows belong to a partition). */
    if (!px_train_last_micro()) return;
    comm_stats_step();
    comm_autotune_step_end(comm_now() - step_t0);
}

/* What this rank holds for communication, for the memory prediction that
 * --stats writes next to the measured peak RSS (runtime/program/
 * memory_stats.c): the master rows and optimizer state of the partitions it
 * owns now (after any re-partitioning), the row caches its pulls filled in
 * one step, and the AllReduce buffers. */
void px_comm_memory(px_comm_memory_use *m) {
    *m = (px_comm_memory_use){0};
    m->shard_rows = ps_shard_bytes();
    m->optimizer_state = px_ps.n_slots * m->shard_rows;
    m->row_cache = comm_row_cache_most();
    m->allreduce_buffers = comm_allreduce_buffer_bytes();
}
