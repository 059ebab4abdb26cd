/* Thread setup shared by every program: OpenMP and OpenBLAS get the same count. */
#include "common/threads.h"

#include <cblas.h>
#include <stdlib.h>   /* getenv */
#include <unistd.h>   /* sysconf */

#ifdef OMP
#include <omp.h>
#endif

/* declared by OpenBLAS's cblas.h; repeated here for BLAS headers that omit them */
extern void openblas_set_num_threads(int);
extern int openblas_get_num_threads(void);
extern char* openblas_get_config(void);
extern int openblas_get_parallel(void);   /* 0 sequential, 1 pthreads, 2 OpenMP */

int threads_init(int n) {
#ifdef OMP
    if (n > 0) omp_set_num_threads(n);
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
    if (n > omp_get_num_procs()) n = omp_get_num_procs();   /* the affinity mask mpirun gave us */
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
}
