/* Continuing a plain Hugging Face OLMo-2 checkpoint with RePo from layer
   floor(L/3) (the default first RePo layer), end to end on a tiny generated checkpoint:
   build/train loads it, reports new RePo weights for exactly the upper layers,
   trains, and saves a checkpoint that loads back with the RePo layout; and on
   the first step the layers below the RePo start give exactly (bit for bit) the
   pure-RoPE model's outputs. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/check.h"
#include "common/fileio.h"
#include "common/threads.h"
#include "data/synthetic.h"
#include "hf/hf_checkpoint.h"
#include "hf/hf_config.h"
#include "model/model.h"
#include "tests/testutil.h"

int main(void) {
    threads_init(0);
    char tmp[] = "/tmp/repoc_continue_XXXXXX", plain[600], run[600], cfg_path[600], cmd[2048], log[600];
    CHECK(mkdtemp(tmp), "mkdtemp");
    snprintf(plain, sizeof(plain), "%s/plain", tmp);
    snprintf(run, sizeof(run), "%s/run", tmp);
    snprintf(cfg_path, sizeof(cfg_path), "%s/continue.json", tmp);
    snprintf(log, sizeof(log), "%s/train.log", tmp);

    /* a plain (all-RoPE) OLMo-2 checkpoint, as a downloaded one would be */
    ModelConfig c;
    model_config_default(&c);
    test_model_sizes(&c, 64, 32, 3, 4, 4, 64);
    size_t B = 2, T = 128, N = B * T;
    Model pure;
    model_build(&pure, &c, B, T, NULL, 0, false);
    model_init_weights(&pure, &(ModelInit){.seed = 11, .std = 0.1});
    hf_save(&pure, plain, ST_F32);

    printf("build/train continuing it with positions.mode = repo\n");
    FILE* fp = fopenCheck(cfg_path, "w");
    fprintf(fp,
            "{\"run\": {\"out_dir\": \"%s\", \"seed\": 5},\n"
            " \"model\": {\"init_from\": \"%s\", \"positions\": {\"mode\": \"repo\"}},\n"
            " \"data\": {\"seq_len\": %zu, \"synthetic\": {}},\n"
            " \"optim\": {\"warmup_steps\": 0, \"lr\": 1e-3},\n"
            " \"train\": {\"batch_size\": %zu, \"steps\": 2, \"eval_every\": 0, \"log_every\": 1}}\n",
            run, plain, T, B);
    fcloseCheck(fp, cfg_path);
    snprintf(cmd, sizeof(cmd), "build/train %s > %s 2>&1", cfg_path, log);
    int rc = system(cmd);
    char* out = file_read_all(log, NULL);
    EXPECT(rc == 0, "build/train exited %d", rc);
    const char* fresh = strstr(out, "new RePo weights");
    EXPECT(fresh && strstr(fresh, "model.layers.1.self_attn.gate_map.weight") &&
               strstr(fresh, "model.layers.2.self_attn.final_map.weight") && !strstr(fresh, "model.layers.0."),
           "new RePo weights reported for layers 1 and 2 only (floor(3/3) = 1)");
    free(out);

    char saved[700];
    snprintf(saved, sizeof(saved), "%s/step_0000002", run);
    ModelConfig back;
    hf_config_read(saved, &back);
    EXPECT(back.pos[0] == POS_ROPE && back.pos[1] == POS_REPO && back.pos[2] == POS_REPO,
           "the saved config.json has layers rope, repo, repo");
    Model reloaded;
    model_build(&reloaded, &back, B, T, NULL, 0, false);
    EXPECT(hf_load_weights(&reloaded, saved, 0, false) == 0, "the saved checkpoint loads back with every tensor");
    model_free(&reloaded);

    printf("first step: layer 0 (RoPE) is untouched by RePo above it\n");
    ModelConfig cr = c;
    model_config_plan_positions(&cr, "repo", REPO_START_DEFAULT);
    Model repo;
    model_build(&repo, &cr, B, T, NULL, 0, false);
    hf_load_weights(&repo, plain, 5, false); /* as the trainer does: new RePo weights from run.seed */
    hf_load_weights(&pure, plain, 0, false);
    SyntheticConfig sc;
    synthetic_defaults(&sc);
    int32_t* tok = mallocCheck(N * sizeof(int32_t));
    int32_t* tgt = mallocCheck(N * sizeof(int32_t));
    synthetic_rows(&sc, &(RowRequest){.seed = 5, .step = 0, .rows_per_step = B, .n = B, .T = T}, tok, tgt, NULL);
    Batch b = {.B = B, .T = T, .tokens = tok, .targets = tgt};
    model_forward(&pure, &b);
    model_forward(&repo, &b);
    size_t bytes = N * c.D * sizeof(real);
    EXPECT(memcmp(pure.res[0], repo.res[0], bytes) == 0 && memcmp(pure.res[1], repo.res[1], bytes) == 0,
           "embeddings and layer 0's output bit-identical to the pure-RoPE model's");
    EXPECT(memcmp(pure.res[2], repo.res[2], bytes) != 0, "layer 1 (now RePo) changes the output");
    model_free(&pure);
    model_free(&repo);
    free(tok);
    free(tgt);
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmp);
    CHECK(system(cmd) == 0, "cleanup");
    printf("test_continue: %s\n", test_failures ? "FAILED" : "all OK");
    return test_failures ? 1 : 0;
}
