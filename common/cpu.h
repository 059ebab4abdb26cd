/* The CPU at hand and the instruction set this binary was built for.
   `make` compiles for the build machine (-march=native); `make PORTABLE=1`
   for x86-64-v3 (AVX2, FMA, BMI2: Intel Haswell, AMD Zen and later cores,
   but not every Atom, Celeron or Pentium), so one binary runs on every host
   of an MPI job. Before main, every program checks that
   the CPU has each extension the compiler was allowed to use and otherwise
   exits with a message naming the missing ones, instead of dying of SIGILL
   somewhere in a step. */
#ifndef REPOC_CPU_H
#define REPOC_CPU_H

#include <stddef.h>
#include <stdio.h>

/* /proc/cpuinfo's "model name" into buf (n bytes), or "unknown" */
void cpu_model(char* buf, size_t n);
/* the x86-64 level the build targets and its extensions, e.g. "x86-64-v3 (sse4.1 sse4.2 avx avx2 fma ...)" */
const char* cpu_isa_built(void);
/* the highest x86-64 level this CPU supports ("x86-64-v4", ...; "unknown" off x86-64) */
const char* cpu_level(void);
/* the extensions the build uses that this CPU lacks, space-separated into buf ("" when none); returns buf */
char* cpu_isa_missing(char* buf, size_t n);
/* OpenBLAS's kernel family for this CPU (openblas_get_corename, e.g. "SkylakeX") */
const char* cpu_blas_core(void);
/* four lines: "cpu: <model> (<level>)", "built for: <isa>", "dispatch: <dispatch>", "OpenBLAS: core <core>,
   <config>"; dispatch says which variants of the kernels built twice run (dispatch_describe, model/dispatch.h) */
void cpu_print(FILE* fp, const char* dispatch);

#endif
