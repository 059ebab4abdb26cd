/* docs/config.md's table against the code: every row's default equals the
   default the code uses (run_config_defaults, whose model and optimizer values
   are model_config_default's and optim_config_default's), and every key the
   resolved config holds has a row. A row names one key in full, or several
   that share its prefix (`optim.lr`, `min_lr`) with as many comma-separated
   defaults; a default is JSON (backticks and a trailing " (...)" note
   dropped). Run from the repo root. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "common/check.h"
#include "common/fileio.h"
#include "train/run_config.h"
#include "tests/testutil.h"

#define DOC "docs/config.md"
#define MAX_ROWS 128
#define KEY_LEN 256 /* a dotted key path */

static char keys[MAX_ROWS][2 * KEY_LEN];
static size_t n_keys;

/* the value at a dotted path in the defaults' JSON, or NULL */
static const cJSON* at(const cJSON* root, const char* path) {
    char buf[2 * KEY_LEN];
    snprintf(buf, sizeof(buf), "%s", path);
    const cJSON* v = root;
    for (char *save, *part = strtok_r(buf, ".", &save); part && v; part = strtok_r(NULL, ".", &save))
        v = cJSON_GetObjectItemCaseSensitive(v, part);
    return v;
}

/* text between backticks, without a trailing " (...)" note, trimmed, into out */
static void clean(const char* s, size_t n, char* out, size_t len) {
    while (n && s[n - 1] == ' ') n--;
    while (n && *s == ' ') {
        s++;
        n--;
    }
    if (n >= 2 && s[0] == '`' && s[n - 1] == '`') {
        s++;
        n -= 2;
    }
    const char* note = NULL;
    for (size_t i = 0; i + 1 < n; i++)
        if (s[i] == ' ' && s[i + 1] == '(') {
            note = s + i;
            break;
        }
    if (note) n = (size_t)(note - s);
    snprintf(out, len, "%.*s", (int)n, s);
}

/* one table row "| `a.b`, `c` | d1, d2 | meaning |" */
static void check_row(const cJSON* defaults, const char* line) {
    const char* c1 = line + 1;
    const char* c2 = strstr(c1, " | ");
    const char* c3 = c2 ? strstr(c2 + 3, " | ") : NULL;
    if (!c3) {
        EXPECT(0, "%.60s: not a row of three cells", line);
        return;
    }
    char cell1[1024], cell2[1024];
    snprintf(cell1, sizeof(cell1), "%.*s", (int)(c2 - c1), c1);
    snprintf(cell2, sizeof(cell2), "%.*s", (int)(c3 - c2 - 3), c2 + 3);
    /* the keys */
    char names[8][KEY_LEN];
    size_t n = 0;
    for (char *save, *k = strtok_r(cell1, ",", &save); k && n < 8; k = strtok_r(NULL, ",", &save))
        clean(k, strlen(k), names[n++], KEY_LEN);
    char prefix[KEY_LEN];
    snprintf(prefix, sizeof(prefix), "%s", names[0]);
    *(strrchr(prefix, '.') ? strrchr(prefix, '.') + 1 : prefix) = 0;
    /* the defaults: the whole cell for one key, else n comma-separated parts */
    const char* parts[8];
    size_t lens[8], m = 0;
    if (n == 1) {
        parts[0] = cell2;
        lens[0] = strlen(cell2);
        m = 1;
    } else
        for (const char* p = cell2; p && m < 8; m++) {
            const char* q = strchr(p, ',');
            parts[m] = p;
            lens[m] = q ? (size_t)(q - p) : strlen(p);
            p = q ? q + 1 : NULL;
        }
    if (m != n) {
        EXPECT(0, "%s: %zu keys but %zu defaults in '%s'", names[0], n, m, cell2);
        return;
    }
    for (size_t i = 0; i < n; i++) {
        char path[2 * KEY_LEN], text[1024];
        if ((size_t)snprintf(path, sizeof(path), "%s%s", i ? prefix : "", names[i]) >= sizeof(path)) continue;
        clean(parts[i], lens[i], text, sizeof(text));
        if (n_keys < MAX_ROWS) snprintf(keys[n_keys++], sizeof(keys[0]), "%s", path);
        const cJSON* want = at(defaults, path);
        cJSON* doc = cJSON_Parse(text);
        char* code = want ? cJSON_PrintUnformatted(want) : NULL;
        EXPECT(want && doc && cJSON_Compare(doc, want, true), "%-44s documented %-12s code %s", path, text,
               code ? code : "(no such key)");
        free(code);
        cJSON_Delete(doc);
    }
}

/* every leaf of the defaults (an object with a row of its own counts as one) has a row */
static void check_covered(const cJSON* obj, const char* parent) {
    for (const cJSON* v = obj->child; v; v = v->next) {
        char path[KEY_LEN];
        snprintf(path, sizeof(path), "%s%s%s", parent, parent[0] ? "." : "", v->string);
        bool row = false;
        for (size_t i = 0; i < n_keys; i++) row |= !strcmp(keys[i], path);
        if (!row && cJSON_IsObject(v) && v->child) check_covered(v, path);
        else if (!row) EXPECT(0, "%s: in the config but without a row in " DOC, path);
    }
}

int main(void) {
    RunConfig rc;
    run_config_defaults(&rc);
    char* json = run_config_to_json(&rc);
    cJSON* defaults = cJSON_Parse(json);
    CHECK(defaults, "run_config_to_json gave JSON that does not parse");
    size_t len;
    char* doc = file_read_all_or_null(DOC, &len);
    CHECK(doc, "cannot read %s (run from the repository root)", DOC);
    printf(DOC ": every row's default against run_config_defaults\n");
    bool in_table = false;
    for (char *line = doc, *next; line && *line; line = next) {
        next = strchr(line, '\n');
        if (next) *next++ = 0;
        if (!strncmp(line, "| key | default |", 17)) in_table = true;
        else if (in_table && !strncmp(line, "| `", 3)) check_row(defaults, line);
        else if (in_table && line[0] != '|') in_table = false;
    }
    EXPECT(n_keys >= 40, "%zu keys documented", n_keys);
    check_covered(defaults, "");
    free(doc);
    cJSON_Delete(defaults);
    free(json);
    run_config_free(&rc);
    printf("test_config_doc: %d passed, %d failed\n", test_passes, test_failures);
    return test_failures ? 1 : 0;
}
