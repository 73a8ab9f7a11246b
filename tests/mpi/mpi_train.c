/* N ranks at per-rank batch b train like one process at batch N*b: a toy
 * model with a sparse embedding E on the parameter servers (pull rows,
 * push a row set), a dense weight w and bias b averaged by one AllReduce
 * bucket (started before the pushes, so the ring overlaps them), and a
 * dense variable u in ps mode (pull every row, dense push).
 *   pred_i = E[x_i] . w + bias + u . z_i,  loss = mean_i 0.5 (pred_i - y_i)^2
 * A serial reference (plain loops over the global batch, the same
 * optimizer functions) runs on every rank; losses, E and u (with their
 * optimizer state, gathered from the shards) and w must match it to float
 * rounding, and w must have the same bits on every rank.
 * Usage: mpi_train OPTIMIZER PARTITIONS RANKS_PER_NODE LOCAL_AGG STEPS
 *        (PARTITIONS 0: automatic, one per shard; search: automatic, measured) */
#include "mpi_test.h"

#include <math.h>

enum { V_E, V_W, V_B, V_U, NV, R = 40, D = 4, U_ROWS = 3, U_DIM = 2, NU = U_ROWS * U_DIM };
enum { M = 64, BATCH = 4 };

static int64_t dims[NV][2];
static float data[NV][R * D];
static px_var_desc vars[NV];
static px_optim_desc optim;
static px_program_desc prog;
static int64_t bucket_bytes[1] = {4 * (D + 1)};

/* the data set: sample i has index x, features z, target y */
static int64_t xs[M];
static float zs[M][NU], ys[M];

static int64_t numel(int v) {
    return v == V_E ? R * D : v == V_W ? D : v == V_B ? 1 : NU;
}

static void make_data(void) {
    uint64_t s = 42;
    for (int i = 0; i < M; i++) {
        /* skewed: low rows are frequent (Zipf-like) */
        double u = (mt_uniform(&s) + 1) / 2;
        xs[i] = (int64_t)(R * u * u * u);
        for (int k = 0; k < NU; k++) zs[i][k] = mt_uniform(&s);
        ys[i] = mt_uniform(&s) * 2;
    }
    for (int v = 0; v < NV; v++)
        for (int64_t j = 0; j < numel(v); j++) data[v][j] = 0.3f * mt_uniform(&s);
}

/* Forward and backward over samples [first, first + n) of the data set
 * (cyclic); gradients are means over the n samples. dE is dense here. */
static double forward_backward(const float *E, const float *w, const float *b, const float *u,
                               int64_t first, int n, float *dE, float *dw, float *db, float *du) {
    double loss = 0;
    memset(dE, 0, sizeof(float) * R * D);
    memset(dw, 0, sizeof(float) * D);
    memset(du, 0, sizeof(float) * NU);
    *db = 0;
    for (int i = 0; i < n; i++) {
        int64_t sm = (first + i) % M, x = xs[sm];
        float pred = b[0];
        for (int d = 0; d < D; d++) pred += E[x * D + d] * w[d];
        for (int k = 0; k < NU; k++) pred += u[k] * zs[sm][k];
        float e = pred - ys[sm];
        loss += 0.5 * (double)e * e;
        float ge = e / (float)n;
        for (int d = 0; d < D; d++) {
            dE[x * D + d] += ge * w[d];
            dw[d] += ge * E[x * D + d];
        }
        for (int k = 0; k < NU; k++) du[k] += ge * zs[sm][k];
        *db += ge;
    }
    return loss / n;
}

/* ---- serial reference at the global batch ---- */
static float ref[NV][R * D], ref_slots[NV][2][R * D];

static double ref_step(int64_t first, int n, int64_t t) {
    static float dE[R * D], dw[D], db, du[NU];
    double loss =
        forward_backward(ref[V_E], ref[V_W], ref[V_B], ref[V_U], first, n, dE, dw, &db, du);
    int touched[R] = {0};
    for (int i = 0; i < n; i++) touched[xs[(first + i) % M]] = 1;
    int64_t rows[R], k = 0;
    float g[R * D];
    for (int r = 0; r < R; r++)
        if (touched[r]) {
            memcpy(g + k * D, dE + r * D, sizeof(float) * D);
            rows[k++] = r;
        }
    float *s[NV][2];
    for (int v = 0; v < NV; v++) s[v][0] = ref_slots[v][0], s[v][1] = ref_slots[v][1];
    px_optim_rows(&optim, t, ref[V_E], s[V_E], D, rows, g, k);
    px_optim_dense(&optim, t, ref[V_W], dw, s[V_W], D);
    px_optim_dense(&optim, t, ref[V_B], &db, s[V_B], 1);
    px_optim_dense(&optim, t, ref[V_U], du, s[V_U], NU);
    return loss;
}

static int close_to(float a, float b, float tol) {
    return fabsf(a - b) <= tol * (1 + fabsf(b));
}

int main(int argc, char **argv) {
    px_comm_init(&argc, &argv);
    if (argc != 6) {
        fprintf(stderr, "usage: %s sgd|momentum|adam|adagrad PARTITIONS RPN AGG STEPS\n", argv[0]);
        return 2;
    }
    const char *names[] = {"sgd", "momentum", "adam", "adagrad"};
    optim = (px_optim_desc){.lr = 0.05,
                            .momentum = 0.9,
                            .beta1 = 0.9,
                            .beta2 = 0.999,
                            .epsilon = 1e-8,
                            .weight_decay = 0.01};
    optim.kind = -1;
    for (int k = 0; k < 4; k++)
        if (strcmp(argv[1], names[k]) == 0) optim.kind = k;
    if (optim.kind < 0) return 2;
    int parts = atoi(argv[2]), rpn = atoi(argv[3]), agg = atoi(argv[4]), steps = atoi(argv[5]);
    int rank = px_comm_rank(), size = px_comm_size();

    make_data();
    const char *vn[NV] = {"E", "w", "b", "u"};
    const int64_t rows[NV] = {R, D, 1, U_ROWS}, cols[NV] = {D, 1, 1, U_DIM};
    const int64_t sync[NV] = {PX_SYNC_PS, PX_SYNC_ALLREDUCE, PX_SYNC_ALLREDUCE, PX_SYNC_PS};
    for (int v = 0; v < NV; v++) {
        vars[v] = mt_var(vn[v], dims[v], rows[v], cols[v], data[v], sync[v], v == V_E ? parts : 2);
        memcpy(ref[v], data[v], sizeof(float) * (size_t)numel(v));
    }
    prog.abi = PX_PROGRAM_ABI;
    prog.kind = PX_PROGRAM_TRAIN;
    prog.batch = BATCH;
    prog.n_vars = NV;
    prog.vars = vars;
    prog.optim = &optim;
    prog.n_buckets = 1;
    prog.bucket_bytes = bucket_bytes;
    static float slot_mem[NV][2][D];
    static float *slots[NV * PX_OPTIM_MAX_SLOTS];
    for (int s = 0; s < 2; s++) {
        slots[V_W * 2 + s] = slot_mem[V_W][s];
        slots[V_B * 2 + s] = slot_mem[V_B][s];
    }
    px_train.prog = &prog;
    px_train.slots = slots;
    px_comm_opts opts = {.ranks_per_node = rpn, .local_aggregation = agg, .stall_timeout_s = 60};
    /* PARTITIONS "search": automatic partitions, measured (the paper's
     * search, moving rows); 0: automatic, one per shard. */
    opts.partitions_search = !strcmp(argv[2], "search");
    px_comm_setup(&prog, &opts);

    float E[R * D], u[NU], dE[R * D], dw[D], db, du[NU], wb[D + 1];
    int bad_loss = 0;
    for (int s = 0; s < steps; s++) {
        int64_t global = (int64_t)s * BATCH * size, first = global + (int64_t)rank * BATCH;
        px_train.t = s + 1;
        px_comm_step_begin(s);
        /* pull the rows this batch needs, and all of u */
        int64_t idx[BATCH];
        for (int i = 0; i < BATCH; i++) idx[i] = xs[(first + i) % M];
        int64_t pp[] = {V_E, 7, BATCH, D}, pu[] = {V_U, 0, 0}, remap[BATCH];
        float rc[BATCH * D];
        px_k_ps_pull_rows((void *[]){idx, rc, remap}, pp);
        px_k_ps_pull((void *[]){u, NULL}, pu);
        /* forward_backward indexes E by global row: place the cached rows */
        for (int i = 0; i < BATCH; i++)
            memcpy(E + idx[i] * D, rc + remap[i] * D, sizeof(float) * D);
        double loss = forward_backward(E, data[V_W], data[V_B], u, first, BATCH, dE, dw, &db, du);
        /* dense gradients: one bucket {dw, db}, overlapping the pushes */
        int64_t pb[] = {0, 2, 4 * D, 4};
        px_k_allreduce_start((void *[]){dw, &db}, pb);
        /* the row set: distinct rows of the batch, their summed gradient */
        int64_t set[BATCH], count = 0;
        float set_rows[BATCH * D];
        for (int i = 0; i < BATCH; i++) {
            int seen = 0;
            for (int j = 0; j < count; j++) seen |= set[j] == idx[i];
            if (seen) continue;
            memcpy(set_rows + count * D, dE + idx[i] * D, sizeof(float) * D);
            set[count++] = idx[i];
        }
        int64_t ps[] = {V_E, BATCH, D}, pd[] = {V_U, NU};
        px_k_ps_push((void *[]){NULL, set, set_rows, &count}, ps);
        px_k_ps_push_dense((void *[]){u, du}, pd);
        px_k_allreduce_wait((void *[]){dw, &db, wb, wb + D}, pb);
        float *sw[2] = {slots[V_W * 2], slots[V_W * 2 + 1]};
        float *sb[2] = {slots[V_B * 2], slots[V_B * 2 + 1]};
        px_optim_dense(&optim, s + 1, data[V_W], wb, sw, D);
        px_optim_dense(&optim, s + 1, data[V_B], wb + D, sb, 1);
        px_comm_step_end();
        double mean = px_comm_mean(loss);
        double want = ref_step(global, BATCH * size, s + 1);
        if (!(fabs(mean - want) <= 1e-5 * (1 + fabs(want))) && bad_loss++ < 3)
            CHECK(0, "step %d: loss %.9g, reference %.9g", s, mean, want);
    }
    CHECK(bad_loss == 0, "%d losses differ from the reference", bad_loss);

    /* replicated w, b: the reference, and the same bits on every rank */
    int bad = 0;
    for (int d = 0; d < D; d++) bad += !close_to(data[V_W][d], ref[V_W][d], 1e-5f);
    bad += !close_to(data[V_B][0], ref[V_B][0], 1e-5f);
    CHECK(bad == 0, "w/b differ from the reference (%d values)", bad);
    uint64_t h = mt_hash(data[V_W], sizeof(float) * D) ^ mt_hash(data[V_B], 4);
    int mismatch = px_comm_first_mismatch(h);
    CHECK(mismatch == -1, "rank %d has other bits of w than rank 0", mismatch);

    /* PS variables and their optimizer state, from the shards */
    int n_slots = px_optim_n_slots(optim.kind);
    for (int v = 0; v < NV; v += 3) {
        float w[R * D], s0[R * D], s1[R * D];
        float *want[PX_OPTIM_MAX_SLOTS] = {s0, s1};
        px_comm_var_gather(v, w, want);
        if (rank != 0) continue;
        int diff = 0;
        for (int64_t j = 0; j < numel(v); j++) {
            int ok = close_to(w[j], ref[v][j], 1e-5f);
            for (int k = 0; k < n_slots; k++) ok &= close_to(want[k][j], ref_slots[v][k][j], 1e-4f);
            if (!ok && diff++ < 3)
                CHECK(0, "%s[%lld]: %.9g (slot0 %.9g), reference %.9g (%.9g)", vn[v], (long long)j,
                      w[j], s0[j], ref[v][j], ref_slots[v][0][j]);
        }
        CHECK(diff == 0, "%s: %d values differ from the reference", vn[v], diff);
    }
    px_comm_stats st;
    px_comm_get_stats(&st);
    if (parts == 0) {
        CHECK(st.partitions_chosen > 0, "automatic partitions: none chosen after %d steps", steps);
        if (rank == 0) printf("partitions chosen: %lld\n", (long long)st.partitions_chosen);
    }
    return mt_finish("mpi_train");
}
