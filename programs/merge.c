/* build/merge BASE ADAPTER OUT: a LoRA adapter folded into its base model.
   BASE is a Hugging Face checkpoint directory, ADAPTER a PEFT LoRA directory
   (adapter_config.json + adapter_model.safetensors, as repoc's LoRA runs save
   in every checkpoint). OUT gets a plain Hugging Face checkpoint (config.json
   and model.safetensors, F32 or --bf16) whose every adapted projection is
   W + s B A (s = alpha / r, alpha / sqrt(r) with use_rslora); RePo tensors saved with the adapter (PEFT's
   modules_to_save) replace the base's. BASE may also be a LoRA checkpoint that holds no base copy (what
   repoc's LoRA runs save by default): its config.json is the model's, and the weights come from the base
   its adapter names (hf/ckpt_weights.h), so `build/merge CKPT CKPT OUT` merges a run's checkpoint.
   Refused before anything is read: an OUT that is BASE or ADAPTER (by device and inode, through any link:
   the merged weights would sit next to the adapter files, and loaders would apply the adapter twice), and an
   OUT holding adapter files or a shard index (loaders would read those, not the merged model). Refused
   after: an adapter option repoc does not apply (peft_check_options), an adapter trained on another base
   (peft_check_base; --force merges anyway), and merged weights that are not finite.
   The tokenizer and generation files a training checkpoint carries (CKPT_CARRIED: tokenizer.json,
   tokenizer_config.json, ...) go into OUT with the weights, each from the first of ADAPTER, BASE and the base
   BASE names that has it, read before anything is written. Everything is written into a staging directory
   first: OUT.tmp.PID beside a new OUT, renamed to OUT at the end; OUT/.merge.tmp.PID inside an existing one,
   whose files are renamed into OUT at the end, config.json last. So a failed or interrupted merge leaves no
   half of its output in OUT. The staging directory of this process is removed on any failure (and on
   SIGINT, SIGTERM, SIGHUP); those of merges that were killed (pid gone), and their older per-file temporary
   names, at start. */
#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/check.h"
#include "common/fileio.h"
#include "hf/ckpt_weights.h"
#include "hf/hf_checkpoint.h"
#include "hf/hf_config.h"
#include "hf/peft.h"
#include "train/run_dir.h" /* CKPT_CARRIED */
#include "programs/cli.h"

static const char* const OUT_FILES[] = {"model.safetensors", "config.json"}; /* what hf_save writes */
#define N_NAMES (2 + CKPT_N_CARRIED)                                         /* every file merge writes */

static const char* out_name(size_t i) { return i < 2 ? OUT_FILES[i] : CKPT_CARRIED[i - 2]; }

static char stage[4096];                    /* this process's staging directory; "" when there is none to remove */
static char stage_paths[2 * N_NAMES][4200]; /* each name in it, and that name's temporary name (NAME.tmp.PID) */

static void remove_stage(void) {
    if (!stage[0]) return;
    for (size_t i = 0; i < 2 * N_NAMES; i++) unlink(stage_paths[i]);
    rmdir(stage);
}

/* SIGINT, SIGTERM, SIGHUP: remove the staging directory (unlink and rmdir are async-signal-safe), then die of the
   signal */
static void on_signal(int sig) {
    remove_stage();
    signal(sig, SIG_DFL);
    raise(sig);
}

/* the staging directories dir/<stem>.tmp.<pid> of merges whose process is gone: merge's own names in each, then
   the directory (kept when it holds anything else) */
static size_t remove_stale_stages(const char* dir, const char* stem) {
    DIR* d = opendir(dir);
    if (!d) return 0;
    size_t removed = 0, n = strlen(stem);
    const char* names[N_NAMES];
    for (size_t i = 0; i < N_NAMES; i++) names[i] = out_name(i);
    struct dirent* e;
    while ((e = readdir(d))) {
        long pid = strncmp(e->d_name, stem, n) ? 0 : tmp_name_pid(e->d_name, n);
        if (pid <= 0 || pid == (long)getpid() || pid_alive(pid)) continue;
        char sub[4400], path[4500];
        snprintf(sub, sizeof(sub), "%s/%s", dir, e->d_name);
        struct stat st;
        if (lstat(sub, &st) != 0 || !S_ISDIR(st.st_mode)) continue;
        for (size_t i = 0; i < N_NAMES; i++) {
            snprintf(path, sizeof(path), "%s/%s", sub, names[i]);
            unlink(path);
        }
        file_remove_stale_tmp(sub, names, N_NAMES);
        removed += rmdir(sub) == 0;
    }
    closedir(d);
    return removed;
}

/* OUT's parent directory and last component (trailing slashes dropped) */
static void split_out(const char* out, char* parent, char* last, size_t len) {
    char path[4096];
    snprintf(path, sizeof(path), "%s", out);
    size_t n = strlen(path);
    while (n > 1 && path[n - 1] == '/') path[--n] = 0;
    dir_of(path, parent, len);
    const char* slash = strrchr(path, '/');
    snprintf(last, len, "%s", slash ? slash + 1 : path);
}

/* the staging directory: OUT/.merge.tmp.PID in an existing OUT, OUT.tmp.PID beside a new one; the staging
   directories of killed merges there are removed first */
static void stage_init(const char* out, bool exists) {
    char parent[4096], last[4096];
    split_out(out, parent, last, sizeof(parent));
    size_t n = remove_stale_stages(parent, last);
    if (exists) n += remove_stale_stages(out, ".merge");
    if (n) printf("removed %zu staging director%s of an earlier merge that did not finish\n", n, n == 1 ? "y" : "ies");
    if (exists) snprintf(stage, sizeof(stage), "%.4000s/.merge.tmp.%ld", out, (long)getpid());
    else snprintf(stage, sizeof(stage), "%.2000s/%.1900s.tmp.%ld", parent, last, (long)getpid());
    for (size_t i = 0; i < N_NAMES; i++) {
        snprintf(stage_paths[2 * i], sizeof(stage_paths[0]), "%s/%s", stage, out_name(i));
        snprintf(stage_paths[2 * i + 1], sizeof(stage_paths[0]), "%s/%s.tmp.%ld", stage, out_name(i), (long)getpid());
    }
    if (!exists) mkdir_p(parent);
    remove_stage(); /* a leftover of an earlier process with this pid */
    CHECK(mkdir(stage, 0755) == 0, "cannot create the staging directory '%s': %s", stage, strerror(errno));
}

/* The staged files into OUT: the directory renamed to OUT, or into an existing OUT file by file, config.json last
   (a loader reads config.json first: it finds the rest already there) */
static void stage_commit(const char* out, bool exists) {
    char dst[4300];
    if (!exists) {
        CHECK(rename(stage, out) == 0, "renaming '%s' to '%s': %s%s", stage, out, strerror(errno),
              errno == EEXIST || errno == ENOTEMPTY ? " (OUT was created while merge ran)" : "");
        stage[0] = 0;
        char parent[4096], last[4096];
        split_out(out, parent, last, sizeof(parent));
        fsync_dir(parent);
        return;
    }
    size_t order[N_NAMES]; /* the carried files, model.safetensors, config.json */
    for (size_t i = 0; i < N_NAMES; i++) order[i] = i < CKPT_N_CARRIED ? 2 + i : i - CKPT_N_CARRIED;
    for (size_t k = 0; k < N_NAMES; k++) {
        size_t i = order[k];
        if (!path_exists(stage_paths[2 * i])) continue;
        snprintf(dst, sizeof(dst), "%s/%s", out, out_name(i));
        CHECK(rename(stage_paths[2 * i], dst) == 0, "renaming '%s' to '%s': %s", stage_paths[2 * i], dst,
              strerror(errno));
    }
    fsync_dir(out);
    rmdir(stage);
    stage[0] = 0;
}

typedef struct {
    char* text; /* NULL when no input directory has the file */
    size_t len;
    const char* from;
} Carried;

/* each CKPT_CARRIED file from the first of dirs[0..n) that has it, into memory before anything is written;
   returns how many were found */
static size_t read_carried(Carried* c, const char* const* dirs, size_t n) {
    size_t found = 0;
    for (size_t i = 0; i < CKPT_N_CARRIED; i++) {
        c[i] = (Carried){0};
        for (size_t d = 0; d < n && !c[i].text; d++) {
            char path[4400];
            snprintf(path, sizeof(path), "%s/%s", dirs[d], CKPT_CARRIED[i]);
            c[i].text = file_read_all_or_null(path, &c[i].len);
            c[i].from = dirs[d];
        }
        found += c[i].text != NULL;
    }
    return found;
}

static bool same_file(const struct stat* a, const char* path) {
    struct stat b;
    return stat(path, &b) == 0 && a->st_dev == b.st_dev && a->st_ino == b.st_ino;
}

/* OUT must be a new or plain directory that is neither input; true when it exists */
static bool check_out(const char* out, const char* base, const char* adapter) {
    struct stat so, sl;
    if (stat(out, &so) != 0) return false; /* created at the end, from the staging directory */
    CHECK(S_ISDIR(so.st_mode), "OUT '%s' exists and is not a directory", out);
    const char* link = lstat(out, &sl) == 0 && S_ISLNK(sl.st_mode) ? " (through a symbolic link)" : "";
    bool is_base = same_file(&so, base), is_adapter = same_file(&so, adapter);
    CHECK(!is_base && !is_adapter,
          "OUT '%s' is the %s directory%s: merging in place would replace its "
          "model.safetensors with the merged weights while the adapter files stay, so every loader would apply the "
          "adapter twice; write the merged checkpoint to a new directory",
          out,
          is_base && is_adapter ? "BASE and ADAPTER"
          : is_base             ? "BASE"
                                : "ADAPTER",
          link);
    const char* stale[] = {"adapter_config.json", "adapter_model.safetensors", "model.safetensors.index.json"};
    for (int i = 0; i < 3; i++) {
        char path[4096];
        snprintf(path, sizeof(path), "%s/%s", out, stale[i]);
        CHECK(lstat(path, &sl) != 0,
              "OUT '%s' holds %s: loaders would %s, not the merged weights alone; merge does "
              "not delete it: remove it or choose an empty OUT",
              out, stale[i],
              i < 2 ? "apply that adapter again on top of the merged weights" : "read the shards it lists");
    }
    const char* names[N_NAMES];
    for (size_t i = 0; i < N_NAMES; i++) names[i] = out_name(i);
    size_t n = file_remove_stale_tmp(out, names, N_NAMES); /* what merges that wrote into OUT itself left */
    if (n)
        printf("removed %zu temporary file%s of an earlier merge that did not finish in %s\n", n, n == 1 ? "" : "s",
               out);
    return true;
}

/* every weight hf_save writes must be finite in the written dtype (an F32 above BF16's range rounds to inf) */
static void check_finite(const Model* m, bool bf16) {
    const TensorTable* tt = &m->tensors;
    for (size_t i = 0; i < tt->n; i++) {
        const TensorInfo* t = &tt->t[i];
        if (t->is_lora) continue;
        const real* w = m->params + t->offset;
        size_t numel = 1;
        for (size_t d = 0; d < t->ndim; d++) numel *= t->shape[d];
        for (size_t k = 0; k < numel; k++) {
            float x = (float)w[k];
            bool finite = bf16 ? (bf16_round_nearest(x) & 0x7f80) != 0x7f80 : isfinite(x);
            CHECK(finite,
                  "merged weight '%s' element %zu is %g%s: not finite, nothing written (adapter scale %g: "
                  "lora_alpha %g, r %zu%s)",
                  t->name, k, (double)x, bf16 && isfinite(x) ? " (infinite in BF16)" : "", cfg_lora_scale(&m->cfg),
                  m->cfg.lora_alpha, m->cfg.lora_rank, m->cfg.lora_rslora ? ", rslora" : "");
        }
    }
}

/* the carried files into the staging directory, freed; says where each came from. out: an existing OUT, whose
   own copies of files the inputs lack are kept (named in a warning) */
static void write_carried(Carried* c, size_t n_found, const char* out) {
    if (!n_found) printf("note: neither ADAPTER nor BASE has tokenizer or generation files: OUT gets none\n");
    for (size_t i = 0; i < CKPT_N_CARRIED; i++) {
        char path[4400];
        if (c[i].text) {
            snprintf(path, sizeof(path), "%s/%s", stage, CKPT_CARRIED[i]);
            file_write_atomic(path, c[i].text, c[i].len);
            printf("copied %s from %s\n", CKPT_CARRIED[i], c[i].from);
            free(c[i].text);
            continue;
        }
        snprintf(path, sizeof(path), "%s/%s", out ? out : "", CKPT_CARRIED[i]);
        if (out && path_exists(path))
            printf("warning: %s is not from this merge (neither input has %s): it was there before\n", path,
                   CKPT_CARRIED[i]);
    }
}

/* BASE ADAPTER OUT into paths, --bf16, --force */
static void parse_args(int argc, char** argv, const char** paths, bool* bf16, bool* force) {
    size_t n_paths = 0;
    for (int i = 1; i < argc; i++) {
        const char* a = argv[i];
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            printf(
                "usage: build/merge BASE ADAPTER OUT [--bf16] [--force]\n"
                "  writes OUT, a Hugging Face checkpoint with the LoRA adapter of ADAPTER folded into BASE, and the\n"
                "  tokenizer and generation files of ADAPTER (or of BASE, or of the base BASE names)\n"
                "  --bf16   write the weights as BF16 (default F32)\n"
                "  --force  merge even when the adapter records another base (fingerprint, model type,\n"
                "           layer positions), with a warning\n");
            exit(0);
        }
        if (!strcmp(a, "--bf16")) *bf16 = true;
        else if (!strcmp(a, "--force")) *force = true;
        else if (a[0] == '-') cli_bad_option("unknown option '%s'", a); /* never a path: OUT could be "--bf16" */
        else if (n_paths == 3) cli_bad_option("unexpected argument '%s' (expected BASE ADAPTER OUT)", a);
        else paths[n_paths++] = a;
    }
    if (n_paths < 3) cli_bad_option("expected BASE ADAPTER OUT, got %zu path%s", n_paths, n_paths == 1 ? "" : "s");
}

int main(int argc, char** argv) {
    cli_init("merge");
    const char* paths[3]; /* BASE ADAPTER OUT */
    bool bf16 = false, force = false;
    parse_args(argc, argv, paths, &bf16, &force);
    const char *base = paths[0], *adapter = paths[1], *out = paths[2];
    bool exists = check_out(out, base, adapter);
    char named[4096]; /* BASE a LoRA checkpoint without a base copy: the base its adapter names */
    const char* weights = ckpt_weights_dir(base, named, sizeof(named));
    if (weights != base) {
        check_out(out, weights, adapter);
        printf("%s holds no base weights: they come from the base its adapter names, %s\n", base, weights);
    }
    const char* dirs[] = {adapter, base, weights};
    Carried carried[CKPT_N_CARRIED];
    size_t n_carried = read_carried(carried, dirs, weights != base ? 3 : 2);
    atexit(remove_stage);
    signal(SIGXFSZ, SIG_IGN); /* a file-size limit: write() fails with EFBIG and the error path runs */
    signal(SIGINT, on_signal);
    signal(SIGTERM, on_signal);
    signal(SIGHUP, on_signal);
    ModelConfig cfg;
    hf_config_read(base, &cfg);
    CHECK(peft_read_config(adapter, &cfg), "%s: no adapter_config.json (is it a PEFT LoRA directory?)", adapter);
    hf_check_weights(weights, &cfg);
    Model m;
    const char* no_grads[] = {"*"};
    model_build(&m, &cfg, 1, 1, no_grads, 1, false);
    ckpt_weights_load_dirs(&m, weights, weights, NULL, false); /* the adapter of BASE, if any, is replaced next */
    size_t n = peft_load(&m, adapter, NULL);
    peft_check_base(adapter, weights, &cfg, force);
    peft_merge(&m);
    check_finite(&m, bf16);
    m.cfg.lora_rank = 0; /* the merged model is a plain one */
    stage_init(out, exists);
    hf_save(&m, stage, bf16 ? ST_BF16 : ST_F32);
    write_carried(carried, n_carried, exists ? out : NULL);
    stage_commit(out, exists);
    printf("merged %zu adapter tensors of %s (rank %zu, alpha %g%s) into %s: wrote %s\n", n, adapter, cfg.lora_rank,
           cfg.lora_alpha, cfg.lora_rslora ? ", rslora" : "", base, out);
    model_free(&m);
    return 0;
}
