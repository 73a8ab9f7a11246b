/* The shards' receives of pushed rows, posted one push ahead.
 *
 * Round 1 of a push (senders to the owning shards, push.c) used to start
 * with an exchange of row counts and post the rows' receives after it: a
 * sender's rows could only travel once the shard had reached the same push,
 * and a shard that was slow to reach it held every sender's rows back.
 * Open MPI sends a large message only when its receive is posted, so here
 * each shard posts the receives of a variable's next push as soon as the
 * current one is summed: a fast rank's rows then travel while the slow ranks
 * still compute, and a shard's wait ends when the slowest rank's rows have
 * arrived, not a round trip and a transfer later.
 *
 * A sender sends, to every other shard, two messages into receives of fixed
 * size: its row count followed by up to `cap` indices (TAG_PUSH_COUNT), and
 * those rows (TAG_PUSH_ROWS). Rows beyond cap (a node's aggregated set can
 * hold more) follow in two more messages (TAG_PUSH_IDX, TAG_PUSH_MORE)
 * whose receives the shard posts when it reads the count. cap is the
 * variable's row count, at most PX_PUSH_INBOX_MB (default 16) MiB of rows
 * over all the senders: a function of the variable and the number of
 * senders, the same on every rank. The buffers are reserved at that size,
 * but only the pages the received rows reach are ever touched. The shard
 * sums what it received in the senders' rank order, as before: the same
 * bits, and the same bytes on the wire. Rows travel in the run's --wire
 * format: 16-bit rows land in the upper half of the float buffer and are
 * widened in place when they arrived. */
#include "ps.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <errno.h>
#include <math.h>

#define INBOX_MB_DEFAULT 16.0

typedef struct inbox {
    int posted;  /* the receives of the next push are posted */
    int n_from;  /* senders (other than this rank) */
    int *from;   /* their ranks, in the order the sum takes them */
    int64_t cap; /* rows per fixed-size message */
    int64_t dim;
    comm_buf *head, *rows;        /* per sender: [count, idx...] and rows */
    comm_buf *all_idx, *all_rows; /* per sender, when count > cap: the whole set */
    MPI_Request *req;             /* per sender: head, rows */
} inbox;

static inbox *boxes;    /* one per PS variable (px_ps.ps), NULL until a push */
static comm_buf *heads; /* [world size]: the count and indices sent to each shard */
static comm_buf stage;  /* the rows sent, in a 16-bit --wire */

static inbox *box_of(ps_var *pv) {
    if (!boxes) {
        boxes = calloc((size_t)(px_ps.n_ps > 0 ? px_ps.n_ps : 1), sizeof *boxes);
        if (!boxes) px_rt_fail("out of memory for the push receives");
    }
    return &boxes[pv - px_ps.ps];
}

static double inbox_bytes(void) {
    static double bytes = -1;
    if (bytes >= 0) return bytes;
    const char *s = getenv("PX_PUSH_INBOX_MB");
    double mb = INBOX_MB_DEFAULT;
    if (s && s[0]) {
        char *end = NULL;
        errno = 0;
        mb = strtod(s, &end);
        if (errno || end == s || *end || !(mb >= 0) || !isfinite(mb) || mb > 1e6)
            px_rt_fail("PX_PUSH_INBOX_MB='%s': expected a number of MiB in [0, 1e6]", s);
    }
    bytes = mb * 1048576.0;
    return bytes;
}

int64_t ps_push_inbox_cap(const ps_var *pv, int n_senders) {
    int64_t others = n_senders > 1 ? n_senders - 1 : 1;
    int64_t fit = (int64_t)(inbox_bytes() / (double)(others * (pv->dim > 0 ? pv->dim : 1) *
                                                     (int64_t)sizeof(float)));
    return pv->rows < fit ? pv->rows : fit;
}

static void post(ps_var *pv, inbox *b) {
    int t_head = comm_tag(pv->var, TAG_PUSH_COUNT), t_rows = comm_tag(pv->var, TAG_PUSH_ROWS);
    int wf = comm_wire_format();
    int64_t n = b->cap * b->dim;
    for (int i = 0; i < b->n_from; i++) {
        int64_t *h = comm_buf_reserve(&b->head[i], sizeof(int64_t) * (size_t)(b->cap + 1));
        float *r = comm_buf_reserve(&b->rows[i], sizeof(float) * (size_t)(n + 1));
        /* counted when they arrive: their size is known then; 16-bit rows
         * land in the upper half (transport/wire_format.c) */
        MPI_Irecv(h, (int)(b->cap + 1), MPI_INT64_T, b->from[i], t_head, px_world.ps_comm,
                  &b->req[2 * i]);
        if (wf == PX_WIRE_FP32)
            MPI_Irecv(r, (int)n, MPI_FLOAT, b->from[i], t_rows, px_world.ps_comm,
                      &b->req[2 * i + 1]);
        else
            MPI_Irecv((uint16_t *)r + n, (int)n, MPI_UINT16_T, b->from[i], t_rows, px_world.ps_comm,
                      &b->req[2 * i + 1]);
    }
    b->posted = 1;
}

static void setup(ps_var *pv, inbox *b, const int *from, int n_from, int64_t cap) {
    b->n_from = n_from;
    b->cap = cap;
    b->dim = pv->dim;
    b->from = malloc(sizeof(int) * (size_t)(n_from + 1));
    b->head = calloc((size_t)n_from + 1, sizeof(comm_buf));
    b->rows = calloc((size_t)n_from + 1, sizeof(comm_buf));
    b->all_idx = calloc((size_t)n_from + 1, sizeof(comm_buf));
    b->all_rows = calloc((size_t)n_from + 1, sizeof(comm_buf));
    b->req = malloc(sizeof(MPI_Request) * (size_t)(2 * n_from + 1));
    if (!b->from || !b->head || !b->rows || !b->all_idx || !b->all_rows || !b->req)
        px_rt_fail("out of memory for the push receives of '%s'", pv->name);
    memcpy(b->from, from, sizeof(int) * (size_t)n_from);
}

void ps_push_inbox_send(ps_var *pv, int64_t cap, const int *to, int n_to, const int64_t *counts,
                        const int64_t *offs, const int64_t *idx, const float *rows, comm_reqs *q) {
    int64_t d = pv->dim;
    int t_head = comm_tag(pv->var, TAG_PUSH_COUNT), t_rows = comm_tag(pv->var, TAG_PUSH_ROWS);
    int t_idx = comm_tag(pv->var, TAG_PUSH_IDX), t_more = comm_tag(pv->var, TAG_PUSH_MORE);
    int wf = comm_wire_format();
    if (!heads && !(heads = calloc((size_t)px_world.size, sizeof *heads)))
        px_rt_fail("out of memory for the push of '%s'", pv->name);
    int64_t end = 0;
    for (int i = 0; i < n_to; i++)
        if (offs[to[i]] + counts[to[i]] > end) end = offs[to[i]] + counts[to[i]];
    uint16_t *st = comm_buf_reserve(&stage, sizeof(uint16_t) * (size_t)(end * d + 1));
    for (int i = 0; i < n_to; i++) {
        int r = to[i];
        int64_t k = counts[r], o = offs[r], first = k < cap ? k : cap;
        int64_t *h = comm_buf_reserve(&heads[r], sizeof(int64_t) * (size_t)(first + 1));
        h[0] = k;
        memcpy(h + 1, idx + o, sizeof(int64_t) * (size_t)first);
        comm_isend(h, first + 1, MPI_INT64_T, 8, r, t_head, px_world.ps_comm, PX_TRAFFIC_PS_PUSH,
                   comm_reqs_add(q, r));
        const char *out = comm_wire_pack(wf, rows + o * d, k * d, st + o * d);
        size_t row = (size_t)px_wire_format_bytes(wf) * (size_t)d;
        comm_isend_wire(wf, out, first * d, r, t_rows, px_world.ps_comm, PX_TRAFFIC_PS_PUSH,
                        comm_reqs_add(q, r));
        if (k > first) {
            comm_isend(idx + o + first, k - first, MPI_INT64_T, 8, r, t_idx, px_world.ps_comm,
                       PX_TRAFFIC_PS_PUSH, comm_reqs_add(q, r));
            comm_isend_wire(wf, out + (size_t)first * row, (k - first) * d, r, t_more,
                            px_world.ps_comm, PX_TRAFFIC_PS_PUSH, comm_reqs_add(q, r));
        }
    }
}

void ps_push_inbox_receive(ps_var *pv, int64_t cap, const int *from, int n_from, rowset *got) {
    inbox *b = box_of(pv);
    if (!b->from) setup(pv, b, from, n_from, cap);
    if (b->n_from != n_from || b->cap != cap || memcmp(b->from, from, sizeof(int) * (size_t)n_from))
        px_rt_fail("internal error: the push of '%s' changed its senders or capacity", pv->name);
    if (!b->posted) post(pv, b);
    char what[200];
    snprintf(what, sizeof what, "the push of '%s' (to the shards, rows)", pv->name);
    int *peers = malloc(sizeof(int) * (size_t)(2 * n_from + 1));
    if (!peers) px_rt_fail("out of memory for the push receives of '%s'", pv->name);
    for (int i = 0; i < 2 * n_from; i++) peers[i] = from[i / 2];
    comm_waitall(comm_self_slot(), 2 * n_from, b->req, peers, what);
    b->posted = 0;

    comm_reqs more = {0};
    int t_idx = comm_tag(pv->var, TAG_PUSH_IDX), t_more = comm_tag(pv->var, TAG_PUSH_MORE);
    int64_t d = b->dim;
    int wf = comm_wire_format();
    for (int i = 0; i < n_from; i++) {
        const int64_t *h = b->head[i].p;
        int64_t k = h[0], first = k < cap ? k : cap;
        if (k < 0)
            px_rt_fail("push of '%s': rank %d sent %lld rows", pv->name, from[i], (long long)k);
        comm_count_received(PX_TRAFFIC_PS_PUSH,
                            (first + 1) * 8 + first * d * px_wire_format_bytes(wf));
        comm_wire_widen(wf, b->rows[i].p, cap * d, first * d);
        got[i] = (rowset){k, h + 1, b->rows[i].p};
        if (k == first) continue;
        int64_t *ai = comm_buf_reserve(&b->all_idx[i], sizeof(int64_t) * (size_t)k);
        float *ar = comm_buf_reserve(&b->all_rows[i], sizeof(float) * (size_t)(k * d));
        memcpy(ai, h + 1, sizeof(int64_t) * (size_t)first);
        memcpy(ar, b->rows[i].p, sizeof(float) * (size_t)(first * d));
        comm_irecv(ai + first, k - first, MPI_INT64_T, 8, from[i], t_idx, px_world.ps_comm,
                   PX_TRAFFIC_PS_PUSH, comm_reqs_add(&more, from[i]));
        comm_irecv_wire(wf, ar + first * d, (k - first) * d, from[i], t_more, px_world.ps_comm,
                        PX_TRAFFIC_PS_PUSH, comm_reqs_add(&more, from[i]));
        got[i] = (rowset){k, ai, ar};
    }
    if (more.n) comm_reqs_wait(&more, comm_self_slot(), what);
    comm_reqs_free(&more);
    for (int i = 0; i < n_from; i++) {
        int64_t k = got[i].n, first = k < cap ? k : cap;
        if (k > first) comm_wire_arrived(wf, (float *)got[i].rows + first * d, (k - first) * d);
    }
    free(peers);
}

void ps_push_inbox_repost(ps_var *pv) {
    inbox *b = box_of(pv);
    if (b->from && !b->posted) post(pv, b);
}

void ps_push_inbox_teardown(void) {
    for (int v = 0; boxes && v < px_ps.n_ps; v++) {
        inbox *b = &boxes[v];
        if (b->posted)
            for (int i = 0; i < 2 * b->n_from; i++) {
                MPI_Cancel(&b->req[i]);
                MPI_Wait(&b->req[i], MPI_STATUS_IGNORE);
            }
        for (int i = 0; b->from && i < b->n_from; i++) {
            comm_buf_free(&b->head[i]);
            comm_buf_free(&b->rows[i]);
            comm_buf_free(&b->all_idx[i]);
            comm_buf_free(&b->all_rows[i]);
        }
        free(b->from);
        free(b->head);
        free(b->rows);
        free(b->all_idx);
        free(b->all_rows);
        free(b->req);
    }
    free(boxes);
    boxes = NULL;
    for (int r = 0; heads && r < px_world.size; r++) comm_buf_free(&heads[r]);
    free(heads);
    heads = NULL;
    comm_buf_free(&stage);
}
