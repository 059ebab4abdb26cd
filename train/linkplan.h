/* Which way of communicating a link between machines favours (run.link_gbps; docs/mpi.md, "Link speed"):
   the step time of synchronous data parallelism with FP32 or BF16 gradients on the wire and of the DiLoCo
   outer loop (train.outer) at several H, from the step's compute time (the time plan's estimate) and the
   bytes each rank sends, as common/dist.c's rings send them:

     ring all-reduce of P elements of w bytes over N ranks: 2 (N-1)/N · P · w bytes per rank, in
       2 (N-1) · ceil(P / (N · 2^18)) messages (pieces of 2^18 elements)
     ZeRO-1 (train.shard_optimizer): and the weights' all-gather, (N-1)/N · P · 4 bytes
     DiLoCo every H steps: one all-reduce of the parameter change per H steps, nothing in between

   t_ring = bytes / bandwidth + messages · latency; the synchronous modes' gradient ring overlaps the backward
   (train.overlap_grad_reduce, train/grad_reduce.h), which is LINKPLAN_BACKWARD_SHARE of the compute, except
   the input embedding's part (`last_share` of the gradients), final only when the backward ends:

     exposed ring = max(t_ring · last_share, t_ring - LINKPLAN_BACKWARD_SHARE · t_compute)   (overlap)
                  = t_ring                                                              (no overlap)
     t_step = t_compute + exposed ring + the all-gather (ZeRO-1, after the AdamW step: never hidden)

   (the overlap's extra messages, one ring per layer, are not counted: about 2 (N-1) per layer). DiLoCo's
   outer all-reduce follows the H-th step, not overlapped. A mode keeps up when its communication is at most
   LINKPLAN_KEEP_UP of the compute; the favoured mode is the first that keeps up in the order synchronous
   f32, synchronous bf16, DiLoCo at H = 10, 50, 100 (the least change to the training first), else the
   fastest. */
#ifndef REPOC_LINKPLAN_H
#define REPOC_LINKPLAN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

/* communication at most this fraction of the compute: the link keeps up */
#define LINKPLAN_KEEP_UP 0.10
/* seconds per message: a TCP round trip on a switched Ethernet LAN is about 50-100 µs */
#define LINKPLAN_LATENCY_S 100e-6
/* the backward's part of a step's compute: twice the forward's products */
#define LINKPLAN_BACKWARD_SHARE (2.0 / 3.0)

typedef struct {
    double gbps;       /* the link's line rate, Gb/s */
    size_t trained;    /* P: trained parameters (the gradient arena) */
    size_t ranks;      /* N >= 2 */
    double compute_s;  /* one step's compute on one rank */
    bool sharded;      /* train.shard_optimizer: the weights' all-gather too (synchronous modes) */
    bool overlap;      /* train.overlap_grad_reduce: the synchronous gradient ring during the backward */
    double last_share; /* the part of the gradients summed only after the backward (the input embedding's) */
} LinkPlan;

/* The modes the plan compares, in the order it prefers them: the bytes per gradient element on the wire and
   how many steps between two sums (1: synchronous; H: DiLoCo) */
typedef struct {
    const char* name;
    size_t wire_bytes, every;
} LinkMode;
#define LINKPLAN_N_MODES 5
extern const LinkMode LINKPLAN_MODES[LINKPLAN_N_MODES];

/* the communication seconds per step of one mode that the compute does not hide: wire_bytes 4 or 2, every 1
   (synchronous) or H */
double linkplan_comm_s(const LinkPlan* p, size_t wire_bytes, size_t every);
/* the slowest link (Gb/s) over which that mode keeps up (its communication at most LINKPLAN_KEEP_UP of the
   compute), within 0.1%; INFINITY when its messages' latency alone is more */
double linkplan_min_gbps(const LinkPlan* p, size_t wire_bytes, size_t every);
/* The table of the modes' step times and the favoured one, for a run (fp: stdout) */
void linkplan_print(const LinkPlan* p, FILE* fp);

#endif
