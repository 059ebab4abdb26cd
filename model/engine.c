/* The engine choice for the products (model/engine.h): the rule, the timing on the run's shapes, the cache. */
#include "model/engine.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/check.h"
#include "common/clock.h"
#include "common/cpu.h"
#include "common/rng.h"
#include "common/threads.h"
#include "model/linear.h"

int engine_blas_core_tier(const char* core) {
    static const struct {
        const char* name;
        int tier;
    } cores[] = {{"katmai", 1},        {"coppermine", 1},  {"northwood", 1},    {"prescott", 1},   {"banias", 1},
                 {"atom", 1},          {"core2", 1},       {"penryn", 1},       {"dunnington", 1}, {"nehalem", 1},
                 {"athlon", 1},        {"opteron", 1},     {"opteron_sse3", 1}, {"barcelona", 1},  {"nano", 1},
                 {"bobcat", 1},        {"sandybridge", 2}, {"bulldozer", 2},    {"piledriver", 2}, {"haswell", 3},
                 {"steamroller", 3},   {"excavator", 3},   {"zen", 3},          {"skylakex", 4},   {"cooperlake", 4},
                 {"sapphirerapids", 4}};
    for (size_t i = 0; core && i < sizeof(cores) / sizeof(cores[0]); i++)
        if (!strcasecmp(core, cores[i].name)) return cores[i].tier;
    return 0;
}

static const char* tier_name(int tier) {
    static const char* names[] = {"unknown", "SSE", "AVX", "AVX2", "AVX-512"};
    return names[tier >= 0 && tier <= 4 ? tier : 0];
}

/* ---- the cache: one line per key, "key<TAB>openblas<TAB>onednn<TAB>bf16" (GFLOP/s, 0 = not measured) ---- */

const char* engine_cache_path(void) {
    static char path[4096];
    const char *dir = getenv("REPOC_CACHE_DIR"), *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
    if (dir) {
        if (!dir[0]) return NULL;
        snprintf(path, sizeof(path), "%s/engine.tsv", dir);
    } else if (xdg && xdg[0]) snprintf(path, sizeof(path), "%s/repoc/engine.tsv", xdg);
    else if (home && home[0]) snprintf(path, sizeof(path), "%s/.cache/repoc/engine.tsv", home);
    else return NULL;
    return path;
}

/* what the rates depend on: the CPU, the threads, both libraries' kernels, the shape */
static void cache_key(char* key, size_t n, const EngineChoice* c) {
    char model[256];
    cpu_model(model, sizeof(model));
    for (char* p = model; *p; p++)
        if (*p == '\t' || *p == '\n') *p = ' ';
    snprintf(key, n, "cpu=%s;level=%s;threads=%zu;openblas=%s;onednn=%s;shape=%zux%zux%zu", model, cpu_level(),
             threads_max(), cpu_blas_core(), onednn_name(), c->rows, c->in, c->out);
}

/* the cached rates of key into g; false when there are none (or the file is unreadable or malformed) */
static bool cache_read(const char* key, double g[RATE_N]) {
    const char* path = engine_cache_path();
    FILE* fp = path ? fopen(path, "r") : NULL;
    if (!fp) return false;
    char line[1024];
    bool found = false;
    size_t klen = strlen(key);
    while (!found && fgets(line, sizeof(line), fp))
        found = !strncmp(line, key, klen) && line[klen] == '\t' &&
                sscanf(line + klen + 1, "%lf %lf %lf", &g[0], &g[1], &g[2]) == 3 && g[0] >= 0 && g[1] >= 0 && g[2] >= 0;
    fclose(fp);
    return found;
}

/* mkdir -p of path's directory; false when it cannot be made */
static bool make_parent(const char* path) {
    char dir[4096];
    snprintf(dir, sizeof(dir), "%s", path);
    char* slash = strrchr(dir, '/');
    if (!slash) return true;
    *slash = 0;
    for (char* p = dir + 1; *p; p++) {
        if (*p != '/') continue;
        *p = 0;
        if (mkdir(dir, 0755) && errno != EEXIST) return false;
        *p = '/';
    }
    return !mkdir(dir, 0755) || errno == EEXIST;
}

/* key's line replaced (or added) with g: the other lines copied into a temporary file renamed over the cache.
   A cache that cannot be written is no error: the next run times again. */
static void cache_write(const char* key, const double g[RATE_N]) {
    const char* path = engine_cache_path();
    if (!path || !make_parent(path)) return;
    char tmp[4200];
    snprintf(tmp, sizeof(tmp), "%s.tmp.%ld", path, (long)getpid());
    FILE* out = fopen(tmp, "w");
    if (!out) return;
    FILE* in = fopen(path, "r");
    char line[1024];
    size_t klen = strlen(key);
    while (in && fgets(line, sizeof(line), in))
        if (strncmp(line, key, klen) || line[klen] != '\t') fputs(line, out);
    if (in) fclose(in);
    fprintf(out, "%s\t%.1f\t%.1f\t%.1f\n", key, g[0], g[1], g[2]);
    if (fclose(out) || rename(tmp, path)) unlink(tmp);
}

/* ---- the timing ---- */

typedef struct {
    size_t rows, in, out;
    real *x, *y, *W, *dW; /* x (rows, in), y (rows, out), W and dW (out, in) */
    bf16 *Wb, *work;      /* W's BF16 copy; the activation work space (two halves) */
    Bf16Products prod;
} Probe;

static void probe_alloc(Probe* p, size_t rows, size_t in, size_t out, bool with_bf16) {
    size_t nx = rows * in, ny = rows * out, nw = out * in;
    *p = (Probe){.rows = rows, .in = in, .out = out};
    p->x = mallocCheck((nx + ny + 2 * nw) * sizeof(real));
    p->y = p->x + nx;
    p->W = p->y + ny;
    p->dW = p->W + nw;
    Rng rng;
    rng_seed(&rng, 7);
    for (size_t i = 0; i < nx + ny + nw; i++) p->x[i] = (real)(rng_uniform(&rng) - 0.5);
    memset(p->dW, 0, nw * sizeof(real));
#ifndef REPOC_F64 /* (the double build has no BF16 products) */
    if (!with_bf16) return;
    size_t wide = in > out ? in : out, cap = rows * wide > nw ? rows * wide : nw;
    p->Wb = mallocCheck((nw + 2 * cap) * sizeof(bf16));
    p->work = p->Wb + nw;
    bf16_from_f32(p->Wb, p->W, 1, nw, nw);
    p->prod = (Bf16Products){.region = {{p->W, nw, p->Wb}}, .act = {p->work, p->work + cap}, .act_cap = cap};
#endif
}

static void probe_free(Probe* p) {
    free(p->x);
    free(p->Wb);
}

/* seconds of one product of the step: kind 0 forward y = x W^T, 1 input gradient x = y W, 2 weight gradient
   dW += y^T x; through the model's own linear layer, so OpenBLAS's row split is timed as a step runs it */
static double one_call(Probe* p, RateKind k, int kind) {
    Bf16Products* bf = k == RATE_BF16 ? &p->prod : NULL;
    double t0 = now_s();
    if (kind == 0) linear_forward(bf, p->y, p->x, p->W, p->rows, p->in, p->out);
    else if (kind == 1) linear_backward(bf, p->x, NULL, p->y, p->x, p->W, p->rows, p->in, p->out, false);
    else linear_backward(bf, NULL, p->dW, p->y, p->x, p->W, p->rows, p->in, p->out, false);
    return now_s() - t0;
}

/* the FP32 engine of kind k from now on (RATE_BF16's products take the probe's context instead) */
static void use(RateKind k) {
#ifndef REPOC_F64
    products_set_f32_engine(k == RATE_OPENBLAS ? F32_OPENBLAS : F32_ONEDNN);
#endif
}

#define PROBE_ROUNDS 8
#define PROBE_SECONDS 0.4

/* g[k] for each k with on[k]: the three products' FLOPs over the sum of their best times, the kinds
   alternated round by round (a load that comes and goes hits all of them alike) */
static void time_rates(size_t rows, size_t in, size_t out, const bool on[RATE_N], double g[RATE_N]) {
    Probe p;
    probe_alloc(&p, rows, in, out, on[RATE_BF16]);
    F32Engine prev_engine = products_f32_engine();
    double best[RATE_N][3], start = 0;
    for (int r = -1; r < PROBE_ROUNDS; r++) { /* round -1 warms up: threads, packing, oneDNN's primitives */
        if (r == 0) start = now_s();
        for (int k = 0; k < RATE_N; k++) {
            if (!on[k]) continue;
            use((RateKind)k);
            for (int kind = 0; kind < 3; kind++) {
                double t = one_call(&p, (RateKind)k, kind);
                if (r <= 0 || t < best[k][kind]) best[k][kind] = t;
            }
        }
        if (r >= 2 && now_s() - start > PROBE_SECONDS) break;
    }
    products_set_f32_engine(prev_engine);
    double flop = 3 * 2.0 * (double)rows * (double)in * (double)out;
    for (int k = 0; k < RATE_N; k++) g[k] = on[k] ? flop / (best[k][0] + best[k][1] + best[k][2]) * 1e-9 : 0;
    probe_free(&p);
}

/* ---- the rule ---- */

static void decide(EngineChoice* c, bool rule2, bool want_bf16) {
    const double* g = c->gflops;
    char shape[64], src[160];
    snprintf(shape, sizeof(shape), "%zux%zux%zu", c->rows, c->in, c->out);
    snprintf(src, sizeof(src), "%s", c->cached ? "cached" : "measured");
    if (!onednn_available()) {
        c->f32 = F32_OPENBLAS;
        snprintf(c->why, sizeof(c->why), "this build has no oneDNN");
    } else if (rule2) {
        c->f32 = F32_ONEDNN;
        snprintf(c->why, sizeof(c->why), "OpenBLAS's core %s has %s kernels only, this CPU is %s: a generic kernel",
                 cpu_blas_core(), tier_name(engine_blas_core_tier(cpu_blas_core())), cpu_level());
    } else {
        c->f32 = g[RATE_ONEDNN_F32] >= ENGINE_SWITCH * g[RATE_OPENBLAS] ? F32_ONEDNN : F32_OPENBLAS;
        snprintf(c->why, sizeof(c->why), "%s %.0f GFLOP/s against %s %.0f at %s (x%.2f needed to leave OpenBLAS)", src,
                 c->f32 == F32_ONEDNN ? g[RATE_ONEDNN_F32] : g[RATE_OPENBLAS],
                 c->f32 == F32_ONEDNN ? "OpenBLAS's" : "oneDNN's",
                 c->f32 == F32_ONEDNN ? g[RATE_OPENBLAS] : g[RATE_ONEDNN_F32], shape, ENGINE_SWITCH);
    }
    double f32 = g[c->f32 == F32_ONEDNN ? RATE_ONEDNN_F32 : RATE_OPENBLAS];
    c->bf16_pays = false;
    if (!c->bf16_available) return; /* bf16_why holds the reason */
    if (!want_bf16) snprintf(c->bf16_why, sizeof(c->bf16_why), "not asked");
    else {
        c->bf16_pays = g[RATE_BF16] >= ENGINE_BF16_PAYS * f32;
        snprintf(c->bf16_why, sizeof(c->bf16_why),
                 "BF16 products %s %.0f GFLOP/s against FP32's %.0f at %s: x%.2f (x%.2f needed)", src, g[RATE_BF16],
                 f32, shape, g[RATE_BF16] / f32, ENGINE_BF16_PAYS);
    }
}

/* the CPU has AVX2: x86-64-v3 (AVX2, FMA, BMI2) or v4 */
static bool cpu_has_avx2(void) { return !strcmp(cpu_level(), "x86-64-v3") || !strcmp(cpu_level(), "x86-64-v4"); }

void engine_choose(EngineChoice* c, const ModelConfig* cfg, size_t rows, bool want_bf16) {
    memset(c, 0, sizeof(*c));
    c->rows = engine_clamp_dim(rows);
    c->in = engine_clamp_dim(cfg->D);
    c->out = engine_clamp_dim(cfg->F);
    c->bf16_available = products_bf16_available(c->bf16_why, sizeof(c->bf16_why));
    bool rule2 = engine_blas_core_tier(cpu_blas_core()) == 1 && cpu_has_avx2();
    bool bf16 = want_bf16 && c->bf16_available; /* BF16 is timed against the FP32 engine */
    bool on[RATE_N] = {onednn_available() && !rule2, onednn_available() && (!rule2 || bf16), bf16};
    if (!on[RATE_ONEDNN_F32] && !on[RATE_BF16]) { /* rules 1 and 2: nothing to time */
        decide(c, rule2, want_bf16);
        return;
    }
    char key[1024];
    cache_key(key, sizeof(key), c);
    /* Only the rates the cache lacks are timed: a run that needs one more (BF16's, for compute_dtype "auto" or
       "bf16") keeps the FP32 rates the runs before it decided on, so their engine stays what it was (two
       rates within the timing's noise of ENGINE_SWITCH would otherwise flip the engine between runs) */
    double g[RATE_N];
    if (!cache_read(key, g)) memset(g, 0, sizeof(g));
    bool need[RATE_N], any = false;
    for (int k = 0; k < RATE_N; k++) {
        need[k] = on[k] && !(g[k] > 0);
        any |= need[k];
    }
    c->cached = !any;
    if (any) {
        double m[RATE_N];
        time_rates(c->rows, c->in, c->out, need, m);
        if (!cache_read(key, g)) memset(g, 0, sizeof(g)); /* as the file is now: another run may have written */
        for (int k = 0; k < RATE_N; k++)
            if (need[k] && !(g[k] > 0)) g[k] = m[k];
        cache_write(key, g);
    }
    for (int k = 0; k < RATE_N; k++) c->gflops[k] = on[k] ? g[k] : 0;
    decide(c, rule2, want_bf16);
}

size_t engine_clamp_dim(size_t x) { return x < 64 ? 64 : x > 1024 ? 1024 : x; }

void engine_print(const EngineChoice* c, FILE* fp) {
    char blas[96];
    snprintf(blas, sizeof(blas), "OpenBLAS, core %s", cpu_blas_core());
    fprintf(fp, "f32 products: %s (%s)\n", c->f32 == F32_ONEDNN ? onednn_name() : blas, c->why);
}
