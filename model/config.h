/* The model's configuration (docs/design.md, "The decoder block"; docs/positions.md): sizes, block style (OLMo-2,
   Llama, Qwen2, Qwen3, Gemma-3, Mistral), the position mode of every layer, RoPE theta, optional YaRN, norm
   eps, tied embeddings.
   Sizes use the letters of docs/design.md (B, T, D, H, KVH, hd, F, V). */
#ifndef REPOC_CONFIG_H
#define REPOC_CONFIG_H

#include <math.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#define MAX_LAYERS 256
#define MAX_HEAD_DIM 256 /* the attention kernel's largest head dim (model/attention.c) */
#define HF_CARRIED_LEN 1024

/* The families, in config.json's model_type order of model/config.c's table (BLOCK_FAMILIES): each is a row
   of traits there, and nothing else in the model tests which family it is. */
typedef enum {
    BLOCK_OLMO2,
    BLOCK_LLAMA,
    BLOCK_QWEN2,
    BLOCK_QWEN3,
    BLOCK_GEMMA3,
    BLOCK_MISTRAL,
    BLOCK_N_STYLES
} BlockStyle;
/* q_norm / k_norm: none; one RMSNorm over each token's whole H*hd (KVH*hd) vector (weights [H*hd]); or one per
   head over its hd features (weights [hd], shared by the heads) */
typedef enum { QK_NORM_NONE, QK_NORM_VECTOR, QK_NORM_PER_HEAD } QkNorm;
/* the MLP's gate activation: SwiGLU's silu, or GeGLU's tanh-approximated GELU */
typedef enum { GLU_SILU, GLU_GELU_TANH } GluAct;

/* What a family's decoder block computes (docs/design.md, "The decoder block"): model/block.c, the tensor table
   and the embedding read these, never the family itself. */
typedef struct {
    /* attention reads input_layernorm(x); false: the stream x itself */
    bool input_norm;
    /* the outputs of attention (o, through post_attention_layernorm) and of the MLP (d, through
       post_feedforward_layernorm) are normalised before their residual add */
    bool post_norms;
    /* the MLP reads norm(x_mid), false: x_mid itself. The norm is post_attention_layernorm, or, when
       post_norms gives that one to o, its own pre_feedforward_layernorm */
    bool ff_pre_norm;
    QkNorm qk_norm;
    GluAct glu;
    /* every RMSNorm multiplies by (w + norm_offset): 0, or 1 for x r (1 + w) */
    double norm_offset;
    /* the input embedding is multiplied by sqrt(D) */
    bool embed_scale;
    /* q, k and v always carry biases */
    bool qkv_bias;
    /* config.json's attention_bias may put biases on q, k, v and o */
    bool attention_bias;
    /* config.json's head_dim may make hd other than D / H */
    bool head_dim;
    /* pad_token_id is the embedding's padding_idx: that row gets no gradient from the input lookup */
    bool pad_idx;
    /* sliding layers rotate by their own unscaled table (rope_local_base_freq); false: by the global one */
    bool window_rope;
} BlockTraits;

/* One row of the family table: config.json's model_type and architectures[0], and the block's traits */
typedef struct {
    const char* name;
    const char* arch;
    BlockTraits traits;
} BlockFamily;
extern const BlockFamily BLOCK_FAMILIES[BLOCK_N_STYLES];

/* A layer's positions: rotary (RoPE), learned by RePo's module, or none (NoPE) */
typedef enum { POS_ROPE, POS_REPO, POS_NOPE } PosMode;
/* The projections a LoRA adapter can wrap, in PEFT's target_modules names (lora_target_name). */
typedef enum { LORA_Q, LORA_K, LORA_V, LORA_O, LORA_GATE, LORA_UP, LORA_DOWN, LORA_N_TARGETS } LoraTarget;

typedef struct {
    BlockStyle block;
    size_t V, D, L, H, KVH, F; /* vocab, d_model, layers, heads, kv heads, d_ff */
    size_t head_dim;           /* hd when it is not D / H (config.json's head_dim); 0 = D / H */
    bool attn_bias; /* Qwen3's, Gemma-3's attention_bias: biases on q, k, v and o (Qwen2 always has q, k, v's) */
    /* Qwen2/3: transformers' padding_idx = pad_token_id, the embedding row that gets no gradient from the input lookup;
       -1 = none */
    long pad_id;
    double norm_eps;
    double rope_theta;
    double attn_scalar;        /* Gemma-3's query_pre_attn_scalar: scores are q.k attn_scalar^-1/2; 0 = hd */
    size_t sliding_window;     /* keys a sliding layer's query sees, its own included; 0 = no sliding layers */
    bool sliding[MAX_LAYERS];  /* Gemma-3's layer_types: layer l is "sliding_attention" */
    double rope_local_theta;   /* rope_local_base_freq: the RoPE base of the sliding layers (no scaling) */
    double rope_linear_factor; /* rope_scaling "linear" (Gemma-3's global layers): inv_freq / s; <= 1: none */
    double yarn_factor;        /* <= 1: no YaRN */
    double yarn_orig_max;      /* original_max_position_embeddings */
    double yarn_beta_fast, yarn_beta_slow;
    double yarn_attention_factor;   /* <= 0: the default 0.1 ln(factor) + 1 */
    bool llama3;                    /* Llama-3.1 rope_scaling (rope_type "llama3"); exclusive with YaRN */
    double llama3_factor;           /* s >= 1: long wavelengths are divided by s */
    double llama3_low_freq_factor;  /* wavelengths above L0 / low are divided by s */
    double llama3_high_freq_factor; /* wavelengths below L0 / high are kept; between: a smooth blend */
    double llama3_orig_max;         /* L0: original_max_position_embeddings */
    bool tie_embeddings;
    size_t max_position_embeddings; /* written to config.json; not a limit on T */
    PosMode pos[MAX_LAYERS];        /* one mode per layer */
    size_t lora_rank;               /* r of the LoRA adapters; 0 = no LoRA (every tensor is a plain weight) */
    double lora_alpha;              /* y = W x + s B A x, s = alpha / r (alpha / sqrt(r) with lora_rslora) */
    bool lora_rslora;               /* rank-stabilised LoRA, PEFT's use_rslora: s = alpha / sqrt(r) */
    unsigned lora_targets;          /* bit (1 << LoraTarget) per wrapped projection */
    double lora_dropout;            /* p in [0, 1) of dropout on each adapter's input while training */
    /* frozen layer matrices kept in BF16 and widened per layer (training memory; never written to config.json) */
    bool base_bf16;
    /* config.json keeps the stock model_type and class with RePo or NoPE layers, for the released RePo loader,
       where that loader reads the layout (hf/hf_loaders.h); set from the source's names and
       train.save_model_type */
    bool hf_released_names;
    /* a JSON object: the source config.json's keys that repoc carries unchanged into the configs it saves (token ids,
       ...); "" = none */
    char hf_carried[HF_CARRIED_LEN];
} ModelConfig;

/* A small OLMo-2 model, all layers rope; every field set. */
void model_config_default(ModelConfig* c);
/* Dies with a message naming the field when a size or mode is inconsistent. */
void model_config_validate(const ModelConfig* c);
void model_config_print(const ModelConfig* c, FILE* fp);

static inline size_t cfg_hd(const ModelConfig* c) { return c->head_dim ? c->head_dim : c->D / c->H; }
static inline size_t cfg_dp(const ModelConfig* c) { return c->D / 8; }
bool cfg_has_repo(const ModelConfig* c);
static inline const BlockTraits* cfg_traits(const ModelConfig* c) { return &BLOCK_FAMILIES[c->block].traits; }
static inline bool cfg_post_norms(const ModelConfig* c) { return cfg_traits(c)->post_norms; }
/* q_norm / k_norm exist */
static inline bool cfg_qk_norm(const ModelConfig* c) { return cfg_traits(c)->qk_norm != QK_NORM_NONE; }
/* the rows per token QK-norm runs over: 1 (over the whole vector) or the heads; q's are H of them, k's KVH */
static inline size_t cfg_qk_norm_heads(const ModelConfig* c, size_t heads) {
    return cfg_traits(c)->qk_norm == QK_NORM_PER_HEAD ? heads : 1;
}
/* every RMSNorm of the model multiplies by (w + this) */
static inline double cfg_norm_offset(const ModelConfig* c) { return cfg_traits(c)->norm_offset; }
/* the input embedding's multiplier: sqrt(D) or 1 */
static inline double cfg_embed_scale(const ModelConfig* c) {
    return cfg_traits(c)->embed_scale ? sqrt((double)c->D) : 1.0;
}
/* the attention scores' scale: query_pre_attn_scalar^-1/2 when set, else hd^-1/2 */
static inline double cfg_attn_scale(const ModelConfig* c) {
    return 1.0 / sqrt(c->attn_scalar > 0 ? c->attn_scalar : (double)cfg_hd(c));
}
/* layer l attends within a sliding window of c->sliding_window keys */
static inline bool cfg_sliding(const ModelConfig* c, size_t l) { return c->sliding_window && c->sliding[l]; }
/* layer l rotates by the sliding layers' own table (BlockTraits.window_rope), not the global one */
static inline bool cfg_local_rope(const ModelConfig* c, size_t l) {
    return cfg_sliding(c, l) && cfg_traits(c)->window_rope;
}
/* q_proj, k_proj, v_proj carry biases (always, or with attention_bias); o_proj too (with it) */
static inline bool cfg_qkv_bias(const ModelConfig* c) { return cfg_traits(c)->qkv_bias || c->attn_bias; }
static inline bool cfg_o_bias(const ModelConfig* c) { return c->attn_bias; }

/* config.json's model_type: "olmo2", "llama", "qwen2", "qwen3", "gemma3_text", "mistral"; block_style_arch its
   architectures[0] */
static inline const char* block_style_name(BlockStyle b) { return BLOCK_FAMILIES[b].name; }
static inline const char* block_style_arch(BlockStyle b) { return BLOCK_FAMILIES[b].arch; }
/* "q_proj", ..., "down_proj"; lora_target_parse also reads PEFT's suffix form ("self_attn.q_proj",
   "mlp.down_proj") and returns false for any other name */
const char* lora_target_name(LoraTarget t);
bool lora_target_parse(const char* s, LoraTarget* out);
static inline bool cfg_lora_on(const ModelConfig* c, LoraTarget t) {
    return c->lora_rank && (c->lora_targets >> t & 1u);
}
/* s of y = W x + s B A x: alpha / r, or alpha / sqrt(r) with rsLoRA (PEFT's use_rslora) */
static inline double cfg_lora_scale(const ModelConfig* c) {
    if (!c->lora_rank) return 0;
    return c->lora_alpha / (c->lora_rslora ? sqrt((double)c->lora_rank) : (double)c->lora_rank);
}
const char* pos_mode_name(PosMode p);
/* returns false for an unknown name */
bool pos_mode_parse(const char* s, PosMode* out);

/* Fill c->pos from a plan: "rope", "repo" (rope below repo_start, repo from it; Gemma-3's sliding layers
   stay rope),
   "nope", "r2n1" (rope, rope, nope repeated), "n2r1" (nope, nope, rope repeated).
   repo_start = (size_t)-1 means the default floor(L/3). Returns false for an unknown plan. */
bool model_config_plan_positions(ModelConfig* c, const char* plan, size_t repo_start);
#define REPO_START_DEFAULT ((size_t)-1)

#endif
