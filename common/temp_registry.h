/* Temporary files that must not outlive the process: registered while they
 * exist, removed at exit (px_rt_fail) and on SIGTERM/SIGINT/SIGHUP (mpirun
 * ending the job, Ctrl-C) by an async-signal-safe handler. SIGKILL cannot be
 * caught: a file left by it carries the .tmp. marker in its name. */
#ifndef PX_TEMP_REGISTRY_H
#define PX_TEMP_REGISTRY_H

/* Registers path (copied; at most PX_TEMP_PATH_MAX-1 bytes). Returns a slot
 * number for px_temp_forget, or -1 when the registry is full (the file is
 * then only removed on ordinary failure paths). Installs the handlers on
 * first use. */
int px_temp_remember(const char *path);
/* The file was renamed into place or removed: stop tracking it. */
void px_temp_forget(int slot);

#define PX_TEMP_PATH_MAX 4128

#endif
