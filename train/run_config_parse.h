/* Internal to train/run_config*.c: applying JSON values to the fields of the
   key table (run_config_keys.h), and the messages every check of the run
   config writes (rc_fail). Defined in run_config_parse.c. */
#ifndef REPOC_RUN_CONFIG_PARSE_H
#define REPOC_RUN_CONFIG_PARSE_H

#include "train/run_config_keys.h"

/* Where messages go: "<src>: <path>: <message>" into err */
typedef struct {
    RunConfig* rc;   /* the config being written; NULL in checks that only read one */
    const char* src; /* "configs/x.json", "--set", or NULL */
    char* err;
    size_t len;
    bool by_key;           /* after the overrides: blame a key given by --set on that argument, not on src */
    const RunConfig* read; /* the config whose --set arguments by_key looks up when rc is NULL */
} RcCtx;
int rc_fail(RcCtx* c, const char* path, const char* fmt, ...) __attribute__((format(printf, 3, 4)));
/* rc_fail for a message "key: what" from another module's checker (data.train[1].weight: ...) */
int rc_fail_keyed(RcCtx* c, const char* msg);

/* Apply every member of obj to the keys under parent ("" = the top level) */
int rc_apply_object(RcCtx* c, const char* parent, const cJSON* obj);
/* Apply one override "a.b.c=value" */
int rc_apply_override(RcCtx* c, const char* text);

#endif
