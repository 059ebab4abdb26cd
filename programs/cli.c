/* Shared command-line pieces of the programs (programs/cli.h). */
#include "programs/cli.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <time.h>

#include "common/check.h"
#include "common/fileio.h"
#include "common/threads.h" /* threads_startup */
#include "data/source.h"    /* synthetic_from_json */
#include "hf/ckpt_weights.h"
#include "hf/hf_checkpoint.h"
#include "hf/hf_config.h"
#include "hf/peft.h"
#include "model/engine.h"
#include "train/checkpoint.h"

static const char* prog_name = "repoc";

/* At exit, every program: standard output flushed and closed, and a failure there (a full disk,
   /dev/full, a closed descriptor) turns the exit status into 1 with a message; otherwise the
   results would be lost with status 0. Runs last of the exit handlers (it is registered first);
   _exit keeps the status out of exit's undefined second call. */
static int stdout_errno; /* the first failed cli_flush_stdout's errno */

void cli_flush_stdout(void) {
    errno = 0;
    if (fflush(stdout) != 0 && !stdout_errno) stdout_errno = errno;
}

static void check_stdout_at_exit(void) {
    errno = 0;
    bool failed = fflush(stdout) != 0;
    int e = errno ? errno : stdout_errno;
    failed |= ferror(stdout) != 0;
    if (fclose(stdout) != 0 && !failed) {
        failed = true;
        e = errno;
    }
    if (!failed) return;
    fprintf(stderr, "%s: writing standard output failed: %s\n", prog_name, e ? strerror(e) : "an earlier write failed");
    fflush(stderr);
    _exit(1);
}

void cli_init(const char* prog) {
    threads_startup(); /* may re-execute the program with a wait policy (common/threads.h) */
    prog_name = prog;
    atexit(check_stdout_at_exit);
    /* past a file-size limit (ulimit -f), a write fails with EFBIG and the program dies naming
       the file it was writing, instead of being killed by SIGXFSZ without a word */
    signal(SIGXFSZ, SIG_IGN);
}

_Noreturn void cli_bad_option(const char* fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "%s: ", prog_name);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fprintf(stderr, "\n(build/%s --help lists the options)\n", prog_name);
    exit(2);
}

void cli_once(const char* opt, int* seen) {
    if ((*seen)++) cli_bad_option("%s is given twice", opt);
}

bool cli_help_or_checkpoint(const char* a, void (*usage)(FILE*), const char** ckpt) {
    if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
        usage(stdout);
        exit(0);
    }
    if (a[0] == '-') return false;
    if (*ckpt) cli_bad_option("unexpected argument '%s' (the checkpoint is '%s')", a, *ckpt);
    *ckpt = a;
    return true;
}

const char* cli_value(const char* opt, const char* v) {
    if (!v) cli_bad_option("%s: expected a value", opt);
    if (!strncmp(v, "--", 2)) cli_bad_option("%s: expected a value, got the option '%s'", opt, v);
    return v;
}

size_t cli_valued_option(const char* a, const char* v, const char* const* names, size_t n, int* seen) {
    size_t k = 0;
    while (k < n && strcmp(a, names[k])) k++;
    if (k == n) cli_bad_option("unknown option '%s'", a);
    cli_once(a, &seen[k]);
    cli_value(a, v);
    return k;
}

bool cli_shared_option(CliShared* sh, unsigned which, const char* a, const char* v) {
    static const char* const names[] = {"--threads", "--yarn-factor", "--yarn-orig", "--compute", "--f32-engine"};
    static const unsigned group[] = {CLI_THREADS, CLI_YARN, CLI_YARN, CLI_COMPUTE, CLI_COMPUTE};
    size_t k = 0;
    while (k < 5 && strcmp(a, names[k])) k++;
    if (k == 5 || !(which & group[k])) return false;
    cli_once(a, &sh->seen[k]);
    v = cli_value(a, v);
    if (k == 3) {
        if (strcmp(v, "f32") && strcmp(v, "bf16")) cli_bad_option("--compute: expected f32 or bf16, got '%s'", v);
        sh->compute_bf16 = !strcmp(v, "bf16");
    } else if (k == 4) {
        F32Engine e;
        if (strcmp(v, "auto") && !f32_engine_parse(v, &e))
            cli_bad_option("--f32-engine: expected auto, openblas or onednn, got '%s'", v);
        sh->f32_engine = strcmp(v, "auto") ? v : NULL;
    } else if (k == 0) {
        sh->threads = (int)cli_parse_size(a, v, 1, 4096);
    } else if (k == 1) {
        sh->yarn_factor = cli_parse_double(a, v);
        if (!(sh->yarn_factor >= 1)) cli_bad_option("--yarn-factor: expected a factor >= 1, got '%s'", v);
    } else {
        sh->yarn_orig = (double)cli_parse_size(a, v, 1, (size_t)1 << 31);
    }
    return true;
}

size_t cli_parse_size(const char* opt, const char* s, size_t lo, size_t hi) {
    char* end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (!*s || *end || errno || s[0] == '-' || v < lo || v > hi) {
        cli_bad_option("%s: expected an integer in [%zu, %zu], got '%s'", opt, lo, hi, s);
    }
    return (size_t)v;
}

double cli_parse_double(const char* opt, const char* s) {
    char* end;
    double v = strtod(s, &end);
    if (!*s || *end || !isfinite(v)) cli_bad_option("%s: expected a number, got '%s'", opt, s);
    return v;
}

size_t cli_parse_size_list(const char* opt, const char* s, size_t lo, size_t hi, size_t* out, size_t max) {
    char buf[1024];
    snprintf(buf, sizeof(buf), "%s", s);
    size_t n = 0;
    for (char* tok = strtok(buf, ","); tok; tok = strtok(NULL, ",")) {
        if (n == max) cli_bad_option("%s: more than %zu values in '%s'", opt, max, s);
        out[n++] = cli_parse_size(opt, tok, lo, hi);
    }
    if (!n) cli_bad_option("%s: expected a comma-separated list, got '%s'", opt, s);
    return n;
}

void cli_resolve_checkpoint(CkptInfo* ci, const char* path) {
    memset(ci, 0, sizeof(*ci));
    char p[4200];
    if (!path_exists(path)) DIE("%s: checkpoint '%s' does not exist", prog_name, path);
    snprintf(p, sizeof(p), "%s/config.json", path);
    if (path_exists(p)) snprintf(ci->dir, sizeof(ci->dir), "%s", path);
    else if (!is_dir(path) || !ckpt_find_latest(path, ci->dir, sizeof(ci->dir)))
        DIE("%s: '%s' is neither a checkpoint (no config.json) nor a run directory with a complete checkpoint",
            prog_name, path);
    snprintf(p, sizeof(p), "%s/trainer_state.json", ci->dir);
    if (!path_exists(p)) return;
    char* text = ckpt_read_config(ci->dir);
    cJSON* cfg = text ? cJSON_Parse(text) : NULL;
    free(text);
    const cJSON* data = cJSON_GetObjectItemCaseSensitive(cfg, "data");
    const cJSON* T = cJSON_GetObjectItemCaseSensitive(data, "seq_len");
    const cJSON* syn = cJSON_GetObjectItemCaseSensitive(data, "synthetic");
    if (T && !cJSON_IsNull(T)) { /* an integer before the cast: a cast of 1e300 or NaN to size_t is undefined */
        double t = cJSON_IsNumber(T) ? T->valuedouble : 0;
        if (!(t >= 1 && t <= 9007199254740992.0 && t == floor(t)))
            DIE("%s: %s/trainer_state.json: config.data.seq_len is %s%.17g, not a positive integer: repair the "
                "file, or remove it to read the directory as a plain checkpoint",
                prog_name, ci->dir, cJSON_IsNumber(T) ? "" : "not a number: ", t);
        ci->train_len = (size_t)t;
    }
    if (cJSON_IsObject(syn)) ci->synthetic = cJSON_Duplicate(syn, true);
    cJSON_Delete(cfg);
}

void cli_ckpt_free(CkptInfo* ci) {
    cJSON_Delete(ci->synthetic);
    ci->synthetic = NULL;
}

const char* cli_resolve_synthetic(SyntheticConfig* syn, const char* opt, const CkptInfo* ci) {
    char err[1024];
    if (!opt) {
        if (!ci->synthetic) {
            synthetic_defaults(syn);
            return "defaults";
        }
        if (synthetic_from_json(syn, ci->synthetic, err, sizeof(err)))
            DIE("%s: %s/trainer_state.json: %s", prog_name, ci->dir, err);
        return "the checkpoint's data.synthetic";
    }
    const char* s = opt;
    while (*s == ' ') s++;
    char* text = *s == '{' ? NULL : file_read_all(opt, NULL);
    cJSON* obj = cJSON_Parse(text ? text : s);
    free(text);
    if (!obj) DIE("%s: --synthetic: '%s' is not valid JSON", prog_name, opt);
    int bad = synthetic_from_json(syn, obj, err, sizeof(err));
    cJSON_Delete(obj);
    if (bad) DIE("%s: --synthetic: %s", prog_name, err);
    return "--synthetic";
}

void cli_apply_yarn(ModelConfig* cfg, double factor, double orig, const CkptInfo* ci) {
    if (factor > 1 && cfg->yarn_factor > 1) {
        printf("note: the checkpoint already has YaRN (factor %g, L0 %g); --yarn-factor %g is ignored\n",
               cfg->yarn_factor, cfg->yarn_orig_max, factor);
    } else if (factor > 1) {
        double L0 = orig ? orig : (double)ci->train_len;
        if (!L0)
            DIE("%s: --yarn-factor needs the training length: the checkpoint has no trainer_state.json; "
                "give --yarn-orig L0",
                prog_name);
        cfg->yarn_factor = factor;
        cfg->yarn_orig_max = L0;
        printf("YaRN from --yarn-factor: factor %g, original_max_position_embeddings %g (%s)\n", cfg->yarn_factor, L0,
               orig ? "--yarn-orig" : "the training length");
    }
    model_config_validate(cfg);
}

/* create and remove a file named like path plus a suffix: can path be written? (0, or the errno) */
static int probe_create(const char* path) {
    char tmp[4200];
    int n = snprintf(tmp, sizeof(tmp), "%s.probe.%d", path, (int)getpid());
    if (n < 0 || (size_t)n >= sizeof(tmp)) return ENAMETOOLONG;
    int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL, 0644);
    if (fd < 0) return errno;
    close(fd);
    unlink(tmp);
    return 0;
}

/* a path the system cannot open: say so before its text fills the message */
static void check_path_length(const char* opt, const char* path) {
    size_t n = strlen(path);
    if (n >= 4096)
        DIE("%s: %s: the path is %zu bytes long, over the system's limit of 4095 (PATH_MAX): '%.80s...'", prog_name,
            opt, n, path);
}

void cli_check_output_file(const char* opt, const char* path) {
    check_path_length(opt, path);
    if (is_dir(path)) DIE("%s: %s '%s' is a directory: give a file name", prog_name, opt, path);
    OutputKind kind;
    char target[4096], err[4400];
    if (file_output_kind(path, &kind, target, sizeof(target), err, sizeof(err))) DIE("%s: %s %s", prog_name, opt, err);
    if (kind == OUT_STREAM && access(path, W_OK) != 0) /* a FIFO or device: written to, never created */
        DIE("%s: %s '%s' cannot be written (%s)", prog_name, opt, path, strerror(errno));
    int e = kind == OUT_REPLACE ? probe_create(target) : 0;
    if (e)
        DIE("%s: %s '%s' cannot be written (%s): give a path in an existing, writable directory", prog_name, opt,
            strcmp(target, path) ? target : path, strerror(e));
}

void cli_check_output_dir(const char* opt, const char* dir) {
    check_path_length(opt, dir);
    char d[4096], probe[4200];
    snprintf(d, sizeof(d), "%s", dir);
    while (!path_exists(d)) { /* the nearest existing parent: the directory will be made in it */
        char up[4096];
        dir_of(d, up, sizeof(up));
        if (!strcmp(up, d)) break;
        snprintf(d, sizeof(d), "%s", up);
    }
    if (!is_dir(d)) DIE("%s: %s '%s': '%s' is not a directory: give another directory", prog_name, opt, dir, d);
    snprintf(probe, sizeof(probe), "%s/.repoc", d);
    int e = probe_create(probe);
    if (e)
        DIE("%s: %s '%s' cannot be written: '%s' does not take new files (%s): give a writable directory", prog_name,
            opt, dir, d, strerror(e));
}

void cli_checkpoint_config(CkptInfo* ci, ModelConfig* cfg, const char* path, const CliShared* sh) {
    cli_resolve_checkpoint(ci, path);
    hf_config_read(ci->dir, cfg);
    peft_read_config(ci->dir, cfg); /* a LoRA checkpoint: base plus its PEFT adapter */
    cli_apply_yarn(cfg, sh->yarn_factor, sh->yarn_orig, ci);
}

const char* cli_tokenizer(const CkptInfo* ci, const char* given, bool required, char* buf, size_t len) {
    if (given) return given;
    snprintf(buf, len, "%s/tokenizer.json", ci->dir);
    if (path_exists(buf)) return buf;
    if (required)
        DIE("%s: the checkpoint '%s' has no tokenizer.json (checkpoints carry model.init_from's when it has one): "
            "pass --tokenizer PATH, a tokenizer.json or the directory holding it (e.g. the Hugging Face checkpoint "
            "it was trained from)",
            prog_name, ci->dir);
    return NULL;
}

static char products_line[640]; /* what cli_load_model chose, for cli_products_line */

/* --f32-engine: the engine named, else the one model/engine.h chooses for (rows, D) x (D, F) products; what runs
   them into products_line */
static void choose_f32_engine(const char* given, const ModelConfig* cfg, size_t rows, bool compute_bf16) {
    F32Engine e;
    char why[400] = "--f32-engine";
    if (given) {
        f32_engine_parse(given, &e);
        CHECK(e == F32_OPENBLAS || onednn_available(), "%s: --f32-engine onednn: this build has no oneDNN", prog_name);
    } else {
        EngineChoice c;
        engine_choose(&c, cfg, rows, false);
        e = c.f32;
        snprintf(why, sizeof(why), "%s", c.why);
    }
    products_set_f32_engine(e);
    if (compute_bf16) snprintf(products_line, sizeof(products_line), "products: %s", products_name(true));
    else snprintf(products_line, sizeof(products_line), "products: %s (%s)", products_name(false), why);
}

const char* cli_products_line(void) { return products_line; }

/* every weight finite: one NaN or infinity makes every output NaN, which would run to exit 0 */
static void check_finite(const Model* m, const char* dir) {
    for (size_t i = 0; i < m->tensors.n; i++) {
        const TensorInfo* t = &m->tensors.t[i];
        if (t->bf16) continue; /* the BF16 arena: not used for inference */
        const real* p = m->params + t->offset;
        size_t bad = 0;
#pragma omp parallel for reduction(+ : bad) schedule(static)
        for (size_t j = 0; j < t->numel; j++) bad += !isfinite(p[j]);
        if (!bad) continue;
        size_t j = 0;
        while (isfinite(p[j])) j++;
        DIE("%s: %s: tensor %s holds %zu values that are not finite (the first, element %zu, is %g): a diverged or "
            "damaged checkpoint",
            prog_name, dir, t->name, bad, j, (double)p[j]);
    }
}

void cli_load_model(Model* m, const ModelConfig* cfg, const CkptInfo* ci, size_t B, size_t T, bool compute_bf16,
                    const char* f32_engine) {
    const char* no_grads[] = {"*"}; /* inference only: no gradient arena */
    choose_f32_engine(f32_engine, cfg, B * T, compute_bf16);
    model_build_opts(m, cfg, B, T, no_grads, 1, &(ModelOpts){.compute_bf16 = compute_bf16}, false);
    size_t fresh = ckpt_weights_load(m, ci->dir, NULL, false, NULL); /* a LoRA base: the one the adapter names */
    if (fresh)
        DIE("%s: the checkpoint lacks the weights of %zu RePo tensors its config.json asks for", prog_name, fresh);
    check_finite(m, ci->dir);
}
