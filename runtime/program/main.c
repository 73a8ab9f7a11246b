/* main() of every generated program: training programs go to px_train_main
 * (train.c); inference programs are handled here. */
#include "blas_reserve.h"
#include "npy.h"
#include "px_program.h"
#include "px_weights.h"
#include "rank_threads.h"
#include "train.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int px_run_inference(const char *data_dir, const char *out_dir, long bench_steps);

static void usage(FILE *f, const char *argv0) {
    fprintf(f,
            "usage: %s --data DIR --out DIR\n"
            "\n"
            "Runs the compiled model (%s) on the inputs in DIR and writes its outputs to DIR.\n"
            "  --data DIR   one <input-name>.npy (or .pb TensorProto) per graph input; samples\n"
            "               run along dim 0, any number of them: the last batch may be partial\n"
            "               (characters '/' and ':' in names are written as '_')\n"
            "  --out DIR    receives one <output-name>.npy per graph output (created if\n"
            "               missing), batches concatenated along dim 0: one row per sample\n"
            "               (scalar outputs become a vector of one value per batch, and need\n"
            "               full batches)\n"
            "  --bench-steps N  before the run, time N steps on the first batch and print\n"
            "               their median and mean (a benchmark of the compiled code alone)\n"
            "  --weights MODEL.onnx  read the weights from MODEL.onnx instead of the model\n"
            "               compiled from (%s); same graph, initializer names, dtypes and\n"
            "               shapes, e.g. a model a training program's --save wrote\n"
            "  --threads N  compute threads (1 to 256; results are the same for every N);\n"
            "               default: the CPUs this process may run on, or\n"
            "               OPENBLAS_NUM_THREADS / OMP_NUM_THREADS when set\n"
            "  --help       this text\n",
            argv0, px_program.model, px_program.weights_path ? px_program.weights_path : "none");
}

int main(int argc, char **argv) {
    px_program_unpack(&px_program);
    if (px_program.kind == PX_PROGRAM_TRAIN) return px_train_main(argc, argv);
    const char *data = NULL, *out = NULL, *bench = NULL, *weights = NULL, *threads = NULL;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            usage(stdout, argv[0]);
            return 0;
        }
        const char **dst = !strcmp(a, "--data")          ? &data
                           : !strcmp(a, "--out")         ? &out
                           : !strcmp(a, "--bench-steps") ? &bench
                           : !strcmp(a, "--weights")     ? &weights
                           : !strcmp(a, "--threads")     ? &threads
                                                         : NULL;
        if (!dst) {
            fprintf(stderr, "%s: unknown option '%s' (see --help)\n", argv[0], a);
            return 2;
        }
        if (i + 1 >= argc) {
            fprintf(stderr, "%s: option '%s' needs a value\n", argv[0], a);
            return 2;
        }
        *dst = argv[++i];
    }
    if (!data || !out) {
        fprintf(stderr, "%s: --data DIR and --out DIR are required (see --help)\n", argv[0]);
        return 2;
    }
    long bench_steps = 0;
    if (bench) {
        char *end;
        errno = 0;
        bench_steps = strtol(bench, &end, 10);
        if (errno || *end || end == bench || bench_steps < 1 || bench_steps > 100000000) {
            fprintf(stderr,
                    "%s: --bench-steps needs a whole number from 1 to 100000000, not '%s'\n",
                    argv[0], bench);
            return 2;
        }
    }
    long n_threads = 0;
    if (threads) {
        char *end;
        errno = 0;
        n_threads = strtol(threads, &end, 10);
        if (errno || *end || end == threads || n_threads < 1 || n_threads > 256) {
            fprintf(stderr, "%s: --threads needs a whole number from 1 to 256, not '%s'\n", argv[0],
                    threads);
            return 2;
        }
    }
    px_rank_threads_start((int)n_threads, 1);
    px_blas_reserve();
    px_weights_load(&px_program, weights);
    return px_run_inference(data, out, bench_steps);
}
