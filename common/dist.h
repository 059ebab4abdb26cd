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

/* MPI_Init_thread (SERIALIZED: OpenMP threads never call MPI; the overlap thread below calls it while the
   main thread does not), then route every
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
/* one of the two: dist_allreduce_sum_bf16 when bf16, else dist_allreduce_sum_real */
void dist_allreduce_sum(real* buf, size_t n, bool bf16);
/* The same sums overlapped with the computation: a thread of this rank's own runs the ring (f32, or bf16 with
   `bf16`) on each range [lo, hi) of buf as it is posted, in the order posted; every rank posts the same ranges
   in the same order. Between dist_overlap_begin and dist_overlap_wait the caller makes no other dist_ call
   and leaves the posted ranges alone; dist_overlap_wait returns once every posted range is summed. A range is
   summed as dist_allreduce_sum_real/_bf16 would sum it alone: with 2 ranks in f32 the bits do not depend on
   the ranges (a + b = b + a), otherwise only on which rank owns which part (the sum's order, bf16's
   roundings). dist_overlap_init starts the thread (once) and says whether there is one: false with one rank
   or when MPI gives no MPI_THREAD_SERIALIZED; dist_finalize stops it. Nothing allocates. */
bool dist_overlap_init(void);
void dist_overlap_begin(real* buf, bool bf16);
void dist_overlap_post(size_t lo, size_t hi);
void dist_overlap_wait(void);
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
