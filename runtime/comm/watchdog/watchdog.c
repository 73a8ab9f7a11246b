/* The stall watchdog: a thread that ends the job when a step makes no
 * progress for stall_timeout_s seconds, saying what this rank waits for.
 *
 * Progress is any completed message, ring step or step bracket. The
 * activity strings say what each thread (main: pulls, pushes, bucket waits;
 * comm: the ring) is blocked on right now, so the message names the
 * operation and the peer rank. The watchdog reads them, the time of the
 * last progress and the step through transport/progress.c's functions,
 * and nothing else of the runtime. A rank that stalls outside communication (a
 * hung computation, a debugger) reports itself: "not waiting for
 * communication".
 *
 * Before it ends the job, a stalled rank tells every other rank whom it
 * waits for, and listens for a grace period to the others' reports (on its
 * own communicator; MPI_THREAD_MULTIPLE makes that legal from this thread).
 * Following "waits for" from rank to rank leads to the rank that stopped
 * first: one that never reports (stopped, hung in the kernel, dead) or one
 * that reports it is not communicating. That rank is named on the first
 * line, so a healthy rank that merely waits for a waiting rank is not
 * blamed.
 *
 * A rank whose own limit has not run out yet (it stalled later, or it waits
 * between steps where the limit is 4x) still answers: its watchdog polls
 * for reports every 100 ms and replies with whom it waits for, so only a
 * rank that truly cannot answer is taken for one that does not answer.
 *
 * A rank that ends its run says so as its watchdog stops: it sends every
 * other rank a "finished" notice, which their watchdogs keep with the
 * answers. A rank that then waits for it in vain blames no stopped rank but
 * names the one that finished (the ranks ran different schedules, or that
 * rank ended on an error it printed), while a rank that stopped, hung or
 * died never sends the notice and is still named as one that does not
 * answer. */
#include "watchdog.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static pthread_t thread;
static int running, stop;
static double timeout;
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
/* The stall reports travel on their own communicator (MPI_COMM_NULL: no
 * MPI_THREAD_MULTIPLE, or one rank: no exchange). It is made at the first
 * start and kept until MPI_Finalize: a finished notice may arrive after
 * this rank stopped its watchdog, and a communicator freed and made again
 * could reuse its context and take the stale notice for one of its own
 * messages. Each start (a test may set up twice) uses its own tag, so a
 * notice of an earlier run is never read as one of this run. */
static MPI_Comm report_comm = MPI_COMM_NULL;
static int report_tag = 1;
enum { PEER_COMPUTING = -1, PEER_COLLECTIVE = -2, PEER_UNKNOWN = -3, PEER_FINISHED = -4 };
/* The answers' buffers, one per rank, live as long as the watchdog (the
 * sends are never waited for). heard[r]: rank r's report, once answered,
 * kept because this rank may fire next and rank r reports only once. */
static int *reply_values, *heard;

/* The rank an activity waits for ("... from rank P"), or PEER_COLLECTIVE
 * for a collective, or PEER_COMPUTING when the string is empty. */
static int peer_of(const char *act) {
    if (!act[0]) return PEER_COMPUTING;
    const char *p = strstr(act, "from rank ");
    return p ? atoi(p + 10) : PEER_COLLECTIVE;
}

/* The peer this rank waits for, from a snapshot of its activities. */
static int my_peer(char activity[2][COMM_ACTIVITY_CAP]) {
    int p = peer_of(activity[WATCH_MAIN]);
    if (p >= 0) return p;
    int c = peer_of(activity[WATCH_COMM]);
    return c >= 0 ? c : p;
}

/* Sends this rank's peer to every rank, then gathers the others' for a
 * grace period: a rank that fires reports, one that has not fired yet
 * answers within one watch period. peers[r] stays PEER_UNKNOWN for ranks
 * that never answer. */
static void exchange_reports(int mine, int *peers, double grace) {
    int size = px_world.size;
    for (int r = 0; r < size; r++) peers[r] = heard ? heard[r] : PEER_UNKNOWN;
    peers[px_world.rank] = mine;
    static int sent_value;
    sent_value = mine;
    for (int r = 0; r < size; r++) {
        if (r == px_world.rank) continue;
        MPI_Request req; /* never waited for: the job ends right after */
        MPI_Isend(&sent_value, 1, MPI_INT, r, report_tag, report_comm, &req);
        MPI_Request_free(&req);
    }
    double end = comm_now() + grace;
    while (comm_now() < end) {
        int flag = 0;
        MPI_Status st;
        MPI_Iprobe(MPI_ANY_SOURCE, report_tag, report_comm, &flag, &st);
        if (!flag) {
            struct timespec ts = {0, 10 * 1000 * 1000};
            nanosleep(&ts, NULL);
            continue;
        }
        int v;
        MPI_Recv(&v, 1, MPI_INT, st.MPI_SOURCE, report_tag, report_comm, MPI_STATUS_IGNORE);
        peers[st.MPI_SOURCE] = v;
    }
}

static const char finished_text[] =
    "ended its run while the others still wait for it (no rank stopped or hung: the ranks ran "
    "different schedules, or it ended on an error it printed)";

/* Follows "waits for" from this rank; writes the blame line into out
 * (empty when nobody can be blamed: a collective or a cycle). */
static void blame(const int *peers, char *out, size_t cap) {
    int size = px_world.size, r = px_world.rank;
    char chain[400] = "";
    size_t used = 0;
    char *seen = calloc((size_t)size, 1);
    out[0] = 0;
    if (!seen) return;
    for (;;) {
        int p = peers[r];
        if (p == PEER_UNKNOWN) {
            snprintf(out, cap,
                     "rank %d stopped first: it does not answer (stopped, hung or dead)%s%s", r,
                     used ? "; " : "", chain);
            break;
        }
        if (p == PEER_COMPUTING) {
            snprintf(out, cap,
                     "rank %d stopped first: it is not waiting for communication (a stalled "
                     "computation)%s%s",
                     r, used ? "; " : "", chain);
            break;
        }
        if (p == PEER_FINISHED) {
            snprintf(out, cap, "rank %d %s%s%s", r, finished_text, used ? "; " : "", chain);
            break;
        }
        if (p < 0 || p >= size || seen[r]) {
            /* A collective (no single peer) or a cycle: blame a rank that is
             * not communicating, else one that does not answer, else one
             * that finished. */
            int quiet = -1, silent = -1, done = -1;
            for (int k = 0; k < size; k++) {
                if (peers[k] == PEER_COMPUTING && quiet < 0) quiet = k;
                if (peers[k] == PEER_UNKNOWN && silent < 0) silent = k;
                if (peers[k] == PEER_FINISHED && done < 0) done = k;
            }
            if (quiet >= 0)
                snprintf(out, cap,
                         "rank %d stopped first: it is not waiting for communication (a stalled "
                         "computation); the others wait for each other or in a collective",
                         quiet);
            else if (silent >= 0)
                snprintf(out, cap,
                         "rank %d stopped first: it does not answer (stopped, hung or dead); the "
                         "others wait for each other or in a collective",
                         silent);
            else if (done >= 0)
                snprintf(out, cap, "rank %d %s; the others wait for each other or in a collective",
                         done, finished_text);
            break;
        }
        seen[r] = 1;
        if (used < sizeof chain)
            used += (size_t)snprintf(chain + used, sizeof chain - used,
                                     "%srank %d waits for rank %d", used ? ", " : "", r, p);
        r = p;
    }
    free(seen);
}

/* Answers the reports of ranks that fired: each gets this rank's peer. */
static void answer_reports(void) {
    if (report_comm == MPI_COMM_NULL || !reply_values) return;
    for (;;) {
        int flag = 0;
        MPI_Status st;
        MPI_Iprobe(MPI_ANY_SOURCE, report_tag, report_comm, &flag, &st);
        if (!flag) return;
        int v;
        MPI_Recv(&v, 1, MPI_INT, st.MPI_SOURCE, report_tag, report_comm, MPI_STATUS_IGNORE);
        heard[st.MPI_SOURCE] = v;
        if (v == PEER_FINISHED) continue; /* a notice, not a report to answer */
        char activity[2][COMM_ACTIVITY_CAP];
        comm_activity_snapshot(activity);
        reply_values[st.MPI_SOURCE] = my_peer(activity);
        MPI_Request req;
        MPI_Isend(&reply_values[st.MPI_SOURCE], 1, MPI_INT, st.MPI_SOURCE, report_tag, report_comm,
                  &req);
        MPI_Request_free(&req);
    }
}

static void fire(double idle) {
    char what[600], culprit[600] = "";
    char activity[2][COMM_ACTIVITY_CAP];
    comm_activity_snapshot(activity);
    if (activity[WATCH_MAIN][0] && activity[WATCH_COMM][0])
        snprintf(what, sizeof what, "waiting for %s; communication thread: %s",
                 activity[WATCH_MAIN], activity[WATCH_COMM]);
    else if (activity[WATCH_MAIN][0])
        snprintf(what, sizeof what, "waiting for %s", activity[WATCH_MAIN]);
    else if (activity[WATCH_COMM][0])
        snprintf(what, sizeof what, "not waiting for communication; communication thread: %s",
                 activity[WATCH_COMM]);
    else
        snprintf(what, sizeof what, "not waiting for communication: computing");
    int mine = my_peer(activity);
    if (report_comm != MPI_COMM_NULL) {
        int *peers = malloc(sizeof(int) * (size_t)px_world.size);
        if (peers) {
            double grace = timeout < 2.0 ? (timeout > 0.5 ? timeout : 0.5) : 2.0;
            exchange_reports(mine, peers, grace);
            blame(peers, culprit, sizeof culprit);
            free(peers);
        }
    }
    /* One write: the blame first, then what this rank itself waits for. */
    char line[1400];
    int n = 0;
    if (culprit[0])
        n = snprintf(line, sizeof line, "error (rank %d): %s\n", px_world.rank, culprit);
    snprintf(line + n, sizeof line - (size_t)n,
             "error (rank %d): no progress for %.0f s in step %lld (%s)\n", px_world.rank, idle,
             (long long)comm_step(), what);
    fputs(line, stderr);
    fflush(stderr);
    MPI_Abort(MPI_COMM_WORLD, 1);
}

static void *watch(void *arg) {
    (void)arg;
    /* Wakes every 100 ms (or the limit's quarter, if shorter) so that
     * reports are answered well within a firing rank's grace period. */
    double period = timeout / 4 < 0.1 ? timeout / 4 : 0.1;
    pthread_mutex_lock(&mu);
    while (!stop) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        double t = (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec + period;
        ts.tv_sec = (time_t)t;
        ts.tv_nsec = (long)((t - (double)ts.tv_sec) * 1e9);
        int rc = pthread_cond_timedwait(&cv, &mu, &ts);
        if (stop) break;
        if (rc != ETIMEDOUT && rc != 0) continue;
        answer_reports();
        /* Between steps (checkpoint gathers, the loss mean, writing files) a
         * stopped peer blocks the job too; there the limit is 4x, so that
         * ordinary work between steps (a large checkpoint's fsync) is not
         * taken for a stall. Before the first step nothing is watched. */
        int in_step = comm_in_step();
        if (!in_step && comm_step() < 0) continue;
        double idle = comm_now() - comm_last_progress();
        if (idle >= (in_step ? timeout : 4 * timeout)) fire(idle);
    }
    pthread_mutex_unlock(&mu);
    return NULL;
}

void comm_watchdog_start(double timeout_s) {
    if (running) return;
    timeout = timeout_s;
    stop = 0;
    /* Every rank starts the watchdog in px_comm_setup (the same flags), so
     * the collective MPI_Comm_dup matches across ranks. */
    int provided = MPI_THREAD_SINGLE;
    MPI_Query_thread(&provided);
    if (provided >= MPI_THREAD_MULTIPLE && px_world.size > 1) {
        static int starts;
        if (report_comm == MPI_COMM_NULL) MPI_Comm_dup(MPI_COMM_WORLD, &report_comm);
        report_tag = 1 + starts++ % 16384; /* MPI guarantees tags up to 32767 */
        reply_values = calloc((size_t)px_world.size * 2, sizeof *reply_values);
        if (reply_values) {
            heard = reply_values + px_world.size;
            for (int r = 0; r < px_world.size; r++) heard[r] = PEER_UNKNOWN;
        }
    }
    comm_progress();
    if (pthread_create(&thread, NULL, watch, NULL) != 0)
        px_rt_fail("cannot start the watchdog thread");
    running = 1;
}

void comm_watchdog_stop(void) {
    if (!running) return;
    pthread_mutex_lock(&mu);
    stop = 1;
    pthread_cond_signal(&cv);
    pthread_mutex_unlock(&mu);
    pthread_join(thread, NULL);
    running = 0;
    if (report_comm != MPI_COMM_NULL && reply_values) {
        /* The notice that this rank finished: eager and never waited for;
         * a rank waiting for this one keeps it, one that finished too never
         * reads it. */
        static const int finished = PEER_FINISHED;
        for (int r = 0; r < px_world.size; r++) {
            if (r == px_world.rank) continue;
            MPI_Request req;
            MPI_Isend(&finished, 1, MPI_INT, r, report_tag, report_comm, &req);
            MPI_Request_free(&req);
        }
    }
    free(reply_values);
    reply_values = heard = NULL;
}
