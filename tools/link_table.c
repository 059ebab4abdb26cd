/* The tables of docs/mpi.md, "Link speed": train/linkplan.c's model for a model of P trained parameters,
   E of them the input embedding's (summed after the backward), a step's compute C seconds on one rank:
   what the trainer's --plan prints for 2 ranks over 1, 10, 25 and 100 Gb/s, and the slowest link over which each keeps up (its
   communication at most 10% of the compute), for 2 and 4 ranks, replicated AdamW (train.shard_optimizer
   false), with and without train.overlap_grad_reduce. Here the compute is given, not probed by the time
   plan, so that a table does not move with the machine's load.
   Not part of the build:

     make && cc -O2 -I. tools/link_table.c build/obj32/train/linkplan.o -lm -o build/link_table
     build/link_table 134515008 28311552 13.2     # SmolLM2-135M (tied), 13.2 s a step on 2 cores
*/
#include <stdio.h>
#include <stdlib.h>

#include "train/linkplan.h"

int main(int argc, char** argv) {
    if (argc != 4) {
        fprintf(stderr, "usage: %s P E compute_s\n", argv[0]);
        return 2;
    }
    double P = atof(argv[1]), E = atof(argv[2]), C = atof(argv[3]);
    static const double links[4] = {1, 10, 25, 100};
    LinkPlan p = {.trained = (size_t)P, .ranks = 2, .compute_s = C, .last_share = E / P};
    printf("P = %.4g, embedding %.1f%%, compute %.3g s a step; replicated AdamW\n", P, 100 * E / P, C);
    for (int g = 0; g < 4; g++) { /* 2 ranks, overlapped: what --plan prints */
        p.gbps = links[g];
        p.overlap = true;
        linkplan_print(&p, stdout);
        p.overlap = false;
        printf("  (not overlapped, synchronous f32: communication %.0f%% of the compute)\n",
               100 * linkplan_comm_s(&p, 4, 1) / C);
    }
    printf("\nslowest link that keeps up (Gb/s):\n");
    for (size_t n = 2; n <= 4; n += 2)
        for (int ov = 1; ov >= 0; ov--) {
            p.ranks = n;
            p.overlap = ov;
            printf("  %zu ranks, %s\n", n, ov ? "overlapped:" : "not overlapped:");
            for (int k = 0; k < LINKPLAN_N_MODES; k++) {
                const LinkMode* mode = &LINKPLAN_MODES[k];
                printf("    %-32s %.3g\n", mode->name, linkplan_min_gbps(&p, mode->wire_bytes, mode->every));
            }
            printf("\n");
        }
    return 0;
}
