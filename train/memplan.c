/* The memory plan (train/memplan.h): the peak resident memory of a run from its config. */
#include "train/memplan.h"

#include <stdlib.h>
#include <string.h>
#include <sys/stat.h> /* the multiple-choice files' sizes */
#include <unistd.h>

#include "common/check.h"
#include "common/dist.h"
#include "data/mixture.h"    /* mixture_parse: the files of each source */
#include "data/tokens.h"     /* data_files_expand: the files and their sizes */
#include "eval/eval_tasks.h" /* eval_plan_sizes: the longest eval task length */
#include "model/generate.h"  /* gen_arena_reals: its KV cache */

#define MIB (1024.0 * 1024.0)
#define GIB (1024.0 * MIB)

/* Measured on this code (docs/design.md "Memory"): the process without its
   arenas (libc, OpenBLAS, OpenMP, cJSON, stdio, the 1 MiB staging buffers of
   checkpoint I/O) is about 16 MiB. OpenBLAS packs the B operand of an sgemm
   into its buffer in panels of GEMM_Q (384) x n floats, n capped by the
   buffer (GEMM_R, about 87k floats for its 128 MiB buffer): the pages the
   widest gemm touches, 1536 bytes per column, up to the whole buffer. The
   widest gemm is the LM head's (V) or the MLP's (F). Measured growth during
   the first backward: 48 MiB at V = 32000, 74 MiB at V = 50304. */
#define RUNTIME_BASE_BYTES (16.0 * MIB)
#define BLAS_PANEL_BYTES_PER_COL (384.0 * 4.0)
#define BLAS_PANEL_MAX_COLS 87381.0

static const char* ROW_NAMES[MP_ROWS] = {"parameters",       "gradients",          "AdamW state",   "activations",
                                         "backward scratch", "batch buffers",      "token data",    "eval tasks (KV)",
                                         "BF16 products",    "DiLoCo outer state", "runtime + BLAS"};

/* train.eval_tasks: the retrieval families' generator, a KV cache and work space for the longest length (the
   trainer's setup_tasks); the multiple-choice scorer at its window (generator and logits) and the encoded
   items, estimated at 4 bytes (one token id) per byte of the files (trainer_mc_setup) */
static double eval_tasks_bytes(const ModelConfig* cfg, const RunConfig* rc) {
    EvalPlan plan;
    SyntheticConfig syn;
    char err[400];
    if (!rc->train.eval_tasks || run_config_eval_tasks(rc, &plan, &syn, err, sizeof err)) return 0;
    double bytes = 0;
    if (eval_plan_has_families(&plan)) {
        size_t chunk, max_len = eval_plan_sizes(&plan, &syn, &chunk); /* dies naming a length too short */
        bytes += (double)sizeof(real) * (double)gen_arena_reals(cfg, max_len, chunk);
    }
    if (!plan.mc.n_files) return bytes;
    size_t W = mc_window(plan.mc.window, cfg->max_position_embeddings);
    bytes += (double)sizeof(real) * (double)mc_scorer_reals(cfg, W);
    for (size_t i = 0; i < plan.mc.n_files; i++) {
        struct stat st;
        if (!stat(plan.mc.files[i], &st)) bytes += 4.0 * (double)st.st_size;
    }
    return bytes;
}

size_t memplan_head_chunk(const RunConfig* rc, size_t V) {
    if (rc->train.head_chunk) return rc->train.head_chunk;
    double row = (double)V * sizeof(real), N = (double)rc->train.batch_size * (double)rc->data.seq_len;
    if (N * row <= 512.0 * MIB) return 0;
    size_t rows = (size_t)(128.0 * MIB / row);
    return rows ? rows : 1;
}

void memplan_compute(MemPlan* p, const ModelConfig* cfg, const RunConfig* rc, size_t world, size_t data_bytes) {
    memset(p, 0, sizeof(*p));
    p->B = rc->train.batch_size;
    p->T = rc->data.seq_len;
    p->world = world ? world : 1;
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    p->threads = rc->run.threads ? rc->run.threads : (size_t)(cores > 0 ? cores : 1) / p->world;
    if (!p->threads) p->threads = 1;
    p->recompute = rc->train.recompute;
    p->state_bf16 = !strcmp(rc->optim.state_dtype, "bf16");
    p->sharded = p->world > 1 && rc->train.shard_optimizer;
    const char* freeze[RC_LIST_MAX];
    for (size_t i = 0; i < rc->optim.freeze.n; i++) freeze[i] = rc->optim.freeze.v[i];
    ModelOpts mo = {.recompute = rc->train.recompute,
                    .head_chunk = memplan_head_chunk(rc, cfg->V),
                    .compute_bf16 = !strcmp(rc->train.compute_dtype, "bf16")};
    p->n = model_arena_sizes(cfg, p->B, p->T, freeze, rc->optim.freeze.n, &mo);
    p->n_embed = cfg->V * cfg->D;
    size_t N = p->B * p->T;
    p->head_rows = mo.head_chunk && mo.head_chunk < N ? mo.head_chunk : N;
    double r = sizeof(real);
    double state_elems = p->sharded ? (double)((p->n.grads + p->world - 1) / p->world) : (double)p->n.grads;
    p->bytes[MP_PARAMS] = r * (double)p->n.params + 2.0 * (double)p->n.bf16 + r * (double)p->n.widened;
    p->bytes[MP_BF16] = 2.0 * (double)(p->n.params_bf16 + p->n.bf16_work);
    p->bytes[MP_OUTER] = rc->train.outer.every != RC_UNSET ? 2.0 * r * (double)p->n.grads : 0;
    p->bytes[MP_GRADS] = r * (double)p->n.grads;
    p->bytes[MP_STATE] = 2.0 * (p->state_bf16 ? 2.0 : r) * state_elems;
    p->bytes[MP_ACTS] = r * (double)p->n.acts;
    p->bytes[MP_SCRATCH] = r * (double)p->n.scratch;
    /* the trainer's Batch (tokens, targets, document ids, weights) and the model's document starts */
    p->bytes[MP_BATCH] = (4 * sizeof(int32_t) + sizeof(real)) * (double)N;
    p->bytes[MP_DATA] = (double)data_bytes;
    p->bytes[MP_EVAL] = eval_tasks_bytes(cfg, rc);
    double widest = (double)(cfg->V > cfg->F ? cfg->V : cfg->F);
    p->bytes[MP_RUNTIME] =
        RUNTIME_BASE_BYTES + BLAS_PANEL_BYTES_PER_COL * (widest < BLAS_PANEL_MAX_COLS ? widest : BLAS_PANEL_MAX_COLS);
    for (int i = 0; i < MP_ROWS; i++) p->total += p->bytes[i];
    /* one block's kept activations per token: the arena without recompute, less the shared parts, / (N L) */
    ModelOpts keep = {.head_chunk = mo.head_chunk, .compute_bf16 = mo.compute_bf16};
    ModelArenaSizes all = model_arena_sizes(cfg, p->B, p->T, freeze, rc->optim.freeze.n, &keep);
    ModelConfig none = *cfg;
    none.L = 1; /* the same model with one layer: the difference is L-1 layers */
    ModelArenaSizes one = model_arena_sizes(&none, p->B, p->T, NULL, 0, &keep);
    p->act_bytes_per_token_layer = cfg->L > 1 ? r * (double)(all.acts - one.acts) / ((double)N * (cfg->L - 1)) : 0;
}

void memplan_print(const MemPlan* p, FILE* fp) {
    fprintf(fp, "memory plan (B=%zu T=%zu, %zu thread%s%s, recompute %s, AdamW state %s%s, logits %zu rows):\n", p->B,
            p->T, p->threads, p->threads == 1 ? "" : "s", p->world > 1 ? " per rank" : "", p->recompute ? "on" : "off",
            p->state_bf16 ? "bf16" : REAL_NAME, p->sharded ? " sharded" : "", p->head_rows);
    for (int i = 0; i < MP_ROWS; i++) {
        if ((i == MP_EVAL || i == MP_BF16 || i == MP_OUTER) && !(p->bytes[i] > 0)) continue;
        fprintf(fp, "  %-18s %10.1f MiB", ROW_NAMES[i], p->bytes[i] / MIB);
        size_t n = p->n.params + p->n.bf16; /* every parameter, F32 or a BF16 base */
        if (i == MP_PARAMS) fprintf(fp, "  (%zu parameters, %zu without the input embedding)", n, n - p->n_embed);
        fputc('\n', fp);
    }
    fprintf(fp,
            "  %-18s %10.1f MiB  (%.2f GiB; %.2f bytes per parameter; activations %.0f bytes per token per "
            "layer kept%s)\n",
            p->world > 1 ? "peak RSS per rank" : "peak RSS", p->total / MIB, p->total / GIB,
            p->n.params ? p->total / (double)p->n.params : 0, p->act_bytes_per_token_layer,
            p->recompute ? ", one layer at a time" : "");
}

/* the first number after `key` in the file, or -1 */
static double read_number(const char* path, const char* key) {
    FILE* f = fopen(path, "r");
    if (!f) return -1;
    char line[256];
    double v = -1;
    while (fgets(line, sizeof(line), f)) {
        if (strncmp(line, key, strlen(key))) continue;
        char* end;
        double x = strtod(line + strlen(key), &end);
        if (end != line + strlen(key)) v = x;
        break;
    }
    fclose(f);
    return v;
}

double memplan_available(char* what, size_t len) {
    double avail = read_number("/proc/meminfo", "MemAvailable:");
    if (avail >= 0) avail *= 1024.0; /* kB */
    snprintf(what, len, "MemAvailable");
    double limit = read_number("/sys/fs/cgroup/memory.max", ""); /* "max" reads as no number */
    double used = read_number("/sys/fs/cgroup/memory.current", "");
    if (limit < 0) {
        limit = read_number("/sys/fs/cgroup/memory/memory.limit_in_bytes", "");
        used = read_number("/sys/fs/cgroup/memory/memory.usage_in_bytes", "");
    }
    if (limit > 0 && limit < 1e18 && used >= 0 && (avail < 0 || limit - used < avail)) {
        avail = limit - used > 0 ? limit - used : 0;
        snprintf(what, len, "the cgroup limit %.1f GiB less %.1f GiB in use", limit / GIB, used / GIB);
    }
    return avail > 0 ? avail : 0;
}

/* one alternative: a label and the changed config's plan */
static void suggest(FILE* fp, const char* label, const RunConfig* rc, const ModelConfig* cfg, size_t world,
                    size_t data_bytes, double available) {
    MemPlan q;
    memplan_compute(&q, cfg, rc, world, data_bytes);
    fprintf(fp, "  %-62s %7.2f GiB%s\n", label, q.total / GIB, q.total <= available ? "  fits" : "");
}

/* More ranks, one per machine, with the AdamW state sharded: the smallest count up to MAX_RANKS_SUGGESTED
   that fits. Sharding divides only the state, so when even the rest alone does not fit, no count does. */
#define MAX_RANKS_SUGGESTED 64
static void suggest_ranks(FILE* fp, const RunConfig* sharded, const ModelConfig* cfg, size_t world, size_t data_bytes,
                          double available) {
    MemPlan q;
    memplan_compute(&q, cfg, sharded, (size_t)1 << 40, data_bytes); /* the state shrunk to nothing */
    double rest = q.total;
    if (rest > available) {
        fprintf(fp,
                "  mpirun -np N does not help: sharding (train.shard_optimizer) divides only the AdamW state; the "
                "rest takes %.2f GiB per rank at any N\n",
                rest / GIB);
        return;
    }
    for (size_t w = world * 2; w <= MAX_RANKS_SUGGESTED; w *= 2) {
        memplan_compute(&q, cfg, sharded, w, data_bytes);
        if (q.total > available) continue;
        char label[128];
        snprintf(label, sizeof(label), "mpirun -np %zu, train.shard_optimizer, one rank per machine", w);
        fprintf(fp, "  %-62s %7.2f GiB per rank  fits\n", label, q.total / GIB);
        return;
    }
    fprintf(fp,
            "  mpirun -np N fits only above %d ranks (one per machine, state sharded; %.2f GiB per rank without "
            "the state): change the settings above instead\n",
            MAX_RANKS_SUGGESTED, rest / GIB);
}

void memplan_check(const MemPlan* p, const ModelConfig* cfg, const RunConfig* rc, double available,
                   const char* available_what) {
    double need = p->total * (double)(p->local_ranks ? p->local_ranks : 1);
    if (available <= 0 || need <= available) return;
    bool refuse = rc->run.check_memory && !p->plan_only;
    FILE* fp = refuse ? stderr : stdout;
    fprintf(fp, "%s: the memory plan needs %.2f GiB", refuse ? "error" : "warning", need / GIB);
    if (p->local_ranks > 1) fprintf(fp, " (%zu ranks on this machine)", p->local_ranks);
    fprintf(fp, ", but %.2f GiB is available (%s).\n", available / GIB, available_what);
    fprintf(fp, "settings that change it (each alone, then all together):\n");
    RunConfig* alt = mallocCheck(sizeof(RunConfig));
    size_t data = (size_t)p->bytes[MP_DATA];
    if (!rc->train.recompute) {
        *alt = *rc;
        alt->train.recompute = true;
        suggest(fp, "train.recompute: true", alt, cfg, p->world, data, available);
    }
    if (strcmp(rc->optim.state_dtype, "bf16")) {
        *alt = *rc;
        strcpy(alt->optim.state_dtype, "bf16");
        suggest(fp, "optim.state_dtype: \"bf16\"", alt, cfg, p->world, data, available);
    }
    if (rc->optim.freeze.n < RC_LIST_MAX) {
        *alt = *rc;
        strcpy(alt->optim.freeze.v[alt->optim.freeze.n++], "model.embed_tokens.weight");
        suggest(fp, "optim.freeze: [\"model.embed_tokens.weight\"] (or more tensors)", alt, cfg, p->world, data,
                available);
    }
    if (rc->train.batch_size > 1) {
        *alt = *rc;
        alt->train.batch_size = 1;
        char label[128];
        snprintf(label, sizeof(label), "train.batch_size: 1, grad_accum: %zu (the same global batch)",
                 rc->train.batch_size * rc->train.grad_accum);
        suggest(fp, label, alt, cfg, p->world, data, available);
    }
    if (rc->data.seq_len >= 4) {
        *alt = *rc;
        alt->data.seq_len = rc->data.seq_len / 2;
        char label[128];
        snprintf(label, sizeof(label), "data.seq_len: %zu", alt->data.seq_len);
        suggest(fp, label, alt, cfg, p->world, data, available);
    }
    *alt = *rc;
    alt->train.recompute = true;
    strcpy(alt->optim.state_dtype, "bf16");
    alt->train.batch_size = 1;
    suggest(fp, "all of recompute, bf16 state and batch_size 1", alt, cfg, p->world, data, available);
    *alt = *rc;
    alt->train.shard_optimizer = true;
    suggest_ranks(fp, alt, cfg, p->world, data, available);
    free(alt);
    if (refuse) {
        fprintf(fp, "nothing was allocated. Set run.check_memory to false to start anyway.\n");
        dist_abort(1);
        exit(1);
    }
}

/* the files of one list of patterns; a pattern that matches nothing counts 0 (opening the data names it) */
static size_t files_bytes(const char* const* patterns, size_t n) {
    DataFiles df;
    char err[600];
    data_files_expand(&df, patterns, n, err, sizeof err);
    size_t bytes = df.bytes;
    data_files_free(&df);
    return bytes;
}

/* data.train or data.val: a list of files, or the mixture form's sources (each source's files) */
static size_t list_bytes(const RcList* list, const cJSON* sources, const char* key) {
    if (!sources) {
        const char* v[RC_LIST_MAX];
        for (size_t i = 0; i < list->n; i++) v[i] = list->v[i];
        return files_bytes(v, list->n);
    }
    Mixture mx;
    char err[512];
    size_t bytes = 0;
    if (mixture_parse(&mx, sources, key, err, sizeof err) == 0)
        for (size_t k = 0; k < mx.n; k++) bytes += files_bytes((const char* const*)mx.src[k].files, mx.src[k].n_files);
    mixture_close(&mx);
    return bytes;
}

size_t memplan_data_bytes(const RunConfig* rc) {
    return list_bytes(&rc->data.train, rc->data.train_sources, "data.train") +
           list_bytes(&rc->data.val, rc->data.val_sources, "data.val");
}
