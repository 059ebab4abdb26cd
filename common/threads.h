/* One thread setting for both pools: OpenMP's and OpenBLAS's. */
#ifndef REPOC_THREADS_H
#define REPOC_THREADS_H

#include <stddef.h>
#include <stdio.h>

/* The first call of every program's main, before anything else runs (MPI's start included). libgomp reads
   its wait policy when it loads, before main: with its default (threads spin at the end of every parallel
   region) a 2-thread run where another job holds one of two cores took 14x the time of one thread. When the
   environment names no policy (neither OMP_WAIT_POLICY nor GOMP_SPINCOUNT), this sets GOMP_SPINCOUNT to
   THREADS_SPINCOUNT (a short spin, then sleep: idle-machine speed kept, a busy core costs less) and
   re-executes the program with the same arguments (/proc/self/exe), so the runtime starts with it.
   A policy you set yourself is kept. Returns when nothing needs doing. */
#define THREADS_SPINCOUNT "10000"
void threads_startup(void);
/* n <= 0: the default, OMP_NUM_THREADS when set, else the idle cores (threads_idle_cores of all cores, looked
   at on the first such call only: later ones keep the count); n > 0: n. Returns the count in use. */
int threads_init(int n);
/* Of `cores`, those idle now: the machine's busy time over THREADS_SAMPLE_MS (this process sleeping meanwhile)
   taken off, rounded, at least 1. With another job holding one of two cores, two threads (each waiting at
   every region's end for the one the scheduler took away) ran 1.7x (train) and 2.7x (generate) the time of
   one (tools/bench_busy.sh); the count is chosen once, at start, since results move in the last bits
   between thread counts (a resumed run keeps its checkpoint's count: train/trainer.c). */
#define THREADS_SAMPLE_MS 50
int threads_idle_cores(int cores);
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
