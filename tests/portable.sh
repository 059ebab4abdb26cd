#!/usr/bin/env bash
# make test-portable: the PORTABLE=1 build (-march=x86-64-v3, into build/portable)
# builds and passes a float and a double subset. Not part of `make test`, because
# it rebuilds the whole library in both precisions (about 16 s of CPU on 2 cores);
# run it after changing the Makefile's flags, common/cpu.c, model/dispatch.c or a
# vectorised loop.
#  1. make PORTABLE=1 builds gradcheck, tests/test_parity, tests/test_step_ops, tests/test_attention and
#     bench_step;
#  2. bench_step --cpu says the binary was built for x86-64-v3 and which attention
#     variant runs (x86-64-v4 on a CPU that has it);
#  3. every instruction of the portable binaries that uses an AVX-512 register (zmm,
#     the mask registers k0-k7, xmm16-31 / ymm16-31) comes from model/attention_v4.o,
#     the variant model/dispatch.c calls only on an x86-64-v4 CPU: the rest runs on
#     AVX2-only CPUs. The native build on an AVX-512 machine has such instructions
#     everywhere, so the check can fail;
#  4. the SiLU and softmax loops of the float build are vectorised;
#  5. build/portable/gradcheck: the OLMo-2 block and the tiny decoders (double);
#  6. build/portable/tests/test_parity (PyTorch parity of the float build, on both FP32 engines) and
#     tests/test_step_ops (the two attention variants agree), and tests/test_attention on the variant this
#     CPU runs (BF16 pairs emulated there: x86-64-v4 has no AVX512-BF16);
#  7. the FP32 engine the rule takes when OpenBLAS runs a generic kernel (model/engine.h).
# shellcheck source=testlib.sh
. "$(dirname "$0")/testlib.sh" portable

P=build/portable
make --no-print-directory -s PORTABLE=1 $P/gradcheck $P/tests/test_parity $P/tests/test_step_ops $P/tests/test_attention \
    $P/bench/bench_step \
    >"$T/build.log" 2>&1 \
    && ok "make PORTABLE=1 builds gradcheck, test_parity, test_step_ops, test_attention and bench_step" \
    || { bad "make PORTABLE=1: $(tail -c 400 "$T/build.log")"; exit 1; }

if $P/bench/bench_step --cpu >"$T/cpu.log" 2>&1 && grep -q '^built for: x86-64-v3 (' "$T/cpu.log"; then
    ok "$(grep '^built for' "$T/cpu.log")"
else
    bad "bench_step --cpu: $(cat "$T/cpu.log")"
fi
level=$(sed -n 's/^cpu: .*(\(x86-64[^)]*\))$/\1/p' "$T/cpu.log")
want=x86-64-v3; [ "$level" = x86-64-v4 ] && want=x86-64-v4
grep -q "^dispatch: attention kernel for $want" "$T/cpu.log" && ok "$(grep '^dispatch' "$T/cpu.log") on this $level CPU" \
    || bad "dispatch on this $level CPU: $(grep '^dispatch' "$T/cpu.log")"

AVX512_REG='%zmm|%k[0-7]|%[xy]mm(1[6-9]|2[0-9]|3[01])'
if command -v objdump >/dev/null; then
    for bp in gradcheck:obj64 tests/test_parity:obj32 bench/bench_step:obj32; do
        b=$P/${bp%%:*}
        n=$(objdump -d "$b" | grep -cE "$AVX512_REG")
        n4=$(objdump -d "$P/${bp#*:}/model/attention_v4.o" | grep -cE "$AVX512_REG")
        [ "$n4" -gt 0 ] && [ "$n" = "$n4" ] && ok "$b: its $n instructions on AVX-512 registers are all attention_v4's" \
            || bad "$b: $n instructions use AVX-512 registers, attention_v4.o has $n4"
    done
else
    echo "  SKIP    no objdump: the instruction check"
fi

# the exp loops (SiLU, softmax) vectorise with 256-bit registers in the portable build too
# (with trapping math on, x86-64-v3 kept them scalar: SwiGLU ran 4x slower than native)
omp_body() { # object function: the function holding its OpenMP loop, GCC's function._omp_fn.0 or the
    # .omp_outlined. function clang's code hands to __kmpc_fork_call (named in its relocations)
    if objdump -t "$1" | grep -q " $2\._omp_fn\.0$"; then echo "$2._omp_fn.0"
    else objdump -dr "$1" --disassemble="$2" | grep -o '\.omp_outlined\.[.0-9]*' | head -1; fi
}
if command -v objdump >/dev/null; then
    for fn in model/swiglu.o:swiglu_forward model/swiglu.o:swiglu_backward model/xent.o:xent_backward; do
        obj=$P/obj32/${fn%%:*}
        body=$(omp_body "$obj" "${fn#*:}")
        n=0
        [ -n "$body" ] && n=$(objdump -d "$obj" --disassemble="$body" | grep -c '%ymm')
        [ "$n" -gt 0 ] && ok "${fn#*:}'s loop ($body) is vectorised ($n instructions on ymm registers)" ||
            bad "${fn#*:}'s loop (${body:-not found}) is scalar"
    done
fi

for layer in block-olmo2 model; do
    $P/gradcheck --layer $layer >"$T/gc.log" 2>&1 && ok "portable gradcheck --layer $layer: $(tail -1 "$T/gc.log")" \
        || bad "portable gradcheck --layer $layer: $(tail -3 "$T/gc.log")"
done
$P/tests/test_parity >"$T/parity.log" 2>&1 && ok "portable test_parity ($(grep -c ' OK' "$T/parity.log") checks OK)" \
    || bad "portable test_parity: $(grep 'NOT OK' "$T/parity.log" | head -3)"
$P/tests/test_step_ops >"$T/ops.log" 2>&1 && ok "portable test_step_ops: $(tail -1 "$T/ops.log")" \
    || bad "portable test_step_ops: $(grep 'NOT OK' "$T/ops.log" | head -3)"
# the kernel this CPU's variant runs, BF16 pairs included (emulated: x86-64-v4 has no AVX512-BF16)
$P/tests/test_attention >"$T/att.log" 2>&1 && ok "portable test_attention: $(tail -1 "$T/att.log")" \
    || bad "portable test_attention: $(grep 'NOT OK' "$T/att.log" | head -3)"
# the engine of the FP32 products (model/engine.h): with OpenBLAS on its SSE3 kernels (OPENBLAS_CORETYPE set for
# this child alone, simulating a CPU newer than OpenBLAS's table) the portable build takes oneDNN by the rule
REPOC_CACHE_DIR="$T/cache" OPENBLAS_CORETYPE=Prescott $P/bench/bench_step --size S --steps 1 --warmup 0 --no-attn \
    --mfu-sgemm 0 >"$T/engine.log" 2>&1
if grep -q 'f32 products: oneDNN.*core Prescott has SSE kernels only' "$T/engine.log"; then
    ok "portable, OPENBLAS_CORETYPE=Prescott: $(grep -m1 'f32 products' "$T/engine.log")"
else bad "portable engine choice with OpenBLAS on Prescott kernels (this is an x86-64-v3 build: the CPU has AVX2): $(grep -m1 'f32 products' "$T/engine.log")"; fi

echo "$failures failed"
[ "$failures" = 0 ]
