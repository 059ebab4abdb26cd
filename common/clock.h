/* Seconds on the monotonic clock, for timing steps, loads and runs (only
   differences mean anything). Header-only, so tests and benches built on their
   own need no extra object. */
#ifndef REPOC_CLOCK_H
#define REPOC_CLOCK_H

#include <time.h>

static inline double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

#endif
