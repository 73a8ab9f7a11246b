/* Overlapped parameter-server pulls (ps.h, "prefetch.c").
 *
 * Without overlap a step's pull of a variable costs two round trips on the
 * step's critical path (row counts, then indices out and rows back), once
 * per Gather of the variable. Here the pulls of step s+1 travel during
 * step s:
 *
 *   step s begins (every rank)  the distinct rows that W's pulls of step
 *       s+1 will read (the union over its Gathers: their indices are graph
 *       inputs, and opts.next_input loads the next batch's; which Gathers,
 *       the pulls of step s-1 told), grouped by owner: to every other shard
 *       a count and the indices, receives for the rows and the fix-ups
 *       posted (comm_prefetch_step_begin). In the first step, and for a
 *       dense PS variable (whose rows land in the replica this step reads),
 *       the same happens at the push of W instead.
 *   step s, while it computes  the shard's comm thread answers each
 *       request as it arrives with the rows as they are, copied
 *       (prefetch_serve.c): the wire is idle in the forward pass.
 *   step s, after the shard applied the update of W (in its push; with
 *       --clip-grad-norm in px_comm_step_end, once px_clip_finish applied
 *       the queued updates): the shard sends each early answer's fix-up,
 *       the rows the update changed, answers the requests not answered yet,
 *       and copies its own rows into its own request.
 *   step s+1, each pull of W  waits for rows and fix-ups already in
 *       flight, lays the fix-ups over the rows, and lays them out exactly as
 *       a synchronous pull would (same cache order, same remap).
 *
 * Every row ends as it is after the update of step s and before anything
 * else changes it, so it is bit for bit what a pull in step s+1 reads.
 * A dense PS variable (--comm ps) is answered after the update only, with
 * every row: the shards send their partitions straight into the other
 * ranks' replicas (nothing reads a replica after its push in a step).
 *
 * Whether a variable is prefetched in a step depends only on the program
 * (are all its pull indices graph inputs), the step (is there a next one)
 * and the flags, so every rank decides the same and the shards know which
 * requests to expect. Messages go over their own communicator (pf_comm),
 * tagged per variable: two requests per variable at a time (pf->req, by
 * the parity of their step), whose messages MPI keeps in order.
 *
 * Time: the main thread's waits count as waited; the communication time of
 * a prefetch is from its request to the first moment this rank sees it
 * complete (tested at the pulls and at the step brackets).
 *
 * Under --staleness S (stale.c) a request leaves out the rows the step's
 * pulls may read from the rows this rank kept (pulled in the last S steps,
 * or on their way for the step before); a pull keeps the rows of its
 * request and reads every row from the store. After ps_stale_forget (a
 * checkpoint) the next step behaves as the first step of a resumed run:
 * no request at its start, and its pulls synchronous (reading the rows
 * already requested from the store), so both runs read the same rows. */
#include "prefetch.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int64_t current_step(void) {
    return comm_step();
}

/* --staleness: the step after a ps_stale_forget, whose pulls are
 * synchronous (-1: none). */
static int64_t resync_step = -1;

static ps_prefetch *pf_of(ps_var *pv) {
    if (pv->pf) return pv->pf;
    ps_prefetch *pf = calloc(1, sizeof *pf);
    if (!pf) px_rt_fail("out of memory for the prefetch of '%s'", pv->name);
    int n = px_world.size;
    for (int i = 0; i < 2; i++) {
        pf_request *rq = &pf->req[i];
        rq->counts = calloc((size_t)n * 5, sizeof(int64_t));
        if (!rq->counts) px_rt_fail("out of memory for the prefetch of '%s'", pv->name);
        rq->offs = rq->counts + n;
        rq->fix_at = rq->counts + 2 * n;
        rq->ask = rq->counts + 3 * n;
        rq->step = -1;
    }
    pf->sites_step = -1;
    pv->pf = pf;
    return pf;
}

/* The request whose rows `step` reads, or NULL. */
static pf_request *request_for(ps_prefetch *pf, int64_t step) {
    if (!pf || step < 0) return NULL;
    pf_request *rq = &pf->req[step & 1];
    return rq->step == step ? rq : NULL;
}

/* The graph input whose buffer idx is (same address, dtype and size), or -1.
 * The memory plan gives an input its own buffer until its last use, so a
 * pull reading that buffer reads the input (or a view of all of it). */
static int64_t input_of(const void *idx, int dtype, int64_t n_idx) {
    const px_program_desc *p = px_ps.prog;
    int64_t elem = dtype == 6 ? 4 : 8;
    for (int64_t i = 0; i < p->n_inputs; i++) {
        const px_io_desc *in = &p->inputs[i];
        if (in->data == idx && in->dtype == dtype && in->nbytes == n_idx * elem) return i;
    }
    return -1;
}

void comm_prefetch_note_pull(ps_var *pv, const void *idx, int dtype, int64_t n_idx) {
    if (!px_ps.opts.prefetch || !px_ps.opts.next_input || px_train.eval_pass) return;
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

/* Does every rank request pv's rows of the next step now? At the push the
 * pulls of this step say which rows; at the start of a step (`ahead`) those
 * of the step before do (the same pulls: the program does not change). */
static int eligible(ps_var *pv, int ahead) {
    ps_prefetch *pf = pv->pf;
    if (!px_ps.opts.prefetch || !px_ps.opts.next_input || px_train.eval_pass || !pf) return 0;
    if (pf->sites_step != current_step() - ahead || (pf->n_sites == 0 && !pf->dense)) return 0;
    if (pf->dense && pf->n_sites > 0) return 0;
    for (int i = 0; i < pf->n_sites; i++)
        if (pf->site_input[i] < 0) return 0;
    /* a dense variable's replica is read again for S steps: no pull */
    if (pf->dense && ps_stale_on() && !ps_stale_full_due(pv, current_step() + 1)) return 0;
    return px_ps.opts.next_input(-1) != NULL;
}

/* --staleness: drops from uniq[0..k) (ascending) the rows the pulls of
 * `step` may read from the store: kept fresh enough, or coming with the
 * request of the step before. Returns how many are left. */
static int64_t leave_out_kept(ps_var *pv, ps_prefetch *pf, int64_t *uniq, int64_t k, int64_t step) {
    pf_request *prev = request_for(pf, step - 1);
    const int64_t *coming = prev && !prev->kept ? prev->uniq.p : NULL;
    int64_t n_coming = coming ? prev->k : 0, m = 0;
    for (int64_t u = 0, c = 0; u < k; u++) {
        while (c < n_coming && coming[c] < uniq[u]) c++;
        int fresh = (c < n_coming && coming[c] == uniq[u]) || ps_stale_row(pv, uniq[u], step);
        if (!fresh) uniq[m++] = uniq[u];
    }
    return m;
}

/* The union of the next step's indices of pv's pulls, requested from
 * their shards. */
static void request_rows(ps_var *pv, ps_prefetch *pf, pf_request *rq) {
    const px_program_desc *p = px_ps.prog;
    int me = px_world.rank;
    int64_t d = pv->dim, total = 0;
    for (int i = 0; i < pf->n_sites; i++) total += pf->site_n[i];
    size_t cap = (size_t)(total > 0 ? total : 1);
    int64_t *all = comm_buf_reserve(&rq->all_idx, sizeof(int64_t) * cap);
    int64_t at = 0;
    for (int i = 0; i < pf->n_sites; i++) {
        int64_t input = pf->site_input[i];
        const void *next = px_ps.opts.next_input(input);
        if (!next)
            px_rt_fail("prefetch of '%s': no next-step data for input '%s'", pv->name,
                       p->inputs[input].name);
        for (int64_t j = 0; j < pf->site_n[i]; j++)
            all[at + j] = p->inputs[input].dtype == 6 ? ((const int32_t *)next)[j]
                                                      : ((const int64_t *)next)[j];
        at += pf->site_n[i];
    }
    int64_t *uniq = comm_buf_reserve(&rq->uniq, sizeof(int64_t) * cap);
    rq->k = ps_unique_indices(all, 7, total, pv->rows, "ps_pull (prefetch)", pv->name, uniq, NULL);
    rq->kept = 0;
    if (ps_stale_on()) rq->k = leave_out_kept(pv, pf, uniq, rq->k, rq->step);
    int64_t *grouped = comm_buf_reserve(&rq->grouped, sizeof(int64_t) * cap);
    int64_t *perm = comm_buf_reserve(&rq->perm, sizeof(int64_t) * cap);
    int64_t *slot = comm_buf_reserve(&rq->slot, sizeof(int64_t) * cap);
    ps_group_by_owner(pv, uniq, rq->k, rq->counts, rq->offs, grouped, perm);
    for (int64_t j = 0; j < rq->k; j++) slot[perm[j]] = j;
    /* Reserved for every index, not only this step's distinct ones: the same
     * every step, as compiler/memory_model.c predicts it. */
    float *rows = comm_buf_reserve(&rq->rows, sizeof(float) * (size_t)(total * d + 1));

    int t_count = comm_tag(pv->var, TAG_PULL_COUNT), t_idx = comm_tag(pv->var, TAG_PULL_IDX),
        t_rows = comm_tag(pv->var, TAG_PULL_ROWS);
    for (int s = 0; s < px_world.n_shards; s++) {
        int r = px_world.shard_ranks[s];
        if (r == me) continue;
        rq->ask[2 * r] = rq->counts[r];
        rq->ask[2 * r + 1] = rq->counts[r] * d * (int64_t)sizeof(float) >= PF_EARLY_MIN_BYTES;
        comm_isend(&rq->ask[2 * r], 2, MPI_INT64_T, 8, r, t_count, px_world.pf_comm,
                   PREFETCH_TRAFFIC, comm_reqs_add(&rq->reqs, r));
        if (rq->counts[r] == 0) continue;
        comm_isend(grouped + rq->offs[r], rq->counts[r], MPI_INT64_T, 8, r, t_idx, px_world.pf_comm,
                   PREFETCH_TRAFFIC, comm_reqs_add(&rq->reqs, r));
        comm_irecv_wire(comm_wire_format(), rows + rq->offs[r] * d, rq->counts[r] * d, r, t_rows,
                        px_world.pf_comm, PREFETCH_TRAFFIC, comm_reqs_add(&rq->reqs, r));
    }
    /* The fix-ups (prefetch_serve.c): at most every row asked of a shard,
     * with its position; counted when they arrive, by their size. */
    int64_t fix_total = 0;
    for (int r = 0; r < px_world.size; r++) {
        rq->fix_at[r] = fix_total;
        if (r != me && rq->counts[r] > 0 && rq->ask[2 * r + 1])
            fix_total += pf_fix_bytes(rq->counts[r], d);
    }
    char *fix = comm_buf_reserve(&rq->fix_in, (size_t)fix_total + 1);
    /* The rows and the fix-ups at most, twice: the other request's buffers,
     * which this step's pulls read, are as large. */
    comm_note_row_cache(2 * (total * d * (int64_t)sizeof(float) + pf_fix_bytes(total, d) -
                             (int64_t)sizeof(int64_t)));
    int t_fix = comm_tag(pv->var, TAG_PULL_FIX);
    for (int r = 0; r < px_world.size; r++) {
        if (r == me || rq->counts[r] == 0 || !rq->ask[2 * r + 1]) continue;
        int64_t bytes = pf_fix_bytes(rq->counts[r], d);
        if (bytes > INT_MAX)
            px_rt_fail("prefetch of '%s': %lld rows asked of rank %d exceed MPI's message size "
                       "(run with --no-overlap)",
                       pv->name, (long long)rq->counts[r], r);
        MPI_Irecv(fix + rq->fix_at[r], (int)bytes, MPI_BYTE, r, t_fix, px_world.pf_comm,
                  comm_reqs_add(&rq->reqs, r));
    }
}

/* The request rq is complete: the rows widened from the wire format, the
 * fix-ups laid over them. */
static void complete(ps_var *pv, ps_prefetch *pf, pf_request *rq) {
    rq->reqs.n = 0;
    rq->waited = 1;
    int wf = comm_wire_format(), me = px_world.rank;
    if (pf->dense) {
        for (int64_t q = 0; q < pv->n_parts; q++)
            if (pv->parts[q].owner != me)
                comm_wire_arrived(wf, pf->w + pv->parts[q].row0 * pv->dim,
                                  pv->parts[q].rows * pv->dim);
        return;
    }
    comm_set_traffic_step(rq->step);
    float *rows = rq->rows.p;
    const char *fix = rq->fix_in.p;
    for (int r = 0; r < px_world.size; r++)
        if (r != me && rq->counts[r] > 0)
            comm_wire_arrived(wf, rows + rq->offs[r] * pv->dim, rq->counts[r] * pv->dim);
    for (int r = 0; r < px_world.size; r++)
        if (r != me && rq->counts[r] > 0 && rq->ask[2 * r + 1])
            pf_apply_fix(pv, fix + rq->fix_at[r], rq->counts[r], rows + rq->offs[r] * pv->dim, r);
    comm_set_traffic_step(-1);
}

/* Every row of a dense PS variable, straight into the replica. */
static void request_all(ps_var *pv, ps_prefetch *pf, pf_request *rq, float *w) {
    int me = px_world.rank, tag = comm_tag(pv->var, TAG_PULL_ALL);
    pf->w = w;
    for (int64_t q = 0; q < pv->n_parts; q++) {
        ps_part *part = &pv->parts[q];
        if (part->owner == me) continue;
        comm_irecv_wire(comm_wire_format(), w + part->row0 * pv->dim, part->rows * pv->dim,
                        part->owner, tag, px_world.pf_comm, PREFETCH_TRAFFIC,
                        comm_reqs_add(&rq->reqs, part->owner));
    }
}

/* Requests pv's rows of the next step (every rank does, at the same point). */
static void request_next(ps_var *pv, float *w) {
    ps_prefetch *pf = pv->pf;
    int64_t next = current_step() + 1;
    if (request_for(pf, next)) return; /* asked at the start of the step */
    comm_prefetch_drain(pv);           /* the last answers read the buffers reused here */
    pf_request *rq = &pf->req[next & 1];
    if (rq->step >= 0 && !rq->waited) /* requested but never pulled: cannot happen */
        px_rt_fail("prefetch of '%s': the rows of step %lld were never used", pv->name,
                   (long long)rq->step + 1);
    rq->step = next;
    rq->waited = 0;
    rq->t_post = comm_now();
    if (pf->dense)
        request_all(pv, pf, rq, w);
    else
        request_rows(pv, pf, rq);
    pf->own = rq;
    pf->serve_pending = px_world.is_leader;
    if (pf->serve_pending && !pf->dense) pf_open_asks(pv, pf);
}

void comm_prefetch_before_push(ps_var *pv, float *w) {
    if (eligible(pv, 0)) request_next(pv, w);
}

void comm_prefetch_step_begin(void) {
    /* Rows of a table go out as soon as the step starts: the next step's
     * indices are in the data, and the wire is idle in the forward pass.
     * Not a dense PS variable's: its rows land in the replica this step
     * reads. */
    for (int i = 0; i < px_ps.n_ps; i++) {
        ps_var *pv = &px_ps.ps[i];
        if (eligible(pv, 1) && !pv->pf->dense) request_next(pv, NULL);
    }
}

/* Dense: each owned partition to every other rank and into the own replica.
 * Sent from a copy: automatic partitions may move the master rows at the
 * end of the step, before every receiver has them. */
static void serve_all(ps_var *pv, ps_prefetch *pf) {
    int me = px_world.rank, n = px_world.size, tag = comm_tag(pv->var, TAG_PULL_ALL);
    char what[200];
    snprintf(what, sizeof what, "the prefetch of every row of '%s' (earlier rows)", pv->name);
    comm_reqs_wait(&pf->replies, comm_self_slot(), what);
    int64_t owned = 0;
    int wf = comm_wire_format();
    size_t elem = (size_t)px_wire_format_bytes(wf);
    for (int64_t q = 0; q < pv->n_parts; q++)
        if (pv->parts[q].owner == me) owned += pv->parts[q].rows * pv->dim;
    char *copy = comm_buf_reserve(&pf->reply, elem * (size_t)(owned + 1));
    for (int64_t q = 0; q < pv->n_parts; q++) {
        ps_part *part = &pv->parts[q];
        if (part->owner != me) continue;
        int64_t len = part->rows * pv->dim;
        comm_wire_pack_into(wf, copy, part->w, len);
        memcpy(pf->w + part->row0 * pv->dim, part->w, sizeof(float) * (size_t)len);
        for (int r = 0; r < n; r++)
            if (r != me)
                comm_isend_wire(wf, copy, len, r, tag, px_world.pf_comm, PREFETCH_TRAFFIC,
                                comm_reqs_add(&pf->replies, r));
        copy += elem * (size_t)len;
    }
}

static void serve(ps_var *pv) {
    ps_prefetch *pf = pv->pf;
    if (!pf || !pf->serve_pending) return;
    pf->serve_pending = 0;
    /* the answers may leave after that step began */
    comm_set_traffic_step(pf->own->step);
    if (pf->dense)
        serve_all(pv, pf);
    else
        pf_serve_rows(pv, pf);
    comm_set_traffic_step(-1);
}

void comm_prefetch_after_push(ps_var *pv) {
    /* With clipping or accumulation the shard's update waits for the end of
     * the step (px_clip_finish, px_accum_finish). */
    if (px_train_updates_deferred()) return;
    ps_prefetch *pf = pv->pf;
    if (comm_self_slot() == WATCH_COMM && pf && pf->serve_pending) {
        /* On the comm thread: answered when it is idle (comm_prefetch_serve_one),
         * so the answers do not hold up the jobs queued behind this push. */
        comm_lock();
        pf->serve_ready = 1;
        comm_unlock();
        return;
    }
    serve(pv);
}

/* The ready answer whose rows the next step reads first; comm_lock held. */
static ps_var *next_ready_locked(void) {
    ps_var *best = NULL;
    for (int i = 0; i < px_ps.n_ps; i++) {
        ps_prefetch *pf = px_ps.ps[i].pf;
        if (pf && pf->serve_ready &&
            (!best || __atomic_load_n(&pf->pull_order, __ATOMIC_RELAXED) <
                          __atomic_load_n(&best->pf->pull_order, __ATOMIC_RELAXED)))
            best = &px_ps.ps[i];
    }
    return best;
}

int comm_prefetch_serve_one_locked(ps_var *only) {
    ps_var *pv = only ? (only->pf && only->pf->serve_ready ? only : NULL) : next_ready_locked();
    if (!pv) return 0;
    comm_unlock();
    serve(pv);
    comm_lock();
    pv->pf->serve_ready = 0;
    comm_cond_broadcast();
    return 1;
}

void comm_prefetch_drain(ps_var *pv) {
    if (!comm_thread_running() || comm_self_slot() == WATCH_COMM) return;
    comm_main_waits(1);
    comm_lock();
    for (;;) {
        int pending = 0;
        for (int i = 0; i < px_ps.n_ps && !pending; i++) {
            ps_prefetch *pf = px_ps.ps[i].pf;
            pending = pf && pf->serve_ready && (!pv || pv == &px_ps.ps[i]);
        }
        if (!pending) break;
        comm_cond_broadcast(); /* wakes the comm thread if asleep */
        comm_cond_wait();
    }
    comm_unlock();
    comm_main_waits(-1);
}

void comm_prefetch_step_end(void) {
    if (!px_train_updates_deferred()) { /* answered after each push */
        comm_prefetch_poll();
        return;
    }
    double t0 = comm_now();
    int served = 0;
    for (int i = 0; i < px_ps.n_ps; i++) {
        ps_prefetch *pf = px_ps.ps[i].pf;
        served |= pf && pf->serve_pending;
        serve(&px_ps.ps[i]);
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
    for (int i = 0; i < px_ps.n_ps; i++) {
        ps_prefetch *pf = px_ps.ps[i].pf;
        for (int j = 0; pf && j < 2; j++) {
            pf_request *rq = &pf->req[j];
            if (rq->step < 0 || rq->waited || rq->reqs.n == 0) continue;
            int done = 0;
            MPI_Testall(rq->reqs.n, rq->reqs.r, &done, MPI_STATUSES_IGNORE);
            if (done) {
                comm_time_busy(comm_now() - rq->t_post);
                complete(&px_ps.ps[i], pf, rq);
            }
        }
    }
}

/* Waits for the rows of this step's prefetch of pv; NULL when none. */
static pf_request *wait_for_step(ps_var *pv, ps_prefetch *pf) {
    pf_request *rq = px_train.eval_pass ? NULL : request_for(pf, current_step());
    if (!rq || rq->waited) return rq;
    double t0 = comm_now();
    char what[200];
    snprintf(what, sizeof what, "the prefetched rows of '%s'", pv->name);
    comm_reqs_wait(&rq->reqs, WATCH_MAIN, what);
    double t1 = comm_now();
    comm_time_busy(t1 - rq->t_post);
    comm_time_waited(t1 - t0);
    complete(pv, pf, rq);
    return rq;
}

/* --staleness: the request's rows into the store, once. */
static void keep_request(ps_var *pv, pf_request *rq) {
    if (rq->kept) return;
    rq->kept = 1;
    const int64_t *uniq = rq->uniq.p, *slot = rq->slot.p;
    const float *rows = rq->rows.p;
    for (int64_t u = 0; u < rq->k; u++)
        ps_stale_keep(pv, &uniq[u], rows + slot[u] * pv->dim, 1, rq->step);
}

/* --staleness: every row of the pull from the store. */
static void take_kept(ps_var *pv, pf_request *rq, const int64_t *mine, const int64_t *my_slot,
                      int64_t k, float *cache) {
    for (int64_t u = 0; u < k; u++) {
        const float *kept = ps_stale_row(pv, mine[u], rq->step);
        if (!kept)
            px_rt_fail("internal error: the pull of '%s' in step %lld reads row %lld, which it "
                       "neither kept nor asked for (run with --no-overlap)",
                       pv->name, (long long)rq->step + 1, (long long)mine[u]);
        memcpy(cache + my_slot[u] * pv->dim, kept, sizeof(float) * (size_t)pv->dim);
    }
}

int comm_prefetch_take_rows(ps_var *pv, const void *idx, int dtype, int64_t n_idx, float *cache,
                            void *remap) {
    ps_prefetch *pf = pv->pf;
    comm_prefetch_drain(pv); /* this shard's own rows come with its answers */
    pf_request *rq = wait_for_step(pv, pf);
    if (!rq || pf->dense) return 0;
    if (ps_stale_on()) {
        keep_request(pv, rq);
        /* after a forget: a synchronous pull, reading what is kept now */
        if (rq->step == resync_step) return 0;
    }
    int64_t *counts = calloc((size_t)px_world.size * 2, sizeof(int64_t));
    if (!counts) px_rt_fail("out of memory");
    const int64_t *grouped = NULL, *mine = NULL, *my_slot = NULL;
    int64_t k = ps_pull_plan(pv, idx, dtype, n_idx, remap, counts, counts + px_world.size, &grouped,
                             &mine, &my_slot);
    if (ps_stale_on()) {
        take_kept(pv, rq, mine, my_slot, k, cache);
        free(counts);
        return 1;
    }
    const int64_t *uniq = rq->uniq.p, *slot = rq->slot.p;
    const float *rows = rq->rows.p;
    int64_t d = pv->dim;
    /* This pull's distinct rows and the prefetched ones both ascend: one
     * merge finds each in the prefetch. */
    for (int64_t u = 0, p = 0; u < k; u++) {
        while (p < rq->k && uniq[p] < mine[u]) p++;
        if (p == rq->k || uniq[p] != mine[u])
            px_rt_fail("internal error: the pull of '%s' in step %lld reads row %lld, which its "
                       "prefetch did not fetch (run with --no-overlap)",
                       pv->name, (long long)rq->step + 1, (long long)mine[u]);
        memcpy(cache + my_slot[u] * d, rows + slot[p] * d, sizeof(float) * (size_t)d);
    }
    free(counts);
    return 1;
}

int comm_prefetch_take_all(ps_var *pv, float *w) {
    ps_prefetch *pf = pv->pf;
    comm_prefetch_drain(pv);
    pf_request *next = pf ? request_for(pf, current_step() + 1) : NULL;
    if (next && px_train.eval_pass && !next->waited) {
        /* A validation between steps pulls into the replica the rows of the
         * next step are still arriving in (the same values): let them land. */
        comm_reqs_wait(&next->reqs, WATCH_MAIN, "the prefetched rows (before a validation)");
        next->waited = 1;
        return 0;
    }
    if (!wait_for_step(pv, pf)) return 0;
    if (!pf->dense || pf->w != w)
        px_rt_fail("internal error: the prefetch of '%s' does not match its pull", pv->name);
    return 1;
}

void comm_prefetch_forget(void) {
    resync_step = current_step() + 1;
    for (int i = 0; i < px_ps.n_ps; i++)
        if (px_ps.ps[i].pf) px_ps.ps[i].pf->sites_step = -1;
}

void comm_prefetch_teardown(void) {
    resync_step = -1;
    for (int i = 0; i < px_ps.n_ps; i++) {
        ps_prefetch *pf = px_ps.ps[i].pf;
        if (!pf) continue;
        for (int j = 0; j < 2; j++)
            comm_reqs_wait(&pf->req[j].reqs, WATCH_MAIN, "the prefetched rows (at shutdown)");
        comm_reqs_wait(&pf->replies, WATCH_MAIN, "the prefetch answers (at shutdown)");
        pf_asks_free(pf);
        comm_reqs_free(&pf->replies);
        for (int j = 0; j < 2; j++) {
            pf_request *rq = &pf->req[j];
            comm_reqs_free(&rq->reqs);
            comm_buf *bufs[] = {&rq->uniq, &rq->slot,    &rq->grouped, &rq->perm,
                                &rq->rows, &rq->all_idx, &rq->fix_in};
            for (size_t b = 0; b < sizeof bufs / sizeof bufs[0]; b++) comm_buf_free(bufs[b]);
            free(rq->counts);
        }
        comm_buf_free(&pf->reply);
        comm_buf_free(&pf->updated);
        free(pf->site_input);
        free(pf->site_n);
        free(pf);
        px_ps.ps[i].pf = NULL;
    }
}
