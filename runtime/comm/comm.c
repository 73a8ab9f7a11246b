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

/* Local SGD (--sync-every): this step's buckets stay local, and whether
 * the replicas (weights, optimizer state) differ between ranks now. */
typedef struct local_sgd {
    const px_program_desc *prog;
    int64_t every, after;
    int64_t t; /* px_train.t: the 1-based optimizer step being run */
    int local;
    int weights_apart, slots_apart;
} local_sgd;
static local_sgd lsgd;

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
    ps_stale_teardown();
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
    if (opts.wire < 0 || opts.wire >= PX_WIRE_COUNT || opts.sync_every < 0 ||
        opts.local_sgd_after < 0 || opts.staleness < 0)
        px_rt_fail("communication options: unknown wire format or negative relaxed setting");
    if (opts.sync_every > 1 && p->n_masked > 0)
        px_rt_fail("--sync-every: local SGD does not apply to programs with masked weights "
                   "(--sparsity)");
    lsgd = (local_sgd){.prog = p, .every = opts.sync_every, .after = opts.local_sgd_after};
    comm_nodes_setup(opts.ranks_per_node);
    comm_wire_set(opts.wire);
    comm_allreduce_setup(p, opts.wire_error_feedback);
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

/* The replicas' mean over the ranks: the weights, and with_slots their
 * optimizer state. */
static void average(int with_slots) {
    int n_slots = with_slots && lsgd.prog->optim ? px_optim_n_slots(lsgd.prog->optim->kind) : 0;
    comm_average_replicas(lsgd.prog, n_slots ? px_train.slots : NULL, n_slots);
    lsgd.weights_apart = 0;
    if (with_slots) lsgd.slots_apart = 0;
}

void px_comm_step_begin(int64_t step) {
    /* the optimizer step (its micro-batches under --accumulate share it) */
    lsgd.t = px_train.t;
    lsgd.local = lsgd.every > 1 && lsgd.t > lsgd.after;
    px_train.local_step = lsgd.local;
    comm_allreduce_set_local(lsgd.local);
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
    if (lsgd.local) {
        lsgd.weights_apart = lsgd.slots_apart = 1;
        if ((lsgd.t - lsgd.after) % lsgd.every == 0) average(0);
    }
    comm_stats_step();
    comm_autotune_step_end(comm_now() - step_t0);
}

void px_comm_sync_point(int kind) {
    if (!setup_done) return;
    int checkpoint = kind == PX_SYNC_POINT_CHECKPOINT;
    if (lsgd.weights_apart || (checkpoint && lsgd.slots_apart)) average(checkpoint);
    if (checkpoint) {
        comm_allreduce_forget_residuals();
        if (px_ps.opts.staleness > 0) {
            ps_stale_forget();
            comm_prefetch_forget();
        }
    }
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
    m->row_cache = comm_row_cache_most() + ps_stale_bytes();
    m->allreduce_buffers = comm_allreduce_buffer_bytes();
}
