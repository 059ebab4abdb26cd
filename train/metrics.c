/* Terminal and metrics.jsonl logging; see metrics.h. */
#include "train/metrics.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/check.h"
#include "common/fileio.h"

/* keep the step lines of steps <= keep_step and the eval and positions lines of steps < keep_step
   (the resumed run evaluates at keep_step again before its next step); rewritten
   atomically. Lines are split on '\n' over the whole length: a damaged line (a NUL
   byte, cut JSON, no step) is dropped with a warning and the lines after it are kept. */
static void truncate_after(const char* path, size_t keep_step) {
    size_t len;
    char* text = file_read_all_or_null(path, &len);
    if (!text) return;
    char* out = mallocCheck(len + 1);
    size_t o = 0, lineno = 0;
    for (size_t at = 0; at < len; lineno++) {
        const char* line = text + at;
        const char* nl = memchr(line, '\n', len - at);
        size_t n = nl ? (size_t)(nl - line) + 1 : len - at;
        at += n;
        cJSON* j = memchr(line, 0, n) ? NULL : cJSON_ParseWithLength(line, n);
        const cJSON* s = j ? cJSON_GetObjectItemCaseSensitive(j, "step") : NULL;
        bool eval =
            j && (cJSON_GetObjectItemCaseSensitive(j, "val_loss") || cJSON_GetObjectItemCaseSensitive(j, "positions"));
        if (!cJSON_IsNumber(s) || !nl) { /* a last line without '\n' was cut by a crash */
            if (n > 1 || *line != '\n')
                printf("warning: %s line %zu (byte offset %zu): damaged line dropped\n", path, lineno + 1,
                       (size_t)(line - text));
        } else if (eval ? s->valuedouble < (double)keep_step : s->valuedouble <= (double)keep_step) {
            memcpy(out + o, line, n);
            o += n;
        }
        cJSON_Delete(j);
    }
    file_write_atomic(path, out, o);
    free(out);
    free(text);
}

void metrics_open(Metrics* mt, const char* out_dir, size_t keep_step) {
    char path[4096];
    snprintf(path, sizeof(path), "%s/metrics.jsonl", out_dir);
    truncate_after(path, keep_step);
    mt->jsonl = fopenCheck(path, "a");
    tb_open(&mt->tb, out_dir, keep_step);
    mt->tty = isatty(1);
    mt->line_open = false;
}

/* A line is composed in memory, then written to metrics.jsonl and as an event to the TensorBoard file; one
   that cannot be written (disk full) stops the run rather than going missing. */
static FILE* line_begin(Metrics* mt) {
    FILE* fp = open_memstream(&mt->line, &mt->line_len);
    CHECK(fp, "out of memory composing a metrics line");
    return fp;
}

static void line_end(Metrics* mt, FILE* fp) {
    CHECK(fclose(fp) == 0, "out of memory composing a metrics line");
    if (fwrite(mt->line, 1, mt->line_len, mt->jsonl) != mt->line_len || fflush(mt->jsonl) != 0 || ferror(mt->jsonl)) {
        metrics_break(mt);
        DIE("writing metrics.jsonl: %s; stopping (the checkpoints already written are intact)", strerror(errno));
    }
    tb_line(&mt->tb, mt->line, mt->line_len);
    free(mt->line);
    mt->line = NULL;
}

void metrics_close(Metrics* mt) {
    metrics_break(mt);
    if (mt->jsonl) fcloseCheck(mt->jsonl, "metrics.jsonl");
    mt->jsonl = NULL;
    tb_close(&mt->tb);
}

void metrics_break(Metrics* mt) {
    if (mt->line_open) {
        printf("\n");
        mt->line_open = false;
    }
}

static void fmt_eta(char* out, size_t len, double seconds) {
    long t = (long)(seconds + 0.5);
    if (t < 60) snprintf(out, len, "%lds", t);
    else if (t < 3600) snprintf(out, len, "%ldm%02lds", t / 60, t % 60);
    else snprintf(out, len, "%ldh%02ldm", t / 3600, t / 60 % 60);
}

/* `, "key": {"name": value, ...}` from sizes or (sizes NULL) reals; nothing when n is 0. Source names come
   from the config checked by data/mixture.c; they are written as JSON strings by cJSON. */
static void write_named(FILE* fp, const char* key, size_t n, const char* const* names, const size_t* sizes,
                        const double* reals) {
    if (!n) return;
    fprintf(fp, ", \"%s\": {", key);
    for (size_t k = 0; k < n; k++) {
        cJSON* j = cJSON_CreateString(names[k]);
        char* name = j ? cJSON_PrintUnformatted(j) : NULL;
        CHECK(name, "out of memory writing metrics.jsonl");
        cJSON_Delete(j);
        fprintf(fp, "%s%s: ", k ? ", " : "", name);
        if (sizes) fprintf(fp, "%zu", sizes[k]);
        else fprintf(fp, "%.17g", reals[k]);
        cJSON_free(name);
    }
    fprintf(fp, "}");
}

void metrics_step(Metrics* mt, const StepLog* s) {
    if (!mt->jsonl) return;
    char eta[32];
    fmt_eta(eta, sizeof(eta), s->eta_s);
    if (mt->tty) printf("\r\033[K");
    printf("step %6zu/%zu | loss %.4f | lr %.3e | grad norm %.3f | %6.0f tok/s | %7.1f ms", s->step, s->steps, s->loss,
           s->lr, s->grad_norm, s->tokens_per_s, s->ms);
    if (s->comm_ms >= 0) printf(" (comm %.1f, sent %.2f MB)", s->comm_ms, s->wire_bytes / 1e6);
    printf(" | ETA %s", eta);
    for (size_t k = 0; k < s->n_sources; k++) /* each source's share of the tokens seen */
        printf("%s%s %.1f%%", k ? ", " : " | ", s->source_names[k],
               s->tokens_seen ? 100.0 * (double)s->source_tokens[k] / (double)s->tokens_seen : 0.0);
    if (mt->tty) mt->line_open = true;
    else printf("\n");
    fflush(stdout);
    FILE* fp = line_begin(mt);
    fprintf(fp,
            "{\"step\": %zu, \"loss\": %.17g, \"lr\": %.17g, \"grad_norm\": %.17g, \"tokens_per_s\": %.1f, "
            "\"ms\": %.3f, \"tokens_seen\": %zu",
            s->step, s->loss, s->lr, s->grad_norm, s->tokens_per_s, s->ms, s->tokens_seen);
    if (s->z_loss >= 0) fprintf(fp, ", \"z_loss\": %.17g", s->z_loss);
    if (s->repo_pdrop > 0) fprintf(fp, ", \"repo_pdrop\": %.17g", s->repo_pdrop);
    if (s->comm_ms >= 0) fprintf(fp, ", \"comm_ms\": %.3f", s->comm_ms);
    if (s->wire_bytes >= 0) fprintf(fp, ", \"wire_bytes\": %.0f", s->wire_bytes);
    write_named(fp, "source_tokens", s->n_sources, s->source_names, s->source_tokens, NULL);
    fprintf(fp, "}\n");
    line_end(mt, fp);
}

void metrics_eval(Metrics* mt, const EvalLog* e) {
    if (!mt->jsonl) return;
    metrics_break(mt);
    printf("step %6zu | val loss %.4f (%zu batches)", e->step, e->val_loss, e->n_batches);
    for (size_t k = 0; k < e->n_sources; k++)
        printf("%s%s %.4f", k ? ", " : " | ", e->source_names[k], e->source_loss[k]);
    for (size_t k = 0; k < e->n_tasks; k++)
        printf("%s%s %.2f", k ? ", " : " | retrieval ", e->task_names[k], e->task_acc[k]);
    for (size_t k = 0; k < e->n_mc; k++) printf("%s%s %.4f", k ? ", " : " | mc ", e->mc_names[k], e->mc_values[k]);
    printf("\n");
    fflush(stdout);
    FILE* fp = line_begin(mt);
    fprintf(fp, "{\"step\": %zu, \"val_loss\": %.17g, \"val_batches\": %zu", e->step, e->val_loss, e->n_batches);
    if (e->val_z_loss >= 0) fprintf(fp, ", \"val_z_loss\": %.17g", e->val_z_loss);
    write_named(fp, "val_loss_source", e->n_sources, e->source_names, NULL, e->source_loss);
    write_named(fp, "val_batches_source", e->n_sources, e->source_names, e->source_batches, NULL);
    write_named(fp, "retrieval", e->n_tasks, e->task_names, NULL, e->task_acc);
    write_named(fp, "retrieval_tokens", e->n_tasks, e->task_names, NULL, e->task_token_acc);
    write_named(fp, "mc", e->n_mc, e->mc_names, NULL, e->mc_values);
    fprintf(fp, "}\n");
    line_end(mt, fp);
}

void metrics_positions(Metrics* mt, const PositionsLog* p) {
    if (!mt->jsonl) return;
    metrics_break(mt);
    printf("step %6zu | positions", p->step);
    for (size_t i = 0; i < p->n_layers; i++) {
        const PosSummary* s = &p->s[i];
        printf("%s layer %zu range %.3f |step| %.4f c/m/h %.2f/%.2f/%.2f", i ? ";" : "", p->layer[i], s->range,
               s->mean_abs_step, s->share[SEG_CONSTANT], s->share[SEG_MONOTONIC], s->share[SEG_HYBRID]);
    }
    printf(" (%.0f ms)\n", p->ms);
    fflush(stdout);
    FILE* fp = line_begin(mt);
    fprintf(fp,
            "{\"step\": %zu, \"positions\": {\"rows\": %zu, \"T\": %zu, \"batch\": \"%s\", "
            "\"segment\": %zu, \"eps_const\": %.17g, \"mono_frac\": %.17g, \"ms\": %.3f, \"layers\": [",
            p->step, p->rows, p->T, p->val ? "val" : "train", p->seg->len, p->seg->eps_const, p->seg->mono_frac, p->ms);
    for (size_t i = 0; i < p->n_layers; i++) {
        const PosSummary* s = &p->s[i];
        fprintf(fp,
                "%s{\"layer\": %zu, \"range\": %.17g, \"mean_abs_step\": %.17g, \"mean_step\": %.17g, "
                "\"segments\": %zu",
                i ? ", " : "", p->layer[i], s->range, s->mean_abs_step, s->mean_step, s->segments);
        for (int k = 0; k < SEG_N_KINDS; k++) fprintf(fp, ", \"%s\": %.17g", seg_kind_name((SegKind)k), s->share[k]);
        fprintf(fp, ", \"mean_abs\": %.17g", p->mean_abs[i]);
        if (p->moved) fprintf(fp, ", \"moved_per_step\": %.17g", p->moved[i]);
        fprintf(fp, "}");
    }
    fprintf(fp, "]}}\n");
    line_end(mt, fp);
}
