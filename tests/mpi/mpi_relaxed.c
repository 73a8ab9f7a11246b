/* The relaxed synchronization modes of the communication runtime
 * (docs/relaxed_sync.md), each against what it promises:
 *
 *   --wire bf16|fp16  AllReduce buckets: every rank gets the same bits,
 *       within the rounding of the exact mean, and moves exactly half the
 *       bytes of the same run in fp32 (the same algorithms: run with
 *       PX_ALLREDUCE set). Parameter-server pulls: rows of other shards
 *       arrive rounded (the shard's master rounded to the format), rows of
 *       the rank's own shard as they are.
 *   --wire-error-feedback  a constant gradient that bf16 rounds down each
 *       step: the sum of the averaged gradients over 64 steps drifts by
 *       64 roundings without error feedback, and by one residual at most
 *       with it.
 *   --sync-every 3  local steps move no bytes and hand every rank its own
 *       gradient; after the third step every replica is the mean of the
 *       ranks' local models (SGD: the start less lr times the mean of every
 *       rank's summed gradients), the same bits on every rank; a checkpoint
 *       sync point averages the optimizer state too.
 *   --staleness 2  a row pulled in step 0 is read again in steps 1 and 2
 *       (the values of step 0 although pushes changed the master, and no
 *       row bytes move), and pulled again in step 3 (the master's values).
 *
 * usage: mpi_relaxed  (under mpirun, 1 to 4 ranks) */
#include "mpi_test.h"

#include <math.h>

void comm_wire_round(int w, float *x, int64_t n); /* runtime/comm/transport */

static px_optim_desc sgd = {.kind = PX_OPTIM_SGD, .lr = 0.25};

/* ---- AllReduce buckets in 16 bits ---- */
enum { NB = 4 };
static const int64_t BUCKET_FLOATS[NB] = {1, 7, 1000, 4099};
static int64_t bucket_bytes[NB];

static float value(int rank, int b, int64_t j) {
    uint64_t s = ((uint64_t)rank << 40) ^ ((uint64_t)b << 32) ^ ((uint64_t)j << 8) ^ 77u;
    return mt_uniform(&s) * (float)(1 + j % 5);
}

/* One step of every bucket; the means in out[b]. Returns the allreduce
 * bytes sent + received. */
static int64_t run_buckets(float **out) {
    int rank = px_comm_rank();
    px_comm_stats_reset();
    for (int b = 0; b < NB; b++) {
        float *g = malloc(sizeof(float) * (size_t)BUCKET_FLOATS[b]);
        for (int64_t j = 0; j < BUCKET_FLOATS[b]; j++) g[j] = value(rank, b, j);
        int64_t p[3] = {b, 1, 4 * BUCKET_FLOATS[b]};
        px_k_allreduce_start((void *[]){g}, p);
        px_k_allreduce_wait((void *[]){g, out[b]}, p);
        free(g);
    }
    px_comm_stats st;
    px_comm_get_stats(&st);
    return st.sent[PX_TRAFFIC_ALLREDUCE] + st.received[PX_TRAFFIC_ALLREDUCE];
}

static void check_wire_allreduce(px_program_desc *prog) {
    int size = px_comm_size();
    float *out[NB];
    for (int b = 0; b < NB; b++) out[b] = malloc(sizeof(float) * (size_t)BUCKET_FLOATS[b]);
    px_comm_opts exact = {.local_aggregation = 1, .stall_timeout_s = 30};
    px_comm_setup(prog, &exact);
    px_comm_step_begin(0);
    int64_t bytes32 = run_buckets(out);
    px_comm_step_end();
    int algo32[NB];
    for (int b = 0; b < NB; b++) algo32[b] = px_comm_allreduce_algorithm(b);
    for (int w = PX_WIRE_BF16; w <= PX_WIRE_FP16; w++) {
        px_comm_opts o = exact;
        o.wire = w;
        px_comm_setup(prog, &o);
        px_comm_step_begin(0);
        int64_t bytes16 = run_buckets(out);
        px_comm_step_end();
        /* With PX_ALLREDUCE=auto half the bytes may turn a bucket to the
         * other algorithm: then the bytes are not comparable. */
        int same = 1;
        for (int b = 0; b < NB; b++) same &= px_comm_allreduce_algorithm(b) == algo32[b];
        CHECK(!same || 2 * bytes16 == bytes32, "%s: %lld allreduce bytes, fp32 moved %lld",
              px_wire_format_name(w), (long long)bytes16, (long long)bytes32);
        /* bf16 keeps 8 significant bits, half 11: each rounding is within
         * 2^-8 (2^-11) of the value; a sum rounds at most N + 1 times. */
        double unit = w == PX_WIRE_BF16 ? 1.0 / 256 : 1.0 / 2048;
        uint64_t h = 0;
        for (int b = 0; b < NB; b++) {
            for (int64_t j = 0; j < BUCKET_FLOATS[b]; j++) {
                double exact_sum = 0, abs_sum = 0;
                for (int r = 0; r < size; r++) {
                    exact_sum += value(r, b, j);
                    abs_sum += fabs(value(r, b, j));
                }
                double err = fabs(out[b][j] - exact_sum / size);
                CHECK(err <= (size + 1) * unit * abs_sum / size + 1e-30,
                      "%s bucket %d [%lld]: %.9g, the exact mean %.9g", px_wire_format_name(w), b,
                      (long long)j, out[b][j], exact_sum / size);
            }
            h ^= mt_hash(out[b], sizeof(float) * (size_t)BUCKET_FLOATS[b]) + (uint64_t)b;
        }
        int r = px_comm_first_mismatch(h);
        CHECK(r < 0, "%s: rank %d got other bits than rank 0", px_wire_format_name(w), r);
    }
    for (int b = 0; b < NB; b++) free(out[b]);
}

/* ---- error feedback ---- */
static double drift(px_program_desc *prog, int feedback) {
    px_comm_opts o = {.local_aggregation = 1,
                      .stall_timeout_s = 30,
                      .wire = PX_WIRE_BF16,
                      .wire_error_feedback = feedback};
    px_comm_setup(prog, &o);
    const float g = 0.5f + 1.0f / 4096; /* bf16 rounds it to 0.5 */
    double sum = 0;
    enum { T = 64 };
    for (int s = 0; s < T; s++) {
        px_comm_step_begin(s);
        float in = g, mean = 0;
        int64_t p[3] = {0, 1, 4};
        px_k_allreduce_start((void *[]){&in}, p);
        px_k_allreduce_wait((void *[]){&in, &mean}, p);
        px_comm_step_end();
        sum += mean;
    }
    return fabs(sum - (double)g * T);
}

static void check_error_feedback(px_program_desc *prog) {
    int size = px_comm_size();
    if (size == 1) return; /* nothing travels */
    double plain = drift(prog, 0), fed = drift(prog, 1);
    CHECK(fabs(plain - 64.0 / 4096) < 1e-9, "without error feedback the drift is %.9g, not %.9g",
          plain, 64.0 / 4096);
    CHECK(fed <= plain / 4, "with error feedback the drift is %.9g (without: %.9g)", fed, plain);
    /* 2 ranks: every sum is exact in bf16, so the drift is what the ranks
     * still hold back: one residual, at most half a unit below 0.5 (2^-9) */
    if (size == 2) CHECK(fed <= 1.0 / 512, "with error feedback the drift is %.9g", fed);
}

/* ---- local SGD ---- */
enum { DN = 1000 };
static float dense_w[DN], dense_m[DN];
static float *slot_table[2 * PX_OPTIM_MAX_SLOTS];

static float local_grad(int r, int s, int64_t j) {
    return (float)((r + 1) * (j % 7) - 3 + s) / 8.0f; /* exact sums */
}

static int64_t chunk(int64_t n, int parts, int c) {
    c %= parts;
    return n / parts + (c < n % parts ? 1 : 0);
}

static void check_local_sgd(px_program_desc *prog) {
    int rank = px_comm_rank(), size = px_comm_size();
    px_comm_opts o = {.local_aggregation = 1, .stall_timeout_s = 30, .sync_every = 3};
    for (int64_t j = 0; j < DN; j++) dense_w[j] = (float)(j % 11) / 4.0f;
    px_comm_setup(prog, &o);
    float g[DN], out[DN];
    for (int s = 0; s < 3; s++) {
        px_train.t = s + 1;
        px_comm_step_begin(s);
        px_comm_stats_reset();
        for (int64_t j = 0; j < DN; j++) g[j] = local_grad(rank, s, j);
        int64_t p[3] = {0, 1, 4 * DN};
        px_k_allreduce_start((void *[]){g}, p);
        px_k_allreduce_wait((void *[]){g, out}, p);
        px_comm_stats st;
        px_comm_get_stats(&st);
        CHECK(st.sent[PX_TRAFFIC_ALLREDUCE] == 0, "local step %d sent %lld bytes", s,
              (long long)st.sent[PX_TRAFFIC_ALLREDUCE]);
        CHECK(!memcmp(g, out, sizeof g), "local step %d: the wait did not give the own gradient",
              s);
        for (int64_t j = 0; j < DN; j++) dense_w[j] -= 0.25f * out[j];
        px_comm_step_end();
        px_comm_get_stats(&st);
        /* the ring of DN floats in fp32 (transport/stats.c): rank r sends
         * 4 (2n - |c_{r+1}| - |c_{r+2}|) bytes */
        int64_t want = 0;
        if (s == 2 && size > 1)
            want = 4 * (2 * DN - chunk(DN, size, rank + 1) - chunk(DN, size, rank + 2));
        CHECK(st.sent[PX_TRAFFIC_ALLREDUCE] == want, "step %d sent %lld allreduce bytes, not %lld",
              s, (long long)st.sent[PX_TRAFFIC_ALLREDUCE], (long long)want);
    }
    /* The mean of the local models: every update is exact (eighths). */
    int bad = 0;
    for (int64_t j = 0; j < DN; j++) {
        double sum = 0;
        for (int r = 0; r < size; r++)
            for (int s = 0; s < 3; s++) sum += local_grad(r, s, j);
        double want = (float)(j % 11) / 4.0 - 0.25 * sum / size;
        if (fabs(dense_w[j] - want) > 1e-5 * (1 + fabs(want)) && bad++ < 3)
            CHECK(0, "averaged w[%lld] = %.9g, the mean of the local models %.9g", (long long)j,
                  dense_w[j], want);
    }
    CHECK(bad == 0, "%d averaged weights are off", bad);
    int r = px_comm_first_mismatch(mt_hash(dense_w, sizeof dense_w));
    CHECK(r < 0, "after the average rank %d holds other weights than rank 0", r);

    /* A checkpoint sync point after a local step averages the optimizer
     * state too (a momentum slot made different on every rank). */
    px_train.t = 4;
    px_comm_step_begin(3);
    for (int64_t j = 0; j < DN; j++) g[j] = local_grad(rank, 3, j);
    int64_t p[3] = {0, 1, 4 * DN};
    px_k_allreduce_start((void *[]){g}, p);
    px_k_allreduce_wait((void *[]){g, out}, p);
    px_comm_step_end();
    for (int64_t j = 0; j < DN; j++) dense_m[j] = (float)(rank + 1) * (float)(j % 3);
    px_comm_sync_point(PX_SYNC_POINT_CHECKPOINT);
    for (int64_t j = 0; j < DN; j++) {
        float want = (float)(size + 1) / 2.0f * (float)(j % 3);
        if (dense_m[j] != want && bad++ < 3)
            CHECK(0, "averaged momentum [%lld] = %.9g, not %.9g", (long long)j, dense_m[j], want);
    }
    r = px_comm_first_mismatch(mt_hash(dense_w, sizeof dense_w) ^ mt_hash(dense_m, sizeof dense_m));
    CHECK(r < 0, "after the checkpoint rank %d holds another state than rank 0", r);
}

/* ---- the parameter server: 16-bit rows, stale rows ---- */
enum { PR = 12, PD = 3 };
static float table_data[PR * PD];

static void pull_all_rows(float *cache, int64_t *remap) {
    int64_t idx[PR];
    for (int i = 0; i < PR; i++) idx[i] = i;
    int64_t p[4] = {1, 7, PR, PD};
    px_k_ps_pull_rows((void *[]){idx, cache, remap}, p);
}

static void push_all_rows(int s) {
    int64_t idx[PR], count = PR;
    float rows[PR * PD];
    for (int i = 0; i < PR; i++) {
        idx[i] = i;
        for (int k = 0; k < PD; k++) rows[i * PD + k] = (float)(s + 1 + k);
    }
    int64_t p[3] = {1, PR, PD};
    px_k_ps_push((void *[]){NULL, idx, rows, &count}, p);
}

/* The master (gathered to rank 0) and rank 0's pulled rows, in row order. */
static void master_and_pulled(float *master, float *pulled, const float *cache,
                              const int64_t *remap) {
    px_comm_var_gather(1, master, (float *const[PX_OPTIM_MAX_SLOTS]){NULL, NULL});
    for (int i = 0; i < PR; i++) memcpy(pulled + i * PD, cache + remap[i] * PD, sizeof(float) * PD);
}

static int own_row(int64_t row) {
    px_row_block b;
    for (int64_t q = 0; q < px_comm_var_n_parts(1); q++) {
        px_comm_var_part(1, q, &b);
        if (row >= b.row0 && row < b.row0 + b.rows) return b.owner == px_comm_rank();
    }
    return 0;
}

static void check_ps(px_program_desc *prog) {
    int rank = px_comm_rank();
    float cache[PR * PD], master[PR * PD], pulled[PR * PD], first[PR * PD];
    int64_t remap[PR];
    for (int i = 0; i < PR * PD; i++) table_data[i] = 1.0f / 3.0f + (float)i / 7.0f;

    /* 16-bit rows: a shard's master rounded, the own rows as they are */
    px_comm_opts o = {
        .ranks_per_node = 1, .local_aggregation = 1, .stall_timeout_s = 30, .wire = PX_WIRE_BF16};
    px_comm_setup(prog, &o);
    px_comm_step_begin(0);
    pull_all_rows(cache, remap);
    master_and_pulled(master, pulled, cache, remap);
    if (rank == 0)
        for (int i = 0; i < PR; i++) {
            float want[PD];
            memcpy(want, master + i * PD, sizeof want);
            if (!own_row(i)) comm_wire_round(PX_WIRE_BF16, want, PD);
            CHECK(!memcmp(want, pulled + i * PD, sizeof want),
                  "bf16 pull of row %d (%s shard): %.9g, expected %.9g", i,
                  own_row(i) ? "own" : "another", pulled[i * PD], want[0]);
        }
    px_comm_step_end();

    /* staleness 2: rows of step 0 read again in steps 1 and 2 */
    o.wire = PX_WIRE_FP32;
    o.staleness = 2;
    for (int i = 0; i < PR * PD; i++) table_data[i] = 1.0f / 3.0f + (float)i / 7.0f;
    px_comm_setup(prog, &o);
    px_train.t = 1;
    for (int s = 0; s < 4; s++) {
        px_train.t = s + 1;
        px_comm_step_begin(s);
        px_comm_stats_reset();
        pull_all_rows(cache, remap);
        px_comm_stats st;
        px_comm_get_stats(&st);
        int64_t row_bytes = st.received[PX_TRAFFIC_PS_PULL] -
                            (px_comm_size() > 1 ? 8 * (int64_t)(px_comm_size() - 1) : 0);
        master_and_pulled(master, pulled, cache, remap);
        if (s == 0) memcpy(first, pulled, sizeof first);
        if (rank == 0) {
            if (s == 1 || s == 2) {
                CHECK(!memcmp(pulled, first, sizeof first),
                      "staleness 2, step %d: the rows are not those of step 0", s);
                CHECK(memcmp(pulled, master, sizeof first),
                      "staleness 2, step %d: the master did not change (the test is void)", s);
                CHECK(row_bytes == 0, "staleness 2, step %d: %lld bytes of rows pulled", s,
                      (long long)row_bytes);
            } else {
                CHECK(!memcmp(pulled, master, sizeof first),
                      "staleness 2, step %d: the rows are not the master's", s);
            }
        }
        push_all_rows(s);
        px_comm_step_end();
    }
}

int main(int argc, char **argv) {
    px_comm_init(&argc, &argv);
    static px_program_desc prog;
    static px_var_desc vars[2];
    static int64_t dense_dims[1] = {DN}, table_dims[2];
    vars[0] = (px_var_desc){
        "w", 1, 1, dense_dims, dense_w, 4 * DN, PX_VAR_DENSE, PX_SYNC_ALLREDUCE, 0, -1, 1, 0};
    vars[1] = mt_var("table", table_dims, PR, PD, table_data, PX_SYNC_PS, 0);
    prog.abi = PX_PROGRAM_ABI;
    prog.kind = PX_PROGRAM_TRAIN;
    prog.optim = &sgd;
    prog.vars = vars;
    px_train.prog = &prog;

    /* buckets of check_wire_allreduce; one variable, no PS */
    for (int b = 0; b < NB; b++) bucket_bytes[b] = 4 * BUCKET_FLOATS[b];
    prog.n_buckets = NB;
    prog.bucket_bytes = bucket_bytes;
    prog.n_vars = 0;
    check_wire_allreduce(&prog);

    static int64_t one_float[1] = {4};
    prog.n_buckets = 1;
    prog.bucket_bytes = one_float;
    check_error_feedback(&prog);

    /* the dense replica and its momentum slot */
    static px_optim_desc momentum = {.kind = PX_OPTIM_MOMENTUM, .lr = 0.25, .momentum = 0.5};
    static int64_t dense_bucket[1] = {4 * DN};
    prog.optim = &momentum;
    prog.n_vars = 1;
    prog.n_buckets = 1;
    prog.bucket_bytes = dense_bucket;
    slot_table[0] = dense_m;
    px_train.slots = slot_table;
    check_local_sgd(&prog);

    /* the table on the parameter servers */
    prog.optim = &sgd;
    prog.n_vars = 2;
    prog.n_buckets = 0;
    px_train.slots = NULL;
    check_ps(&prog);
    return mt_finish("mpi_relaxed");
}
