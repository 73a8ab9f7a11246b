#include "temp_registry.h"

#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* A handful of temporaries exist at once (checkpoint, model, stats). */
#define SLOTS 16

static char paths[SLOTS][PX_TEMP_PATH_MAX];
/* 1 while paths[i] holds a live file; read by the signal handler. */
static volatile sig_atomic_t live[SLOTS];
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static int installed;
static const int caught[] = {SIGTERM, SIGINT, SIGHUP};
static struct sigaction previous[sizeof caught / sizeof caught[0]];

static void remove_all(void) {
    for (int i = 0; i < SLOTS; i++)
        if (live[i]) {
            unlink(paths[i]); /* async-signal-safe */
            live[i] = 0;
        }
}

/* Removes the temporaries, restores the previous disposition and re-raises:
 * the signal is blocked during the handler, so it arrives, with the old
 * action (default: terminate), as soon as the handler returns. */
static void on_signal(int sig) {
    remove_all();
    for (size_t k = 0; k < sizeof caught / sizeof caught[0]; k++)
        if (caught[k] == sig) sigaction(sig, &previous[k], NULL);
    raise(sig);
}

static void install(void) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    for (size_t k = 0; k < sizeof caught / sizeof caught[0]; k++) {
        sigaction(caught[k], NULL, &previous[k]);
        /* A signal the process ignores stays ignored. */
        if (previous[k].sa_handler == SIG_IGN) continue;
        sigaction(caught[k], &sa, NULL);
    }
    atexit(remove_all);
}

int px_temp_remember(const char *path) {
    if (strlen(path) >= PX_TEMP_PATH_MAX) return -1;
    pthread_mutex_lock(&lock);
    if (!installed) {
        install();
        installed = 1;
    }
    int slot = -1;
    for (int i = 0; i < SLOTS && slot < 0; i++)
        if (!live[i]) slot = i;
    if (slot >= 0) {
        strcpy(paths[slot], path);
        live[slot] = 1; /* after the path is complete */
    }
    pthread_mutex_unlock(&lock);
    return slot;
}

void px_temp_forget(int slot) {
    if (slot < 0 || slot >= SLOTS) return;
    pthread_mutex_lock(&lock);
    live[slot] = 0;
    pthread_mutex_unlock(&lock);
}
