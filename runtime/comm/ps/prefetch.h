/* State of the prefetched pulls of one parameter-server variable, shared by
 * the requesting side (prefetch.c) and the answering shard
 * (prefetch_serve.c). */
#ifndef PX_PS_PREFETCH_INTERNAL_H
#define PX_PS_PREFETCH_INTERNAL_H

#include "ps.h"

/* Counted in the step the rows serve (transport/stats.c). */
#define PREFETCH_TRAFFIC (PX_TRAFFIC_PS_PULL | COMM_NEXT_STEP)

/* Where a shard is with the request of one other rank (prefetch_serve.c). */
enum {
    ASK_IDLE = 0, /* nothing asked this step */
    ASK_COUNT,    /* the row count's receive is posted */
    ASK_IDX,      /* the indices' receive is posted */
    ASK_HERE,     /* indices here, not answered */
    ASK_EARLY,    /* answered before the update: the fix-up is still owed */
    ASK_ANSWERED  /* answered for good (rows and fix-up sent) */
};

/* A shard answers a request early (and sends a fix-up after the update)
 * only when its rows are at least this many bytes: smaller answers are one
 * eager message, which the fix-up's extra message would cost more than the
 * earlier start saves (the many small requests of a recommender). */
enum { PF_EARLY_MIN_BYTES = 16 * 1024 };

typedef struct pf_asker {
    int state;
    int64_t ask[2];   /* received: rows asked, whether early (the requester decides) */
    int64_t count;    /* rows asked */
    MPI_Request recv; /* the count's or the indices' receive */
    comm_buf idx, reply, fix;
    comm_reqs sends; /* this step's rows and fix-up, sent from reply and fix */
} pf_asker;

/* The rows of one step requested from the shards. */
typedef struct pf_request {
    int64_t step;                 /* the step that reads them (-1: none) */
    int64_t k;                    /* distinct rows requested */
    comm_buf uniq, slot, grouped; /* uniq ascending; slot[u]: row of uniq[u] in `rows` */
    comm_buf perm, rows, all_idx;
    comm_buf fix_in;        /* per shard: its fix-up message (see prefetch_serve.c) */
    int64_t *counts, *offs; /* per rank: rows asked of it, where they start */
    int64_t *fix_at;        /* per rank: where its fix-up lands in fix_in */
    int64_t *ask;           /* per rank: {rows asked, early} as sent */
    comm_reqs reqs;         /* the request's sends and the rows' receives */
    int waited;             /* reqs completed, fix-ups applied */
    int kept;               /* --staleness: its rows are in the store (stale.c) */
    double t_post;
} pf_request;

typedef struct ps_prefetch {
    /* the pulls of the step being run */
    int64_t sites_step; /* the step they belong to */
    int n_sites, cap_sites;
    int64_t *site_input; /* graph input read as indices; -1: not an input */
    int64_t *site_n;     /* number of indices */
    int dense;           /* a pull of every row (dense PS variable) */

    /* requester: two requests, for the step being run (its rows are read
     * by the pulls) and for the next (its rows arrive meanwhile) */
    pf_request req[2];
    float *w; /* dense: the replica the rows go to */

    /* shard: answers of this step to give (after the update) */
    int serve_pending;
    int serve_ready;    /* the update is applied, the comm thread answers when
                           idle (guarded by comm_lock) */
    int64_t pull_order; /* position of this variable's first pull in the step */
    int early;          /* answers may leave before the update (atomic: set by
                           the main thread, read by the comm thread) */
    int applied;        /* this step's update is applied (comm thread) */
    pf_request *own;    /* this rank's last request: the step its answers serve */
    comm_buf updated;   /* the rows it changed, ascending */
    int64_t n_updated;
    pf_asker *askers;  /* per rank */
    comm_reqs replies; /* dense: sends of the last answers */
    comm_buf reply;    /* dense: the owned partitions' copy */
} ps_prefetch;

/* Shard side (prefetch_serve.c). */
/* Main thread: posts the receives of the other ranks' requests for the
 * step of pf->own (this rank's request, filled at the update). */
void pf_open_asks(ps_var *pv, ps_prefetch *pf);
void pf_serve_rows(ps_var *pv, ps_prefetch *pf); /* after the update: everything owed */
void pf_asks_free(ps_prefetch *pf);
/* Requester side: the size of the fix-up message of `rows` rows of dim floats. */
int64_t pf_fix_bytes(int64_t rows, int64_t dim);
/* Applies the fix-up message at msg to the rows asked of one shard. */
void pf_apply_fix(ps_var *pv, const char *msg, int64_t asked, float *rows, int shard);

#endif
