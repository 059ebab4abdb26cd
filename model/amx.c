/* AMX's availability and the choice of attention's BF16 kernel; see amx.h. */
#include "model/amx.h"

#include "common/cpu_has.h"

#if defined(__x86_64__) && defined(__linux__) && !defined(REPOC_F64)
#include <sys/syscall.h>
#include <unistd.h>
#define AMX_CAN 1
#define ARCH_REQ_XCOMP_PERM 0x1023 /* arch_prctl: ask for an extended state component (Linux 5.16) */
#define XFEATURE_XTILEDATA 18      /* the tile data registers */
#else
#define AMX_CAN 0
#endif

bool amx_usable(void) {
#if AMX_CAN
    static int known; /* 0 unknown, 1 no, 2 yes; threads racing here ask the same question and store one answer */
    int k = __atomic_load_n(&known, __ATOMIC_ACQUIRE);
    if (!k) {
        __builtin_cpu_init();
        bool has = CPU_HAS_AMX_BF16() && syscall(SYS_arch_prctl, ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA) == 0;
        k = has ? 2 : 1;
        __atomic_store_n(&known, k, __ATOMIC_RELEASE);
    }
    return k == 2;
#else
    return false;
#endif
}

/* vdpbf16ps in this build of attention.c, on a CPU where it pays */
static bool pairs_pay(void) {
#if defined(__AVX512BF16__) && defined(__x86_64__) && !defined(REPOC_F64)
    __builtin_cpu_init();
    return __builtin_cpu_is("amd");
#else
    return false;
#endif
}

bool attention_bf16_pays(void) { return amx_usable() || pairs_pay(); }

const char* attention_bf16_kernel(void) {
    if (amx_usable()) return "AMX tiles";
    if (pairs_pay()) return "vdpbf16ps";
#if defined(__AVX512BF16__) && !defined(REPOC_F64)
    return "FP32 (vdpbf16ps does no more multiply-adds per cycle than FP32 FMA on this CPU)";
#else
    return "FP32 (no BF16 dot products in this build)";
#endif
}
