/* build/analyze's results for one checkpoint and their outputs (docs/analyze.md):
   the terminal summary, positions.csv, analysis.json (version
   ANALYZE_JSON_VERSION, which eval/analyze_compare.c reads back) and the
   figures. programs/analyze*.c fill an Analysis (eval/analyze_types.h). */
#ifndef REPOC_ANALYZE_OUT_H
#define REPOC_ANALYZE_OUT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "eval/analyze_types.h"

#define ANALYZE_JSON_VERSION 1

void analysis_print(const Analysis* an);
/* positions.csv (layer,head,t,z of the first item), analysis.json and the
   SVG (+ PNG) figures into dir */
void analysis_write(const Analysis* an, const char* dir, const size_t* plot_heads, size_t n_plot_heads);

#endif
