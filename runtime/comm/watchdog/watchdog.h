/* The stall watchdog (watchdog.c): a thread that ends the job when a step
 * makes no progress for a while, naming what this rank and the others wait
 * for. It observes the rest of the runtime only through transport/'s
 * record of progress and activity (comm_activity_snapshot,
 * comm_last_progress, comm_step, comm_in_step); the orchestrator starts
 * and stops it. Includes transport/ only. */
#ifndef PX_COMM_WATCHDOG_H
#define PX_COMM_WATCHDOG_H

#include "comm/transport/transport.h"

/* Starts the watch (every rank, with the same limit: collective). */
void comm_watchdog_start(double timeout_s);
void comm_watchdog_stop(void);

#endif
