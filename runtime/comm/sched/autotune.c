/* Automatic partitions. PS variables compiled with partitions 0 (the
 * default) are set up at one partition per shard, or at the count a
 * measured search chose before (px_comm_opts.partitions_start: a
 * checkpoint's, a partition cache's), and stay there: no row moves. One per
 * shard is the cost model's choice: pulls and pushes are grouped by shard
 * (ps/pull.c, ps/push.c), so more partitions per shard change no message
 * and no byte, and a shard applies its rows' updates alike whatever their
 * partition.
 *
 * With partitions_search (the paper's search), every table is spread over
 * every node's shard from the first step (one partition per shard); after one
 * warm-up step each candidate count (S, 2S, 4S, 8S for S shards, at most
 * the largest automatic table's rows) runs for a few steps (9 steps in
 * all, inside the default warm-up of 22), the step time
 * being the slowest rank's (MPI_Allreduce max); then T(P) = a(P-1) + b/P + c
 * is fitted by least squares and its best P in the measured range that is
 * a multiple of S kept (the measured best when the fit is not convex or cannot be made).
 * Every rank sees the same times, so every rank makes the same choice.
 * Moving between counts re-partitions the shards bit for bit between two
 * steps, so no update is lost. With a single shard the count does not
 * matter: 1 partition, nothing measured. */
#include "sched.h"

#include <math.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

enum { WARMUP_STEPS = 1, STEPS_PER_CANDIDATE = 2, MAX_CANDIDATES = 16 };

static struct {
    int active, n_cand, cur, in_cand;
    int64_t seen;
    int64_t cand[MAX_CANDIDATES];
    double time[MAX_CANDIDATES]; /* best (lowest) step time measured at cand[i] */
} at;

/* Every automatic variable at `parts` partitions (at most one per row),
 * the others as they are. The placement is shard-contiguous with offsets
 * fixed at setup (px_ps_layout.h): at multiples of the shard count each
 * shard keeps its rows, so a change copies inside the shards. */
static void set_parts(int64_t parts) {
    int64_t *counts = calloc((size_t)(px_ps.n_ps > 0 ? px_ps.n_ps : 1), sizeof *counts);
    if (!counts) px_rt_fail("out of memory re-partitioning");
    for (int i = 0; i < px_ps.n_ps; i++) {
        ps_var *pv = &px_ps.ps[i];
        counts[i] = !pv->auto_parts ? pv->n_parts : parts < pv->rows ? parts : pv->rows;
    }
    int **owners = ps_place(counts);
    for (int i = 0; i < px_ps.n_ps; i++) ps_repartition(&px_ps.ps[i], counts[i], owners[i]);
    ps_place_free(owners);
    free(counts);
}

void comm_autotune_setup(void) {
    memset(&at, 0, sizeof at);
    comm_stats_set_partitions(0);
    int64_t max_rows = -1;
    for (int i = 0; i < px_ps.n_ps; i++)
        if (px_ps.ps[i].auto_parts && px_ps.ps[i].rows > max_rows) max_rows = px_ps.ps[i].rows;
    if (max_rows < 0) return;
    if (px_world.n_shards == 1) {
        comm_stats_set_partitions(1);
        if (px_world.rank == 0 && px_world.size > 1) /* a single process: nothing to say */
            printf("auto partitions: one parameter-server shard, 1 partition\n");
        return;
    }
    if (!px_ps.opts.partitions_search) {
        int64_t chosen =
            px_ps.opts.partitions_start > 0 ? px_ps.opts.partitions_start : px_world.n_shards;
        comm_stats_set_partitions(chosen);
        if (px_world.rank == 0)
            printf("auto partitions: P=%lld on %d shards (%s); no rows move\n", (long long)chosen,
                   px_world.n_shards,
                   px_ps.opts.partitions_start > 0 ? "the count measured before"
                                                   : "one per shard: pulls and pushes go by shard");
        return;
    }
    /* Smaller tables are capped at one partition per row (set_parts). */
    int64_t first = px_world.n_shards, bound = 8 * first;
    if (bound > max_rows) bound = max_rows;
    for (int64_t p = first; p <= bound && at.n_cand < MAX_CANDIDATES; p *= 2)
        at.cand[at.n_cand++] = p;
    if (at.n_cand < 2) { /* tables too small to split further: keep the first layout */
        comm_stats_set_partitions(first);
        if (px_world.rank == 0)
            printf("auto partitions: tables of at most %lld rows on %d shards: %lld partitions "
                   "(at most one per row)\n",
                   (long long)max_rows, px_world.n_shards, (long long)first);
        return;
    }
    at.active = 1;
}

/* Solves the 3x3 system m x = r (Gaussian elimination, partial pivoting);
 * 0 when singular. */
static int solve3(double m[3][3], double r[3], double x[3]) {
    for (int c = 0; c < 3; c++) {
        int piv = c;
        for (int i = c + 1; i < 3; i++)
            if (fabs(m[i][c]) > fabs(m[piv][c])) piv = i;
        if (fabs(m[piv][c]) < 1e-300) return 0;
        for (int j = 0; j < 3; j++) {
            double t = m[c][j];
            m[c][j] = m[piv][j];
            m[piv][j] = t;
        }
        double t = r[c];
        r[c] = r[piv];
        r[piv] = t;
        for (int i = c + 1; i < 3; i++) {
            double f = m[i][c] / m[c][c];
            for (int j = c; j < 3; j++) m[i][j] -= f * m[c][j];
            r[i] -= f * r[c];
        }
    }
    for (int i = 2; i >= 0; i--) {
        double s = r[i];
        for (int j = i + 1; j < 3; j++) s -= m[i][j] * x[j];
        x[i] = s / m[i][i];
    }
    return 1;
}

static void finish(void) {
    int best = 0;
    for (int i = 1; i < at.n_cand; i++)
        if (at.time[i] < at.time[best]) best = i;
    int64_t chosen = at.cand[best];
    double coef[3] = {0, 0, 0};
    int fitted = 0;
    if (at.n_cand >= 3) {
        double m[3][3] = {{0}}, r[3] = {0};
        for (int i = 0; i < at.n_cand; i++) {
            double f[3] = {(double)(at.cand[i] - 1), 1.0 / (double)at.cand[i], 1.0};
            for (int a = 0; a < 3; a++) {
                for (int b = 0; b < 3; b++) m[a][b] += f[a] * f[b];
                r[a] += f[a] * at.time[i];
            }
        }
        fitted = solve3(m, r, coef) && coef[0] >= 0 && coef[1] >= 0;
    }
    if (fitted) {
        double best_t = 0;
        /* Multiples of the shard count only: every shard then holds the
         * same number of equal partitions (P = 5 on 4 shards gave two
         * shards half again the rows of the others). */
        for (int64_t p = at.cand[0]; p <= at.cand[at.n_cand - 1]; p += at.cand[0]) {
            double t = coef[0] * (double)(p - 1) + coef[1] / (double)p + coef[2];
            if (p == at.cand[0] || t < best_t) best_t = t, chosen = p;
        }
    }
    set_parts(chosen);
    comm_stats_set_partitions(chosen);
    at.active = 0;
    if (px_world.rank != 0) return;
    char line[1024];
    int len = snprintf(line, sizeof line, "auto partitions:");
    for (int i = 0; i < at.n_cand && len < (int)sizeof line; i++)
        len += snprintf(line + len, sizeof line - (size_t)len, " P=%lld %.3f ms%s",
                        (long long)at.cand[i], 1e3 * at.time[i], i + 1 < at.n_cand ? "," : ";");
    if (len < (int)sizeof line) {
        if (fitted)
            snprintf(line + len, sizeof line - (size_t)len,
                     " fit T(P) = a(P-1) + b/P + c: a=%.3g ms, b=%.3g ms, c=%.3g ms; chose P=%lld",
                     1e3 * coef[0], 1e3 * coef[1], 1e3 * coef[2], (long long)chosen);
        else
            snprintf(line + len, sizeof line - (size_t)len,
                     " no convex fit, chose the fastest measured: P=%lld", (long long)chosen);
    }
    printf("%s\n", line);
    fflush(stdout);
}

int64_t px_comm_tuning_steps(void) {
    return at.active ? WARMUP_STEPS + (int64_t)STEPS_PER_CANDIDATE * at.n_cand : 0;
}

void comm_autotune_step_end(double step_seconds) {
    if (!at.active) return;
    if (++at.seen <= WARMUP_STEPS) return;
    double slowest = step_seconds;
    if (px_world.size > 1) {
        MPI_Allreduce(&step_seconds, &slowest, 1, MPI_DOUBLE, MPI_MAX, px_world.coll_comm);
        comm_count_sent(PX_TRAFFIC_OTHER, 8);
        comm_count_received(PX_TRAFFIC_OTHER, 8);
    }
    if (at.in_cand == 0 || slowest < at.time[at.cur]) at.time[at.cur] = slowest;
    if (++at.in_cand < STEPS_PER_CANDIDATE) return;
    at.in_cand = 0;
    if (++at.cur < at.n_cand)
        set_parts(at.cand[at.cur]);
    else
        finish();
}
