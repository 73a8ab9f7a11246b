/* Optimizer math (runtime/optim/optim.c) and the update kernels
 * (runtime/optim/kernels_update.c) against torch.optim trajectories written
 * by tests/tools/optim_reference.py into tests/data/optim/ (see there for
 * what each case is), plus the properties of the row update: untouched rows
 * keep their bits, and touching every row is the dense update. */
#include "px_kernel.h"
#include "px_train.h"

#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define REL_TOL 1e-6

/* ---------- a minimal JSON reader (the reference files only) ----------
 * Values are pointers into the text; objects and arrays are walked by
 * skipping values. */

static const char *ws(const char *p) {
    while (*p == ' ' || *p == '\n' || *p == '\t' || *p == '\r') p++;
    return p;
}

static const char *skip_value(const char *p) {
    p = ws(p);
    if (*p == '"') {
        for (p++; *p != '"'; p++) {
            cr_assert(*p, "unterminated string in reference file");
            if (*p == '\\') p++;
        }
        return p + 1;
    }
    if (*p == '{' || *p == '[') {
        char close = *p == '{' ? '}' : ']';
        p = ws(p + 1);
        while (*p != close) {
            if (close == '}') p = ws(skip_value(p)) + 1; /* key and ':' */
            p = ws(skip_value(p));
            if (*p == ',') p = ws(p + 1);
            cr_assert(*p, "unterminated %c in reference file", close);
        }
        return p + 1;
    }
    while (*p && !strchr(",}] \n\t\r", *p)) p++; /* number, true, false, null */
    return p;
}

/* The value of key in the object at obj; fails the test when absent. */
/* The value of key in obj, or NULL when missing. */
static const char *find(const char *obj, const char *key) {
    const char *p = ws(obj);
    cr_assert_eq(*p, '{');
    p = ws(p + 1);
    size_t n = strlen(key);
    while (*p == '"') {
        int match = strncmp(p + 1, key, n) == 0 && p[1 + n] == '"';
        p = ws(ws(skip_value(p)) + 1);
        if (match) return p;
        p = ws(skip_value(p));
        if (*p == ',') p = ws(p + 1);
    }
    return NULL;
}

static const char *get(const char *obj, const char *key) {
    const char *v = find(obj, key);
    cr_assert_not_null(v, "key '%s' missing in reference file", key);
    return v;
}

static int arr_len(const char *arr) {
    const char *p = ws(arr);
    cr_assert_eq(*p, '[');
    p = ws(p + 1);
    int n = 0;
    while (*p != ']') {
        p = ws(skip_value(p));
        n++;
        if (*p == ',') p = ws(p + 1);
    }
    return n;
}

static const char *arr_at(const char *arr, int i) {
    const char *p = ws(ws(arr) + 1);
    for (int k = 0; k < i; k++) {
        p = ws(skip_value(p));
        cr_assert_eq(*p, ',');
        p = ws(p + 1);
    }
    return p;
}

static double num(const char *v) {
    char *end;
    double d = strtod(v, &end);
    cr_assert(end != v, "number expected in reference file");
    return d;
}

static int is_str(const char *v, const char *s) {
    size_t n = strlen(s);
    return *v == '"' && strncmp(v + 1, s, n) == 0 && v[1 + n] == '"';
}

/* A float32 array: 8 hex digits of IEEE bits per value. */
static void hexfloats(const char *v, float *out, int64_t n) {
    cr_assert_eq(*v, '"');
    v++;
    for (int64_t i = 0; i < n; i++) {
        char word[9] = {0};
        memcpy(word, v + 8 * i, 8);
        cr_assert(strlen(word) == 8 && strspn(word, "0123456789abcdef") == 8,
                  "bad float bits at %lld", (long long)i);
        uint32_t bits = (uint32_t)strtoul(word, NULL, 16);
        memcpy(&out[i], &bits, sizeof bits);
    }
    cr_assert_eq(v[8 * n], '"', "float array longer than %lld values", (long long)n);
}

/* ---------- reference cases ---------- */

typedef struct ref_case {
    char name[64];
    char *text;
    const char *root, *steps;
    px_optim_desc o;
    int rows_mode, n_slots, n_steps;
    int64_t n_rows, dim, n;
} ref_case;

static int64_t optim_kind(const char *v) {
    if (is_str(v, "sgd")) return PX_OPTIM_SGD;
    if (is_str(v, "momentum")) return PX_OPTIM_MOMENTUM;
    if (is_str(v, "adam")) return PX_OPTIM_ADAM;
    if (is_str(v, "adagrad")) return PX_OPTIM_ADAGRAD;
    if (is_str(v, "adamw")) return PX_OPTIM_ADAMW;
    if (is_str(v, "rmsprop")) return PX_OPTIM_RMSPROP;
    cr_assert_fail("unknown optimizer kind %.20s", v);
    return -1;
}

static void load_case(ref_case *c, const char *name) {
    char path[512];
    snprintf(path, sizeof path, "%s/tests/data/optim/%s.json", PX_SOURCE_DIR, name);
    FILE *f = fopen(path, "rb");
    cr_assert_not_null(f, "cannot open %s (regenerate with tests/tools/optim_reference.py)", path);
    fseek(f, 0, SEEK_END);
    long size = ftell(f);
    fseek(f, 0, SEEK_SET);
    *c = (ref_case){0};
    snprintf(c->name, sizeof c->name, "%s", name);
    c->text = calloc((size_t)size + 1, 1);
    cr_assert_eq(fread(c->text, 1, (size_t)size, f), (size_t)size);
    fclose(f);
    c->root = c->text;
    c->o = (px_optim_desc){.kind = optim_kind(get(c->root, "kind")),
                           .lr = num(get(c->root, "lr")),
                           .momentum = num(get(c->root, "momentum")),
                           .nesterov = (int64_t)num(get(c->root, "nesterov")),
                           .beta1 = num(get(c->root, "beta1")),
                           .beta2 = num(get(c->root, "beta2")),
                           .epsilon = num(get(c->root, "epsilon")),
                           .weight_decay = num(get(c->root, "weight_decay"))};
    const char *alpha = find(c->root, "alpha"); /* RMSprop cases */
    if (alpha) c->o.alpha = num(alpha);
    c->rows_mode = is_str(get(c->root, "mode"), "rows");
    c->n_rows = (int64_t)num(get(c->root, "n_rows"));
    c->dim = (int64_t)num(get(c->root, "dim"));
    c->n = c->n_rows * c->dim;
    c->n_slots = px_optim_n_slots(c->o.kind);
    c->steps = get(c->root, "steps");
    c->n_steps = arr_len(c->steps);
    cr_assert_gt(c->n_steps, 0);
}

/* Step s: its gradient (n_idx rows of idx in rows mode, else the whole
 * variable) and the expected variable and slots after it. */
typedef struct ref_step {
    int64_t t, n_idx;
    int64_t idx[64];
    float *g, *w, *slots[PX_OPTIM_MAX_SLOTS];
} ref_step;

static void load_step(const ref_case *c, int s, ref_step *st) {
    const char *o = arr_at(c->steps, s);
    st->t = (int64_t)num(get(o, "t"));
    st->n_idx = c->n_rows;
    if (c->rows_mode) {
        const char *idx = get(o, "idx");
        st->n_idx = arr_len(idx);
        cr_assert_leq(st->n_idx, 64);
        for (int i = 0; i < st->n_idx; i++) st->idx[i] = (int64_t)num(arr_at(idx, i));
    }
    st->g = calloc((size_t)(st->n_idx * c->dim), sizeof(float));
    hexfloats(get(o, "g"), st->g, st->n_idx * c->dim);
    st->w = calloc((size_t)c->n, sizeof(float));
    hexfloats(get(o, "w"), st->w, c->n);
    const char *slots = get(o, "slots");
    cr_assert_eq(arr_len(slots), c->n_slots, "%s: slot count", c->name);
    for (int k = 0; k < PX_OPTIM_MAX_SLOTS; k++) {
        st->slots[k] = NULL;
        if (k >= c->n_slots) continue;
        st->slots[k] = calloc((size_t)c->n, sizeof(float));
        hexfloats(arr_at(slots, k), st->slots[k], c->n);
    }
}

static void free_step(ref_step *st) {
    free(st->g);
    free(st->w);
    for (int k = 0; k < PX_OPTIM_MAX_SLOTS; k++) free(st->slots[k]);
}

/* The runtime's state of one case: variable and zeroed slots. */
typedef struct state {
    float *w, *slots[PX_OPTIM_MAX_SLOTS];
} state;

static void state_init(state *s, const ref_case *c) {
    s->w = calloc((size_t)c->n, sizeof(float));
    hexfloats(get(c->root, "w0"), s->w, c->n);
    for (int k = 0; k < PX_OPTIM_MAX_SLOTS; k++)
        s->slots[k] = k < c->n_slots ? calloc((size_t)c->n, sizeof(float)) : NULL;
}

static void state_free(state *s) {
    free(s->w);
    for (int k = 0; k < PX_OPTIM_MAX_SLOTS; k++) free(s->slots[k]);
}

/* ---------- comparison, with the worst error seen over the run ----------
 * Our arithmetic is torch's, operation for operation, so the values must be
 * the same bits, except for the rows of Adagrad: torch's sparse Adagrad
 * rounds in another order than its dense one, which px_optim_rows follows
 * (so that touching every row is the dense update). There the values must
 * agree to REL_TOL relative to the larger of the value and the value before
 * the step: an update that nearly cancels the old value (x - lr*g/std close
 * to 0) magnifies a one-ulp difference of its operands. */

static int exact_case(const ref_case *c) {
    return !(c->rows_mode && c->o.kind == PX_OPTIM_ADAGRAD);
}

static double max_rel_err;
static int64_t max_ulps;

static int64_t ulps(float a, float b) {
    int32_t ia, ib;
    memcpy(&ia, &a, 4);
    memcpy(&ib, &b, 4);
    if ((ia < 0) != (ib < 0)) return a == b ? 0 : INT32_MAX; /* +0 and -0 are equal */
    return llabs((long long)ia - (long long)ib);
}

static void expect_close(const char *what, const ref_case *c, int64_t t, const float *got,
                         const float *want, const float *before, int64_t n) {
    for (int64_t i = 0; i < n; i++) {
        float a = got[i], b = want[i];
        double err = fabs((double)a - (double)b);
        double scale = fmax(fabs((double)b), fabs((double)before[i]));
        if (exact_case(c))
            cr_assert(a == b,
                      "%s: %s after step %lld, element %lld: %.9g, torch %.9g (not the same bits)",
                      c->name, what, (long long)t, (long long)i, a, b);
        cr_assert(a == b || err <= REL_TOL * scale,
                  "%s: %s after step %lld, element %lld: %.9g, torch %.9g (before the step %.9g)",
                  c->name, what, (long long)t, (long long)i, a, b, before[i]);
        if (a != b && err / scale > max_rel_err) max_rel_err = err / scale;
        if (ulps(a, b) > max_ulps) max_ulps = ulps(a, b);
    }
}

static void expect_state(const ref_case *c, const ref_step *st, const state *s,
                         const state *before) {
    expect_close("variable", c, st->t, s->w, st->w, before->w, c->n);
    for (int k = 0; k < c->n_slots; k++) {
        char what[16];
        snprintf(what, sizeof what, "slot %d", k);
        expect_close(what, c, st->t, s->slots[k], st->slots[k], before->slots[k], c->n);
    }
}

static void state_copy(state *to, const state *from, const ref_case *c) {
    memcpy(to->w, from->w, (size_t)c->n * sizeof(float));
    for (int k = 0; k < c->n_slots; k++)
        memcpy(to->slots[k], from->slots[k], (size_t)c->n * sizeof(float));
}

static void report(const char *what) {
    fprintf(stderr, "test_optim %s: max relative error %.3g, max %lld ulp\n", what, max_rel_err,
            (long long)max_ulps);
}

static const char *const dense_cases[] = {
    "dense_sgd",      "dense_sgd_wd",      "dense_momentum", "dense_momentum_wd",
    "dense_nesterov", "dense_nesterov_wd", "dense_adam",     "dense_adam_wd",
    "dense_adagrad",  "dense_adagrad_wd",  "dense_adamw",    "dense_adamw_wd",
    "dense_rmsprop",  "dense_rmsprop_wd",
};
static const char *const rows_cases[] = {
    "rows_sgd",         "rows_sgd_wd",   "rows_momentum", "rows_momentum_wd", "rows_nesterov",
    "rows_nesterov_wd", "rows_adam",     "rows_adam_wd",  "rows_adagrad",     "rows_adagrad_wd",
    "rows_adamw",       "rows_adamw_wd", "rows_rmsprop",  "rows_rmsprop_wd",
};
#define N_CASES(a) ((int)(sizeof a / sizeof *a))

/* How a test applies one step to the runtime state. */
typedef void (*apply_fn)(const ref_case *c, const ref_step *st, state *s);

static void run_cases(const char *const *names, int n_names, apply_fn apply, const char *what) {
    max_rel_err = 0;
    max_ulps = 0;
    for (int i = 0; i < n_names; i++) {
        ref_case c;
        load_case(&c, names[i]);
        state s, before;
        state_init(&s, &c);
        state_init(&before, &c);
        for (int k = 0; k < c.n_steps; k++) {
            ref_step st;
            load_step(&c, k, &st);
            cr_assert_eq(st.t, k + 1);
            state_copy(&before, &s, &c);
            apply(&c, &st, &s);
            expect_state(&c, &st, &s, &before);
            /* the next step starts from torch's state: each step is checked
             * alone, not the accumulated difference of a trajectory */
            state ref = {st.w, {st.slots[0], st.slots[1]}};
            state_copy(&s, &ref, &c);
            free_step(&st);
        }
        state_free(&s);
        state_free(&before);
        free(c.text);
    }
    report(what);
}

/* ---------- the math, called directly ---------- */

static void apply_dense(const ref_case *c, const ref_step *st, state *s) {
    px_optim_dense(&c->o, st->t, s->w, st->g, s->slots, c->n);
}

/* Also checks that the rows outside the row set keep their bits. */
static void apply_rows(const ref_case *c, const ref_step *st, state *s) {
    float *before[1 + PX_OPTIM_MAX_SLOTS] = {0};
    float *now[1 + PX_OPTIM_MAX_SLOTS] = {s->w, s->slots[0], s->slots[1]};
    for (int k = 0; k <= c->n_slots; k++) {
        before[k] = malloc((size_t)c->n * sizeof(float));
        memcpy(before[k], now[k], (size_t)c->n * sizeof(float));
    }
    px_optim_rows(&c->o, st->t, s->w, s->slots, c->dim, st->idx, st->g, st->n_idx);
    for (int64_t r = 0; r < c->n_rows; r++) {
        int touched = 0;
        for (int64_t i = 0; i < st->n_idx; i++) touched |= st->idx[i] == r;
        if (touched) continue;
        for (int k = 0; k <= c->n_slots; k++)
            cr_assert(memcmp(before[k] + r * c->dim, now[k] + r * c->dim,
                             (size_t)c->dim * sizeof(float)) == 0,
                      "%s: untouched row %lld of %s changed at step %lld", c->name, (long long)r,
                      k ? "a slot" : "the variable", (long long)st->t);
    }
    for (int k = 0; k <= c->n_slots; k++) free(before[k]);
}

Test(optim, n_slots) {
    cr_expect_eq(px_optim_n_slots(PX_OPTIM_SGD), 0);
    cr_expect_eq(px_optim_n_slots(PX_OPTIM_MOMENTUM), 1);
    cr_expect_eq(px_optim_n_slots(PX_OPTIM_ADAM), 2);
    cr_expect_eq(px_optim_n_slots(PX_OPTIM_ADAMW), 2);
    cr_expect_eq(px_optim_n_slots(PX_OPTIM_RMSPROP), 1);
    cr_expect_eq(px_optim_n_slots(PX_OPTIM_ADAGRAD), 1);
    cr_expect_lt(px_optim_n_slots(99), 0);
}

Test(optim, dense_matches_torch) {
    run_cases(dense_cases, N_CASES(dense_cases), apply_dense, "px_optim_dense");
}

Test(optim, rows_match_torch_and_keep_untouched_rows) {
    run_cases(rows_cases, N_CASES(rows_cases), apply_rows, "px_optim_rows");
}

/* ---------- the kernels, through the registry ---------- */

/* A training program of two variables; the cases' variable is number 1, so
 * the kernels must find its slots at px_train.slots[1 * PX_OPTIM_MAX_SLOTS]. */
enum { VAR = 1 };
static int64_t var_dims[2];
static px_var_desc vars[2];
static px_program_desc prog;
static float *slot_table[2 * PX_OPTIM_MAX_SLOTS];

static void use_program(const ref_case *c, int64_t t, state *s) {
    static const int64_t other_dims[1] = {3};
    var_dims[0] = c->n_rows;
    var_dims[1] = c->dim;
    vars[0] = (px_var_desc){.name = "other", .dtype = 1, .rank = 1, .dims = other_dims};
    vars[1] = (px_var_desc){.name = "table", .dtype = 1, .rank = 2, .dims = var_dims};
    prog = (px_program_desc){
        .abi = PX_PROGRAM_ABI, .kind = PX_PROGRAM_TRAIN, .n_vars = 2, .vars = vars, .optim = &c->o};
    memset(slot_table, 0, sizeof slot_table);
    for (int k = 0; k < PX_OPTIM_MAX_SLOTS; k++)
        slot_table[VAR * PX_OPTIM_MAX_SLOTS + k] = s ? s->slots[k] : NULL;
    px_train = (px_train_ctx){.prog = &prog, .t = t, .slots = slot_table};
}

static void call(const char *name, void *const *buf, const int64_t *p) {
    px_kernel_fn fn = px_kernel_find(name);
    cr_assert_not_null(fn, "kernel %s is not registered", name);
    fn(buf, p);
}

static void apply_k_update(const ref_case *c, const ref_step *st, state *s) {
    use_program(c, st->t, s);
    void *buf[2] = {s->w, st->g};
    int64_t p[2] = {VAR, c->n};
    call("px_k_update", buf, p);
}

/* The row set padded to a larger capacity with rows the kernel must ignore. */
enum { PAD = 3 };
typedef struct row_set {
    int64_t capacity, count;
    int64_t *idx;
    float *rows;
} row_set;

static row_set padded_rows(const ref_case *c, const ref_step *st) {
    row_set r = {.capacity = st->n_idx + PAD, .count = st->n_idx};
    r.idx = malloc((size_t)r.capacity * sizeof *r.idx);
    r.rows = malloc((size_t)(r.capacity * c->dim) * sizeof *r.rows);
    memcpy(r.idx, st->idx, (size_t)st->n_idx * sizeof *r.idx);
    memcpy(r.rows, st->g, (size_t)(st->n_idx * c->dim) * sizeof *r.rows);
    for (int64_t i = st->n_idx; i < r.capacity; i++) {
        r.idx[i] = c->n_rows - 1; /* a row the references never touch */
        for (int64_t j = 0; j < c->dim; j++) r.rows[i * c->dim + j] = 1e3f;
    }
    return r;
}

static void apply_k_row_update(const ref_case *c, const ref_step *st, state *s) {
    use_program(c, st->t, s);
    row_set r = padded_rows(c, st);
    void *buf[4] = {s->w, r.idx, r.rows, &r.count};
    int64_t p[3] = {VAR, r.capacity, c->dim};
    call("px_k_row_update", buf, p);
    free(r.idx);
    free(r.rows);
}

/* px_k_rows_to_dense then px_k_masked_update (the allreduce-mode path). */
static void apply_k_masked(const ref_case *c, const ref_step *st, state *s) {
    use_program(c, st->t, s);
    row_set r = padded_rows(c, st);
    float *dense = malloc((size_t)c->n * sizeof *dense);
    float *mask = malloc((size_t)c->n_rows * sizeof *mask);
    for (int64_t i = 0; i < c->n; i++) dense[i] = NAN; /* the kernel must clear them */
    void *buf[5] = {r.idx, r.rows, &r.count, dense, mask};
    int64_t p[3] = {r.capacity, c->dim, c->n_rows};
    call("px_k_rows_to_dense", buf, p);
    for (int64_t row = 0; row < c->n_rows; row++) {
        int touched = 0;
        for (int64_t i = 0; i < st->n_idx; i++) touched |= st->idx[i] == row;
        cr_assert_eq(mask[row], touched ? 1.0f : 0.0f, "%s: mask of row %lld", c->name,
                     (long long)row);
        for (int64_t j = 0; j < c->dim && !touched; j++)
            cr_assert_eq(dense[row * c->dim + j], 0.0f);
    }
    void *ubuf[3] = {s->w, dense, mask};
    int64_t up[3] = {VAR, c->n_rows, c->dim};
    call("px_k_masked_update", ubuf, up);
    free(dense);
    free(mask);
    free(r.idx);
    free(r.rows);
}

Test(optim, kernel_update_matches_torch) {
    run_cases(dense_cases, N_CASES(dense_cases), apply_k_update, "px_k_update");
}

Test(optim, kernel_row_update_matches_torch) {
    run_cases(rows_cases, N_CASES(rows_cases), apply_k_row_update, "px_k_row_update");
}

Test(optim, kernel_rows_to_dense_and_masked_update_match_torch) {
    run_cases(rows_cases, N_CASES(rows_cases), apply_k_masked,
              "px_k_rows_to_dense + px_k_masked_update");
}

/* ---------- row update of every row == dense update ---------- */

static uint64_t rng = 0x9e3779b97f4a7c15ull;
static float urand(void) { /* uniform in [-1, 1) */
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (float)((double)(rng >> 11) / 9007199254740992.0 * 2 - 1);
}

/* Every row, in a scrambled order, for several steps; n_rows*dim is not a
 * multiple of any vector width. */
static void expect_rows_equal_dense(px_optim_desc o) {
    enum { ROWS = 37, DIM = 29, N = ROWS * DIM, STEPS = 4 };
    static float wd[N], wr[N], sd[2][N], sr[2][N], g[N], gr[N];
    int64_t order[ROWS];
    for (int i = 0; i < N; i++) wd[i] = wr[i] = urand();
    memset(sd, 0, sizeof sd);
    memset(sr, 0, sizeof sr);
    for (int i = 0; i < ROWS; i++) order[i] = (i * 17) % ROWS;
    float *slots_d[PX_OPTIM_MAX_SLOTS] = {sd[0], sd[1]},
          *slots_r[PX_OPTIM_MAX_SLOTS] = {sr[0], sr[1]};
    for (int64_t t = 1; t <= STEPS; t++) {
        for (int i = 0; i < N; i++) g[i] = urand() * 0.5f;
        for (int i = 0; i < ROWS; i++) memcpy(gr + i * DIM, g + order[i] * DIM, DIM * sizeof *g);
        px_optim_dense(&o, t, wd, g, slots_d, N);
        px_optim_rows(&o, t, wr, slots_r, DIM, order, gr, ROWS);
        cr_assert(memcmp(wd, wr, sizeof wd) == 0, "kind %lld wd %g: variable differs at step %lld",
                  (long long)o.kind, o.weight_decay, (long long)t);
        cr_assert(memcmp(sd, sr, sizeof sd) == 0, "kind %lld wd %g: slots differ at step %lld",
                  (long long)o.kind, o.weight_decay, (long long)t);
    }
}

Test(optim, rows_of_every_row_equal_dense) {
    for (int wd = 0; wd < 2; wd++) {
        double decay = wd ? 0.01 : 0;
        expect_rows_equal_dense(
            (px_optim_desc){.kind = PX_OPTIM_SGD, .lr = 0.05, .weight_decay = decay});
        expect_rows_equal_dense((px_optim_desc){
            .kind = PX_OPTIM_ADAGRAD, .lr = 0.05, .epsilon = 1e-10, .weight_decay = decay});
        /* lazy momentum is the dense one when nothing is skipped */
        for (int nesterov = 0; nesterov < 2; nesterov++)
            expect_rows_equal_dense((px_optim_desc){.kind = PX_OPTIM_MOMENTUM,
                                                    .lr = 0.05,
                                                    .momentum = 0.9,
                                                    .nesterov = nesterov,
                                                    .weight_decay = decay});
    }
}

/* ---------- data-dependent failures end the run ---------- */

static void row_update_with_index(int64_t bad) {
    static px_optim_desc o = {.kind = PX_OPTIM_SGD, .lr = 0.1};
    static ref_case c;
    c = (ref_case){.o = o, .n_rows = 4, .dim = 2, .n = 8};
    use_program(&c, 1, NULL);
    float w[8] = {0}, rows[4] = {1, 2, 3, 4};
    int64_t idx[2] = {1, bad}, count = 2;
    void *buf[4] = {w, idx, rows, &count};
    int64_t p[3] = {VAR, 2, 2};
    call("px_k_row_update", buf, p);
}

Test(optim, row_update_rejects_index_past_the_end, .exit_code = 1) {
    row_update_with_index(4);
}

Test(optim, row_update_rejects_negative_index, .exit_code = 1) {
    row_update_with_index(-1);
}

Test(optim, row_update_rejects_count_over_capacity, .exit_code = 1) {
    static px_optim_desc o = {.kind = PX_OPTIM_SGD, .lr = 0.1};
    static ref_case c;
    c = (ref_case){.o = o, .n_rows = 4, .dim = 2, .n = 8};
    use_program(&c, 1, NULL);
    float w[8] = {0}, rows[4] = {0};
    int64_t idx[2] = {0, 1}, count = 3;
    void *buf[4] = {w, idx, rows, &count};
    int64_t p[3] = {VAR, 2, 2};
    call("px_k_row_update", buf, p);
}

Test(optim, rows_to_dense_rejects_index_out_of_range, .exit_code = 1) {
    float rows[2] = {1, 2}, dense[4], mask[2];
    int64_t idx[1] = {2}, count = 1;
    void *buf[5] = {idx, rows, &count, dense, mask};
    int64_t p[3] = {1, 2, 2};
    call("px_k_rows_to_dense", buf, p);
}

Test(optim, update_without_slots_fails, .exit_code = 1) {
    static px_optim_desc o = {.kind = PX_OPTIM_ADAM, .lr = 0.1, .beta1 = 0.9, .beta2 = 0.999};
    static ref_case c;
    c = (ref_case){.o = o, .n_rows = 4, .dim = 2, .n = 8};
    use_program(&c, 1, NULL);
    float w[8] = {0}, g[8] = {0};
    void *buf[2] = {w, g};
    int64_t p[2] = {VAR, 8};
    call("px_k_update", buf, p);
}
