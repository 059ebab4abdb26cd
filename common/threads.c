/* Thread setup shared by every program: OpenMP and OpenBLAS get the same count. */
#include "common/threads.h"

#include <cblas.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h> /* getenv, setenv */
#include <string.h>
#include <time.h>   /* nanosleep */
#include <unistd.h> /* sysconf, execv */

#ifdef OMP
#include <omp.h>
#endif

/* declared by OpenBLAS's cblas.h; repeated here for BLAS headers that omit them */
extern void openblas_set_num_threads(int);
extern int openblas_get_num_threads(void);
extern char* openblas_get_config(void);
extern int openblas_get_parallel(void); /* 0 sequential, 1 pthreads, 2 OpenMP */

/* argv as the kernel holds it (NUL-separated in /proc/self/cmdline), malloc'd; NULL when unreadable */
static char** own_argv(void) {
    FILE* f = fopen("/proc/self/cmdline", "rb");
    if (!f) return NULL;
    size_t cap = 4096, len = 0;
    char* buf = malloc(cap);
    size_t got;
    while (buf && (got = fread(buf + len, 1, cap - len, f)) > 0) {
        len += got;
        if (len == cap) { /* a failed realloc leaves buf allocated: free it, and stop */
            char* grown = realloc(buf, cap *= 2);
            if (!grown) free(buf);
            buf = grown;
        }
    }
    fclose(f);
    if (!buf || len == 0) {
        free(buf);
        return NULL;
    }
    size_t n = 0;
    for (size_t i = 0; i < len; i++) n += buf[i] == 0;
    char** argv = calloc(n + 1, sizeof(char*));
    if (!argv) {
        free(buf);
        return NULL;
    }
    for (size_t i = 0, k = 0; i < len && k < n; k++) {
        argv[k] = buf + i;
        i += strlen(buf + i) + 1;
    }
    return argv;
}

void threads_startup(void) {
#ifdef OMP
    if (getenv("OMP_WAIT_POLICY") || getenv("GOMP_SPINCOUNT")) return;
    char** argv = own_argv();
    if (!argv) return; /* no /proc: run with the runtime's default */
    setenv("GOMP_SPINCOUNT", THREADS_SPINCOUNT, 1);
    execv("/proc/self/exe", argv);
    /* exec failed (no /proc/self/exe): go on with the default, the variable stays for child processes */
    free(argv[0]);
    free(argv);
#endif
}

/* the busy and total time of all cores so far (/proc/stat's first line, clock ticks); false when unreadable */
static bool cpu_times(unsigned long long* busy, unsigned long long* total) {
    FILE* f = fopen("/proc/stat", "r");
    if (!f) return false;
    unsigned long long v[8] = {0}; /* user nice system idle iowait irq softirq steal */
    int got = fscanf(f, "cpu %llu %llu %llu %llu %llu %llu %llu %llu", &v[0], &v[1], &v[2], &v[3], &v[4], &v[5], &v[6],
                     &v[7]);
    fclose(f);
    if (got < 4) return false;
    *total = 0;
    for (int k = 0; k < 8; k++) *total += v[k];
    *busy = *total - v[3] - v[4];
    return true;
}

static double busy_cores_at_start = -1; /* what threads_idle_cores saw, for threads_print; -1 = not looked */

int threads_idle_cores(int cores) {
    unsigned long long b0, t0, b1, t1;
    busy_cores_at_start = 0;
    if (cores <= 1 || !cpu_times(&b0, &t0)) return cores;
    struct timespec nap = {0, THREADS_SAMPLE_MS * 1000000L};
    nanosleep(&nap, NULL); /* this process does nothing meanwhile: what is busy is someone else */
    if (!cpu_times(&b1, &t1) || t1 <= t0) return cores;
    long online = sysconf(_SC_NPROCESSORS_ONLN);
    double busy = (double)(b1 - b0) / (double)(t1 - t0) * (double)(online > 0 ? online : cores);
    busy_cores_at_start = busy;
    int idle = (int)((double)cores - busy + 0.5);
    return idle < 1 ? 1 : idle > cores ? cores : idle;
}

int threads_init(int n) {
#ifdef OMP
    if (n > 0) omp_set_num_threads(n);
    else if (!getenv("OMP_NUM_THREADS") && busy_cores_at_start < 0) /* looked at once, the first time */
        omp_set_num_threads(threads_idle_cores(omp_get_max_threads()));
    n = omp_get_max_threads();
#else
    if (n <= 0) n = 1;
#endif
    openblas_set_num_threads(n);
    return n;
}

int threads_share(int ranks_here) {
    if (ranks_here <= 1 || getenv("OMP_NUM_THREADS")) return 0;
    long online = sysconf(_SC_NPROCESSORS_ONLN);
    int n = online > ranks_here ? (int)(online / ranks_here) : 1;
#ifdef OMP
    if (n > omp_get_num_procs()) n = omp_get_num_procs(); /* the affinity mask mpirun gave us */
#endif
    return n;
}

size_t threads_max(void) {
#ifdef OMP
    return (size_t)omp_get_max_threads();
#else
    return 1;
#endif
}

size_t threads_id(void) {
#ifdef OMP
    return (size_t)omp_get_thread_num();
#else
    return 0;
#endif
}

size_t threads_team(void) {
#ifdef OMP
    return (size_t)omp_get_num_threads();
#else
    return 1;
#endif
}

size_t threads_blas_split(void) {
#ifdef OMP
    if (omp_in_parallel() || openblas_get_parallel() != 2) return 1;
    return (size_t)omp_get_max_threads();
#else
    return 1;
#endif
}

void threads_print(FILE* fp) {
#ifdef OMP
    int omp = omp_get_max_threads();
#else
    int omp = 0;
#endif
    fprintf(fp, "threads: OpenMP %d%s, BLAS %d (%s)\n", omp, omp ? "" : " (built without OpenMP)",
            openblas_get_num_threads(), openblas_get_config());
    if (busy_cores_at_start >= 0.5)
        fprintf(fp,
                "note: other processes kept %.1f of %ld cores busy at start: %d thread(s), the idle cores (set "
                "run.threads or --threads to choose; results move in the last bits between thread counts)\n",
                busy_cores_at_start, sysconf(_SC_NPROCESSORS_ONLN), omp);
}
