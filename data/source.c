/* Files or synthetic data behind one row function; see source.h. */
#include "data/source.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "common/check.h"
#include "common/dist.h"
#include "common/hash.h"
#include "data/documents.h"

typedef struct {
    const char* key;
    size_t offset; /* of a size_t field in SyntheticConfig */
} SynKey;

#define SK(f) \
    { #f, offsetof(SyntheticConfig, f) }
static const SynKey SYN_KEYS[] = {
    SK(first_id),  SK(n_cols),    SK(alphabet),  SK(filler_vocab), SK(markov_order),  SK(markov_branching), SK(key_len),
    SK(value_len), SK(n_needles), SK(n_queries), SK(n_values),     SK(n_distractors), SK(table_rows),
};
#define N_SYN_KEYS (sizeof(SYN_KEYS) / sizeof(SYN_KEYS[0]))

/* filler_file's tokens, opened once per path and kept for the process (a config is copied by value into the
   data source, the trainer's tasks and eval, so none of them owns it); every id must lie below first_id */
static const TokenData* filler_text_open(const char* path, size_t first_id) {
    static struct {
        char path[256];
        size_t first_id;
        TokenData td;
    } opened[8];
    static size_t n_open;
    for (size_t i = 0; i < n_open; i++)
        if (!strcmp(opened[i].path, path) && opened[i].first_id == first_id) return &opened[i].td;
    CHECK(n_open < sizeof(opened) / sizeof(opened[0]), "data.synthetic.filler_file: more than %zu files in one process",
          sizeof(opened) / sizeof(opened[0]));
    CHECK(first_id > 0, "data.synthetic.filler_file '%s' needs first_id > 0: the text's ids lie below first_id", path);
    snprintf(opened[n_open].path, sizeof(opened[n_open].path), "%s", path);
    opened[n_open].first_id = first_id;
    const char* one[1] = {path};
    token_data_open(&opened[n_open].td, one, 1, "auto", first_id); /* dies on an id >= first_id, naming the file */
    return &opened[n_open++].td;
}

int synthetic_from_json(SyntheticConfig* cfg, const cJSON* obj, char* err, size_t err_len) {
    synthetic_defaults(cfg);
    if (!cJSON_IsObject(obj)) return set_err(err, err_len, "data.synthetic: expected an object");
    const cJSON* it;
    cJSON_ArrayForEach(it, obj) {
        const char* k = it->string;
        if (!strcmp(k, "weights")) {
            if (!cJSON_IsObject(it)) return set_err(err, err_len, "data.synthetic.weights: expected an object");
            for (int f = 0; f < SYN_N_FAMILIES; f++) cfg->weight[f] = 0; /* only the families named */
            cfg->families_named = true;
            const cJSON* w;
            cJSON_ArrayForEach(w, it) {
                int f = synthetic_family_parse(w->string);
                if (f < 0)
                    return set_err(err, err_len, "data.synthetic.weights.%s: unknown family (%s)", w->string,
                                   synthetic_family_list());
                if (!cJSON_IsNumber(w) || !(w->valuedouble >= 0) || !isfinite(w->valuedouble))
                    return set_err(err, err_len, "data.synthetic.weights.%s: expected a number >= 0", w->string);
                cfg->weight[f] = w->valuedouble;
            }
            continue;
        }
        if (!strcmp(k, "answer_weight")) {
            if (!cJSON_IsNumber(it) || !(it->valuedouble > 0) || !isfinite(it->valuedouble))
                return set_err(err, err_len, "data.synthetic.answer_weight: expected a number > 0");
            cfg->answer_weight = it->valuedouble;
            continue;
        }
        if (!strcmp(k, "filler_file")) {
            if (!cJSON_IsString(it) || !it->valuestring[0] || strlen(it->valuestring) >= sizeof(cfg->filler_file))
                return set_err(err, err_len, "data.synthetic.filler_file: expected a token file's path (< %zu bytes)",
                               sizeof(cfg->filler_file));
            snprintf(cfg->filler_file, sizeof(cfg->filler_file), "%s", it->valuestring);
            continue;
        }
        if (!strcmp(k, "filler_seed")) {
            if (!cJSON_IsNumber(it) || it->valuedouble < 0 || it->valuedouble != floor(it->valuedouble))
                return set_err(err, err_len, "data.synthetic.filler_seed: expected a non-negative integer");
            cfg->filler_seed = (uint64_t)it->valuedouble;
            continue;
        }
        size_t i = 0;
        while (i < N_SYN_KEYS && strcmp(SYN_KEYS[i].key, k)) i++;
        if (i == N_SYN_KEYS) return set_err(err, err_len, "data.synthetic.%s: unknown key", k);
        if (!cJSON_IsNumber(it) || it->valuedouble < 0 || it->valuedouble != floor(it->valuedouble) ||
            it->valuedouble > 1e9)
            return set_err(err, err_len, "data.synthetic.%s: expected a non-negative integer", k);
        *(size_t*)((char*)cfg + SYN_KEYS[i].offset) = (size_t)it->valuedouble;
    }
    if (cfg->filler_file[0]) cfg->filler_text = filler_text_open(cfg->filler_file, cfg->first_id);
    return 0;
}

/* every row needs seq_len + 1 tokens; key is "data.train" or "data.val", files what it lists */
static void check_length(const TokenData* td, const char* key, const char* const* files, size_t n, size_t T) {
    char list[1024];
    size_t used = 0;
    list[0] = 0;
    for (size_t i = 0; i < n && used < sizeof(list); i++)
        used += (size_t)snprintf(list + used, sizeof(list) - used, "%s'%s'", i ? ", " : "", files[i]);
    token_data_check_row(td, key, list, T);
}

/* the mixture form of key (data.train / data.val): parse, then open each source */
static void open_mixture(Mixture* mx, const cJSON* list, const char* key, const char* format, size_t vocab_size,
                         size_t T) {
    char err[512];
    if (mixture_parse(mx, list, key, err, sizeof(err))) DIE("%s", err);
    mixture_open(mx, key, format, vocab_size, T);
}

/* The default families (data.synthetic.weights not given) that need more than data.seq_len T are left out
   with a note naming them, so that a short seq_len trains on those that fit; families the user named are
   checked, not left out. */
static void leave_out_long_families(SyntheticConfig* syn, size_t T) {
    if (syn->families_named) return;
    char left[512] = "";
    size_t n = 0, kept = 0;
    for (int f = 0; f < SYN_N_FAMILIES; f++) {
        size_t need = synthetic_min_len(syn, (SynFamily)f) - 1;
        if (T >= need) {
            kept++;
            continue;
        }
        n += (size_t)snprintf(left + n, sizeof left - n, "%s%s (%zu tokens)", n ? ", " : "",
                              synthetic_family_name((SynFamily)f), need);
        syn->weight[f] = 0;
    }
    CHECK(kept, "data.seq_len %zu is too short for every synthetic family: %s", T, left);
    if (n && dist_rank() == 0)
        printf("note: data.synthetic: left out %s, longer than data.seq_len %zu; the other families train (name "
               "families in data.synthetic.weights to choose them)\n",
               left, T);
}

/* data.format "jsonl" (data_source_open) */
static void open_jsonl(DataSource* ds, const DataSourceSpec* spec) {
    CHECK(!spec->synthetic, "data.format \"jsonl\" reads data.train files; remove data.synthetic");
    CHECK(!spec->train_sources && !spec->val_sources,
          "data.format \"jsonl\" takes data.train and data.val as lists of files, not of sources");
    memset(ds, 0, sizeof(*ds));
    ds->eos = -1;
    ds->order = spec->order;
    ds->seed = spec->seed;
    ds->jsonl = true;
    CHECK(spec->n_train > 0, "data.train: no training files given for data.format \"jsonl\"");
    packed_open(&ds->jtrain, spec->train, spec->n_train, spec->tokenizer, spec->vocab_size, spec->T, false);
    packed_print(&ds->jtrain, "data.train (jsonl)", stdout);
    if (spec->n_val) {
        packed_open(&ds->jval, spec->val, spec->n_val, spec->tokenizer, spec->vocab_size, spec->T, false);
        packed_print(&ds->jval, "data.val (jsonl)", stdout);
        ds->has_val = true;
    }
}

void data_source_open(DataSource* ds, const DataSourceSpec* spec) {
    if (spec->format && !strcmp(spec->format, "jsonl")) {
        open_jsonl(ds, spec);
        return;
    }
    const cJSON* synthetic = spec->synthetic;
    const char* format = spec->format;
    size_t vocab_size = spec->vocab_size, T = spec->T;
    memset(ds, 0, sizeof(*ds));
    ds->eos = -1;
    ds->order = spec->order;
    ds->seed = spec->seed;
    if (synthetic) {
        char err[512];
        if (synthetic_from_json(&ds->syn, synthetic, err, sizeof(err))) DIE("%s", err);
        leave_out_long_families(&ds->syn, T);
        synthetic_validate(&ds->syn, vocab_size);
        for (int f = 0; f < SYN_N_FAMILIES; f++) /* checked before any work starts */
            CHECK(ds->syn.weight[f] == 0 || T + 1 >= synthetic_min_len(&ds->syn, (SynFamily)f),
                  "data.seq_len %zu is too short for synthetic family '%s' (needs %zu tokens): give a longer "
                  "data.seq_len or leave the family out of data.synthetic.weights",
                  T, synthetic_family_name((SynFamily)f), synthetic_min_len(&ds->syn, (SynFamily)f) - 1);
        ds->synthetic = true;
        ds->has_val = true;
        return;
    }
    if (spec->train_sources) {
        open_mixture(&ds->train_mix, spec->train_sources, "data.train", format, vocab_size, T);
    } else {
        CHECK(spec->n_train > 0, "data.train: no training files given (and no data.synthetic)");
        token_data_open(&ds->train, spec->train, spec->n_train, format, vocab_size);
        check_length(&ds->train, "data.train", spec->train, spec->n_train, T);
    }
    if (spec->val_sources) {
        open_mixture(&ds->val_mix, spec->val_sources, "data.val", format, vocab_size, T);
        ds->has_val = true;
    } else if (spec->n_val) {
        token_data_open(&ds->val, spec->val, spec->n_val, format, vocab_size);
        ds->has_val = true;
        check_length(&ds->val, "data.val", spec->val, spec->n_val, T);
    }
}

void data_source_close(DataSource* ds) {
    if (ds->jsonl) {
        packed_close(&ds->jtrain);
        if (ds->has_val) packed_close(&ds->jval);
    } else if (!ds->synthetic) {
        if (ds->train.files) token_data_close(&ds->train);
        if (ds->val.files) token_data_close(&ds->val);
        mixture_close(&ds->train_mix);
        mixture_close(&ds->val_mix);
    }
    memset(ds, 0, sizeof(*ds));
}

/* document ids of rows whose tokens are filled: from the end-of-document token, else one document per row */
static void eos_doc_ids(const DataSource* ds, size_t n, size_t T, const int32_t* tokens, int32_t* doc_ids) {
    if (!doc_ids) return;
    if (ds->eos >= 0) doc_ids_from_eos(doc_ids, tokens, n, T, ds->eos);
    else memset(doc_ids, 0, n * T * sizeof(int32_t));
}

/* every target weighs 1: sources without answers */
static void unit_weights(real* w, size_t n) {
    if (!w) return;
    for (size_t i = 0; i < n; i++) w[i] = 1;
}

void data_source_batch(const DataSource* ds, bool val, size_t step, size_t rows_per_step, size_t row0, Batch* b) {
    size_t n = b->B, T = b->T;
    /* validation reads its rows in order, batch after batch */
    RowRequest rq = {.order = val ? ORDER_SEQUENTIAL : ds->order,
                     .seed = ds->seed,
                     .step = step,
                     .rows_per_step = rows_per_step,
                     .row0 = row0,
                     .n = n,
                     .T = T};
    if (ds->synthetic) { /* the held-out stream: another seed, never drawn in training */
        if (val) rq.seed = mix64(ds->seed ^ 0x76616c6964617465ull);
        synthetic_rows_weighted(&ds->syn, &rq, b->tokens, b->targets, b->target_weights);
        eos_doc_ids(ds, n, T, b->tokens, b->doc_ids);
        return;
    }
    unit_weights(b->target_weights, n * T); /* token files have no answers */
    CHECK(!val || ds->has_val, "no validation data (data.val)");
    if (ds->jsonl) {
        packed_rows(val ? &ds->jval : &ds->jtrain, &rq, b->tokens, b->targets, b->doc_ids);
        return;
    }
    if (!val && ds->train_mix.n) {
        mixture_rows(&ds->train_mix, &rq, b->tokens, b->targets, NULL);
    } else {
        CHECK(!val || !ds->val_mix.n, "data.val has sources: read them with data_source_val_batch");
        token_data_rows(val ? &ds->val : &ds->train, &rq, b->tokens, b->targets);
    }
    eos_doc_ids(ds, n, T, b->tokens, b->doc_ids);
}

size_t data_source_val_streams(const DataSource* ds) { return ds->val_mix.n ? ds->val_mix.n : 1; }

const char* data_source_val_name(const DataSource* ds, size_t k) {
    return ds->val_mix.n ? ds->val_mix.src[k].name : NULL;
}

size_t data_source_val_batches(const DataSource* ds, size_t k, size_t eval_batches, size_t B, size_t T) {
    if (!ds->val_mix.n) return eval_batches;
    size_t windows = (ds->val_mix.src[k].data.n_tokens - 1) / T; /* whole windows, as eval_perplexity */
    size_t n = windows / B < eval_batches ? windows / B : eval_batches;
    return n ? n : 1; /* fewer than B windows: one batch, its later rows round the stream */
}

void data_source_val_batch(const DataSource* ds, size_t k, size_t batch, Batch* b) {
    size_t B = b->B, T = b->T;
    if (!ds->val_mix.n) {
        data_source_batch(ds, true, batch, B, 0, b);
        return;
    }
    /* sequential rows (batch*B + j) * T: the windows build/eval --ppl reads, in its order */
    token_data_rows(
        &ds->val_mix.src[k].data,
        &(RowRequest){.order = ORDER_SEQUENTIAL, .seed = ds->seed, .step = batch, .rows_per_step = B, .n = B, .T = T},
        b->tokens, b->targets);
    unit_weights(b->target_weights, B * T);
    eos_doc_ids(ds, B, T, b->tokens, b->doc_ids);
}

/* "one pass over N is P steps (this run: k passes)" */
static void describe_pass(FILE* fp, double per_step, double n, size_t steps) {
    double pass = n / per_step;
    fprintf(fp, "one pass over them takes %.1f steps (this run of %zu steps: %.2f passes)", pass, steps,
            (double)steps / pass);
}

void data_source_describe(const DataSource* ds, size_t rows_per_step, size_t T, size_t steps, FILE* fp) {
    double step_tokens = (double)rows_per_step * (double)T;
    if (ds->synthetic) {
        fprintf(fp, "data: synthetic rows, generated afresh at every step (%.0f tokens a step): no end\n", step_tokens);
        return;
    }
    if (ds->jsonl) {
        fprintf(fp, "data: %zu packed rows of %zu tokens, %zu a step: ", ds->jtrain.n_rows, T, rows_per_step);
        describe_pass(fp, (double)rows_per_step, (double)ds->jtrain.n_rows, steps);
        fprintf(fp, "; %s\n",
                ds->order == ORDER_SEQUENTIAL ? "after the last row the first comes again"
                                              : "each row is drawn at random, so rows repeat before all are read");
        return;
    }
    if (ds->train_mix.n) {
        for (size_t k = 0; k < ds->train_mix.n; k++) {
            const MixSource* s = &ds->train_mix.src[k];
            fprintf(fp, "data: source '%s': %zu tokens, %.0f a step (share %.3f): ", s->name, s->data.n_tokens,
                    s->share * step_tokens, s->share);
            describe_pass(fp, s->share * step_tokens, (double)s->data.n_tokens, steps);
            fprintf(fp, "; used up, it %s\n",
                    s->exhausted == MIX_STOP ? "stops the run (exhausted \"stop\")"
                                             : "starts again (exhausted \"wrap\")");
        }
        return;
    }
    fprintf(fp, "data: %zu tokens, %.0f a step (%zu rows of %zu): ", ds->train.n_tokens, step_tokens, rows_per_step, T);
    describe_pass(fp, step_tokens, (double)ds->train.n_tokens, steps);
    fprintf(fp, "; %s\n",
            ds->order == ORDER_SEQUENTIAL
                ? "at the end the stream runs on from its start (data.order \"sequential\")"
                : "each row is a window drawn at random (data.order \"shuffle\"), so windows repeat before all "
                  "are read and the data has no end");
}
