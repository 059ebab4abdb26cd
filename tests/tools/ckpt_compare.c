/* build/tools/ckpt_compare BASE A B TOL [TOL_MOMENTS]: are training checkpoints A and B the
   same run up to rounding? (tests/test_mpi.sh)
     weights: per tensor of model.safetensors, the relative L2 error of A's
              update against B's, |(A - BASE) - (B - BASE)| / |B - BASE|, with
              BASE the checkpoint both started from; for a LoRA checkpoint that names
              its base instead of holding it, per tensor of adapter_model.safetensors,
              |A - B| / |B| (the adapters' values);
     moments: per tensor of optimizer.safetensors, |A - B| / |B|, against TOL_MOMENTS when given (squares of
              gradients err twice as much as the gradients), else TOL.
   Prints one line per kind with the worst tensor, every tensor over TOL, and
   exits 1 when any is. A tensor missing from A, or of another size, fails. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/check.h"
#include "common/safetensors.h"

static real* load(const StFile* f, const StTensor* t) {
    real* x = mallocCheck(t->numel * sizeof(real));
    st_read_real(f, t, x);
    return x;
}

/* every tensor of b's file against a's (and base's, when given); returns the failures */
static int compare(const char* file, const char* base_dir, const char* a_dir, const char* b_dir, double tol) {
    char path[3][1024];
    const char* dirs[3] = {base_dir, a_dir, b_dir};
    StFile f[3];
    for (int i = 0; i < 3; i++) {
        if (!dirs[i]) continue;
        snprintf(path[i], sizeof(path[i]), "%s/%s", dirs[i], file);
        st_open_or_die(&f[i], path[i]);
    }
    int bad = 0;
    double worst = 0;
    const char* worst_name = "(none)";
    for (size_t k = 0; k < f[2].n_tensors; k++) {
        const StTensor* tb = &f[2].tensors[k];
        const StTensor* ta = st_find(&f[1], tb->name);
        const StTensor* t0 = base_dir ? st_find(&f[0], tb->name) : NULL;
        if (!ta || ta->numel != tb->numel || (base_dir && (!t0 || t0->numel != tb->numel))) {
            printf("  NOT OK  %s: %s missing or of another size\n", file, tb->name);
            bad++;
            continue;
        }
        real *xa = load(&f[1], ta), *xb = load(&f[2], tb), *x0 = t0 ? load(&f[0], t0) : NULL;
        double num = 0, den = 0;
        for (size_t i = 0; i < tb->numel; i++) {
            double da = xa[i] - (x0 ? x0[i] : 0), db = xb[i] - (x0 ? x0[i] : 0);
            num += (da - db) * (da - db);
            den += db * db;
        }
        double rel = den > 0 ? sqrt(num / den) : sqrt(num);
        if (!(rel <= tol)) {
            printf("  NOT OK  %s: %s relative L2 error %.3e > %.3g\n", file, tb->name, rel, tol);
            bad++;
        }
        if (!(rel <= worst)) {
            worst = rel;
            worst_name = tb->name;
        }
        free(xa);
        free(xb);
        free(x0);
    }
    printf("  %-7s %s: %zu tensors, %s, worst relative L2 error %.3e (%s), tolerance %.3g\n", bad ? "NOT OK" : "OK",
           file, f[2].n_tensors, base_dir ? "updates since the base" : "values", worst, worst_name, tol);
    for (int i = 0; i < 3; i++)
        if (dirs[i]) st_close(&f[i]);
    return bad;
}

int main(int argc, char** argv) {
    if (argc != 5 && argc != 6) {
        fprintf(stderr, "usage: ckpt_compare BASE A B TOL [TOL_MOMENTS]   (checkpoint directories; see the header)\n");
        return 2;
    }
    double tol = atof(argv[4]);
    char weights[1100];
    snprintf(weights, sizeof(weights), "%s/model.safetensors", argv[3]);
    int bad = access(weights, F_OK) == 0 ? compare("model.safetensors", argv[1], argv[2], argv[3], tol)
                                         : compare("adapter_model.safetensors", NULL, argv[2], argv[3], tol);
    bad += compare("optimizer.safetensors", NULL, argv[2], argv[3], argc == 6 ? atof(argv[5]) : tol);
    return bad ? 1 : 0;
}
