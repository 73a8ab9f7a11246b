/* Overlapped parameter-server pulls (comm_internal.h, "ps_prefetch.c").
 *
 * Without overlap a step's pull of a variable costs two round trips on the
 * step's critical path (row counts, then indices out and rows back), once
 * per Gather of the variable. Here the pulls of step s+1 travel during
 * step s:
 *
 *   step s, push of W (every rank)  the distinct rows that W's pulls of step
 *       s+1 will read (the union over its Gathers: their indices are graph
 *       inputs, and opts.next_input loads the next batch's), grouped by
 *       owner: to every other shard a count and the indices, receives for
 *       the rows posted; then the push itself.
 *   step s, after the shard applied the update of W (in its push; with
 *       --clip-grad-norm in px_comm_step_end, once px_clip_finish applied
 *       the queued updates): the shard answers every request with the rows
 *       as they are now, and copies its own rows into its own request.
 *   step s+1, each pull of W  waits for rows already in flight and lays
 *       them out exactly as a synchronous pull would (same cache order, same
 *       remap).
 *
 * The rows are read after the update of step s and before anything else
 * changes them, so they are bit for bit what a pull in step s+1 reads.
 * A dense PS variable (--comm ps) works the same way with every row: the
 * shards send their partitions after the update straight into the other
 * ranks' replicas (nothing reads a replica after its push in a step).
 *
 * Whether a variable is prefetched in a step depends only on the program
 * (are all its pull indices graph inputs), the step (is there a next one)
 * and the flags, so every rank decides the same and the shards know which
 * requests to expect. Messages go over their own communicator (pf_comm),
 * tagged per variable: at most one request per variable is in flight.
 *
 * Time: the main thread's waits count as waited; the communication time of
 * a prefetch is from its request to the first moment this rank sees it
 * complete (tested at the pulls and at the step brackets). */
#include "comm_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Counted in the step the rows serve (stats.c). */
#define PREFETCH_TRAFFIC (PX_TRAFFIC_PS_PULL | COMM_NEXT_STEP)

typedef struct ps_prefetch {
    /* the pulls of the step being run */
    int64_t sites_step; /* the step they belong to */
    int n_sites, cap_sites;
    int64_t *site_input; /* graph input read as indices; -1: not an input */
    int64_t *site_n;     /* number of indices */
    int dense;           /* a pull of every row (dense PS variable) */

    /* requester: the rows of step `step` (-1: nothing requested) */
    int64_t step;
    int64_t k;                    /* distinct rows requested */
    comm_buf uniq, slot, grouped; /* uniq ascending; slot[u]: row of uniq[u] in `rows` */
    comm_buf perm, rows, all_idx;
    int64_t *counts, *offs; /* per rank: rows asked of it, where they start */
    comm_reqs reqs;         /* the request's sends and the rows' receives */
    int waited;             /* reqs completed */
    double t_post;
    float *w; /* dense: the replica the rows go to */

    /* shard: answers of this step to give (after the update) */
    int serve_pending;
    int serve_ready;    /* the update is applied, the comm thread answers when
                           idle (guarded by px_comm.mu) */
    int64_t pull_order; /* position of this variable's first pull in the step */
    comm_reqs replies;  /* sends of the last answers */
    int64_t *their, *their_offs;
    comm_buf their_idx, reply;
} ps_prefetch;

static int64_t current_step(void) {
    return __atomic_load_n(&px_comm.step, __ATOMIC_RELAXED);
}

static ps_prefetch *pf_of(ps_var *pv) {
    if (pv->pf) return pv->pf;
    ps_prefetch *pf = calloc(1, sizeof *pf);
    int n = px_comm.size;
    if (pf) pf->counts = calloc((size_t)n * 4, sizeof(int64_t));
    if (!pf || !pf->counts) px_rt_fail("out of memory for the prefetch of '%s'", pv->name);
    pf->offs = pf->counts + n;
    pf->their = pf->counts + 2 * n;
    pf->their_offs = pf->counts + 3 * n;
    pf->sites_step = -1;
    pf->step = -1;
    pv->pf = pf;
    return pf;
}

/* The graph input whose buffer idx is (same address, dtype and size), or -1.
 * The memory plan gives an input its own buffer until its last use, so a
 * pull reading that buffer reads the input (or a view of all of it). */
static int64_t input_of(const void *idx, int dtype, int64_t n_idx) {
    const px_program_desc *p = px_comm.prog;
    int64_t elem = dtype == 6 ? 4 : 8;
    for (int64_t i = 0; i < p->n_inputs; i++) {
        const px_io_desc *in = &p->inputs[i];
        if (in->data == idx && in->dtype == dtype && in->nbytes == n_idx * elem) return i;
    }
    return -1;
}

void comm_prefetch_note_pull(ps_var *pv, const void *idx, int dtype, int64_t n_idx) {
    if (!px_comm.opts.prefetch || !px_comm.opts.next_input || px_train.eval_pass) return;
    ps_prefetch *pf = pf_of(pv);
    int64_t step = current_step();
    static int64_t order_step = -1, order_next;
    if (order_step != step) {
        order_step = step;
        order_next = 0;
    }
    if (pf->sites_step != step) {
        pf->sites_step = step;
        pf->n_sites = 0;
        pf->dense = 0;
        /* read by the comm thread when it picks the next answer to give */
        __atomic_store_n(&pf->pull_order, order_next++, __ATOMIC_RELAXED);
    }
    if (!idx) {
        pf->dense = 1;
        return;
    }
    if (pf->n_sites == pf->cap_sites) {
        pf->cap_sites = pf->cap_sites ? 2 * pf->cap_sites : 4;
        pf->site_input = realloc(pf->site_input, sizeof(int64_t) * (size_t)pf->cap_sites);
        pf->site_n = realloc(pf->site_n, sizeof(int64_t) * (size_t)pf->cap_sites);
        if (!pf->site_input || !pf->site_n) px_rt_fail("out of memory");
    }
    pf->site_input[pf->n_sites] = input_of(idx, dtype, n_idx);
    pf->site_n[pf->n_sites++] = n_idx;
}

/* Does every rank request pv's rows of the next step at this push? */
static int eligible(ps_var *pv) {
    ps_prefetch *pf = pv->pf;
    if (!px_comm.opts.prefetch || !px_comm.opts.next_input || px_train.eval_pass || !pf) return 0;
    if (pf->sites_step != current_step() || (pf->n_sites == 0 && !pf->dense)) return 0;
    if (pf->dense && pf->n_sites > 0) return 0;
    for (int i = 0; i < pf->n_sites; i++)
        if (pf->site_input[i] < 0) return 0;
    return px_comm.opts.next_input(-1) != NULL;
}

/* The union of the next step's indices of pv's pulls, requested from
 * their shards. */
static void request_rows(ps_var *pv, ps_prefetch *pf) {
    const px_program_desc *p = px_comm.prog;
    int me = px_comm.rank;
    int64_t d = pv->dim, total = 0;
    for (int i = 0; i < pf->n_sites; i++) total += pf->site_n[i];
    size_t cap = (size_t)(total > 0 ? total : 1);
    int64_t *all = comm_buf_reserve(&pf->all_idx, sizeof(int64_t) * cap);
    int64_t at = 0;
    for (int i = 0; i < pf->n_sites; i++) {
        int64_t input = pf->site_input[i];
        const void *next = px_comm.opts.next_input(input);
        if (!next)
            px_rt_fail("prefetch of '%s': no next-step data for input '%s'", pv->name,
                       p->inputs[input].name);
        for (int64_t j = 0; j < pf->site_n[i]; j++)
            all[at + j] = p->inputs[input].dtype == 6 ? ((const int32_t *)next)[j]
                                                      : ((const int64_t *)next)[j];
        at += pf->site_n[i];
    }
    int64_t *uniq = comm_buf_reserve(&pf->uniq, sizeof(int64_t) * cap);
    pf->k = ps_unique_indices(all, 7, total, pv->rows, "ps_pull (prefetch)", pv->name, uniq, NULL);
    int64_t *grouped = comm_buf_reserve(&pf->grouped, sizeof(int64_t) * cap);
    int64_t *perm = comm_buf_reserve(&pf->perm, sizeof(int64_t) * cap);
    int64_t *slot = comm_buf_reserve(&pf->slot, sizeof(int64_t) * cap);
    ps_group_by_owner(pv, uniq, pf->k, pf->counts, pf->offs, grouped, perm);
    for (int64_t j = 0; j < pf->k; j++) slot[perm[j]] = j;
    /* Reserved for every index, not only this step's distinct ones: the same
     * every step, as compiler/memory_model.c predicts it. */
    float *rows = comm_buf_reserve(&pf->rows, sizeof(float) * (size_t)(total * d + 1));
    comm_note_row_cache(total * d * (int64_t)sizeof(float));

    int t_count = comm_tag(pv->var, TAG_PULL_COUNT), t_idx = comm_tag(pv->var, TAG_PULL_IDX),
        t_rows = comm_tag(pv->var, TAG_PULL_ROWS);
    for (int s = 0; s < px_comm.n_shards; s++) {
        int r = px_comm.shard_ranks[s];
        if (r == me) continue;
        comm_isend(&pf->counts[r], 1, MPI_INT64_T, 8, r, t_count, px_comm.pf_comm, PREFETCH_TRAFFIC,
                   comm_reqs_add(&pf->reqs, r));
        if (pf->counts[r] == 0) continue;
        comm_isend(grouped + pf->offs[r], pf->counts[r], MPI_INT64_T, 8, r, t_idx, px_comm.pf_comm,
                   PREFETCH_TRAFFIC, comm_reqs_add(&pf->reqs, r));
        comm_irecv(rows + pf->offs[r] * d, pf->counts[r] * d, MPI_FLOAT, 4, r, t_rows,
                   px_comm.pf_comm, PREFETCH_TRAFFIC, comm_reqs_add(&pf->reqs, r));
    }
}

/* Every row of a dense PS variable, straight into the replica. */
static void request_all(ps_var *pv, ps_prefetch *pf, float *w) {
    int me = px_comm.rank, tag = comm_tag(pv->var, TAG_PULL_ALL);
    pf->w = w;
    for (int64_t q = 0; q < pv->n_parts; q++) {
        ps_part *part = &pv->parts[q];
        if (part->owner == me) continue;
        comm_irecv(w + part->row0 * pv->dim, part->rows * pv->dim, MPI_FLOAT, 4, part->owner, tag,
                   px_comm.pf_comm, PREFETCH_TRAFFIC, comm_reqs_add(&pf->reqs, part->owner));
    }
}

void comm_prefetch_before_push(ps_var *pv, float *w) {
    if (!eligible(pv)) return;
    ps_prefetch *pf = pv->pf;
    comm_prefetch_drain(pv);          /* the last answers read the buffers reused here */
    if (pf->step >= 0 && !pf->waited) /* requested but never pulled: cannot happen */
        px_rt_fail("prefetch of '%s': the rows of step %lld were never used", pv->name,
                   (long long)pf->step + 1);
    pf->step = current_step() + 1;
    pf->waited = 0;
    pf->t_post = comm_now();
    if (pf->dense)
        request_all(pv, pf, w);
    else
        request_rows(pv, pf);
    pf->serve_pending = px_comm.is_leader;
}

/* Shard side: the requests of this step answered from the rows as they are
 * now (after the update). */
static void serve_rows(ps_var *pv, ps_prefetch *pf) {
    int me = px_comm.rank, n = px_comm.size;
    int64_t d = pv->dim;
    size_t row_bytes = sizeof(float) * (size_t)d;
    char what[200];
    int t_count = comm_tag(pv->var, TAG_PULL_COUNT), t_idx = comm_tag(pv->var, TAG_PULL_IDX),
        t_rows = comm_tag(pv->var, TAG_PULL_ROWS);
    /* This rank's own request: its rows are here. */
    const int64_t *grouped = pf->grouped.p;
    float *rows = pf->rows.p;
    for (int64_t j = pf->offs[me]; j < pf->offs[me] + pf->counts[me]; j++)
        memcpy(rows + j * d, ps_master_row(pv, grouped[j]), row_bytes);
    /* The others': every rank sent its count and indices at its push. */
    comm_reqs q = {0};
    for (int r = 0; r < n; r++)
        if (r != me)
            comm_irecv(&pf->their[r], 1, MPI_INT64_T, 8, r, t_count, px_comm.pf_comm,
                       PREFETCH_TRAFFIC, comm_reqs_add(&q, r));
    snprintf(what, sizeof what, "the prefetch of '%s' (row counts asked of this shard)", pv->name);
    comm_reqs_wait(&q, comm_self_slot(), what);
    int64_t total = 0;
    for (int r = 0; r < n; r++) {
        pf->their_offs[r] = total;
        total += r == me ? 0 : pf->their[r];
    }
    int64_t *idx = comm_buf_reserve(&pf->their_idx, sizeof(int64_t) * (size_t)(total + 1));
    for (int r = 0; r < n; r++)
        if (r != me && pf->their[r] > 0)
            comm_irecv(idx + pf->their_offs[r], pf->their[r], MPI_INT64_T, 8, r, t_idx,
                       px_comm.pf_comm, PREFETCH_TRAFFIC, comm_reqs_add(&q, r));
    snprintf(what, sizeof what, "the prefetch of '%s' (indices asked of this shard)", pv->name);
    comm_reqs_wait(&q, comm_self_slot(), what);
    comm_reqs_free(&q);
    /* The last answers left long ago; their buffer is reused. */
    snprintf(what, sizeof what, "the prefetch of '%s' (earlier rows)", pv->name);
    comm_reqs_wait(&pf->replies, comm_self_slot(), what);
    float *reply = comm_buf_reserve(&pf->reply, row_bytes * (size_t)(total + 1));
    for (int r = 0; r < n; r++) {
        if (r == me || pf->their[r] == 0) continue;
        for (int64_t j = pf->their_offs[r]; j < pf->their_offs[r] + pf->their[r]; j++) {
            if (idx[j] < 0 || idx[j] >= pv->rows)
                px_rt_fail("prefetch of '%s': rank %d asked for row %lld of %lld", pv->name, r,
                           (long long)idx[j], (long long)pv->rows);
            memcpy(reply + j * d, ps_master_row(pv, idx[j]), row_bytes);
        }
        comm_isend(reply + pf->their_offs[r] * d, pf->their[r] * d, MPI_FLOAT, 4, r, t_rows,
                   px_comm.pf_comm, PREFETCH_TRAFFIC, comm_reqs_add(&pf->replies, r));
    }
}

/* Dense: each owned partition to every other rank and into the own replica.
 * Sent from a copy: automatic partitions may move the master rows at the
 * end of the step, before every receiver has them. */
static void serve_all(ps_var *pv, ps_prefetch *pf) {
    int me = px_comm.rank, n = px_comm.size, tag = comm_tag(pv->var, TAG_PULL_ALL);
    char what[200];
    snprintf(what, sizeof what, "the prefetch of every row of '%s' (earlier rows)", pv->name);
    comm_reqs_wait(&pf->replies, comm_self_slot(), what);
    int64_t owned = 0;
    for (int64_t q = 0; q < pv->n_parts; q++)
        if (pv->parts[q].owner == me) owned += pv->parts[q].rows * pv->dim;
    float *copy = comm_buf_reserve(&pf->reply, sizeof(float) * (size_t)(owned + 1));
    for (int64_t q = 0; q < pv->n_parts; q++) {
        ps_part *part = &pv->parts[q];
        if (part->owner != me) continue;
        int64_t len = part->rows * pv->dim;
        memcpy(copy, part->w, sizeof(float) * (size_t)len);
        memcpy(pf->w + part->row0 * pv->dim, part->w, sizeof(float) * (size_t)len);
        for (int r = 0; r < n; r++)
            if (r != me)
                comm_isend(copy, len, MPI_FLOAT, 4, r, tag, px_comm.pf_comm, PREFETCH_TRAFFIC,
                           comm_reqs_add(&pf->replies, r));
        copy += len;
    }
}

static void serve(ps_var *pv) {
    ps_prefetch *pf = pv->pf;
    if (!pf || !pf->serve_pending) return;
    pf->serve_pending = 0;
    comm_set_traffic_step(pf->step); /* the answers may leave after that step began */
    if (pf->dense)
        serve_all(pv, pf);
    else
        serve_rows(pv, pf);
    comm_set_traffic_step(-1);
}

void comm_prefetch_after_push(ps_var *pv) {
    /* With clipping the shard's update is queued until px_clip_finish. */
    if (px_train.clip_max_norm > 0) return;
    ps_prefetch *pf = pv->pf;
    if (comm_self_slot() == WATCH_COMM && pf && pf->serve_pending) {
        /* On the comm thread: answered when it is idle (comm_prefetch_serve_one),
         * so the answers do not hold up the jobs queued behind this push. */
        pthread_mutex_lock(&px_comm.mu);
        pf->serve_ready = 1;
        pthread_mutex_unlock(&px_comm.mu);
        return;
    }
    serve(pv);
}

/* The ready answer whose rows the next step reads first; px_comm.mu held. */
static ps_var *next_ready_locked(void) {
    ps_var *best = NULL;
    for (int i = 0; i < px_comm.n_ps; i++) {
        ps_prefetch *pf = px_comm.ps[i].pf;
        if (pf && pf->serve_ready &&
            (!best || __atomic_load_n(&pf->pull_order, __ATOMIC_RELAXED) <
                          __atomic_load_n(&best->pf->pull_order, __ATOMIC_RELAXED)))
            best = &px_comm.ps[i];
    }
    return best;
}

int comm_prefetch_serve_one_locked(ps_var *only) {
    ps_var *pv = only ? (only->pf && only->pf->serve_ready ? only : NULL) : next_ready_locked();
    if (!pv) return 0;
    pthread_mutex_unlock(&px_comm.mu);
    serve(pv);
    pthread_mutex_lock(&px_comm.mu);
    pv->pf->serve_ready = 0;
    pthread_cond_broadcast(&px_comm.cv);
    return 1;
}

void comm_prefetch_drain(ps_var *pv) {
    if (!px_comm.thread_running || comm_self_slot() == WATCH_COMM) return;
    comm_main_waits(1);
    pthread_mutex_lock(&px_comm.mu);
    for (;;) {
        int pending = 0;
        for (int i = 0; i < px_comm.n_ps && !pending; i++) {
            ps_prefetch *pf = px_comm.ps[i].pf;
            pending = pf && pf->serve_ready && (!pv || pv == &px_comm.ps[i]);
        }
        if (!pending) break;
        pthread_cond_broadcast(&px_comm.cv); /* wakes the comm thread if asleep */
        pthread_cond_wait(&px_comm.cv, &px_comm.mu);
    }
    pthread_mutex_unlock(&px_comm.mu);
    comm_main_waits(-1);
}

void comm_prefetch_step_end(void) {
    if (!(px_train.clip_max_norm > 0)) { /* answered after each push */
        comm_prefetch_poll();
        return;
    }
    double t0 = comm_now();
    int served = 0;
    for (int i = 0; i < px_comm.n_ps; i++) {
        ps_prefetch *pf = px_comm.ps[i].pf;
        served |= pf && pf->serve_pending;
        serve(&px_comm.ps[i]);
    }
    if (served) { /* the main thread answered: blocked, like a pull */
        double dt = comm_now() - t0;
        comm_time_busy(dt);
        comm_time_waited(dt);
    }
    comm_prefetch_poll();
}

void comm_prefetch_poll(void) {
    /* Notices completed prefetches: their communication time ends there. */
    for (int i = 0; i < px_comm.n_ps; i++) {
        ps_prefetch *pf = px_comm.ps[i].pf;
        if (!pf || pf->step < 0 || pf->waited || pf->reqs.n == 0) continue;
        int done = 0;
        MPI_Testall(pf->reqs.n, pf->reqs.r, &done, MPI_STATUSES_IGNORE);
        if (done) {
            comm_time_busy(comm_now() - pf->t_post);
            pf->reqs.n = 0;
            pf->waited = 1;
        }
    }
}

/* Waits for the rows of this step's prefetch of pv; 0 when none. */
static int wait_for_step(ps_var *pv, ps_prefetch *pf) {
    if (!pf || px_train.eval_pass || pf->step < 0 || pf->step != current_step()) return 0;
    if (pf->waited) return 1;
    double t0 = comm_now();
    char what[200];
    snprintf(what, sizeof what, "the prefetched rows of '%s'", pv->name);
    comm_reqs_wait(&pf->reqs, WATCH_MAIN, what);
    double t1 = comm_now();
    comm_time_busy(t1 - pf->t_post);
    comm_time_waited(t1 - t0);
    pf->waited = 1;
    return 1;
}

int comm_prefetch_take_rows(ps_var *pv, const void *idx, int dtype, int64_t n_idx, float *cache,
                            void *remap) {
    ps_prefetch *pf = pv->pf;
    comm_prefetch_drain(pv); /* this shard's own rows come with its answers */
    if (!wait_for_step(pv, pf) || pf->dense) return 0;
    int64_t *counts = calloc((size_t)px_comm.size * 2, sizeof(int64_t));
    if (!counts) px_rt_fail("out of memory");
    const int64_t *grouped = NULL, *mine = NULL, *my_slot = NULL;
    int64_t k = ps_pull_plan(pv, idx, dtype, n_idx, remap, counts, counts + px_comm.size, &grouped,
                             &mine, &my_slot);
    const int64_t *uniq = pf->uniq.p, *slot = pf->slot.p;
    const float *rows = pf->rows.p;
    int64_t d = pv->dim;
    /* This pull's distinct rows and the prefetched ones both ascend: one
     * merge finds each in the prefetch. */
    for (int64_t u = 0, p = 0; u < k; u++) {
        while (p < pf->k && uniq[p] < mine[u]) p++;
        if (p == pf->k || uniq[p] != mine[u])
            px_rt_fail("internal error: the pull of '%s' in step %lld reads row %lld, which its "
                       "prefetch did not fetch (run with --no-overlap)",
                       pv->name, (long long)pf->step + 1, (long long)mine[u]);
        memcpy(cache + my_slot[u] * d, rows + slot[p] * d, sizeof(float) * (size_t)d);
    }
    free(counts);
    return 1;
}

int comm_prefetch_take_all(ps_var *pv, float *w) {
    ps_prefetch *pf = pv->pf;
    comm_prefetch_drain(pv);
    if (pf && px_train.eval_pass && pf->step >= 0 && !pf->waited) {
        /* A validation between steps pulls into the replica the rows of the
         * next step are still arriving in (the same values): let them land. */
        comm_reqs_wait(&pf->reqs, WATCH_MAIN, "the prefetched rows (before a validation)");
        pf->waited = 1;
        return 0;
    }
    if (!wait_for_step(pv, pf)) return 0;
    if (!pf->dense || pf->w != w)
        px_rt_fail("internal error: the prefetch of '%s' does not match its pull", pv->name);
    return 1;
}

void comm_prefetch_teardown(void) {
    for (int i = 0; i < px_comm.n_ps; i++) {
        ps_prefetch *pf = px_comm.ps[i].pf;
        if (!pf) continue;
        comm_reqs_wait(&pf->reqs, WATCH_MAIN, "the prefetched rows (at shutdown)");
        comm_reqs_wait(&pf->replies, WATCH_MAIN, "the prefetch answers (at shutdown)");
        comm_reqs_free(&pf->reqs);
        comm_reqs_free(&pf->replies);
        comm_buf *bufs[] = {&pf->uniq, &pf->slot,    &pf->grouped,   &pf->perm,
                            &pf->rows, &pf->all_idx, &pf->their_idx, &pf->reply};
        for (size_t b = 0; b < sizeof bufs / sizeof bufs[0]; b++) comm_buf_free(bufs[b]);
        free(pf->site_input);
        free(pf->site_n);
        free(pf->counts);
        free(pf);
        px_comm.ps[i].pf = NULL;
    }
}
