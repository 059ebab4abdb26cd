/* build/eval CHECKPOINT [options]: evaluate a Hugging Face checkpoint (or a
   run directory's newest checkpoint) on token files (perplexity) and on the
   synthetic retrieval families at several context lengths (exact match of the
   greedy answer, generated through the KV cache). Prints a table, optionally
   writes JSON; reproducible from --seed. docs/eval.md describes the output. */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/check.h"
#include "common/fileio.h"
#include "common/threads.h"
#include "data/source.h"
#include "hf/hf_config.h"
#include "eval/eval_compare.h"
#include "eval/eval_tasks.h"
#include "eval/ruler.h"
#include "eval/mc.h"
#include "eval/stats.h"
#include "programs/cli.h"
#include "programs/eval_mc.h"

#define EVAL_JSON_VERSION 1
#define MAX_LIST 32
#define MAX_LENGTH ((size_t)1 << 31) /* the most tokens a cache or a window may hold */

typedef struct {
    const char* ckpt;
    const char* ppl[MAX_LIST];
    size_t n_ppl;
    size_t seq_len, max_windows; /* 0 = the training length (else 256); 0 = all windows */
    const char* seq_len_from;    /* where seq_len came from, printed next to every perplexity */
    bool family_on[SYN_N_FAMILIES], tasks_given;
    size_t lengths[MAX_LIST], n_lengths;
    size_t items;
    uint64_t seed;
    double depth;          /* < 0: drawn per item */
    const char* synthetic; /* JSON text or a file of it; NULL: the checkpoint's, else defaults */
    const char* json_out;
    bool ruler_on[RULER_N_TASKS], ruler_given; /* --ruler */
    const char* dump_prompts;                  /* --dump-prompts DIR */
    const char* mc[MAX_LIST];                  /* --mc FILE,FILE2 */
    size_t n_mc, mc_window, mc_limit;          /* 0: max_position_embeddings; 0: every item */
    const char* mc_fields;                     /* --mc-fields, NULL: the defaults */
    const char* mc_delimiter;                  /* before every choice */
    const char* tokenizer;                     /* --tokenizer, NULL: the checkpoint's */
    bool mc_no_sharing;                        /* --mc-no-prefix-sharing */
    bool mc_no_batching;                       /* --mc-no-batching */
    const char* compare[2][MAX_LIST];          /* --compare A.json B.json, or one list per side (per seed) */
    size_t n_compare;                          /* files per side */
    int compare_seen;
    const char* pool[MAX_LIST]; /* --pool KEY,KEY2: one more comparison, of these tasks' items together */
    size_t n_pool;
    CliShared sh; /* --threads, --yarn-factor, --yarn-orig */
} EvalOptions;

static void usage(FILE* fp) {
    fprintf(
        fp,
        "usage: build/eval CHECKPOINT [options]\n"
        "       build/eval --compare A.json[,A2.json...] B.json[,B2.json...] [--pool KEYS] [--json OUT]\n"
        "  CHECKPOINT          a Hugging Face checkpoint directory (config.json + safetensors), or a run\n"
        "                      directory (its newest complete checkpoint is used); put it first\n"
        "  --tasks LIST        synthetic families, comma-separated, or 'all': single,multikey,multivalue,\n"
        "                      multiquery,distractor,table (default: those with weight > 0 in the generator\n"
        "                      settings, i.e. all six unless training turned some off; with --ppl, none)\n"
        "  --lengths LIST      input windows in tokens (default: the training seq_len T0 from\n"
        "                      trainer_state.json and 2x, 4x of it; else 256,512,1024)\n"
        "  --items N           items per family and length (default 100)\n"
        "  --seed S            item seed (default 1); the same seed gives the same items and results\n"
        "  --depth D           put the asked needle at fraction D in [0,1] of the haystack (default: random)\n"
        "  --synthetic JSON    generator settings as JSON text or a JSON file (default: data.synthetic of\n"
        "                      the checkpoint's trainer_state.json, else the defaults)\n"
        "  --ppl FILES...      perplexity on token files (each argument, a file or glob, is one stream)\n"
        "  --seq-len T         perplexity window (default: the training seq_len, else 256)\n"
        "  --max-windows N     at most N windows per file (default all)\n"
        "  --yarn-factor F     YaRN with factor F, original_max_position_embeddings = the training length\n"
        "                      (or --yarn-orig L0); ignored when the checkpoint already has rope_scaling\n"
        "  --yarn-orig L0      original_max_position_embeddings for --yarn-factor\n"
        "  --compute f32|bf16  the products' operands (bf16: BF16 with FP32 accumulation, train.compute_dtype)\n"
        "  --f32-engine E      auto (default), openblas or onednn: what runs the FP32 products (train.f32_engine)\n"
        "  --json OUT          write the results as JSON (docs/eval.md)\n"
        "  --mc FILES          multiple-choice log-likelihood (lm-evaluation-harness rules) on JSON Lines\n"
        "                      files, comma-separated: {\"context\": str, \"choices\": [str, ...], \"label\": int}\n"
        "  --mc-fields SPEC    other field names: context=ctx,choices=endings,label=label,id=ind (dotted\n"
        "                      paths into objects; choices=sol1+sol2 for one field per choice)\n"
        "  --mc-delimiter S    put before every choice (default \" \", the harness's target_delimiter)\n"
        "  --mc-window N       the model's window in tokens (default max_position_embeddings)\n"
        "  --mc-limit N        score the first N items of each file (all lines are still checked)\n"
        "  --mc-no-prefix-sharing  run the context again for every choice (to measure what sharing saves)\n"
        "  --mc-no-batching    each item alone, its choices one after another (to measure what batching saves)\n"
        "  --tokenizer PATH    tokenizer.json or its directory (default: the checkpoint's)\n"
        "  --ruler TASKS       RULER's synthetic tasks generated offline (docs/ruler.md), comma-separated or\n"
        "                      'all': niah_single_1..3, niah_multikey_1..3, niah_multivalue, niah_multiquery,\n"
        "                      vt, cwe, fwe; at each of --lengths, --items items (RULER-generated: not the\n"
        "                      published items, so not comparable number for number with published scores)\n"
        "  --dump-prompts DIR  write each RULER prompt as text, DIR/TASK_LENGTH_ID.txt\n"
        "  --compare A B       paired comparison of two --json files of this program, item by item: B - A\n"
        "                      per task with a 95%% paired bootstrap interval, McNemar's exact p, a verdict;\n"
        "                      A1,A2,A3 B1,B2,B3: runs of several seeds, paired by position, with a two-level\n"
        "                      bootstrap over seeds and items\n"
        "  --pool K1,K2        with --compare: one more row, 'pool', of these tasks' items together\n"
        "  --threads N         OpenMP and BLAS threads (default: all cores)\n"
        "  --help              this text\n");
}

static void parse_tasks(EvalOptions* o, const char* list) {
    char buf[512];
    snprintf(buf, sizeof(buf), "%s", list);
    memset(o->family_on, 0, sizeof(o->family_on));
    o->tasks_given = true;
    for (char* tok = strtok(buf, ","); tok; tok = strtok(NULL, ",")) {
        if (!strcmp(tok, "all")) {
            for (int f = 0; f < SYN_N_FAMILIES; f++) o->family_on[f] = true;
            continue;
        }
        int f = synthetic_family_parse(tok);
        if (f < 0) cli_bad_option("--tasks: unknown task '%s' (all, %s)", tok, synthetic_family_list());
        o->family_on[f] = true;
    }
}

/* v's comma-separated parts into out (at most MAX_LIST), copied into storage of their own; returns how many */
static size_t split_list(const char* opt, const char* v, const char** out) {
    char* buf = strdup(v); /* the parts point into it, for the program's life */
    CHECK(buf, "out of memory");
    size_t n = 0;
    char* save = NULL;
    for (char* f = strtok_r(buf, ",", &save); f; f = strtok_r(NULL, ",", &save)) {
        if (n == MAX_LIST) cli_bad_option("%s: more than %d entries", opt, MAX_LIST);
        out[n++] = f;
    }
    return n;
}

static void parse_mc_option(EvalOptions* o, const char* a, const char* v) {
    if (!strcmp(a, "--mc")) {
        o->n_mc = split_list(a, v, o->mc);
        if (!o->n_mc) cli_bad_option("--mc: expected one or more JSON Lines files, comma-separated");
    } else if (!strcmp(a, "--mc-fields")) {
        McFields f;
        char err[256];
        if (mc_fields_parse(&f, v, err, sizeof err)) cli_bad_option("%s", err);
        o->mc_fields = v;
    } else if (!strcmp(a, "--mc-window")) {
        o->mc_window = cli_parse_size(a, v, 2, MAX_LENGTH);
    } else if (!strcmp(a, "--mc-limit")) {
        o->mc_limit = cli_parse_size(a, v, 1, (size_t)-1);
    } else if (!strcmp(a, "--mc-delimiter")) {
        o->mc_delimiter = v;
    } else {
        o->tokenizer = v;
    }
}

static void parse_ruler(EvalOptions* o, const char* list) {
    char err[512];
    if (ruler_parse_tasks(list, o->ruler_on, err, sizeof(err))) cli_bad_option("--ruler: %s", err);
    o->ruler_given = true;
}

static void parse_args(EvalOptions* o, int argc, char** argv) {
    memset(o, 0, sizeof(*o));
    o->items = 100;
    o->seed = 1;
    o->depth = -1;
    o->mc_delimiter = " ";
    for (int i = 1; i < argc; i++) {
        const char* a = argv[i];
        const char* v = i + 1 < argc ? argv[i + 1] : NULL;
        if (cli_help_or_checkpoint(a, usage, &o->ckpt)) continue;
        if (!strcmp(a, "--mc-no-prefix-sharing")) {
            o->mc_no_sharing = true;
            continue;
        }
        if (!strcmp(a, "--mc-no-batching")) {
            o->mc_no_batching = true;
            continue;
        }
        if (!strcmp(a, "--compare")) {
            cli_once(a, &o->compare_seen);
            size_t na = split_list(a, cli_value(a, v), o->compare[0]);
            o->n_compare = split_list(a, cli_value(a, i + 2 < argc ? argv[i + 2] : NULL), o->compare[1]);
            if (!na || na != o->n_compare)
                cli_bad_option("--compare: %zu files for A and %zu for B; give one file, or one per seed, on each side",
                               na, o->n_compare);
            i += 2;
            continue;
        }
        if (!strcmp(a, "--pool")) {
            o->n_pool = split_list(a, cli_value(a, v), o->pool);
            if (!o->n_pool) cli_bad_option("--pool: expected task keys, comma-separated");
            i++;
            continue;
        }
        if (!strcmp(a, "--ppl")) {
            while (i + 1 < argc && argv[i + 1][0] != '-') {
                if (o->n_ppl == MAX_LIST) cli_bad_option("--ppl: more than %d files", MAX_LIST);
                o->ppl[o->n_ppl++] = argv[++i];
            }
            if (!o->n_ppl) cli_bad_option("--ppl: expected at least one token file");
            continue;
        }
        if (cli_shared_option(&o->sh, CLI_THREADS | CLI_YARN | CLI_COMPUTE, a, v)) {
            i++;
            continue;
        }
        static const char* valued[] = {"--tasks",       "--lengths",     "--items",    "--seed",      "--seq-len",
                                       "--max-windows", "--synthetic",   "--json",     "--depth",     "--mc",
                                       "--mc-fields",   "--mc-window",   "--mc-limit", "--tokenizer", "--mc-delimiter",
                                       "--ruler",       "--dump-prompts"};
        static int seen[sizeof(valued) / sizeof(valued[0])];
        CLI_VALUED_OPTION(a, v, valued, seen);
        if (!strcmp(a, "--tasks")) parse_tasks(o, v);
        else if (!strcmp(a, "--lengths")) o->n_lengths = cli_parse_size_list(a, v, 1, MAX_LENGTH, o->lengths, MAX_LIST);
        else if (!strcmp(a, "--items")) o->items = cli_parse_size(a, v, 1, 1000000000);
        else if (!strcmp(a, "--seed")) o->seed = cli_parse_size(a, v, 0, (size_t)-1);
        else if (!strcmp(a, "--seq-len")) o->seq_len = cli_parse_size(a, v, 1, MAX_LENGTH);
        else if (!strcmp(a, "--max-windows")) o->max_windows = cli_parse_size(a, v, 1, (size_t)-1);
        else if (!strcmp(a, "--synthetic")) o->synthetic = v;
        else if (!strcmp(a, "--json")) o->json_out = v;
        else if (!strcmp(a, "--ruler")) parse_ruler(o, v);
        else if (!strcmp(a, "--dump-prompts")) o->dump_prompts = v;
        else if (!strncmp(a, "--mc", 4) || !strcmp(a, "--tokenizer")) parse_mc_option(o, a, v);
        else { /* --depth */ o->depth = cli_parse_double(a, v);
            if (!(o->depth >= 0 && o->depth <= 1))
                cli_bad_option("--depth: expected a fraction in [0, 1], got '%s'", v);
        }
        i++;
    }
    if (o->dump_prompts && !o->ruler_given) cli_bad_option("--dump-prompts needs --ruler");
    if (o->n_compare && (o->ckpt || o->tasks_given || o->n_ppl || o->n_lengths || o->n_mc || o->ruler_given))
        cli_bad_option(
            "--compare takes two JSON files and --json OUT, no CHECKPOINT, --tasks, --lengths, --ppl or --mc");
    if (!o->ckpt && !o->n_compare) cli_bad_option("no CHECKPOINT given");
    if (o->n_pool && !o->n_compare) cli_bad_option("--pool needs --compare");
    if (!o->n_mc && (o->mc_fields || o->mc_window || o->mc_limit || o->mc_no_sharing || o->mc_no_batching))
        cli_bad_option("--mc-fields, --mc-window, --mc-limit, --mc-no-prefix-sharing and --mc-no-batching need --mc");
    if (!o->n_mc && !o->ruler_given && o->tokenizer) cli_bad_option("--tokenizer needs --mc or --ruler");
}

static double phys_mem_bytes(void) {
    long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGE_SIZE);
    return pages > 0 && page > 0 ? (double)pages * (double)page : 1e18;
}

static void print_results(const TaskResult* r, size_t n, const EvalOptions* o) {
    printf("\nsynthetic retrieval: exact match of the greedy answer, %zu items per cell, seed %llu%s\n", o->items,
           (unsigned long long)o->seed, o->depth >= 0 ? " (fixed depth)" : "");
    printf("(each cell: accuracy [95%% Wilson interval] over %zu items)\n", o->items);
    printf("%-12s", "family");
    for (size_t j = 0; j < o->n_lengths; j++) printf("  L=%-17zu", o->lengths[j]);
    printf(" | %-8s  %s\n", "chance", "key-blind");
    double col_sum[MAX_LIST] = {0};
    size_t n_fam = 0;
    for (size_t i = 0; i < n; i += o->n_lengths) {
        printf("%-12s", synthetic_family_name(r[i].family));
        double kb = 0;
        for (size_t j = 0; j < o->n_lengths; j++) {
            double acc = (double)r[i + j].correct / (double)r[i + j].items;
            Interval ci = stats_wilson(r[i + j].correct, r[i + j].items);
            col_sum[j] += acc;
            kb += r[i + j].key_blind / (double)o->n_lengths;
            printf("  %.3f [%.3f,%.3f]", acc, ci.lo, ci.hi);
        }
        printf(" | %-8.1e  %.3f\n", r[i].chance, kb);
        n_fam++;
    }
    printf("%-12s", "mean");
    for (size_t j = 0; j < o->n_lengths; j++) printf("  %-19.3f", col_sum[j] / (double)n_fam);
    printf(" |\n");
}

/* What a run measured, for the JSON: the synthetic tasks (n of them, item_ok (n, items) each item's
   score), the perplexity of each --ppl stream, the multiple-choice files (NULL: none) and the RULER tasks */
typedef struct {
    const TaskResult* r;
    size_t n;
    const uint8_t* item_ok;
    const PplResult* ppl;
    EvalMc* mc;
    const RulerResult* ruler;
    size_t n_ruler;
} EvalResults;

static void write_json(const char* path, const EvalOptions* o, const CkptInfo* ci, const ModelConfig* cfg,
                       const char* syn_from, const EvalResults* res) {
    const TaskResult* r = res->r;
    const uint8_t* item_ok = res->item_ok;
    const PplResult* ppl = res->ppl;
    size_t n = res->n;
    cJSON* root = cJSON_CreateObject();
    cJSON_AddStringToObject(root, "format", "repoc-eval");
    cJSON_AddNumberToObject(root, "version", EVAL_JSON_VERSION);
    cJSON_AddStringToObject(root, "checkpoint", ci->dir);
    cJSON_AddStringToObject(root, "block", block_style_name(cfg->block));
    cJSON* pos = cJSON_AddArrayToObject(root, "positions");
    for (size_t l = 0; l < cfg->L; l++) cJSON_AddItemToArray(pos, cJSON_CreateString(pos_mode_name(cfg->pos[l])));
    if (ci->train_len) cJSON_AddNumberToObject(root, "train_seq_len", (double)ci->train_len);
    else cJSON_AddNullToObject(root, "train_seq_len");
    if (cfg->yarn_factor > 1) {
        cJSON* y = cJSON_AddObjectToObject(root, "yarn");
        cJSON_AddNumberToObject(y, "factor", cfg->yarn_factor);
        cJSON_AddNumberToObject(y, "original_max_position_embeddings", cfg->yarn_orig_max);
    } else {
        cJSON_AddNullToObject(root, "yarn");
    }
    cJSON_AddNumberToObject(root, "seed", (double)o->seed);
    cJSON_AddNumberToObject(root, "items", (double)o->items);
    if (o->depth >= 0) cJSON_AddNumberToObject(root, "depth", o->depth);
    else cJSON_AddNullToObject(root, "depth");
    cJSON_AddStringToObject(root, "synthetic_from", syn_from);
    cJSON* tasks = cJSON_AddArrayToObject(root, "tasks");
    for (size_t i = 0; i < n; i++) {
        cJSON* t = cJSON_CreateObject();
        cJSON_AddStringToObject(t, "family", synthetic_family_name(r[i].family));
        cJSON_AddNumberToObject(t, "length", (double)r[i].length);
        cJSON_AddNumberToObject(t, "prompt_len", (double)r[i].prompt_len);
        cJSON_AddNumberToObject(t, "answer_len", (double)r[i].answer_len);
        cJSON_AddNumberToObject(t, "items", (double)r[i].items);
        cJSON_AddNumberToObject(t, "correct", (double)r[i].correct);
        cJSON_AddNumberToObject(t, "accuracy", (double)r[i].correct / (double)r[i].items);
        Interval ci = stats_wilson(r[i].correct, r[i].items);
        cJSON_AddNumberToObject(t, "n", (double)r[i].items);
        cJSON_AddItemToObject(t, "ci", cJSON_CreateDoubleArray((double[]){ci.lo, ci.hi}, 2));
        cJSON_AddNumberToObject(t, "token_accuracy",
                                (double)r[i].tokens_correct / (double)(r[i].items * r[i].answer_len));
        cJSON_AddNumberToObject(t, "chance", r[i].chance);
        cJSON_AddNumberToObject(t, "key_blind", r[i].key_blind);
        cJSON_AddNumberToObject(t, "seconds", r[i].seconds);
        cJSON* per = cJSON_AddArrayToObject(t, "per_item"); /* item i of the seed: its id; 1 when exact */
        for (size_t k = 0; k < r[i].items; k++) {
            cJSON* e = cJSON_CreateObject();
            cJSON_AddNumberToObject(e, "id", (double)k);
            cJSON_AddNumberToObject(e, "score", item_ok[i * o->items + k]);
            cJSON_AddItemToArray(per, e);
        }
        cJSON_AddItemToArray(tasks, t);
    }
    cJSON* pp = cJSON_AddArrayToObject(root, "ppl");
    for (size_t i = 0; i < o->n_ppl; i++) {
        cJSON* t = cJSON_CreateObject();
        cJSON_AddStringToObject(t, "files", o->ppl[i]);
        cJSON_AddNumberToObject(t, "seq_len", (double)o->seq_len);
        cJSON_AddNumberToObject(t, "windows", (double)ppl[i].windows);
        cJSON_AddNumberToObject(t, "tokens", (double)ppl[i].tokens);
        cJSON_AddNumberToObject(t, "nll", ppl[i].nll);
        cJSON_AddNumberToObject(t, "ppl", ppl[i].ppl);
        cJSON_AddItemToArray(pp, t);
    }
    if (res->mc) eval_mc_json(root, res->mc);
    for (size_t i = 0; i < res->n_ruler; i++) ruler_result_json(root, &res->ruler[i]);
    file_write_json(path, root);
    printf("wrote %s\n", path);
}

/* Resolve the defaults that depend on the checkpoint (families, lengths, seq_len)
   and check everything before any work: the generator's ids fit the vocabulary,
   every length holds every family's items, the cache fits in memory. Returns
   the cache length (0 without tasks) and sets *chunk. */
static size_t plan(EvalOptions* o, const SyntheticConfig* syn, const CkptInfo* ci, const ModelConfig* cfg,
                   size_t* chunk) {
    bool any_task = false;
    for (int f = 0; f < SYN_N_FAMILIES; f++) { /* default: the families the generator makes; with --ppl none */
        if (!o->tasks_given) o->family_on[f] = !o->n_ppl && !o->n_mc && !o->ruler_given && syn->weight[f] > 0;
        any_task |= o->family_on[f];
    }
    if (!any_task && !o->n_ppl && !o->n_mc && !o->ruler_given)
        cli_bad_option("nothing to evaluate: no task, no --ppl, no --mc, no --ruler");
    size_t T0 = ci->train_len ? ci->train_len : 256;
    if (!o->n_lengths) {
        o->lengths[0] = T0;
        o->lengths[1] = 2 * T0;
        o->lengths[2] = 4 * T0;
        o->n_lengths = 3;
    }
    o->seq_len_from = o->seq_len      ? "--seq-len"
                      : ci->train_len ? "the training seq_len"
                                      : "the default 256: the checkpoint records no training length (a merged or "
                                        "another tool's checkpoint); give --seq-len";
    if (!o->seq_len) o->seq_len = T0;
    *chunk = 0;
    if (!any_task) return 0;
    synthetic_validate(syn, cfg->V);
    EvalPlan p = {.n_lengths = o->n_lengths};
    _Static_assert(MAX_LIST <= EVAL_MAX_LENGTHS, "--lengths must fit an EvalPlan");
    memcpy(p.family_on, o->family_on, sizeof(p.family_on));
    memcpy(p.lengths, o->lengths, o->n_lengths * sizeof(size_t));
    size_t max_len = eval_plan_sizes(&p, syn, chunk); /* dies when a length is too short */
    double bytes = (double)gen_arena_reals(cfg, max_len, *chunk) * sizeof(real);
    if (bytes > 0.8 * phys_mem_bytes())
        DIE("eval: length %zu needs %.1f GiB for the KV cache and work space, more than 80%% of this machine's "
            "%.1f GiB",
            max_len, bytes / 1073741824.0, phys_mem_bytes() / 1073741824.0);
    return max_len;
}

/* --ruler: the tokenizer (--tokenizer, else the checkpoint's), the word list and the essay, and every length
   checked before the model loads: within what the model addresses, long enough for every task, the KV cache
   within memory; dies naming the option otherwise */
static Tokenizer* ruler_plan(RulerSources* src, const EvalOptions* o, const CkptInfo* ci, const ModelConfig* cfg) {
    char buf[4200];
    Tokenizer* tok = tok_load(cli_tokenizer(ci, o->tokenizer, true, buf, sizeof(buf)));
    if (tok_vocab_size(tok) > cfg->V)
        DIE("eval: --ruler: the tokenizer %s has %zu tokens, more than the model's vocab_size %zu", tok_name(tok),
            tok_vocab_size(tok), cfg->V);
    ruler_sources_load(src, NULL, NULL);
    ruler_check_lengths(src, tok, o->ruler_on, o->lengths, o->n_lengths, ruler_max_length(cfg), o->seed, "--lengths");
    size_t max_len = 0;
    for (size_t j = 0; j < o->n_lengths; j++) max_len = o->lengths[j] > max_len ? o->lengths[j] : max_len;
    double bytes = (double)gen_arena_reals(cfg, max_len, RULER_PREFILL_CHUNK) * sizeof(real);
    if (bytes > 0.8 * phys_mem_bytes())
        DIE("eval: --ruler at length %zu needs %.1f GiB for the KV cache and work space, more than 80%% of this "
            "machine's %.1f GiB",
            max_len, bytes / 1073741824.0, phys_mem_bytes() / 1073741824.0);
    return tok;
}

/* every (family, length) of the plan through one generator; returns the results' count */
static size_t run_tasks(TaskResult* res, uint8_t* item_ok, const Model* m, const SyntheticConfig* syn,
                        const EvalOptions* o, size_t max_len, size_t chunk) {
    Generator g;
    gen_build(&g, m, max_len, chunk);
    printf("KV cache for %zu tokens, prefill chunks of %zu: %.1f MiB\n", max_len, chunk,
           (double)g.n_arena * sizeof(real) / 1048576.0);
    size_t n = 0;
    for (int f = 0; f < SYN_N_FAMILIES; f++) {
        if (!o->family_on[f]) continue;
        for (size_t j = 0; j < o->n_lengths; j++) {
            TaskResult* r = &res[n];
            eval_task(r, &g, syn, (SynFamily)f, o->lengths[j], o->items, o->seed, o->depth, item_ok + n * o->items);
            n++;
            Interval ci = stats_wilson(r->correct, r->items);
            printf("  %-10s L=%-6zu %4zu/%zu exact [%.3f, %.3f]  (%.1f s)\n", synthetic_family_name(r->family),
                   r->length, r->correct, r->items, ci.lo, ci.hi, r->seconds);
            fflush(stdout);
        }
    }
    gen_free(&g);
    return n;
}

int main(int argc, char** argv) {
    cli_init("eval");
    EvalOptions o;
    parse_args(&o, argc, argv);
    if (o.json_out) cli_check_output_file("--json", o.json_out);
    if (o.n_compare) { /* two JSON files, no model */
        cJSON* cmp = eval_compare(o.compare[0], o.compare[1], o.n_compare, o.pool, o.n_pool);
        if (o.json_out) {
            file_write_json(o.json_out, cmp);
            printf("wrote %s\n", o.json_out);
        } else {
            cJSON_Delete(cmp);
        }
        return 0;
    }
    CkptInfo ci;
    ModelConfig cfg;
    cli_checkpoint_config(&ci, &cfg, o.ckpt, &o.sh);
    SyntheticConfig syn;
    const char* syn_from = cli_resolve_synthetic(&syn, o.synthetic, &ci);
    size_t chunk;
    size_t max_len = plan(&o, &syn, &ci, &cfg, &chunk);
    TokenData ppl_data[MAX_LIST]; /* opened and checked before any work */
    for (size_t i = 0; i < o.n_ppl; i++) {
        const char* pat[] = {o.ppl[i]};
        token_data_open(&ppl_data[i], pat, 1, "auto", cfg.V);
        if (ppl_data[i].n_tokens <= o.seq_len)
            DIE("eval: --ppl '%s': %zu tokens, fewer than one window of --seq-len + 1 = %zu: give a longer file "
                "or a smaller --seq-len",
                o.ppl[i], ppl_data[i].n_tokens, o.seq_len + 1);
    }
    Tokenizer* ruler_tok = NULL; /* RULER: the tokenizer, sources and lengths checked before any work */
    RulerSources ruler_src;
    if (o.ruler_given) ruler_tok = ruler_plan(&ruler_src, &o, &ci, &cfg);
    EvalMc mc; /* every line of every file checked before any work */
    if (o.n_mc)
        eval_mc_plan(&mc, o.mc, o.n_mc, o.mc_fields, o.mc_delimiter, o.mc_window, o.mc_limit, o.tokenizer, &ci, &cfg);

    /* the model: B = 1, T = the perplexity window (1 when there is none), weights only */
    threads_init(o.sh.threads);
    threads_print(stdout);
    printf("checkpoint %s%s\n", ci.dir, ci.train_len ? "" : " (no trainer_state.json: training length unknown)");
    if (ci.train_len) printf("  trained with seq_len %zu\n", ci.train_len);
    model_config_print(&cfg, stdout);
    Model m;
    cli_load_model(&m, &cfg, &ci, 1, o.n_ppl ? o.seq_len : 1, o.sh.compute_bf16, o.sh.f32_engine);
    printf("%s\n", cli_products_line());

    PplResult ppl[MAX_LIST];
    for (size_t i = 0; i < o.n_ppl; i++) { /* each argument one stream */
        eval_perplexity(&ppl[i], &m, &ppl_data[i], o.max_windows);
        printf("perplexity %-40s %zu windows of %zu: nll %.4f  ppl %.3f  (window: %s)\n", o.ppl[i], ppl[i].windows,
               o.seq_len, ppl[i].nll, ppl[i].ppl, o.seq_len_from);
        token_data_close(&ppl_data[i]);
    }
    if (o.n_mc) eval_mc_run(&mc, &m, o.json_out != NULL, o.mc_no_sharing, o.mc_no_batching);

    RulerResult* ruler = callocCheck(RULER_N_TASKS * o.n_lengths, sizeof(RulerResult));
    size_t n_ruler = 0;
    if (o.ruler_given) {
        n_ruler = ruler_run(ruler, &m, ruler_tok, &ruler_src, o.ruler_on, o.lengths, o.n_lengths, o.items, o.seed,
                            o.dump_prompts);
        ruler_print_table(ruler, n_ruler, o.lengths, o.n_lengths);
    }

    TaskResult* res = callocCheck(SYN_N_FAMILIES * o.n_lengths, sizeof(TaskResult));
    uint8_t* item_ok = callocCheck(mulCheck(SYN_N_FAMILIES * o.n_lengths, o.items, "per-item scores"), 1);
    size_t n_res = 0;
    if (max_len) {
        synthetic_print(&syn, stdout);
        printf("  (generator settings from %s)\n", syn_from);
        n_res = run_tasks(res, item_ok, &m, &syn, &o, max_len, chunk);
        print_results(res, n_res, &o);
    }
    if (o.json_out)
        write_json(o.json_out, &o, &ci, &cfg, syn_from,
                   &(EvalResults){.r = res,
                                  .n = n_res,
                                  .item_ok = item_ok,
                                  .ppl = ppl,
                                  .mc = o.n_mc ? &mc : NULL,
                                  .ruler = ruler,
                                  .n_ruler = n_ruler});
    for (size_t i = 0; i < n_ruler; i++) ruler_result_free(&ruler[i]);
    free(ruler);
    if (ruler_tok) {
        tok_free(ruler_tok);
        ruler_sources_free(&ruler_src);
    }
    if (o.n_mc) eval_mc_free(&mc);
    free(res);
    free(item_ok);
    cli_ckpt_free(&ci);
    model_free(&m);
    return 0;
}
