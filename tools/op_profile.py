#!/usr/bin/env python3
"""tools/op_profile.py: milliseconds per training step of each op of the step (docs/cpus.md,
"Decisions on the Intel Xeon"). Never part of `make test`; standard library only.

    tools/op_profile.py [--ref REV] [--reps N] [--ops] -- BENCH_STEP_ARGS...
    tools/op_profile.py --ref afa3e44 -- --size S --mode repo --threads 2 --steps 10 --warmup 2

It copies the sources (the working tree, or `git archive REV`) into a temporary directory, puts a
monotonic-clock timer around every op call of model/block.c and model/model.c and around the
optimizer calls of bench/bench_step.c (the ops already run one after another, so the timers
serialise nothing), builds build/bench/bench_step there and runs it N times with the given
arguments. It prints the median step time of each run and, per group of ops, the mean over the
runs of the milliseconds per timed step. The sources in this repository are not changed."""
import argparse
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile

TIMER_H = r'''/* op timers for tools/op_profile.py (not part of repoc) */
#include <string.h>
#include <time.h>
static inline double op_now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}
void op_add(const char* name, double seconds);
void op_reset(void);
void op_dump(void);
#define OP(name, ...) do { double op_t0_ = op_now(); __VA_ARGS__; op_add(name, op_now() - op_t0_); } while (0)
'''

TIMER_C = r'''#include <stdio.h>
#include "common/op_timer.h"
static struct { const char* name; double s; } tab[128];
static int n_tab;
void op_add(const char* name, double s) {
    for (int i = 0; i < n_tab; i++)
        if (!strcmp(tab[i].name, name)) { tab[i].s += s; return; }
    if (n_tab < 128) { tab[n_tab].name = name; tab[n_tab].s = s; n_tab++; }
}
void op_reset(void) { n_tab = 0; }
void op_dump(void) {
    for (int i = 0; i < n_tab; i++) fprintf(stderr, "op %s %.6f\n", tab[i].name, tab[i].s);
}
'''

# calls timed when a statement starts with them (model/model.c also times the LM head's backward GEMM)
OPS = ("proj_forward proj_forward_kept proj_backward linear_pair_forward linear_pair_backward adapter_forward adapter_backward "
       "rmsnorm_forward rmsnorm_residual_forward rmsnorm_backward residual_forward "
       "swiglu_forward swiglu_backward geglu_forward geglu_backward attention_forward attention_backward rope_forward rope_backward "
       "repo_forward repo_backward zero memset xent_backward embedding_forward embedding_backward "
       "model_head_forward grad_clip adamw_step model_zero_grad").split()
MODEL_ONLY = ("linear_backward", "linear_backward_ld", "linear_backward_scaled")   # the last: before 2026-12-01

GROUPS = [
    ("GEMMs of the forward linears (the LM head with the final norm)",
     lambda k: k.startswith(("proj_forward", "linear_pair_forward", "adapter_forward")) or k == "model_head_forward"),
    ("GEMMs of the backward linears (the LM head's included)",
     lambda k: k.startswith(("proj_backward", "linear_pair_backward", "adapter_backward", "linear_backward"))),
    ("attention forward + backward", lambda k: k.startswith("attention_")),
    ("clearing backward buffers", lambda k: k == "zero" or k.startswith("memset:d")),
    ("cross-entropy forward + backward", lambda k: k.startswith("xent")),
    ("RMSNorm forward + backward", lambda k: k.startswith("rmsnorm")),
    ("SwiGLU forward + backward", lambda k: k.startswith(("swiglu", "geglu"))),
    ("RoPE forward + backward", lambda k: k.startswith("rope_")),
    ("RePo module forward + backward (its GEMMs included)", lambda k: k.startswith("repo_")),
    ("residual adds and copies", lambda k: k.startswith("residual")),
    ("embedding forward + backward", lambda k: k.startswith("embedding")),
    ("gradient norm, clip, AdamW, zero_grad (the last two inside AdamW since 2026-12-01)",
     lambda k: k in ("grad_norm", "grad_clip", "adamw_step", "model_zero_grad")),
]


def strip_comments(line):
    return re.sub(r"/\*.*?\*/", "", line)


def instrument(path, extra):
    lines = open(path).read().split("\n")
    out, i, fn = [], 0, ""
    while i < len(lines):
        line = lines[i]
        d = re.match(r"^[A-Za-z][\w\s\*]*?\b(\w+)\(", line)  # a definition at column 0: the function we are in
        if d:
            fn = d.group(1)
        m = re.match(r"^(\s+)(?:if \([^;{]*\) |else )?(\w+)\(", line)
        if m and (m.group(2) in OPS or m.group(2) in extra) and not line.rstrip().endswith("{") \
                and "static" not in line and fn not in OPS:  # an op's own body (a wrapper) is timed by its caller
            j = i
            while not strip_comments(lines[j]).rstrip().endswith(";"):
                j += 1
            stmt = "\n".join(strip_comments(x) for x in lines[i:j + 1]).rstrip()[:-1]
            indent, cond = m.group(1), ""
            mc = re.match(r"^(\s+)(if \([^;{]*\) |else )(.*)$", stmt, re.S)
            if mc:
                cond, stmt = mc.group(2), mc.group(1) + mc.group(3)
            name = m.group(2)
            if name in ("proj_forward", "proj_forward_kept", "proj_backward", "linear_pair_forward", "linear_pair_backward",
                        "memset"):   # named by the buffer they write
                args = re.search(r"\((.*)", stmt, re.S).group(1).split(",")
                first = args[1 if args[0].strip() in ("ctx->prod", "bf") else 0].strip()  # after the products' context
                name += ":" + first.split("->")[-1].split(".")[-1].strip()[:10]
            out.append('%s%sOP("%s", %s);' % (indent, cond, name, stmt.strip()))
            i = j + 1
            continue
        out.append(line)
        i += 1
    return '#include "common/op_timer.h"\n' + "\n".join(out)


def prepare(src, ref):
    if ref:
        archive = subprocess.run(["git", "-C", REPO, "archive", ref], check=True, capture_output=True).stdout
        subprocess.run(["tar", "xf", "-", "-C", src], input=archive, check=True)
    else:
        files = subprocess.run(["git", "-C", REPO, "ls-files", "-co", "--exclude-standard", "-z"], check=True,
                               capture_output=True).stdout.split(b"\0")
        for f in filter(None, files):
            f = f.decode()
            if os.path.isfile(os.path.join(REPO, f)):
                os.makedirs(os.path.join(src, os.path.dirname(f)), exist_ok=True)
                shutil.copy2(os.path.join(REPO, f), os.path.join(src, f))
    open(os.path.join(src, "common/op_timer.h"), "w").write(TIMER_H)
    open(os.path.join(src, "common/op_timer.c"), "w").write(TIMER_C)
    for rel in ("model/block.c", "model/model.c"):
        p = os.path.join(src, rel)
        s = instrument(p, MODEL_ONLY if rel == "model/model.c" else ())
        for head in ("        total += xent_forward_sum(", "        total += m->logits_hold_grad"):
            s = s.replace(head, "        double op_x0_ = op_now();\n" + head, 1)
        s = s.replace("        count += nv;", '        op_add("xent_forward", op_now() - op_x0_);\n        count += nv;', 1)
        open(p, "w").write(s)
    bench = "bench/bench_step.c" if os.path.isfile(os.path.join(src, "bench/bench_step.c")) else "tests/bench_step.c"
    p = os.path.join(src, bench)   # tests/ held the benches before they had their own folder
    s = instrument(p, ())
    next_op = '        OP("grad_clip"' if '        OP("grad_clip"' in s else '        OP("adamw_step"'
    for old, new in [
        ("        if (s == o.warmup) faults = minor_faults();",
         "        if (s == o.warmup) {\n            faults = minor_faults();\n            op_reset();\n        }"),
        ("        double norm = grad_global_norm(", "        double op_n0_ = op_now();\n        double norm = grad_global_norm("),
        # the op after the norm: grad_clip before 2026-12-01, adamw_step (which clips) since
        (next_op, '        op_add("grad_norm", op_now() - op_n0_);\n' + next_op),
        ("    return 0;\n}", "    op_dump();\n    return 0;\n}"),
    ]:
        if old not in s:
            sys.exit("op_profile: %s has changed; update tools/op_profile.py (%r)" % (bench, old.strip()))
        s = s.replace(old, new, 1)
    open(p, "w").write(s)
    build = subprocess.run(["make", "-C", src, "-j2", "build/bench/bench_step"], capture_output=True, text=True)
    if build.returncode:
        sys.exit("op_profile: the instrumented build failed:\n" + build.stdout[-3000:] + build.stderr[-3000:])


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--ref", help="git revision to profile (default: the working tree)")
    ap.add_argument("--reps", type=int, default=3, help="runs to average (default 3)")
    ap.add_argument("--ops", action="store_true", help="also print every timed op, not only the groups")
    ap.add_argument("bench_args", nargs=argparse.REMAINDER)
    a = ap.parse_args()
    args = [x for x in a.bench_args if x != "--"]
    steps = int(args[args.index("--steps") + 1]) if "--steps" in args else 5
    with tempfile.TemporaryDirectory(prefix="repoc_op_profile.") as src:
        prepare(src, a.ref)
        runs = []
        for _ in range(a.reps):
            r = subprocess.run([os.path.join(src, "build/bench/bench_step"), "--mfu-sgemm", "0", "--no-attn"] + args,
                               capture_output=True, text=True, cwd=src)
            if r.returncode:
                sys.exit("op_profile: bench_step failed:\n" + r.stderr[-2000:])
            ops = {}
            for line in r.stderr.splitlines():
                if line.startswith("op "):
                    _, name, sec = line.split()
                    ops[name] = float(sec) * 1e3 / steps
            med = re.search(r"median ([0-9.]+) ms/step", r.stdout)
            print("run: median %s ms/step, timed ops %.1f ms/step" % (med.group(1) if med else "?",
                                                                     sum(ops.values())))
            runs.append(ops)
    print("\n| part | ms per step (%s, mean of %d runs) |\n|---|---:|" % (a.ref or "working tree", a.reps))
    for label, match in GROUPS:
        vals = [sum(v for k, v in ops.items() if match(k)) for ops in runs]
        print("| %s | %.1f |" % (label, statistics.mean(vals)))
    print("| sum of the timed ops | %.1f |" % statistics.mean(sum(ops.values()) for ops in runs))
    if a.ops:
        print("\n| op (call site) | ms per step |\n|---|---:|")
        for name in sorted(runs[0], key=lambda k: -runs[0][k]):
            print("| %s | %.2f |" % (name, statistics.mean(ops.get(name, 0.0) for ops in runs)))


REPO = subprocess.run(["git", "rev-parse", "--show-toplevel"], check=True, capture_output=True, text=True,
                      cwd=os.path.dirname(os.path.abspath(__file__))).stdout.strip()

if __name__ == "__main__":
    main()
