/* Counted point-to-point messages and waits the watchdog can explain. */
#include "transport.h"

#include <limits.h>
#include <stdlib.h>
#include <time.h>

void *comm_buf_reserve(comm_buf *b, size_t bytes) {
    if (bytes <= b->cap && b->p) return b->p;
    size_t cap = b->cap ? b->cap : 256;
    while (cap < bytes) cap *= 2;
    void *p = realloc(b->p, cap);
    if (!p) px_rt_fail("out of memory (%zu bytes of communication buffers)", cap);
    b->p = p;
    b->cap = cap;
    return p;
}

void comm_buf_free(comm_buf *b) {
    free(b->p);
    b->p = NULL;
    b->cap = 0;
}

static int count_of(int64_t n) {
    if (n < 0 || n > INT_MAX)
        px_rt_fail("a message of %lld elements exceeds MPI's int count limit", (long long)n);
    return (int)n;
}

void comm_isend(const void *buf, int64_t n, MPI_Datatype t, int elem, int peer, int tag, MPI_Comm c,
                int kind, MPI_Request *req) {
    MPI_Isend(buf, count_of(n), t, peer, tag, c, req);
    comm_count_sent(kind, n * elem);
}

void comm_irecv(void *buf, int64_t n, MPI_Datatype t, int elem, int peer, int tag, MPI_Comm c,
                int kind, MPI_Request *req) {
    MPI_Irecv(buf, count_of(n), t, peer, tag, c, req);
    comm_count_received(kind, n * elem);
}

/* How a wait polls. The main thread (and the comm thread while the main
 * thread itself waits for communication) calls MPI_Waitsome: the rank has
 * nothing else to do, and the latency-bound exchanges of a small model's
 * step want the quickest response. The comm thread, while the main thread
 * computes, polls with MPI_Testsome back to back for SPIN_US, then with
 * sleeps that grow to SLEEP_MAX_US: MPI_Waitsome would busy-poll (with
 * mpi_yield_when_idle: yield-poll) for the whole wait and take a core from
 * the compute it overlaps with. A sleep of at most 100 us holds a 1 Gbit/s
 * link's transfer back by at most 12 KB, far less than a socket buffer: the
 * kernel keeps the bytes moving while the thread sleeps. */
enum { SPIN_US = 50, SLEEP_MIN_US = 10, SLEEP_MAX_US = 100 };

static void (*comm_wait_hook)(void);

void comm_set_comm_wait_hook(void (*hook)(void)) {
    comm_wait_hook = hook;
}

static void sleep_us(long us) {
    struct timespec ts = {0, us * 1000};
    nanosleep(&ts, NULL);
}

/* One call that completes at least one request, or 0 when none did yet. */
static int wait_some(int slot, int n, MPI_Request *reqs, int *done, double *idle_since, long *nap) {
    int outcount = 0;
    if (slot != WATCH_COMM || comm_main_is_waiting()) {
        MPI_Waitsome(n, reqs, &outcount, done, MPI_STATUSES_IGNORE);
        return outcount;
    }
    MPI_Testsome(n, reqs, &outcount, done, MPI_STATUSES_IGNORE);
    if (outcount != 0) {
        *idle_since = comm_now();
        *nap = SLEEP_MIN_US;
    } else if (comm_now() - *idle_since > 1e-6 * SPIN_US) {
        sleep_us(*nap);
        *nap = *nap * 2 < SLEEP_MAX_US ? *nap * 2 : SLEEP_MAX_US;
    }
    return outcount;
}

void comm_waitall(int slot, int n, MPI_Request *reqs, const int *peers, const char *what) {
    int *done = malloc(sizeof(int) * (size_t)(n > 0 ? n : 1));
    double idle_since = comm_now();
    long nap = SLEEP_MIN_US;
    for (;;) {
        int first = -1;
        for (int i = 0; i < n && first < 0; i++)
            if (reqs[i] != MPI_REQUEST_NULL) first = i;
        if (first < 0) break;
        comm_activity(slot, "%s from rank %d", what, peers[first]);
        if (slot == WATCH_COMM && comm_wait_hook) comm_wait_hook();
        int outcount = wait_some(slot, n, reqs, done, &idle_since, &nap);
        if (outcount == MPI_UNDEFINED) break;
        if (outcount > 0) comm_progress();
    }
    free(done);
    comm_activity_clear(slot);
}

int comm_tag(int64_t id, int op) {
    const int ops = 16;
    if (id >= 0 && id < (px_world.tag_ub - ops) / ops) return (int)(id * ops + op);
    return op;
}

MPI_Request *comm_reqs_add(comm_reqs *q, int peer) {
    if (q->n == q->cap) {
        q->cap = q->cap ? 2 * q->cap : 16;
        q->r = realloc(q->r, sizeof *q->r * (size_t)q->cap);
        q->peer = realloc(q->peer, sizeof *q->peer * (size_t)q->cap);
        if (!q->r || !q->peer) px_rt_fail("out of memory for MPI requests");
    }
    q->peer[q->n] = peer;
    return &q->r[q->n++];
}

void comm_reqs_wait(comm_reqs *q, int slot, const char *what) {
    comm_waitall(slot, q->n, q->r, q->peer, what);
    q->n = 0;
}

void comm_reqs_free(comm_reqs *q) {
    free(q->r);
    free(q->peer);
    q->r = NULL;
    q->peer = NULL;
    q->n = q->cap = 0;
}
