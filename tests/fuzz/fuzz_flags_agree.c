/* libFuzzer harness: the ranks' flag comparison (runtime/program/
 * flags_agree.c) on two fuzzed command lines, one per rank. Two threads
 * play ranks 0 and 1 of a job; the collectives flags_agree.c makes
 * (px_comm_first_mismatch, px_comm_bcast_u64) meet at a barrier here, as
 * MPI's would. Both ranks must return the same status; command lines that
 * are the same must agree (the status of parsing them), and when rank 1's
 * differs from rank 0's in a flag and both parse, rank 1 alone prints one
 * message naming the flag.
 *
 * Input: rank 0's arguments, a 0xff byte, rank 1's arguments; arguments are
 * separated by NUL bytes (at most 24 each). */
#include "flags_agree.h"

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { MAX_ARGS = 24 };

/* The program the flags are for: one input, one output (its loss). */
static int64_t dims[1] = {4};
static px_io_desc io[2] = {{.name = "x", .dtype = 1, .rank = 1, .dims = dims, .nbytes = 16},
                           {.name = "loss", .dtype = 1, .rank = 0, .nbytes = 4}};
static const px_optim_desc optim = {.kind = PX_OPTIM_SGD, .lr = 0.1};
static const px_program_desc prog = {.abi = PX_PROGRAM_ABI,
                                     .n_inputs = 1,
                                     .inputs = io,
                                     .n_outputs = 1,
                                     .outputs = io + 1,
                                     .kind = PX_PROGRAM_TRAIN,
                                     .loss_output = 0,
                                     .batch = 4,
                                     .optim = &optim};

/* ---- two ranks as threads: the collectives flags_agree.c uses ---- */
static pthread_barrier_t meet;
static _Thread_local int my_rank;
static uint64_t slot[2];

int px_comm_rank(void) {
    return my_rank;
}
int px_comm_size(void) {
    return 2;
}
int px_comm_first_mismatch(uint64_t v) {
    slot[my_rank] = v;
    pthread_barrier_wait(&meet);
    int r = slot[1] != slot[0] ? 1 : -1;
    pthread_barrier_wait(&meet);
    return r;
}
uint64_t px_comm_bcast_u64(uint64_t v) {
    if (my_rank == 0) slot[0] = v;
    pthread_barrier_wait(&meet);
    uint64_t r = slot[0];
    pthread_barrier_wait(&meet);
    return r;
}
/* The collectives of --eval-metrics (eval_metrics.c, linked for its flag
 * parser) and its AUC over the ranks (auc.c): never reached while flags
 * are parsed and compared. */
double px_auc_over_ranks(const float *scores, const float *labels, int64_t n) {
    (void)scores, (void)labels, (void)n;
    abort();
}
void px_comm_allgather_doubles(const double *mine, int n, double *all) {
    (void)mine, (void)n, (void)all;
    abort();
}
void px_comm_gather_bytes(const void *mine, int64_t n, char **out, int64_t *lens) {
    (void)mine, (void)n, (void)out, (void)lens;
    abort();
}
/* checkpoint.c's identity of the program: one program here */
uint64_t px_model_identity(const px_program_desc *p) {
    (void)p;
    return 42;
}

typedef struct rank_run {
    int rank, argc;
    char *argv[MAX_ARGS + 2];
    int parse_rc, rc;
    char *msg; /* what the rank printed */
    size_t msg_len;
} rank_run;

static void *run_rank(void *arg) {
    rank_run *r = arg;
    my_rank = r->rank;
    FILE *err = open_memstream(&r->msg, &r->msg_len);
    if (!err) abort();
    px_train_flags f;
    r->parse_rc = px_train_flags_parse(r->argc, r->argv, &f, NULL);
    r->rc = px_train_flags_agree(r->parse_rc, &f, &prog, r->argc, r->argv, err);
    px_train_flags_free(&f);
    fclose(err);
    return NULL;
}

/* Splits bytes [p, end) at NULs into r's arguments (after the program's
 * name); the strings live in buf. */
static void split(const uint8_t *p, const uint8_t *end, char *buf, rank_run *r) {
    r->argv[0] = "program";
    r->argc = 1;
    memcpy(buf, p, (size_t)(end - p));
    buf[end - p] = '\0';
    char *s = buf, *stop = buf + (end - p);
    while (s <= stop && r->argc <= MAX_ARGS) {
        r->argv[r->argc++] = s;
        s += strlen(s) + 1;
    }
    r->argv[r->argc] = NULL;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size > 4096) return 0;
    const uint8_t *sep = memchr(data, 0xff, size);
    if (!sep) return 0;
    static char buf[2][4097];
    rank_run r[2];
    memset(r, 0, sizeof r);
    r[0].rank = 0;
    r[1].rank = 1;
    split(data, sep, buf[0], &r[0]);
    split(sep + 1, data + size, buf[1], &r[1]);
    pthread_barrier_init(&meet, NULL, 2);
    pthread_t t;
    if (pthread_create(&t, NULL, run_rank, &r[1])) abort();
    run_rank(&r[0]);
    pthread_join(t, NULL);
    pthread_barrier_destroy(&meet);
    int same = r[0].argc == r[1].argc;
    for (int i = 1; same && i < r[0].argc; i++) same = !strcmp(r[0].argv[i], r[1].argv[i]);
    if (r[0].rc != r[1].rc) abort();               /* every rank ends the same way */
    if (same && r[0].rc != r[0].parse_rc) abort(); /* the same flags agree */
    if (r[0].rc == PX_FLAGS_BAD && r[0].parse_rc == PX_FLAGS_OK && r[1].parse_rc == PX_FLAGS_OK) {
        /* a difference found: rank 1 names it, rank 0 says nothing */
        if (r[0].msg_len != 0 || !strstr(r[1].msg, "error: the ranks were given different "))
            abort();
    }
    free(r[0].msg);
    free(r[1].msg);
    return 0;
}
