/* CPU model, the instruction set of the build against the CPU's, and the check
   before main that the CPU runs this binary (common/cpu.h). The extensions come
   from the compiler's predefined macros (__AVX2__, __AVX512F__, ...: what -march
   allowed it to use) and from __builtin_cpu_supports (what the CPU has; the names clang's lacks from CPUID,
   common/cpu_has.h). */
#include "common/cpu.h"

#include "common/cpu_has.h" /* CPU_HAS_*: the names clang's __builtin_cpu_supports lacks */

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

extern char* openblas_get_config(void); /* OpenBLAS; not in every cblas.h */
extern char* openblas_get_corename(void);

#if CPU_HAS_X86
/* the code that runs before the CPU is known to support the build: plain x86-64 */
#define BASELINE __attribute__((target("arch=x86-64")))
#else
#define BASELINE
#endif

typedef struct {
    const char* name; /* __builtin_cpu_supports' name */
    bool has;         /* this CPU has it */
} Feature;

/* the extensions the compiler may use in this build, with whether the CPU has them; returns the count */
BASELINE static size_t built_features(Feature* f) {
    size_t n = 0;
#if CPU_HAS_X86
    __builtin_cpu_init();
#define FEATURE(name) f[n++] = (Feature){name, __builtin_cpu_supports(name) != 0}
#define FEATURE_BY(name, has) \
    f[n++] = (Feature) { name, has }
#ifdef __SSE4_1__
    FEATURE("sse4.1");
#endif
#ifdef __SSE4_2__
    FEATURE("sse4.2");
#endif
#ifdef __POPCNT__
    FEATURE("popcnt");
#endif
#ifdef __MOVBE__
    FEATURE_BY("movbe", CPU_HAS_MOVBE());
#endif
#ifdef __AVX__
    FEATURE("avx");
#endif
#ifdef __AVX2__
    FEATURE("avx2");
#endif
#ifdef __FMA__
    FEATURE("fma");
#endif
#ifdef __F16C__
    FEATURE_BY("f16c", CPU_HAS_F16C());
#endif
#ifdef __BMI__
    FEATURE("bmi");
#endif
#ifdef __BMI2__
    FEATURE("bmi2");
#endif
#ifdef __AVXVNNI__
    FEATURE_BY("avxvnni", CPU_HAS_AVXVNNI());
#endif
#ifdef __AVX512F__
    FEATURE("avx512f");
#endif
#ifdef __AVX512VL__
    FEATURE("avx512vl");
#endif
#ifdef __AVX512BW__
    FEATURE("avx512bw");
#endif
#ifdef __AVX512DQ__
    FEATURE("avx512dq");
#endif
#ifdef __AVX512CD__
    FEATURE("avx512cd");
#endif
#ifdef __AVX512IFMA__
    FEATURE("avx512ifma");
#endif
#ifdef __AVX512VBMI__
    FEATURE("avx512vbmi");
#endif
#ifdef __AVX512VBMI2__
    FEATURE("avx512vbmi2");
#endif
#ifdef __AVX512VNNI__
    FEATURE("avx512vnni");
#endif
#ifdef __AVX512BITALG__
    FEATURE("avx512bitalg");
#endif
#ifdef __AVX512VPOPCNTDQ__
    FEATURE("avx512vpopcntdq");
#endif
#ifdef __AVX512BF16__
    FEATURE("avx512bf16");
#endif
#ifdef __AVX512FP16__
    FEATURE_BY("avx512fp16", CPU_HAS_AVX512FP16());
#endif
#undef FEATURE
#undef FEATURE_BY
#endif
    return n;
}

#define MAX_FEATURES 32

/* appends s and a space to buf (n bytes), truncating */
BASELINE static void append(char* buf, size_t n, const char* s) {
    size_t used = strlen(buf);
    for (; *s && used + 2 < n; s++) buf[used++] = *s;
    buf[used++] = ' ';
    buf[used] = '\0';
}

BASELINE static void trim(char* buf) {
    size_t k = strlen(buf);
    if (k && buf[k - 1] == ' ') buf[k - 1] = '\0';
}

BASELINE char* cpu_isa_missing(char* buf, size_t n) {
    Feature f[MAX_FEATURES];
    size_t k = built_features(f);
    buf[0] = '\0';
    for (size_t i = 0; i < k; i++)
        if (!f[i].has) append(buf, n, f[i].name);
    trim(buf);
    return buf;
}

/* before main: refuse to run on a CPU that lacks an extension of the build */
BASELINE __attribute__((constructor)) static void cpu_check(void) {
    char missing[512];
    if (!cpu_isa_missing(missing, sizeof(missing))[0]) return;
    fprintf(stderr,
            "error: this binary was built for CPU extensions this CPU lacks: %s.\n"
            "Build it on this machine (make) or for any x86-64-v3 CPU (make PORTABLE=1).\n",
            missing);
    exit(1);
}

/* the level of the build, from the macros x86-64-v2/v3/v4 imply */
static const char* level_built(void) {
#if defined(__AVX512F__) && defined(__AVX512BW__) && defined(__AVX512CD__) && defined(__AVX512DQ__) && \
    defined(__AVX512VL__)
    return "x86-64-v4";
#elif defined(__AVX2__) && defined(__FMA__) && defined(__BMI2__) && defined(__MOVBE__)
    return "x86-64-v3";
#elif defined(__SSE4_2__) && defined(__POPCNT__)
    return "x86-64-v2";
#elif CPU_HAS_X86
    return "x86-64";
#else
    return "not x86-64";
#endif
}

const char* cpu_isa_built(void) {
    static char buf[512];
    if (buf[0]) return buf;
    Feature f[MAX_FEATURES];
    size_t k = built_features(f);
    snprintf(buf, sizeof(buf), "%s (", level_built());
    for (size_t i = 0; i < k; i++) {
        if (i) strncat(buf, " ", sizeof(buf) - strlen(buf) - 1);
        strncat(buf, f[i].name, sizeof(buf) - strlen(buf) - 1);
    }
    strncat(buf, ")", sizeof(buf) - strlen(buf) - 1);
    return buf;
}

const char* cpu_level(void) {
#if CPU_HAS_X86
    __builtin_cpu_init();
    if (CPU_HAS_V4()) return "x86-64-v4";
    if (CPU_HAS_V3()) return "x86-64-v3";
    if (CPU_HAS_V2()) return "x86-64-v2";
    return "x86-64";
#else
    return "unknown";
#endif
}

void cpu_model(char* buf, size_t n) {
    snprintf(buf, n, "unknown");
    FILE* fp = fopen("/proc/cpuinfo", "r"); /* optional: absent off Linux */
    if (!fp) return;
    char line[512];
    while (fgets(line, sizeof(line), fp)) {
        if (strncmp(line, "model name", 10)) continue;
        const char* v = strchr(line, ':');
        if (!v) break;
        v += 1 + (v[1] == ' ');
        snprintf(buf, n, "%.*s", (int)strcspn(v, "\n"), v);
        break;
    }
    fclose(fp);
}

const char* cpu_blas_core(void) { return openblas_get_corename(); }

void cpu_print(FILE* fp, const char* dispatch) {
    char model[256];
    cpu_model(model, sizeof(model));
    fprintf(fp, "cpu: %s (%s)\nbuilt for: %s\ndispatch: %s\nOpenBLAS: core %s, %s\n", model, cpu_level(),
            cpu_isa_built(), dispatch, cpu_blas_core(), openblas_get_config());
}
