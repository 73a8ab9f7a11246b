#include "progress.h"

#include <stdio.h>
#include <time.h>
#include <unistd.h>

double px_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

void px_progress_start(px_progress *p, int64_t total_bytes, int mode) {
    p->show = mode > 0 || (mode < 0 && isatty(2));
    p->total = total_bytes;
    p->t0 = p->last = px_now();
    p->drawn = 0;
}

static void duration(char *buf, size_t cap, double s) {
    long long t = s > 0 ? (long long)(s + 0.5) : 0;
    if (t >= 3600)
        snprintf(buf, cap, "%lld:%02lld:%02lld", t / 3600, t / 60 % 60, t % 60);
    else
        snprintf(buf, cap, "%lld:%02lld", t / 60, t % 60);
}

void px_progress_update(px_progress *p, int64_t bytes_done, int64_t lines, int64_t bad) {
    if (!p->show || (lines & 4095)) return;
    double t = px_now();
    if (t - p->last < 0.25) return;
    p->last = t;
    double el = t - p->t0, rate = el > 0 ? (double)bytes_done / el : 0;
    double frac = p->total > 0 ? (double)bytes_done / (double)p->total : 0;
    if (frac > 1) frac = 1;
    char bar[31], eta[32] = "?";
    int fill = (int)(frac * 30);
    for (int i = 0; i < 30; i++) bar[i] = i < fill ? '#' : '-';
    bar[30] = '\0';
    if (rate > 0 && p->total > 0) duration(eta, sizeof eta, (double)(p->total - bytes_done) / rate);
    fprintf(stderr, "\r[%s] %3.0f%%  %.2f/%.2f GB  %.0f MB/s  ETA %s  %lld lines  %lld bad ", bar,
            100 * frac, (double)bytes_done / 1e9, (double)p->total / 1e9, rate / 1e6, eta,
            (long long)lines, (long long)bad);
    fflush(stderr);
    p->drawn = 1;
}

void px_progress_end(px_progress *p) {
    if (p->drawn) fprintf(stderr, "\r%100s\r", "");
    p->drawn = 0;
}

double px_progress_seconds(const px_progress *p) {
    return px_now() - p->t0;
}
