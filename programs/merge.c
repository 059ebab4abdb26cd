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
   (peft_check_base; --force merges anyway), and merged weights that are not finite. The temporary files of
   this process are removed on any failure; those of merges that were killed (pid gone) at start. */
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
#include "programs/cli.h"

static const char* const OUT_FILES[] = {"model.safetensors", "config.json"}; /* what hf_save writes */
static char tmp_paths[2][4096]; /* their temporary names for this process */

static void remove_tmp(void) {
    for (int i = 0; i < 2; i++)
        if (tmp_paths[i][0]) unlink(tmp_paths[i]);
}

/* SIGINT, SIGTERM, SIGHUP: remove the temporary files (unlink is async-signal-safe), then die of the signal */
static void on_signal(int sig) {
    remove_tmp();
    signal(sig, SIG_DFL);
    raise(sig);
}

static bool same_file(const struct stat* a, const char* path) {
    struct stat b;
    return stat(path, &b) == 0 && a->st_dev == b.st_dev && a->st_ino == b.st_ino;
}

/* OUT must be a new or plain directory that is neither input */
static void check_out(const char* out, const char* base, const char* adapter) {
    struct stat so, sl;
    if (stat(out, &so) != 0) return; /* created by hf_save */
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
    size_t n = file_remove_stale_tmp(out, OUT_FILES, 2);
    if (n)
        printf("removed %zu temporary file%s of an earlier merge that did not finish in %s\n", n, n == 1 ? "" : "s",
               out);
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

int main(int argc, char** argv) {
    cli_init("merge");
    const char* paths[3]; /* BASE ADAPTER OUT */
    size_t n_paths = 0;
    bool bf16 = false, force = false;
    for (int i = 1; i < argc; i++) {
        const char* a = argv[i];
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            printf("usage: build/merge BASE ADAPTER OUT [--bf16] [--force]\n"
                   "  writes OUT, a Hugging Face checkpoint with the LoRA adapter of ADAPTER folded into BASE\n"
                   "  --bf16   write the weights as BF16 (default F32)\n"
                   "  --force  merge even when the adapter records another base (fingerprint, model type,\n"
                   "           layer positions), with a warning\n");
            return 0;
        }
        if (!strcmp(a, "--bf16")) bf16 = true;
        else if (!strcmp(a, "--force")) force = true;
        else if (a[0] == '-') cli_bad_option("unknown option '%s'", a); /* never a path: OUT could be "--bf16" */
        else if (n_paths == 3) cli_bad_option("unexpected argument '%s' (expected BASE ADAPTER OUT)", a);
        else paths[n_paths++] = a;
    }
    if (n_paths < 3) cli_bad_option("expected BASE ADAPTER OUT, got %zu path%s", n_paths, n_paths == 1 ? "" : "s");
    const char *base = paths[0], *adapter = paths[1], *out = paths[2];
    check_out(out, base, adapter);
    for (int i = 0; i < 2; i++)
        snprintf(tmp_paths[i], sizeof(tmp_paths[i]), "%s/%s.tmp.%ld", out, OUT_FILES[i], (long)getpid());
    atexit(remove_tmp);
    signal(SIGXFSZ, SIG_IGN); /* a file-size limit: write() fails with EFBIG and the error path runs */
    signal(SIGINT, on_signal);
    signal(SIGTERM, on_signal);
    signal(SIGHUP, on_signal);
    char named[4096]; /* BASE a LoRA checkpoint without a base copy: the base its adapter names */
    const char* weights = ckpt_weights_dir(base, named, sizeof(named));
    if (weights != base) {
        check_out(out, weights, adapter);
        printf("%s holds no base weights: they come from the base its adapter names, %s\n", base, weights);
    }
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
    hf_save(&m, out, bf16 ? ST_BF16 : ST_F32);
    printf("merged %zu adapter tensors of %s (rank %zu, alpha %g%s) into %s: wrote %s\n", n, adapter, cfg.lora_rank,
           cfg.lora_alpha, cfg.lora_rslora ? ", rslora" : "", base, out);
    model_free(&m);
    return 0;
}
