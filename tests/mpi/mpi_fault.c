/* Failures end the whole job, with a message that names the rank:
 *   stall       (2 ranks) rank 1 hangs before starting its allreduce: the
 *               watchdog (2 s) reports "no progress ... rank 1 ..."
 *   stall_pull  (3 ranks, one shard each) rank 1 hangs before a pull
 *   finished    rank 1 ends its run after 2 steps while rank 0 goes on: the
 *               watchdog names rank 1 as one that finished, not as stopped
 *   stopped     rank 1 stops (SIGSTOP) in step 2: named as one that does
 *               not answer
 *   kill        rank 1 dies of SIGKILL in a step: mpirun ends the job
 *   bad_index   rank 1 pulls row 99 of a 10-row variable: px_rt_fail names
 *               the variable, the position and the value, and aborts
 * tests/cli/mpi_comm.sh checks the exit status, the time and the output.
 * Usage: mpi_fault MODE */
#include "mpi_test.h"

#include <signal.h>
#include <unistd.h>

enum { ROWS = 10, DIM = 2 };

int main(int argc, char **argv) {
    px_comm_init(&argc, &argv);
    const char *mode = argc > 1 ? argv[1] : "";
    int rank = px_comm_rank();
    static float e[ROWS * DIM], cache[ROWS * DIM], g[4];
    static int64_t dims[2], bucket_bytes[1] = {16};
    static px_var_desc vars[1];
    static px_optim_desc optim = {.kind = PX_OPTIM_SGD, .lr = 0.1};
    static px_program_desc prog;
    vars[0] = mt_var("E", dims, ROWS, DIM, e, PX_SYNC_PS, 2);
    prog.abi = PX_PROGRAM_ABI;
    prog.kind = PX_PROGRAM_TRAIN;
    prog.n_vars = 1;
    prog.vars = vars;
    prog.optim = &optim;
    prog.n_buckets = 1;
    prog.bucket_bytes = bucket_bytes;
    px_train.prog = &prog;
    int one_shard_each = strcmp(mode, "stall_pull") == 0;
    px_comm_opts opts = {
        .ranks_per_node = one_shard_each ? 1 : 0, .local_aggregation = 1, .stall_timeout_s = 2.0};
    px_comm_setup(&prog, &opts);
    int steps = rank == 1 && strcmp(mode, "finished") == 0 ? 2 : 5;
    for (int s = 0; s < steps; s++) {
        px_train.t = s + 1;
        px_comm_step_begin(s);
        int64_t idx[3] = {s % ROWS, 9, 0};
        if (s == 2 && rank == 1) {
            if (strcmp(mode, "bad_index") == 0) idx[2] = 99;
            if (strcmp(mode, "stall_pull") == 0) sleep(60);
        }
        int64_t pp[] = {0, 7, 3, DIM}, remap[3];
        px_k_ps_pull_rows((void *[]){idx, cache, remap}, pp);
        if (s == 2 && rank == 1) {
            if (strcmp(mode, "stall") == 0) sleep(60);
            if (strcmp(mode, "kill") == 0) raise(SIGKILL);
            if (strcmp(mode, "stopped") == 0) raise(SIGSTOP);
        }
        int64_t pb[] = {0, 1, 16};
        px_k_allreduce_start((void *[]){g}, pb);
        px_k_allreduce_wait((void *[]){g, g}, pb);
        px_comm_step_end();
    }
    if (rank == 0 || steps < 5) printf("mpi_fault %s: rank %d was not stopped\n", mode, rank);
    px_comm_finalize();
    return 0;
}
