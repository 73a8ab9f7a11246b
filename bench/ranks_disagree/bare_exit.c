/* The peer of bench/ranks_disagree/run.sh: an MPI program that does
 * nothing between MPI_Init and MPI_Finalize and exits with the status it
 * is given, so Open MPI's own cost of a job whose ranks exit non-zero is
 * measured in the same run. */
#include <mpi.h>
#include <stdlib.h>

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    MPI_Finalize();
    return argc > 1 ? atoi(argv[1]) : 0;
}
