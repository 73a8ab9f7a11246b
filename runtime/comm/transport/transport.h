/* Layer 1 of the communication runtime: transport. MPI start-up and
 * shutdown, this rank's place in the job (nodes, shards), counted
 * point-to-point messages and the waits the watchdog can explain, the
 * tags, the record of progress and activity the watchdog reads, the
 * hand-over between the main and the communication thread, and the
 * traffic counters. It includes nothing else of runtime/comm/.
 *
 * Threads and communicators:
 *   main thread      PS pull/push, collectives (mean, mismatch, checkpoint,
 *                    auto partitions): ps_comm and coll_comm
 *   comm thread      queued jobs, FIFO (sched/comm_thread.c): the AllReduce
 *                    (ring or recursive doubling) of started buckets on
 *                    ar_comm, and the pushes of sparse PS variables
 *                    (sched/push_async.c) on ps_comm with the answers to
 *                    prefetches on pf_comm; and MPI progress while
 *                    prefetched rows are in flight
 *   watchdog thread  when a step stalls: the stall reports (own dup of
 *                    MPI_COMM_WORLD, watchdog/watchdog.c), then MPI_Abort
 * Each communicator is a dup of MPI_COMM_WORLD, so the two threads never
 * match each other's messages. Every rank must call the collective kernels
 * (allreduce start/wait, pull, push) in the same order: messages between a
 * pair of ranks match by (communicator, tag, order). */
#ifndef PX_COMM_TRANSPORT_H
#define PX_COMM_TRANSPORT_H

#include "px_kernel.h"
#include "px_train.h"

#include <mpi.h>
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

/* Defined in runtime/rt_fail.c (no header declares them). */
extern void (*px_rt_abort_hook)(int code);
extern int px_rt_rank;

/* ---- world.c: MPI, communicators, nodes and shards ---- */
typedef struct comm_world {
    int initialized;
    int rank, size;
    int threaded; /* MPI_THREAD_MULTIPLE and not PX_COMM_NO_THREAD: a comm thread may run */
    int tag_ub;
    MPI_Comm ar_comm, ps_comm, coll_comm;
    MPI_Comm pf_comm; /* prefetched pulls (ps/prefetch.c): requests and rows in flight
                         across kernel calls never match a synchronous pull's */

    /* nodes: shards are the node leaders (lowest world rank of a node) */
    MPI_Comm node_comm;
    int node_size, leader, is_leader;
    int *node_members; /* world ranks of my node, ascending */
    int n_shards;
    int *shard_ranks; /* world rank of shard s, ascending */
} comm_world;

/* Written by world.c only (start-up, nodes); every layer reads it. */
extern comm_world px_world;

double comm_now(void); /* monotonic seconds */
/* MPI start-up (once): rank, size, the communicators, the abort hook. */
void comm_world_init(int *argc, char ***argv);
/* Frees the communicators and finalizes MPI (unless already done). */
void comm_world_finalize(void);
/* Nodes: real ones (shared memory) or virtual ones of ranks_per_node
 * consecutive ranks (> 0). Collective. */
void comm_nodes_setup(int ranks_per_node);
void comm_nodes_teardown(void);

/* Growable scratch buffer. */
typedef struct comm_buf {
    void *p;
    size_t cap;
} comm_buf;
void *comm_buf_reserve(comm_buf *b, size_t bytes);
void comm_buf_free(comm_buf *b);

/* ---- progress.c: what each thread waits for, and progress ---- */
/* The watchdog slots: which thread an activity belongs to. */
enum { WATCH_MAIN = 0, WATCH_COMM = 1 };
/* The watchdog slot of the calling thread (WATCH_MAIN unless set). */
int comm_self_slot(void);
void comm_set_self_slot(int slot);
/* Something completed (a message, a ring step, a step bracket). */
void comm_progress(void);
/* What the thread of `slot` is blocked on now ("... from rank P" names
 * the peer), and that it no longer is. */
void comm_activity(int slot, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void comm_activity_clear(int slot);
/* The training step: its number (-1 before the first) and whether the
 * rank is inside it (between step begin and step end). */
void comm_step_set(int64_t step);
void comm_step_set_inside(int inside);
int64_t comm_step(void);
int comm_in_step(void);

/* The narrow interface the watchdog observes through. */
enum { COMM_ACTIVITY_CAP = 256 };
/* Both threads' activities, copied at one instant ("" when computing). */
void comm_activity_snapshot(char out[2][COMM_ACTIVITY_CAP]);
double comm_last_progress(void); /* comm_now() of the last comm_progress */

/* ---- threads.c: the main thread and the communication thread ---- */
/* The lock and condition that hand work and its completion between the
 * main and the communication thread (queued jobs, buckets, pushes, the
 * prefetch answers the comm thread gives). */
void comm_lock(void);
void comm_unlock(void);
void comm_cond_wait(void);      /* lock held */
void comm_cond_broadcast(void); /* lock held */
/* Lock held; CLOCK_REALTIME deadline; pthread_cond_timedwait's result. */
int comm_cond_timedwait(const struct timespec *deadline);
/* Whether the communication thread runs, and which thread it is (its CPU
 * time goes to the stats); set by the thread's owner (sched/). */
int comm_thread_running(void);
void comm_thread_started(pthread_t t);
void comm_thread_stopped(void);
/* The comm thread's CPU clock; 0 when it does not run. */
int comm_thread_cpu_clock(clockid_t *c);
/* +1 / -1 around the main thread's waits for the comm thread (AllReduce,
 * queued pushes, answers): meanwhile the comm thread's waits poll
 * without sleeping. */
void comm_main_waits(int delta);
int comm_main_is_waiting(void);

/* ---- p2p.c: counted point-to-point, watched waits ---- */
/* Post a nonblocking send / receive of n elements of type t (elem bytes
 * each), counting n * elem bytes as traffic of `kind`. */
void comm_isend(const void *buf, int64_t n, MPI_Datatype t, int elem, int peer, int tag, MPI_Comm c,
                int kind, MPI_Request *req);
void comm_irecv(void *buf, int64_t n, MPI_Datatype t, int elem, int peer, int tag, MPI_Comm c,
                int kind, MPI_Request *req);
/* Waits for n requests (MPI_REQUEST_NULL allowed); while it waits the
 * watchdog reports "<what> from rank <peer of the first pending request>".
 * slot: WATCH_MAIN or WATCH_COMM. */
void comm_waitall(int slot, int n, MPI_Request *reqs, const int *peers, const char *what);
/* Called by the comm thread's waits at each turn (the parameter server
 * answers prefetched pulls there); set by the orchestrator. */
void comm_set_comm_wait_hook(void (*hook)(void));
/* A tag for (op, id) on a communicator whose ids differ per variable or
 * bucket: mismatched call orders then stall (and the watchdog names them)
 * instead of mixing data. 16 ops per id. */
int comm_tag(int64_t id, int op);
/* A list of pending requests with the peer of each (for the watchdog). */
typedef struct comm_reqs {
    int n, cap;
    MPI_Request *r;
    int *peer;
} comm_reqs;
MPI_Request *comm_reqs_add(comm_reqs *q, int peer);
void comm_reqs_wait(comm_reqs *q, int slot, const char *what); /* all; then empty */
void comm_reqs_free(comm_reqs *q);

/* ---- wire_format.c: the format floats travel in (--wire) ----
 * w: PX_WIRE_FP32 (the bytes as they are) or a 16-bit format
 * (px_enums.h). Gradient buckets and parameter-server rows travel in the
 * run's format (comm_wire_format); indices, counts, model averages and
 * every other message as they are. */
void comm_wire_set(int w); /* at setup, the same on every rank */
int comm_wire_format(void);
/* x rounded to w's precision, in place (fp32: unchanged). */
void comm_wire_round(int w, float *x, int64_t n);
/* The n floats of src in format w: src itself (fp32) or stage (n 16-bit
 * values; stage may be src: packing ascends). */
const void *comm_wire_pack(int w, const float *src, int64_t n, void *stage);
/* The same into dst (px_wire_format_bytes(w) * n bytes), and back. */
void comm_wire_pack_into(int w, void *dst, const float *src, int64_t n);
void comm_wire_unpack(int w, const void *src, float *dst, int64_t n);
/* A send of n packed floats; a receive of n floats for dst. In a 16-bit
 * format they land in dst's upper half: comm_wire_arrived widens them in
 * place once the receive completed (fp32: nothing to do). Counted as
 * px_wire_format_bytes(w) * n bytes. */
void comm_isend_wire(int w, const void *packed, int64_t n, int peer, int tag, MPI_Comm c, int kind,
                     MPI_Request *req);
void comm_irecv_wire(int w, float *dst, int64_t n, int peer, int tag, MPI_Comm c, int kind,
                     MPI_Request *req);
void comm_wire_arrived(int w, float *dst, int64_t n);
/* The same for a receive posted for `posted` floats in which n <= posted
 * arrived (their count known from the message). */
void comm_wire_widen(int w, float *dst, int64_t posted, int64_t n);

/* ---- stats.c: traffic counters, communication time, row caches ---- */
/* A kind ORed with COMM_NEXT_STEP: traffic that belongs to the next step
 * (a prefetch posted in step s for step s+1), counted when it begins, so
 * that the steps --stats counts hold their own pulls. */
#define COMM_NEXT_STEP 0x100
/* The step the calling thread's COMM_NEXT_STEP traffic is for (-1: the
 * step after the current one). */
void comm_set_traffic_step(int64_t step);
void comm_count_sent(int kind, int64_t bytes);
void comm_count_received(int kind, int64_t bytes);
void comm_stats_step(void);
void comm_stats_step_begin(void); /* counts the traffic deferred to this step */
void comm_stats_set_partitions(int64_t p);
/* Communication time (any thread), and the part of it the main thread
 * spent blocked on it: comm_hidden_fraction = 1 - waited / busy. */
void comm_time_busy(double seconds);
void comm_time_waited(double seconds);
/* A pull filled `bytes` of row cache and remap in the current step. */
void comm_note_row_cache(int64_t bytes);
int64_t comm_row_cache_most(void); /* the most of any step */

#endif
