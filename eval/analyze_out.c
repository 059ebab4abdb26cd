/* build/analyze's outputs for one checkpoint (eval/analyze_out.h): the terminal
   summary, positions.csv, analysis.json (format in docs/analyze.md) and the
   figures positions.svg and attention.svg. */
#include "eval/analyze_out.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/check.h"
#include "common/fileio.h"
#include "eval/analyze_svg.h"
#include "eval/analyze_z_files.h"
#include "eval/analyze_z_out.h"

/* heads and layers merged */
static PosStats layer_stats(const Analysis* an, size_t r) {
    PosStats s = {0};
    for (size_t g = 0; g < an->cfg.KVH; g++) pos_stats_merge(&s, &an->head_stats[r * an->cfg.KVH + g]);
    return s;
}

static PosStats overall_stats(const Analysis* an) {
    PosStats s = {0};
    for (size_t r = 0; r < an->n_repo; r++) {
        PosStats l = layer_stats(an, r);
        pos_stats_merge(&s, &l);
    }
    return s;
}

static Mass total_mass(const Mass* m, size_t n) {
    Mass s = {0};
    for (size_t i = 0; i < n; i++) attn_mass_merge(&s, &m[i]);
    return attn_mass_mean(&s);
}

static void print_pos_line(const char* name, const PosStats* s) {
    PosSummary m = pos_stats_summary(s);
    printf("  %-14s range %9.3f  mean|step| %8.4f  mean step %+8.4f  segments %5zu: constant %.3f  monotonic %.3f  "
           "hybrid %.3f\n",
           name, m.range, m.mean_abs_step, m.mean_step, m.segments, m.share[SEG_CONSTANT], m.share[SEG_MONOTONIC],
           m.share[SEG_HYBRID]);
}

static void print_mass_line(const char* name, Mass m) {
    printf("  %-14s needle %.4f  query %.4f  rest %.4f  (uniform would give the needle %.4f)\n", name, m.needle,
           m.query, m.rest, m.uniform_needle);
}

void analysis_print(const Analysis* an) {
    char name[64];
    if (an->has_pos) {
        printf("\nlearned positions: %zu item(s), segments of %zu tokens, near-constant below %g, monotonic from %g "
               "of the steps\n",
               an->items, an->seg.len, an->seg.eps_const, an->seg.mono_frac);
        for (size_t r = 0; r < an->n_repo; r++) {
            PosStats s = layer_stats(an, r);
            snprintf(name, sizeof(name), "layer %zu", an->repo_layer[r]);
            print_pos_line(name, &s);
        }
        PosStats all = overall_stats(an);
        print_pos_line("all", &all);
    }
    analysis_print_z(an);
    if (an->has_att) {
        printf("\nattention mass of the query rows, %zu %s item(s) of length %zu, mean over heads and rows\n",
               an->items, synthetic_family_name(an->family), an->length);
        for (size_t i = 0; i < an->n_att; i++) {
            snprintf(name, sizeof(name), "layer %zu", an->att_layer[i]);
            print_mass_line(name, attn_mass_mean(&an->layer_rows[i]));
        }
        print_mass_line("mean", total_mass(an->layer_rows, an->n_att));
        print_mass_line("SEP row", total_mass(an->layer_sep, an->n_att));
    }
}

static void write_csv(const Analysis* an, const char* path) {
    char* buf;
    size_t len, T = an->length, KVH = an->cfg.KVH;
    FILE* f = open_memstream(&buf, &len);
    CHECK(f, "analyze: open_memstream failed");
    fprintf(f, "layer,head,t,z\n");
    for (size_t r = 0; r < an->n_repo; r++)
        for (size_t g = 0; g < KVH; g++)
            for (size_t t = 0; t < T; t++)
                fprintf(f, "%zu,%zu,%zu,%.9g\n", an->repo_layer[r], g, t, (double)an->z0[(r * T + t) * KVH + g]);
    fclose(f);
    file_write_output(path, buf, len);
    free(buf);
    printf("wrote %s\n", path);
}

static cJSON* pos_json(const PosStats* s) {
    cJSON* o = cJSON_CreateObject();
    PosSummary m = pos_stats_summary(s);
    cJSON_AddNumberToObject(o, "range", m.range);
    cJSON_AddNumberToObject(o, "mean_abs_step", m.mean_abs_step);
    cJSON_AddNumberToObject(o, "mean_step", m.mean_step);
    cJSON_AddNumberToObject(o, "segments", (double)m.segments);
    for (int k = 0; k < SEG_N_KINDS; k++) cJSON_AddNumberToObject(o, seg_kind_name(k), m.share[k]);
    return o;
}

static cJSON* mass_json(Mass m) {
    cJSON* o = cJSON_CreateObject();
    cJSON_AddNumberToObject(o, "needle", m.needle);
    cJSON_AddNumberToObject(o, "query", m.query);
    cJSON_AddNumberToObject(o, "rest", m.rest);
    cJSON_AddNumberToObject(o, "sum", m.needle + m.query + m.rest);
    cJSON_AddNumberToObject(o, "uniform_needle", m.uniform_needle);
    return o;
}

static cJSON* span_json(Span s) {
    cJSON* a = cJSON_CreateArray();
    cJSON_AddItemToArray(a, cJSON_CreateNumber((double)s.begin));
    cJSON_AddItemToArray(a, cJSON_CreateNumber((double)s.end));
    return a;
}

static cJSON* positions_json(const Analysis* an) {
    cJSON* p = cJSON_CreateObject();
    size_t T = an->length, KVH = an->cfg.KVH;
    cJSON_AddNumberToObject(p, "segment", (double)an->seg.len);
    cJSON_AddNumberToObject(p, "eps_const", an->seg.eps_const);
    cJSON_AddNumberToObject(p, "mono_frac", an->seg.mono_frac);
    PosStats all = overall_stats(an);
    cJSON_AddItemToObject(p, "overall", pos_json(&all));
    cJSON* layers = cJSON_AddArrayToObject(p, "layers");
    for (size_t r = 0; r < an->n_repo; r++) {
        PosStats s = layer_stats(an, r);
        cJSON* lo = pos_json(&s);
        cJSON_AddNumberToObject(lo, "layer", (double)an->repo_layer[r]);
        cJSON* heads = cJSON_AddArrayToObject(lo, "heads");
        for (size_t g = 0; g < KVH; g++) {
            cJSON* ho = pos_json(&an->head_stats[r * KVH + g]);
            cJSON_AddNumberToObject(ho, "head", (double)g);
            cJSON* z = cJSON_AddArrayToObject(ho, "z"); /* the first item's positions */
            for (size_t t = 0; t < T; t++) cJSON_AddItemToArray(z, cJSON_CreateNumber(an->z0[(r * T + t) * KVH + g]));
            cJSON_AddItemToArray(heads, ho);
        }
        cJSON_AddItemToArray(layers, lo);
    }
    cJSON* b = boundary_json(an);
    cJSON_AddItemToObject(p, "boundaries", b ? b : cJSON_CreateNull());
    b = mechanism_json(an);
    cJSON_AddItemToObject(p, "mechanism", b ? b : cJSON_CreateNull());
    return p;
}

static cJSON* attention_json(const Analysis* an) {
    cJSON* a = cJSON_CreateObject();
    cJSON* ls = cJSON_AddArrayToObject(a, "layers");
    for (size_t i = 0; i < an->n_att; i++) cJSON_AddItemToArray(ls, cJSON_CreateNumber((double)an->att_layer[i]));
    cJSON_AddItemToObject(a, "mean", mass_json(total_mass(an->layer_rows, an->n_att)));
    cJSON_AddItemToObject(a, "sep_row", mass_json(total_mass(an->layer_sep, an->n_att)));
    cJSON* pl = cJSON_AddArrayToObject(a, "per_layer");
    for (size_t i = 0; i < an->n_att; i++) {
        cJSON* o = mass_json(attn_mass_mean(&an->layer_rows[i]));
        cJSON_AddNumberToObject(o, "layer", (double)an->att_layer[i]);
        cJSON_AddItemToObject(o, "sep_row", mass_json(attn_mass_mean(&an->layer_sep[i])));
        cJSON_AddItemToArray(pl, o);
    }
    cJSON* items = cJSON_AddArrayToObject(a, "per_item");
    for (size_t i = 0; i < an->items; i++) {
        cJSON* o = mass_json(attn_mass_mean(&an->item_rows[i]));
        cJSON_AddNumberToObject(o, "index", (double)i);
        cJSON_AddItemToObject(o, "query_span", span_json(an->spans[i].query));
        cJSON* ns = cJSON_AddArrayToObject(o, "needle_spans");
        for (size_t b = 0; b < an->spans[i].n_needles; b++) cJSON_AddItemToArray(ns, span_json(an->spans[i].needle[b]));
        cJSON_AddItemToArray(items, o);
    }
    return a;
}

static void write_json(const Analysis* an, const char* path) {
    cJSON* root = cJSON_CreateObject();
    cJSON_AddStringToObject(root, "format", "repoc-analyze");
    cJSON_AddNumberToObject(root, "version", ANALYZE_JSON_VERSION);
    cJSON_AddStringToObject(root, "label", an->label);
    cJSON_AddStringToObject(root, "checkpoint", an->ckpt_dir);
    cJSON_AddStringToObject(root, "block", block_style_name(an->cfg.block));
    cJSON* pos = cJSON_AddArrayToObject(root, "layer_positions");
    for (size_t l = 0; l < an->cfg.L; l++) cJSON_AddItemToArray(pos, cJSON_CreateString(pos_mode_name(an->cfg.pos[l])));
    if (an->cfg.yarn_factor > 1) cJSON_AddNumberToObject(root, "yarn_factor", an->cfg.yarn_factor);
    else cJSON_AddNullToObject(root, "yarn_factor");
    cJSON* in = cJSON_AddObjectToObject(root, "input");
    static const char* const kinds[] = {"synthetic", "tokens", "text"};
    cJSON_AddStringToObject(in, "kind", kinds[an->kind]);
    cJSON_AddNumberToObject(in, "length", (double)an->length);
    cJSON_AddNumberToObject(in, "items", (double)an->items);
    if (an->synthetic) {
        cJSON_AddStringToObject(in, "task", synthetic_family_name(an->family));
        cJSON_AddNumberToObject(in, "prompt_len", (double)an->prompt_len);
        cJSON_AddNumberToObject(in, "seed", (double)an->seed);
        if (an->depth >= 0) cJSON_AddNumberToObject(in, "depth", an->depth);
        else cJSON_AddNullToObject(in, "depth");
    } else if (an->kind == INPUT_TOKENS) {
        cJSON_AddStringToObject(in, "file", an->tokens_file);
        cJSON_AddNumberToObject(in, "offset", (double)an->offset);
    } else {
        cJSON_AddStringToObject(in, "text_from", an->text_from);
        cJSON_AddStringToObject(in, "tokenizer", an->tokenizer);
    }
    cJSON* tok = cJSON_AddArrayToObject(in, "tokens"); /* the first item's */
    for (size_t t = 0; t < an->length; t++) cJSON_AddItemToArray(tok, cJSON_CreateNumber(an->tokens0[t]));
    if (an->kind == INPUT_TEXT) {
        cJSON* pieces = cJSON_AddArrayToObject(in, "pieces");
        for (size_t t = 0; t < an->length; t++) cJSON_AddItemToArray(pieces, cJSON_CreateString(an->pieces[t]));
    }
    cJSON* ranges = ranges_json(an);
    cJSON_AddItemToObject(root, "ranges", ranges ? ranges : cJSON_CreateNull());
    if (an->has_pos) cJSON_AddItemToObject(root, "positions", positions_json(an));
    else cJSON_AddNullToObject(root, "positions");
    if (an->has_att) cJSON_AddItemToObject(root, "attention", attention_json(an));
    else cJSON_AddNullToObject(root, "attention");
    file_write_json(path, root);
    printf("wrote %s\n", path);
}

static void plot_positions(const Analysis* an, const char* path, const size_t* heads, size_t n_heads) {
    const real* z[MAX_LAYERS];
    for (size_t r = 0; r < an->n_repo; r++) z[r] = an->z0 + r * an->length * an->cfg.KVH;
    char title[256];
    PosPlot pp = {.title = title,
                  .T = an->length,
                  .KVH = an->cfg.KVH,
                  .n_panels = an->n_repo,
                  .layer = an->repo_layer,
                  .z = z,
                  .heads = heads,
                  .n_heads = n_heads};
    if (an->synthetic) {
        snprintf(title, sizeof(title), "learned positions: %s, %s item 0 (seed %llu), length %zu", an->label,
                 synthetic_family_name(an->family), (unsigned long long)an->seed, an->length);
        const ItemSpans* s = &an->spans[0];
        for (size_t b = 0; b < s->n_needles && pp.n_shade < SVG_MAX_SHADE - 1; b++) {
            pp.shade[pp.n_shade] = s->needle[b];
            pp.shade_label[pp.n_shade++] = "needle";
        }
        pp.shade[pp.n_shade] = s->query;
        pp.shade_label[pp.n_shade++] = "query";
    } else {
        snprintf(title, sizeof(title), "learned positions: %s, %s from token %zu, length %zu", an->label,
                 an->tokens_file, an->offset, an->length);
    }
    svg_positions(path, &pp);
}

static void plot_attention(const Analysis* an, const char* path) {
    static const char* const series[] = {"needle", "query", "rest"};
    const char** group = callocCheck(an->n_att + 2, sizeof(char*));
    char(*names)[32] = callocCheck(an->n_att, sizeof(*names));
    double* v = callocCheck((an->n_att + 2) * 3, sizeof(double));
    for (size_t i = 0; i <= an->n_att + 1; i++) {
        Mass m = i < an->n_att ? attn_mass_mean(&an->layer_rows[i])
                               : total_mass(i == an->n_att ? an->layer_rows : an->layer_sep, an->n_att);
        if (i < an->n_att) snprintf(names[i], sizeof(names[i]), "layer %zu", an->att_layer[i]);
        group[i] = i < an->n_att ? names[i] : i == an->n_att ? "mean" : "SEP row";
        v[i * 3] = m.needle;
        v[i * 3 + 1] = m.query;
        v[i * 3 + 2] = m.rest;
    }
    char title[256];
    snprintf(title, sizeof(title), "attention mass of the query rows: %s, %zu %s item(s), length %zu", an->label,
             an->items, synthetic_family_name(an->family), an->length);
    BarChart bc = {title, "attention probability mass", an->n_att + 2, 3, group, series, v, 2, NULL, NULL};
    svg_bars(path, &bc);
    free(group);
    free(names);
    free(v);
}

void analysis_write(const Analysis* an, const char* dir, const size_t* plot_heads, size_t n_plot_heads) {
    char path[4200];
    mkdir_p(dir);
    if (an->kind == INPUT_TEXT) {
        analysis_write_text(an, dir, plot_heads, n_plot_heads);
    } else if (an->has_pos) {
        snprintf(path, sizeof(path), "%s/positions.csv", dir);
        write_csv(an, path);
        snprintf(path, sizeof(path), "%s/positions.svg", dir);
        plot_positions(an, path, plot_heads, n_plot_heads);
        svg_to_png(path);
    }
    analysis_write_z(an, dir);
    if (an->has_att) {
        snprintf(path, sizeof(path), "%s/attention.svg", dir);
        plot_attention(an, path);
        svg_to_png(path);
    }
    snprintf(path, sizeof(path), "%s/analysis.json", dir);
    write_json(an, path);
}
