/* The link plan (train/linkplan.h): each mode's bytes and messages per step over a link of a given speed. */
#include "train/linkplan.h"

#define PIECE ((double)(1 << 18)) /* elements per message of common/dist.c's rings */

double linkplan_comm_s(const LinkPlan* p, size_t wire_bytes, size_t every) {
    double N = (double)p->ranks, P = (double)p->trained, bytes_per_s = p->gbps * 1e9 / 8;
    double pieces = P / (N * PIECE);
    pieces = pieces > (double)(size_t)pieces ? (double)(size_t)pieces + 1 : pieces; /* ceil */
    double bytes = 2 * (N - 1) / N * P * (double)wire_bytes, msgs = 2 * (N - 1) * pieces;
    if (every == 1 && p->sharded) { /* the weights' all-gather of ZeRO-1, FP32 */
        bytes += (N - 1) / N * P * 4;
        msgs += (N - 1) * pieces;
    }
    return (bytes / bytes_per_s + msgs * LINKPLAN_LATENCY_S) / (double)every;
}

void linkplan_print(const LinkPlan* p, FILE* fp) {
    static const char* const names[5] = {"synchronous, f32 on the wire", "synchronous, bf16 on the wire",
                                         "DiLoCo H=10 (train.outer), f32", "DiLoCo H=50, f32", "DiLoCo H=100, f32"};
    static const size_t wire[5] = {4, 2, 4, 4, 4}, every[5] = {1, 1, 10, 50, 100};
    fprintf(fp, "link plan: %g Gb/s, %zu ranks, %.0f µs per message; compute ≈ %.2f s/step per rank (the time plan)\n",
            p->gbps, p->ranks, LINKPLAN_LATENCY_S * 1e6, p->compute_s);
    int pick = -1, fastest = 0;
    double best = 0;
    for (int k = 0; k < 5; k++) {
        double comm = linkplan_comm_s(p, wire[k], every[k]), step = p->compute_s + comm;
        fprintf(fp, "  %-32s ≈ %8.2f s/step (communication %.2f s, %.0f%% of the compute)\n", names[k], step, comm,
                p->compute_s > 0 ? 100 * comm / p->compute_s : 0.0);
        if (pick < 0 && comm <= LINKPLAN_KEEP_UP * p->compute_s) pick = k;
        if (k == 0 || step < best) {
            best = step;
            fastest = k;
        }
    }
    if (pick >= 0)
        fprintf(fp, "  this link favours: %s (the first above whose communication is at most %.0f%% of the compute)\n",
                names[pick], 100 * LINKPLAN_KEEP_UP);
    else
        fprintf(fp, "  this link favours: %s (none keeps the communication under %.0f%% of the compute)\n",
                names[fastest], 100 * LINKPLAN_KEEP_UP);
}
