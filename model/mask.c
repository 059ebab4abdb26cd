/* Per-token first keys from document ids and sliding windows (model/mask.h). */
#include "model/mask.h"

void doc_starts_from_ids(int32_t* start, const int32_t* doc, size_t B, size_t T) {
    for (size_t b = 0; b < B; b++) {
        const int32_t* d = doc + b * T;
        int32_t* s = start + b * T;
        for (size_t t = 0; t < T; t++) s[t] = t > 0 && d[t] == d[t - 1] ? s[t - 1] : (int32_t)t;
    }
}

void window_starts(int32_t* start, const int32_t* doc_start, size_t B, size_t T, size_t window) {
    for (size_t n = 0; n < B * T; n++) {
        size_t w = window_first(n % T, window);
        size_t d = doc_start ? (size_t)doc_start[n] : 0;
        start[n] = (int32_t)(w > d ? w : d);
    }
}
