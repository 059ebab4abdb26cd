/* Model configuration: defaults, validation, printing, position plans (docs/positions.md, "Position modes"). */
#include "model/config.h"

#include <string.h>

#include "common/check.h"

void model_config_default(ModelConfig* c) {
    memset(c, 0, sizeof(*c));
    c->block = BLOCK_OLMO2;
    c->V = 4096;
    c->D = 256;
    c->L = 4;
    c->H = 8;
    c->KVH = 8;
    c->F = 1024;
    c->norm_eps = 1e-6;
    c->rope_theta = 10000.0;
    c->yarn_factor = 1.0;
    c->yarn_orig_max = 4096;
    c->yarn_beta_fast = 32.0;
    c->yarn_beta_slow = 1.0;
    c->yarn_attention_factor = 0.0;
    c->llama3 = false;
    c->llama3_factor = 8.0;
    c->llama3_low_freq_factor = 1.0;
    c->llama3_high_freq_factor = 4.0;
    c->llama3_orig_max = 8192;
    c->tie_embeddings = false;
    c->max_position_embeddings = 4096;
    c->head_dim = 0;
    c->attn_bias = false;
    c->pad_id = -1;
    c->attn_scalar = 0;
    c->sliding_window = 0;
    c->rope_local_theta = 10000.0;
    c->rope_linear_factor = 1.0;
    for (size_t l = 0; l < MAX_LAYERS; l++) c->pos[l] = POS_ROPE;
}

void model_config_validate(const ModelConfig* c) {
    CHECK((unsigned)c->block < BLOCK_N_STYLES, "model: block style %d is not a family", (int)c->block);
    CHECK(c->V > 0 && c->V <= 0x7fffffff, "model: vocab_size %zu must be in [1, 2^31)", c->V);
    CHECK(c->L > 0 && c->L <= MAX_LAYERS, "model: n_layers %zu must be in [1, %d]", c->L, MAX_LAYERS);
    CHECK(c->H > 0 && (c->head_dim || c->D % c->H == 0), "model: d_model %zu must be a multiple of n_heads %zu", c->D,
          c->H);
    CHECK(!c->head_dim || cfg_traits(c)->head_dim, "model: %s takes its head dim from d_model / n_heads, not head_dim",
          block_style_name(c->block));
    CHECK(cfg_hd(c) % 2 == 0, "model: head dim %zu must be even for rotary positions", cfg_hd(c));
    CHECK(cfg_hd(c) <= MAX_HEAD_DIM, "model: head dim %zu is above %d, the largest the attention kernel takes",
          cfg_hd(c), MAX_HEAD_DIM);
    CHECK(!c->attn_bias || cfg_traits(c)->attention_bias, "model: %s has no attention_bias",
          block_style_name(c->block));
    CHECK(c->pad_id < 0 || (cfg_traits(c)->pad_idx && (size_t)c->pad_id < c->V),
          "model: pad_token_id %ld must be a token id in [0, %zu) of a family with a padding_idx (Qwen, Gemma-3)",
          c->pad_id, c->V);
    CHECK(c->attn_scalar >= 0, "model: query_pre_attn_scalar %g must be positive", c->attn_scalar);
    CHECK(c->rope_linear_factor > 0, "model: linear rope_scaling.factor %g must be positive", c->rope_linear_factor);
    CHECK(!(c->rope_linear_factor > 1) || (!c->llama3 && !(c->yarn_factor > 1.0)),
          "model: rope_scaling is one of linear, YaRN and llama3");
    for (size_t l = 0; l < c->L; l++) {
        CHECK(!c->sliding[l] || c->sliding_window, "model: layer %zu is a sliding-window layer but sliding_window is 0",
              l);
        CHECK(!(cfg_sliding(c, l) && c->pos[l] == POS_REPO),
              "model: layer %zu is a sliding-window layer: RePo's learned positions are for the global "
              "(full_attention) layers only (docs/interop.md, \"Gemma-3\")",
              l);
    }
    if (c->sliding_window)
        CHECK(c->rope_local_theta > 1, "model: rope_local_base_freq %g must be > 1", c->rope_local_theta);
    CHECK(c->KVH > 0 && c->H % c->KVH == 0, "model: n_heads %zu must be a multiple of n_kv_heads %zu", c->H, c->KVH);
    CHECK(c->F > 0, "model: d_ff must be positive");
    CHECK(!c->lora_rank || (c->lora_targets && c->lora_targets < (1u << LORA_N_TARGETS)),
          "model: lora has rank %zu but no target projections", c->lora_rank);
    CHECK(!c->lora_rank || c->lora_alpha > 0, "model: lora alpha %g must be positive", c->lora_alpha);
    CHECK(c->lora_dropout >= 0 && c->lora_dropout < 1, "model: lora dropout %g must be in [0, 1)", c->lora_dropout);
    CHECK(c->norm_eps > 0, "model: norm_eps %g must be positive", c->norm_eps);
    CHECK(c->rope_theta > 1, "model: rope_theta %g must be > 1", c->rope_theta);
    CHECK(c->max_position_embeddings <= ((size_t)1 << 53),
          "model: max_position_embeddings %zu exceeds 2^53, the "
          "largest a checkpoint's config.json holds exactly",
          c->max_position_embeddings);
    if (c->yarn_factor > 1.0) {
        CHECK(c->yarn_orig_max >= 1, "model: YaRN original_max_position_embeddings %g must be >= 1", c->yarn_orig_max);
        CHECK(c->yarn_beta_fast > c->yarn_beta_slow && c->yarn_beta_slow > 0,
              "model: YaRN needs beta_fast %g > beta_slow %g > 0", c->yarn_beta_fast, c->yarn_beta_slow);
    }
    if (c->llama3) {
        CHECK(!(c->yarn_factor > 1.0), "model: rope_scaling is either YaRN or llama3, not both");
        CHECK(c->llama3_factor >= 1, "model: llama3 rope_scaling.factor %g must be >= 1", c->llama3_factor);
        CHECK(c->llama3_low_freq_factor > 0 && c->llama3_high_freq_factor > c->llama3_low_freq_factor,
              "model: llama3 rope_scaling needs high_freq_factor %g > low_freq_factor %g > 0",
              c->llama3_high_freq_factor, c->llama3_low_freq_factor);
        CHECK(c->llama3_orig_max >= 1, "model: llama3 rope_scaling.original_max_position_embeddings %g must be >= 1",
              c->llama3_orig_max);
    }
    if (cfg_has_repo(c)) CHECK(c->D % 8 == 0 && c->D >= 8, "model: RePo layers need d_model %zu divisible by 8", c->D);
}

bool cfg_has_repo(const ModelConfig* c) {
    for (size_t l = 0; l < c->L; l++)
        if (c->pos[l] == POS_REPO) return true;
    return false;
}

/* The families. OLMo-2 normalises after each half (no input_layernorm, QK-norm over the whole vector); Llama is
   pre-norm; Qwen2 is Llama with q, k, v biases; Qwen3 Llama with per-head QK-norm, its own head_dim and
   attention_bias; Gemma-3 (text) Qwen3's attention with pre- and post-norms around both halves, x r (1 + w),
   GeGLU, embeddings times sqrt(D), and sliding layers with their own RoPE base; Mistral the Llama block whose
   layers all slide, rotated by the global table. */
const BlockFamily BLOCK_FAMILIES[BLOCK_N_STYLES] = {
    [BLOCK_OLMO2] = {"olmo2", "Olmo2ForCausalLM", {.post_norms = true, .qk_norm = QK_NORM_VECTOR}},
    [BLOCK_LLAMA] = {"llama", "LlamaForCausalLM", {.input_norm = true, .ff_pre_norm = true, .head_dim = true}},
    [BLOCK_QWEN2] = {"qwen2",
                     "Qwen2ForCausalLM",
                     {.input_norm = true, .ff_pre_norm = true, .qkv_bias = true, .head_dim = true, .pad_idx = true}},
    [BLOCK_QWEN3] = {"qwen3",
                     "Qwen3ForCausalLM",
                     {.input_norm = true,
                      .ff_pre_norm = true,
                      .qk_norm = QK_NORM_PER_HEAD,
                      .attention_bias = true,
                      .head_dim = true,
                      .pad_idx = true}},
    [BLOCK_GEMMA3] = {"gemma3_text",
                      "Gemma3ForCausalLM",
                      {.input_norm = true,
                       .post_norms = true,
                       .ff_pre_norm = true,
                       .qk_norm = QK_NORM_PER_HEAD,
                       .glu = GLU_GELU_TANH,
                       .norm_offset = 1,
                       .embed_scale = true,
                       .attention_bias = true,
                       .head_dim = true,
                       .pad_idx = true,
                       .window_rope = true}},
    [BLOCK_MISTRAL] = {"mistral",
                       "MistralForCausalLM",
                       {.input_norm = true, .ff_pre_norm = true, .head_dim = true, .pad_idx = true}},
};

const char* pos_mode_name(PosMode p) { return p == POS_ROPE ? "rope" : (p == POS_REPO ? "repo" : "nope"); }

bool pos_mode_parse(const char* s, PosMode* out) {
    if (!strcmp(s, "rope")) *out = POS_ROPE;
    else if (!strcmp(s, "repo")) *out = POS_REPO;
    else if (!strcmp(s, "nope")) *out = POS_NOPE;
    else return false;
    return true;
}

bool model_config_plan_positions(ModelConfig* c, const char* plan, size_t repo_start) {
    size_t s = repo_start == REPO_START_DEFAULT ? c->L / 3 : repo_start;
    for (size_t l = 0; l < c->L; l++) {
        if (!strcmp(plan, "rope")) c->pos[l] = POS_ROPE;
        else if (!strcmp(plan, "nope")) c->pos[l] = POS_NOPE;
        else if (!strcmp(plan, "repo")) c->pos[l] = l < s || cfg_sliding(c, l) ? POS_ROPE : POS_REPO;
        else if (!strcmp(plan, "r2n1")) c->pos[l] = l % 3 == 2 ? POS_NOPE : POS_ROPE;
        else if (!strcmp(plan, "n2r1")) c->pos[l] = l % 3 == 2 ? POS_ROPE : POS_NOPE;
        else return false;
    }
    return true;
}

void model_config_print(const ModelConfig* c, FILE* fp) {
    fprintf(fp, "model: %s  V=%zu D=%zu L=%zu H=%zu KVH=%zu hd=%zu F=%zu eps=%g theta=%g tied=%s\n",
            block_style_name(c->block), c->V, c->D, c->L, c->H, c->KVH, cfg_hd(c), c->F, c->norm_eps, c->rope_theta,
            c->tie_embeddings ? "yes" : "no");
    if (cfg_qkv_bias(c) || c->pad_id >= 0)
        fprintf(fp, "  biases: %s  pad_token_id (no input-lookup gradient): %ld\n",
                cfg_o_bias(c)     ? "q k v o"
                : cfg_qkv_bias(c) ? "q k v"
                                  : "none",
                c->pad_id);
    if (c->sliding_window) {
        fprintf(fp, "  sliding window %zu (rope_theta %g), layers:", c->sliding_window, c->rope_local_theta);
        for (size_t l = 0; l < c->L; l++)
            if (c->sliding[l]) fprintf(fp, " %zu", l);
        fprintf(fp, "\n");
    }
    if (c->attn_scalar > 0) fprintf(fp, "  query_pre_attn_scalar %g\n", c->attn_scalar);
    if (c->rope_linear_factor > 1) fprintf(fp, "  linear rope: factor=%g\n", c->rope_linear_factor);
    if (c->yarn_factor > 1.0)
        fprintf(fp, "  yarn: factor=%g original_max=%g beta_fast=%g beta_slow=%g attention_factor=%g\n", c->yarn_factor,
                c->yarn_orig_max, c->yarn_beta_fast, c->yarn_beta_slow, c->yarn_attention_factor);
    if (c->lora_rank) {
        fprintf(fp, "  lora: rank=%zu alpha=%g%s targets", c->lora_rank, c->lora_alpha,
                c->lora_rslora ? " rslora" : "");
        for (int t = 0; t < LORA_N_TARGETS; t++)
            if (cfg_lora_on(c, (LoraTarget)t)) fprintf(fp, " %s", lora_target_name((LoraTarget)t));
        fprintf(fp, "\n");
    }
    if (c->llama3)
        fprintf(fp, "  llama3 rope: factor=%g low_freq_factor=%g high_freq_factor=%g original_max=%g\n",
                c->llama3_factor, c->llama3_low_freq_factor, c->llama3_high_freq_factor, c->llama3_orig_max);
    fprintf(fp, "  positions:");
    for (size_t l = 0; l < c->L; l++) fprintf(fp, " %s", pos_mode_name(c->pos[l]));
    fprintf(fp, "\n");
}

static const char* const LORA_NAMES[LORA_N_TARGETS] = {"q_proj",    "k_proj",  "v_proj",   "o_proj",
                                                       "gate_proj", "up_proj", "down_proj"};

const char* lora_target_name(LoraTarget t) { return LORA_NAMES[t]; }

/* PEFT matches a target_modules entry against the end of a module's path at a dot, so "self_attn.q_proj"
   and "mlp.down_proj" name the same modules of every layer as "q_proj" and "down_proj" */
bool lora_target_parse(const char* s, LoraTarget* out) {
    for (int t = 0; t < LORA_N_TARGETS; t++) {
        const char* parent = t <= LORA_O ? "self_attn." : "mlp.";
        size_t p = strlen(parent);
        if (!strcmp(s, LORA_NAMES[t]) || (!strncmp(s, parent, p) && !strcmp(s + p, LORA_NAMES[t]))) {
            *out = (LoraTarget)t;
            return true;
        }
    }
    return false;
}
