/* Internal to train/run_config*.c: the key table of run_config.h's keys
   (RC_KEYS, in run_config_keys.c, with the defaults and the look-ups that need
   nothing but the table). Not for other modules: they use run_config.h. The
   files depend on each other in one direction only: run_config_keys.c (the
   table) <- run_config_parse.c (JSON into fields) <- run_config_model.c (to
   ModelConfig / OptimConfig) <- run_config.c (load, check, print, JSON). */
#ifndef REPOC_RUN_CONFIG_KEYS_H
#define REPOC_RUN_CONFIG_KEYS_H

#include "train/run_config_types.h"

/* The type of a key's value, and so of the field it is stored in */
typedef enum {
    KT_OBJ,  /* a section: an object of further keys */
    KT_STR,  /* char[RC_PATH_LEN] */
    KT_WORD, /* char[RC_WORD_LEN], one of `choices` */
    KT_ENUM, /* a C enum, the index of its name in `choices` */
    KT_BOOL,
    KT_SIZE,
    KT_U64,
    KT_REAL,
    KT_LIST,   /* RcList; a single string is taken as a list of one */
    KT_LAYERS, /* model.positions.layers: list of rope|repo|nope (ModelConfig.pos, RcPositions.n_layers_list) */
    KT_LRMULT, /* optim.lr_mult: object of pattern -> number */
    KT_RAW     /* data.synthetic: any object, kept as cJSON */
} RcKeyType;

/* A key's flags, as bits */
enum {
    KF_NULL = 1,     /* JSON null accepted: "", RC_UNSET, 0.0, no list, NULL, or (a section) its keys' defaults */
    KF_CKPT = 2,     /* with init_from the checkpoint's config.json provides it unless set */
    KF_NONEMPTY = 4, /* a string that must not be empty */
    KF_LO_OPEN = 8,  /* a real's range excludes lo */
    KF_HI_OPEN = 16, /* ... excludes hi */
    KF_PATTERN = 32  /* a list of fnmatch patterns over Hugging Face tensor names */
};

typedef struct {
    const char* path;
    RcKeyType type;
    size_t off;    /* offsetof(RunConfig, field) */
    double lo, hi; /* numbers: the range; strings and lists: hi = capacity of one string */
    unsigned flags;
    const char* choices; /* KT_WORD, KT_ENUM, KT_LAYERS: "a|b|c" */
    const char* aliases; /* other common spellings, only for "did you mean" */
} RcKey;

extern const RcKey RC_KEYS[];
extern const size_t RC_N_KEYS;
#define BIG 9007199254740992.0 /* 2^53: larger integers are not exact as JSON doubles */

/* the key at exactly this path, or NULL */
const RcKey* rc_find_key(const char* path);
/* the nth word of "a|b|c", copied into out */
const char* rc_word(const char* list, int n, char* out, size_t len);
/* Bytes of the field a scalar, string or list key points at (0 for a section) */
size_t rc_field_size(const RcKey* k);

#endif
