/* Entry of training programs (px_program.kind == PX_PROGRAM_TRAIN). */
#ifndef PX_TRAIN_MAIN_H
#define PX_TRAIN_MAIN_H

/* The whole run: flags, MPI, data, the step loop, outputs. Returns the exit
 * status (0, 2 for bad flags); failures during the run end the job with
 * status 1 (px_rt_fail). */
int px_train_main(int argc, char **argv);

#endif
