/* Internal to train/run_config*.c: the schema of run_config.h's keys (one
   table, in run_config.c) and the machinery that applies JSON values to it
   (run_config_parse.c). Not for other modules: they use run_config.h. */
#ifndef REPOC_RUN_CONFIG_SCHEMA_H
#define REPOC_RUN_CONFIG_SCHEMA_H

#include "train/run_config.h"

typedef enum {
    KT_OBJ,      /* a section: an object of further keys */
    KT_STR,      /* char[RC_PATH_LEN] */
    KT_WORD,     /* char[RC_WORD_LEN], one of `choices` */
    KT_ENUM,     /* a C enum, the index of its name in `choices` */
    KT_BOOL, KT_SIZE, KT_U64, KT_REAL,
    KT_LIST,     /* RcList; a single string is taken as a list of one */
    KT_LAYERS,   /* model.positions.layers: list of rope|repo|nope */
    KT_LRMULT,   /* optim.lr_mult: object of pattern -> number */
    KT_RAW       /* data.synthetic: any object, kept as cJSON */
} RcKeyType;

enum {
    KF_NULL = 1,       /* JSON null accepted: "", RC_UNSET, 0.0, no list, NULL, or (a section) its defaults */
    KF_CKPT = 2,       /* with init_from the checkpoint's config.json provides it unless set */
    KF_NONEMPTY = 4,   /* a string that must not be empty */
    KF_LO_OPEN = 8,    /* a real's range excludes lo */
    KF_HI_OPEN = 16,   /* ... excludes hi */
    KF_PATTERN = 32    /* a list of fnmatch patterns over Hugging Face tensor names */
};

typedef struct {
    const char* path;
    RcKeyType type;
    size_t off;          /* offsetof(RunConfig, field) (and, for a nullable section, hi = its size) */
    double lo, hi;       /* numbers: the range; strings and lists: hi = capacity of one string */
    unsigned flags;
    const char* choices; /* KT_WORD, KT_ENUM, KT_LAYERS: "a|b|c" */
    const char* aliases; /* other common spellings, only for "did you mean" */
} RcKey;

extern const RcKey RC_KEYS[];
extern const size_t RC_N_KEYS;
#define BIG 9007199254740992.0   /* 2^53: larger integers are not exact as JSON doubles */

/* the key at exactly this path, or NULL */
const RcKey* rc_find_key(const char* path);

/* Where messages go: "<src>: <path>: <message>" into err */
typedef struct {
    RunConfig* rc;       /* the config being written; NULL in checks that only read one */
    const char* src;     /* "configs/x.json", "--set", or NULL */
    char* err;
    size_t len;
    bool by_key;         /* after the overrides: blame a key given by --set on that argument, not on src */
    const RunConfig* read;   /* the config whose --set arguments by_key looks up when rc is NULL */
} RcCtx;
int rc_fail(RcCtx* c, const char* path, const char* fmt, ...) __attribute__((format(printf, 3, 4)));
/* rc_fail for a message "key: what" from another module's checker (data.train[1].weight: ...) */
int rc_fail_keyed(RcCtx* c, const char* msg);

/* the nth word of "a|b|c", copied into out */
const char* rc_word(const char* list, int n, char* out, size_t len);
/* Apply every member of obj to the keys under parent ("" = the top level) */
int rc_apply_object(RcCtx* c, const char* parent, const cJSON* obj);
/* Apply one override "a.b.c=value" */
int rc_apply_override(RcCtx* c, const char* text);

#endif
