/* An LD_PRELOAD shim for bench/ranks_disagree/run.sh: through MPI's
 * profiling interface it notes when MPI_Init_thread (or MPI_Init) returns
 * and when MPI_Finalize is entered, and at exit prints, per rank,
 *   init_to_exit RANK SECONDS_FROM_INIT_RETURN_TO_EXIT FINALIZE_SECONDS
 * to stderr. The program under test is not changed. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double t_init, t_finalize = -1, t_finalized = -1;
static int rank = -1;

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void report(void) {
    double t = now();
    const char *dir = getenv("INIT_TO_EXIT_DIR");
    char path[4096];
    snprintf(path, sizeof path, "%s/%d", dir ? dir : ".", rank);
    FILE *f = fopen(path, "w");
    if (!f) return;
    fprintf(f, "init_to_exit %d %.4f %.4f\n", rank, t - t_init,
            t_finalized >= 0 ? t_finalized - t_finalize : -1.0);
    fclose(f);
}

static void started(void) {
    t_init = now();
    PMPI_Comm_rank(MPI_COMM_WORLD, &rank);
    atexit(report);
}

int MPI_Init_thread(int *argc, char ***argv, int required, int *provided) {
    int rc = PMPI_Init_thread(argc, argv, required, provided);
    started();
    return rc;
}

int MPI_Init(int *argc, char ***argv) {
    int rc = PMPI_Init(argc, argv);
    started();
    return rc;
}

int MPI_Finalize(void) {
    t_finalize = now();
    int rc = PMPI_Finalize();
    t_finalized = now();
    return rc;
}
