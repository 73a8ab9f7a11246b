/* MPI start-up and shutdown, the communicators, nodes and shards. */
#include "transport.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

comm_world px_world;

double comm_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* px_rt_fail on any rank ends the whole job: the failing rank exits with
 * the status (px_rt_fail does), and mpirun, seeing a rank end with a
 * non-zero status, ends the others (its default). MPI_Abort would do the
 * same but bury the one message that matters under OpenMPI's banner. A
 * launcher that lets the others run on leaves them to the stall watchdog. */
static void abort_job(int code) {
    (void)code;
    fflush(stdout);
    fflush(stderr);
}

static void check_mpi(int err, const char *what) {
    if (err == MPI_SUCCESS) return;
    char msg[MPI_MAX_ERROR_STRING];
    int len = 0;
    MPI_Error_string(err, msg, &len);
    px_rt_fail("%s failed: %s", what, msg);
}

void comm_world_init(int *argc, char ***argv) {
    int already = 0, provided = MPI_THREAD_SINGLE;
    MPI_Initialized(&already);
    if (already)
        MPI_Query_thread(&provided);
    else
        check_mpi(MPI_Init_thread(argc, argv, MPI_THREAD_MULTIPLE, &provided), "MPI_Init_thread");
    MPI_Comm_rank(MPI_COMM_WORLD, &px_world.rank);
    MPI_Comm_size(MPI_COMM_WORLD, &px_world.size);
    px_rt_rank = px_world.size > 1 ? px_world.rank : -1; /* messages name the rank of a job */
    px_rt_abort_hook = abort_job;
    /* PX_COMM_NO_THREAD=1 forces the single-threaded path (tests use it). */
    const char *no_thread = getenv("PX_COMM_NO_THREAD");
    int forced = no_thread && no_thread[0] && strcmp(no_thread, "0") != 0;
    px_world.threaded = provided >= MPI_THREAD_MULTIPLE && !forced;
    if (provided < MPI_THREAD_MULTIPLE && px_world.rank == 0 && px_world.size > 1)
        fprintf(stderr, "note: this MPI does not provide MPI_THREAD_MULTIPLE: bucket allreduces "
                        "run when they are waited for (no overlap with the backward pass)\n");
    MPI_Comm_dup(MPI_COMM_WORLD, &px_world.ar_comm);
    MPI_Comm_dup(MPI_COMM_WORLD, &px_world.ps_comm);
    MPI_Comm_dup(MPI_COMM_WORLD, &px_world.coll_comm);
    MPI_Comm_dup(MPI_COMM_WORLD, &px_world.pf_comm);
    int *ub = NULL, found = 0;
    MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_TAG_UB, &ub, &found);
    px_world.tag_ub = found && ub ? *ub : 32767;
    px_world.node_comm = MPI_COMM_NULL;
    px_world.initialized = 1;
}

void comm_world_finalize(void) {
    MPI_Comm_free(&px_world.ar_comm);
    MPI_Comm_free(&px_world.ps_comm);
    MPI_Comm_free(&px_world.coll_comm);
    MPI_Comm_free(&px_world.pf_comm);
    px_world.initialized = 0;
    px_rt_abort_hook = NULL;
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (!finalized) MPI_Finalize();
}

int px_comm_rank(void) {
    return px_world.rank;
}

int px_comm_size(void) {
    return px_world.size;
}

void comm_nodes_setup(int ranks_per_node) {
    if (ranks_per_node > 0)
        MPI_Comm_split(MPI_COMM_WORLD, px_world.rank / ranks_per_node, px_world.rank,
                       &px_world.node_comm);
    else
        MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, px_world.rank, MPI_INFO_NULL,
                            &px_world.node_comm);
    MPI_Comm_size(px_world.node_comm, &px_world.node_size);
    px_world.node_members = malloc(sizeof(int) * (size_t)px_world.node_size);
    MPI_Allgather(&px_world.rank, 1, MPI_INT, px_world.node_members, 1, MPI_INT,
                  px_world.node_comm);
    px_world.leader = px_world.node_members[0];
    for (int i = 1; i < px_world.node_size; i++) /* split_type orders by key, but be sure */
        if (px_world.node_members[i] < px_world.leader) px_world.leader = px_world.node_members[i];
    px_world.is_leader = px_world.leader == px_world.rank;
    int *flags = malloc(sizeof(int) * (size_t)px_world.size);
    MPI_Allgather(&px_world.is_leader, 1, MPI_INT, flags, 1, MPI_INT, px_world.coll_comm);
    px_world.n_shards = 0;
    px_world.shard_ranks = malloc(sizeof(int) * (size_t)px_world.size);
    for (int r = 0; r < px_world.size; r++)
        if (flags[r]) px_world.shard_ranks[px_world.n_shards++] = r;
    free(flags);
}

void comm_nodes_teardown(void) {
    if (px_world.node_comm != MPI_COMM_NULL) MPI_Comm_free(&px_world.node_comm);
    free(px_world.node_members);
    free(px_world.shard_ranks);
    px_world.node_members = px_world.shard_ranks = NULL;
}
