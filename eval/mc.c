/* Multiple-choice log-likelihood scoring (eval/mc.h). */
#include "eval/mc.h"

size_t mc_pick(const double* ll, const double* chars, size_t n, bool norm) {
    size_t best = 0;
    for (size_t i = 1; i < n; i++) {
        double x = norm ? ll[i] / chars[i] : ll[i], y = norm ? ll[best] / chars[best] : ll[best];
        if (x > y) best = i;
    }
    return best;
}
