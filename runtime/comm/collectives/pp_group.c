/* Pipeline parallelism (--pp S): ranks form pipelines of tp * S
 * consecutive ranks (S stages of a tensor-parallel group of tp ranks
 * each); rank r is at stage (r / tp) mod S. A stage sends a micro-batch's
 * activations to a later stage and receives their gradients back through
 * point-to-point messages on the pipeline's own communicator.
 *
 * Sends never wait: the values are copied and sent with MPI_Isend, so two
 * stages that send to each other at once (1F1B's steady state: an
 * activation forward, a gradient back) cannot block each other. The
 * generated step orders every rank's calls as one global order that
 * respects the data dependencies, so a receive always finds its send
 * issued.
 *
 * A send larger than MPI's eager limit goes by rendezvous: unless the
 * receiver can pull the data alone (Open MPI's CMA single-copy between
 * processes of one host), its bytes move only inside an MPI call of the
 * sender, and a stage that computes a whole pass after posting a send
 * would keep its receiver waiting that long. The communication thread
 * therefore tests the pending sends every POLL_US while there are any
 * (comm_pp_drive_sends, sched/comm_thread.c); the sends are shared with it
 * under their own lock, so a request is never tested by two threads at
 * once. */
#include "collectives.h"
#include "px_trace.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

int64_t px_pp_stage;

int px_var_held(const px_program_desc *p, int64_t v) {
    return p->pp <= 1 || !p->var_pp_stage || p->var_pp_stage[v] == px_pp_stage;
}

static MPI_Comm pipe_comm = MPI_COMM_NULL;
static int pipe_tp = 1, pipe_pp = 1;
static double waited;

typedef struct pending {
    MPI_Request req;
    float *copy;
    int to; /* the stage it goes to */
} pending;
static pending *sends; /* under sends_mu */
static int n_sends, cap_sends;
static int n_pending; /* n_sends, for reading without the lock (atomic) */
static pthread_mutex_t sends_mu = PTHREAD_MUTEX_INITIALIZER;

void px_comm_pp_setup(int pp, int tp) {
    if (pp < 1 || tp < 1 || px_world.size % (pp * tp) != 0)
        px_rt_fail("--pp %d: the program runs on %d ranks, not a multiple of %d", pp, px_world.size,
                   pp * tp);
    pipe_tp = tp;
    pipe_pp = pp;
    px_pp_stage = (px_world.rank / tp) % pp;
    if (tp > 1) comm_tp_group_setup(tp);
    if (pp > 1)
        MPI_Comm_split(px_world.coll_comm, px_world.rank / (pp * tp), px_world.rank, &pipe_comm);
}

/* This rank's counterpart at stage s: the pipeline communicator orders its
 * ranks by world rank, stage-major. */
static int peer(int s) {
    if (s < 0 || s >= pipe_pp || pipe_comm == MPI_COMM_NULL)
        px_rt_fail("pipeline transfer to stage %d of %d (not set up)", s, pipe_pp);
    return s * pipe_tp + px_world.rank % pipe_tp;
}

static int tag_of(int tag) {
    return tag % (px_world.tag_ub > 0 ? px_world.tag_ub : 32767);
}

/* Frees the copies of the sends that have completed (sends_mu held);
 * testing them also moves their bytes. --trace marks when and on which
 * thread each was seen complete. */
static void reap_locked(void) {
    int kept = 0;
    for (int i = 0; i < n_sends; i++) {
        int done = 0;
        MPI_Test(&sends[i].req, &done, MPI_STATUS_IGNORE);
        if (done) {
            free(sends[i].copy);
            px_trace_end(PX_SPAN_PP_SENT, sends[i].to, px_trace_begin());
        } else
            sends[kept++] = sends[i];
    }
    n_sends = kept;
    __atomic_store_n(&n_pending, n_sends, __ATOMIC_RELEASE);
}

static void reap(void) {
    pthread_mutex_lock(&sends_mu);
    reap_locked();
    pthread_mutex_unlock(&sends_mu);
}

int comm_pp_sends_pending(void) {
    return __atomic_load_n(&n_pending, __ATOMIC_ACQUIRE);
}

int comm_pp_drive_sends(void) {
    if (!comm_pp_sends_pending()) return 0;
    pthread_mutex_lock(&sends_mu);
    reap_locked();
    int left = n_sends;
    pthread_mutex_unlock(&sends_mu);
    return left;
}

void comm_pp_send(const float *x, int64_t n, int to, int tag) {
    if (n > INT32_MAX) px_rt_fail("pipeline transfer of %lld values: too many", (long long)n);
    float *copy = malloc(sizeof(float) * (size_t)(n > 0 ? n : 1));
    if (!copy) px_rt_fail("out of memory for a pipeline transfer of %lld values", (long long)n);
    memcpy(copy, x, sizeof(float) * (size_t)n);
    pthread_mutex_lock(&sends_mu);
    reap_locked();
    if (n_sends == cap_sends) {
        int cap = cap_sends ? 2 * cap_sends : 16;
        pending *more = realloc(sends, sizeof *more * (size_t)cap);
        if (!more) px_rt_fail("out of memory for a pipeline transfer");
        sends = more;
        cap_sends = cap;
    }
    pending *p = &sends[n_sends];
    p->copy = copy;
    p->to = to;
    MPI_Isend(p->copy, (int)n, MPI_FLOAT, peer(to), tag_of(tag), pipe_comm, &p->req);
    n_sends++;
    __atomic_store_n(&n_pending, n_sends, __ATOMIC_RELEASE);
    pthread_mutex_unlock(&sends_mu);
    comm_count_sent(PX_TRAFFIC_OTHER, 4 * n);
    if (comm_thread_running()) { /* it polls while a send is pending */
        comm_lock();
        comm_cond_broadcast();
        comm_unlock();
    }
}

void comm_pp_recv(float *y, int64_t n, int from, int tag) {
    if (n > INT32_MAX) px_rt_fail("pipeline transfer of %lld values: too many", (long long)n);
    comm_activity(WATCH_MAIN, "a pipeline receive of %lld values from stage %d (MPI_Recv)",
                  (long long)n, from);
    double t0 = comm_now();
    MPI_Recv(y, (int)n, MPI_FLOAT, peer(from), tag_of(tag), pipe_comm, MPI_STATUS_IGNORE);
    waited += comm_now() - t0;
    comm_activity_clear(WATCH_MAIN);
    comm_count_received(PX_TRAFFIC_OTHER, 4 * n);
    reap();
}

void comm_pp_broadcast(const float *x, float *y, int64_t n, int from) {
    if (n > INT32_MAX) px_rt_fail("pipeline broadcast of %lld values: too many", (long long)n);
    /* x is stage `from`'s: the other stages' ranks have no buffer for it
     * (each rank's arena holds its own stage's values) */
    if (y != x && (pipe_pp == 1 || px_pp_stage == from)) memmove(y, x, sizeof(float) * (size_t)n);
    if (pipe_pp == 1) return;
    comm_activity(WATCH_MAIN, "a pipeline broadcast of %lld values from stage %d (MPI_Bcast)",
                  (long long)n, from);
    double t0 = comm_now();
    MPI_Bcast(y, (int)n, MPI_FLOAT, peer(from), pipe_comm);
    waited += comm_now() - t0;
    comm_activity_clear(WATCH_MAIN);
    if (px_pp_stage == from)
        comm_count_sent(PX_TRAFFIC_OTHER, 4 * n * (pipe_pp - 1));
    else
        comm_count_received(PX_TRAFFIC_OTHER, 4 * n);
}

double px_comm_pp_wait_seconds(void) {
    return waited;
}

void px_comm_pp_to_first(float *buf, int64_t n, int stage) {
    if (pipe_pp <= 1 || stage <= 0 || px_world.rank >= pipe_pp * pipe_tp) return;
    if (stage >= pipe_pp) px_rt_fail("pipeline gather from stage %d of %d", stage, pipe_pp);
    if (n > INT32_MAX) px_rt_fail("pipeline gather of %lld values: too many", (long long)n);
    int from = stage * pipe_tp, tag = px_world.tag_ub > 0 ? px_world.tag_ub : 32767;
    if (px_world.rank == from) {
        comm_activity(WATCH_MAIN, "sending %lld values to rank 0 (MPI_Send)", (long long)n);
        MPI_Send(buf, (int)n, MPI_FLOAT, 0, tag, pipe_comm);
        comm_count_sent(PX_TRAFFIC_OTHER, 4 * n);
    } else if (px_world.rank == 0) {
        comm_activity(WATCH_MAIN, "receiving %lld values from stage %d (MPI_Recv)", (long long)n,
                      stage);
        MPI_Recv(buf, (int)n, MPI_FLOAT, from, tag, pipe_comm, MPI_STATUS_IGNORE);
        comm_count_received(PX_TRAFFIC_OTHER, 4 * n);
    } else {
        return;
    }
    comm_activity_clear(WATCH_MAIN);
    comm_progress();
}
