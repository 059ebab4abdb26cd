/* The training job's configuration (defaults in one place, unknown keys
   rejected, the resolved config printed and saved): a JSON file (parsed with
   cJSON) plus `--set a.b.c=value` overrides, checked strictly against one
   key table. Each key is defined once: its field (a ModelConfig or
   OptimConfig field where the model or optimizer has one, else a field of the
   structs below), name, type, range and aliases in RC_KEYS
   (train/run_config_keys.c), its default in run_config_defaults (next to the
   table; the model's and optimizer's are model_config_default's and
   optim_config_default's). The table drives parsing (run_config_parse.c),
   range checks, the --set paths, printing and the saved JSON (run_config.c);
   configs/example.json shows every key with its default and docs/config.md
   documents each. Positions and YaRN follow docs/positions.md, "Position modes";
   init_from names a Hugging Face checkpoint directory (docs/formats.md, "File
   formats"). */
#ifndef REPOC_RUN_CONFIG_H
#define REPOC_RUN_CONFIG_H

#include "train/run_config_types.h"

/* Defaults, then the file at path (NULL = none), then each override
   "a.b.c=value" (value parsed as JSON when it is valid JSON, else taken as a
   bare string), then every check. Returns 0, or non-zero with err holding one
   message "<source>: <key path>: <what was expected>, got <what was found>"
   (unknown keys add "(did you mean <key>?)"). Either way rc must be released
   with run_config_free. When model.init_from is set, checks between model
   sizes are left to run_config_apply_checkpoint. */
int run_config_load(RunConfig* rc, const char* path, const char* const* overrides, size_t n_overrides, char* err,
                    size_t err_len);
void run_config_free(RunConfig* rc);

/* Whether the model's sizes come from a config.json: model.init_from or model.from_config is set */
bool run_config_sizes_from_file(const RunConfig* rc);

/* The resolved config, one line per section. With init_from, model keys that
   come from the checkpoint and were not set print as "(init_from)". */
void run_config_print(const RunConfig* rc, FILE* fp);
/* The resolved config as JSON text (malloc'd; free()), re-loadable by
   run_config_load with an identical result; saved with every checkpoint. With
   init_from, model keys that come from the checkpoint and were not set are left out. */
char* run_config_to_json(const RunConfig* rc);

/* positions.layers and repo_start_layer against a layer count (run_config_load
   does it for a fresh model, run_config_apply_checkpoint for init_from). */
int run_config_check_layers(const RunConfig* rc, size_t n_layers, char* err, size_t err_len);

/* A fresh model's ModelConfig: sizes, positions (the explicit list, else the
   plan of positions.mode and repo_start_layer) and YaRN from rope_scaling. */
void run_config_model(const RunConfig* rc, ModelConfig* c);

/* For init_from or a resumed run: c holds the config.json of the checkpoint
   in ckpt_dir (resuming: the one this run resumes). Every explicitly set
   structural key (arch, vocab_size, d_model, n_layers, n_heads, n_kv_heads,
   d_ff, tie_embeddings) must agree with it, else an error naming the key, that
   config.json and the fix; when resuming, so must the layers' positions.
   Then the keys that may change on load are applied when set: rope_theta,
   norm_eps, positions (when mode or layers is set, with repo_start_layer:
   e.g. turning a RoPE checkpoint into RePo for continual pretraining) and
   rope_scaling. Validate c afterwards (model_config_validate). */
int run_config_apply_checkpoint(const RunConfig* rc, ModelConfig* c, const char* ckpt_dir, bool resuming, char* err,
                                size_t err_len);
/* train.save_model_type into c->hf_released_names ("auto" keeps the source's); "released" for a model no
   released loader reads is refused naming the key and the reason (hf/hf_loaders.h). 0, or -1 with err set. */
int run_config_save_names(const RunConfig* rc, ModelConfig* c, char* err, size_t err_len);

/* train.eval_tasks resolved: the items' generator settings (data.synthetic's,
   else the defaults) and the plan (lengths default to [data.seq_len]).
   Returns 0, or non-zero with err naming the key. */
int run_config_eval_tasks(const RunConfig* rc, EvalPlan* plan, SyntheticConfig* syn, char* err, size_t err_len);

/* The end-of-document token of data.document_mask: data.eos_token_id, else the eos_token_id that c carries
   from its checkpoint's config.json (an integer, or the first of a list). Returns 0 with *eos set (-1 when
   document_mask is off), or non-zero with err naming data.eos_token_id when none is known or it is outside
   the vocabulary. */
int run_config_eos(const RunConfig* rc, const ModelConfig* c, int32_t* eos, char* err, size_t err_len);

/* The optimizer's config: optim.* plus total_steps = train.steps; lr_mult
   "repo" becomes repo_lr_mult, the other entries patterns. */
void run_config_optim(const RunConfig* rc, OptimConfig* oc);

#endif
