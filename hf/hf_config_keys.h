/* The typed key readers of config.json (hf/hf_config_keys.c), for hf/hf_config.c and each family's own keys
   (hf/hf_config_gemma.c).
   Each returns 0, or non-zero with err set to "<label>: '<key>' ...". An absent or null key leaves *out. */
#ifndef REPOC_HF_CONFIG_KEYS_H
#define REPOC_HF_CONFIG_KEYS_H

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stddef.h>

/* a positive integer; absent is an error when required */
int hf_get_size(const cJSON* root, const char* key, size_t* out, int required, const char* label, char* err,
                size_t len);
/* a finite number */
int hf_get_real(const cJSON* root, const char* key, double* out, const char* label, char* err, size_t len);
/* true or false */
int hf_get_bool(const cJSON* root, const char* key, bool* out, const char* label, char* err, size_t len);

/* a JSON number that Python reads as a float (transformers' rope validation checks isinstance(x, float)) */
void hf_add_float(cJSON* obj, const char* key, double v);

#endif
