/* Parameter server (px_k_ps_pull_rows / px_k_ps_pull / px_k_ps_push /
 * px_k_ps_push_dense): pulled rows are the shard's current rows, in a
 * compact cache (one row per distinct index) with the remap pointing at
 * them; a dense pull writes every row and a push does not read W,
 * int32 and int64 indices with duplicates, pushes with duplicate indices
 * within and across ranks, empty pushes, a step whose indices all live on
 * one shard, row counts not divisible by the partitions, more partitions
 * than rows, the partitions override, partitions placed shard-contiguously
 * with per-variable offsets balancing bytes (px_ps_layout.h), dense variables in ps mode (pull of
 * every row, dense push), local aggregation on and off, real and virtual
 * nodes, checkpoint gather (rows and optimizer state) and load, and the
 * bytes counted against the protocol's formula.
 *
 * Reference: every rank keeps the whole model and applies the serial sum
 * of every rank's gradients with the same optimizer functions. Integer
 * gradients make every sum exact, so the shards must match it bit for bit
 * in every configuration; random gradients must match it to rounding, and
 * with one node aggregation on and off must give the same bits. */
#include "mpi_test.h"

#include <math.h>

enum { V_EMB, V_TAB, V_DENSE, V_REP, NV, STEPS = 4, MAXI = 8 };
static const int64_t ROWS[NV] = {10, 5, 4, 2}, DIM[NV] = {3, 2, 2, 2};
static const int64_t PARTS[NV] = {3, 7, 2, 0};
static int64_t dims[NV][2];
static float *init[NV], *data[NV];
static px_var_desc vars[NV];
static px_optim_desc optim = {.kind = PX_OPTIM_MOMENTUM, .lr = 0.5, .momentum = 0.5};
static px_program_desc prog;

typedef struct config {
    int rpn, agg, override;
} config;
static const config CONFIGS[] = {{0, 1, 0}, {0, 0, 0}, {1, 1, 0}, {1, 0, 0},
                                 {2, 1, 0}, {2, 0, 0}, {2, 1, 4}};
enum { NCFG = sizeof CONFIGS / sizeof CONFIGS[0] };

/* ---- what each rank pulls and pushes at step s (a function of rank) ---- */
static int pull_emb(int r, int s, int32_t *idx) {
    if (s == 2) { /* every index in partition 0 (rows 0..3): one shard */
        int32_t v[] = {0, 1, 3, 1};
        memcpy(idx, v, sizeof v);
        return 4;
    }
    int32_t v[] = {(r + s) % 10, (r * 3 + 1) % 10, 9, 9, 0, (s * 7 + r) % 10};
    memcpy(idx, v, sizeof v);
    return 6;
}

static int pull_tab(int r, int s, int64_t *idx) {
    int64_t v[] = {r % 5, (r + s) % 5, 4};
    memcpy(idx, v, sizeof v);
    return 3;
}

/* emb push: duplicates inside a rank's set (step 1, and rank 2 always);
 * every row in partition 0 at step 2. */
static int push_emb(int r, int s, int64_t *idx) {
    if (s == 2) {
        int64_t v[] = {2, 0, 3};
        memcpy(idx, v, sizeof v);
        return 3;
    }
    if (s == 1) {
        int64_t v[] = {(r + s) % 10, 9, (r * 3 + 1) % 10, 9};
        memcpy(idx, v, sizeof v);
        return 4;
    }
    int64_t v[] = {(r + s) % 10, 7, (r + 5) % 10};
    memcpy(idx, v, sizeof v);
    return 3; /* rank 2 pushes row 7 twice */
}

/* tab push: rank 1 pushes nothing. */
static int push_tab(int r, int s, int64_t *idx) {
    if (r == 1) return 0;
    idx[0] = (r + s) % 5;
    if ((r + s) % 5 == 4) return 1;
    idx[1] = 4;
    return 2;
}

static float grad(int random, int r, int s, int v, int64_t i, int64_t d) {
    if (!random) return (float)((r + 1) * (i % 3 + 1) - (int)d + s);
    uint64_t z = (uint64_t)r * 1000003u + (uint64_t)s * 7919u + (uint64_t)v * 104729u +
                 (uint64_t)i * 31u + (uint64_t)d;
    return mt_uniform(&z);
}

/* ---- the reference model ---- */
static float *ref_w[NV], *ref_m[NV];

static void ref_reset(void) {
    for (int v = 0; v < NV; v++) {
        size_t n = (size_t)(ROWS[v] * DIM[v]);
        free(ref_w[v]);
        free(ref_m[v]);
        ref_w[v] = malloc(n * sizeof(float));
        ref_m[v] = calloc(n, sizeof(float));
        memcpy(ref_w[v], init[v], n * sizeof(float));
    }
}

/* Sum over ranks (rank order, set order) of the row pushes, /N, update. */
static void ref_rows(int v, int random, int s, int (*push)(int, int, int64_t *)) {
    int size = px_comm_size();
    int64_t d = DIM[v], rows = ROWS[v];
    float *g = calloc((size_t)(rows * d), sizeof(float));
    int *touched = calloc((size_t)rows, sizeof(int));
    for (int r = 0; r < size; r++) {
        int64_t idx[MAXI];
        int n = push(r, s, idx);
        for (int i = 0; i < n; i++) {
            touched[idx[i]] = 1;
            for (int64_t k = 0; k < d; k++) g[idx[i] * d + k] += grad(random, r, s, v, i, k);
        }
    }
    int64_t list[16], n = 0;
    float rowsg[16 * 4];
    for (int64_t i = 0; i < rows; i++)
        if (touched[i]) {
            for (int64_t k = 0; k < d; k++) rowsg[n * d + k] = g[i * d + k] / (float)size;
            list[n++] = i;
        }
    float *slots[PX_OPTIM_MAX_SLOTS] = {ref_m[v], NULL};
    px_optim_rows(&optim, s + 1, ref_w[v], slots, d, list, rowsg, n);
    free(g);
    free(touched);
}

static void ref_dense(int v, int random, int s) {
    int size = px_comm_size();
    int64_t n = ROWS[v] * DIM[v];
    float *g = calloc((size_t)n, sizeof(float));
    for (int r = 0; r < size; r++)
        for (int64_t j = 0; j < n; j++) g[j] += grad(random, r, s, v, j, 0);
    for (int64_t j = 0; j < n; j++) g[j] /= (float)size;
    float *slots[PX_OPTIM_MAX_SLOTS] = {ref_m[v], NULL};
    px_optim_dense(&optim, s + 1, ref_w[v], g, slots, n);
    free(g);
}

/* ---- an independent model of the protocol's bytes (see stats.c) ---- */
typedef struct layout {
    int n_shards, shards[64], leader[64];
} layout;

static layout layout_of(config c) {
    layout l = {0};
    int size = px_comm_size();
    for (int r = 0; r < size; r++) {
        l.leader[r] = c.rpn > 0 ? r - r % c.rpn : 0;
        if (l.leader[r] == r) l.shards[l.n_shards++] = r;
    }
    return l;
}

static int64_t parts_of(config c, int v) {
    int64_t p = c.override > 0 ? c.override : PARTS[v];
    return p > ROWS[v] ? ROWS[v] : p;
}

/* Partition p of v at P partitions: its rows [start, start + len). */
static int64_t part_len(int v, int64_t P, int64_t p) {
    return ROWS[v] / P + (p < ROWS[v] % P ? 1 : 0);
}

/* The placement rule (px_ps_layout.h), written out here: partition p of
 * P of the w-th PS variable on shard (floor(p * S / P) + offset[w]) % S,
 * each variable's offset, in order, the one that leaves the most loaded
 * shard least loaded (ties: the lowest). */
static int place(const layout *l, config c, int v, int64_t part) {
    int S = l->n_shards, offset[V_REP] = {0};
    int64_t load[64] = {0};
    for (int w = 0; w < V_REP; w++) {
        int64_t P = parts_of(c, w), add[64] = {0}, best_most = -1;
        for (int64_t p = 0; p < P; p++) add[p * S / P] += part_len(w, P, p) * DIM[w] * 4;
        for (int o = 0; o < S; o++) {
            int64_t most = 0;
            for (int sh = 0; sh < S; sh++)
                if (load[(sh + o) % S] + add[sh] > most) most = load[(sh + o) % S] + add[sh];
            if (best_most < 0 || most < best_most) best_most = most, offset[w] = o;
        }
        for (int sh = 0; sh < S; sh++) load[(sh + offset[w]) % S] += add[sh];
    }
    return l->shards[(part * S / parts_of(c, v) + offset[v]) % S];
}

static int owner(const layout *l, config c, int v, int64_t row) {
    int64_t P = parts_of(c, v), start = 0;
    for (int64_t p = 0; p < P; p++) {
        int64_t len = part_len(v, P, p);
        if (row < start + len) return place(l, c, v, p);
        start += len;
    }
    return -1;
}

static int is_shard(const layout *l, int r) {
    return l->leader[r] == r;
}

typedef struct bytes {
    int64_t sent, recv;
} bytes;

/* Distinct rows of a list. */
static int distinct(const int64_t *in, int n, int64_t *out) {
    int k = 0;
    for (int i = 0; i < n; i++) {
        int seen = 0;
        for (int j = 0; j < k; j++) seen |= out[j] == in[i];
        if (!seen) out[k++] = in[i];
    }
    return k;
}

static void pull_bytes(config c, int v, int s, bytes *b) {
    layout l = layout_of(c);
    int me = px_comm_rank(), size = px_comm_size();
    int64_t D = DIM[v];
    for (int q = 0; q < size; q++) {
        int64_t raw[MAXI], u[MAXI];
        int n;
        if (v == V_EMB) {
            int32_t i32[MAXI];
            n = pull_emb(q, s, i32);
            for (int i = 0; i < n; i++) raw[i] = i32[i];
        } else {
            n = pull_tab(q, s, raw);
        }
        int k = distinct(raw, n, u);
        for (int si = 0; si < l.n_shards; si++) {
            int sh = l.shards[si];
            if (sh == q) continue;
            int64_t cnt = 0;
            for (int i = 0; i < k; i++) cnt += owner(&l, c, v, u[i]) == sh;
            if (q == me) b->sent += 8 + 8 * cnt, b->recv += 4 * D * cnt;
            if (sh == me) b->recv += 8 + 8 * cnt, b->sent += 4 * D * cnt;
        }
    }
}

static void pull_all_bytes(config c, int v, bytes *b) {
    layout l = layout_of(c);
    int me = px_comm_rank(), size = px_comm_size();
    for (int64_t row = 0; row < ROWS[v]; row++) {
        int o = owner(&l, c, v, row);
        if (o == me)
            b->sent += 4 * DIM[v] * (size - 1);
        else
            b->recv += 4 * DIM[v];
    }
}

/* One row-set transfer of k rows (count always; indices and rows if k > 0). */
static int64_t transfer(int64_t k, int64_t D) {
    return 8 + (k > 0 ? (8 + 4 * D) * k : 0);
}

static void push_bytes(config c, int v, int s, bytes *b) {
    layout l = layout_of(c);
    int me = px_comm_rank(), size = px_comm_size();
    int64_t D = DIM[v];
    int (*push)(int, int, int64_t *) = v == V_EMB ? push_emb : push_tab;
    int64_t sets[64][MAXI];
    int n[64];
    for (int q = 0; q < size; q++) n[q] = push(q, s, sets[q]);
    if (c.agg) { /* members to leaders, then the node's distinct union */
        for (int q = 0; q < size; q++) {
            if (l.leader[q] == q) continue;
            if (q == me) b->sent += transfer(n[q], D);
            if (l.leader[q] == me) b->recv += transfer(n[q], D);
        }
        int64_t merged[64][64];
        int m[64] = {0};
        for (int q = 0; q < size; q++) {
            int ld = l.leader[q];
            int64_t all[64 + MAXI];
            memcpy(all, merged[ld], sizeof(int64_t) * (size_t)m[ld]);
            memcpy(all + m[ld], sets[q], sizeof(int64_t) * (size_t)n[q]);
            m[ld] = distinct(all, m[ld] + n[q], merged[ld]);
        }
        for (int q = 0; q < size; q++) {
            if (!is_shard(&l, q)) continue;
            memcpy(sets[q], merged[q], sizeof(int64_t) * (size_t)m[q]);
            n[q] = m[q];
        }
    }
    for (int q = 0; q < size; q++) {
        if (c.agg && !is_shard(&l, q)) continue;
        for (int si = 0; si < l.n_shards; si++) {
            int sh = l.shards[si];
            if (sh == q) continue;
            int64_t k = 0;
            for (int i = 0; i < n[q]; i++) k += owner(&l, c, v, sets[q][i]) == sh;
            if (q == me) b->sent += transfer(k, D);
            if (sh == me) b->recv += transfer(k, D);
        }
    }
}

static void push_dense_bytes(config c, int v, bytes *b) {
    layout l = layout_of(c);
    int me = px_comm_rank(), size = px_comm_size();
    int64_t numel = ROWS[v] * DIM[v];
    for (int q = 0; q < size; q++) {
        if (c.agg && l.leader[q] != q) {
            if (q == me) b->sent += 4 * numel;
            if (l.leader[q] == me) b->recv += 4 * numel;
            continue;
        }
        for (int64_t row = 0; row < ROWS[v]; row++) {
            int o = owner(&l, c, v, row);
            if (o == q) continue;
            if (q == me) b->sent += 4 * DIM[v];
            if (o == me) b->recv += 4 * DIM[v];
        }
    }
}

/* ---- one configuration ---- */
static float *result[2][NCFG][NV][2]; /* [random][cfg][var][w / momentum], rank 0 */

static void check_pulled(const char *what, int v, const float *cache, const int64_t *idx, int n,
                         int random) {
    int64_t d = DIM[v];
    int *want = calloc((size_t)ROWS[v], sizeof(int));
    for (int i = 0; i < n; i++) want[idx[i]] = 1;
    int bad = 0;
    for (int64_t row = 0; row < ROWS[v]; row++)
        for (int64_t k = 0; k < d; k++) {
            float got = cache[row * d + k];
            float exp = want[row] ? ref_w[v][row * d + k] : -777.0f;
            int ok = random && want[row] ? fabsf(got - exp) <= 1e-5f * (1 + fabsf(exp))
                                         : memcmp(&got, &exp, 4) == 0;
            if (!ok && bad++ < 3)
                CHECK(0, "%s: row %lld [%lld] is %.9g, expected %.9g", what, (long long)row,
                      (long long)k, got, exp);
        }
    CHECK(bad == 0, "%s: %d wrong values", what, bad);
    free(want);
}

/* A sparse pull (px_k_ps_pull_rows) of n indices: the cache is compact
 * (the k distinct rows use cache rows 0..k-1, one each), and
 * cache[remap[i]] is the shard's current row idx[i]. */
static void check_pulled_rows(const char *what, int v, const float *rc, const int64_t *remap,
                              const int64_t *idx, int n, int random) {
    int64_t d = DIM[v], u[MAXI + 16];
    int k = distinct(idx, n, u), bad = 0;
    for (int i = 0; i < n; i++) {
        CHECK(remap[i] >= 0 && remap[i] < k, "%s: index %d maps to cache row %lld of %d", what, i,
              (long long)remap[i], k);
        if (remap[i] < 0 || remap[i] >= k) return;
        for (int j = 0; j < i; j++)
            CHECK((idx[j] == idx[i]) == (remap[j] == remap[i]),
                  "%s: indices %d and %d (rows %lld, %lld) share cache rows wrongly", what, j, i,
                  (long long)idx[j], (long long)idx[i]);
        for (int64_t c = 0; c < d; c++) {
            float got = rc[remap[i] * d + c], exp = ref_w[v][idx[i] * d + c];
            int ok =
                random ? fabsf(got - exp) <= 1e-5f * (1 + fabsf(exp)) : memcmp(&got, &exp, 4) == 0;
            if (!ok && bad++ < 3)
                CHECK(0, "%s: row %lld [%lld] is %.9g, expected %.9g", what, (long long)idx[i],
                      (long long)c, got, exp);
        }
    }
    CHECK(bad == 0, "%s: %d wrong values", what, bad);
}

/* Pulls n indices (int32 when i32 != NULL, else i64) of v into a fresh
 * cache and checks it. */
static void pull_rows_checked(const char *what, int v, const int32_t *i32, const int64_t *i64,
                              int n, int random) {
    float rc[(MAXI + 16) * 4];
    int64_t idx[MAXI + 16], remap[MAXI + 16];
    int32_t remap32[MAXI + 16];
    for (int j = 0; j < (MAXI + 16) * 4; j++) rc[j] = -777.0f;
    for (int i = 0; i < n; i++) idx[i] = i32 ? i32[i] : i64[i];
    int64_t p[] = {v, i32 ? 6 : 7, n, DIM[v]};
    if (i32) {
        px_k_ps_pull_rows((void *[]){(void *)i32, rc, remap32}, p);
        for (int i = 0; i < n; i++) remap[i] = remap32[i];
    } else {
        px_k_ps_pull_rows((void *[]){(void *)i64, rc, remap}, p);
    }
    check_pulled_rows(what, v, rc, remap, idx, n, random);
}

/* The placement spreads bytes: every shard holds some rows when there
 * are at least as many partitions as shards, and, for these tables and
 * layouts, the shards' loads differ by at most the largest partition (the
 * offsets put each variable's extra partitions on the least loaded
 * shards). */
static void check_balance(config c) {
    layout l = layout_of(c);
    int64_t load[64] = {0}, biggest = 0, total_parts = 0;
    for (int v = 0; v < V_REP; v++)
        for (int64_t p = 0; p < parts_of(c, v); p++) {
            int64_t b = part_len(v, parts_of(c, v), p) * DIM[v] * 4;
            int sh = 0;
            while (l.shards[sh] != place(&l, c, v, p)) sh++;
            load[sh] += b;
            if (b > biggest) biggest = b;
            total_parts++;
        }
    int64_t lo = load[0], hi = load[0];
    for (int sh = 1; sh < l.n_shards; sh++) {
        if (load[sh] < lo) lo = load[sh];
        if (load[sh] > hi) hi = load[sh];
    }
    CHECK(hi - lo <= biggest,
          "rpn %d override %d: shard loads %lld..%lld bytes differ by more "
          "than the largest partition (%lld)",
          c.rpn, c.override, (long long)lo, (long long)hi, (long long)biggest);
    CHECK(total_parts < l.n_shards || lo > 0, "rpn %d override %d: a shard holds no rows", c.rpn,
          c.override);
}

static void run_config(int ci, int random) {
    config c = CONFIGS[ci];
    int me = px_comm_rank();
    if (random == 0) check_balance(c);
    for (int v = 0; v < NV; v++)
        memcpy(data[v], init[v], sizeof(float) * (size_t)(ROWS[v] * DIM[v]));
    ref_reset();
    px_comm_opts opts = {.ranks_per_node = c.rpn,
                         .local_aggregation = c.agg,
                         .partitions_override = c.override,
                         .stall_timeout_s = 60};
    px_comm_setup(&prog, &opts);
    float *cache[NV];
    for (int v = 0; v < NV; v++) cache[v] = malloc(sizeof(float) * (size_t)(ROWS[v] * DIM[v]));
    char what[160];
    for (int s = 0; s < STEPS; s++) {
        px_train.t = s + 1;
        px_comm_step_begin(s);
        px_comm_stats_reset();
        bytes want_pull = {0, 0}, want_push = {0, 0};
        /* pulls */
        for (int v = 0; v < NV; v++)
            for (int64_t j = 0; j < ROWS[v] * DIM[v]; j++) cache[v][j] = -777.0f;
        int32_t ie[MAXI];
        int64_t it[MAXI];
        int ne = pull_emb(me, s, ie), nt = pull_tab(me, s, it);
        int64_t pd[] = {V_DENSE, 0, 0};
        snprintf(what, sizeof what, "cfg %d random %d step %d pull emb", ci, random, s);
        pull_rows_checked(what, V_EMB, ie, NULL, ne, random);
        snprintf(what, sizeof what, "cfg %d random %d step %d pull tab", ci, random, s);
        pull_rows_checked(what, V_TAB, NULL, it, nt, random);
        px_k_ps_pull((void *[]){cache[V_DENSE], NULL}, pd);
        int64_t all[16];
        for (int i = 0; i < 16; i++) all[i] = i;
        snprintf(what, sizeof what, "cfg %d random %d step %d pull dense", ci, random, s);
        check_pulled(what, V_DENSE, cache[V_DENSE], all, (int)ROWS[V_DENSE], random);
        pull_bytes(c, V_EMB, s, &want_pull);
        pull_bytes(c, V_TAB, s, &want_pull);
        pull_all_bytes(c, V_DENSE, &want_pull);

        /* pushes: two spare rows of NaN past the count must be ignored */
        int v_rows[2] = {V_EMB, V_TAB};
        for (int a = 0; a < 2; a++) {
            int v = v_rows[a];
            int64_t idx[MAXI + 2], d = DIM[v], count;
            float rows[(MAXI + 2) * 4];
            count = (v == V_EMB ? push_emb : push_tab)(me, s, idx);
            for (int64_t i = 0; i < count + 2; i++)
                for (int64_t k = 0; k < d; k++)
                    rows[i * d + k] = i < count ? grad(random, me, s, v, i, k) : NAN;
            idx[count] = idx[count + 1] = 0;
            int64_t p[] = {v, count + 2, d};
            px_k_ps_push((void *[]){NULL, idx, rows, &count}, p); /* W is not read */
            ref_rows(v, random, s, v == V_EMB ? push_emb : push_tab);
            push_bytes(c, v, s, &want_push);
        }
        float g[16];
        for (int64_t j = 0; j < ROWS[V_DENSE] * DIM[V_DENSE]; j++)
            g[j] = grad(random, me, s, V_DENSE, j, 0);
        int64_t pdn[] = {V_DENSE, ROWS[V_DENSE] * DIM[V_DENSE]};
        px_k_ps_push_dense((void *[]){cache[V_DENSE], g}, pdn);
        ref_dense(V_DENSE, random, s);
        push_dense_bytes(c, V_DENSE, &want_push);

        px_comm_stats st;
        px_comm_get_stats(&st);
        CHECK(st.sent[PX_TRAFFIC_PS_PULL] == want_pull.sent &&
                  st.received[PX_TRAFFIC_PS_PULL] == want_pull.recv,
              "cfg %d step %d: pull bytes sent %lld received %lld, formula %lld %lld", ci, s,
              (long long)st.sent[PX_TRAFFIC_PS_PULL], (long long)st.received[PX_TRAFFIC_PS_PULL],
              (long long)want_pull.sent, (long long)want_pull.recv);
        CHECK(st.sent[PX_TRAFFIC_PS_PUSH] == want_push.sent &&
                  st.received[PX_TRAFFIC_PS_PUSH] == want_push.recv,
              "cfg %d step %d: push bytes sent %lld received %lld, formula %lld %lld", ci, s,
              (long long)st.sent[PX_TRAFFIC_PS_PUSH], (long long)st.received[PX_TRAFFIC_PS_PUSH],
              (long long)want_push.sent, (long long)want_push.recv);
        CHECK(st.sent[PX_TRAFFIC_ALLREDUCE] == 0 && st.sent[PX_TRAFFIC_OTHER] == 0,
              "cfg %d: unexpected allreduce/other traffic", ci);
        if (random == 0 && s == 0 && me == 0)
            printf("cfg rpn=%d agg=%d override=%d, step 0, rank 0: pull sent %lld recv %lld "
                   "(formula %lld %lld), push sent %lld recv %lld (formula %lld %lld)\n",
                   c.rpn, c.agg, c.override, (long long)st.sent[PX_TRAFFIC_PS_PULL],
                   (long long)st.received[PX_TRAFFIC_PS_PULL], (long long)want_pull.sent,
                   (long long)want_pull.recv, (long long)st.sent[PX_TRAFFIC_PS_PUSH],
                   (long long)st.received[PX_TRAFFIC_PS_PUSH], (long long)want_push.sent,
                   (long long)want_push.recv);
        px_comm_step_end();
    }

    /* The shards' final state on rank 0. */
    for (int v = 0; v < NV; v++) {
        size_t n = (size_t)(ROWS[v] * DIM[v]);
        float *w = malloc(n * 4), *m = malloc(n * 4);
        float *slots[PX_OPTIM_MAX_SLOTS] = {m, NULL};
        px_comm_var_gather(v, w, slots);
        if (me == 0) {
            result[random][ci][v][0] = w;
            result[random][ci][v][1] = m;
        } else {
            free(w);
            free(m);
        }
    }
    if (me == 0) {
        for (int v = 0; v < V_REP; v++) {
            size_t n = (size_t)(ROWS[v] * DIM[v]);
            int bad = 0;
            for (size_t j = 0; j < n; j++) {
                float a = result[random][ci][v][0][j], b = ref_w[v][j];
                float ma = result[random][ci][v][1][j], mb = ref_m[v][j];
                int ok = random ? fabsf(a - b) <= 1e-5f * (1 + fabsf(b)) &&
                                      fabsf(ma - mb) <= 1e-5f * (1 + fabsf(mb))
                                : memcmp(&a, &b, 4) == 0 && memcmp(&ma, &mb, 4) == 0;
                if (!ok && bad++ < 3)
                    CHECK(0, "cfg %d random %d var %d [%zu]: w %.9g m %.9g, reference %.9g %.9g",
                          ci, random, v, j, a, ma, b, mb);
            }
            CHECK(bad == 0, "cfg %d random %d var %d: %d values differ from the reference", ci,
                  random, v, bad);
        }
        /* replicated variable: rank 0's own copy, state zero (no px_train.slots) */
        CHECK(memcmp(result[random][ci][V_REP][0], data[V_REP], 16) == 0,
              "gather of a replicated variable is not rank 0's copy");
    }

    /* Load: every rank passes new rows; a pull returns them. */
    float neww[30], newm[30];
    for (int j = 0; j < 30; j++) newm[j] = neww[j] = (float)j * 0.5f - 3;
    const float *ls[PX_OPTIM_MAX_SLOTS] = {newm, NULL};
    px_comm_var_load(V_EMB, neww, ls);
    memcpy(ref_w[V_EMB], neww, sizeof neww);
    int64_t every[10];
    for (int i = 0; i < 10; i++) every[i] = 9 - i;
    snprintf(what, sizeof what, "cfg %d: pull after load", ci);
    pull_rows_checked(what, V_EMB, NULL, every, 10, 0);
    float w[30], m[30];
    float *slots[PX_OPTIM_MAX_SLOTS] = {m, NULL};
    px_comm_var_gather(V_EMB, w, slots);
    if (me == 0)
        CHECK(memcmp(w, neww, sizeof w) == 0 && memcmp(m, newm, sizeof m) == 0,
              "cfg %d: gather after load differs from what was loaded", ci);
    for (int v = 0; v < NV; v++) free(cache[v]);
}

int main(int argc, char **argv) {
    px_comm_init(&argc, &argv);
    const char *names[NV] = {"emb", "tab", "dense", "rep"};
    for (int v = 0; v < NV; v++) {
        size_t n = (size_t)(ROWS[v] * DIM[v]);
        init[v] = malloc(n * 4);
        data[v] = malloc(n * 4);
        for (size_t j = 0; j < n; j++) init[v][j] = (float)j * 0.25f - (float)v;
        vars[v] = mt_var(names[v], dims[v], ROWS[v], DIM[v], data[v],
                         v == V_REP ? PX_SYNC_ALLREDUCE : PX_SYNC_PS, PARTS[v]);
    }
    prog.abi = PX_PROGRAM_ABI;
    prog.kind = PX_PROGRAM_TRAIN;
    prog.n_vars = NV;
    prog.vars = vars;
    prog.optim = &optim;
    prog.comm_mode = PX_COMM_MODE_HYBRID;
    px_train.prog = &prog;
    for (int random = 0; random < 2; random++)
        for (int ci = 0; ci < NCFG; ci++) run_config(ci, random);
    if (px_comm_rank() == 0) {
        /* Random gradients: with one node, aggregation on and off give the
         * same bits (configs 0 and 1). */
        for (int v = 0; v < V_REP; v++)
            for (int a = 0; a < 2; a++)
                CHECK(memcmp(result[1][0][v][a], result[1][1][v][a],
                             sizeof(float) * (size_t)(ROWS[v] * DIM[v])) == 0,
                      "one node: aggregation on and off differ on var %d (array %d)", v, a);
    }
    return mt_finish("mpi_ps");
}
