/* Times the ways of summing a gradient over MPI ranks that docs/mpi.md ("BF16 on the wire") compares: the
   rings of common/dist.c in f32 and bf16, Open MPI's MPI_Allreduce of floats, and MPI_Allreduce of bf16
   values (MPI_UINT16_T) with a user-defined operation that widens both operands, adds them in FP32 and
   rounds the sum back to bf16; and ZeRO-1's all-gather of the weights, the ring against MPI_Allgatherv. Not part of the build; with the MPI objects built (make MPI=1):

     mpicc -O3 -march=native -I. tools/wire_bench.c build/mpi/obj32/common/dist.o \
           build/mpi/obj32/common/check.o -o build/mpi/wire_bench -lm
     mpirun -np 2 build/mpi/wire_bench 51000000 5     # elements, rounds

   Prints, per way, the median time of the rounds and the bytes this rank handed to MPI's send side. */
#include <mpi.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/bf16.h"
#include "common/check.h"
#include "common/dist.h"

/* the user-defined reduction: inout = bf16(f32(in) + f32(inout)) */
static void bf16_sum(void* in, void* inout, int* len, MPI_Datatype* type) {
    const bf16* a = in;
    bf16* b = inout;
    for (int i = 0; i < *len; i++) b[i] = bf16_round_nearest(bf16_to_f32(a[i]) + bf16_to_f32(b[i]));
}

static int cmp_double(const void* a, const void* b) {
    double x = *(const double*)a, y = *(const double*)b;
    return (x > y) - (x < y);
}

/* the ZeRO-1 all-gather of the weights: each rank's dist_share of n floats to every rank, by the ring of
   dist_allgatherv_real (ring) or by Open MPI's MPI_Allgatherv */
static void allgather(float* g, size_t n, bool ring) {
    int world = dist_world();
    size_t counts[64], displs[64];
    int ic[64], id[64];
    CHECK(world <= 64, "at most 64 ranks");
    for (int r = 0; r < world; r++) {
        size_t lo, hi;
        dist_share(n, r, world, &lo, &hi);
        displs[r] = lo;
        counts[r] = hi - lo;
        ic[r] = (int)counts[r];
        id[r] = (int)displs[r];
    }
    if (ring) dist_allgatherv_real(g, counts, displs);
    else MPI_Allgatherv(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, g, ic, id, MPI_FLOAT, MPI_COMM_WORLD);
}

/* way 0: ring f32, 1: ring bf16, 2: MPI_Allreduce float, 3: MPI_Allreduce bf16 with the user op, 4: the
   ring all-gather, 5: MPI_Allgatherv */
static double run_way(int way, float* g, bf16* w, size_t n, MPI_Op op) {
    for (size_t i = 0; i < n; i++) g[i] = (float)((i * 2654435761u) % 1000) * 1e-3f - 0.5f;
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    if (way == 0) dist_allreduce_sum_real(g, n);
    if (way == 1) dist_allreduce_sum_bf16(g, n);
    if (way == 2) MPI_Allreduce(MPI_IN_PLACE, g, (int)n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    if (way == 3) {
        for (size_t i = 0; i < n; i++) w[i] = bf16_round_nearest(g[i]);
        MPI_Allreduce(MPI_IN_PLACE, w, (int)n, MPI_UINT16_T, op, MPI_COMM_WORLD);
        for (size_t i = 0; i < n; i++) g[i] = bf16_to_f32(w[i]);
    }
    if (way >= 4) allgather(g, n, way == 4);
    return MPI_Wtime() - t0;
}

int main(int argc, char** argv) {
    dist_init(&argc, &argv);
    CHECK(argc == 3, "usage: wire_bench ELEMENTS ROUNDS");
    size_t n = (size_t)atoll(argv[1]), rounds = (size_t)atoll(argv[2]);
    CHECK(n > 0 && n < 2000000000 && rounds > 0 && rounds <= 100, "ELEMENTS in (0, 2e9), ROUNDS in [1, 100]");
    float* g = mallocCheck(n * sizeof(float));
    bf16* w = mallocCheck(n * sizeof(bf16));
    double* t = mallocCheck(rounds * sizeof(double));
    MPI_Op op;
    MPI_Op_create(bf16_sum, 1, &op);
    const char* names[6] = {"ring f32 (dist_allreduce_sum_real)",      "ring bf16 (dist_allreduce_sum_bf16)",
                            "MPI_Allreduce MPI_FLOAT MPI_SUM",         "MPI_Allreduce bf16, user op (FP32 add)",
                            "all-gather, ring (dist_allgatherv_real)", "all-gather, MPI_Allgatherv"};
    for (int way = 0; way < 6; way++) {
        size_t sent0 = dist_bytes_sent();
        for (size_t r = 0; r < rounds; r++) t[r] = run_way(way, g, w, n, op);
        qsort(t, rounds, sizeof(double), cmp_double);
        if (dist_rank() == 0)
            printf("%-40s median %8.1f ms of %zu (min %.1f, max %.1f)  sent by the rings %.1f MB per round\n",
                   names[way], t[rounds / 2] * 1e3, rounds, t[0] * 1e3, t[rounds - 1] * 1e3,
                   (double)(dist_bytes_sent() - sent0) / 1e6 / (double)rounds);
    }
    MPI_Op_free(&op);
    free(g);
    free(w);
    free(t);
    dist_finalize();
    return 0;
}
