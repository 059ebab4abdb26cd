/* One thread setting for both pools (DESIGN.md §4): OpenMP's and OpenBLAS's. */
#ifndef REPOC_THREADS_H
#define REPOC_THREADS_H

#include <stdio.h>

/* n <= 0 keeps the default (all cores, or OMP_NUM_THREADS). Returns the count in use. */
int threads_init(int n);
/* "threads 2 (OpenMP 2, BLAS 2), OpenBLAS <config>" */
void threads_print(FILE* fp);

#endif
