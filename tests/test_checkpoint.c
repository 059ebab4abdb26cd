/* Hugging Face checkpoint directories: sharded loading, continuing a
   plain checkpoint with new RePo weights, and every malformed directory giving
   its own clear error (run in a child process; exit status and message checked). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/check.h"
#include "common/fileio.h"
#include "common/safetensors.h"
#include "hf/hf_checkpoint.h"
#include "hf/hf_config.h"
#include "model/model.h"
#include "tests/testutil.h"

static const char* FIXTURE = "tests/fixtures/olmo2_mix/ckpt";
static char tmp_root[] = "/tmp/repoc_ckpt_XXXXXX";

static void load_dir(void* arg) {
    const char* dir = arg;
    ModelConfig cfg;
    hf_config_read(dir, &cfg);
    Model m;
    model_build(&m, &cfg, 1, 4, NULL, 0, false);
    hf_load_weights(&m, dir, 1, true);
    model_free(&m);
}

/* the check train runs before allocating anything of the model's size: headers only */
static void check_dir(void* arg) {
    const char* dir = arg;
    ModelConfig cfg;
    hf_config_read(dir, &cfg);
    hf_check_weights(dir, &cfg);
}

/* the loader and the header check both refuse the directory with the same message */
static void expect_both_die(const char* label, char* dir, const char* const* phrases) {
    char l2[160];
    expect_dies_with(label, load_dir, dir, phrases);
    snprintf(l2, sizeof(l2), "%s (headers only, before allocation)", label);
    expect_dies_with(l2, check_dir, dir, phrases);
}

/* a fresh directory holding the fixture's config.json */
static void make_dir(char* dir, size_t len, const char* name) {
    snprintf(dir, len, "%s/%s", tmp_root, name);
    mkdir_p(dir);
    char src[512], dst[600];
    snprintf(src, sizeof(src), "%s/config.json", FIXTURE);
    snprintf(dst, sizeof(dst), "%s/config.json", dir);
    size_t n;
    char* text = file_read_all(src, &n);
    file_write_atomic(dst, text, n);
    free(text);
}

/* write the model's tensors [lo, hi) into dir/file, optionally renaming or reshaping one */
static void write_subset(const Model* m, const char* dir, const char* file, size_t lo, size_t hi, long skip,
                         const char* extra_name, int transpose_first, StDtype dtype) {
    StWriteTensor w[256];
    size_t n = 0;
    for (size_t i = lo; i < hi; i++) {
        if ((long)i == skip) continue;
        const TensorInfo* t = &m->tensors.t[i];
        w[n] = (StWriteTensor){t->name, dtype, t->ndim, {t->shape[0], t->shape[1]}, m->params + t->offset};
        if (transpose_first && n == 0 && t->ndim == 2) {
            w[n].shape[0] = t->shape[1];
            w[n].shape[1] = t->shape[0];
        }
        n++;
    }
    int32_t dummy[4] = {0};
    if (extra_name) w[n++] = (StWriteTensor){extra_name, ST_I32, 1, {4}, dummy};
    char path[700];
    snprintf(path, sizeof(path), "%s/%s", dir, file);
    st_write(path, w, n, NULL, NULL, 0);
}

static void write_text(const char* dir, const char* file, const char* text) {
    char path[700];
    snprintf(path, sizeof(path), "%s/%s", dir, file);
    file_write_atomic(path, text, strlen(text));
}

int main(void) {
    CHECK(mkdtemp(tmp_root), "mkdtemp");
    ModelConfig cfg;
    hf_config_read(FIXTURE, &cfg);
    Model ref;
    model_build(&ref, &cfg, 1, 4, NULL, 0, false);
    hf_load_weights(&ref, FIXTURE, 1, false);
    size_t nt = ref.tensors.n;
    char dir[600];

    printf("sharded checkpoint (model.safetensors.index.json)\n");
    make_dir(dir, sizeof(dir), "sharded");
    write_subset(&ref, dir, "model-00001-of-00002.safetensors", 0, nt / 2, -1, NULL, 0, ST_F32);
    write_subset(&ref, dir, "model-00002-of-00002.safetensors", nt / 2, nt, -1, NULL, 0, ST_F32);
    {
        char* idx = mallocCheck(65536);
        size_t o = (size_t)snprintf(idx, 65536, "{\"metadata\": {}, \"weight_map\": {");
        for (size_t i = 0; i < nt; i++)
            o += (size_t)snprintf(idx + o, 65536 - o, "%s\"%s\": \"model-0000%d-of-00002.safetensors\"", i ? ", " : "",
                                  ref.tensors.t[i].name, i < nt / 2 ? 1 : 2);
        snprintf(idx + o, 65536 - o, "}}");
        write_text(dir, "model.safetensors.index.json", idx);
        free(idx);
        Model m;
        model_build(&m, &cfg, 1, 4, NULL, 0, false);
        hf_load_weights(&m, dir, 1, false);
        EXPECT(memcmp(m.params, ref.params, ref.tensors.n_params * sizeof(real)) == 0,
               "two shards load bit-identically to the single file");
        model_free(&m);
    }

    printf("continuing a checkpoint with RePo layers it does not have\n");
    {
        ModelConfig c2 = cfg;
        model_config_plan_positions(&c2, "repo", 1); /* layers 1..3 RePo; the checkpoint has RePo on layer 2 only */
        Model m;
        model_build(&m, &c2, 1, 4, NULL, 0, false);
        size_t fresh = hf_load_weights(&m, FIXTURE, 42, true);
        EXPECT(fresh == 6, "6 new RePo tensors (gate, content, final map of layers 1 and 3), got %zu", fresh);
        long i = tensor_table_find(&m.tensors, "model.layers.1.self_attn.gate_map.weight");
        double s = 0;
        for (size_t k = 0; k < m.tensors.t[i].numel; k++) s = fmax(s, fabs(m.params[m.tensors.t[i].offset + k]));
        EXPECT(s > 0 && s <= 0.06 + 1e-9, "new RePo weights drawn within ±3σ = 0.06 (max |w| = %.4f)", s);
        model_free(&m);
    }

    {
        char out[4096];
        int st = capture_child(check_dir, (void*)FIXTURE, out, sizeof(out));
        EXPECT(st == 0, "the fixture's headers match its config.json: the header check exits %d %s", st, out);
    }
    printf("malformed checkpoint directories\n");
    make_dir(dir, sizeof(dir), "no_weights");
    expect_both_die("directory with no weights", dir,
                    (const char*[]){"no_weights", "no weights", "model.safetensors", NULL});
    make_dir(dir, sizeof(dir), "missing");
    write_subset(&ref, dir, "model.safetensors", 0, nt, 3, NULL, 0, ST_F32);
    expect_both_die("missing tensor", dir, (const char*[]){"missing:", ref.tensors.t[3].name, NULL});
    make_dir(dir, sizeof(dir), "unexpected");
    write_subset(&ref, dir, "model.safetensors", 0, nt, -1, "model.layers.9.extra.weight", 0, ST_F32);
    expect_both_die("unexpected tensor", dir, (const char*[]){"unexpected:", "model.layers.9.extra", NULL});
    make_dir(dir, sizeof(dir), "shape");
    write_subset(&ref, dir, "model.safetensors", 0, nt, -1, NULL, 1, ST_F32);
    expect_both_die("wrong shape", dir,
                    (const char*[]){ref.tensors.t[0].name, "has shape [32, 64]", "expects [64, 32]", NULL});
    make_dir(dir, sizeof(dir), "badjson");
    write_text(dir, "config.json", "{\"architectures\": [\"Olmo2ForCausalLM\"], \"vocab_size\": 64,,}");
    expect_dies_with("invalid config.json", load_dir, dir,
                     (const char*[]){"config.json", "invalid JSON near byte", NULL});
    make_dir(dir, sizeof(dir), "nokey");
    write_text(dir, "config.json", "{\"architectures\": [\"Olmo2ForCausalLM\"], \"vocab_size\": 64}");
    expect_dies_with("config.json without hidden_size", load_dir, dir,
                     (const char*[]){"missing key 'hidden_size'", NULL});
    make_dir(dir, sizeof(dir), "arch");
    write_text(dir, "config.json", "{\"architectures\": [\"GPT2LMHeadModel\"]}");
    expect_dies_with("unsupported architecture", load_dir, dir,
                     (const char*[]){"GPT2LMHeadModel", "not supported", NULL});
    make_dir(dir, sizeof(dir), "noconfig");
    {
        char p[700];
        snprintf(p, sizeof(p), "%s/config.json", dir);
        unlink(p);
    }
    expect_dies_with("no config.json", load_dir, dir, (const char*[]){"config.json", "cannot read", NULL});
    make_dir(dir, sizeof(dir), "index_missing_file");
    write_text(dir, "model.safetensors.index.json", "{\"weight_map\": {\"model.norm.weight\": \"gone.safetensors\"}}");
    expect_both_die("index naming a missing shard", dir, (const char*[]){"gone.safetensors", NULL});
    make_dir(dir, sizeof(dir), "truncated");
    write_subset(&ref, dir, "model.safetensors", 0, nt, -1, NULL, 0, ST_F32);
    {
        char p[700];
        snprintf(p, sizeof(p), "%s/model.safetensors", dir);
        CHECK(truncate(p, 2000) == 0, "truncate");
    }
    expect_both_die("truncated weights file", dir, (const char*[]){"truncated/model.safetensors", NULL});

    model_free(&ref);
    char cmd[700];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmp_root);
    CHECK(system(cmd) == 0, "cleanup");
    printf("test_checkpoint: %s\n", test_failures ? "FAILED" : "all OK");
    return test_failures ? 1 : 0;
}
