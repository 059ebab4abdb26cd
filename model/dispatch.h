/* Which variant of the kernels built twice (model/attention.c in a portable
   build, make PORTABLE=1) runs on this CPU; model/dispatch.c picks it at load
   time. */
#ifndef REPOC_MODEL_DISPATCH_H
#define REPOC_MODEL_DISPATCH_H

/* one line for cpu_print's "dispatch:" (common/cpu.h): the attention kernel chosen, or "none: ..." */
const char* dispatch_describe(void);

#endif
