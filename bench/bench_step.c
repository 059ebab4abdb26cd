/* build/bench/bench_step: time full training steps (zero_grad, forward,
   backward, clip, AdamW) of a reference size after warm-up (the
   method and the FLOP count are in docs/performance.md; tools/bench.sh runs it).
     bench_step [--size S|M|L|long] [--mode rope|repo|nope|r2n1|n2r1] [--steps N] [--warmup N]
                [--threads N] [--block olmo2|llama] [--tokens-seed N] [--json] [--no-attn] [--mfu-sgemm N]
                [--B N] [--T N]   the size's model at another batch size or sequence length
                [--gemms]   also time the step's linear GEMMs alone (its seven projections per layer and
                the LM head, forward and backward, in its order and on its buffers): the floor the
                GEMMs set, and what the rest of the step costs
     --mfu-sgemm N (default 2048, 0 = off): right after the timed steps, the sgemm rate on
                N×N in the same process with the same threads, the denominator of MFU
     bench_step --sgemm N [--threads N] [--json]       OpenBLAS sgemm GFLOP/s on N×N matrices
     bench_step --cpu   the CPU model, the instruction set the binary was built for and OpenBLAS's core
   Every run prints (with --json: has keys for) the CPU model and level, the build's
   instruction set and OpenBLAS's core, so a result says which machine and which code it measured.
     bench_step --save-weights DIR [--size ...] [--mode ...] [--tokens-seed N]
                writes the initialised model as a Hugging Face checkpoint (F32) and the
                token batch as DIR/batch.i32 (B*T tokens, then B*T targets, int32 LE), then exits
   Sizes: S D=256 L=4 H=8 F=1024 V=4096 B=8 T=256; M D=512 L=8 H=8 F=1376
   V=32000 B=4 T=1024; L D=768 L=12 H=12 F=3072 V=50304 B=2 T=1024; long = M at B=1 T=4096. */
#include <cblas.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "common/check.h"
#include "common/clock.h"
#include "common/cpu.h"
#include "common/fileio.h"
#include "common/rng.h"
#include "common/threads.h"
#include "bench/bench_common.h"
#include "bench/bench_sizes.h"
#include "hf/hf_checkpoint.h"
#include "model/dispatch.h"
#include "model/engine.h"
#include "model/linear.h"
#include "model/model.h"
#include "optim/adamw.h"
#include "optim/clip.h"
#include "tests/testutil.h"

typedef struct {
    const char *size, *mode, *block, *save_dir, *compute, *f32_engine;
    int steps, warmup, threads, sgemm_n, mfu_n;
    long batch, seq_len; /* --B, --T: override the size's B and T (0 = keep) */
    unsigned long long tokens_seed;
    bool json, attn, cpu, gemms;
} BenchOpts;

static double peak_rss_mib(void) {
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return ru.ru_maxrss / 1024.0; /* Linux: KiB */
}

static double minor_faults(void) {
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (double)ru.ru_minflt;
}

static void bench_sgemm(int n, int threads, bool json) {
    double ms, gflops = sgemm_rate(n, now_s, &ms);
    if (json) printf("{\"sgemm_n\": %d, \"threads\": %d, \"gflops\": %.2f, \"ms\": %.2f}\n", n, threads, gflops, ms);
    else printf("sgemm %d x %d, threads %d: best %.2f ms, %.1f GFLOP/s\n", n, n, threads, ms, gflops);
}

/* milliseconds of attention forward + backward for all L layers (one call pair
   per layer) on random q, k, v of the model's shapes, after one warm-up pair; with BF16 operands where the
   step's attention takes them (bf16: --compute bf16, and attention_bf16_pays) */
static double bench_attention(const ModelConfig* c, size_t B, size_t T, bool bf16) {
    AttBench a = att_bench_init(B, T, c->H, c->KVH, cfg_hd(c));
    a.bf16 = bf16 && attention_bf16_pays();
    double t = 0;
    att_bench_pair(&a, now_s);
    for (size_t l = 0; l < c->L; l++) t += att_bench_pair(&a, now_s);
    att_bench_free(&a);
    return t * 1e3;
}

/* Milliseconds of one step's linear GEMMs alone, median of `reps`: the seven projections of every layer (gate
   and up through linear_pair, as block.c runs them) and the LM head, forward then backward, in the order and
   with the beta (write or add) of model.c and block.c, on the model's own buffers (which hold a step's
   values); RePo's small GEMMs are left out. *gflop: their FLOPs, 6·N·in·out per linear. Outputs are written
   to buffers of the right size, not always to the ones the step uses (Llama has no a->d, so the down
   projection writes s->dd; the input gradients of the MLP and of q, k, v go to m->dres for both blocks). */
static double bench_gemms(Model* m, int reps, double* gflop) {
    const ModelConfig* c = &m->cfg;
    size_t N = m->B * m->T, D = c->D, F = c->F, V = c->V, qd = c->H * cfg_hd(c), kvd = c->KVH * cfg_hd(c);
    BlockScratch* s = &m->bs;
    bool olmo2 = c->block == BLOCK_OLMO2; /* its first input-gradient GEMMs add into the residual gradient */
    double* t = mallocCheck((size_t)reps * sizeof(double));
    Bf16Products* bf = model_products(m); /* --compute bf16: the same BF16 products as the step */
    for (int r = 0; r < reps; r++) {
        double t0 = now_s();
        for (size_t l = 0; l < c->L; l++) {
            LayerActs* a = &m->la[l];
            const LayerWeights* w = &m->w.layer[l];
            const real* x = m->res[l];
            linear_forward(bf, a->q, x, w->wq, N, D, qd);
            linear_forward(bf, a->k, x, w->wk, N, D, kvd);
            linear_forward(bf, a->v, x, w->wv, N, D, kvd);
            linear_forward(bf, a->o, a->att, w->wo, N, qd, D);
            linear_pair_forward(bf, a->gu, a->x_mid, &(LinearPair){w->gate, w->up, NULL, NULL, true, false}, N, D, F);
            linear_forward(bf, s->dd, a->m, w->down, N, F, D);
        }
        for (size_t r0 = 0; r0 < N; r0 += m->head_rows) { /* forward and backward per chunk, as model.c */
            size_t n = N - r0 < m->head_rows ? N - r0 : m->head_rows;
            linear_forward(bf, m->logits, m->final_out + r0 * D, m->w.lm_head, n, D, V);
            linear_backward(bf, m->dfinal + r0 * D, m->dw.lm_head, m->logits, m->final_out + r0 * D, m->w.lm_head, n, D,
                            V, false);
        }
        for (size_t l = c->L; l-- > 0;) {
            const LayerActs* a = &m->la[l];
            const LayerWeights* w = &m->w.layer[l];
            LayerWeights* dw = &m->dw.layer[l];
            const real* x = m->res[l];
            linear_backward(bf, s->dm, dw->down, s->dd, a->m, w->down, N, F, D, false);
            LinearPair gate_up = {w->gate, w->up, dw->gate, dw->up, true, false};
            linear_pair_backward(bf, m->dres, a->gu, a->x_mid, &gate_up, N, D, F, olmo2);
            linear_backward(bf, s->datt, dw->wo, s->do_, a->att, w->wo, N, qd, D, false);
            linear_backward(bf, m->dres, dw->wq, s->dq, x, w->wq, N, D, qd, olmo2);
            linear_backward(bf, m->dres, dw->wk, s->dk, x, w->wk, N, D, kvd, true);
            linear_backward(bf, m->dres, dw->wv, s->dv, x, w->wv, N, D, kvd, true);
        }
        t[r] = now_s() - t0;
    }
    *gflop = 6.0 * (double)N * ((double)c->L * (D * qd + 2 * D * kvd + qd * D + 3 * D * F) + (double)D * V) * 1e-9;
    double ms = median(t, (size_t)reps) * 1e3;
    free(t);
    return ms;
}

/* DIR/batch.i32: the N tokens, then the N targets, int32 little-endian (x86) */
static void save_batch(const char* dir, const int32_t* tok, const int32_t* tgt, size_t N) {
    char path[4096];
    snprintf(path, sizeof(path), "%s/batch.i32", dir);
    int32_t* both = mallocCheck(2 * N * sizeof(int32_t));
    memcpy(both, tok, N * sizeof(int32_t));
    memcpy(both + N, tgt, N * sizeof(int32_t));
    file_write_atomic(path, both, 2 * N * sizeof(int32_t));
    free(both);
}

static void usage(FILE* fp) {
    fprintf(
        fp,
        "usage: bench_step [--size S|M|L|long] [--mode rope|repo|nope|r2n1|n2r1] [--steps N] [--warmup N]\n"
        "                  [--threads N] [--block olmo2|llama] [--tokens-seed N] [--json] [--no-attn] [--mfu-sgemm N]\n"
        "                  [--B N] [--T N]   (the size's model at another batch size / sequence length)\n"
        "                  [--gemms]   (also the step's linear GEMMs alone)\n"
        "                  [--compute f32|bf16|auto]   (the products' operands: train.compute_dtype)\n"
        "                  [--f32-engine auto|openblas|onednn]   (what runs the FP32 products: train.f32_engine)\n"
        "       bench_step --sgemm N [--threads N] [--json]\n"
        "       bench_step --cpu\n"
        "       bench_step --save-weights DIR [--size ...] [--mode ...] [--block ...] [--tokens-seed N]\n");
}

static void parse_args(BenchOpts* o, int argc, char** argv) {
    *o = (BenchOpts){"S", "repo", "olmo2", NULL, "f32", "auto", 5, 2, 0, 0, 2048, 0, 0, 1, false, true, false, false};
    for (int i = 1; i < argc; i++) {
        const char* a = argv[i];
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            usage(stdout);
            exit(0);
        }
        if (!strcmp(a, "--json")) {
            o->json = true;
            continue;
        }
        if (!strcmp(a, "--no-attn")) {
            o->attn = false;
            continue;
        }
        if (!strcmp(a, "--cpu")) {
            o->cpu = true;
            continue;
        }
        if (!strcmp(a, "--gemms")) {
            o->gemms = true;
            continue;
        }
        if (i + 1 >= argc) {
            fprintf(stderr, "bench_step: %s needs a value\n", a);
            usage(stderr);
            exit(2);
        }
        const char* v = argv[++i];
        if (!strcmp(a, "--size")) o->size = v;
        else if (!strcmp(a, "--mode")) o->mode = v;
        else if (!strcmp(a, "--block")) o->block = v;
        else if (!strcmp(a, "--compute")) o->compute = v;
        else if (!strcmp(a, "--f32-engine")) o->f32_engine = v;
        else if (!strcmp(a, "--save-weights")) o->save_dir = v;
        else if (!strcmp(a, "--steps")) o->steps = atoi(v);
        else if (!strcmp(a, "--warmup")) o->warmup = atoi(v);
        else if (!strcmp(a, "--threads")) o->threads = atoi(v);
        else if (!strcmp(a, "--sgemm")) o->sgemm_n = atoi(v);
        else if (!strcmp(a, "--mfu-sgemm")) o->mfu_n = atoi(v);
        else if (!strcmp(a, "--tokens-seed")) o->tokens_seed = strtoull(v, NULL, 10);
        else if (!strcmp(a, "--B")) o->batch = atol(v);
        else if (!strcmp(a, "--T")) o->seq_len = atol(v);
        else {
            fprintf(stderr, "bench_step: unknown option %s\n", a);
            usage(stderr);
            exit(2);
        }
    }
    CHECK(o->steps >= 1 && o->warmup >= 0, "bench_step: --steps must be >= 1 and --warmup >= 0");
    CHECK(o->batch >= 0 && o->seq_len >= 0, "bench_step: --B and --T must be positive");
    CHECK(!strcmp(o->block, "olmo2") || !strcmp(o->block, "llama"), "bench_step: unknown block %s", o->block);
    CHECK(!strcmp(o->compute, "f32") || !strcmp(o->compute, "bf16") || !strcmp(o->compute, "auto"),
          "bench_step: --compute is f32, bf16 or auto, not %s", o->compute);
    F32Engine e;
    CHECK(!strcmp(o->f32_engine, "auto") || f32_engine_parse(o->f32_engine, &e),
          "bench_step: --f32-engine is auto, openblas or onednn, not %s", o->f32_engine);
}

/* --f32-engine and --compute, "auto" resolved as a training run resolves it (model/engine.h); true for bf16 */
static bool choose_products(const BenchOpts* o, const ModelConfig* c, size_t N) {
    bool auto_dtype = !strcmp(o->compute, "auto");
    EngineChoice ec = {.f32 = F32_OPENBLAS};
    if (!strcmp(o->f32_engine, "auto") || auto_dtype) engine_choose(&ec, c, N, auto_dtype);
    F32Engine e = ec.f32;
    if (strcmp(o->f32_engine, "auto")) f32_engine_parse(o->f32_engine, &e);
    products_set_f32_engine(e);
    if (!o->json) {
        if (!strcmp(o->f32_engine, "auto")) engine_print(&ec, stdout);
        if (auto_dtype) printf("compute dtype: %s (auto: %s)\n", ec.bf16_pays ? "bf16" : "f32", ec.bf16_why);
    }
    return auto_dtype ? ec.bf16_pays : !strcmp(o->compute, "bf16");
}

int main(int argc, char** argv) {
    threads_startup(); /* the programs' wait policy (common/threads.h), so a bench times what they run */
    BenchOpts o;
    parse_args(&o, argc, argv);
    int threads = threads_init(o.threads);
    if (o.cpu) {
        cpu_print(stdout, dispatch_describe());
        char why[512];
        if (products_bf16_available(why, sizeof(why))) printf("bf16 products: %s\n", products_name(true));
        else printf("bf16 products: unavailable: %s\n", why);
        return 0;
    }
    if (o.sgemm_n) {
        bench_sgemm(o.sgemm_n, threads, o.json);
        return 0;
    }

    ModelConfig c;
    model_config_default(&c);
    c.block = strcmp(o.block, "llama") ? BLOCK_OLMO2 : BLOCK_LLAMA;
    size_t B, T;
    CHECK(size_config(&c, o.size, &B, &T), "bench_step: unknown size %s (S, M, L, long)", o.size);
    if (o.batch) B = (size_t)o.batch; /* the size's model at another batch shape (docs/performance.md) */
    if (o.seq_len) T = (size_t)o.seq_len;
    CHECK(model_config_plan_positions(&c, o.mode, REPO_START_DEFAULT), "bench_step: unknown mode %s", o.mode);
    Model m;
    bool bf16 = choose_products(&o, &c, B * T);
    model_build_opts(&m, &c, B, T, NULL, 0, &(ModelOpts){.compute_bf16 = bf16}, false);
    model_init_weights(&m, &(ModelInit){.seed = 1, .std = 0.02});
    size_t N = B * T;
    int32_t* tok = mallocCheck(N * sizeof(int32_t));
    int32_t* tgt = mallocCheck(N * sizeof(int32_t));
    Rng rng;
    rng_seed(&rng, o.tokens_seed);
    for (size_t i = 0; i < N; i++) {
        tok[i] = (int32_t)rng_below(&rng, c.V);
        tgt[i] = (int32_t)rng_below(&rng, c.V);
    }
    if (o.save_dir) {
        hf_save(&m, o.save_dir, ST_F32);
        save_batch(o.save_dir, tok, tgt, N);
        printf("wrote %s (config.json, model.safetensors, batch.i32)\n", o.save_dir);
        free(tok);
        free(tgt);
        model_free(&m);
        return 0;
    }

    OptimConfig oc;
    optim_config_default(&oc);
    AdamW opt;
    FILE* devnull = fopenCheck("/dev/null", "w");
    FILE* saved = stdout;
    stdout = devnull; /* adamw_build prints its groups */
    adamw_build(&opt, &m.tensors, &oc);
    opt.mirror = m.params_bf16; /* NULL in f32 */
    opt.mirror_from = m.mirror_from;
    stdout = saved;
    fcloseCheck(devnull, "/dev/null");

    Batch b = {.B = B, .T = T, .tokens = tok, .targets = tgt};
    int n = o.steps;
    double *t_step = mallocCheck(4 * n * sizeof(double)), *t_fwd = t_step + n, *t_bwd = t_fwd + n, *t_opt = t_bwd + n;
    double loss0 = 0, sum = 0, faults = 0;
    for (int s = 0; s < o.warmup + n; s++) {
        if (s == o.warmup) faults = minor_faults();
        double t0 = now_s();
        double loss = model_forward_train(&m, &b).loss;
        double t1 = now_s();
        model_backward(&m, &b, 1.0);
        double t2 = now_s();
        double norm = grad_global_norm(m.grads, m.tensors.n_grads);
        adamw_step(&opt, m.params, m.grads, 1e-4, (size_t)s, grad_clip_scale(1.0, norm), true); /* zeroes them */
        double t3 = now_s();
        if (s == 0) loss0 = loss;
        if (s < o.warmup) continue;
        int i = s - o.warmup;
        t_step[i] = t3 - t0;
        t_fwd[i] = t1 - t0;
        t_bwd[i] = t2 - t1;
        t_opt[i] = t3 - t2;
        sum += t3 - t0;
    }
    double rss = peak_rss_mib(); /* before the attention timing allocates anything */
    faults = (minor_faults() - faults) / n;
    double ms = median(t_step, n) * 1e3, fwd = median(t_fwd, n) * 1e3, bwd = median(t_bwd, n) * 1e3;
    double optm = median(t_opt, n) * 1e3, attn_flops, flops = model_train_flops(&c, B, T, &attn_flops);
    double gemm_gflop = 0, gemm_ms = o.gemms ? bench_gemms(&m, n, &gemm_gflop) : 0;
    double sg_ms,
        sg = o.mfu_n > 0 ? sgemm_rate(o.mfu_n, now_s, &sg_ms) : 0; /* same process, same threads, same moment */
    double attn_ms = o.attn ? bench_attention(&c, B, T, bf16) : 0;
    double tps = N / (ms * 1e-3), gflops = flops / (ms * 1e-3) * 1e-9;
    char cpu_name[256];
    cpu_model(cpu_name, sizeof(cpu_name));
    if (o.json) {
        printf("{\"impl\": \"%s\", \"size\": \"%s\", \"mode\": \"%s\", \"block\": \"%s\", \"params\": %zu, "
               "\"B\": %zu, \"T\": %zu, \"threads\": %d, \"steps\": %d, \"warmup\": %d, \"ms_step\": %.2f, "
               "\"ms_mean\": %.2f, \"tokens_per_s\": %.1f, \"gflop_step\": %.3f, \"gflops\": %.2f, "
               "\"attn_gflop_step\": %.3f, \"peak_rss_mib\": %.1f, \"loss0\": %.6f, \"fwd_ms\": %.2f, "
               "\"bwd_ms\": %.2f, \"opt_ms\": %.2f, \"attn_ms\": %.2f, \"attn_us_per_token\": %.3f, "
               "\"sgemm_gflops\": %.2f, \"mfu\": %.4f, \"minflt_per_step\": %.0f, \"cpu\": \"%s\", "
               "\"cpu_level\": \"%s\", \"isa\": \"%s\", \"blas_core\": \"%s\", \"gemms_ms\": %.2f, "
               "\"gemms_gflop\": %.3f, \"compute\": \"%s\", \"f32_engine\": \"%s\", \"products\": \"%s\"}\n",
               bf16 ? "repoc-bf16" : "repoc", o.size, o.mode, o.block, m.tensors.n_params, B, T, threads, n, o.warmup,
               ms, sum / n * 1e3, tps, flops * 1e-9, gflops, attn_flops * 1e-9, rss, loss0, fwd, bwd, optm, attn_ms,
               o.attn ? attn_ms * 1e3 / N : 0, sg, sg > 0 ? gflops / sg : 0, faults, cpu_name, cpu_level(),
               cpu_isa_built(), cpu_blas_core(), gemm_ms, gemm_gflop, bf16 ? "bf16" : "f32",
               f32_engine_name(products_f32_engine()), products_name(bf16));
    } else {
        cpu_print(stdout, dispatch_describe());
        printf("products: %s\n", products_name(bf16));
        if (bf16 && o.gemms) onednn_print(stdout);
        printf("size %s mode %s: params %zu, B=%zu T=%zu, threads %d: median %.1f ms/step (forward %.1f, backward "
               "%.1f, clip+AdamW+zero %.1f), %.0f tokens/s, %.2f GFLOP/step, %.1f GFLOP/s, peak RSS %.0f MiB, "
               "loss %.6f\n",
               o.size, o.mode, m.tensors.n_params, B, T, threads, ms, fwd, bwd, optm, tps, flops * 1e-9, gflops, rss,
               loss0);
        if (sg > 0)
            printf("  sgemm %d x %d right after the steps: %.1f GFLOP/s, MFU %.1f%%\n", o.mfu_n, o.mfu_n, sg,
                   100 * gflops / sg);
        if (o.gemms)
            printf("  the step's linear GEMMs alone (--gemms): %.1f ms, %.2f GFLOP, %.1f GFLOP/s%s%.1f%% of sgemm; the "
                   "rest of the step %.1f ms\n",
                   gemm_ms, gemm_gflop, gemm_gflop / gemm_ms * 1e3, sg > 0 ? ", " : "",
                   sg > 0 ? 100 * gemm_gflop / gemm_ms * 1e3 / sg : 0, ms - gemm_ms);
        if (o.attn)
            printf("  attention forward+backward alone, %zu layers: %.1f ms, %.2f us/token\n", c.L, attn_ms,
                   attn_ms * 1e3 / N);
    }
    free(t_step);
    free(tok);
    free(tgt);
    adamw_free(&opt);
    model_free(&m);
    return 0;
}
