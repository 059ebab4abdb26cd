/* The typed key readers of config.json (hf/hf_config_keys.h). */
#include "hf/hf_config_keys.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "common/check.h"

/* a positive integer key; absent is an error unless *out already holds a default and required is 0 */
int hf_get_size(const cJSON* root, const char* key, size_t* out, int required, const char* label, char* err,
                size_t len) {
    const cJSON* v = cJSON_GetObjectItemCaseSensitive(root, key);
    if (!v || cJSON_IsNull(v)) return required ? set_err(err, len, "%s: missing key '%s'", label, key) : 0;
    if (!cJSON_IsNumber(v) || v->valuedouble < 1 || v->valuedouble > 9007199254740992.0 ||
        v->valuedouble != floor(v->valuedouble))
        return set_err(err, len, "%s: '%s' must be a positive integer", label, key);
    *out = (size_t)v->valuedouble;
    return 0;
}

int hf_get_real(const cJSON* root, const char* key, double* out, const char* label, char* err, size_t len) {
    const cJSON* v = cJSON_GetObjectItemCaseSensitive(root, key);
    if (!v || cJSON_IsNull(v)) return 0;
    if (!cJSON_IsNumber(v) || !isfinite(v->valuedouble))
        return set_err(err, len, "%s: '%s' must be a number", label, key);
    *out = v->valuedouble;
    return 0;
}

/* a true/false key; absent or null leaves *out */
int hf_get_bool(const cJSON* root, const char* key, bool* out, const char* label, char* err, size_t len) {
    const cJSON* v = cJSON_GetObjectItemCaseSensitive(root, key);
    if (!v || cJSON_IsNull(v)) return 0;
    if (!cJSON_IsBool(v)) return set_err(err, len, "%s: '%s' must be true or false", label, key);
    *out = cJSON_IsTrue(v);
    return 0;
}

/* a JSON number that Python reads as a float (transformers' rope validation checks isinstance(x, float)) */
void hf_add_float(cJSON* obj, const char* key, double v) {
    char buf[64];
    snprintf(buf, sizeof(buf), "%.17g", v);
    if (!strpbrk(buf, ".eEn")) strcat(buf, ".0");
    cJSON_AddRawToObject(obj, key, buf);
}
