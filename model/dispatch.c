/* Run-time choice of the attention kernel in a portable build (make PORTABLE=1).
   model/attention.c sizes its register tiles by the vector width the compiler
   targets (16 floats with AVX-512, 8 with AVX2), so a build for any x86-64-v3
   CPU would run the AVX2 tiles on an AVX-512 machine too. The portable build
   therefore compiles attention.c twice, for x86-64-v3 and x86-64-v4, with its
   entry points renamed to <name>_v3 and <name>_v4 (Makefile, DISPATCH_NAMES),
   and this file defines each entry point as a GNU indirect function: the
   dynamic loader calls the resolver once, and every later call goes straight to
   the variant for this CPU. The forward gives the same bits in both; the
   backward agrees to float rounding, because its tiles on the causal diagonal
   and at a ragged end group their sums by the vector width
   (tests/test_step_ops.c). In a native build (no REPOC_DISPATCH) attention.c is compiled once
   for this machine and only dispatch_describe is defined here. */
#include "model/dispatch.h"

#ifdef REPOC_DISPATCH
#include "model/attention.h"

#include "common/cpu_has.h"

/* the two variants of each entry point, declared from the public prototype */
extern __typeof__(attention_forward) attention_forward_v3, attention_forward_v4;
extern __typeof__(attention_backward) attention_backward_v3, attention_backward_v4;
extern __typeof__(attention_backward_by) attention_backward_by_v3, attention_backward_by_v4;

/* resolvers run before constructors, so each initialises the CPU model itself */
static int have_v4(void) {
    __builtin_cpu_init();
    return CPU_HAS_V4();
}
static __typeof__(attention_forward)* resolve_forward(void) {
    return have_v4() ? attention_forward_v4 : attention_forward_v3;
}
static __typeof__(attention_backward)* resolve_backward(void) {
    return have_v4() ? attention_backward_v4 : attention_backward_v3;
}
static __typeof__(attention_backward_by)* resolve_backward_by(void) {
    return have_v4() ? attention_backward_by_v4 : attention_backward_by_v3;
}
__typeof__(attention_forward) attention_forward __attribute__((ifunc("resolve_forward")));
__typeof__(attention_backward) attention_backward __attribute__((ifunc("resolve_backward")));
__typeof__(attention_backward_by) attention_backward_by __attribute__((ifunc("resolve_backward_by")));

const char* dispatch_describe(void) {
    return have_v4() ? "attention kernel for x86-64-v4 (chosen at run time)"
                     : "attention kernel for x86-64-v3 (chosen at run time)";
}
#else
const char* dispatch_describe(void) { return "none: every kernel is built for the instruction set above"; }
#endif
