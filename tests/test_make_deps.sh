#!/usr/bin/env bash
# The Makefile's header dependencies come from the compiler (-MMD -MP): each
# object has a .d file listing the headers it includes, and a changed header
# rebuilds exactly the objects that include it. Checked on the built tree with
# `make -n -W HEADER TARGET` (what would run if HEADER were newer; nothing is
# built or touched):
#  1. build/obj32/model/block.o has its .d file, naming model/attention.h;
#  2. a newer model/attention.h rebuilds block.o (which includes it), in both
#     precisions;
#  3. it does not rebuild embedding.o or common/rng.o (which do not include it);
#  4. a newer common/real.h (included everywhere) rebuilds embedding.o;
#  5. the library folders include nothing of programs/ (the programs sit on top
#     of the library, never under it).
# shellcheck source=testlib.sh
. "$(dirname "$0")/testlib.sh" make_deps

# what `make -n` would compile for TARGET if HEADER were new: the .c files on cc lines
would_compile() {   # header target
    make --no-print-directory -n -W "$1" "$2" 2>&1 | grep -oE -- '-c [^ ]+\.c' | sed 's/^-c //'
}

for o in build/obj32/model/block.o build/obj64/model/block.o build/obj32/model/embedding.o build/obj32/common/rng.o; do
    [ -f "$o" ] || { bad "$o is not built (run make first)"; exit 1; }
done

if [ -f build/obj32/model/block.d ] && grep -q 'model/attention\.h' build/obj32/model/block.d; then
    ok "build/obj32/model/block.d lists model/attention.h"
else
    bad "build/obj32/model/block.d missing or without model/attention.h"
fi

for p in 32 64; do
    got=$(would_compile model/attention.h "build/obj$p/model/block.o")
    [ "$got" = "model/block.c" ] && ok "a newer model/attention.h rebuilds obj$p/model/block.o" \
        || bad "a newer model/attention.h: expected model/block.c rebuilt for obj$p, got '$got'"
done

for o in build/obj32/model/embedding.o build/obj32/common/rng.o; do
    got=$(would_compile model/attention.h "$o")
    [ -z "$got" ] && ok "a newer model/attention.h leaves $o alone" \
        || bad "a newer model/attention.h would recompile $got for $o (it does not include the header)"
done

got=$(would_compile common/real.h build/obj32/model/embedding.o)
[ "$got" = "model/embedding.c" ] && ok "a newer common/real.h rebuilds obj32/model/embedding.o" \
    || bad "a newer common/real.h: expected model/embedding.c rebuilt, got '$got'"

up=$(grep -lE '^#include "programs/' common/* model/* hf/* template/* data/* optim/* train/* eval/* tokenizer/* 2>/dev/null)
[ -z "$up" ] && ok "no library file includes a header of programs/" \
    || bad "library files include programs/ headers: $(echo $up)"

echo "test_make_deps: $([ "$failures" -eq 0 ] && echo "all OK" || echo "$failures FAILED")"
[ "$failures" -eq 0 ]
