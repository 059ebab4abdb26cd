/* What the CPU has, asked the same way under GCC and clang (common/cpu.c, the kernels' dispatch, AMX).
   GCC's __builtin_cpu_supports knows every name used here; clang 14's lacks "movbe", "f16c", "avxvnni",
   "avx512fp16", "amx-tile", "amx-bf16" and the x86-64 levels (a name it does not know is a compile error), so
   under clang those come from CPUID's bits (Intel SDM vol. 2A, CPUID leaves 1 and 7) and the levels from their
   defining extensions. Inline and self-contained: the dispatch's resolvers run before relocations and
   constructors. x86-64 with a GNU C compiler only: CPU_HAS_X86 says whether these exist. */
#ifndef REPOC_CPU_HAS_H
#define REPOC_CPU_HAS_H

#include <stdbool.h>

#if defined(__x86_64__) && defined(__GNUC__)
#define CPU_HAS_X86 1
#include <cpuid.h>

/* bit `bit` of register reg (0 EAX, 1 EBX, 2 ECX, 3 EDX) of CPUID leaf, subleaf sub; false where the leaf is
   beyond the CPU's. Plain x86-64 code: common/cpu.c asks before it knows the CPU runs the build's extensions. */
static inline __attribute__((target("arch=x86-64"))) bool cpuid_bit(unsigned leaf, unsigned sub, int reg, int bit) {
    unsigned r[4];
    if (!__get_cpuid_count(leaf, sub, &r[0], &r[1], &r[2], &r[3])) return false;
    return r[reg] >> bit & 1;
}

#ifdef __clang__
#define CPU_HAS_MOVBE() cpuid_bit(1, 0, 2, 22)
#define CPU_HAS_F16C() (cpuid_bit(1, 0, 2, 29) && __builtin_cpu_supports("avx"))
#define CPU_HAS_AVXVNNI() (cpuid_bit(7, 1, 0, 4) && __builtin_cpu_supports("avx2"))
#define CPU_HAS_AVX512FP16() (cpuid_bit(7, 0, 3, 23) && __builtin_cpu_supports("avx512f"))
#define CPU_HAS_AMX_BF16() (cpuid_bit(7, 0, 3, 24) && cpuid_bit(7, 0, 3, 22)) /* AMX-TILE and AMX-BF16 */
#define CPU_HAS_V2() \
    (__builtin_cpu_supports("sse4.2") && __builtin_cpu_supports("popcnt") && __builtin_cpu_supports("ssse3"))
#define CPU_HAS_V3() \
    (CPU_HAS_V2() && __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && \
     __builtin_cpu_supports("bmi") && __builtin_cpu_supports("bmi2") && CPU_HAS_MOVBE() && CPU_HAS_F16C())
#define CPU_HAS_V4() \
    (CPU_HAS_V3() && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") && \
     __builtin_cpu_supports("avx512cd") && __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl"))
#else
#define CPU_HAS_MOVBE() __builtin_cpu_supports("movbe")
#define CPU_HAS_F16C() __builtin_cpu_supports("f16c")
#define CPU_HAS_AVXVNNI() __builtin_cpu_supports("avxvnni")
#define CPU_HAS_AVX512FP16() __builtin_cpu_supports("avx512fp16")
#define CPU_HAS_AMX_BF16() (__builtin_cpu_supports("amx-tile") && __builtin_cpu_supports("amx-bf16"))
#define CPU_HAS_V2() __builtin_cpu_supports("x86-64-v2")
#define CPU_HAS_V3() __builtin_cpu_supports("x86-64-v3")
#define CPU_HAS_V4() __builtin_cpu_supports("x86-64-v4")
#endif
#else
#define CPU_HAS_X86 0
#endif

#endif
