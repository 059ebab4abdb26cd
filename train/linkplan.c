/* The link plan (train/linkplan.h): each mode's bytes and messages per step over a link of a given speed. */
#include "train/linkplan.h"

#include <math.h>

#define PIECE ((double)(1 << 18)) /* elements per message of common/dist.c's rings */

const LinkMode LINKPLAN_MODES[LINKPLAN_N_MODES] = {{"synchronous, f32 on the wire", 4, 1},
                                                   {"synchronous, bf16 on the wire", 2, 1},
                                                   {"DiLoCo H=10 (train.outer), f32", 4, 10},
                                                   {"DiLoCo H=50, f32", 4, 50},
                                                   {"DiLoCo H=100, f32", 4, 100}};

/* messages of one ring over P elements: 2 (N-1) steps of ceil(P / (N 2^18)) pieces (half for an all-gather) */
static double ring_messages(const LinkPlan* p) {
    return 2 * ((double)p->ranks - 1) * ceil((double)p->trained / ((double)p->ranks * PIECE));
}

double linkplan_comm_s(const LinkPlan* p, size_t wire_bytes, size_t every) {
    double N = (double)p->ranks, P = (double)p->trained, bytes_per_s = p->gbps * 1e9 / 8;
    double ring = 2 * (N - 1) / N * P * (double)wire_bytes / bytes_per_s + ring_messages(p) * LINKPLAN_LATENCY_S;
    if (every > 1) return ring / (double)every; /* DiLoCo: after the H-th step */
    if (p->overlap) {
        double hidden = ring - LINKPLAN_BACKWARD_SHARE * p->compute_s, last = ring * p->last_share;
        ring = hidden > last ? hidden : last;
    }
    double gather = !p->sharded ? 0 /* the weights' all-gather of ZeRO-1, FP32 */
                                : (N - 1) / N * P * 4 / bytes_per_s + ring_messages(p) / 2 * LINKPLAN_LATENCY_S;
    return ring + gather;
}

double linkplan_min_gbps(const LinkPlan* p, size_t wire_bytes, size_t every) {
    LinkPlan q = *p;
    double lo = 1e-6, hi = 1e6, keep = LINKPLAN_KEEP_UP * p->compute_s; /* the communication falls as gbps grows */
    q.gbps = hi;
    if (linkplan_comm_s(&q, wire_bytes, every) > keep) return INFINITY;
    while (hi > lo * 1.001) {
        q.gbps = sqrt(lo * hi);
        *(linkplan_comm_s(&q, wire_bytes, every) > keep ? &lo : &hi) = q.gbps;
    }
    return hi;
}

void linkplan_print(const LinkPlan* p, FILE* fp) {
    fprintf(fp,
            "link plan: %g Gb/s, %zu ranks, %.0f µs per message; compute ≈ %.2f s/step per rank (the time plan); "
            "gradients %s the backward%s\n",
            p->gbps, p->ranks, LINKPLAN_LATENCY_S * 1e6, p->compute_s, p->overlap ? "summed during" : "sent after",
            p->sharded ? ", ZeRO-1's all-gather after the AdamW step" : "");
    int pick = -1, fastest = 0;
    double best = 0;
    for (int k = 0; k < LINKPLAN_N_MODES; k++) {
        const LinkMode* mode = &LINKPLAN_MODES[k];
        double comm = linkplan_comm_s(p, mode->wire_bytes, mode->every), step = p->compute_s + comm;
        fprintf(fp, "  %-32s ≈ %8.2f s/step (communication %.2f s, %.0f%% of the compute; keeps up from %.3g Gb/s)\n",
                mode->name, step, comm, p->compute_s > 0 ? 100 * comm / p->compute_s : 0.0,
                linkplan_min_gbps(p, mode->wire_bytes, mode->every));
        if (pick < 0 && comm <= LINKPLAN_KEEP_UP * p->compute_s) pick = k;
        if (k == 0 || step < best) {
            best = step;
            fastest = k;
        }
    }
    if (pick >= 0)
        fprintf(fp, "  this link favours: %s (the first above whose communication is at most %.0f%% of the compute)\n",
                LINKPLAN_MODES[pick].name, 100 * LINKPLAN_KEEP_UP);
    else
        fprintf(fp, "  this link favours: %s (none keeps the communication under %.0f%% of the compute)\n",
                LINKPLAN_MODES[fastest].name, 100 * LINKPLAN_KEEP_UP);
}
