/* The shard's answers to prefetched pulls (prefetch.c).
 *
 * Every rank asks every shard for the rows of W that its pulls of step s+1
 * read (prefetch.c, early in step s): a row count with whether it wants
 * an early answer (rows of at least PF_EARLY_MIN_BYTES), then the indices
 * (ascending). The shard posts the receives (pf_open_asks) and answers
 * each rank on its own, from a copy of the rows:
 *
 *   early, when asked so, when the comm thread runs the pushes (the
 *       shard's update of W then happens on that thread too, so reading the
 *       rows cannot race with it) and when the indices arrive before the
 *       update: the rows as they are now. The comm thread gives these
 *       answers whenever it waits or idles (comm_prefetch_early_serve), so
 *       most of the next step's rows travel while this step still computes;
 *       only the rows the update changes must wait for it;
 *   after the update (pf_serve_rows): to an early answer a fix-up, the rows
 *       the update changed, as they are now; to a request not answered yet
 *       the rows as they are then (and an empty fix-up if it asked early).
 *
 * The requester lays the fix-up over the answer (pf_apply_fix) and ends
 * with the rows as they are after the update: bit for bit what a pull in
 * step s+1 reads. A fix-up message is int64 n, int64 positions[n] (in the
 * request, ascending) and rows[n][dim] in the run's --wire format, as the
 * answers' rows are. */
#include "prefetch.h"
#include "px_trace.h"
#include "px_train.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Set while pf_serve_rows runs on this thread: its waits must not answer
 * early (they would move the requests it is waiting on). */
static _Thread_local int serving;

int64_t pf_fix_bytes(int64_t rows, int64_t dim) {
    return (int64_t)sizeof(int64_t) +
           rows * ((int64_t)sizeof(int64_t) + dim * px_wire_format_bytes(comm_wire_format()));
}

void pf_open_asks(ps_var *pv, ps_prefetch *pf) {
    int n = px_world.size, me = px_world.rank, t_count = comm_tag(pv->var, TAG_PULL_COUNT);
    if (!pf->askers && !(pf->askers = calloc((size_t)n, sizeof *pf->askers)))
        px_rt_fail("out of memory for the prefetch of '%s'", pv->name);
    for (int r = 0; r < n; r++) {
        pf_asker *a = &pf->askers[r];
        if (r == me) continue;
        if (a->state != ASK_IDLE && a->state != ASK_ANSWERED)
            px_rt_fail("internal error: the prefetch of '%s' asked of rank %d twice in a step",
                       pv->name, me);
        a->state = ASK_COUNT;
        comm_irecv(a->ask, 2, MPI_INT64_T, 8, r, t_count, px_world.pf_comm, PREFETCH_TRAFFIC,
                   &a->recv);
    }
    pf->applied = 0;
    pf->n_updated = 0;
    __atomic_store_n(&pf->early, comm_push_queued_on(), __ATOMIC_RELEASE);
}

void comm_prefetch_note_update(ps_var *pv, const int64_t *rows, int64_t n) {
    ps_prefetch *pf = pv->pf;
    if (!pf || !__atomic_load_n(&pf->early, __ATOMIC_ACQUIRE)) return;
    if (pf->applied) px_rt_fail("internal error: two updates of '%s' in one step", pv->name);
    int64_t *u = comm_buf_reserve(&pf->updated, sizeof(int64_t) * (size_t)(n + 1));
    memcpy(u, rows, sizeof(int64_t) * (size_t)n);
    pf->n_updated = n;
    pf->applied = 1;
}

/* The fix-up for rank r: after_early, the rows of its answer that the
 * update changed since; else none (the answer left after the update). */
static void send_fix(ps_var *pv, ps_prefetch *pf, int r, pf_asker *a, int after_early) {
    int64_t d = pv->dim;
    char *msg = comm_buf_reserve(&a->fix, (size_t)pf_fix_bytes(after_early ? a->count : 0, d));
    int64_t n = 0;
    if (after_early) { /* both ascending: one merge */
        const int64_t *idx = a->idx.p, *upd = pf->updated.p;
        int64_t *pos = (int64_t *)(msg + sizeof(int64_t));
        for (int64_t j = 0, u = 0; j < a->count && u < pf->n_updated;) {
            if (idx[j] < upd[u])
                j++;
            else if (idx[j] > upd[u])
                u++;
            else
                pos[n++] = j++, u++;
        }
        int wf = comm_wire_format();
        char *rows = (char *)(pos + n);
        size_t row = (size_t)px_wire_format_bytes(wf) * (size_t)d;
        for (int64_t i = 0; i < n; i++)
            comm_wire_pack_into(wf, rows + (size_t)i * row, ps_master_row(pv, idx[pos[i]]), d);
    }
    memcpy(msg, &n, sizeof n);
    comm_isend(msg, pf_fix_bytes(n, d), MPI_BYTE, 1, r, comm_tag(pv->var, TAG_PULL_FIX),
               px_world.pf_comm, PREFETCH_TRAFFIC, comm_reqs_add(&a->sends, r));
}

/* The rows rank r asked for, as they are now. */
static void answer(ps_var *pv, ps_prefetch *pf, int r, pf_asker *a) {
    double t0 = px_trace_begin();
    int64_t d = pv->dim;
    const int64_t *idx = a->idx.p;
    int wf = comm_wire_format();
    size_t row = (size_t)px_wire_format_bytes(wf) * (size_t)d;
    char *reply = comm_buf_reserve(&a->reply, row * (size_t)a->count + 1);
    for (int64_t j = 0; j < a->count; j++) {
        if (idx[j] < 0 || idx[j] >= pv->rows || (j > 0 && idx[j] <= idx[j - 1]))
            px_rt_fail("prefetch of '%s': rank %d asked for row %lld of %lld (at %lld, after "
                       "%lld): not ascending distinct rows of the table",
                       pv->name, r, (long long)idx[j], (long long)pv->rows, (long long)j,
                       (long long)(j > 0 ? idx[j - 1] : -1));
        comm_wire_pack_into(wf, reply + (size_t)j * row, ps_master_row(pv, idx[j]), d);
    }
    comm_isend_wire(wf, reply, a->count * d, r, comm_tag(pv->var, TAG_PULL_ROWS), px_world.pf_comm,
                    PREFETCH_TRAFFIC, comm_reqs_add(&a->sends, r));
    if (a->ask[1] && __atomic_load_n(&pf->early, __ATOMIC_ACQUIRE) && !pf->applied) {
        a->state = ASK_EARLY;
    } else {
        if (a->ask[1]) send_fix(pv, pf, r, a, 0); /* nothing changed since */
        a->state = ASK_ANSWERED;
    }
    px_trace_end(PX_SPAN_PS_ANSWER, (int32_t)pv->var, t0);
}

/* Moves rank r's request on by one stage; with block, waits for what that
 * stage needs. Returns whether it moved. */
static int advance(ps_var *pv, ps_prefetch *pf, int r, int block) {
    pf_asker *a = &pf->askers[r];
    char what[200];
    if (a->state == ASK_COUNT || a->state == ASK_IDX) {
        if (block) {
            snprintf(what, sizeof what, "the prefetch of '%s' (the %s asked of this shard)",
                     pv->name, a->state == ASK_COUNT ? "row count" : "indices");
            comm_waitall(comm_self_slot(), 1, &a->recv, &r, what);
        } else {
            int done = 0;
            MPI_Test(&a->recv, &done, MPI_STATUS_IGNORE);
            if (!done) return 0;
        }
        if (a->state == ASK_COUNT) a->count = a->ask[0];
        if (a->state == ASK_IDX) {
            a->state = ASK_HERE;
        } else if (a->count == 0) {
            a->state = ASK_ANSWERED;
        } else {
            if (a->count < 0 || a->count > pv->rows)
                px_rt_fail("prefetch of '%s': rank %d asked for %lld rows of %lld", pv->name, r,
                           (long long)a->count, (long long)pv->rows);
            int64_t *idx = comm_buf_reserve(&a->idx, sizeof(int64_t) * (size_t)a->count);
            comm_irecv(idx, a->count, MPI_INT64_T, 8, r, comm_tag(pv->var, TAG_PULL_IDX),
                       px_world.pf_comm, PREFETCH_TRAFFIC, &a->recv);
            a->state = ASK_IDX;
        }
        return 1;
    }
    /* Only requests asked early are answered before the update: the
     * others get no fix-up, so they wait for pf_serve_rows (block). */
    if (a->state != ASK_HERE || (!block && !a->ask[1])) return 0;
    if (a->sends.n > 0) { /* the last answer to r leaves from the buffers reused here */
        if (block) {
            snprintf(what, sizeof what, "the prefetch of '%s' (earlier rows)", pv->name);
            comm_reqs_wait(&a->sends, comm_self_slot(), what);
        } else {
            int done = 0;
            MPI_Testall(a->sends.n, a->sends.r, &done, MPI_STATUSES_IGNORE);
            if (!done) return 0;
            a->sends.n = 0;
        }
    }
    answer(pv, pf, r, a);
    return 1;
}

void comm_prefetch_early_serve(void) {
    static double last;
    if (serving || comm_self_slot() != WATCH_COMM) return;
    double now = comm_now();
    if (now - last < 50e-6) return; /* a few MPI_Tests per variable and rank: not every poll */
    last = now;
    for (int i = 0; i < px_ps.n_ps; i++) {
        ps_var *pv = &px_ps.ps[i];
        ps_prefetch *pf = pv->pf;
        if (!pf || !__atomic_load_n(&pf->early, __ATOMIC_ACQUIRE)) continue;
        for (int r = 0; r < px_world.size; r++)
            if (r != px_world.rank)
                while (advance(pv, pf, r, 0)) continue;
    }
}

void pf_serve_rows(ps_var *pv, ps_prefetch *pf) {
    int me = px_world.rank;
    int64_t d = pv->dim;
    serving = 1;
    /* This rank's own request: its rows are here. */
    pf_request *rq = pf->own;
    const int64_t *grouped = rq->grouped.p;
    float *rows = rq->rows.p;
    for (int64_t j = rq->offs[me]; j < rq->offs[me] + rq->counts[me]; j++)
        memcpy(rows + j * d, ps_master_row(pv, grouped[j]), sizeof(float) * (size_t)d);
    for (int r = 0; r < px_world.size; r++) {
        if (r == me) continue;
        pf_asker *a = &pf->askers[r];
        while (a->state != ASK_EARLY && a->state != ASK_ANSWERED) advance(pv, pf, r, 1);
        if (a->state == ASK_EARLY) {
            double t0 = px_trace_begin();
            send_fix(pv, pf, r, a, 1);
            a->state = ASK_ANSWERED;
            px_trace_end(PX_SPAN_PS_FIXUP, (int32_t)pv->var, t0);
        }
    }
    __atomic_store_n(&pf->early, 0, __ATOMIC_RELEASE);
    serving = 0;
}

void pf_apply_fix(ps_var *pv, const char *msg, int64_t asked, float *rows, int shard) {
    int64_t n, d = pv->dim;
    memcpy(&n, msg, sizeof n);
    if (n < 0 || n > asked)
        px_rt_fail("internal error: rank %d fixed %lld of the %lld prefetched rows of '%s'", shard,
                   (long long)n, (long long)asked, pv->name);
    const int64_t *pos = (const int64_t *)(msg + sizeof(int64_t));
    int wf = comm_wire_format();
    const char *src = (const char *)(pos + n);
    size_t row = (size_t)px_wire_format_bytes(wf) * (size_t)d;
    for (int64_t i = 0; i < n; i++) {
        if (pos[i] < 0 || pos[i] >= asked)
            px_rt_fail("internal error: rank %d fixed row %lld of the %lld prefetched rows of '%s'",
                       shard, (long long)pos[i], (long long)asked, pv->name);
        comm_wire_unpack(wf, src + (size_t)i * row, rows + pos[i] * d, d);
    }
    comm_count_received(PREFETCH_TRAFFIC, pf_fix_bytes(n, d));
}

void pf_asks_free(ps_prefetch *pf) {
    if (!pf->askers) return;
    for (int r = 0; r < px_world.size; r++) {
        pf_asker *a = &pf->askers[r];
        if (a->state == ASK_COUNT || a->state == ASK_IDX) { /* asked for nothing after all */
            MPI_Cancel(&a->recv);
            MPI_Request_free(&a->recv);
        }
        comm_reqs_wait(&a->sends, WATCH_MAIN, "the prefetch answers (at shutdown)");
        comm_reqs_free(&a->sends);
        comm_buf_free(&a->idx);
        comm_buf_free(&a->reply);
        comm_buf_free(&a->fix);
    }
    free(pf->askers);
    pf->askers = NULL;
}
