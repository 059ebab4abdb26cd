/* build/bench/bench_attention: causal attention forward + backward against the
   sgemm rate of the same process (docs/performance.md, "Attention kernel").
     bench_attention [--T 256,1024] [--hd 32,64,128] [--B N] [--H N] [--KVH N]
                     [--reps N] [--threads N] [--sgemm N] [--window W] [--cpu] [--json] [--backward-ways] [--bf16]
   For each (T, hd): the sgemm rate on N×N (best of 5), then one warm-up call
   pair of attention and the median of --reps pairs, so each ratio compares two
   rates measured at the same moment. --cpu times with the process's CPU time
   instead of wall time: with --threads 1 on a busy machine, a steadier measure
   of the kernel itself (other processes' time slices do not count).
   FLOPs: forward 2·B·H·T²·hd (the causal halves of QK^T and PV), backward
   twice that, as in bench_step's model count; backward's recomputation of S is
   not counted. --window W also times each shape with a sliding window of W keys (Gemma-3's sliding layers),
   right after the causal one, and prints the causal / windowed time ratio.
   --backward-ways times the backward alone both ways (one task per (batch, kv head), and split by key and
   query block: model/attention.c), alternated, the median of each and their ratio, instead of the above.
   --bf16 also times each shape with BF16 operands (AttnShape.bf16), the two alternated pair by pair, and prints
   the f32 / bf16 time ratio; where AMX is usable, also BF16 kept off AMX (vdpbf16ps, AttnShape.no_amx). --json
   writes the same as one object per shape ("bf16_ms", "bf16_no_amx_ms": 0 where not timed).
   Defaults: B 2, H = KVH = 8, reps 5, sgemm 1024 (0 = off). */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/check.h"
#include "common/clock.h"
#include "common/threads.h"
#include "bench/bench_common.h"

#define MAX_LIST 8

typedef struct {
    size_t T[MAX_LIST], hd[MAX_LIST], nT, nhd, B, H, KVH;
    int reps, threads, sgemm_n;
    size_t window;
    bool json, cpu, ways, bf16;
} Opts;

static bool use_cpu_time;

static double seconds(void) {
    if (!use_cpu_time) return now_s();
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int cmp_double(const void* a, const void* b) {
    double x = *(const double*)a, y = *(const double*)b;
    return (x > y) - (x < y);
}

static double median(double* x, int n) {
    qsort(x, (size_t)n, sizeof(double), cmp_double);
    return n % 2 ? x[n / 2] : 0.5 * (x[n / 2 - 1] + x[n / 2]);
}

/* median milliseconds of one forward + backward pair, after a warm-up pair; window > 0: sliding. With
   --bf16, ms[1] that of BF16 operands and, where AMX is usable (model/amx.h), ms[2] that of BF16 operands kept
   off AMX (vdpbf16ps), the modes alternated pair by pair. */
static void time_attention(const Opts* o, size_t T, size_t hd, size_t window, double ms[3]) {
    AttBench a = att_bench_init(o->B, T, o->H, o->KVH, hd);
    int32_t* start = NULL;
    DocSpans spans;
    if (window) {
        start = mallocCheck(o->B * T * sizeof(int32_t));
        window_starts(start, NULL, o->B, T, window);
        spans = (DocSpans){start};
        a.docs = &spans;
    }
    double t[3][64];
    int reps = o->reps < 64 ? o->reps : 64, modes = o->bf16 ? (amx_usable() ? 3 : 2) : 1;
    for (int m = 0; m < modes; m++) { /* warm-up */
        a.bf16 = m >= 1;
        a.no_amx = m == 2;
        att_bench_pair(&a, seconds);
    }
    for (int r = 0; r < reps; r++)
        for (int m = 0; m < modes; m++) {
            a.bf16 = m >= 1;
            a.no_amx = m == 2;
            t[m][r] = att_bench_pair(&a, seconds) * 1e3;
        }
    att_bench_free(&a);
    free(start);
    for (int m = 0; m < modes; m++) ms[m] = median(t[m], reps);
}

/* the backward's two ways, alternated reps times: median milliseconds of each */
static void time_backward_ways(const Opts* o, size_t T, size_t hd, double ms[2]) {
    AttBench a = att_bench_init(o->B, T, o->H, o->KVH, hd);
    double t[2][64];
    int reps = o->reps < 64 ? o->reps : 64;
    att_bench_backward(&a, seconds, false); /* warm-up */
    for (int r = 0; r < reps; r++)
        for (int w = 0; w < 2; w++) t[w][r] = att_bench_backward(&a, seconds, w == 1) * 1e3;
    att_bench_free(&a);
    for (int w = 0; w < 2; w++) ms[w] = median(t[w], reps);
}

static void run_backward_ways(const Opts* o) {
    printf("backward alone, B %zu H %zu KVH %zu (%zu (batch, kv head) pairs), median of %d alternated rounds\n"
           "%6s %4s %14s %14s %10s\n",
           o->B, o->H, o->KVH, o->B * o->KVH, o->reps, "T", "hd", "per kv head ms", "split ms", "split gain");
    for (size_t i = 0; i < o->nT; i++)
        for (size_t j = 0; j < o->nhd; j++) {
            double ms[2];
            time_backward_ways(o, o->T[i], o->hd[j], ms);
            printf("%6zu %4zu %14.2f %14.2f %9.2fx\n", o->T[i], o->hd[j], ms[0], ms[1], ms[0] / ms[1]);
        }
}

static void usage(void) {
    fprintf(stderr, "usage: bench_attention [--T 256,1024] [--hd 32,64,128] [--B N] [--H N] [--KVH N]\n"
                    "                       [--reps N] [--threads N] [--sgemm N] [--window W] [--cpu] [--json]\n"
                    "                       [--backward-ways] [--bf16]\n");
    exit(2);
}

static size_t parse_list(size_t* out, const char* s) {
    size_t n = 0;
    char* end;
    for (;;) {
        long x = strtol(s, &end, 10);
        if (end == s || x <= 0 || n == MAX_LIST) usage();
        out[n++] = (size_t)x;
        if (*end == 0) return n;
        if (*end != ',') usage();
        s = end + 1;
    }
}

static long parse_int(const char* s) {
    char* end;
    long x = strtol(s, &end, 10);
    if (end == s || *end || x < 0) usage();
    return x;
}

int main(int argc, char** argv) {
    Opts o = {.T = {256, 1024},
              .hd = {32, 64, 128},
              .nT = 2,
              .nhd = 3,
              .B = 2,
              .H = 8,
              .KVH = 8,
              .reps = 5,
              .sgemm_n = 1024};
    for (int i = 1; i < argc; i++) {
        const char* a = argv[i];
        if (!strcmp(a, "--json")) {
            o.json = true;
            continue;
        }
        if (!strcmp(a, "--cpu")) {
            o.cpu = use_cpu_time = true;
            continue;
        }
        if (!strcmp(a, "--bf16")) {
            o.bf16 = true;
            continue;
        }
        if (!strcmp(a, "--backward-ways")) {
            o.ways = true;
            continue;
        }
        if (i + 1 >= argc) usage();
        const char* v = argv[++i];
        if (!strcmp(a, "--T")) o.nT = parse_list(o.T, v);
        else if (!strcmp(a, "--hd")) o.nhd = parse_list(o.hd, v);
        else if (!strcmp(a, "--B")) o.B = (size_t)parse_int(v);
        else if (!strcmp(a, "--H")) o.H = (size_t)parse_int(v);
        else if (!strcmp(a, "--KVH")) o.KVH = (size_t)parse_int(v);
        else if (!strcmp(a, "--reps")) o.reps = (int)parse_int(v);
        else if (!strcmp(a, "--threads")) o.threads = (int)parse_int(v);
        else if (!strcmp(a, "--sgemm")) o.sgemm_n = (int)parse_int(v);
        else if (!strcmp(a, "--window")) o.window = (size_t)parse_int(v);
        else usage();
    }
    if (o.B == 0 || o.H == 0 || o.KVH == 0 || o.H % o.KVH || o.reps < 1) usage();
    int threads = threads_init(o.threads);
    if (o.ways) {
        threads_print(stdout);
        run_backward_ways(&o);
        return 0;
    }
    if (!o.json) {
        threads_print(stdout);
        printf("%s time; sgemm on %d x %d before each case\n%6s %4s %10s %10s %10s %10s %8s", o.cpu ? "CPU" : "wall",
               o.sgemm_n, o.sgemm_n, "T", "hd", "ms", "us/token", "GFLOP/s", "sgemm", "of sgemm");
        if (o.window) printf(" %12s %14s", "window ms", "causal/window");
        if (o.bf16) printf(" %10s %10s", "bf16 ms", "f32/bf16");
        if (o.bf16 && amx_usable()) printf(" %14s %10s", "bf16 no-AMX ms", "f32/no-AMX");
        printf("\n");
    }
    for (size_t i = 0; i < o.nT; i++)
        for (size_t j = 0; j < o.nhd; j++) {
            size_t T = o.T[i], hd = o.hd[j];
            double sg_ms, sg = o.sgemm_n > 0 ? sgemm_rate(o.sgemm_n, seconds, &sg_ms) : 0;
            double ms2[3] = {0, 0, 0}, wms2[3] = {0, 0, 0};
            time_attention(&o, T, hd, 0, ms2);
            if (o.window) time_attention(&o, T, hd, o.window, wms2);
            double ms = ms2[0], wms = wms2[0];
            double flops = 3 * 2.0 * o.B * o.H * (double)T * T * hd, gf = flops / ms * 1e-6;
            double us_tok = ms * 1e3 / (double)(o.B * T), frac = sg > 0 ? gf / sg : 0;
            if (o.json)
                printf("{\"T\": %zu, \"hd\": %zu, \"B\": %zu, \"H\": %zu, \"KVH\": %zu, \"threads\": %d, \"ms\": %.3f, "
                       "\"us_per_token\": %.3f, \"gflops\": %.2f, \"sgemm_gflops\": %.2f, \"of_sgemm\": %.4f, "
                       "\"window\": %zu, \"window_ms\": %.3f, \"bf16_ms\": %.3f, \"bf16_no_amx_ms\": %.3f, "
                       "\"time\": \"%s\"}\n",
                       T, hd, o.B, o.H, o.KVH, threads, ms, us_tok, gf, sg, frac, o.window, wms, ms2[1], ms2[2],
                       o.cpu ? "cpu" : "wall");
            else {
                printf("%6zu %4zu %10.2f %10.2f %10.1f %10.1f %7.1f%%", T, hd, ms, us_tok, gf, sg, 100 * frac);
                if (o.window) printf(" %12.2f %13.2fx", wms, ms / wms);
                if (o.bf16) printf(" %10.2f %9.2fx", ms2[1], ms / ms2[1]);
                if (o.bf16 && amx_usable()) printf(" %14.2f %9.2fx", ms2[2], ms / ms2[2]);
                printf("\n");
            }
        }
    return 0;
}
