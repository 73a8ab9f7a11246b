/* MPI start-up and shutdown, nodes and shards, the small collectives (mean
 * of the loss, mismatch check) and the step brackets. */
#include "comm_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

comm_state px_comm;

double comm_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* px_rt_fail on any rank ends the whole job, not just this process. A job
 * of one rank just exits (px_rt_fail does): MPI_Abort would add OpenMPI's
 * banner to the one message that matters. */
static void abort_job(int code) {
    fflush(stdout);
    fflush(stderr);
    if (px_comm.size <= 1) return;
    MPI_Abort(MPI_COMM_WORLD, code);
}

static void check_mpi(int err, const char *what) {
    if (err == MPI_SUCCESS) return;
    char msg[MPI_MAX_ERROR_STRING];
    int len = 0;
    MPI_Error_string(err, msg, &len);
    px_rt_fail("%s failed: %s", what, msg);
}

void px_comm_init(int *argc, char ***argv) {
    if (px_comm.initialized) return;
    int already = 0, provided = MPI_THREAD_SINGLE;
    MPI_Initialized(&already);
    if (already)
        MPI_Query_thread(&provided);
    else
        check_mpi(MPI_Init_thread(argc, argv, MPI_THREAD_MULTIPLE, &provided), "MPI_Init_thread");
    MPI_Comm_rank(MPI_COMM_WORLD, &px_comm.rank);
    MPI_Comm_size(MPI_COMM_WORLD, &px_comm.size);
    px_rt_rank = px_comm.rank;
    px_rt_abort_hook = abort_job;
    /* PX_COMM_NO_THREAD=1 forces the single-threaded path (tests use it). */
    const char *no_thread = getenv("PX_COMM_NO_THREAD");
    int forced = no_thread && no_thread[0] && strcmp(no_thread, "0") != 0;
    px_comm.threaded = provided >= MPI_THREAD_MULTIPLE && !forced;
    if (provided < MPI_THREAD_MULTIPLE && px_comm.rank == 0 && px_comm.size > 1)
        fprintf(stderr, "note: this MPI does not provide MPI_THREAD_MULTIPLE: bucket allreduces "
                        "run when they are waited for (no overlap with the backward pass)\n");
    MPI_Comm_dup(MPI_COMM_WORLD, &px_comm.ar_comm);
    MPI_Comm_dup(MPI_COMM_WORLD, &px_comm.ps_comm);
    MPI_Comm_dup(MPI_COMM_WORLD, &px_comm.coll_comm);
    MPI_Comm_dup(MPI_COMM_WORLD, &px_comm.pf_comm);
    int *ub = NULL, found = 0;
    MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_TAG_UB, &ub, &found);
    px_comm.tag_ub = found && ub ? *ub : 32767;
    px_comm.node_comm = MPI_COMM_NULL;
    pthread_mutex_init(&px_comm.mu, NULL);
    pthread_cond_init(&px_comm.cv, NULL);
    px_comm.initialized = 1;
}

int px_comm_rank(void) {
    return px_comm.rank;
}

int px_comm_size(void) {
    return px_comm.size;
}

/* Nodes: real ones (shared memory) or virtual ones of ranks_per_node
 * consecutive ranks. The node leader (lowest rank) is the node's shard. */
static void nodes_setup(int ranks_per_node) {
    if (ranks_per_node > 0)
        MPI_Comm_split(MPI_COMM_WORLD, px_comm.rank / ranks_per_node, px_comm.rank,
                       &px_comm.node_comm);
    else
        MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, px_comm.rank, MPI_INFO_NULL,
                            &px_comm.node_comm);
    MPI_Comm_size(px_comm.node_comm, &px_comm.node_size);
    px_comm.node_members = malloc(sizeof(int) * (size_t)px_comm.node_size);
    MPI_Allgather(&px_comm.rank, 1, MPI_INT, px_comm.node_members, 1, MPI_INT, px_comm.node_comm);
    px_comm.leader = px_comm.node_members[0];
    for (int i = 1; i < px_comm.node_size; i++) /* split_type orders by key, but be sure */
        if (px_comm.node_members[i] < px_comm.leader) px_comm.leader = px_comm.node_members[i];
    px_comm.is_leader = px_comm.leader == px_comm.rank;
    int *flags = malloc(sizeof(int) * (size_t)px_comm.size);
    MPI_Allgather(&px_comm.is_leader, 1, MPI_INT, flags, 1, MPI_INT, px_comm.coll_comm);
    px_comm.n_shards = 0;
    px_comm.shard_ranks = malloc(sizeof(int) * (size_t)px_comm.size);
    for (int r = 0; r < px_comm.size; r++)
        if (flags[r]) px_comm.shard_ranks[px_comm.n_shards++] = r;
    free(flags);
}

static void nodes_teardown(void) {
    if (px_comm.node_comm != MPI_COMM_NULL) MPI_Comm_free(&px_comm.node_comm);
    free(px_comm.node_members);
    free(px_comm.shard_ranks);
    px_comm.node_members = px_comm.shard_ranks = NULL;
}

static void teardown(void) {
    if (!px_comm.setup_done) return;
    comm_watchdog_stop();
    comm_thread_teardown();
    comm_push_teardown();
    comm_allreduce_teardown();
    comm_prefetch_teardown();
    ps_push_inbox_teardown();
    ps_rowset_scratch_free();
    comm_ps_teardown();
    nodes_teardown();
    px_comm.setup_done = 0;
}

void px_comm_setup(const px_program_desc *p, const px_comm_opts *o) {
    if (!px_comm.initialized) px_rt_fail("px_comm_setup called before px_comm_init");
    teardown(); /* a second setup (tests) starts over */
    px_comm.prog = p;
    px_comm_opts defaults = {.local_aggregation = 1};
    px_comm.opts = o ? *o : defaults;
    if (px_comm.opts.ranks_per_node < 0 || px_comm.opts.partitions_override < 0)
        px_rt_fail("communication options: ranks_per_node and partitions must not be negative");
    px_comm.n_slots = p->optim ? px_optim_n_slots(p->optim->kind) : 0;
    px_comm.step = -1;
    px_comm.in_step = 0;
    nodes_setup(px_comm.opts.ranks_per_node);
    comm_allreduce_setup(p);
    comm_ps_setup(p);
    comm_push_setup();
    comm_thread_setup();
    comm_autotune_setup();
    px_comm_stats_reset();
    px_comm.setup_done = 1;
    if (px_comm.opts.stall_timeout_s > 0) comm_watchdog_start(px_comm.opts.stall_timeout_s);
    MPI_Barrier(px_comm.coll_comm); /* every shard is ready before the first pull */
}

void px_comm_finalize(void) {
    if (!px_comm.initialized) return;
    teardown();
    MPI_Comm_free(&px_comm.ar_comm);
    MPI_Comm_free(&px_comm.ps_comm);
    MPI_Comm_free(&px_comm.coll_comm);
    MPI_Comm_free(&px_comm.pf_comm);
    px_comm.initialized = 0;
    px_rt_abort_hook = NULL;
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (!finalized) MPI_Finalize();
}

double px_comm_mean(double v) {
    if (px_comm.size == 1) return v;
    double sum = 0;
    comm_activity(WATCH_MAIN, "the mean of the loss over all ranks (MPI_Allreduce)");
    MPI_Allreduce(&v, &sum, 1, MPI_DOUBLE, MPI_SUM, px_comm.coll_comm);
    comm_activity_clear(WATCH_MAIN);
    comm_progress();
    comm_count_sent(PX_TRAFFIC_OTHER, 8);
    comm_count_received(PX_TRAFFIC_OTHER, 8);
    return sum / px_comm.size;
}

int px_comm_first_mismatch(uint64_t v) {
    if (px_comm.size == 1) return -1;
    uint64_t v0 = v;
    comm_activity(WATCH_MAIN, "the consistency check across ranks (MPI_Bcast, MPI_Allreduce)");
    MPI_Bcast(&v0, 1, MPI_UINT64_T, 0, px_comm.coll_comm);
    int mine = v == v0 ? px_comm.size : px_comm.rank, lowest = px_comm.size;
    MPI_Allreduce(&mine, &lowest, 1, MPI_INT, MPI_MIN, px_comm.coll_comm);
    comm_activity_clear(WATCH_MAIN);
    comm_progress();
    comm_count_sent(PX_TRAFFIC_OTHER, px_comm.rank == 0 ? 8 + 4 : 4);
    comm_count_received(PX_TRAFFIC_OTHER, px_comm.rank == 0 ? 4 : 8 + 4);
    return lowest == px_comm.size ? -1 : lowest;
}

void px_comm_step_begin(int64_t step) {
    __atomic_store_n(&px_comm.step, step, __ATOMIC_RELAXED);
    px_comm.step_t0 = comm_now();
    comm_stats_step_begin();
    comm_prefetch_poll();
    comm_prefetch_step_begin();
    comm_progress();
    __atomic_store_n(&px_comm.in_step, 1, __ATOMIC_RELEASE);
}

void px_comm_step_end(void) {
    __atomic_store_n(&px_comm.in_step, 0, __ATOMIC_RELEASE);
    comm_push_wait_all();
    comm_progress();
    /* Before the partitions may move: answers deferred for clipping. */
    comm_prefetch_step_end();
    comm_stats_step();
    comm_autotune_step_end(comm_now() - px_comm.step_t0);
}
