/* Tests of the run config (train/run_config.h): configs/example.json loads and
   equals the defaults; every kind of bad input stops with a message naming the
   key (unknown keys with a suggestion, wrong types, ranges, enums, per-layer
   lists, malformed JSON with its line, a missing file, checks between keys);
   --set overrides; to_json -> load gives the same config; was_set; and the
   bridges to ModelConfig (fresh and init_from) and OptimConfig. One line per
   check, OK / NOT OK; exit status 1 on any failure. Run from the repo root. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/check.h"
#include "common/fileio.h"
#include "train/run_config.h"
#include "tests/testutil.h"

static char tmpdir[64];
#define DATA "\"data\": {\"train\": [\"t.bin\"], \"val\": [\"v.bin\"]}"

/* write text to tmpdir/name; returns the path (static buffer) */
static const char* write_tmp(const char* name, const char* text) {
    static char path[256];
    snprintf(path, sizeof(path), "%s/%s", tmpdir, name);
    file_write_atomic(path, text, strlen(text));
    return path;
}

/* load json (NULL = no file) with overrides; err gets the message */
static int load(RunConfig* rc, const char* json, const char* const* ov, size_t n, char* err, size_t len) {
    return run_config_load(rc, json ? write_tmp("c.json", json) : NULL, ov, n, err, len);
}

/* the load must fail and its message contain want */
static void expect_error(const char* label, const char* json, const char* const* ov, size_t n, const char* want) {
    RunConfig rc;
    char err[1024];
    int r = load(&rc, json, ov, n, err, sizeof(err));
    EXPECT(r != 0 && strstr(err, want), "%-34s %s", label, r ? err : "(loaded without an error)");
    if (r && !strstr(err, want)) printf("           expected to contain: %s\n", want);
    run_config_free(&rc);
}

/* run_config_print into a malloc'd string */
static char* printed(const RunConfig* rc) {
    char* buf = NULL;
    size_t len = 0;
    FILE* fp = open_memstream(&buf, &len);
    CHECK(fp, "open_memstream failed");
    run_config_print(rc, fp);
    fclose(fp);
    return buf;
}

static void test_example(void) {
    printf("configs/example.json\n");
    RunConfig ex, def;
    char err[1024];
    int r = run_config_load(&ex, "configs/example.json", NULL, 0, err, sizeof(err));
    EXPECT(r == 0, "loads%s%s", r ? ": " : "", r ? err : "");
    const char* ov[] = {"data.train=[\"data/train_*.bin\"]", "data.val=[\"data/val_*.bin\"]"};
    r = run_config_load(&def, NULL, ov, 2, err, sizeof(err));
    EXPECT(r == 0, "defaults + data files load%s%s", r ? ": " : "", r ? err : "");
    char *a = printed(&ex), *b = printed(&def);
    EXPECT(!strcmp(a, b), "example.json holds exactly the defaults (printed configs equal)");
    if (strcmp(a, b)) printf("example:\n%s\ndefaults:\n%s", a, b);
    printf("  resolved config:\n%s", a);
    EXPECT(!run_config_was_set(&def, "model.d_model") && run_config_was_set(&ex, "model.d_model"),
           "was_set: example.json sets model.d_model, the defaults do not");
    free(a);
    free(b);
    run_config_free(&ex);
    run_config_free(&def);
}

static void test_errors(void) {
    printf("errors in the file\n");
    expect_error("unknown key, suggestion", "{\"optim\": {\"learnig_rate\": 1e-3}, " DATA "}", NULL, 0,
                 "c.json: optim.learnig_rate: unknown key (did you mean optim.lr?)");
    expect_error("typo at a nested level", "{\"model\": {\"positions\": {\"moed\": \"repo\"}}, " DATA "}", NULL, 0,
                 "model.positions.moed: unknown key (did you mean model.positions.mode?)");
    expect_error("typo at the top level", "{\"trian\": {}, " DATA "}", NULL, 0,
                 "trian: unknown key (did you mean train?)");
    expect_error("key in the wrong section", "{\"train\": {\"lr\": 0.1}, " DATA "}", NULL, 0,
                 "train.lr: unknown key (did you mean optim.lr?)");
    expect_error("Hugging Face name", "{\"model\": {\"hidden_size\": 512}, " DATA "}", NULL, 0,
                 "model.hidden_size: unknown key (did you mean model.d_model?)");
    expect_error(
        "unknown key, nothing near", "{\"run\": {\"zzzzzzzz\": 1}, " DATA "}", NULL, 0,
        "run.zzzzzzzz: unknown key (valid here: out_dir seed threads resume overwrite check_memory link_gbps)");
    expect_error("wrong type", "{\"train\": {\"batch_size\": \"8\"}, " DATA "}", NULL, 0,
                 "train.batch_size: expected an integer, got \"8\"");
    expect_error("negative steps", "{\"train\": {\"steps\": -5}, " DATA "}", NULL, 0,
                 "train.steps: expected a non-negative integer, got -5");
    expect_error("fractional size", "{\"data\": {\"seq_len\": 8.5, \"train\": [\"t\"], \"val\": [\"v\"]}}", NULL, 0,
                 "data.seq_len: expected an integer, got 8.5");
    expect_error("seq_len below 2", "{\"data\": {\"seq_len\": 1, \"train\": [\"t\"], \"val\": [\"v\"]}}", NULL, 0,
                 "data.seq_len: expected an integer >= 2, got 1");
    expect_error("keep_last 0", "{\"train\": {\"keep_last\": 0}, " DATA "}", NULL, 0,
                 "train.keep_last: expected a positive integer, got 0");
    expect_error("number too large", "{\"optim\": {\"lr\": 1e999}, " DATA "}", NULL, 0,
                 "optim.lr: expected a finite number");
    expect_error("beta out of range", "{\"optim\": {\"beta2\": 1.0}, " DATA "}", NULL, 0,
                 "optim.beta2: expected a number in [0, 1), got 1");
    expect_error("lr zero", "{\"optim\": {\"lr\": 0}, " DATA "}", NULL, 0, "optim.lr: expected a number > 0, got 0");
    expect_error("bool wrong type", "{\"model\": {\"tie_embeddings\": 1}, " DATA "}", NULL, 0,
                 "model.tie_embeddings: expected true or false, got 1");
    expect_error("section wrong type", "{\"model\": 5, " DATA "}", NULL, 0, "model: expected an object, got 5");
    expect_error("bad enum", "{\"model\": {\"positions\": {\"mode\": \"rop\"}}, " DATA "}", NULL, 0,
                 "model.positions.mode: expected one of rope|repo|nope|r2n1|n2r1, got \"rop\" (did you mean rope?)");
    expect_error("bad arch", "{\"model\": {\"arch\": \"gpt2\"}, " DATA "}", NULL, 0,
                 "model.arch: expected one of olmo2|llama|qwen2|qwen3, got \"gpt2\"");
    expect_error("bad rope_type",
                 "{\"model\": {\"positions\": {\"rope_scaling\": {\"rope_type\": \"linear\"}}}, " DATA "}", NULL, 0,
                 "model.positions.rope_scaling.rope_type: expected one of yarn, got \"linear\"");
    expect_error("bad positions.layers entry",
                 "{\"model\": {\"positions\": {\"layers\": [\"rope\", \"repo\", \"rop\", \"nope\"]}}, " DATA "}", NULL,
                 0, "model.positions.layers[2]: expected one of rope|repo|nope, got \"rop\"");
    expect_error("positions.layers length",
                 "{\"model\": {\"positions\": {\"layers\": [\"rope\", \"repo\", \"repo\"]}}, " DATA "}", NULL, 0,
                 "model.positions.layers: has 3 entries, but the model has 4 layers");
    expect_error("list entry wrong type", "{\"data\": {\"train\": [\"a\", 3], \"val\": [\"v\"]}}", NULL, 0,
                 "data.train[1]: expected a string, got 3");
    expect_error("lr_mult group typo", "{\"optim\": {\"lr_mult\": {\"rep\": 0.1}}, " DATA "}", NULL, 0,
                 "optim.lr_mult.rep: expected \"repo\" or a pattern");
    expect_error("lr_mult negative", "{\"optim\": {\"lr_mult\": {\"model.layers.*\": -1}}, " DATA "}", NULL, 0,
                 "optim.lr_mult.model.layers.*: expected a number >= 0, got -1");
    expect_error("freeze not a pattern", "{\"optim\": {\"freeze\": [\"embed\"]}, " DATA "}", NULL, 0,
                 "optim.freeze[0]: expected a pattern over Hugging Face tensor names");
    expect_error("dotted key in a file", "{\"optim.lr\": 1, " DATA "}", NULL, 0,
                 "optim.lr: a dotted key: write it as nested objects");
    expect_error("duplicate key", "{\"train\": {\"steps\": 5, \"steps\": 6}, " DATA "}", NULL, 0,
                 "train.steps: duplicate key");
    expect_error("malformed JSON, line:column", "{\n  \"run\": {\n    \"seed\": 1,,\n  }\n}\n", NULL, 0,
                 "c.json:3:16: JSON syntax error");
    expect_error("not an object", "[1, 2]", NULL, 0, "c.json: expected a JSON object at the top level");
    char missing[300];
    snprintf(missing, sizeof(missing), "%s/missing.json: cannot read the config file: No such file", tmpdir);
    RunConfig rc;
    char err[1024], path[300];
    snprintf(path, sizeof(path), "%s/missing.json", tmpdir);
    int r = run_config_load(&rc, path, NULL, 0, err, sizeof(err));
    EXPECT(r && strstr(err, missing), "%-34s %s", "missing file", err);
    run_config_free(&rc);

    printf("checks between keys\n");
    expect_error("n_heads divides d_model", "{\"model\": {\"n_heads\": 6}, " DATA "}", NULL, 0,
                 "model.n_heads: 6 does not divide model.d_model 256");
    expect_error("n_kv_heads divides n_heads", "{\"model\": {\"n_kv_heads\": 3}, " DATA "}", NULL, 0,
                 "model.n_kv_heads: 3 does not divide model.n_heads 8");
    expect_error("RePo needs d_model % 8",
                 "{\"model\": {\"d_model\": 260, \"n_heads\": 2, \"positions\": {\"mode\": \"repo\"}}, " DATA "}", NULL,
                 0, "model.d_model: 260 must be divisible by 8 for RePo layers");
    expect_error("repo_start_layer without repo", "{\"model\": {\"positions\": {\"repo_start_layer\": 1}}, " DATA "}",
                 NULL, 0, "model.positions.repo_start_layer: given, but model.positions.mode is \"rope\"");
    expect_error("repo_pdrop init without anneal_steps",
                 "{\"model\": {\"positions\": {\"mode\": \"repo\", \"repo_pdrop\": {\"init\": 1}}}, " DATA "}", NULL, 0,
                 "model.positions.repo_pdrop.anneal_steps: missing");
    expect_error("repo_pdrop init > 1", "{\"model\": {\"positions\": {\"repo_pdrop\": {\"init\": 1.5}}}, " DATA "}",
                 NULL, 0, "model.positions.repo_pdrop.init");
    expect_error("repo_pdrop anneal_steps 0",
                 "{\"model\": {\"positions\": {\"repo_pdrop\": {\"init\": 1, \"anneal_steps\": 0}}}, " DATA "}", NULL,
                 0, "model.positions.repo_pdrop.anneal_steps");
    expect_error("repo_start_layer > n_layers",
                 "{\"model\": {\"positions\": {\"mode\": \"repo\", \"repo_start_layer\": 9}}, " DATA "}", NULL, 0,
                 "model.positions.repo_start_layer: 9 exceeds the model's 4 layers");
    expect_error("YaRN betas", "{\"model\": {\"positions\": {\"rope_scaling\": {\"beta_fast\": 1}}}, " DATA "}", NULL,
                 0, "model.positions.rope_scaling.beta_fast: 1 must exceed beta_slow 1");
    expect_error("min_lr > lr", "{\"optim\": {\"min_lr\": 0.01}, " DATA "}", NULL, 0,
                 "optim.min_lr: 0.01 exceeds optim.lr 0.0003");
    expect_error("explicit warmup > steps", "{\"train\": {\"steps\": 50}, \"optim\": {\"warmup_steps\": 60}, " DATA "}",
                 NULL, 0, "optim.warmup_steps: 60 exceeds train.steps 50");
    expect_error("no training data", "{}", NULL, 0, "data.train: no training data");
    expect_error("train and synthetic", "{\"data\": {\"train\": [\"t\"], \"synthetic\": {}}}", NULL, 0,
                 "data.synthetic: given together with data.train");
    expect_error("explicit eval without val", "{\"data\": {\"train\": [\"t\"]}, \"train\": {\"eval_every\": 50}}", NULL,
                 0, "data.val: empty while train.eval_every is 50");
}

/* a short run from a minimal config: the defaults that do not fit adapt, each with a printed note */
static void test_short_run_defaults(void) {
    printf("defaults of a short run\n");
    RunConfig rc;
    char err[1024];
    int r = load(&rc, "{\"data\": {\"train\": [\"t\"]}, \"train\": {\"steps\": 20}}", NULL, 0, err, sizeof(err));
    EXPECT(r == 0, "only data.train and train.steps 20: loads (%s)", r ? err : "no error");
    if (r == 0) {
        char* text = printed(&rc);
        EXPECT(rc.train.eval_every == 0 && strstr(text, "note: no data.val given: evaluation is off"),
               "no data.val: eval_every %zu, and the printed config says evaluation is off", rc.train.eval_every);
        EXPECT(rc.optim.cfg.warmup_steps == 2 && strstr(text, "warming up for 2 steps"),
               "default warmup 100 > 20 steps: %zu (a tenth of the run), with a note", rc.optim.cfg.warmup_steps);
        free(text);
    }
    run_config_free(&rc);
    r = load(&rc, "{" DATA ", \"train\": {\"steps\": 5000}}", NULL, 0, err, sizeof(err));
    EXPECT(r == 0 && rc.optim.cfg.warmup_steps == 100 && rc.train.eval_every == 100 && !rc.notes[0],
           "a long run with data.val keeps warmup 100 and eval_every 100, no note");
    run_config_free(&rc);
}

static void test_overrides(void) {
    printf("--set overrides\n");
    RunConfig rc;
    char err[1024];
    const char* ov[] = {
        "optim.lr=0.001",
        "data.train=[\"a.bin\", \"b/*.bin\"]",
        "run.out_dir=runs/x",
        "run.resume=2024",
        "optim.lr_mult.repo=0.1",
        "optim.lr_mult.model.layers.*.mlp.*=2",
        "model.positions={\"mode\": \"repo\", \"repo_start_layer\": 2}",
        "data.val=v.bin",
        "train.steps=2000",
    };
    int r = load(&rc, "{" DATA "}", ov, sizeof(ov) / sizeof(ov[0]), err, sizeof(err));
    EXPECT(r == 0, "a file plus nine overrides loads%s%s", r ? ": " : "", r ? err : "");
    EXPECT(rc.optim.cfg.lr == 0.001 && run_config_was_set(&rc, "optim.lr"), "optim.lr=0.001 overrides, was_set");
    EXPECT(rc.data.train.n == 2 && !strcmp(rc.data.train.v[1], "b/*.bin"), "array value replaces data.train");
    EXPECT(rc.data.val.n == 1 && !strcmp(rc.data.val.v[0], "v.bin"), "a bare string is a list of one");
    EXPECT(!strcmp(rc.run.out_dir, "runs/x"), "a bare string: run.out_dir=runs/x");
    EXPECT(!strcmp(rc.run.resume, "2024") && rc.run.resume_mode == RESUME_PATH,
           "a number for a string key is its text (resume \"2024\", a path)");
    EXPECT(rc.optim.lr_mult.n == 2 && rc.optim.lr_mult.v[0].mult == 0.1 &&
               !strcmp(rc.optim.lr_mult.v[1].pattern, "model.layers.*.mlp.*") && rc.optim.lr_mult.v[1].mult == 2,
           "lr_mult.repo replaced, a dotted pattern appended");
    EXPECT(!strcmp(rc.model.positions.mode, "repo") && rc.model.positions.repo_start_layer == 2,
           "an object value merges into model.positions");
    run_config_free(&rc);

    const char* syn[] = {"data.train=[]", "data.synthetic.task.n_keys=16", "data.synthetic.kind=recall"};
    r = load(&rc, "{" DATA "}", syn, 3, err, sizeof(err));
    char* s = rc.data.synthetic ? cJSON_PrintUnformatted(rc.data.synthetic) : NULL;
    EXPECT(r == 0 && s && !strcmp(s, "{\"task\":{\"n_keys\":16},\"kind\":\"recall\"}"),
           "data.synthetic.* builds the generator object: %s", s ? s : err);
    cJSON_free(s);
    run_config_free(&rc);

    const char* bad1[] = {"optim.learnig_rate=1"};
    expect_error("--set of an unknown key", "{" DATA "}", bad1, 1,
                 "--set optim.learnig_rate=1: optim.learnig_rate: unknown key (did you mean optim.lr?)");
    const char* bad2[] = {"optm.lr=1"};
    expect_error("--set of an unknown section", "{" DATA "}", bad2, 1,
                 "--set optm.lr=1: optm: unknown key (did you mean optim?)");
    const char* bad3[] = {"train.batch_size=abc"};
    expect_error("--set wrong type", "{" DATA "}", bad3, 1,
                 "--set train.batch_size=abc: train.batch_size: expected an integer, got \"abc\"");
    const char* bad4[] = {"train.steps.x=1"};
    expect_error("--set inside a value", "{" DATA "}", bad4, 1, "--set train.steps.x=1: train.steps: is not an object");
    const char* bad5[] = {"train.steps"};
    expect_error("--set without =", "{" DATA "}", bad5, 1, "--set train.steps: expected key.path=value");
    /* a check between keys blames the --set argument that gave the key, not the config file */
    const char* bad6[] = {"train.steps=5", "optim.min_lr=1"};
    expect_error("--set value failing a later check", "{" DATA "}", bad6, 2,
                 "--set optim.min_lr=1: optim.min_lr: 1 exceeds optim.lr");
    const char* bad7[] = {"optim.lr_mult.repo=2", "optim.warmup_steps=10"};
    expect_error("--set value failing a later check (2)", "{" DATA ", \"train\": {\"steps\": 3}}", bad7, 2,
                 "--set optim.warmup_steps=10: optim.warmup_steps: 10 exceeds train.steps 3");
    const char* ok8[] = {"optim.lr=1e-3"};
    expect_error("a key from the file is still blamed on the file", "{" DATA ", \"optim\": {\"min_lr\": 1}}", ok8, 1,
                 "c.json: optim.min_lr: 1 exceeds optim.lr 0.001");
}

static void test_round_trip(void) {
    printf("to_json -> load round trip\n");
    RunConfig a, b;
    char err[1024];
    const char* json =
        "{\"run\": {\"seed\": 123456789012, \"resume\": \"never\", \"threads\": 3},"
        " \"model\": {\"arch\": \"llama\", \"n_layers\": 6, \"n_kv_heads\": 2, \"rope_theta\": 500000,"
        "  \"tie_embeddings\": true, \"init_std\": 0.0123456789,"
        "  \"positions\": {\"layers\": [\"rope\", \"rope\", \"repo\", \"repo\", \"nope\", \"repo\"],"
        "   \"rope_scaling\": {\"factor\": 4, \"original_max_position_embeddings\": 2048,"
        "    \"attention_factor\": 1.1}}},"
        " \"data\": {\"synthetic\": {\"kind\": \"copy\", \"n\": [1, 2]}, \"format\": \"u16\","
        "  \"order\": \"sequential\"},"
        " \"optim\": {\"lr\": 0.1, \"min_lr\": 0.0001, \"schedule\": \"linear\", \"z_loss\": 1e-4,"
        "  \"lr_mult\": {\"model.embed_tokens.*\": 0.3, \"repo\": 10}, \"freeze\": [\"model.layers.0.*\"]},"
        " \"train\": {\"save_dtype\": \"bf16\", \"shard_optimizer\": false, \"eval_every\": 0}}";
    int r = load(&a, json, NULL, 0, err, sizeof(err));
    EXPECT(r == 0, "a config that changes most keys loads%s%s", r ? ": " : "", r ? err : "");
    char* text = run_config_to_json(&a);
    r = run_config_load(&b, write_tmp("round.json", text), NULL, 0, err, sizeof(err));
    EXPECT(r == 0, "its to_json output loads%s%s", r ? ": " : "", r ? err : "");
    char *pa = printed(&a), *pb = printed(&b), *text2 = run_config_to_json(&b);
    EXPECT(!strcmp(pa, pb), "printed configs are identical");
    EXPECT(!strcmp(text, text2), "to_json of the reloaded config is identical");
    EXPECT(!memcmp(&a.model, &b.model, sizeof(a.model)) && !memcmp(&a.optim, &b.optim, sizeof(a.optim)) &&
               !memcmp(&a.train, &b.train, sizeof(a.train)) && !memcmp(&a.run, &b.run, sizeof(a.run)),
           "run, model, optim, train structs are bytewise identical");
    EXPECT(run_config_was_set(&a, "model.n_kv_heads") && !run_config_was_set(&a, "model.d_model") &&
               run_config_was_set(&a, "model.positions") && run_config_was_set(&a, "model") &&
               !run_config_was_set(&a, "data.train"),
           "was_set: set keys and their sections only");
    printf("  resolved config:\n%s", pa);
    free(pa);
    free(pb);
    free(text);
    free(text2);
    run_config_free(&a);
    run_config_free(&b);
}

static void test_model_bridges(void) {
    printf("ModelConfig, OptimConfig, resume\n");
    RunConfig rc;
    ModelConfig mc;
    char err[1024];
    const char* ov[] = {"model.n_layers=6", "model.positions.mode=repo", "model.n_kv_heads=2"};
    int r = load(&rc, "{" DATA "}", ov, 3, err, sizeof(err));
    run_config_model(&rc, &mc);
    EXPECT(r == 0 && mc.L == 6 && mc.KVH == 2 && mc.pos[1] == POS_ROPE && mc.pos[2] == POS_REPO &&
               mc.pos[5] == POS_REPO,
           "mode repo on 6 layers: rope rope repo repo repo repo (start floor(6/3) = 2), KVH 2");
    run_config_free(&rc);
    const char* ov2[] = {"model.positions.mode=r2n1", "model.positions.rope_scaling={\"factor\": 8}"};
    r = load(&rc, "{" DATA "}", ov2, 2, err, sizeof(err));
    run_config_model(&rc, &mc);
    EXPECT(r == 0 && mc.pos[0] == POS_ROPE && mc.pos[2] == POS_NOPE && mc.pos[3] == POS_ROPE && mc.KVH == 8 &&
               mc.yarn_factor == 8 && mc.yarn_orig_max == 4096 && mc.max_position_embeddings == 32768,
           "r2n1, KVH = n_heads by default, YaRN factor 8 over 4096");
    OptimConfig oc;
    run_config_optim(&rc, &oc);
    EXPECT(oc.total_steps == 1000 && oc.warmup_steps == 100 && oc.repo_lr_mult == 1 && oc.n_lr_mult == 0 &&
               oc.schedule == SCHED_COSINE,
           "OptimConfig: total_steps = train.steps, lr_mult repo -> repo_lr_mult");
    EXPECT(rc.run.resume_mode == RESUME_AUTO, "resume \"auto\" by default");
    run_config_free(&rc);
    /* a section given as null: each of its keys (stored in ModelConfig or not) goes back to its default; a
       shorter layers list replaces a longer one whole */
    const char* ov3[] = {"model.lora=null", "model.positions.rope_scaling=null",
                         "model.positions.layers=[\"repo\",\"nope\",\"repo\",\"repo\"]"};
    r = load(&rc,
             "{\"model\": {\"n_layers\": 4, \"lora\": {\"rank\": 8, \"alpha\": 4, \"targets\": [\"q_proj\"], "
             "\"rslora\": true}, \"positions\": {\"layers\": [\"nope\", \"nope\", \"nope\", \"nope\", \"nope\", "
             "\"nope\"], \"rope_scaling\": {\"factor\": 4, \"beta_fast\": 64}}}, " DATA "}",
             ov3, 3, err, sizeof(err));
    run_config_model(&rc, &mc);
    EXPECT(r == 0 && mc.lora_rank == 0 && mc.lora_alpha == 32 && !mc.lora_rslora && !rc.model.lora.targets.n &&
               mc.yarn_factor == 1 && mc.yarn_beta_fast == 32 && mc.pos[0] == POS_REPO && mc.pos[1] == POS_NOPE &&
               rc.model.cfg.pos[4] == POS_ROPE && rc.model.cfg.pos[5] == POS_ROPE,
           "model.lora and rope_scaling null: their defaults; a 4-layer list after a 6-layer one: the rest rope");
    run_config_free(&rc);
    const char* never[] = {"run.resume=never"};
    r = load(&rc, "{" DATA "}", never, 1, err, sizeof(err));
    EXPECT(r == 0 && rc.run.resume_mode == RESUME_NEVER, "resume \"never\"");
    run_config_free(&rc);

    printf("init_from\n");
    const char* json = "{\"model\": {\"init_from\": \"ckpt\", \"d_model\": 512, \"n_heads\": 6,"
                       " \"positions\": {\"mode\": \"repo\"}}, " DATA "}";
    r = load(&rc, json, NULL, 0, err, sizeof(err));
    EXPECT(r == 0, "sizes are not checked against each other with init_from%s%s", r ? ": " : "", r ? err : "");
    char* text = run_config_to_json(&rc);
    char* p = printed(&rc);
    EXPECT(!strstr(text, "n_layers") && strstr(text, "\"d_model\"") && strstr(p, "n_layers=(init_from)"),
           "keys the checkpoint provides are left out unless set");
    RunConfig back;
    r = run_config_load(&back, write_tmp("init.json", text), NULL, 0, err, sizeof(err));
    char* p2 = printed(&back);
    EXPECT(r == 0 && !strcmp(p, p2) && !run_config_was_set(&back, "model.n_layers"), "and round-trip so");
    free(text);
    free(p);
    free(p2);
    run_config_free(&back);
    model_config_default(&mc); /* stands for the checkpoint's config.json: D 256, H 8, L 4 */
    mc.L = 9;
    r = run_config_apply_checkpoint(&rc, &mc, "ckpt", false, err, sizeof(err));
    EXPECT(r && strstr(err, "model.d_model: 512 disagrees with 256 in ckpt/config.json (model.init_from); remove the "
                            "key to take the checkpoint's value"),
           "%s", err);
    mc.D = 512;
    mc.H = 6;
    r = run_config_apply_checkpoint(&rc, &mc, "ckpt", false, err, sizeof(err));
    EXPECT(r == 0 && mc.pos[2] == POS_ROPE && mc.pos[3] == POS_REPO && mc.pos[8] == POS_REPO,
           "agreeing sizes pass; positions.mode repo applies to the checkpoint's 9 layers (start 3)");
    run_config_free(&rc);
    r = load(&rc, "{\"model\": {\"init_from\": \"ckpt\", \"positions\": {\"layers\": [\"rope\", \"repo\"]}}, " DATA "}",
             NULL, 0, err, sizeof(err));
    model_config_default(&mc);
    int r2 = run_config_apply_checkpoint(&rc, &mc, "ckpt", false, err, sizeof(err));
    EXPECT(r == 0 && r2 && strstr(err, "model.positions.layers: has 2 entries, but the model has 4 layers"),
           "an explicit list is checked against the checkpoint's layers: %s", err);
    run_config_free(&rc);
}

/* configs/paper/: the released stage-2 recipe of the RePo paper for OLMo-2 1B (docs/paper-recipe.md), one
   file per layout, identical but for out_dir and positions */
static void test_paper_configs(void) {
    printf("configs/paper/ (the released stage-2 recipe)\n");
    const char* modes[] = {"repo", "rope", "nope", "r2n1", "n2r1"};
    for (size_t i = 0; i < sizeof(modes) / sizeof(modes[0]); i++) {
        char path[128], out[128], err[1024];
        snprintf(path, sizeof(path), "configs/paper/stage2_%s.json", modes[i]);
        snprintf(out, sizeof(out), "runs/paper/stage2_%s", modes[i]);
        RunConfig rc;
        int r = run_config_load(&rc, path, NULL, 0, err, sizeof(err));
        EXPECT(r == 0, "%s loads%s%s", path, r ? ": " : "", r ? err : "");
        if (r) continue;
        const OptimConfig* o = &rc.optim.cfg;
        bool recipe = o->lr == 7.4487e-5 && o->min_lr == 0 && o->schedule == SCHED_LINEAR && o->warmup_steps == 0 &&
                      o->beta1 == 0.9 && o->beta2 == 0.95 && o->eps == 1e-8 && o->weight_decay == 0.1 &&
                      !o->decay_embeddings && o->decay_norms && o->grad_clip == 1.0 && rc.optim.z_loss == 1e-4 &&
                      !strcmp(rc.optim.state_dtype, "f32") && !strcmp(rc.data.format, "u32") &&
                      rc.data.seq_len == 4096 && rc.train.batch_size * rc.train.grad_accum == 512 &&
                      rc.train.steps == 23852 && rc.train.recompute && rc.run.seed == 42 &&
                      !strcmp(rc.model.from_config, "tests/corpus/hf_configs/olmo2_1b.json") && !rc.model.init_from[0];
        bool layout =
            !strcmp(rc.model.positions.mode, modes[i]) &&
            (i == 0 ? rc.model.positions.repo_start_layer == 5 : rc.model.positions.repo_start_layer == RC_UNSET) &&
            !strcmp(rc.run.out_dir, out);
        EXPECT(recipe && layout,
               "%s: the recipe (lr 7.4487e-5 linear to 0, no warmup, z-loss 1e-5, 512 x 4096, %zu steps), "
               "mode %s%s",
               path, rc.train.steps, rc.model.positions.mode, i == 0 ? " from layer 5" : "");
        run_config_free(&rc);
    }
}

int main(void) {
    snprintf(tmpdir, sizeof(tmpdir), "/tmp/repoc_run_config_XXXXXX");
    CHECK(mkdtemp(tmpdir), "cannot make a temporary directory");
    test_example();
    test_paper_configs();
    test_errors();
    test_short_run_defaults();
    test_overrides();
    test_round_trip();
    test_model_bridges();
    const char* names[] = {"c.json", "round.json", "init.json"};
    char path[300];
    for (size_t i = 0; i < 3; i++) {
        snprintf(path, sizeof(path), "%s/%s", tmpdir, names[i]);
        unlink(path);
    }
    rmdir(tmpdir);
    printf("test_run_config: %d passed, %d failed\n", test_passes, test_failures);
    return test_failures ? 1 : 0;
}
