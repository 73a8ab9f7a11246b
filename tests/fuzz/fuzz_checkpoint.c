/* libFuzzer harness: the --resume checkpoint reader (px_checkpoint_read)
 * against the program of tests/runtime's px_fake_train_adam (three
 * variables, Adam), whose checkpoints are the seeds. The reader ends a bad
 * file with px_rt_fail; the harness's abort hook jumps back here instead of
 * exiting (the file handle that leaves open is closed by fd number below,
 * the memory it leaves is freed by ckpt_alloc.c's tracking; strings from
 * strdup are not tracked: run with ASAN_OPTIONS=detect_leaks=0).
 * The parameter-server and gather calls are stubbed in ckpt_stubs.c. */
#include "checkpoint.h"
#include "px_kernel.h"
#include "px_train.h"

#include <dirent.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

extern void (*px_rt_abort_hook)(int code);
void px_fuzz_track_begin(void);
void px_fuzz_track_end(void);

static float w[4], bias[1], emb[8];
static const int64_t w_dims[] = {4}, bias_dims[] = {1}, emb_dims[] = {8};
static const px_var_desc vars[] = {
    {"w", 1, 1, w_dims, w, sizeof w, PX_PROG_VAR_DENSE, PX_SYNC_ALLREDUCE, 0},
    {"bias", 1, 1, bias_dims, bias, sizeof bias, PX_PROG_VAR_DENSE, PX_SYNC_ALLREDUCE, 0},
    {"emb", 1, 1, emb_dims, emb, sizeof emb, PX_PROG_VAR_SPARSE, PX_SYNC_PS, 2},
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

const px_program_desc *px_fuzz_program = &prog;
static char path[64];
static jmp_buf back;
static float slot_store[3][PX_OPTIM_MAX_SLOTS][8];
static float *slot_ptrs[3 * PX_OPTIM_MAX_SLOTS];

static void jump_back(int code) {
    (void)code;
    longjmp(back, 1);
}

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc;
    (void)argv;
    snprintf(path, sizeof path, "/tmp/px_fuzz_ckpt_%d", (int)getpid());
    px_rt_abort_hook = jump_back;
    for (int v = 0; v < 3; v++)
        for (int k = 0; k < PX_OPTIM_MAX_SLOTS; k++)
            slot_ptrs[v * PX_OPTIM_MAX_SLOTS + k] = slot_store[v][k];
    px_train.slots = slot_ptrs;
    return 0;
}

/* Closes descriptors a jumped-over reader left open (all above stderr). */
static void close_stray_files(void) {
    for (int fd = 3; fd < 64; fd++) {
        char link[64], target[256];
        snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
        ssize_t n = readlink(link, target, sizeof target - 1);
        if (n <= 0) continue;
        target[n] = 0;
        if (strcmp(target, path) == 0) close(fd);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    FILE *f = fopen(path, "wb");
    if (!f) abort();
    if (size && fwrite(data, 1, size, f) != size) abort();
    fclose(f);
    px_ckpt_state st;
    px_fuzz_track_begin();
    if (setjmp(back) == 0) px_checkpoint_read(path, &prog, &st);
    px_fuzz_track_end();
    close_stray_files();
    unlink(path);
    return 0;
}
