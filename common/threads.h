/* One thread setting for both pools: OpenMP's and OpenBLAS's. */
#ifndef REPOC_THREADS_H
#define REPOC_THREADS_H

#include <stddef.h>
#include <stdio.h>

/* n <= 0 keeps the default (all cores, or OMP_NUM_THREADS). Returns the count in use. */
int threads_init(int n);
/* The default count for one of `ranks_here` processes sharing this machine
   (MPI ranks): the online cores divided among them, at least 1 and at most
   the cores this process may run on (mpirun may bind it to one). 0 (keep the
   default) when ranks_here <= 1 or OMP_NUM_THREADS is set. */
int threads_share(int ranks_here);
/* The most threads an OpenMP parallel region started here may use (1 without OpenMP). */
size_t threads_max(void);
/* This thread's number inside a parallel region, 0 .. threads_max()-1 (0 outside one). */
size_t threads_id(void);
/* The number of threads of the region this thread is in (1 outside one): what the region got, which an
   OMP_DYNAMIC or OMP_THREAD_LIMIT setting can make fewer than it asked for. */
size_t threads_team(void);
/* The threads a product may be split among, each calling BLAS on its own part from inside one OpenMP
   parallel region: threads_max() when OpenBLAS is its OpenMP build (a BLAS call inside a region then runs
   on the calling thread alone) and this thread is not already inside a region; else 1. */
size_t threads_blas_split(void);
/* "threads 2 (OpenMP 2, BLAS 2), OpenBLAS <config>" */
void threads_print(FILE* fp);

#endif
