/* build/analyze --compare A.json B.json ... --out DIR: one figure for several
   checkpoints (position modes), read back from their analysis.json files:
   grouped bars of the attention mass needle / query / rest per checkpoint
   (compare_attention.svg) and of the segment shares constant / monotonic /
   hybrid for those with learned positions (compare_segments.svg), and the same
   numbers as a Markdown table on stdout (eval/analyze_compare.h, docs/analyze.md). */
#include "eval/analyze_compare.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/check.h"
#include "common/fileio.h"
#include "eval/analyze_out.h" /* ANALYZE_JSON_VERSION */
#include "eval/analyze_svg.h"

#define MAX_COMPARE 64

typedef struct {
    char label[64];
    char input[96]; /* "single x20 L=256" */
    bool has_att, has_pos;
    double att[4]; /* needle, query, rest, uniform_needle */
    double seg[SEG_N_KINDS];
} Entry;

/* obj[key] as a number, or die naming the file and key */
static double num(const cJSON* obj, const char* key, const char* file) {
    const cJSON* v = cJSON_GetObjectItemCaseSensitive(obj, key);
    CHECK(cJSON_IsNumber(v), "analyze --compare: %s: expected a number at '%s'", file, key);
    return v->valuedouble;
}

static void read_entry(Entry* e, const char* file) {
    memset(e, 0, sizeof(*e));
    char* text = file_read_all(file, NULL);
    cJSON* root = cJSON_Parse(text);
    free(text);
    CHECK(root, "analyze --compare: %s is not valid JSON", file);
    const cJSON* fmt = cJSON_GetObjectItemCaseSensitive(root, "format");
    CHECK(cJSON_IsString(fmt) && !strcmp(fmt->valuestring, "repoc-analyze"),
          "analyze --compare: %s is not an analysis.json of build/analyze (format is not \"repoc-analyze\")", file);
    double version = num(root, "version", file);
    CHECK(version == ANALYZE_JSON_VERSION, "analyze --compare: %s has version %g, this build reads version %d", file,
          version, ANALYZE_JSON_VERSION);
    const cJSON* label = cJSON_GetObjectItemCaseSensitive(root, "label");
    snprintf(e->label, sizeof(e->label), "%s", cJSON_IsString(label) ? label->valuestring : file);
    const cJSON* in = cJSON_GetObjectItemCaseSensitive(root, "input");
    const cJSON* task = cJSON_GetObjectItemCaseSensitive(in, "task");
    snprintf(e->input, sizeof(e->input), "%s x%g L=%g", cJSON_IsString(task) ? task->valuestring : "tokens",
             num(in, "items", file), num(in, "length", file));
    const cJSON* att = cJSON_GetObjectItemCaseSensitive(root, "attention");
    if (cJSON_IsObject(att)) {
        const cJSON* mean = cJSON_GetObjectItemCaseSensitive(att, "mean");
        static const char* const keys[] = {"needle", "query", "rest", "uniform_needle"};
        for (int k = 0; k < 4; k++) e->att[k] = num(mean, keys[k], file);
        e->has_att = true;
    }
    const cJSON* pos = cJSON_GetObjectItemCaseSensitive(root, "positions");
    if (cJSON_IsObject(pos)) {
        const cJSON* all = cJSON_GetObjectItemCaseSensitive(pos, "overall");
        for (int k = 0; k < SEG_N_KINDS; k++) e->seg[k] = num(all, seg_kind_name(k), file);
        e->has_pos = true;
    }
    cJSON_Delete(root);
}

/* bars of the entries that have `want` (has_att or has_pos); returns how many */
static size_t bars(const Entry* e, size_t n, bool att, const char* path) {
    static const char* const att_series[] = {"needle", "query", "rest"};
    const char* group[MAX_COMPARE];
    double v[MAX_COMPARE * 3];
    size_t g = 0;
    for (size_t i = 0; i < n; i++) {
        if (att ? !e[i].has_att : !e[i].has_pos) continue;
        group[g] = e[i].label;
        for (int k = 0; k < 3; k++) v[g * 3 + k] = att ? e[i].att[k] : e[i].seg[k];
        g++;
    }
    if (!g) return 0;
    const char* seg_series[] = {seg_kind_name(SEG_CONSTANT), seg_kind_name(SEG_MONOTONIC), seg_kind_name(SEG_HYBRID)};
    BarChart bc = {att ? "attention mass of the query rows (mean over heads, rows, layers, items)"
                       : "learned positions: share of segments per class",
                   att ? "attention probability mass" : "share of segments",
                   g,
                   3,
                   group,
                   att ? att_series : seg_series,
                   v,
                   att ? 2 : 0,
                   NULL,
                   NULL};
    svg_bars(path, &bc);
    svg_to_png(path);
    return g;
}

void analyze_compare(const char* const* files, size_t n, const char* dir) {
    CHECK(n >= 1 && n <= MAX_COMPARE, "analyze --compare: %zu files; between 1 and %d", n, MAX_COMPARE);
    Entry* e = callocCheck(n, sizeof(Entry));
    for (size_t i = 0; i < n; i++) read_entry(&e[i], files[i]);
    printf("| checkpoint | input | needle | query | rest | uniform needle | constant | monotonic | hybrid |\n");
    printf("|---|---|---|---|---|---|---|---|---|\n");
    for (size_t i = 0; i < n; i++) {
        printf("| %s | %s |", e[i].label, e[i].input);
        for (int k = 0; k < 4; k++) {
            if (e[i].has_att) printf(" %.4f |", e[i].att[k]);
            else printf(" — |");
        }
        for (int k = 0; k < SEG_N_KINDS; k++) {
            if (e[i].has_pos) printf(" %.3f |", e[i].seg[k]);
            else printf(" — |");
        }
        printf("\n");
    }
    char path[4200];
    mkdir_p(dir);
    snprintf(path, sizeof(path), "%s/compare_attention.svg", dir);
    if (!bars(e, n, true, path)) printf("no file has attention mass: no %s\n", path);
    snprintf(path, sizeof(path), "%s/compare_segments.svg", dir);
    if (!bars(e, n, false, path)) printf("no file has learned positions: no %s\n", path);
    free(e);
}
