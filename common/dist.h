/* Data-parallel communication: the few MPI calls the trainer needs,
   behind one small interface. The MPI build (make MPI=1, -DREPOC_MPI) maps
   them onto MPI_COMM_WORLD; every other build gets trivial versions (rank 0
   of 1), so the trainer calls them unconditionally and has no #ifdefs.
   Before dist_init (and in programs that never call it) the process is rank
   0 of 1 in both builds: collectives are no-ops or copies.
   Collectives must be called by every rank in the same order, as in MPI.
   Sizes are size_t; MPI's int counts are chunked (bcast, the double
   all-reduce) or checked (the rings, gatherv and allgather die naming the
   limit when one rank's share passes 2^31 elements). */
#ifndef REPOC_DIST_H
#define REPOC_DIST_H

#include <stdbool.h>
#include <stddef.h>

#include "common/real.h"

/* MPI_Init_thread (FUNNELED: OpenMP threads never call MPI), then route every
   DIE through dist_abort, with "rank r of N" in the message, so a fatal error
   on one rank prints its message and stops all ranks. */
void dist_init(int* argc, char*** argv);
/* MPI_Finalize; call once, on every rank, after the last collective. */
void dist_finalize(void);
int dist_rank(void);
int dist_world(void);
/* ranks of this job on this machine (1 without MPI) */
int dist_local_world(void);
/* Bytes this rank has handed to MPI to send since dist_init, counted where it sends them: every message of
   the rings (all-reduce, all-gather) as it goes out, and for the other collectives the payload this rank
   contributes (an all-reduce's buffer, a broadcast's root's bytes, a gather's part). 0 without MPI. */
size_t dist_bytes_sent(void);
/* MPI_Abort on all ranks (exit(code) without MPI). */
_Noreturn void dist_abort(int code);

/* Rank r's share of n items split into `world` contiguous ranges: [lo, hi),
   the first n % world ranks one item longer. Pure: every rank computes every
   other rank's range. */
void dist_share(size_t n, int rank, int world, size_t* lo, size_t* hi);

/* buf (n) = its sum over all ranks, in place, the same bits on every rank
   (the real version is a ring reduce-scatter + all-gather, see dist.c) */
void dist_allreduce_sum_real(real* buf, size_t n);
/* The same ring with BF16 on the wire and FP32 sums: each piece is rounded to nearest even bf16 when sent
   and added to the receiver's own partial sum in real; the result is bf16-rounded, the same bits on every
   rank (half the bytes of dist_allreduce_sum_real) */
void dist_allreduce_sum_bf16(real* buf, size_t n);
void dist_allreduce_sum_double(double* buf, size_t n);
/* whether flag is non-zero on any rank */
bool dist_any(bool flag);
/* rank 0's bytes of buf (n bytes) into every rank's buf */
void dist_bcast(void* buf, size_t n);
void dist_barrier(void);

/* In place: rank r's range [displs[r], displs[r] + counts[r]) of buf, taken
   from rank r, into every rank's buf (counts, displs: `world` entries each). */
void dist_allgatherv_real(real* buf, const size_t* counts, const size_t* displs);
/* Rank r's send (counts[r] reals) concatenated in rank order into rank 0's
   recv (sum of counts); recv is not touched on the other ranks. */
void dist_gatherv_real(const real* send, real* recv, const size_t* counts);
/* Every rank's n bytes of mine, in rank order, into all (world * n bytes). */
void dist_allgather(const void* mine, void* all, size_t n);

#endif
