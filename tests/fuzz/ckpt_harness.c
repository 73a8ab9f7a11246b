/* The checkpoint fuzz harnesses (ckpt_harness.h) against the program of
 * tests/runtime's px_fake_train_adam (D=4, V=8: w [4] and bias [1]
 * replicated, emb [8] on the parameter server in 2 partitions; Adam), whose
 * real checkpoint tests/fuzz/ckpt_base holds (build.sh embeds it as
 * ckpt_base.inc). Each input is written as one file of that checkpoint in a
 * private folder, the other file being the real one, and read back.
 *
 * A fuzzed manifest is read twice when its checksum does not match: as is
 * (the refusal), and with the checksum set right, so mutations reach the
 * parser and the checks behind the checksum instead of all stopping there.
 *
 * The reader ends a bad checkpoint with px_rt_fail; the abort hook jumps
 * back here instead of exiting (the pieces it leaves open are closed by fd
 * below, the memory it leaves is freed by ckpt_alloc.c's tracking). The MPI
 * side is stubbed in ckpt_stubs.c. */
#include "ckpt_harness.h"

#include "checkpoint.h"
#include "ckpt_layout.h"
#include "ckpt_stubs.h"
#include "hash64.h"
#include "px_train.h"

#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ckpt_base.inc" /* base_manifest, base_piece, base_piece_name */

extern void (*px_rt_abort_hook)(int code);
void px_fuzz_track_begin(void);
void px_fuzz_track_end(void);

static float w[4], bias[1];
static const int64_t w_dims[] = {4}, bias_dims[] = {1}, emb_dims[] = {8};
static px_var_desc vars[] = {
    {"w", 1, 1, w_dims, w, sizeof w, PX_VAR_DENSE, PX_SYNC_ALLREDUCE, 0, -1, 1},
    {"bias", 1, 1, bias_dims, bias, sizeof bias, PX_VAR_DENSE, PX_SYNC_ALLREDUCE, 0, -1, 1},
    /* a parameter-server table: no local copy, its rows are the stubs' */
    {"emb", 1, 1, emb_dims, NULL, 8 * sizeof(float), PX_VAR_SPARSE, PX_SYNC_PS, 2, -1, 0},
};
static const px_optim_desc optim = {
    .kind = PX_OPTIM_ADAM, .lr = 0.05, .beta1 = 0.9, .beta2 = 0.999, .epsilon = 1e-8};
static const px_program_desc prog = {.abi = PX_PROGRAM_ABI,
                                     .model = "fake_linear.onnx",
                                     .kind = PX_PROGRAM_TRAIN,
                                     .batch = 4,
                                     .n_vars = 3,
                                     .vars = vars,
                                     .optim = &optim,
                                     .comm_mode = PX_COMM_MODE_HYBRID};

static enum px_fuzz_ckpt_target target;
static char dir[64], manifest_path[96], piece_path[96 + sizeof base_piece_name];
static jmp_buf back;
static float slot_store[3][PX_OPTIM_MAX_SLOTS][4];
static float *slot_ptrs[3 * PX_OPTIM_MAX_SLOTS];

static void jump_back(int code) {
    (void)code;
    longjmp(back, 1);
}

static void put_file(const char *path, const void *data, size_t size) {
    FILE *f = fopen(path, "wb");
    if (!f || (size && fwrite(data, 1, size, f) != size) || fclose(f)) {
        perror(path);
        abort();
    }
}

static void remove_folder(void) {
    unlink(manifest_path);
    unlink(piece_path);
    rmdir(dir);
}

void px_fuzz_ckpt_init(enum px_fuzz_ckpt_target t) {
    target = t;
    snprintf(dir, sizeof dir, "/tmp/px_fuzz_ckpt_%d", (int)getpid());
    snprintf(manifest_path, sizeof manifest_path, "%s/ck", dir);
    snprintf(piece_path, sizeof piece_path, "%s/%s", dir, base_piece_name);
    if (mkdir(dir, 0700) && access(dir, W_OK)) {
        perror(dir);
        abort();
    }
    atexit(remove_folder);
    px_rt_abort_hook = jump_back;
    for (int v = 0; v < 3; v++)
        for (int k = 0; k < PX_OPTIM_MAX_SLOTS; k++)
            slot_ptrs[v * PX_OPTIM_MAX_SLOTS + k] =
                vars[v].sync == PX_SYNC_PS ? NULL : slot_store[v][k];
    px_train.slots = slot_ptrs;
    px_fuzz_stub_program(&prog);
    /* The file not fuzzed stays the real one throughout. The base checkpoint
     * must load whole first: a harness whose base the reader refuses (a
     * format or program change) would only ever fuzz that refusal. */
    put_file(piece_path, base_piece, sizeof base_piece);
    put_file(manifest_path, base_manifest, sizeof base_manifest);
    px_ckpt_state st;
    if (setjmp(back) != 0 || (px_checkpoint_read(manifest_path, &prog, &st), st.step != 5)) {
        fprintf(stderr, "fuzz_checkpoint: the base checkpoint tests/fuzz/ckpt_base does not load "
                        "(at step 5) into the harness's program: remake it (ckpt_base/README)\n");
        abort();
    }
}

/* Closes descriptors a jumped-over reader left open on the folder's files. */
static void close_stray_files(void) {
    size_t n_dir = strlen(dir);
    for (int fd = 3; fd < 256; fd++) {
        char link[64], at[256];
        snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
        ssize_t n = readlink(link, at, sizeof at - 1);
        if (n <= 0) continue;
        at[n] = 0;
        if (strncmp(at, dir, n_dir) == 0 && at[n_dir] == '/') close(fd);
    }
}

static void read_checkpoint(void) {
    px_ckpt_state st;
    px_fuzz_track_begin();
    if (setjmp(back) == 0) px_checkpoint_read(manifest_path, &prog, &st);
    px_fuzz_track_end();
    close_stray_files();
}

void px_fuzz_ckpt_run(const uint8_t *data, size_t size) {
    if (target == PX_FUZZ_CKPT_PIECE) {
        put_file(piece_path, data, size);
        read_checkpoint();
        return;
    }
    put_file(manifest_path, data, size);
    read_checkpoint();
    /* The checksum sits before the 8-byte end marker; set it right. */
    if (size < 32) return;
    uint64_t sum = px_ck_hash(PX_HASH64_INIT, data, size - 16), had;
    memcpy(&had, data + size - 16, 8);
    if (sum == had) return;
    uint8_t *fixed = malloc(size);
    if (!fixed) abort();
    memcpy(fixed, data, size);
    memcpy(fixed + size - 16, &sum, 8);
    put_file(manifest_path, fixed, size);
    free(fixed);
    read_checkpoint();
}
